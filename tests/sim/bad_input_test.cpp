// Every kind of bad scenario gets one clear message with file:line:col and the key path.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

struct BadCase {
  const char* name;
  std::string text;
  const char* where;  ///< "file:line:col" (or "file:line") expected at the start of a message
  const char* says;   ///< a phrase the message must contain
  const char* hint;   ///< a phrase the hint must contain ("" = any)
};

std::string base_with(const std::string& model, const std::string& training, const std::string& cluster,
                      const std::string& parallel) {
  return "[model]\n" + model + "[training]\n" + training + cluster + "[parallel]\n" + parallel;
}

const std::string kModel = "preset = \"tiny\"\n";                                   // lines 2
const std::string kTraining = "global_batch = 16\nseq_len = 512\n";                 // lines 4-5
const std::string kCluster = "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n";  // lines 6-8
const std::string kParallel = "tp = 2\npp = 2\ndp = 4\n";                            // lines 10-12

std::vector<BadCase> cases() {
  return {
      {"toml_syntax", "[model\npreset = \"tiny\"\n", "bad.toml:1:", "TOML syntax", ""},
      {"unknown_top_key", "schema = 1\nmodle = 3\n" + base_with(kModel, kTraining, kCluster, kParallel),
       "bad.toml:2:1", "unknown key 'modle'", "did you mean 'model'"},
      {"unknown_model_key", base_with(kModel + "hiden = 64\n", kTraining, kCluster, kParallel),
       "bad.toml:3:1", "unknown key 'hiden' in [model]", "did you mean 'hidden'"},
      {"unknown_preset", base_with("preset = \"llama3-7b\"\n", kTraining, kCluster, kParallel),
       "bad.toml:2:10", "unknown model preset 'llama3-7b'", "did you mean 'llama3-8b'"},
      {"unknown_device", base_with(kModel, kTraining, "[[cluster.pool]]\ndevice = \"h100-sxm\"\nnodes = 2\n", kParallel),
       "bad.toml:7:10", "unknown device 'h100-sxm'", "did you mean"},
      {"wrong_type_integer", base_with(kModel, "global_batch = \"16\"\nseq_len = 512\n", kCluster, kParallel),
       "bad.toml:4:16", "expected an integer, got a string", "plain integers"},
      {"wrong_type_bool", base_with(kModel, kTraining + "flash_attention = 1\n", kCluster, kParallel),
       "bad.toml:6:19", "expected true or false", ""},
      {"bad_unit", base_with(kModel, kTraining, kCluster + "[cluster.network]\nnic_bandwidth = \"400GBs\"\n", kParallel),
       "bad.toml:10:17", "unknown unit \"GBs\"", "GB/s"},
      {"bare_number_for_quantity", base_with(kModel, kTraining, kCluster + "[cluster.network]\nnic_bandwidth = 400\n", kParallel),
       "bad.toml:10:17", "expected a bandwidth with a unit, got an integer", "Gbps"},
      {"unknown_choice", base_with(kModel, "global_batch = 16\nseq_len = 512\nprecision = \"bf61\"\n", kCluster, kParallel),
       "bad.toml:6:13", "unknown precision \"bf61\"", "did you mean \"bf16\""},
      {"tp_not_dividing_heads", base_with(kModel, kTraining, kCluster, "tp = 3\npp = 1\n"),
       "bad.toml:10:6", "tp = 3 does not divide the model's 8 attention heads", "divisors"},
      {"tp_pp_dp_mismatch", base_with(kModel, kTraining, kCluster, "tp = 2\npp = 2\ndp = 3\n"),
       "bad.toml:12:6", "tp·pp·dp = 2·2·3 = 12 does not match the cluster's 16 devices", "dp = 4"},
      {"batch_not_divisible", base_with(kModel, "global_batch = 10\nseq_len = 512\n", kCluster, kParallel + "micro_batch = 2\n"),
       "bad.toml:13:15", "global_batch (10) is not divisible into micro-batches of 2 over dp = 4", ""},
      {"nic_bandwidth_zero", base_with(kModel, kTraining, kCluster + "[cluster.network]\nnic_bandwidth = \"0Gbps\"\n", kParallel),
       "bad.toml:10:17", "nic_bandwidth must be positive", "400Gbps"},
      {"bandwidth_below_a_kilobyte_a_second",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"slow\"\nkind = \"scale-out\"\nbandwidth = \"1B/s\"\n",
                 kParallel),
       "bad.toml:12:13", "at least 1 KB/s", ""},
      // micro_batch · dp = 2^20 · 4096 = 2^32: an int product had wrapped to 0 (a division by zero).
      {"micro_batch_times_dp_past_an_int",
       base_with(kModel, kTraining, "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 512\n", "micro_batch = 1048576\n"),
       "bad.toml:10:15", "not divisible into micro-batches of 1048576 over dp = 4096", "4294967296"},
      // Σ count · micro_batches · micro_batch = 2^64 + 2^20, which a 64-bit sum wraps onto global_batch.
      {"replica_sequences_past_64_bits",
       "[model]\npreset = \"tiny\"\n[training]\nglobal_batch = 1048576\nseq_len = 1\n[[cluster.pool]]\ndevice = \"h100-sxm5\"\n"
       "nodes = 131073\n[parallel]\nmicro_batch = 1048576\n[[parallel.replicas]]\ncount = 1048576\nmicro_batches = 16777216\n"
       "stages = [ { tp = 1, layers = 4 } ]\n[[parallel.replicas]]\ncount = 1\nmicro_batches = 1\nstages = [ { tp = 1, layers = 4 } ]\n",
       "bad.toml:9:1", "sequences per step but global_batch is 1048576", "must equal global_batch"},
      {"pipeline_runs_not_dividing_the_batch", base_with(kModel, kTraining, kCluster, kParallel + "pipeline_runs = 3\n"),
       "bad.toml:13:17", "pipeline_runs = 3 does not divide global_batch (16)", "divisors"},
      {"pipeline_runs_not_dividing_the_micro_batches", base_with(kModel, kTraining, kCluster, kParallel + "pipeline_runs = 8\n"),
       "bad.toml:13:17", "pipeline_runs = 8 does not divide a replica group's 4 micro-batches", "divisors"},
      {"pp_not_dividing_layers", base_with(kModel, kTraining, kCluster, "tp = 2\npp = 8\n"),
       "bad.toml:11:6", "pp = 8 does not divide the model's 4 layers", "[[parallel.replicas]]"},
      {"tp_larger_than_node", base_with(kModel, "global_batch = 16\nseq_len = 512\n",
                                        "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\ndevices_per_node = 4\n",
                                        "tp = 8\npp = 1\n"),
       "bad.toml:", "does not fit inside a node", "devices_per_node"},
      {"precision_unsupported", base_with(kModel, "global_batch = 16\nseq_len = 512\nprecision = \"fp8\"\n",
                                          "[[cluster.pool]]\ndevice = \"a100-sxm4-80gb\"\nnodes = 2\n", kParallel),
       "bad.toml:", "has no fp8 support", "bf16"},
      {"missing_required", "[model]\npreset = \"tiny\"\n[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 1\n",
       "bad.toml:", "missing key 'training'", ""},
      {"out_of_range", base_with(kModel, kTraining, kCluster, kParallel + "zero = 4\n"),
       "bad.toml:13:8", "zero = 4 is out of range", "0 to 3"},
      {"stages_do_not_cover_layers",
       base_with(kModel, kTraining, kCluster, "[[parallel.replicas]]\ncount = 4\nstages = [{tp = 2, layers = 1}, {tp = 2, layers = 2}]\n"),
       "bad.toml:12:10", "the stages cover 3 layers but the model has 4", ""},
      {"unknown_pool_in_stage",
       base_with(kModel, kTraining, kCluster, "[[parallel.replicas]]\ncount = 4\nstages = [{pool = \"h100\", tp = 2, layers = 4}]\n"),
       "bad.toml:12:19", "unknown pool 'h100'", "did you mean 'h100-sxm5'"},
      {"too_many_devices",
       base_with(kModel, "global_batch = 16\nseq_len = 512\n", kCluster, "[[parallel.replicas]]\ncount = 4\nstages = [{tp = 8, layers = 4}]\n"),
       "bad.toml:", "the plan needs 32 devices of pool 'h100-sxm5' but it has 16", ""},
      {"unknown_link", base_with(kModel, kTraining, kCluster + "[cluster.network]\nnic = \"ib-ndr400\"\n", kParallel),
       "bad.toml:10:7", "unknown link 'ib-ndr400'", "did you mean 'ib-ndr-400'"},
      {"per_peer_above_bandwidth",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"mesh\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\nper_peer = \"200GB/s\"\n",
                 kParallel),
       "bad.toml:13:12", "per_peer is above the link's bandwidth", "one peer's share"},
      {"per_peer_on_a_nic",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"100GB/s\"\nper_peer = \"10GB/s\"\n",
                 kParallel),
       "bad.toml:13:12", "per_peer describes a full-mesh fabric", "kind = \"scale-up\""},
      {"per_peer_not_positive",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"mesh\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\nper_peer = \"0GB/s\"\n",
                 kParallel),
       "bad.toml:13:12", "per_peer must be positive", ""},
      {"peer_latency_negative",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"100GB/s\"\npeer_latency = \"-2us\"\n",
                 kParallel),
       "bad.toml:13:16", "must be a finite, non-negative value in cluster.link[0].peer_latency", ""},
      {"peer_latency_absurd",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"100GB/s\"\npeer_latency = \"5ms\"\n",
                 kParallel),
       "bad.toml:13:16", "peer_latency must be between 0 and 1ms", "cost per peer"},
      // [[link.group]]: a collective measured over a group inside one node (lines 13-17).
      {"group_ranks_below_two",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"nv\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\nranks = 1\ncollective = \"all_reduce\"\ncall = \"30us\"\nbusbw = \"90GB/s\"\n", kParallel),
       "bad.toml:14:9", "ranks", ""},
      {"group_unknown_collective",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"nv\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\nranks = 2\ncollective = \"broadcast\"\ncall = \"30us\"\nbusbw = \"90GB/s\"\n", kParallel),
       "bad.toml:15:14", "broadcast", "all_reduce"},
      {"group_busbw_above_the_link",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"nv\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\nranks = 2\ncollective = \"all_reduce\"\ncall = \"30us\"\nbusbw = \"500GB/s\"\n", kParallel),
       "bad.toml:17:9", "busbw must be above 0 and at most the link's bandwidth × efficiency (100 GB/s)", "bus bandwidth"},
      {"group_call_absurd",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"nv\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\nranks = 2\ncollective = \"all_reduce\"\ncall = \"1s\"\nbusbw = \"90GB/s\"\n", kParallel),
       "bad.toml:16:8", "call must be above 0 and at most 10ms", ""},
      {"group_missing_busbw",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"nv\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\nranks = 2\ncollective = \"all_reduce\"\ncall = \"30us\"\n", kParallel),
       "bad.toml:", "busbw", "350GB/s"},
      {"group_twice",
       base_with(kModel, kTraining, kCluster + "[[cluster.link]]\nname = \"nv\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\nranks = 2\ncollective = \"all_reduce\"\ncall = \"30us\"\nbusbw = \"90GB/s\"\n"
                 "[[cluster.link.group]]\nranks = 2\ncollective = \"all_reduce\"\ncall = \"20us\"\nbusbw = \"80GB/s\"\n", kParallel),
       "bad.toml:19:9", "a second all_reduce point for 2 ranks", "one point per collective"},
      {"group_on_a_nic",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"100GB/s\"\n[[cluster.link.group]]\n"
                 "ranks = 2\ncollective = \"all_reduce\"\ncall = \"30us\"\nbusbw = \"90GB/s\"\n", kParallel),
       "bad.toml:14:9", "group points describe groups inside one node", "scale-up"},
      {"all_to_all_efficiency_out_of_range",
       base_with(kModel, kTraining,
                 kCluster + "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"100GB/s\"\nall_to_all_efficiency = 0\n",
                 kParallel),
       "bad.toml:13:25", "all_to_all_efficiency", ""},
      {"heads_not_dividing_hidden", base_with("preset = \"tiny\"\nheads = 7\n", kTraining, kCluster, kParallel),
       "bad.toml:", "hidden (256) is not divisible by heads (7)", ""},
      {"sweep_needs_the_sweep_command", base_with(kModel, kTraining, kCluster, kParallel) + "[sweep]\n\"cluster.pool.0.nodes\" = [1, 2]\n",
       "bad.toml:13:1", "this scenario has a [sweep] table", "hetsim sweep"},
      {"seq_len_beyond_learned_positions",
       base_with("preset = \"gpt3-175b\"\nlayers = 8\n", "global_batch = 16\nseq_len = 4096\n", kCluster, "tp = 8\npp = 1\n"),
       "bad.toml:", "seq_len 4096 exceeds the model's 2048 learned positions", "max_positions"},
      {"nic_latency_without_custom_nic", base_with(kModel, kTraining, kCluster + "[cluster.network]\nnic_latency = \"2us\"\n", kParallel),
       "bad.toml:10:15", "nic_latency applies to a custom NIC only", "nic_bandwidth"},
      {"unknown_attention_kernel", base_with(kModel, kTraining + "attention_kernel = \"fa3\"\n", kCluster, kParallel),
       "bad.toml:6:20", "attention_kernel", ""},
      {"unknown_loss_kernel", base_with(kModel, kTraining + "loss_kernel = \"liger\"\n", kCluster, kParallel),
       "bad.toml:6:15", "loss_kernel", ""},
      {"zero3_copy_out_not_a_boolean", base_with(kModel, kTraining + "zero3_copy_out = \"no\"\n", kCluster, kParallel),
       "bad.toml:6:18", "zero3_copy_out", ""},
      {"pipeline_scatter_gather_not_a_boolean",
       base_with(kModel, kTraining + "pipeline_scatter_gather = 1\n", kCluster, kParallel), "bad.toml:6:27",
       "pipeline_scatter_gather", ""},
      {"unknown_norm_kernel", base_with(kModel, kTraining + "norm_kernel = \"apex\"\n", kCluster, kParallel),
       "bad.toml:6:15", "norm_kernel", ""},
      {"autocast_in_fp32", base_with(kModel, kTraining + "precision = \"fp32\"\nautocast = true\n", kCluster, kParallel),
       "bad.toml:7:12", "autocast casts fp32 parameters to 16 bits", "precision = \"bf16\""},
      {"fp8_scaling_without_fp8", base_with(kModel, kTraining + "fp8_scaling = \"current\"\n", kCluster, kParallel),
       "bad.toml:6:15", "fp8_scaling says how fp8 tensors are scaled: it needs precision \"fp8\"", "precision = \"fp8\""},
      {"grad_accumulation_in_fp32",
       base_with(kModel, kTraining + "precision = \"fp32\"\ngrad_accumulation = \"add\"\n", kCluster, kParallel),
       "bad.toml:7:21", "precision \"fp32\" has no 16-bit gradients", "remove grad_accumulation"},
      {"grad_accumulation_under_autocast",
       base_with(kModel, kTraining + "autocast = true\ngrad_accumulation = \"cast_add\"\n", kCluster, kParallel),
       "bad.toml:7:21", "under autocast the parameters and their gradients are fp32 already", "remove grad_accumulation"},
      {"unknown_grad_accumulation", base_with(kModel, kTraining + "grad_accumulation = \"hook\"\n", kCluster, kParallel),
       "bad.toml:6:21", "grad_accumulation", "cast_add"},
      {"unknown_sp_gather", base_with(kModel, kTraining + "sp_gather = \"te\"\n", kCluster, kParallel),
       "bad.toml:6:13", "sp_gather", "framework"},
      {"expert_kernel_on_a_dense_model", base_with(kModel, kTraining + "expert_kernel = \"grouped\"\n", kCluster, kParallel),
       "bad.toml:6:17", "expert_kernel says how a mixture-of-experts model's experts run their GEMMs, and this model has no experts",
       "set [model] experts"},
      {"unknown_expert_kernel",
       base_with("preset = \"mixtral-8x7b\"\nlayers = 4\n", kTraining + "expert_kernel = \"cutlass\"\n", kCluster, kParallel),
       "bad.toml:7:17", "expert_kernel", "grouped"},
      {"fp8_scaling_unknown", base_with(kModel, kTraining + "precision = \"fp8\"\nfp8_scaling = \"blockwise\"\n", kCluster, kParallel),
       "bad.toml:7:15", "fp8_scaling", "delayed"},
      {"grad_reduce_dtype_unknown", base_with(kModel, kTraining + "grad_reduce_dtype = \"fp16\"\n", kCluster, kParallel),
       "bad.toml:6:21", "grad_reduce_dtype", "fp32"},
      {"ep_on_a_dense_model", base_with(kModel, kTraining, kCluster, kParallel + "ep = 2\n"),
       "bad.toml:13:6", "ep = 2 (expert parallelism) needs a mixture-of-experts model", "experts"},
      {"expert_tp_on_a_dense_model", base_with(kModel, kTraining, kCluster, kParallel + "expert_tp = 1\n"),
       "bad.toml:13:13", "expert_tp splits the routed experts over tensor-parallel ranks, and this model has no experts",
       "experts"},
      {"expert_tp_not_dividing_tp",
       base_with(kModel + "experts = 8\ntop_k = 2\n", kTraining, kCluster, "tp = 4\npp = 1\ndp = 4\nexpert_tp = 3\n"),
       "bad.toml:15:13", "expert_tp = 3 does not divide a stage's tp = 4", "divisors of every stage's tp"},
      {"ep_times_expert_tp_not_dividing_the_devices",
       base_with(kModel + "experts = 8\ntop_k = 2\n", kTraining, kCluster, "tp = 2\npp = 2\ndp = 4\nep = 8\nexpert_tp = 2\n"),
       "bad.toml:15:6", "ep = 8 does not divide the 4 data-parallel replicas", "expert_tp < tp"},
      {"folded_ep_not_dividing_the_devices",
       base_with(kModel + "experts = 16\ntop_k = 2\n", kTraining, kCluster, "tp = 2\npp = 2\ndp = 4\nep = 16\nexpert_tp = 1\n"),
       "bad.toml:15:6", "ep · expert_tp = 16 · 1 does not divide a stage's tp · replicas = 2 · 4", "tp · dp"},
      {"folding_without_sequence_parallelism",
       base_with(kModel + "experts = 8\ntop_k = 2\n", kTraining, kCluster,
                 "tp = 2\npp = 2\ndp = 4\nep = 4\nexpert_tp = 1\nsequence_parallel = false\n"),
       "bad.toml:16:13", "needs sequence parallelism", "sequence_parallel = true"},
      {"full_mesh_too_many_devices_per_node",
       base_with(kModel, kTraining,
                 "[[cluster.link]]\nname = \"mesh\"\nkind = \"scale-up\"\nbandwidth = \"100GB/s\"\nper_peer = \"50GB/s\"\n"
                 "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\ndevices_per_node = 4\nfabric = \"mesh\"\n",
                 kParallel),
       "bad.toml:14:20", "give each 3 links of 50 GB/s, more than its 100 GB/s", "bandwidth / per_peer + 1"},
      {"fp8_dispatch_on_a_dense_model", base_with(kModel, kTraining, kCluster, kParallel + "fp8_dispatch = true\n"),
       "bad.toml:13:16", "fp8_dispatch sends the tokens to their experts in fp8, and this model has no experts", "experts"},
      {"overlap_ep_comm_on_a_dense_model", base_with(kModel, kTraining, kCluster, kParallel + "overlap_ep_comm = true\n"),
       "bad.toml:13:19", "overlap_ep_comm overlaps expert-parallel all-to-alls, and this model has no experts", "experts"},
      {"overlap_ep_comm_not_a_boolean", base_with(kModel + "experts = 8\ntop_k = 2\n", kTraining, kCluster, kParallel + "overlap_ep_comm = 1\n"),
       "bad.toml:15:19", "overlap_ep_comm", ""},
      {"expert_groups_not_dividing_experts",
       base_with(kModel + "experts = 8\ntop_k = 2\nexpert_groups = 3\nexpert_group_topk = 1\n", kTraining, kCluster, kParallel),
       "bad.toml:5:17", "expert_groups (3) does not divide the 8 experts", "divisors of experts"},
      {"expert_group_topk_above_groups",
       base_with(kModel + "experts = 8\ntop_k = 2\nexpert_groups = 4\nexpert_group_topk = 5\n", kTraining, kCluster, kParallel),
       "bad.toml:6:21", "expert_group_topk (5) exceeds expert_groups (4)", "expert_group_topk <= expert_groups"},
      {"expert_groups_too_few_experts",
       base_with(kModel + "experts = 8\ntop_k = 4\nexpert_groups = 4\nexpert_group_topk = 1\n", kTraining, kCluster, kParallel),
       "bad.toml:6:21", "expert_group_topk (1) groups of 2 experts hold fewer than top_k (4)", "more groups per token"},
      {"expert_groups_without_topk",
       base_with(kModel + "experts = 8\ntop_k = 2\nexpert_groups = 4\n", kTraining, kCluster, kParallel),
       "bad.toml:5:17", "group-limited routing needs both expert_groups and expert_group_topk", "expert_group_topk = "},
      {"expert_groups_on_a_dense_model",
       base_with(kModel + "expert_groups = 2\nexpert_group_topk = 1\n", kTraining, kCluster, kParallel),
       "bad.toml:3:17", "expert_groups limits a mixture of experts' routing, and this model has experts = 1", "experts"},
      {"ep_dispatch_on_a_dense_model", base_with(kModel, kTraining, kCluster, kParallel + "ep_dispatch = \"hierarchical\"\n"),
       "bad.toml:13:15", "ep_dispatch says how tokens reach their experts, and this model has no experts", "experts"},
      {"ep_dispatch_unknown",
       base_with(kModel + "experts = 8\ntop_k = 2\n", kTraining, kCluster, kParallel + "ep_dispatch = \"deepep\"\n"),
       "bad.toml:15:15", "ep_dispatch", "hierarchical"},
      {"ep_not_dividing_experts", base_with(kModel + "experts = 6\ntop_k = 2\n", kTraining, kCluster, kParallel + "ep = 4\n"),
       "bad.toml:15:6", "ep = 4 does not divide the model's 6 experts", "divisors of experts"},
      {"ep_not_dividing_dp", base_with(kModel + "experts = 8\ntop_k = 2\n", kTraining, kCluster, kParallel + "ep = 8\n"),
       "bad.toml:15:6", "ep = 8 does not divide the 4 data-parallel replicas", "dividing dp"},
      {"shared_experts_on_a_dense_model", base_with(kModel + "shared_experts = 1\n", kTraining, kCluster, kParallel),
       "bad.toml:3:18", "shared experts belong to a mixture of experts", "set experts"},
      {"shared_ffn_hidden_without_shared_experts",
       base_with(kModel + "experts = 4\ntop_k = 2\nshared_ffn_hidden = 512\n", kTraining, kCluster, kParallel),
       "bad.toml:5:21", "shared_ffn_hidden is set but shared_experts is 0", "shared_experts"},
      // Mixture of experts: routing (issue 15). Line 3 is the first key after the preset.
      {"top_k_above_experts", base_with(kModel + "experts = 4\ntop_k = 6\n", kTraining, kCluster, kParallel),
       "bad.toml:4:9", "top_k (6) exceeds experts (4)", "top_k <= experts"},
      {"capacity_below_one_dropless",
       base_with(kModel + "experts = 4\ntop_k = 2\ncapacity_factor = 0.8\ndropless = true\n", kTraining, kCluster, kParallel),
       "bad.toml:5:19", "capacity_factor below 1 with dropless routing", "dropless = false"},
      {"routing_histogram_wrong_length",
       base_with(kModel + "experts = 4\ntop_k = 2\nrouting_histogram = [1, 2, 3]\n", kTraining, kCluster, kParallel),
       "bad.toml:5:21", "the histogram has 3 entries and the model 4 experts", "one token count per expert"},
      {"routing_histogram_negative",
       base_with(kModel + "experts = 4\ntop_k = 2\nrouting_histogram = [1, -2, 3, 4]\n", kTraining, kCluster, kParallel),
       "bad.toml:5:25", "negative token count for expert 1", "0 or more"},
      {"routing_histogram_all_zero",
       base_with(kModel + "experts = 4\ntop_k = 2\nrouting_histogram = [0, 0, 0, 0]\n", kTraining, kCluster, kParallel),
       "bad.toml:5:21", "every entry of the histogram is 0", "at least one above 0"},
      {"routing_histogram_not_a_number",
       base_with(kModel + "experts = 4\ntop_k = 2\nrouting_histogram = [1, \"x\", 3, 4]\n", kTraining, kCluster, kParallel),
       "bad.toml:5:25", "expected a number, got a string", "per expert"},
      {"routing_on_a_dense_model", base_with(kModel + "routing_skew = 1.2\n", kTraining, kCluster, kParallel),
       "bad.toml:3:16", "routing imbalance belongs to a mixture of experts", "set experts"},
      {"routing_skew_and_histogram",
       base_with(kModel + "experts = 4\ntop_k = 2\nrouting_skew = 1\nrouting_histogram = [1, 1, 1, 1]\n", kTraining, kCluster,
                 kParallel),
       "bad.toml:6:21", "routing_skew and routing_histogram are both set", "keep one"},
      {"routing_skew_negative", base_with(kModel + "experts = 4\ntop_k = 2\nrouting_skew = -1\n", kTraining, kCluster, kParallel),
       "bad.toml:5:16", "routing_skew = -1 is out of range", "expected 0 to 16"},
      {"first_dense_layers_on_a_dense_model", base_with(kModel + "first_dense_layers = 1\n", kTraining, kCluster, kParallel),
       "bad.toml:3:22", "first_dense_layers lays out a mixture of experts", "set experts"},
      {"no_moe_layer_left",
       base_with(kModel + "experts = 4\ntop_k = 2\nfirst_dense_layers = 4\n", kTraining, kCluster, kParallel),
       "bad.toml:5:22", "no layer of the 4 is a MoE layer", "first_dense_layers below layers"},
      {"mla_key_without_latent", base_with(kModel + "v_head_dim = 64\n", kTraining, kCluster, kParallel),
       "bad.toml:3:14", "v_head_dim belongs to multi-head latent attention", "kv_lora_rank"},
      {"mla_without_value_heads", base_with(kModel + "kv_lora_rank = 64\n", kTraining, kCluster, kParallel),
       "bad.toml:3:16", "multi-head latent attention needs v_head_dim > 0", "v_head_dim"},
      {"head_dim_zero", base_with(kModel + "head_dim = 0\n", kTraining, kCluster, kParallel), "bad.toml:3:12", "head_dim",
       ""},
      {"selective_op_for_moe", base_with(kModel + "experts = 4\ntop_k = 2\n", kTraining, kCluster, kParallel + "recompute = \"selective_op\"\n"),
       "bad.toml:15:13", "modelled for dense models only", "mixture-of-experts"},
      {"recompute_modules_without_selective",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"full\"\nrecompute_modules = [\"mlp\"]\n"),
       "bad.toml:14:21", "chooses what selective recompute re-runs, and recompute is \"full\"", "recompute = \"selective\""},
      {"recompute_misspelt_beside_modules",  // one message: the modules are not judged against "none"
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selctive\"\nrecompute_modules = [\"mlp\"]\n"),
       "bad.toml:13:13", "selctive", "selective"},
      {"recompute_module_unknown",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selective\"\nrecompute_modules = [\"mlp\", \"layer_norm\"]\n"),
       "bad.toml:14:29", "unknown recompute module 'layer_norm'", "did you mean 'layernorm'?"},
      {"recompute_modules_not_an_array",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selective\"\nrecompute_modules = \"mlp\"\n"),
       "bad.toml:14:21", "expected an array of module names, got a string", "recompute_modules = ["},
      {"recompute_module_of_experts_on_a_dense_model",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selective\"\nrecompute_modules = [\"moe_act\"]\n"),
       "bad.toml:14:21", "\"moe_act\" needs a mixture-of-experts model", "docs/scenario-format.md#parallel"},
      {"recompute_module_mla_without_mla",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selective\"\nrecompute_modules = [\"mla_up_proj\"]\n"),
       "bad.toml:14:21", "\"mla_up_proj\" needs multi-head latent attention", ""},
      {"recompute_modules_empty",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selective\"\nrecompute_modules = []\n"),
       "bad.toml:14:21", "recompute_modules is empty", ""},
      {"virtual_stages_without_interleaving", base_with(kModel, kTraining, kCluster, kParallel + "virtual_stages = 2\n"),
       "bad.toml:13:18", "virtual_stages applies to the interleaved schedule only", ""},
      {"no_nics_for_traffic_between_pools",
       base_with(kModel, kTraining,
                 "[[cluster.pool]]\nname = \"a\"\ndevice = \"h100-sxm5\"\nnodes = 1\nnics_per_node = 0\n"
                 "[[cluster.pool]]\nname = \"b\"\ndevice = \"a100-sxm4-80gb\"\nnodes = 1\n[cluster.network]\nnic = \"ib-ndr-400\"\n",
                 "micro_batch = 1\n[[parallel.replicas]]\ncount = 4\nstages = [{pool = \"a\", tp = 2, layers = 2}, "
                 "{pool = \"b\", tp = 2, layers = 2}]\n"),
       "bad.toml:", "pool 'a' has no NICs (nics_per_node = 0)", "nics_per_node"},
      // lines 13-: [reference] after the [parallel] table
      {"reference_memory_zero", base_with(kModel, kTraining, kCluster, kParallel) + "[reference]\npeak_memory = \"0GiB\"\n",
       "bad.toml:14:15", "must be between 1 byte and 1 PB", "GiB"},
      {"reference_memory_kind", base_with(kModel, kTraining, kCluster, kParallel) +
                                    "[reference]\nstep_time_s = 1.0\npeak_memory = \"4GiB\"\npeak_memory_kind = \"nvidia-smi\"\n",
       "bad.toml:16:20", "peak_memory_kind", ""},
      {"reference_nothing_measured", base_with(kModel, kTraining, kCluster, kParallel) + "[reference]\nsource = \"x\"\n",
       "bad.toml:13:", "step_time_s", "peak_memory"},
      {"gradient_bytes_range", base_with(kModel, kTraining, kCluster, kParallel) + "[memory]\ngradient_bytes = 40\n",
       "bad.toml:14:18", "gradient_bytes", ""},
      {"expert_gradient_bytes_range", base_with(kModel, kTraining, kCluster, kParallel) + "[memory]\nexpert_gradient_bytes = 0\n",
       "bad.toml:14:25", "expert_gradient_bytes", "1 to 16"},
      {"expert_gradient_bytes_on_a_dense_model",
       base_with(kModel, kTraining, kCluster, kParallel) + "[memory]\nexpert_gradient_bytes = 2\n",
       "bad.toml:14:25", "routed experts' gradient width, and this model has experts = 1", "gradient_bytes"},
      {"recompute_module_mlp_without_dense_layers",
       base_with(kModel + "experts = 4\ntop_k = 2\n", kTraining, kCluster,
                 kParallel + "recompute = \"selective\"\nrecompute_modules = [\"mlp\"]\n"),
       "bad.toml:16:21", "every layer of this model is a MoE layer", "docs/scenario-format.md#parallel"},
      {"recompute_module_layernorm_where_norms_are_fused",
       base_with(kModel, kTraining, kCluster, kParallel + "recompute = \"selective\"\nrecompute_modules = [\"layernorm\"]\n"),
       "bad.toml:14:21", "this model's norms are fused into the GEMMs after them", ""},
      {"optimizer_bytes_negative", base_with(kModel, kTraining, kCluster, kParallel) + "[memory]\noptimizer_bytes = -4\n",
       "bad.toml:14:19", "optimizer_bytes", "0 to 32"},
      {"fused_kernels_type", base_with(kModel, kTraining + "fused_kernels = \"yes\"\n", kCluster, kParallel),
       "bad.toml:6:17", "expected true or false", ""},
      {"quantity_beyond_physics", base_with(kModel, kTraining, kCluster, kParallel) + "[memory]\nruntime_reserve = \"1e300GiB\"\n",
       "bad.toml:14:19", "out of range in memory.runtime_reserve: at most 1 EiB", ""},
      {"number_out_of_range_said_short", base_with(kModel, kTraining + "tokens = 1e300\n", kCluster, kParallel),
       "bad.toml:6:10", "tokens = 1e+300 is out of range", "expected 0 to 1e+18"},
      {"cost_pue_range", base_with(kModel, kTraining, kCluster, kParallel) + "[cost]\npue = 0.5\n",
       "bad.toml:14:7", "pue", ""},
      {"scenario_unknown_key", "[scenario]\nnmae = \"x\"\n" + base_with(kModel, kTraining, kCluster, kParallel),
       "bad.toml:2:1", "unknown key 'nmae'", "name"},
      {"purchase_unknown_device", base_with(kModel, kTraining, kCluster, kParallel) +
                                      "[purchase]\n[[purchase.candidate]]\ndevice = \"h100-sxm6\"\nmax_nodes = 2\n",
       "bad.toml:15:10", "unknown device 'h100-sxm6'", "h100-sxm5"},
      {"purchase_zero_nodes", base_with(kModel, kTraining, kCluster, kParallel) +
                                  "[purchase]\n[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 0\n",
       "bad.toml:16:13", "can never be bought", "at least one node"},
      {"purchase_candidate_with_nodes", base_with(kModel, kTraining, kCluster, kParallel) +
                                            "[purchase]\n[[purchase.candidate]]\ndevice = \"mi300x\"\nnodes = 2\nmax_nodes = 2\n",
       "bad.toml:16:9", "has no nodes yet", "max_nodes"},
      {"purchase_no_candidate", base_with(kModel, kTraining, kCluster, kParallel) + "[purchase]\nbudget_usd = 1e6\n",
       "bad.toml:13:", "at least one candidate", "purchase.candidate"},
      {"purchase_objective", base_with(kModel, kTraining, kCluster, kParallel) +
                                 "[purchase]\nobjective = \"fastest\"\n[[purchase.candidate]]\ndevice = \"mi300x\"\nmax_nodes = 2\n",
       "bad.toml:14:13", "objective", ""},
      {"reliability_unknown_key", base_with(kModel, kTraining, kCluster, kParallel) + "[reliability]\nmtbf = 5\n",
       "bad.toml:14:1", "unknown key 'mtbf'", "mtbf_hours"},
      {"reliability_mtbf_range", base_with(kModel, kTraining, kCluster, kParallel) + "[reliability]\nmtbf_hours = 0\n",
       "bad.toml:14:14", "mtbf_hours", ""},
      {"reliability_slow_storage", base_with(kModel, kTraining, kCluster, kParallel) +
                                       "[reliability]\ncheckpoint_bandwidth = \"0.5MB/s\"\n",
       "bad.toml:14:24", "below 1 MB/s per device", "per device"},
      {"reliability_restart_unit", base_with(kModel, kTraining, kCluster, kParallel) + "[reliability]\nrestart_time = \"10GB\"\n",
       "bad.toml:14:16", "restart_time", ""},
  };
}

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadInput, GetsOneClearLocatedMessage) {
  const BadCase& c = GetParam();
  auto s = test::parse(c.text, "bad.toml");
  ASSERT_FALSE(s.ok()) << c.name << " was accepted";
  const std::string all = test::all_errors(s.errors());
  bool found = false;
  for (const auto& d : s.errors()) {
    const std::string line = to_string(d);
    if (line.rfind(c.where, 0) == 0 && line.find(c.says) != std::string::npos &&
        d.hint.find(c.hint) != std::string::npos)
      found = true;
  }
  EXPECT_TRUE(found) << "want " << c.where << " … " << c.says << " (hint: " << c.hint << ")\ngot:\n" << all;
}

// A misspelt recompute is said once, at its key: the modules beside it are not also judged
// against the default (which would tell the user to write the "selective" they meant).
TEST(BadInputOnce, AMisspeltRecomputeBesideItsModulesIsOneMessage) {
  auto s = test::parse(base_with(kModel, kTraining, kCluster,
                                 kParallel + "recompute = \"selctive\"\nrecompute_modules = [\"mlp\"]\n"),
                       "bad.toml");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.errors().size(), 1u) << test::all_errors(s.errors());
}

INSTANTIATE_TEST_SUITE_P(Scenarios, BadInput, ::testing::ValuesIn(cases()),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

// The table above covers every part of the format: distinct cases (no copy counted twice), and
// at least one whose message names a key of each table a scenario has, so a reader that stops
// checking one table is caught here.
TEST(BadInputCoverage, DistinctCasesForEveryTable) {
  std::set<std::string> names, texts, tables;
  for (const auto& c : cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "two cases named " << c.name;
    EXPECT_TRUE(texts.insert(c.text).second) << c.name << " repeats another case's text";
    auto s = test::parse(c.text, "bad.toml");
    if (s.ok()) continue;  // GetsOneClearLocatedMessage reports it
    for (const auto& d : s.errors()) tables.insert(d.key.substr(0, d.key.find_first_of(".[")));
  }
  EXPECT_GE(cases().size(), 15u);
  for (const char* t : {"model", "training", "cluster", "parallel", "cost", "memory", "reference", "scenario"})
    EXPECT_TRUE(tables.count(t)) << "no bad-input case names a key of [" << t << "]";
}

TEST(BadInputAll, SeveralProblemsAreAllReported) {
  auto s = test::parse("[model]\npreset = \"tiny\"\nlayerz = 3\n[training]\nglobal_batch = \"x\"\nseq_len = 512\n"
                       "[[cluster.pool]]\ndevice = \"h100\"\nnodes = 1\n", "bad.toml");
  ASSERT_FALSE(s.ok());
  EXPECT_GE(s.errors().size(), 3u) << test::all_errors(s.errors());
}

TEST(BadInputFile, MissingFileSaysSo) {
  auto s = io::read_scenario("/nonexistent/x.toml", test::catalog());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(to_string(s.errors()[0]).find("cannot open scenario file"), std::string::npos);
}

// A measured histogram from a file (relative to the scenario): a bad entry is reported where it
// stands in that file; a missing file names itself; the right one loads, normalised.
TEST(BadInputFile, RoutingHistogramFile) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "hetsim-routing";
  std::filesystem::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) { std::ofstream(dir / name) << text; };
  write("good.txt", "# tokens per expert\n30, 10\n10 10  # rank 1\n");
  write("bad.txt", "3 1\n2 abc\n");
  write("neg.txt", "3 1\n2 -1\n");
  auto scenario = [&](const std::string& hist) {
    std::ofstream(dir / "s.toml") << base_with(kModel + "experts = 4\ntop_k = 2\nrouting_histogram = \"" + hist + "\"\n",
                                               kTraining, kCluster, kParallel);
    return io::read_scenario(dir / "s.toml", test::catalog());
  };
  auto good = scenario("good.txt");
  ASSERT_TRUE(good.ok()) << test::all_errors(good.errors());
  ASSERT_EQ(good->model.expert_load.size(), 4u);
  EXPECT_DOUBLE_EQ(good->model.expert_load[0], 0.5);
  EXPECT_DOUBLE_EQ(good->model.expert_load[3], 1.0 / 6);
  auto bad = scenario("bad.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(to_string(bad.errors()[0]).rfind((dir / "bad.txt").string() + ":2:3", 0), 0u) << test::all_errors(bad.errors());
  EXPECT_NE(to_string(bad.errors()[0]).find("'abc' is not a number"), std::string::npos);
  auto neg = scenario("neg.txt");
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(to_string(neg.errors()[0]).find("neg.txt:2:3"), std::string::npos) << test::all_errors(neg.errors());
  auto missing = scenario("none.txt");
  ASSERT_FALSE(missing.ok());
  const std::string m = to_string(missing.errors()[0]);
  EXPECT_NE(m.find("s.toml:5:21"), std::string::npos) << m;
  EXPECT_NE(m.find("none.txt"), std::string::npos) << m;
}

}  // namespace
}  // namespace hetsim

#include "sim/io/detail/scenario_sections.hpp"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/base/nearest.hpp"
#include "sim/io/detail/plan_names.hpp"
#include "sim/io/scenario_reader.hpp"

namespace hetsim::io {
namespace {

using detail::dense_model_hint;
using detail::dense_model_message;

// ------------------------------------------------------------------------------- [parallel]
// Per-op selective checkpointing is modelled for dense models only (memory.cpp): said where
// [parallel] reads it (at the key) and where a plan file is validated.
constexpr const char* kSelectiveOpDenseOnly =
    "recompute = \"selective_op\" (per-op selective checkpointing) is modelled for dense models only";
constexpr const char* kSelectiveOpHint = "use \"selective\" or \"full\" for a mixture-of-experts model";

// What recompute_modules asks of the model, one sentence a module it cannot have (none: all
// fine). Said where [parallel] reads the key and where a plan file is validated.
constexpr const char* kModulesHint = "see docs/scenario-format.md#parallel for what each module re-runs";
std::vector<std::string> recompute_module_problems(const workload::ModelSpec& m, const plan::Plan& p) {
  std::vector<std::string> out;
  if (p.recompute != cost::Recompute::Selective) return out;
  using workload::RecomputeModule;
  const auto has = [&](RecomputeModule x) { return workload::has_module(p.recompute_modules, x); };
  if (p.recompute_modules == 0) out.push_back("recompute_modules is empty: selective recompute would re-run nothing");
  for (auto x : {RecomputeModule::MoeAct, RecomputeModule::Moe, RecomputeModule::SharedExperts})
    if (has(x) && !m.moe())
      out.push_back("recompute module \"" + detail::kRecomputeModules.name(x) +
                    "\" needs a mixture-of-experts model, and this one has experts = " + std::to_string(m.experts));
  if (has(RecomputeModule::SharedExperts) && m.moe() && m.shared_experts == 0)
    out.push_back("recompute module \"shared_experts\" needs shared experts, and this model has none");
  if (has(RecomputeModule::MlaUpProj) && !m.mla())
    out.push_back("recompute module \"mla_up_proj\" needs multi-head latent attention (kv_lora_rank > 0)");
  // Modules Megatron-Core accepts and skips in this model: said, as they would change nothing.
  if (has(RecomputeModule::Mlp) && m.moe() && m.moe_layers(0, m.layers) == m.layers)
    out.push_back("recompute module \"mlp\" re-runs a dense layer's MLP, and every layer of this model is a MoE layer "
                  "(\"moe\", \"moe_act\" or \"shared_experts\" re-run parts of those)");
  if (has(RecomputeModule::LayerNorm) && !m.moe() && !m.mla())
    out.push_back("recompute module \"layernorm\" re-runs the norms that are modules of their own (MLA's input norm, a "
                  "MoE layer's pre-MLP norm); this model's norms are fused into the GEMMs after them, which Megatron-Core "
                  "skips (\"mlp\" re-runs the MLP's with it)");
  return out;
}

// What context parallelism (plan::Plan::cp) cannot do with this model and plan, one sentence
// each (none: it can). The replicas of every group come in blocks of cp that share sequences.
constexpr const char* kCpHint = "set cp = 1, or see docs/cost-models.md#context-parallelism for what it needs";
std::vector<std::string> context_parallel_problems(const Scenario& s, const plan::Plan& p) {
  std::vector<std::string> out;
  const int cp = p.cp;
  if (cp <= 1) return out;
  const auto& m = s.model;
  const std::string c = "cp = " + std::to_string(cp);
  if (m.moe()) out.push_back(c + ": context parallelism of a mixture-of-experts model is not modelled");
  if (m.mla()) out.push_back(c + ": context parallelism of multi-head latent attention is not modelled");
  if (!s.training.flash_attention)
    out.push_back(c + " needs fused attention (flash_attention = true): the exchange runs inside the attention kernels");
  const int chunks = s.training.causal && p.cp_comm != plan::Plan::CpComm::AllToAll ? 2 * cp : cp;
  if (s.training.seq_len % chunks != 0)
    out.push_back(c + " cuts each sequence into " + std::to_string(chunks) + " equal chunks" +
                  (chunks == 2 * cp ? " (two a rank, so that causal attention balances)" : "") +
                  ", which seq_len = " + std::to_string(s.training.seq_len) + " does not allow");
  for (const auto& g : p.groups) {
    if (g.replicas % cp != 0) {
      out.push_back(c + " does not divide a replica group's " + std::to_string(g.replicas) +
                    " replicas (its ranks share each sequence)");
      break;
    }
  }
  if (p.cp_comm == plan::Plan::CpComm::AllToAll)
    for (const auto& g : p.groups)
      for (const auto& st : g.stages)
        if ((m.heads / st.tp) % cp != 0 || std::max(1, m.kv_heads / st.tp) % cp != 0) {
          out.push_back("cp_comm = \"a2a\" splits each rank's attention heads over the cp ranks: " + c +
                        " does not divide the " + std::to_string(m.heads / st.tp) + " query (" +
                        std::to_string(std::max(1, m.kv_heads / st.tp)) + " key-value) heads of a rank at tp = " +
                        std::to_string(st.tp));
          return out;
        }
  return out;
}

}  // namespace

namespace detail {

void read_recompute_modules(TomlReader& r, const TableRef& t, const Scenario& s, plan::Plan& p, bool searched) {
  const toml::node* mods = r.node(t, "recompute_modules");
  if (!mods) return;
  const std::string key = t.path + ".recompute_modules";
  const auto names = recompute_module_names();
  if (!searched && p.recompute != cost::Recompute::Selective) {
    r.error(r.loc(mods), key, modules_without_selective(p.recompute),
            "set recompute = \"selective\", or remove recompute_modules");
    return;
  }
  const toml::array* a = mods->as_array();
  if (!a) {
    r.error(r.loc(mods), key, "expected an array of module names, got " + type_name(*mods),
            "e.g. recompute_modules = [\"layernorm\", \"moe_act\"]");
    return;
  }
  workload::RecomputeModules set = 0;
  for (const toml::node& el : *a) {
    const auto* str = el.as_string();
    if (!str) {
      r.error(r.loc(&el), key, "expected a module name, got " + type_name(el), "one of: " + fmt::format("{}", fmt::join(names, ", ")));
      return;
    }
    const std::string n = str->get();
    const auto mod = kRecomputeModules.find(n);
    if (!mod) {
      r.error(r.loc(&el), key, "unknown recompute module '" + n + "'", suggest(n, names));
      return;
    }
    set = static_cast<workload::RecomputeModules>(set | workload::module_bit(*mod));
  }
  p.recompute_modules = set;
  // (The planner's search tries selective recompute with these modules.)
  plan::Plan selective = p;
  selective.recompute = cost::Recompute::Selective;
  for (const auto& msg : recompute_module_problems(s.model, selective)) r.error(r.loc(mods), key, msg, kModulesHint);
}

const std::vector<std::string> kParallelKeys = {
    "tp", "pp", "dp", "micro_batch", "schedule", "virtual_stages", "recompute", "recompute_modules", "zero", "ep", "expert_tp", "sequence_parallel",
    "grad_sync", "overlap_grad_reduce", "overlap_tp_comm", "overlap_tp_backward", "overlap_ep_comm", "ep_dispatch", "fp8_dispatch", "cp", "cp_comm", "pipeline_runs", "replicas"};

void read_framework(TomlReader& r, const TableRef& t, const Scenario& s, plan::Plan& p) {
  p.sequence_parallel = r.boolean(t, "sequence_parallel").value_or(p.sequence_parallel);
  if (auto a = pick<cost::Algorithm>(r, t, "grad_sync", {{"auto", cost::Algorithm::Auto},
                                                          {"ring", cost::Algorithm::Ring},
                                                          {"tree", cost::Algorithm::Tree},
                                                          {"hierarchical", cost::Algorithm::Hierarchical}}))
    p.grad_sync = *a;
  p.overlap_grad_reduce = r.boolean(t, "overlap_grad_reduce").value_or(p.overlap_grad_reduce);
  p.overlap_tp_comm = r.boolean(t, "overlap_tp_comm").value_or(p.overlap_tp_comm);
  p.overlap_tp_backward = r.boolean(t, "overlap_tp_backward").value_or(p.overlap_tp_backward);
  p.overlap_ep_comm = r.boolean(t, "overlap_ep_comm").value_or(p.overlap_ep_comm);
  if (p.overlap_ep_comm && !s.model.moe()) refuse_on_dense(r, t, s, "overlap_ep_comm");
  if (auto d = pick<plan::Plan::EpDispatch>(r, t, "ep_dispatch", {{"all-to-all", plan::Plan::EpDispatch::AllToAll},
                                                                    {"hierarchical", plan::Plan::EpDispatch::Hierarchical}})) {
    p.ep_dispatch = *d;
    if (!s.model.moe()) refuse_on_dense(r, t, s, "ep_dispatch");
  }
  p.fp8_dispatch = r.boolean(t, "fp8_dispatch").value_or(p.fp8_dispatch);
  if (p.fp8_dispatch && !s.model.moe()) refuse_on_dense(r, t, s, "fp8_dispatch");
  if (auto c = pick<plan::Plan::CpComm>(r, t, "cp_comm", {{"p2p", plan::Plan::CpComm::Ring},
                                                           {"all_gather", plan::Plan::CpComm::AllGather},
                                                           {"a2a", plan::Plan::CpComm::AllToAll}}))
    p.cp_comm = *c;
  p.pipeline_runs = as_int(r.integer(t, "pipeline_runs", 1, 1 << 20), p.pipeline_runs);
  // Every group's micro-batches split into the runs, so the step's sequences do too.
  if (p.pipeline_runs > 1 && s.training.global_batch % p.pipeline_runs != 0)
    r.error(r.loc(r.node(t, "pipeline_runs")), t.path + ".pipeline_runs",
            "pipeline_runs = " + std::to_string(p.pipeline_runs) + " does not divide global_batch (" +
                std::to_string(s.training.global_batch) + "): each run takes an equal share of every replica's micro-batches",
            "choose pipeline_runs among the divisors of global_batch / (micro_batch · dp)");
}

std::optional<plan::Plan> read_parallel(TomlReader& r, const TableRef& root, const Scenario& s,
                                        SourceLoc& where) {
  auto t = r.table(root, "parallel");
  if (!t) return std::nullopt;
  where = r.loc(t->table);
  r.check_keys(*t, kParallelKeys);
  plan::Plan p;
  p.micro_batch = as_int(r.integer(*t, "micro_batch", 1, 1 << 20), 1);
  if (auto sch = pick<cost::Schedule>(r, *t, "schedule", {{"gpipe", cost::Schedule::GPipe},
                                                          {"1f1b", cost::Schedule::OneFOneB},
                                                          {"interleaved", cost::Schedule::Interleaved}}))
    p.schedule = *sch;
  p.virtual_stages = as_int(r.integer(*t, "virtual_stages", 1, 1024),
                            p.schedule == cost::Schedule::Interleaved ? 2 : 1);
  const auto rc = pick<cost::Recompute>(r, *t, "recompute", {{"none", cost::Recompute::None},
                                                              {"selective", cost::Recompute::Selective},
                                                              {"full", cost::Recompute::Full},
                                                              {"selective_op", cost::Recompute::SelectiveOp}});
  if (rc) {
    p.recompute = *rc;
    if (*rc == cost::Recompute::SelectiveOp && s.model.moe())
      r.error(r.loc(r.node(*t, "recompute")), "parallel.recompute", kSelectiveOpDenseOnly, kSelectiveOpHint);
  }
  // (A recompute that did not read, said at its key, leaves the modules unjudged.)
  if (rc || !r.node(*t, "recompute")) read_recompute_modules(r, *t, s, p, false);
  p.zero = as_int(r.integer(*t, "zero", 0, 3), p.zero);
  p.cp = as_int(r.integer(*t, "cp", 1, 1024), p.cp);
  const int cp = p.cp;
  p.ep = as_int(r.integer(*t, "ep", 1, 1 << 20), p.ep);
  if (p.ep > 1 && !s.model.moe())
    r.error(r.loc(r.node(*t, "ep")), t->path + ".ep", "ep = " + std::to_string(p.ep) +
            " (expert parallelism) needs a mixture-of-experts model, and this one has experts = " +
            std::to_string(s.model.experts), "remove ep, or set [model] experts (> 1) and top_k");
  else if (p.ep > 1 && s.model.experts % p.ep != 0)
    r.error(r.loc(r.node(*t, "ep")), t->path + ".ep", "ep = " + std::to_string(p.ep) + " does not divide the model's " +
            std::to_string(s.model.experts) + " experts", "choose ep among the divisors of experts");
  p.expert_tp = as_int(r.integer(*t, "expert_tp", 1, 1024), p.expert_tp);
  if (p.expert_tp > 0 && !s.model.moe()) refuse_on_dense(r, *t, s, "expert_tp");
  // Expert-parallel ranks are drawn from each stage's data-parallel replicas (expert_tp = tp),
  // or from its tp × replicas devices (folded: docs/cost-models.md#expert-tensor-parallelism).
  auto check_ep = [&](const plan::Plan& plan) {
    for (const auto& g : plan.groups)
      for (const auto& st : g.stages) {
        const int et = plan.expert_tp_of(st.tp);
        if (st.tp % et != 0) {
          r.error(r.loc(r.node(*t, "expert_tp")), t->path + ".expert_tp",
                  "expert_tp = " + std::to_string(et) + " does not divide a stage's tp = " + std::to_string(st.tp),
                  "choose expert_tp among the divisors of every stage's tp (1 folds all of it into expert parallelism)");
          return;
        }
        if (et < st.tp && !plan.sequence_parallel) {
          r.error(r.loc(r.node(*t, "expert_tp")), t->path + ".expert_tp",
                  "expert_tp below tp folds the TP ranks into expert parallelism, which needs sequence parallelism "
                  "(each TP rank dispatches its own sequence shard)",
                  "set sequence_parallel = true, or expert_tp = tp");
          return;
        }
        if (plan.ep > 1 && (st.tp * g.replicas) % (plan.ep * et) != 0) {
          if (et == st.tp)
            r.error(r.loc(r.node(*t, "ep")), t->path + ".ep", "ep = " + std::to_string(plan.ep) +
                    " does not divide the " + std::to_string(g.replicas) +
                    " data-parallel replicas of a replica group (expert-parallel ranks are drawn from them)",
                    "choose ep dividing dp (every [[parallel.replicas]] count), or fold tensor parallelism into it "
                    "with expert_tp < tp");
          else
            r.error(r.loc(r.node(*t, "ep")), t->path + ".ep", "ep · expert_tp = " + std::to_string(plan.ep) + " · " +
                    std::to_string(et) + " does not divide a stage's tp · replicas = " + std::to_string(st.tp) + " · " +
                    std::to_string(g.replicas) + " devices (expert groups are drawn from them)",
                    "choose ep and expert_tp whose product divides tp · dp");
          return;
        }
      }
  };
  read_framework(r, *t, s, p);
  // pipeline_runs against the plan's micro-batches, at the key (validate_plan checks plan files).
  auto check_runs = [&](const plan::Plan& plan) {
    if (plan.pipeline_runs <= 1) return;
    const auto at = r.loc(r.node(*t, "pipeline_runs"));
    for (const auto& g : plan.groups) {
      if (g.micro_batches % plan.pipeline_runs != 0) {
        r.error(at, t->path + ".pipeline_runs", "pipeline_runs = " + std::to_string(plan.pipeline_runs) +
                " does not divide a replica group's " + std::to_string(g.micro_batches) +
                " micro-batches (each run takes an equal share of them)",
                "choose pipeline_runs among the divisors of every group's micro-batches");
        return;
      }
      const int depth = static_cast<int>(g.stages.size());
      if (plan.schedule == cost::Schedule::Interleaved && plan.run_micro_batches(g) % depth != 0) {
        r.error(at, t->path + ".pipeline_runs", "pipeline_runs = " + std::to_string(plan.pipeline_runs) + " leaves " +
                std::to_string(plan.run_micro_batches(g)) + " micro-batches a run, and the interleaved schedule needs a "
                "multiple of the pipeline depth (" + std::to_string(depth) + ")",
                "choose pipeline_runs so that a group's micro-batches / pipeline_runs is a multiple of its stages");
        return;
      }
    }
  };
  if (p.schedule != cost::Schedule::Interleaved && p.virtual_stages != 1)
    r.error(r.loc(r.node(*t, "virtual_stages")), t->path + ".virtual_stages",
            "virtual_stages applies to the interleaved schedule only", "set schedule = \"interleaved\"");
  if (p.schedule == cost::Schedule::Interleaved && p.virtual_stages < 2)
    r.error(r.loc(r.node(*t, "virtual_stages")), t->path + ".virtual_stages",
            "the interleaved schedule needs virtual_stages ≥ 2");

  const int L = s.model.layers;
  const int B = s.training.global_batch;
  const auto replicas = r.table_array(*t, "replicas");
  if (!replicas.empty()) {
    // Explicit, possibly heterogeneous replicas.
    for (const char* key : {"tp", "pp", "dp"})
      if (r.node(*t, key))
        r.error(r.loc(r.node(*t, key)), t->path + "." + key,
                std::string(key) + " cannot be combined with [[parallel.replicas]]",
                "give tp per stage inside replicas, or drop replicas for a uniform plan");
    std::vector<std::string> pool_names;
    for (const auto& pool : s.cluster.pools) pool_names.push_back(pool.name);
    long long given_mb = 0;  // count ≤ 2^20 · micro_batches ≤ 2^24 each: beyond an int
    int missing_mb = 0;
    for (const auto& rt : replicas) {
      r.check_keys(rt, {"count", "micro_batches", "stages"});
      plan::ReplicaGroup g;
      // `count` data-parallel replicas, each cp blocks of devices that share its sequences.
      const int count = as_int(r.integer(rt, "count", 1, 1 << 20), 1);
      if (static_cast<long long>(count) * cp > (1 << 20)) {
        r.error(r.loc(r.node(rt, "count")), rt.path + ".count", "count · cp = " + std::to_string(count) + " · " +
                std::to_string(cp) + " blocks of devices, more than the 1,048,576 hetsim plans for",
                "fewer replicas or a smaller cp");
        continue;
      }
      g.replicas = count * cp;
      if (auto mb = r.integer(rt, "micro_batches", 1, 1 << 24)) {
        g.micro_batches = static_cast<int>(*mb);
        given_mb += static_cast<long long>(count) * g.micro_batches;
      } else {
        g.micro_batches = 0;
        missing_mb += count;
      }
      const toml::node* sn = r.node(rt, "stages");
      const toml::array* arr = sn ? sn->as_array() : nullptr;
      if (arr == nullptr || arr->empty()) {
        r.error(r.loc(sn ? sn : rt.table), rt.path + ".stages", "a replica needs a list of stages",
                "stages = [ { pool = \"…\", tp = 8, layers = … }, … ]");
        continue;
      }
      int first = 0;
      for (std::size_t i = 0; i < arr->size(); ++i) {
        const toml::node& el = (*arr)[i];
        const std::string path = rt.path + ".stages[" + std::to_string(i) + "]";
        if (!el.is_table()) {
          r.error(r.loc(&el), path, "a stage must be an inline table", "{ pool = \"…\", tp = 8, layers = … }");
          continue;
        }
        const TableRef st{el.as_table(), path};
        r.check_keys(st, {"pool", "tp", "layers"});
        plan::Stage stage;
        auto pool = r.string(st, "pool");
        if (!pool && s.cluster.pools.size() == 1) pool = s.cluster.pools[0].name;
        if (!pool) { r.missing(st, "pool", "\"<pool name>\""); continue; }
        auto it = std::find(pool_names.begin(), pool_names.end(), *pool);
        if (it == pool_names.end()) {
          r.error(r.loc(r.node(st, "pool") ? r.node(st, "pool") : st.table), path + ".pool",
                  "unknown pool '" + *pool + "'", suggest(*pool, pool_names));
          continue;
        }
        stage.pool = static_cast<int>(it - pool_names.begin());
        stage.tp = as_int(r.integer(st, "tp", 1, 4096), 1);
        stage.layers = as_int(r.integer(st, "layers", 1, 1 << 20), -1);
        if (stage.layers < 0) {
          if (!r.node(st, "layers")) r.missing(st, "layers", "<layers in this stage>");
          continue;
        }
        stage.first_layer = first;
        first += stage.layers;
        g.stages.push_back(stage);
      }
      if (first != L && !r.failed())
        r.error(r.loc(sn), rt.path + ".stages", "the stages cover " + std::to_string(first) +
                " layers but the model has " + std::to_string(L),
                "every layer must belong to exactly one stage of each replica");
      p.groups.push_back(g);
    }
    if (r.failed()) return std::nullopt;
    // Replicas without micro_batches share the rest of the batch evenly.
    const int per_step = B / p.micro_batch;
    if (B % p.micro_batch != 0) {
      r.error(where, t->path + ".micro_batch", "global_batch (" + std::to_string(B) +
              ") is not divisible by micro_batch (" + std::to_string(p.micro_batch) + ")");
      return std::nullopt;
    }
    if (missing_mb > 0) {
      const long long rest = per_step - given_mb;
      if (rest <= 0 || rest % missing_mb != 0) {
        r.error(where, t->path + ".replicas", "cannot split the remaining " + std::to_string(rest) +
                " micro-batches evenly over " + std::to_string(missing_mb) + " replicas",
                "give micro_batches for every replica group");
        return std::nullopt;
      }
      for (auto& g : p.groups)
        if (g.micro_batches == 0) g.micro_batches = static_cast<int>(rest / missing_mb);
    }
    check_ep(p);
    check_runs(p);
    return p;
  }

  // Uniform Megatron-style plan: tp, pp, dp; each pool hosts whole replicas.
  const int tp = as_int(r.integer(*t, "tp", 1, 4096), 1);
  const int pp = as_int(r.integer(*t, "pp", 1, 4096), 1);
  const auto dp_given = r.integer(*t, "dp", 1, 1 << 24);
  if (r.failed()) return std::nullopt;
  const toml::node* tp_node = r.node(*t, "tp") ? r.node(*t, "tp") : t->table;
  if (s.model.heads % tp != 0) {
    r.error(r.loc(tp_node), t->path + ".tp", "tp = " + std::to_string(tp) + " does not divide the model's " +
            std::to_string(s.model.heads) + " attention heads", "choose tp among the divisors of heads");
    return std::nullopt;
  }
  // Context parallelism: each data-parallel replica is cp blocks of tp·pp devices.
  const long long tpc = static_cast<long long>(tp) * pp * cp;
  const std::string tpc_name = cp > 1 ? "tp·cp·pp" : "tp·pp";
  int dp = 0;
  std::vector<int> per_pool;
  for (const auto& pool : s.cluster.pools) {
    const int n = pool.devices();
    if (n % tpc != 0 && !dp_given) {
      r.error(r.loc(tp_node), t->path + ".tp", "pool '" + pool.name + "' has " + std::to_string(n) +
              " devices, not a multiple of " + tpc_name + " = " + std::to_string(tpc),
              "choose tp and pp whose product divides every pool, give dp, or use [[parallel.replicas]]");
      return std::nullopt;
    }
    per_pool.push_back(static_cast<int>(n / tpc));
    dp += static_cast<int>(n / tpc);
  }
  if (dp_given) {
    const int want = static_cast<int>(*dp_given);
    const int devices = s.cluster.devices();
    if (tpc * want != devices) {
      r.error(r.loc(r.node(*t, "dp")), t->path + ".dp",
              tpc_name + "·dp = " + std::to_string(tp) + (cp > 1 ? "·" + std::to_string(cp) : std::string()) + "·" +
                  std::to_string(pp) + "·" + std::to_string(want) +
                  " = " + std::to_string(tpc * want) + " does not match the cluster's " +
                  std::to_string(devices) + " devices",
              devices == 0       ? std::string("the cluster has no devices: give its pools nodes")
              : devices % tpc == 0 ? "dp = " + std::to_string(devices / tpc) + " would use every device"
                                   : tpc_name + " must divide the device count");
      return std::nullopt;
    }
    if (dp != want) {  // some pool not a multiple of tp·pp
      r.error(r.loc(r.node(*t, "dp")), t->path + ".dp", "the pools cannot be cut into whole replicas of " + tpc_name + " devices",
              "use [[parallel.replicas]] to place stages across pools");
      return std::nullopt;
    }
  }
  if (dp == 0) {
    r.error(where, t->path, "the cluster has no devices for tp·pp = " + std::to_string(tp * pp));
    return std::nullopt;
  }
  if (L % pp != 0) {
    r.error(r.loc(r.node(*t, "pp") ? r.node(*t, "pp") : t->table), t->path + ".pp",
            "pp = " + std::to_string(pp) + " does not divide the model's " + std::to_string(L) + " layers",
            "choose pp dividing " + std::to_string(L) + ", or give uneven stages with [[parallel.replicas]]");
    return std::nullopt;
  }
  const long long per_round = static_cast<long long>(p.micro_batch) * dp;  // up to 2^20 · 2^24
  if (B % per_round != 0) {
    r.error(r.loc(r.node(*t, "micro_batch") ? r.node(*t, "micro_batch") : t->table), t->path + ".micro_batch",
            "global_batch (" + std::to_string(B) + ") is not divisible into micro-batches of " +
                std::to_string(p.micro_batch) + " over dp = " + std::to_string(dp) + " replicas",
            "global_batch must be a multiple of micro_batch·dp = " + std::to_string(per_round));
    return std::nullopt;
  }
  const int mb = static_cast<int>(B / per_round);
  for (std::size_t pi = 0; pi < s.cluster.pools.size(); ++pi) {
    if (per_pool[pi] == 0) continue;
    plan::ReplicaGroup g;
    g.replicas = per_pool[pi] * cp;
    g.micro_batches = mb;
    for (int k = 0; k < pp; ++k)
      g.stages.push_back({static_cast<int>(pi), tp, k * (L / pp), L / pp});
    p.groups.push_back(g);
  }
  check_ep(p);
  check_runs(p);
  return p;
}

}  // namespace detail

Diagnostics validate_plan(const Scenario& s, const plan::Plan& p, SourceLoc where) {
  Diagnostics d;
  auto err = [&](std::string key, std::string msg, std::string hint = {}) {
    d.push_back({where, std::move(key), std::move(msg), std::move(hint)});
  };
  const auto& m = s.model;
  if (p.pipeline_runs < 1) {
    err("parallel.pipeline_runs", "pipeline_runs must be at least 1");
    return d;
  }
  std::vector<long long> used(s.cluster.pools.size(), 0);
  bool runs_told = false;  // one message for pipeline_runs, not one per group
  for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
    const auto& g = p.groups[gi];
    const std::string gpath = "parallel.replicas[" + std::to_string(gi) + "]";
    int covered = 0;
    for (std::size_t si = 0; si < g.stages.size(); ++si) {
      const auto& st = g.stages[si];
      const std::string spath = gpath + ".stages[" + std::to_string(si) + "]";
      const auto& pool = s.cluster.pools[st.pool];
      used[st.pool] += static_cast<long long>(g.replicas) * st.tp;
      if (m.heads % st.tp != 0)
        err(spath + ".tp", "tp = " + std::to_string(st.tp) + " does not divide the model's " +
            std::to_string(m.heads) + " attention heads", "choose tp among the divisors of heads");
      else if (m.kv_heads % st.tp != 0 && st.tp % m.kv_heads != 0)
        err(spath + ".tp", "tp = " + std::to_string(st.tp) + " and kv_heads = " +
            std::to_string(m.kv_heads) + ": neither divides the other");
      if (m.ffn_hidden % st.tp != 0)
        err(spath + ".tp", "tp = " + std::to_string(st.tp) + " does not divide ffn_hidden = " +
            std::to_string(m.ffn_hidden));
      if (st.tp > pool.devices_per_node || pool.devices_per_node % st.tp != 0)
        err(spath + ".tp", "tp = " + std::to_string(st.tp) + " does not fit inside a node of pool '" +
            pool.name + "' (" + std::to_string(pool.devices_per_node) + " devices per node)",
            "tensor parallelism must stay on the intra-node fabric: tp must divide devices_per_node");
      // Traffic that leaves a node needs NICs: a pipeline send to another pool, or a stage whose
      // replicas (its DP group) spread over several nodes.
      if (pool.nics_per_node == 0) {
        const bool to_other_pool = si + 1 < g.stages.size() && g.stages[si + 1].pool != st.pool;
        const bool from_other_pool = si > 0 && g.stages[si - 1].pool != st.pool;
        const bool dp_across_nodes = g.replicas * st.tp > pool.devices_per_node;
        if (to_other_pool || from_other_pool || dp_across_nodes || p.groups.size() > 1)
          err(spath + ".pool", "pool '" + pool.name + "' has no NICs (nics_per_node = 0), but this stage's " +
                                   std::string(dp_across_nodes ? "replicas span several nodes"
                                                               : "traffic leaves its node (another pool or replica group)"),
              "give the pool NICs (nics_per_node, nic) or keep the stage's traffic inside one node");
      }
      if (p.schedule == cost::Schedule::Interleaved && st.layers < p.virtual_stages)
        err(spath + ".layers", "stage of " + std::to_string(st.layers) +
            " layers cannot be cut into virtual_stages = " + std::to_string(p.virtual_stages) + " chunks of a layer or more",
            "fewer virtual_stages, or more layers on this stage");
      if (!pool.device.peak_for(s.training.precision))
        err("training.precision", "device '" + pool.device.name + "' (pool '" + pool.name +
            "') has no " + std::string(hw::dtype_name(s.training.precision)) + " support",
            pool.device.peak_for(hw::Dtype::Fp16) && !pool.device.peak_for(hw::Dtype::Bf16)
                ? "use precision = \"fp16\"" : "use precision = \"bf16\"");
      if (st.first_layer != covered)
        err(spath, "stages must cover consecutive layers");
      covered = st.first_layer + st.layers;
    }
    if (covered != m.layers)
      err(gpath + ".stages", "stages cover " + std::to_string(covered) + " of " +
          std::to_string(m.layers) + " layers");
    if (g.micro_batches % p.pipeline_runs != 0) {
      if (!runs_told)
        err("parallel.pipeline_runs", "pipeline_runs = " + std::to_string(p.pipeline_runs) +
            " does not divide a replica group's " + std::to_string(g.micro_batches) + " micro-batches (each run " +
            "takes an equal share of them)", "choose pipeline_runs among the divisors of every group's micro-batches");
      runs_told = true;
    } else if (p.schedule == cost::Schedule::Interleaved &&
               p.run_micro_batches(g) % static_cast<int>(g.stages.size()) != 0)
      err(p.pipeline_runs > 1 ? "parallel.pipeline_runs" : gpath + ".micro_batches",
          "the interleaved schedule needs micro-batches" +
          std::string(p.pipeline_runs > 1 ? " per pipeline run (" : " (") + std::to_string(p.run_micro_batches(g)) +
          ") to be a multiple of the pipeline depth (" + std::to_string(g.stages.size()) + ")");
  }
  for (std::size_t pi = 0; pi < used.size(); ++pi)
    if (used[pi] > s.cluster.pools[pi].devices())
      err("parallel.replicas", "the plan needs " + std::to_string(used[pi]) + " devices of pool '" +
          s.cluster.pools[pi].name + "' but it has " + std::to_string(s.cluster.pools[pi].devices()),
          "add nodes to the pool or use fewer replicas");
  // (Summed in double: count · micro_batches · micro_batch can pass 2^64, where an integer sum
  // wraps, possibly onto global_batch.)
  double sequences = 0;
  for (const auto& g : p.groups) sequences += static_cast<double>(g.replicas) * g.micro_batches * p.micro_batch;
  sequences /= std::max(1, p.cp);
  if (sequences != static_cast<double>(s.training.global_batch))
    err("parallel.replicas", "the replicas process " + fmt::format("{:.0f}", sequences) +
        " sequences per step but global_batch is " + std::to_string(s.training.global_batch),
        "Σ count · micro_batches · micro_batch must equal global_batch");
  if (p.devices() == 0) err("parallel", "the plan uses no devices");
  if (p.schedule != cost::Schedule::Interleaved && p.virtual_stages != 1)
    err("parallel.virtual_stages", "virtual_stages applies to the interleaved schedule only",
        "set schedule = \"interleaved\"");
  if (p.schedule == cost::Schedule::Interleaved && p.virtual_stages < 2)
    err("parallel.virtual_stages", "the interleaved schedule needs virtual_stages ≥ 2");
  if (p.recompute == cost::Recompute::SelectiveOp && m.moe())
    err("parallel.recompute", kSelectiveOpDenseOnly, kSelectiveOpHint);
  for (const auto& msg : recompute_module_problems(m, p)) err("parallel.recompute_modules", msg, kModulesHint);
  if (!m.moe())
    for (const auto& [key, set] : {std::pair{"overlap_ep_comm", p.overlap_ep_comm},
                                   std::pair{"ep_dispatch", p.ep_dispatch != plan::Plan::EpDispatch::AllToAll},
                                   std::pair{"fp8_dispatch", p.fp8_dispatch}, std::pair{"expert_tp", p.expert_tp > 0}})
      if (set) err(std::string("parallel.") + key, dense_model_message(key, m.experts), dense_model_hint(key));
  if (p.ep > 1) {
    // Expert parallelism: the EP ranks of a stage are ep of its data-parallel replicas.
    if (!m.moe())
      err("parallel.ep", "ep = " + std::to_string(p.ep) + " needs a mixture-of-experts model, and this one has experts = " +
          std::to_string(m.experts), "remove ep, or set [model] experts (> 1) and top_k");
    else if (m.experts % p.ep != 0)
      err("parallel.ep", "ep = " + std::to_string(p.ep) + " does not divide the model's " + std::to_string(m.experts) +
          " experts", "choose ep among the divisors of experts");
    for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
      const auto& g = p.groups[gi];
      bool told = false;
      for (const auto& st : g.stages) {
        const int et = p.expert_tp_of(st.tp);
        if (told || st.tp % et != 0 || (st.tp * g.replicas) % (p.ep * et) == 0) continue;
        told = true;
        if (et == st.tp)
          err("parallel.replicas[" + std::to_string(gi) + "].count",
              "ep = " + std::to_string(p.ep) + " does not divide this group's " + std::to_string(g.replicas) +
              " replicas (expert-parallel ranks are drawn from a stage's data-parallel replicas)",
              "choose ep among the divisors of every group's replica count (dp), or fold tensor parallelism into it "
              "with expert_tp < tp");
        else
          err("parallel.ep", "ep · expert_tp = " + std::to_string(p.ep) + " · " + std::to_string(et) +
              " does not divide a stage's tp · replicas = " + std::to_string(st.tp) + " · " + std::to_string(g.replicas),
              "choose ep and expert_tp whose product divides tp · dp");
      }
    }
  }
  if (p.expert_tp > 0) {
    int bad_tp = 0;
    for (const auto& g : p.groups)
      for (const auto& st : g.stages)
        if (bad_tp == 0 && st.tp % p.expert_tp != 0) bad_tp = st.tp;
    if (bad_tp > 0)
      err("parallel.expert_tp", "expert_tp = " + std::to_string(p.expert_tp) + " does not divide a stage's tp = " +
          std::to_string(bad_tp), "choose expert_tp among the divisors of every stage's tp");
    if (p.folds_experts() && !p.sequence_parallel)
      err("parallel.expert_tp", "expert_tp below tp folds the TP ranks into expert parallelism, which needs sequence "
          "parallelism (each TP rank dispatches its own sequence shard)", "set sequence_parallel = true, or expert_tp = tp");
  }
  for (const std::string& problem : context_parallel_problems(s, p)) err("parallel.cp", problem, kCpHint);
  return d;
}

}  // namespace hetsim::io

#include "sim/io/detail/scenario_sections.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "models/base/nearest.hpp"
#include "sim/io/input_file.hpp"

namespace hetsim::io {
namespace {

using detail::TableRef;
using detail::TomlReader;

// ---------------------------------------------------------------------------------- [model]
// A measured routing histogram: numbers separated by blanks, commas or newlines, `#` to the end
// of a line a comment. Bad entries are reported where they stand in that file.
std::optional<std::vector<double>> read_histogram_file(TomlReader& r, const TableRef& t, const std::string& name) {
  const std::filesystem::path path = (std::filesystem::path(r.file()).parent_path() / name).lexically_normal();
  const std::string key = r.key_path(t, "routing_histogram");
  auto text = read_input_file(path, "routing histogram", "one token count (or share) per expert, in expert order");
  if (!text) {
    const Diagnostic& e = text.errors().front();
    r.error(r.loc(r.node(t, "routing_histogram")), key, e.message + " '" + path.string() + "'", e.hint);
    return std::nullopt;
  }
  std::vector<double> out;
  std::istringstream lines(*text);
  std::string line;
  for (std::uint32_t n = 1; std::getline(lines, line); ++n) {
    line = line.substr(0, line.find('#'));
    std::replace(line.begin(), line.end(), ',', ' ');
    for (std::size_t at = line.find_first_not_of(" \t\r"); at != std::string::npos;
         at = line.find_first_not_of(" \t\r", at)) {
      const std::size_t stop = std::min(line.size(), line.find_first_of(" \t\r", at));
      const std::string w = line.substr(at, stop - at);
      const SourceLoc where{path.string(), n, static_cast<std::uint32_t>(at + 1)};
      at = stop;
      char* end = nullptr;
      const double v = std::strtod(w.c_str(), &end);
      if (end != w.c_str() + w.size() || !std::isfinite(v)) {
        r.error(where, key, "'" + w + "' is not a number", "one token count (or share) per expert, in expert order");
        return std::nullopt;
      }
      if (v < 0) {
        r.error(where, key, "negative token count " + w + " for expert " + std::to_string(out.size()),
                "counts are tokens routed to each expert, 0 or more");
        return std::nullopt;
      }
      out.push_back(v);
    }
  }
  return out;
}

// [model] routing_skew or routing_histogram (MoE): the per-expert token shares of a step,
// normalised to sum 1 (docs/cost-models.md#routing-imbalance).
void read_routing(TomlReader& r, const TableRef& t, workload::ModelSpec& m) {
  const toml::node* skew = r.node(t, "routing_skew");
  const toml::node* hist = r.node(t, "routing_histogram");
  if (!skew && !hist) return;
  const std::string key = r.key_path(t, hist ? "routing_histogram" : "routing_skew");
  const SourceLoc at = r.loc(hist ? hist : skew);
  if (!m.moe()) {
    r.error(at, key, "routing imbalance belongs to a mixture of experts, and this model has experts = " + std::to_string(m.experts),
            "set experts (> 1) and top_k, or remove " + std::string(hist ? "routing_histogram" : "routing_skew"));
    return;
  }
  if (skew && hist) {
    r.error(at, key, "routing_skew and routing_histogram are both set", "keep one: a Zipf skew or a measured histogram");
    return;
  }
  if (skew) {
    if (auto v = r.number(t, "routing_skew", 0.0, 16.0)) m.expert_load = workload::zipf_load(m.experts, *v);
    return;
  }
  std::vector<double> load;
  if (hist->is_string()) {
    auto f = read_histogram_file(r, t, hist->as_string()->get());
    if (!f) return;
    load = std::move(*f);
  } else if (const toml::array* a = hist->as_array()) {
    for (const toml::node& el : *a) {
      const double v = el.is_integer() ? static_cast<double>(el.as_integer()->get())
                       : el.is_floating_point() ? el.as_floating_point()->get() : -1.0;
      if (!(el.is_integer() || el.is_floating_point()) || !std::isfinite(v)) {
        r.error(r.loc(&el), key, "expected a number, got " + detail::type_name(el), "one token count (or share) per expert");
        return;
      }
      if (v < 0) {
        r.error(r.loc(&el), key, "negative token count for expert " + std::to_string(load.size()),
                "counts are tokens routed to each expert, 0 or more");
        return;
      }
      load.push_back(v);
    }
  } else {
    r.error(at, key, "expected a file name or an array of numbers, got " + detail::type_name(*hist),
            "routing_histogram = \"experts.txt\" (relative to this file) or [n0, n1, …]");
    return;
  }
  if (load.size() != static_cast<std::size_t>(m.experts)) {
    r.error(at, key, "the histogram has " + std::to_string(load.size()) + " entries and the model " +
            std::to_string(m.experts) + " experts", "one token count per expert, in expert order");
    return;
  }
  const double sum = std::accumulate(load.begin(), load.end(), 0.0);
  if (!(sum > 0)) {
    r.error(at, key, "every entry of the histogram is 0", "counts are tokens routed to each expert; at least one above 0");
    return;
  }
  for (double& x : load) x /= sum;
  m.expert_load = std::move(load);
}

// What each expert-only key does, for the error a dense model gets (said where [training] or
// [parallel] reads the key and where a plan file is validated).
std::string_view expert_key_purpose(std::string_view key) {
  if (key == "overlap_ep_comm") return "overlaps expert-parallel all-to-alls";
  if (key == "ep_dispatch") return "says how tokens reach their experts";
  if (key == "fp8_dispatch") return "sends the tokens to their experts in fp8";
  if (key == "expert_kernel") return "says how a mixture-of-experts model's experts run their GEMMs";
  return "splits the routed experts over tensor-parallel ranks";  // expert_tp
}

}  // namespace

namespace detail {

void read_model(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "model");
  if (!t) {
    if (!r.node(root, "model")) r.missing(root, "model", "{ preset = \"llama3-8b\" } (as a [model] table)");
    return;
  }
  r.check_keys(*t, {"preset", "name", "layers", "hidden", "heads", "kv_heads", "ffn_hidden",
                    "vocab", "experts", "top_k", "capacity_factor", "shared_experts", "shared_ffn_hidden",
                    "head_dim", "qk_norm", "activation", "norm", "positions", "max_positions",
                    "tied_embeddings", "linear_bias", "dropout", "dropless", "routing_skew", "routing_histogram", "first_dense_layers",
                    "moe_layer_freq", "dense_ffn_hidden", "q_lora_rank", "kv_lora_rank", "qk_rope_dim", "v_head_dim",
                    "expert_groups", "expert_group_topk"});
  workload::ModelSpec& m = s.model;
  bool from_preset = false;
  if (auto p = r.string(*t, "preset")) {
    if (auto spec = workload::preset(*p)) {
      m = *spec;
      from_preset = true;
    } else {
      r.error(r.loc(r.node(*t, "preset")), t->path + ".preset", "unknown model preset '" + *p + "'",
              suggest(*p, workload::preset_names()));
      return;
    }
  }
  m.name = r.string(*t, "name").value_or(m.name.empty() ? "custom" : m.name);
  const std::int64_t big = 1 << 24;
  // The shape's required keys (without a preset) say so; the others keep their defaults.
  auto set = [&](const char* key, int& field, std::int64_t lo, bool required = false) {
    if (auto v = r.integer(*t, key, lo, big)) field = static_cast<int>(*v);
    else if (required && !from_preset && !r.node(*t, key))
      r.missing(*t, key, "<integer>  (or preset = \"…\")");
  };
  set("layers", m.layers, 1, true);
  set("hidden", m.hidden, 1, true);
  set("heads", m.heads, 1, true);
  set("ffn_hidden", m.ffn_hidden, 1, true);
  set("vocab", m.vocab, 1, true);
  if (!from_preset) m.kv_heads = m.heads;
  set("kv_heads", m.kv_heads, 1);
  set("experts", m.experts, 1);
  set("top_k", m.top_k, 1);
  set("max_positions", m.max_positions, 0);
  set("shared_experts", m.shared_experts, 0);
  set("shared_ffn_hidden", m.shared_ffn_hidden, 1);
  set("head_dim", m.explicit_head_dim, 1);
  set("first_dense_layers", m.first_dense_layers, 0);
  set("moe_layer_freq", m.moe_layer_freq, 1);
  set("dense_ffn_hidden", m.dense_ffn_hidden, 1);
  // A preset's group-limited routing is for its own experts: another expert count drops it
  // unless the file sets the groups again (0 turns the limit off).
  if (from_preset && (r.node(*t, "experts") || r.node(*t, "top_k")) && !r.node(*t, "expert_groups") &&
      !r.node(*t, "expert_group_topk"))
    m.expert_groups = m.expert_group_topk = 0;
  set("expert_groups", m.expert_groups, 0);
  set("expert_group_topk", m.expert_group_topk, 0);
  set("q_lora_rank", m.q_lora_rank, 0);
  set("kv_lora_rank", m.kv_lora_rank, 0);
  set("qk_rope_dim", m.qk_rope_dim, 0);
  set("v_head_dim", m.v_head_dim, 0);
  m.qk_norm = r.boolean(*t, "qk_norm").value_or(m.qk_norm);
  m.capacity_factor = r.number(*t, "capacity_factor", 0.01, 64.0).value_or(m.capacity_factor);
  // A capacity factor drops the tokens above it unless dropless = true says otherwise
  // (Megatron-Core: --moe-expert-capacity-factor turns token dropping on).
  m.dropless = r.boolean(*t, "dropless").value_or(r.node(*t, "capacity_factor") ? false : m.dropless);
  if (auto a = pick<workload::Activation>(r, *t, "activation",
                                          {{"gelu", workload::Activation::Gelu},
                                           {"swiglu", workload::Activation::SwiGlu}}))
    m.activation = *a;
  if (auto n = pick<workload::Norm>(r, *t, "norm", {{"layernorm", workload::Norm::LayerNorm},
                                                    {"rmsnorm", workload::Norm::RmsNorm}}))
    m.norm = *n;
  if (auto p = pick<workload::Positions>(r, *t, "positions",
                                         {{"learned", workload::Positions::Learned},
                                          {"rope", workload::Positions::Rope}}))
    m.positions = *p;
  m.tied_embeddings = r.boolean(*t, "tied_embeddings").value_or(m.tied_embeddings);
  m.linear_bias = r.boolean(*t, "linear_bias").value_or(m.linear_bias);
  m.dropout = r.boolean(*t, "dropout").value_or(m.dropout);

  if (r.failed()) return;
  const SourceLoc here = r.loc(t->table);
  if (m.explicit_head_dim == 0 && m.hidden % m.heads != 0)
    r.error(here, t->path + ".heads", "hidden (" + std::to_string(m.hidden) +
            ") is not divisible by heads (" + std::to_string(m.heads) + ")",
            "or set head_dim (the width of one head) where the heads together are not the hidden size");
  auto at = [&](const char* key) { return r.node(*t, key) ? r.loc(r.node(*t, key)) : here; };
  if (m.shared_experts > 0 && !m.moe())
    r.error(at("shared_experts"), t->path + ".shared_experts",
            "shared experts belong to a mixture of experts, and this model has experts = " + std::to_string(m.experts),
            "set experts (> 1) and top_k, or remove shared_experts");
  if (m.shared_ffn_hidden > 0 && m.shared_experts == 0)
    r.error(at("shared_ffn_hidden"), t->path + ".shared_ffn_hidden",
            "shared_ffn_hidden is set but shared_experts is 0", "set shared_experts = <count>");
  if (m.heads % m.kv_heads != 0)
    r.error(here, t->path + ".kv_heads", "heads (" + std::to_string(m.heads) +
            ") is not a multiple of kv_heads (" + std::to_string(m.kv_heads) + ")");
  if (m.top_k > m.experts)
    r.error(at(r.node(*t, "top_k") ? "top_k" : "experts"), t->path + ".top_k", "top_k (" + std::to_string(m.top_k) +
            ") exceeds experts (" + std::to_string(m.experts) + ")", "a token is routed to at most every expert: top_k <= experts");
  if (m.positions == workload::Positions::Learned && m.max_positions == 0)
    r.error(here, t->path + ".max_positions", "learned positions need max_positions",
            "add max_positions = <sequence length>");
  if (m.expert_groups > 0 || m.expert_group_topk > 0) {
    // Group-limited routing: both keys, groups dividing the experts, enough experts in the
    // groups a token may use.
    const char* key = r.node(*t, "expert_groups") ? "expert_groups" : "expert_group_topk";
    if (!m.moe())
      r.error(at(key), t->path + "." + key, std::string(key) + " limits a mixture of experts' routing, and this model has experts = " +
              std::to_string(m.experts), "set experts (> 1) and top_k, or remove " + std::string(key));
    else if (m.expert_groups == 0 || m.expert_group_topk == 0)
      r.error(at(key), t->path + "." + key, "group-limited routing needs both expert_groups and expert_group_topk",
              "set expert_groups = <groups of experts> and expert_group_topk = <groups a token may use>");
    else if (m.experts % m.expert_groups != 0)
      r.error(at("expert_groups"), t->path + ".expert_groups", "expert_groups (" + std::to_string(m.expert_groups) +
              ") does not divide the " + std::to_string(m.experts) + " experts", "choose expert_groups among the divisors of experts");
    else if (m.expert_group_topk > m.expert_groups)
      r.error(at("expert_group_topk"), t->path + ".expert_group_topk", "expert_group_topk (" +
              std::to_string(m.expert_group_topk) + ") exceeds expert_groups (" + std::to_string(m.expert_groups) + ")",
              "a token uses at most every group: expert_group_topk <= expert_groups");
    else if (m.expert_group_topk * (m.experts / m.expert_groups) < m.top_k)
      r.error(at("expert_group_topk"), t->path + ".expert_group_topk", "expert_group_topk (" +
              std::to_string(m.expert_group_topk) + ") groups of " + std::to_string(m.experts / m.expert_groups) +
              " experts hold fewer than top_k (" + std::to_string(m.top_k) + ")",
              "more groups per token, or fewer, larger groups");
  }
  for (const char* key : {"first_dense_layers", "moe_layer_freq", "dense_ffn_hidden"})
    if (r.node(*t, key) && !m.moe())
      r.error(at(key), t->path + "." + key, std::string(key) + " lays out a mixture of experts, and this model has experts = " +
              std::to_string(m.experts), "set experts (> 1) and top_k, or remove " + std::string(key));
  if (m.moe() && m.moe_layers(0, m.layers) == 0)
    r.error(at(r.node(*t, "first_dense_layers") ? "first_dense_layers" : "moe_layer_freq"), t->path + ".first_dense_layers",
            "no layer of the " + std::to_string(m.layers) + " is a MoE layer (first_dense_layers = " +
            std::to_string(m.first_dense_layers) + ", moe_layer_freq = " + std::to_string(m.moe_layer_freq) + ")",
            "first_dense_layers below layers; layer i is MoE when i >= first_dense_layers and moe_layer_freq divides i");
  if (m.mla() && (m.v_head_dim == 0 || m.qk_rope_dim >= m.head_dim()))
    r.error(at("kv_lora_rank"), t->path + ".kv_lora_rank",
            "multi-head latent attention needs v_head_dim > 0 and qk_rope_dim below the head dimension (" +
            std::to_string(m.head_dim()) + ")", "set head_dim = qk_nope + qk_rope, qk_rope_dim and v_head_dim");
  if (!m.mla())
    for (const char* key : {"q_lora_rank", "qk_rope_dim", "v_head_dim"})
      if (r.node(*t, key))
        r.error(at(key), t->path + "." + key, std::string(key) + " belongs to multi-head latent attention, and kv_lora_rank is 0",
                "set kv_lora_rank (> 0), or remove " + std::string(key));
  if (m.dropless && m.capacity_factor > 0 && m.capacity_factor < 1.0)
    r.error(at("capacity_factor"), t->path + ".capacity_factor",
            "capacity_factor below 1 with dropless routing (every token is kept, so no expert buffer is smaller than the mean)",
            "set dropless = false to drop the tokens above capacity, or capacity_factor >= 1");
  if (!r.failed()) read_routing(r, *t, m);
}

std::string dense_model_message(std::string_view key, int experts) {
  return std::string(key) + " " + std::string(expert_key_purpose(key)) +
         ", and this model has no experts (experts = " + std::to_string(experts) + ")";
}
std::string dense_model_hint(std::string_view key) {
  return "remove " + std::string(key) + ", or set [model] experts (> 1) and top_k";
}
void refuse_on_dense(TomlReader& r, const TableRef& t, const Scenario& s, const char* key) {
  r.error(r.loc(r.node(t, key)), t.path + "." + key, dense_model_message(key, s.model.experts), dense_model_hint(key));
}

// ------------------------------------------------------------------------------- [training]
void read_training(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "training");
  if (!t) {
    if (!r.node(root, "training")) r.missing(root, "training", "{ global_batch = …, seq_len = … } (as a [training] table)");
    return;
  }
  r.check_keys(*t, {"global_batch", "seq_len", "precision", "optimizer", "tokens",
                    "flash_attention", "causal", "fused_kernels", "attention_kernel", "norm_kernel",
                    "loss_kernel", "zero3_copy_out", "pipeline_scatter_gather", "grad_reduce_dtype",
                    "autocast", "fp8_scaling", "expert_kernel", "sp_gather", "grad_accumulation"});
  workload::TrainingSpec& tr = s.training;
  if (auto v = r.integer(*t, "global_batch", 1, 1 << 30)) tr.global_batch = static_cast<int>(*v);
  else if (!r.node(*t, "global_batch")) r.missing(*t, "global_batch", "<sequences per step>");
  if (auto v = r.integer(*t, "seq_len", 1, 1 << 24)) tr.seq_len = static_cast<int>(*v);
  else if (!r.node(*t, "seq_len")) r.missing(*t, "seq_len", "<tokens per sequence>");
  if (auto p = pick<hw::Dtype>(r, *t, "precision", {{"fp32", hw::Dtype::Fp32},
                                                    {"bf16", hw::Dtype::Bf16},
                                                    {"fp16", hw::Dtype::Fp16},
                                                    {"fp8", hw::Dtype::Fp8}}))
    tr.precision = *p;
  if (auto o = pick<workload::Optimizer>(r, *t, "optimizer", {{"adam", workload::Optimizer::Adam},
                                                              {"sgd", workload::Optimizer::Sgd}}))
    tr.optimizer = *o;
  tr.tokens = r.number(*t, "tokens", 0, 1e18).value_or(0);
  tr.flash_attention = r.boolean(*t, "flash_attention").value_or(tr.flash_attention);
  tr.causal = r.boolean(*t, "causal").value_or(tr.causal);
  tr.fused_kernels = r.boolean(*t, "fused_kernels").value_or(tr.fused_kernels);
  tr.zero3_copy_out = r.boolean(*t, "zero3_copy_out").value_or(tr.zero3_copy_out);
  tr.pipeline_scatter_gather = r.boolean(*t, "pipeline_scatter_gather").value_or(tr.pipeline_scatter_gather);
  if (auto d = pick<double>(r, *t, "grad_reduce_dtype", {{"fp32", 4.0}, {"bf16", 2.0}})) tr.grad_reduce_bytes = *d;
  if (auto k = pick<workload::AttentionKernel>(r, *t, "attention_kernel",
                                               {{"auto", workload::AttentionKernel::Auto},
                                                {"vendor", workload::AttentionKernel::Vendor},
                                                {"fa2", workload::AttentionKernel::Fa2},
                                                {"triton", workload::AttentionKernel::Triton}}))
    tr.attention_kernel = *k;
  if (auto k = pick<workload::NormKernel>(r, *t, "norm_kernel",
                                          {{"auto", workload::NormKernel::Auto},
                                           {"fused", workload::NormKernel::Fused},
                                           {"native", workload::NormKernel::Native},
                                           {"eager", workload::NormKernel::Eager}}))
    tr.norm_kernel = *k;
  if (auto k = pick<workload::LossKernel>(r, *t, "loss_kernel",
                                          {{"fp32", workload::LossKernel::Fp32},
                                           {"fused", workload::LossKernel::Fused}}))
    tr.loss_kernel = *k;
  if (auto g = pick<workload::TrainingSpec::SpGather>(r, *t, "sp_gather",
                                                      {{"module", workload::TrainingSpec::SpGather::Module},
                                                       {"framework", workload::TrainingSpec::SpGather::Framework}}))
    tr.sp_gather = *g;
  if (auto k = pick<workload::ExpertKernel>(r, *t, "expert_kernel",
                                            {{"auto", workload::ExpertKernel::Auto},
                                             {"grouped", workload::ExpertKernel::Grouped},
                                             {"loop", workload::ExpertKernel::Loop}}))
    tr.expert_kernel = *k;
  if (r.node(*t, "expert_kernel") && !s.model.moe()) refuse_on_dense(r, *t, s, "expert_kernel");
  if (auto k = pick<workload::Fp8Scaling>(r, *t, "fp8_scaling",
                                          {{"delayed", workload::Fp8Scaling::Delayed},
                                           {"current", workload::Fp8Scaling::Current}})) {
    tr.fp8_scaling = *k;
    if (tr.precision != hw::Dtype::Fp8)
      r.error(r.loc(r.node(*t, "fp8_scaling")), r.key_path(*t, "fp8_scaling"),
              "fp8_scaling says how fp8 tensors are scaled: it needs precision \"fp8\"",
              "set precision = \"fp8\", or remove fp8_scaling");
  }
  if (auto a = r.boolean(*t, "autocast")) {
    tr.autocast = *a;
    if (*a && tr.precision != hw::Dtype::Bf16 && tr.precision != hw::Dtype::Fp16)
      r.error(r.loc(r.node(*t, "autocast")), r.key_path(*t, "autocast"),
              "autocast casts fp32 parameters to 16 bits: it needs precision \"bf16\" or \"fp16\"",
              "set precision = \"bf16\", or remove autocast");
  }
  if (auto g = pick<workload::GradAccumulation>(r, *t, "grad_accumulation",
                                                {{"fused", workload::GradAccumulation::Fused},
                                                 {"add", workload::GradAccumulation::Add},
                                                 {"cast_add", workload::GradAccumulation::CastAdd},
                                                 {"add16", workload::GradAccumulation::Add16}})) {
    tr.grad_accumulation = *g;
    // Only 16-bit parameters have a 16-bit gradient to add into an fp32 accumulator: fp32
    // training has none, and autocast's fp32 parameters take theirs through autocast's casts.
    if (*g != workload::GradAccumulation::Fused && (tr.precision == hw::Dtype::Fp32 || tr.autocast))
      r.error(r.loc(r.node(*t, "grad_accumulation")), r.key_path(*t, "grad_accumulation"),
              tr.autocast ? "grad_accumulation adds 16-bit weight gradients into an accumulator; under autocast the "
                            "parameters and their gradients are fp32 already"
                          : "grad_accumulation adds 16-bit weight gradients into an accumulator; precision \"fp32\" has "
                            "no 16-bit gradients",
              "remove grad_accumulation (or set it to \"fused\")");
  }
}

}  // namespace detail
}  // namespace hetsim::io

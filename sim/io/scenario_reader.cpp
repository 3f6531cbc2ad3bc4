#include "sim/io/scenario_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "models/base/nearest.hpp"
#include "sim/io/detail/hw_tables.hpp"
#include "sim/io/detail/scenario_document.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/detail/toml_reader.hpp"
#include "sim/io/detail/variability_reader.hpp"
#include "sim/io/input_file.hpp"

namespace hetsim::io {
namespace {

using detail::TableRef;
using detail::TomlReader;

template <class E>
std::optional<E> pick(TomlReader& r, const TableRef& t, const char* key,
                      std::initializer_list<std::pair<const char*, E>> options) {
  std::vector<std::string> names;
  for (const auto& [n, v] : options) names.emplace_back(n);
  auto s = r.choice(t, key, names);
  if (!s) return std::nullopt;
  for (const auto& [n, v] : options)
    if (*s == n) return v;
  return std::nullopt;
}

int as_int(std::optional<std::int64_t> v, int fallback) {
  return v ? static_cast<int>(*v) : fallback;
}

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

// What each expert-only key does, for the error a dense model gets (said where [training] or
// [parallel] reads the key and where a plan file is validated).
std::string_view expert_key_purpose(std::string_view key) {
  if (key == "overlap_ep_comm") return "overlaps expert-parallel all-to-alls";
  if (key == "ep_dispatch") return "says how tokens reach their experts";
  if (key == "fp8_dispatch") return "sends the tokens to their experts in fp8";
  if (key == "expert_kernel") return "says how a mixture-of-experts model's experts run their GEMMs";
  return "splits the routed experts over tensor-parallel ranks";  // expert_tp
}
std::string dense_model_message(std::string_view key, int experts) {
  return std::string(key) + " " + std::string(expert_key_purpose(key)) +
         ", and this model has no experts (experts = " + std::to_string(experts) + ")";
}
std::string dense_model_hint(std::string_view key) {
  return "remove " + std::string(key) + ", or set [model] experts (> 1) and top_k";
}
// The reader's error for an expert-only key set on a dense model.
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

// -------------------------------------------------------------------------------- [cluster]
const hw::LinkSpec* link_or_error(TomlReader& r, const TableRef& t, const char* key,
                                  const hw::Catalog& cat) {
  auto name = r.string(t, key);
  if (!name) return nullptr;
  const hw::LinkSpec* l = cat.find_link(*name);
  if (l == nullptr)
    r.error(r.loc(r.node(t, key)), r.key_path(t, key), "unknown link '" + *name + "'",
            suggest(*name, cat.link_names()));
  return l;
}

// What every pool of the cluster (and every purchase candidate) takes from [cluster.network].
struct PoolDefaults {
  const hw::LinkSpec* net_nic = nullptr;
  std::optional<int> net_nics;
  std::optional<hw::LinkSpec> custom_nic;
  std::vector<std::string> extra_keys;  ///< keys the table may have besides a pool's own
  bool nodes_required = true;
};

// One pool table: the device (catalogue name or inline), nodes, the node's shape and links.
std::optional<hw::PoolSpec> read_pool(TomlReader& r, const TableRef& pt, hw::Catalog& cat, const PoolDefaults& defs) {
  std::vector<std::string> keys = {"name", "device", "nodes", "devices_per_node", "fabric", "nic",
                                   "nics_per_node", "catalog"};
  keys.insert(keys.end(), defs.extra_keys.begin(), defs.extra_keys.end());
  r.check_keys(pt, keys);
  hw::PoolSpec pool;
  // An extra catalogue file (e.g. a device profile from `hetsim-exec calibrate`), relative to
  // the scenario; its devices and links join the catalogue.
  if (auto extra = r.string(pt, "catalog")) {
    // Lexically normal: "out/../profiles/x.toml" resolves even before out/ exists.
    const std::filesystem::path path = (std::filesystem::path(r.file()).parent_path() / *extra).lexically_normal();
    auto text = read_input_file(path, "catalogue file", "write one with `hetsim-exec calibrate --out FILE`");
    if (!text) {
      const Diagnostic& e = text.errors().front();
      r.error(r.loc(r.node(pt, "catalog")), pt.path + ".catalog", e.message + " '" + path.string() + "'", e.hint);
      return std::nullopt;
    }
    for (auto& d : read_catalog_text(*text, path.string(), cat)) r.error(d.where, d.key, d.message, d.hint);
    if (r.failed()) return std::nullopt;
  }
  const toml::node* dev = r.node(pt, "device");
  if (dev == nullptr) {
    r.missing(pt, "device", "\"h100-sxm5\" (a catalogue name; `hetsim catalog` lists them)");
    return std::nullopt;
  }
  if (dev->is_table()) {
    auto d = detail::read_device(r, {dev->as_table(), pt.path + ".device"}, &cat);
    if (!d) return std::nullopt;
    pool.device = *d;
  } else if (auto name = r.string(pt, "device")) {
    const hw::DeviceSpec* d = cat.find_device(*name);
    if (d == nullptr) {
      r.error(r.loc(dev), pt.path + ".device", "unknown device '" + *name + "'",
              suggest(*name, cat.device_names()));
      return std::nullopt;
    }
    pool.device = *d;
  } else {
    return std::nullopt;
  }
  pool.name = r.string(pt, "name").value_or(pool.device.name);
  pool.nodes = as_int(r.integer(pt, "nodes", 0, 1 << 20), defs.nodes_required ? -1 : 0);
  if (pool.nodes < 0) {
    if (!r.node(pt, "nodes")) r.missing(pt, "nodes", "<number of nodes>");
    pool.nodes = 0;
  }
  pool.devices_per_node = as_int(r.integer(pt, "devices_per_node", 1, 4096), pool.device.node.devices);
  // Device counts stay far inside int (and the planner's arithmetic): at most 2^24 devices
  // per pool and in the cluster (the largest published clusters have ~10^5).
  constexpr long long kMaxDevices = 1LL << 24;
  if (static_cast<long long>(pool.nodes) * pool.devices_per_node > kMaxDevices) {
    r.error(r.loc(r.node(pt, "nodes") ? r.node(pt, "nodes") : pt.table), pt.path + ".nodes",
            "nodes × devices_per_node = " + std::to_string(static_cast<long long>(pool.nodes) * pool.devices_per_node) +
                " devices, more than the 16,777,216 (2^24) a pool may have",
            "fewer nodes");
    pool.nodes = 0;
  }
  const hw::LinkSpec* fabric = link_or_error(r, pt, "fabric", cat);
  if (!fabric) fabric = cat.find_link(pool.device.node.fabric);
  const hw::LinkSpec* nic = link_or_error(r, pt, "nic", cat);
  if (nic) pool.nic = *nic;
  else if (defs.custom_nic) pool.nic = *defs.custom_nic;
  else if (defs.net_nic) pool.nic = *defs.net_nic;
  else if (const hw::LinkSpec* l = cat.find_link(pool.device.node.nic)) pool.nic = *l;
  if (fabric) pool.fabric = *fabric;
  // A full mesh (a fabric with per_peer) links every pair of a node's devices: at most 64 of
  // them, and a device's links to its node-mates within its bandwidth, as the SimGrid engine's
  // pair links assume (docs/cost-models.md#full-mesh-fabrics).
  if (pool.fabric.per_peer.v > 0 && pool.devices_per_node > 1) {
    const toml::node* at = r.node(pt, "devices_per_node") ? r.node(pt, "devices_per_node") : pt.table;
    const double links = pool.devices_per_node - 1.0;
    if (pool.devices_per_node > 64)
      r.error(r.loc(at), pt.path + ".devices_per_node",
              "the full-mesh fabric '" + pool.fabric.name + "' cannot join " + std::to_string(pool.devices_per_node) +
                  " devices per node (at most 64 are modelled)",
              "fewer devices_per_node, or a switched fabric (a link without per_peer)");
    else if (links * pool.fabric.per_peer.v > pool.fabric.bandwidth.v * (1 + 1e-9))
      r.error(r.loc(at), pt.path + ".devices_per_node",
              std::to_string(pool.devices_per_node) + " devices per node on the full-mesh fabric '" + pool.fabric.name +
                  "' give each " + std::to_string(pool.devices_per_node - 1) + " links of " +
                  format_bandwidth(pool.fabric.per_peer) + ", more than its " + format_bandwidth(pool.fabric.bandwidth),
              "at most bandwidth / per_peer + 1 devices per node, or a lower per_peer");
  }
  const bool nic_given = r.node(pt, "nic") || defs.custom_nic || defs.net_nic;
  pool.nics_per_node = as_int(r.integer(pt, "nics_per_node", 0, 4096),
                              defs.net_nics.value_or(nic_given && pool.device.node.nics == 0
                                                    ? pool.devices_per_node
                                                    : pool.device.node.nics));
  // A NIC count that follows the device's node scales with a different devices_per_node.
  if (!r.node(pt, "nics_per_node") && !defs.net_nics && pool.devices_per_node != pool.device.node.devices)
    pool.nics_per_node = std::max(1, pool.device.node.nics * pool.devices_per_node / pool.device.node.devices);
  if (pool.nodes > 1 && pool.nics_per_node == 0)
    r.error(r.loc(pt.table), pt.path + ".nics_per_node", "a pool of several nodes needs NICs",
            "set nics_per_node ≥ 1");
  return pool;
}

// ------------------------------------------------------------------------------- [purchase]
void read_purchase(TomlReader& r, const TableRef& root, hw::Catalog& cat, Scenario& s, PoolDefaults d) {
  auto t = r.table(root, "purchase");
  if (!t) return;
  r.check_keys(*t, {"candidate", "objective", "budget_usd", "power_kw", "deadline_days"});
  PurchaseSpec p;
  if (auto o = pick<PurchaseSpec::Objective>(r, *t, "objective", {{"pareto", PurchaseSpec::Objective::Pareto},
                                                                  {"time", PurchaseSpec::Objective::Time},
                                                                  {"cost", PurchaseSpec::Objective::Cost}}))
    p.objective = *o;
  p.budget_usd = r.number(*t, "budget_usd", 1, 1e13).value_or(0);
  p.power_kw = r.number(*t, "power_kw", 0.001, 1e8).value_or(0);
  p.deadline_days = r.number(*t, "deadline_days", 0.001, 1e5).value_or(0);
  d.extra_keys = {"max_nodes", "node_step", "purchase_usd", "rent_usd_per_hour", "lead_time_days"};
  d.nodes_required = false;
  const auto cands = r.table_array(*t, "candidate");
  if (cands.empty() && !r.failed())
    r.error(r.loc(t->table), t->path + ".candidate", "a purchase needs at least one candidate",
            "add a [[purchase.candidate]] with device = \"…\" and max_nodes = …");
  for (const auto& ct : cands) {
    auto pool = read_pool(r, ct, cat, d);
    if (!pool) continue;
    if (r.node(ct, "nodes"))
      r.error(r.loc(r.node(ct, "nodes")), r.key_path(ct, "nodes"), "a candidate has no nodes yet",
              "give max_nodes (and node_step) for how many the search may buy");
    PurchaseSpec::Candidate c;
    c.max_nodes = as_int(r.integer(ct, "max_nodes", 0, 4096), -1);
    if (c.max_nodes < 0) {
      if (!r.node(ct, "max_nodes")) r.missing(ct, "max_nodes", "<most nodes to buy>");
      continue;
    }
    if (c.max_nodes == 0)
      r.error(r.loc(r.node(ct, "max_nodes")), r.key_path(ct, "max_nodes"), "a candidate with max_nodes = 0 can never be bought",
              "remove the candidate or allow at least one node");
    c.node_step = as_int(r.integer(ct, "node_step", 1, 4096), 1);
    c.lead_time_days = r.number(ct, "lead_time_days", 0, 3650).value_or(0);
    if (auto v = r.number(ct, "purchase_usd", 0, 1e9)) pool->device.purchase_usd = *v;
    if (auto v = r.number(ct, "rent_usd_per_hour", 0, 1e6)) pool->device.price_usd_per_hour = *v;
    // [cost] is read after the cluster (its price overrides name pools): its mode, here, from the
    // table itself (the default is rent).
    bool rent = true;
    if (auto ct2 = root.table->get_as<toml::table>("cost"))
      if (auto m = ct2->get_as<std::string>("mode")) rent = m->get() != "own";
    if (!rent && pool->device.purchase_usd <= 0)
      r.error(r.loc(ct.table), r.key_path(ct, "purchase_usd"),
              "no purchase price for '" + pool->device.name + "' (the catalogue has none)",
              "give purchase_usd = <price per device>");
    if (rent && pool->device.price_usd_per_hour <= 0)
      r.error(r.loc(ct.table), r.key_path(ct, "rent_usd_per_hour"),
              "no rental price for '" + pool->device.name + "' (the catalogue has none)",
              "give rent_usd_per_hour = <price per device-hour>");
    for (const auto& other : s.cluster.pools)
      if (other.name == pool->name)
        r.error(r.loc(ct.table), ct.path + ".name", "a candidate and an owned pool are both named '" + pool->name + "'",
                "give the candidate its own name = \"…\"");
    for (const auto& other : p.candidates)
      if (other.pool.name == pool->name)
        r.error(r.loc(ct.table), ct.path + ".name", "two candidates are named '" + pool->name + "'",
                "give each its own name = \"…\"");
    c.pool = std::move(*pool);
    p.candidates.push_back(std::move(c));
  }
  s.purchase = std::move(p);
}

void read_cluster(TomlReader& r, const TableRef& root, hw::Catalog& cat, Scenario& s) {
  auto t = r.table(root, "cluster");
  if (!t) {
    // A purchase may start from nothing owned.
    if (!r.node(root, "cluster") && !r.node(root, "purchase")) r.missing(root, "cluster", "at least one [[cluster.pool]]");
    if (!r.node(root, "cluster")) read_purchase(r, root, cat, s, PoolDefaults{});
    return;
  }
  r.check_keys(*t, {"pool", "network", "link"});
  // Inline links first: pools and devices may refer to them.
  for (const auto& lt : r.table_array(*t, "link"))
    if (auto l = detail::read_link(r, lt)) {
      auto it = std::find_if(cat.links.begin(), cat.links.end(), [&](const auto& x) { return x.name == l->name; });
      if (it != cat.links.end()) *it = *l;  // a scenario's own definition wins
      else cat.links.push_back(*l);
    }

  // The network's defaults apply to every pool that does not say otherwise.
  const hw::LinkSpec* net_nic = nullptr;
  std::optional<int> net_nics;
  std::optional<hw::LinkSpec> custom_nic;
  if (auto n = r.table(*t, "network")) {
    r.check_keys(*n, {"nic", "nic_bandwidth", "nic_latency", "nics_per_node", "topology",
                      "oversubscription"});
    net_nic = link_or_error(r, *n, "nic", cat);
    if (auto bw = r.quantity(*n, "nic_bandwidth", Dimension::Bandwidth)) {
      if (r.node(*n, "nic"))
        r.error(r.loc(r.node(*n, "nic_bandwidth")), n->path + ".nic_bandwidth",
                "give either nic or nic_bandwidth, not both");
      hw::LinkSpec l;
      l.name = "custom-nic";
      l.display = "custom NIC";
      l.bandwidth = BytesPerSec{*bw};
      l.latency = Duration{r.quantity(*n, "nic_latency", Dimension::Time).value_or(5e-6)};
      l.efficiency = 1.0;
      l.source = "scenario " + r.file();
      custom_nic = l;
    }
    if (r.node(*n, "nic_latency") && !r.node(*n, "nic_bandwidth"))
      r.error(r.loc(r.node(*n, "nic_latency")), n->path + ".nic_latency",
              "nic_latency applies to a custom NIC only", "give nic_bandwidth too, or drop nic_latency");
    if (auto k = r.integer(*n, "nics_per_node", 0, 4096)) net_nics = static_cast<int>(*k);
    if (auto topo = pick<hw::Topology>(r, *n, "topology", {{"fat-tree", hw::Topology::FatTree},
                                                           {"rail-optimized", hw::Topology::RailOptimized},
                                                           {"torus", hw::Topology::Torus}}))
      s.cluster.network.topology = *topo;
    s.cluster.network.oversubscription =
        r.number(*n, "oversubscription", 1.0, 1000.0).value_or(s.cluster.network.oversubscription);
  }

  auto pools = r.table_array(*t, "pool");
  if (pools.empty() && !r.failed() && !r.node(root, "purchase"))
    r.error(r.loc(t->table), t->path + ".pool", "the cluster has no pools",
            "add a [[cluster.pool]] with device = \"…\" and nodes = …");
  PoolDefaults defaults{net_nic, net_nics, custom_nic, {}, true};
  for (const auto& pt : pools) {
    auto read = read_pool(r, pt, cat, defaults);
    if (!read) continue;
    hw::PoolSpec pool = std::move(*read);
    for (const auto& other : s.cluster.pools)
      if (other.name == pool.name)
        r.error(r.loc(pt.table), pt.path + ".name", "two pools are named '" + pool.name + "'",
                "give each pool of the same device its own name = \"…\"");
    s.cluster.pools.push_back(pool);
    long long total = 0;
    for (const auto& q : s.cluster.pools) total += static_cast<long long>(q.nodes) * q.devices_per_node;
    if (total > (1LL << 24)) {
      r.error(r.loc(pt.table), pt.path, "the cluster has " + std::to_string(total) +
              " devices, more than the 16,777,216 (2^24) hetsim plans for", "fewer or smaller pools");
      s.cluster.pools.back().nodes = 0;
    }
  }
  read_purchase(r, root, cat, s, defaults);
}

// ------------------------------------------------------------------------------- [parallel]
const std::vector<std::string> kParallelKeys = {
    "tp", "pp", "dp", "micro_batch", "schedule", "virtual_stages", "recompute", "zero", "ep", "expert_tp", "sequence_parallel",
    "grad_sync", "overlap_grad_reduce", "overlap_tp_comm", "overlap_tp_backward", "overlap_ep_comm", "ep_dispatch", "fp8_dispatch", "cp", "cp_comm", "replicas"};

// Per-op selective checkpointing is modelled for dense models only (memory.cpp): said where
// [parallel] reads it (at the key) and where a plan file is validated.
constexpr const char* kSelectiveOpDenseOnly =
    "recompute = \"selective_op\" (per-op selective checkpointing) is modelled for dense models only";
constexpr const char* kSelectiveOpHint = "use \"selective\" or \"full\" for a mixture-of-experts model";


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

// The framework keys of [parallel] into `p` (how the framework runs, not the layout): read for
// every command, `hetsim plan` and `hetsim buy` included (Scenario::framework).
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
  if (auto rc = pick<cost::Recompute>(r, *t, "recompute", {{"none", cost::Recompute::None},
                                                           {"selective", cost::Recompute::Selective},
                                                           {"full", cost::Recompute::Full},
                                                           {"selective_op", cost::Recompute::SelectiveOp}})) {
    p.recompute = *rc;
    if (*rc == cost::Recompute::SelectiveOp && s.model.moe())
      r.error(r.loc(r.node(*t, "recompute")), "parallel.recompute", kSelectiveOpDenseOnly, kSelectiveOpHint);
  }
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
    int given_mb = 0, missing_mb = 0;
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
        given_mb += count * g.micro_batches;
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
      const int rest = per_step - given_mb;
      if (rest <= 0 || rest % missing_mb != 0) {
        r.error(where, t->path + ".replicas", "cannot split the remaining " + std::to_string(rest) +
                " micro-batches evenly over " + std::to_string(missing_mb) + " replicas",
                "give micro_batches for every replica group");
        return std::nullopt;
      }
      for (auto& g : p.groups)
        if (g.micro_batches == 0) g.micro_batches = rest / missing_mb;
    }
    check_ep(p);
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
              devices % tpc == 0 ? "dp = " + std::to_string(devices / tpc) + " would use every device"
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
  if (B % (p.micro_batch * dp) != 0) {
    r.error(r.loc(r.node(*t, "micro_batch") ? r.node(*t, "micro_batch") : t->table), t->path + ".micro_batch",
            "global_batch (" + std::to_string(B) + ") is not divisible into micro-batches of " +
                std::to_string(p.micro_batch) + " over dp = " + std::to_string(dp) + " replicas",
            "global_batch must be a multiple of micro_batch·dp = " + std::to_string(p.micro_batch * dp));
    return std::nullopt;
  }
  const int mb = B / (p.micro_batch * dp);
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
  return p;
}

// ----------------------------------------------------------------------------------- [cost]
void read_cost(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "cost");
  if (!t) return;
  r.check_keys(*t, {"mode", "electricity_usd_per_kwh", "pue", "amortisation_years",
                    "price_usd_per_hour", "purchase_usd"});
  if (auto mode = pick<CostSpec::Mode>(r, *t, "mode", {{"rent", CostSpec::Mode::Rent},
                                                       {"own", CostSpec::Mode::Own}}))
    s.cost.mode = *mode;
  s.cost.electricity_usd_per_kwh = r.number(*t, "electricity_usd_per_kwh", 0, 100).value_or(s.cost.electricity_usd_per_kwh);
  s.cost.pue = r.number(*t, "pue", 1, 10).value_or(s.cost.pue);
  s.cost.amortisation_years = r.number(*t, "amortisation_years", 0.1, 100).value_or(s.cost.amortisation_years);
  // Per-device price overrides, keyed by device or pool name.
  for (const char* key : {"price_usd_per_hour", "purchase_usd"}) {
    auto prices = r.table(*t, key);
    if (!prices) continue;
    std::vector<std::string> names;
    for (const auto& pool : s.cluster.pools) {
      names.push_back(pool.name);
      if (pool.device.name != pool.name) names.push_back(pool.device.name);
    }
    for (auto&& [k, v] : *prices->table) {
      const std::string name(k.str());
      auto price = r.number(*prices, name, 0, 1e9);
      if (!price) continue;
      bool found = false;
      for (auto& pool : s.cluster.pools)
        if (pool.name == name || pool.device.name == name) {
          (std::string_view(key) == "purchase_usd" ? pool.device.purchase_usd
                                                   : pool.device.price_usd_per_hour) = *price;
          found = true;
        }
      if (!found)
        r.error(r.loc(k.source()), prices->path + "." + name, "no pool uses device '" + name + "'",
                suggest(name, names));
    }
  }
}

void read_memory(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "memory");
  if (!t) return;
  r.check_keys(*t, {"runtime_reserve", "comm_buffers", "fragmentation", "gradient_bytes"});
  if (auto v = r.quantity(*t, "runtime_reserve", Dimension::Size)) s.memory.runtime_reserve = Bytes{*v};
  if (auto v = r.quantity(*t, "comm_buffers", Dimension::Size)) s.memory.comm_buffers = Bytes{*v};
  s.memory.fragmentation = r.number(*t, "fragmentation", 0, 0.9).value_or(s.memory.fragmentation);
  s.memory.gradient_bytes = r.number(*t, "gradient_bytes", 1, 16).value_or(s.memory.gradient_bytes);
}

void read_reliability(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "reliability");
  if (!t) return;
  r.check_keys(*t, {"mtbf_hours", "checkpoint_bandwidth", "restart_time", "checkpoint_interval"});
  auto& rel = s.reliability;
  rel.mtbf_hours = r.number(*t, "mtbf_hours", 1, 1e9).value_or(rel.mtbf_hours);
  if (auto v = r.quantity(*t, "checkpoint_bandwidth", Dimension::Bandwidth)) {
    if (*v < 1e6)
      r.error(r.loc(r.node(*t, "checkpoint_bandwidth")), r.key_path(*t, "checkpoint_bandwidth"),
              "checkpoint bandwidth below 1 MB/s per device", "give it per device, e.g. \"0.12GB/s\"");
    else
      rel.checkpoint_bandwidth_per_device = BytesPerSec{*v};
  }
  if (auto v = r.quantity(*t, "restart_time", Dimension::Time)) rel.restart = Duration{*v};
  if (auto v = r.quantity(*t, "checkpoint_interval", Dimension::Time)) {
    if (*v < 1)
      r.error(r.loc(r.node(*t, "checkpoint_interval")), r.key_path(*t, "checkpoint_interval"),
              "checkpoint interval under one second", "leave it out for the Young/Daly optimum");
    else
      rel.checkpoint_interval = Duration{*v};
  }
}

void read_reference(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "reference");
  if (!t) return;
  r.check_keys(*t, {"step_time_s", "tflops_per_device", "peak_memory", "peak_memory_kind", "source"});
  ReferenceSpec ref;
  ref.step_time_s = r.number(*t, "step_time_s", 0, 1e9).value_or(0);
  ref.tflops_per_device = r.number(*t, "tflops_per_device", 0, 1e6).value_or(0);
  if (auto m = r.quantity(*t, "peak_memory", Dimension::Size)) {
    if (*m <= 0 || *m > 1e15)
      r.error(r.loc(r.node(*t, "peak_memory")), t->path + ".peak_memory",
              "must be between 1 byte and 1 PB per device", "e.g. \"59GiB\"");
    else
      ref.peak_memory = Bytes{*m};
  }
  if (auto k = pick<MemoryKind>(r, *t, "peak_memory_kind", {{"allocated", MemoryKind::Allocated},
                                                           {"reserved", MemoryKind::Reserved},
                                                           {"device", MemoryKind::Device}}))
    ref.peak_memory_kind = *k;
  ref.source = r.string(*t, "source").value_or("");
  if (ref.step_time_s <= 0 && ref.peak_memory.v <= 0 && !r.failed())
    r.missing(*t, "step_time_s", "<measured seconds per step> (or peak_memory = \"…GiB\")");
  s.reference = ref;
}

std::string stem_of(const std::string& file) {
  std::filesystem::path p(file);
  return p.stem().string();
}

}  // namespace

Diagnostics validate_plan(const Scenario& s, const plan::Plan& p, SourceLoc where) {
  Diagnostics d;
  auto err = [&](std::string key, std::string msg, std::string hint = {}) {
    d.push_back({where, std::move(key), std::move(msg), std::move(hint)});
  };
  const auto& m = s.model;
  std::vector<long long> used(s.cluster.pools.size(), 0);
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
    if (p.schedule == cost::Schedule::Interleaved && g.micro_batches % static_cast<int>(g.stages.size()) != 0)
      err(gpath + ".micro_batches", "the interleaved schedule needs micro-batches (" +
          std::to_string(g.micro_batches) + ") to be a multiple of the pipeline depth (" +
          std::to_string(g.stages.size()) + ")");
  }
  for (std::size_t pi = 0; pi < used.size(); ++pi)
    if (used[pi] > s.cluster.pools[pi].devices())
      err("parallel.replicas", "the plan needs " + std::to_string(used[pi]) + " devices of pool '" +
          s.cluster.pools[pi].name + "' but it has " + std::to_string(s.cluster.pools[pi].devices()),
          "add nodes to the pool or use fewer replicas");
  if (p.sequences_per_step() != s.training.global_batch)
    err("parallel.replicas", "the replicas process " + std::to_string(p.sequences_per_step()) +
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

Result<Scenario> parse_scenario(std::string_view text, const std::string& file, const hw::Catalog& catalog,
                                ReadOptions options) {
  Diagnostics diags;
  auto tbl = detail::parse_toml(text, file, diags);
  if (!tbl) return diags;
  // A sweep is many scenarios: `hetsim sweep` reads it (sim/io/sweep_reader.hpp), one point at a time.
  if (const toml::node* sw = tbl->get("sweep")) {
    TomlReader r(file, diags);
    r.error(r.loc(sw), "sweep", "this scenario has a [sweep] table: it describes many runs, not one",
            "use `hetsim sweep " + file + "` (docs/scenario-format.md#sweep), or remove [sweep] to run one scenario");
    return diags;
  }
  return detail::read_scenario_document(*tbl, file, catalog, options);
}

namespace detail {

Result<Scenario> read_scenario_document(const toml::table& doc, const std::string& file, const hw::Catalog& catalog,
                                        ReadOptions options) {
  Diagnostics diags;
  TomlReader r(file, diags);
  const TableRef root{&doc, ""};
  r.check_keys(root, {"sweep", "schema", "scenario", "model", "training", "cluster", "parallel", "cost",
                      "memory", "reliability", "reference", "purchase", "variability"});
  if (auto schema = r.integer(root, "schema", 1, 1000); schema && *schema != 1)
    r.error(r.loc(r.node(root, "schema")), "schema", "unsupported schema " + std::to_string(*schema),
            "this hetsim reads schema = 1");

  Scenario s;
  s.file = file;
  s.name = stem_of(file);
  if (auto sc = r.table(root, "scenario")) {
    r.check_keys(*sc, {"name", "description", "seed"});
    s.name = r.string(*sc, "name").value_or(s.name);
    (void)r.string(*sc, "description");
    s.seed = static_cast<std::uint64_t>(r.integer(*sc, "seed", 0, INT64_MAX).value_or(1));
  }
  hw::Catalog cat = catalog;
  read_model(r, root, s);
  read_training(r, root, s);
  read_cluster(r, root, cat, s);
  read_cost(r, root, s);
  read_memory(r, root, s);
  read_reliability(r, root, s);
  read_reference(r, root, s);
  read_variability(r, root, s);
  if (!r.failed() && s.model.positions == workload::Positions::Learned &&
      s.training.seq_len > s.model.max_positions)
    r.error(r.loc(r.node(root, "training")), "training.seq_len",
            "seq_len " + std::to_string(s.training.seq_len) + " exceeds the model's " +
                std::to_string(s.model.max_positions) + " learned positions",
            "shorten seq_len or raise model.max_positions");
  if (r.failed()) return diags;

  SourceLoc where{file, 0, 0};
  if (!options.plan) {
    if (auto t = r.table(root, "parallel")) {
      r.check_keys(*t, kParallelKeys);
      read_framework(r, *t, s, s.framework);
    }
    if (r.failed()) return diags;
    return s;
  }
  s.plan = read_parallel(r, root, s, where);
  if (r.failed()) return diags;
  if (s.plan) plan::copy_framework(*s.plan, s.framework);
  if (s.plan) {
    Diagnostics pd = validate_plan(s, *s.plan, where);
    if (!pd.empty()) return pd;
  }
  return s;
}

}  // namespace detail

Result<Scenario> read_scenario(const std::filesystem::path& file, const hw::Catalog& catalog, ReadOptions options) {
  auto text = read_input_file(file, "scenario file");
  if (!text) return text.errors();
  return parse_scenario(*text, file.string(), catalog, options);
}

}  // namespace hetsim::io

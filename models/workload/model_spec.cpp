#include "models/workload/model_spec.hpp"

#include <algorithm>
#include <cmath>

namespace hetsim::workload {

double ParamCount::total(int layers) const {
  if (dense_layers > 0) return per_layer * (layers - dense_layers) + per_dense_layer * dense_layers + embedding + output + final_norm;
  return per_layer * layers + embedding + output + final_norm;
}
double ParamCount::active(int layers) const {
  if (dense_layers > 0)
    return per_layer_active * (layers - dense_layers) + per_dense_layer * dense_layers + embedding + output + final_norm;
  return per_layer_active * layers + embedding + output + final_norm;
}

int ModelSpec::moe_layers(int first, int count) const {
  // Layers i in [max(first, first_dense_layers), first + count) with i % moe_layer_freq == 0, in
  // closed form (the planner asks for many ranges of models with many layers).
  if (!moe() || count <= 0) return 0;
  const long long f = std::max(1, moe_layer_freq);
  const long long lo = std::max(first, first_dense_layers), hi = static_cast<long long>(first) + count;
  if (lo >= hi) return 0;
  const auto multiples_below = [&](long long x) { return x <= 0 ? 0LL : (x + f - 1) / f; };  // in [0, x)
  return static_cast<int>(multiples_below(hi) - multiples_below(lo));
}

ModelSpec dense_layer_model(const ModelSpec& m) {
  ModelSpec d = m;
  d.experts = 1;
  d.top_k = 1;
  d.shared_experts = 0;
  d.shared_ffn_hidden = 0;
  d.expert_load.clear();
  d.ffn_hidden = m.dense_ffn_hidden > 0 ? m.dense_ffn_hidden : m.ffn_hidden;
  d.first_dense_layers = 0;
  d.moe_layer_freq = 1;
  d.dense_ffn_hidden = 0;
  return d;
}

ParamCount count_params(const ModelSpec& m) {
  const double h = m.hidden;
  const double q = m.q_width();
  const double kv = m.kv_width();
  const double f = m.ffn_hidden;
  const double bias = m.linear_bias ? 1.0 : 0.0;
  const double norm = m.norm == Norm::LayerNorm ? 2 * h : h;  // LayerNorm has gain and bias

  // Attention: Q is h×q and O q×h (q = h unless head_dim is set); K and V are h×kv (kv = q for
  // MHA); a QK-norm has one gain vector of a head's width for the queries and one for the keys.
  double attn = 2 * h * q + 2 * h * kv + bias * (q + 2 * kv + h) + (m.qk_norm ? 2.0 * m.head_dim() : 0);
  if (m.mla()) {
    // MLA (DeepSeek-V2 §2.1): Q down h×q_lora (+ its RMSNorm) and up q_lora×heads·hd (or h×heads·hd
    // directly); KV down h×(kv_lora + rope) (+ RMSNorm over kv_lora), up kv_lora×heads·(nope + v);
    // O heads·v×h.
    const double heads = m.heads, ql = m.q_lora_rank, kl = m.kv_lora_rank, rope = m.qk_rope_dim;
    const double hd = m.head_dim(), v = m.v_head_dim;
    attn = (ql > 0 ? h * ql + ql + ql * heads * hd : h * heads * hd) + h * (kl + rope) + kl +
           kl * heads * (hd - rope + v) + heads * v * h;
  }
  // MLP: GeLU has up (h×f) and down (f×h); SwiGLU adds a gate (h×f).
  const double mats = m.activation == Activation::SwiGlu ? 3 : 2;
  auto mlp_of = [&](double width) { return mats * h * width + bias * ((mats - 1) * width + h); };
  const double mlp = mlp_of(f);
  const double router = m.moe() ? h * m.experts : 0;
  // Shared experts: as many MLPs of their width each, used by every token.
  const double shared = m.moe() && m.shared_experts > 0
                            ? m.shared_experts * mlp_of(m.shared_width() / m.shared_experts)
                            : 0;

  ParamCount p;
  p.per_layer = attn + m.experts * mlp + shared + router + 2 * norm;
  p.per_layer_experts = m.moe() ? m.experts * mlp : 0;
  p.per_layer_active = attn + (m.moe() ? m.top_k : 1) * mlp + shared + router + 2 * norm;
  p.embedding = static_cast<double>(m.vocab) * h +
                (m.positions == Positions::Learned ? static_cast<double>(m.max_positions) * h : 0);
  p.output = m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * h;
  p.final_norm = norm;
  if (m.moe()) {
    p.dense_layers = m.layers - m.moe_layers(0, m.layers);
    p.per_dense_layer = attn + mlp_of(m.dense_ffn_hidden > 0 ? m.dense_ffn_hidden : f) + 2 * norm;
  }
  return p;
}

double moe_rank_load(const ModelSpec& m, int ep) {
  const double c = m.capacity_factor;
  // An expert's rows in units of the mean load, from its load in those units.
  auto rows_of = [&](double load) { return m.dropless ? std::max(load, c) : c > 0 ? c : 1.0; };
  if (!m.moe() || m.expert_load.empty()) return rows_of(1.0);  // uniform
  const int per_rank = m.experts / std::max(1, ep);
  double worst = 0;
  for (int r = 0; r * per_rank < m.experts; ++r) {
    double rows = 0;
    for (int i = r * per_rank; i < (r + 1) * per_rank && i < m.experts; ++i)
      rows += rows_of(m.expert_load[static_cast<std::size_t>(i)] * m.experts);
    worst = std::max(worst, rows / per_rank);
  }
  return worst;
}

double moe_dropped_fraction(const ModelSpec& m) {
  if (!m.moe() || m.dropless || m.experts <= 0) return 0;
  const double E = m.experts;
  const double cap = (m.capacity_factor > 0 ? m.capacity_factor : 1.0) / E;  // a share of the tokens
  if (m.expert_load.empty()) return std::max(0.0, 1.0 - cap * E);  // uniform: every expert at 1/E
  double dropped = 0;
  for (double g : m.expert_load) dropped += std::max(0.0, g - cap);
  return dropped;
}

double moe_nodes_per_token(const ModelSpec& m, int nodes) {
  if (!m.moe() || nodes <= 1) return 1;
  // ln C(n, k), and P(k picks, drawn without replacement from n, all miss the `hit` ones).
  auto lchoose = [](double n, double k) { return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1); };
  auto none_of = [&](double n, double hit, double k) {
    return n - hit < k ? 0.0 : std::exp(lchoose(n - hit, k) - lchoose(n, k));
  };
  const double E = m.experts, N = nodes, k = m.top_k;
  const double per_node = E / N;  // experts on one node
  const int G = m.expert_groups, g = m.expert_group_topk;
  if (G <= 0 || g <= 0 || (G % nodes != 0 && nodes % G != 0)) return N * (1 - none_of(E, per_node, k));
  if (G < nodes) {
    // Each group spans nodes/G whole nodes: the k picks fall among the g drawn groups' nodes.
    const double spanned = static_cast<double>(g) * (nodes / G);
    return spanned * (1 - none_of(g * (E / G), per_node, k));
  }
  // The groups nest in the nodes: G/N of them on each. A node's chance of no pick: over j, the
  // number of its groups among the g drawn (hypergeometric), the chance that the k picks among
  // the drawn groups' experts all land elsewhere.
  const int own = G / nodes;
  const double per_group = E / G;
  double miss = 0;
  for (int j = 0; j <= std::min(own, g); ++j) {
    if (g - j > G - own) continue;
    const double pj = std::exp(lchoose(own, j) + lchoose(G - own, g - j) - lchoose(G, g));
    miss += pj * none_of(g * per_group, j * per_group, k);
  }
  return N * (1 - miss);
}

std::vector<double> zipf_load(int experts, double skew) {
  std::vector<double> load(static_cast<std::size_t>(std::max(0, experts)));
  double sum = 0;
  for (std::size_t i = 0; i < load.size(); ++i) sum += load[i] = std::pow(static_cast<double>(i + 1), -skew);
  for (double& x : load) x /= sum;
  return load;
}

namespace {

ModelSpec gpt3_175b() {
  // Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads, d_ff = 4·d_model,
  // context 2048, GPT-2 BPE vocabulary of 50257, learned positions, tied embeddings.
  ModelSpec m;
  m.name = "gpt3-175b";
  m.layers = 96; m.hidden = 12288; m.heads = 96; m.kv_heads = 96; m.ffn_hidden = 49152;
  m.vocab = 50257; m.activation = Activation::Gelu; m.norm = Norm::LayerNorm;
  m.positions = Positions::Learned; m.max_positions = 2048; m.tied_embeddings = true;
  m.linear_bias = true;
  m.dropout = true;
  return m;
}

ModelSpec llama3(const char* name, int layers, int hidden, int heads, int ffn) {
  // Llama 3 (Dubey et al. 2024, Table 3): GQA with 8 KV heads, SwiGLU, RMSNorm, RoPE,
  // vocabulary 128256, untied embeddings, no biases.
  ModelSpec m;
  m.name = name;
  m.layers = layers; m.hidden = hidden; m.heads = heads; m.kv_heads = 8; m.ffn_hidden = ffn;
  m.vocab = 128256; m.activation = Activation::SwiGlu; m.norm = Norm::RmsNorm;
  m.positions = Positions::Rope; m.tied_embeddings = false; m.linear_bias = false;
  return m;
}

ModelSpec mixtral_8x7b() {
  // Jiang et al. 2024 (Mixtral of Experts), Table 1: 32 layers, dim 4096, 32 heads, 8 KV
  // heads, hidden 14336 per expert, 8 experts, top-2, vocabulary 32000.
  ModelSpec m = llama3("mixtral-8x7b", 32, 4096, 32, 14336);
  m.vocab = 32000;
  m.experts = 8;
  m.top_k = 2;
  return m;
}

ModelSpec mixtral_8x22b() {
  // Mistral AI's Mixtral 8x22B (model card and config.json of mistralai/Mixtral-8x22B-v0.1): 56
  // layers, dim 6144, 48 heads, 8 KV heads, hidden 16384 per expert, 8 experts, top-2,
  // vocabulary 32768; 141 B parameters, 39 B active.
  ModelSpec m = llama3("mixtral-8x22b", 56, 6144, 48, 16384);
  m.vocab = 32768;
  m.experts = 8;
  m.top_k = 2;
  return m;
}

ModelSpec qwen3_moe(const char* name, int layers, int hidden, int heads, int expert_ffn) {
  // Qwen3 MoE (Qwen3 technical report, arXiv 2505.09388, Table 2; config.json of Qwen/Qwen3-30B-A3B
  // and Qwen/Qwen3-235B-A22B): 128 experts, 8 routed per token, no shared experts, 4 KV heads,
  // heads of 128 whatever the hidden size, QK-norm, SwiGLU, RMSNorm, RoPE, vocabulary 151936,
  // untied embeddings, no biases.
  ModelSpec m = llama3(name, layers, hidden, heads, expert_ffn);
  m.kv_heads = 4;
  m.explicit_head_dim = 128;
  m.qk_norm = true;
  m.vocab = 151936;
  m.experts = 128;
  m.top_k = 8;
  return m;
}

ModelSpec deepseek_v3() {
  // DeepSeek-V3 (arXiv 2412.19437, §2 and §4.2; config.json of deepseek-ai/DeepSeek-V3): 61
  // layers, hidden 7168, 128 heads of MLA (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128,
  // qk_rope 64, v_head 128), the first 3 layers dense (MLP 18432), the other 58 MoE: 256 routed
  // experts of 2048, top-8, one shared expert of 2048; vocabulary 129280, untied, SwiGLU,
  // RMSNorm, no biases. 671 B parameters, 37 B active (the multi-token-prediction module's 14 B
  // not included). Not modelled: the router's 256-entry score-correction bias per MoE layer.
  ModelSpec m = llama3("deepseek-v3", 61, 7168, 128, 2048);
  m.kv_heads = 128;
  m.explicit_head_dim = 192;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_rope_dim = 64;
  m.v_head_dim = 128;
  m.vocab = 129280;
  m.experts = 256;
  m.top_k = 8;
  m.shared_experts = 1;
  m.first_dense_layers = 3;
  m.dense_ffn_hidden = 18432;
  // Node-limited routing (§2.1.2): 8 groups of experts, a token's experts from at most 4 of them
  // (config.json n_group 8, topk_group 4).
  m.expert_groups = 8;
  m.expert_group_topk = 4;
  return m;
}

ModelSpec tiny() {
  // A small Llama-shaped model for tests: fast to simulate and to run on CPUs.
  ModelSpec m = llama3("tiny", 4, 256, 8, 1024);
  m.kv_heads = 4;
  m.vocab = 1024;
  return m;
}

}  // namespace

std::vector<std::string> preset_names() {
  return {"gpt3-175b",     "llama3-8b",     "llama3-70b",      "llama3-405b", "mixtral-8x7b",
          "mixtral-8x22b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "tiny"};
}

std::optional<ModelSpec> preset(std::string_view name) {
  if (name == "gpt3-175b") return gpt3_175b();
  if (name == "llama3-8b") return llama3("llama3-8b", 32, 4096, 32, 14336);
  if (name == "llama3-70b") return llama3("llama3-70b", 80, 8192, 64, 28672);
  if (name == "llama3-405b") return llama3("llama3-405b", 126, 16384, 128, 53248);
  if (name == "mixtral-8x7b") return mixtral_8x7b();
  if (name == "mixtral-8x22b") return mixtral_8x22b();
  // Qwen3-30B-A3B: 48 layers, hidden 2048, 32 heads, experts of 768 (30.5 B, 3.3 B active);
  // Qwen3-235B-A22B: 94 layers, hidden 4096, 64 heads, experts of 1536 (235 B, 22 B active).
  if (name == "qwen3-30b-a3b") return qwen3_moe("qwen3-30b-a3b", 48, 2048, 32, 768);
  if (name == "qwen3-235b-a22b") return qwen3_moe("qwen3-235b-a22b", 94, 4096, 64, 1536);
  if (name == "deepseek-v3") return deepseek_v3();
  if (name == "tiny") return tiny();
  return std::nullopt;
}

}  // namespace hetsim::workload

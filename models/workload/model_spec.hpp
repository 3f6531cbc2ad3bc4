#pragma once
// What a decoder-only transformer is: its shape, and the presets of published models.

#include <optional>
#include <string>
#include <vector>

namespace hetsim::workload {

enum class Activation { Gelu, SwiGlu };
enum class Norm { LayerNorm, RmsNorm };
enum class Positions { Learned, Rope };

/// A decoder transformer. Dense when experts == 1; MoE replaces every MLP with `experts`
/// copies of it and a router that sends each token to `top_k` of them, beside
/// `shared_experts` MLPs every token goes through (DeepSeek, Llama 4).
struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;    ///< == heads for MHA, fewer for GQA
  int ffn_hidden = 0;  ///< per expert for MoE
  int vocab = 0;
  Activation activation = Activation::Gelu;
  Norm norm = Norm::LayerNorm;
  Positions positions = Positions::Rope;
  int max_positions = 0;  ///< rows of a learned position table
  bool tied_embeddings = false;
  bool linear_bias = false;  ///< biases in the attention and MLP projections
  bool dropout = false;      ///< dropout layers (their 1-byte masks are kept for backward)
  int experts = 1;
  int top_k = 1;
  /// MoE: each expert's token buffer in units of the mean load (tokens·top_k/experts), as
  /// GShard and Megatron-Core's moe_expert_capacity_factor size it; 0: none (dropless routing
  /// runs each expert's own tokens, unpadded).
  double capacity_factor = 0;
  int shared_experts = 0;     ///< MoE: MLPs every token goes through beside the routed ones
  int shared_ffn_hidden = 0;  ///< their width each; 0: ffn_hidden
  /// Width of one attention head; 0: hidden/heads. Set where the queries are wider or narrower
  /// than the residual stream (Qwen3: 32 heads of 128 over hidden 2048).
  int explicit_head_dim = 0;
  bool qk_norm = false;  ///< an RMSNorm over each query and key head (Qwen3)
  /// MoE routing: each routed expert's share of the tokens of a step, in expert order (sum 1;
  /// experts are placed on the expert-parallel ranks in this order, experts/ep each). Empty:
  /// uniform. docs/cost-models.md#routing-imbalance.
  std::vector<double> expert_load;
  /// MoE: group-limited routing (DeepSeek-V3's node-limited routing, its config's n_group and
  /// topk_group; Megatron-Core's --moe-router-num-groups and --moe-router-group-topk): the
  /// experts fall into expert_groups equal groups in expert order, and a token's top_k experts
  /// come from at most expert_group_topk of them. 0: no limit.
  int expert_groups = 0;
  int expert_group_topk = 0;
  /// MoE: every token reaches its experts (Megatron-Core's dropless routing); a capacity_factor
  /// is then the least buffer, grown for an expert routed more. false: the tokens above the
  /// capacity (capacity_factor, else the mean) are dropped and every buffer is padded to it.
  bool dropless = true;

  [[nodiscard]] int head_dim() const { return explicit_head_dim > 0 ? explicit_head_dim : hidden / heads; }
  /// Width of all query heads together (= hidden unless head_dim is set).
  [[nodiscard]] double q_width() const { return static_cast<double>(heads) * head_dim(); }
  [[nodiscard]] double kv_width() const { return static_cast<double>(kv_heads) * head_dim(); }
  /// Width of the shared experts together (0 for dense models and MoE without them).
  [[nodiscard]] double shared_width() const {
    return static_cast<double>(shared_experts) * (shared_ffn_hidden > 0 ? shared_ffn_hidden : ffn_hidden);
  }
  [[nodiscard]] bool moe() const { return experts > 1; }

  /// MoE layout (DeepSeek-V3's first_k_dense_replace and moe_layer_freq): layers before
  /// first_dense_layers are dense, and of the rest those whose index (0-based) is a multiple of
  /// moe_layer_freq are MoE layers; the others dense MLPs of dense_ffn_hidden (0: ffn_hidden).
  int first_dense_layers = 0;
  int moe_layer_freq = 1;
  int dense_ffn_hidden = 0;
  [[nodiscard]] bool moe_layer(int i) const {
    return moe() && i >= first_dense_layers && i % moe_layer_freq == 0;
  }
  /// MoE layers among layers [first, first + count).
  [[nodiscard]] int moe_layers(int first, int count) const;

  /// Multi-head latent attention (DeepSeek-V2/V3) when kv_lora_rank > 0: queries through a
  /// q_lora_rank bottleneck (0: projected directly), keys and values from a kv_lora_rank latent
  /// plus one shared qk_rope_dim RoPE key; head_dim() is a query/key head (nope + rope),
  /// v_head_dim a value head. docs/cost-models.md#multi-head-latent-attention.
  int q_lora_rank = 0;
  int kv_lora_rank = 0;
  int qk_rope_dim = 0;
  int v_head_dim = 0;
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
};

/// The model a dense layer of `m` is: its MLP of dense_ffn_hidden, no experts, same attention.
[[nodiscard]] ModelSpec dense_layer_model(const ModelSpec& m);

/// Parameter counts, exact for the shapes above (see docs/cost-models.md#parameters).
struct ParamCount {
  double per_layer = 0;         ///< all experts included
  double per_layer_experts = 0; ///< of which the routed experts' MLPs (0 for a dense model)
  double per_layer_active = 0;  ///< parameters one token uses (top_k experts)
  double embedding = 0;         ///< token (+ position) embedding
  double output = 0;            ///< untied output projection (0 when tied)
  double final_norm = 0;
  double per_dense_layer = 0;  ///< a dense layer of a MoE model (first_dense_layers, moe_layer_freq)
  int dense_layers = 0;        ///< how many of the model's layers are (MoE models; 0 for dense ones)
  /// For the model's own layer count (`layers` = ModelSpec::layers, dense_layers of them dense).
  [[nodiscard]] double total(int layers) const;
  [[nodiscard]] double active(int layers) const;
};
[[nodiscard]] ParamCount count_params(const ModelSpec& m);

/// Rows of the most loaded of `ep` expert-parallel ranks per MoE layer, relative to the balanced
/// rows without padding (tokens·top_k·ep/experts per local expert): the mean over its experts of
/// max(load, capacity_factor) (dropless) or of the capacity (dropping; 1 without a
/// capacity_factor), loads in units of the mean. Under uniform routing exactly max(1,
/// capacity_factor) (dropless) or the capacity. docs/cost-models.md#routing-imbalance.
/// Requires: ep divides experts; expert_load empty or of `experts` entries.
[[nodiscard]] double moe_rank_load(const ModelSpec& m, int ep);
/// The share of routed token-to-expert assignments a dropping router (dropless = false) drops
/// per MoE layer: Σ_i max(0, g_i − c/E) over the experts' shares g_i (expert_load, or 1/E each
/// when uniform), with the capacity c = capacity_factor (1 without one) in units of the mean
/// load. 0 for dense models and dropless routing. docs/cost-models.md#routing-imbalance.
[[nodiscard]] double moe_dropped_fraction(const ModelSpec& m);
/// The expected number of distinct nodes a token's top_k experts sit on, when the expert-
/// parallel ranks, spread evenly over `nodes` nodes, hold the experts in order (experts/nodes
/// on each node), the router picks uniformly (any expert, or, with expert_groups, any of
/// expert_group_topk groups drawn uniformly and then any of their experts) and the picks are
/// distinct: N·(1 − P(a node gets no pick)), hypergeometric. Group-limited routing is counted
/// where the groups nest in the nodes (nodes divides expert_groups) or span whole nodes
/// (expert_groups divides nodes); otherwise as unlimited.
/// 1 on one node. docs/cost-models.md#hierarchical-dispatch.
/// Requires: nodes divides experts.
[[nodiscard]] double moe_nodes_per_token(const ModelSpec& m, int nodes);
/// Zipf shares over `experts` experts: expert i gets (i+1)^-skew / sum_j (j+1)^-skew.
[[nodiscard]] std::vector<double> zipf_load(int experts, double skew);

/// Names of the built-in presets, in a stable order.
[[nodiscard]] std::vector<std::string> preset_names();
/// The preset of that name, or nullopt.
[[nodiscard]] std::optional<ModelSpec> preset(std::string_view name);

}  // namespace hetsim::workload

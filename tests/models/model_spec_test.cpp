#include "models/workload/model_spec.hpp"

#include <gtest/gtest.h>

#include <tuple>

namespace hetsim::workload {
namespace {

double total(const char* name) {
  auto m = preset(name);
  EXPECT_TRUE(m.has_value()) << name;
  return count_params(*m).total(m->layers);
}

// Published sizes; tolerance 0.05 % of the total.
TEST(Presets, ParameterCountsMatchPublishedSizes) {
  // GPT-3: 96·(12h² + 13h) + 50257·h + 2048·h + 2h, h = 12288 -> 174,604,259,328
  EXPECT_NEAR(total("gpt3-175b"), 174'604'259'328.0, 1.0);
  // Llama 3 8B: 32·218,112,000 + 2·128256·4096 + 4096 = 8,030,261,248
  EXPECT_NEAR(total("llama3-8b"), 8'030'261'248.0, 1.0);
  EXPECT_NEAR(total("llama3-70b") / 1e9, 70.6, 0.05);
  EXPECT_NEAR(total("llama3-405b") / 1e9, 405.8, 0.1);
  EXPECT_NEAR(total("mixtral-8x7b") / 1e9, 46.7, 0.05);
}

TEST(Presets, MixtralActiveParameters) {
  auto m = *preset("mixtral-8x7b");
  // attention 41,943,040 + 2 experts·176,160,768 + router 32,768 + norms 8,192 per layer
  // -> 32·394,305,536 + 2·32000·4096 + 4096 = 12,879,925,248
  EXPECT_NEAR(count_params(m).active(m.layers), 12'879'925'248.0, 1.0);
}

// The MoE presets against their publishers' totals and active counts (model cards: Mixtral 8x22B
// "141B, 39B active"; Qwen3-30B-A3B "30.5B in total and 3.3B activated, 29.9B non-embedding";
// Qwen3-235B-A22B "235B, 22B activated, 234B non-embedding"), each also counted by hand.
TEST(Presets, MoePresetsMatchTheirPublishedTotalAndActiveCounts) {
  auto counts = [](const char* name) {
    const ModelSpec m = *preset(name);
    const ParamCount p = count_params(m);
    return std::make_tuple(p.total(m.layers), p.active(m.layers), p.per_layer * m.layers);
  };
  // Mixtral 8x22B per layer: attention 2·6144² + 2·6144·1024 = 88,080,384, experts
  // 8·3·6144·16384 = 2,415,919,104, router 49,152, norms 12,288; embeddings 2·32768·6144.
  auto [mx, mx_active, mx_layers] = counts("mixtral-8x22b");
  EXPECT_NEAR(mx, 56.0 * (88'080'384 + 2'415'919'104.0 + 49'152 + 12'288) + 2.0 * 32768 * 6144 + 6144, 1.0);
  EXPECT_NEAR(mx / 1e9, 141, 0.5);
  EXPECT_NEAR(mx_active / 1e9, 39, 0.5);
  (void)mx_layers;
  // Qwen3-30B-A3B per layer: Q 2048×4096 and O 4096×2048, K and V 2048×512 each, QK-norm 2·128,
  // 128 experts of 3·2048·768, router 2048·128, two norms of 2048.
  auto [q30, q30_active, q30_layers] = counts("qwen3-30b-a3b");
  EXPECT_NEAR(q30_layers, 48.0 * (2.0 * 2048 * 4096 + 2.0 * 2048 * 512 + 256 + 128.0 * 3 * 2048 * 768 + 2048 * 128 + 2 * 2048), 1.0);
  EXPECT_NEAR(q30 / 1e9, 30.5, 0.05);
  EXPECT_NEAR(q30_active / 1e9, 3.3, 0.06);
  EXPECT_NEAR(q30_layers / 1e9, 29.9, 0.05);
  auto [q235, q235_active, q235_layers] = counts("qwen3-235b-a22b");
  EXPECT_NEAR(q235 / 1e9, 235, 0.5);
  EXPECT_NEAR(q235_active / 1e9, 22, 0.5);
  EXPECT_NEAR(q235_layers / 1e9, 234, 0.5);
}

// DeepSeek-V3 (arXiv 2412.19437: "671B total parameters with 37B activated for each token", the
// MTP module's 14 B apart), counted by hand from its config.json:
//   MLA per layer: Q down 7168·1536 + norm 1536 + Q up 1536·128·192 + KV down 7168·(512 + 64)
//     + norm 512 + KV up 512·128·(128 + 128) + O 128·128·7168 = 187,107,328
//   dense layer (first 3): + MLP 3·7168·18432 + 2 norms of 7168 = 583,483,392
//   MoE layer (58): + 257 experts (256 routed + 1 shared) of 3·7168·2048 + router 256·7168
//     + 2 norms = 11,507,286,016; active: 9 experts instead of 257 = 585,318,400
//   embeddings 2·129280·7168, final norm 7168
//   total 671,026,404,352; active 37,552,282,624 (36.63 B without the input embedding, a lookup)
TEST(Presets, DeepSeekV3MatchesItsPublishedTotalAndActiveCounts) {
  const ModelSpec m = *preset("deepseek-v3");
  const ParamCount p = count_params(m);
  EXPECT_EQ(p.dense_layers, 3);
  EXPECT_EQ(m.moe_layers(0, m.layers), 58);
  EXPECT_DOUBLE_EQ(p.per_dense_layer, 583'483'392.0);
  EXPECT_DOUBLE_EQ(p.per_layer, 11'507'286'016.0);
  EXPECT_DOUBLE_EQ(p.per_layer_active, 585'318'400.0);
  EXPECT_DOUBLE_EQ(p.total(m.layers), 671'026'404'352.0);
  EXPECT_DOUBLE_EQ(p.active(m.layers), 37'552'282'624.0);
  EXPECT_NEAR(p.total(m.layers) / 1e9, 671, 0.5);
  EXPECT_NEAR(p.active(m.layers) / 1e9, 37, 0.6);  // "37B": 37.55 with the embedding, 36.63 without
}

// MoE layout: layer i is a MoE layer when i >= first_dense_layers and moe_layer_freq divides i;
// the dense ones are MLPs of dense_ffn_hidden, in the totals and the active counts alike.
TEST(ParamCount, DenseLayersOfAMoeModel) {
  ModelSpec m = *preset("mixtral-8x7b");  // 32 layers
  const ParamCount all = count_params(m);
  m.first_dense_layers = 1;
  m.moe_layer_freq = 2;  // MoE: 2, 4, …, 30 -> 15 layers; dense 17
  m.dense_ffn_hidden = 8192;
  EXPECT_EQ(m.moe_layers(0, 32), 15);
  EXPECT_EQ(m.moe_layers(0, 4), 1);
  EXPECT_FALSE(m.moe_layer(0));
  EXPECT_TRUE(m.moe_layer(2));
  EXPECT_FALSE(m.moe_layer(3));
  const ParamCount p = count_params(m);
  const double dense = all.per_layer - 8 * 3.0 * 4096 * 14336 - 4096.0 * 8 + 3.0 * 4096 * 8192;
  EXPECT_DOUBLE_EQ(p.per_dense_layer, dense);
  EXPECT_DOUBLE_EQ(p.total(32), 15 * all.per_layer + 17 * dense + all.embedding + all.output + all.final_norm);
  EXPECT_DOUBLE_EQ(p.active(32), 15 * all.per_layer_active + 17 * dense + all.embedding + all.output + all.final_norm);
}

// Shared experts are MLPs every token goes through: in the total and in the active count; a
// set head_dim changes only Q and O (and the QK-norm gains).
TEST(ParamCount, SharedExpertsAndHeadDim) {
  ModelSpec m = *preset("mixtral-8x7b");
  const ParamCount routed = count_params(m);
  m.shared_experts = 2;
  m.shared_ffn_hidden = 1024;
  const ParamCount shared = count_params(m);
  const double one = 3.0 * 4096 * 1024;  // SwiGLU: gate, up, down
  EXPECT_DOUBLE_EQ(shared.per_layer - routed.per_layer, 2 * one);
  EXPECT_DOUBLE_EQ(shared.per_layer_active - routed.per_layer_active, 2 * one);
  EXPECT_DOUBLE_EQ(m.shared_width(), 2048);
  ModelSpec d = *preset("tiny");  // h 256, 8 heads of 32, 4 KV heads
  const double before = count_params(d).per_layer;
  d.explicit_head_dim = 64;  // queries 512 wide, K and V 256
  EXPECT_DOUBLE_EQ(d.q_width(), 512);
  EXPECT_DOUBLE_EQ(count_params(d).per_layer - before, 2.0 * 256 * (512 - 256) + 2.0 * 256 * (256 - 128));
}

TEST(Presets, UnknownNameIsNullopt) {
  EXPECT_FALSE(preset("gpt-5").has_value());
  for (const auto& n : preset_names()) EXPECT_TRUE(preset(n).has_value()) << n;
}

TEST(ParamCount, TiedEmbeddingsHaveNoOutputMatrix) {
  ModelSpec m = *preset("tiny");
  m.tied_embeddings = false;
  const double untied = count_params(m).total(m.layers);
  m.tied_embeddings = true;
  EXPECT_DOUBLE_EQ(untied - count_params(m).total(m.layers), double(m.vocab) * m.hidden);
}

TEST(ParamCount, GqaShrinksOnlyKeyAndValue) {
  ModelSpec m = *preset("tiny");  // h 256, 8 heads of 32, 4 KV heads -> kv width 128
  const double gqa = count_params(m).per_layer;
  m.kv_heads = m.heads;
  // K and V grow from 256×128 to 256×256 each: +2·256·128
  EXPECT_DOUBLE_EQ(count_params(m).per_layer - gqa, 2.0 * 256 * 128);
}

// Routing imbalance (docs/cost-models.md#routing-imbalance): the most loaded expert-parallel
// rank's rows per local expert, in units of the balanced mean. 8 experts, shares 0.3 and 0.1 ×7
// (loads 2.4 and 0.8 × 7 in units of the mean); ep 4 puts experts 0-1 on rank 0:
//   dropless, no capacity:    (2.4 + 0.8)/2 = 1.6
//   dropless, capacity 1:     (2.4 + 1.0)/2 = 1.7   (the capacity is the least buffer)
//   dropping, capacity 1.25:  1.25                  (every buffer is the capacity)
//   ep 1: (2.4 + 7·0.8)/8 = 1.0 (dropless: the same rows as balanced)
TEST(MoeRankLoad, TheMostLoadedRankSetsTheRows) {
  ModelSpec m;
  m.experts = 8;
  m.top_k = 2;
  EXPECT_EQ(moe_rank_load(m, 4), 1.0);  // uniform, dropless: exactly the balanced rows
  m.capacity_factor = 1.25;
  EXPECT_EQ(moe_rank_load(m, 4), 1.25);  // uniform: exactly the capacity, either way
  m.dropless = false;
  EXPECT_EQ(moe_rank_load(m, 4), 1.25);
  m.capacity_factor = 0;
  EXPECT_EQ(moe_rank_load(m, 4), 1.0);

  m.expert_load = {0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
  m.dropless = true;
  EXPECT_NEAR(moe_rank_load(m, 4), 1.6, 1e-12);
  EXPECT_NEAR(moe_rank_load(m, 1), 1.0, 1e-12);
  EXPECT_NEAR(moe_rank_load(m, 8), 2.4, 1e-12);
  m.capacity_factor = 1.0;
  EXPECT_NEAR(moe_rank_load(m, 4), 1.7, 1e-12);
  m.capacity_factor = 1.25;
  m.dropless = false;
  EXPECT_EQ(moe_rank_load(m, 4), 1.25);
  // The hot expert on another rank: the worst rank is found wherever it is.
  m.dropless = true;
  m.capacity_factor = 0;
  m.expert_load = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.3};
  EXPECT_NEAR(moe_rank_load(m, 4), 1.6, 1e-12);
}

// Issue 15: the tokens a dropping router drops, by hand. Expert shares 0.3 and 7 × 0.1 with a
// capacity of 1.25 × the mean (0.15625 of the tokens per expert): 0.3 − 0.15625 dropped.
TEST(MoeDroppedTokens, AboveCapacityByHand) {
  ModelSpec m;
  m.experts = 8;
  m.top_k = 2;
  EXPECT_EQ(moe_dropped_fraction(m), 0.0);  // dropless (the default)
  m.dropless = false;
  EXPECT_EQ(moe_dropped_fraction(m), 0.0);  // uniform at a capacity of the mean: none
  m.capacity_factor = 0.5;
  EXPECT_NEAR(moe_dropped_fraction(m), 0.5, 1e-15);  // uniform, half the mean fits
  m.capacity_factor = 1.25;
  m.expert_load = {0.3, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
  EXPECT_NEAR(moe_dropped_fraction(m), 0.3 - 1.25 / 8, 1e-15);
  m.capacity_factor = 0;  // no capacity factor: the mean
  EXPECT_NEAR(moe_dropped_fraction(m), 0.3 - 1.0 / 8, 1e-15);
  m.dropless = true;
  EXPECT_EQ(moe_dropped_fraction(m), 0.0);
  ModelSpec dense;
  dense.dropless = false;
  dense.capacity_factor = 0.5;
  EXPECT_EQ(moe_dropped_fraction(dense), 0.0);
}

// moe_layers in closed form agrees with counting layer by layer, for every layout and range.
TEST(MoeLayers, ClosedFormCountsEveryRange) {
  ModelSpec m;
  m.experts = 8;
  m.layers = 23;
  for (int dense = 0; dense <= 5; ++dense)
    for (int freq = 1; freq <= 4; ++freq) {
      m.first_dense_layers = dense;
      m.moe_layer_freq = freq;
      for (int first = 0; first <= m.layers; ++first)
        for (int count = 0; first + count <= m.layers; ++count) {
          int n = 0;
          for (int i = first; i < first + count; ++i) n += m.moe_layer(i) ? 1 : 0;
          ASSERT_EQ(m.moe_layers(first, count), n) << dense << " " << freq << " " << first << " " << count;
        }
    }
}

// Zipf shares: i^-s normalised. s = 1 over 4 experts: 1, 1/2, 1/3, 1/4 over 25/12.
TEST(MoeRankLoad, ZipfShares) {
  const auto z = zipf_load(4, 1.0);
  ASSERT_EQ(z.size(), 4u);
  EXPECT_NEAR(z[0], 12.0 / 25, 1e-15);
  EXPECT_NEAR(z[1], 6.0 / 25, 1e-15);
  EXPECT_NEAR(z[2], 4.0 / 25, 1e-15);
  EXPECT_NEAR(z[3], 3.0 / 25, 1e-15);
  for (double x : zipf_load(8, 0.0)) EXPECT_NEAR(x, 1.0 / 8, 1e-15);
}

}  // namespace
}  // namespace hetsim::workload

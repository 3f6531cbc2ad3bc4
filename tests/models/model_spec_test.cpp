#include "models/workload/model_spec.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hetsim::workload

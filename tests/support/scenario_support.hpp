#pragma once
// Test helpers: the built-in catalogue, scenarios from strings, and a minimal valid scenario.

#include <gtest/gtest.h>

#include <string>

#include "models/base/result.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/scenario_reader.hpp"

namespace hetsim::test {

inline const hw::Catalog& catalog() {
  static const hw::Catalog cat = [] {
    auto c = io::builtin_catalog();
    if (!c) {
      for (const auto& d : c.errors()) ADD_FAILURE() << to_string(d);
      return hw::Catalog{};
    }
    return *c;
  }();
  return cat;
}

inline Result<Scenario> parse(const std::string& text, const std::string& file = "test.toml") {
  return io::parse_scenario(text, file, catalog());
}

/// A small valid scenario: tiny model, 2 nodes of 8 H100, TP 2 · PP 2 · DP 4.
inline std::string minimal(const std::string& parallel = "tp = 2\npp = 2\ndp = 4\nmicro_batch = 1\n") {
  return "schema = 1\n"
         "[model]\npreset = \"tiny\"\n"
         "[training]\nglobal_batch = 16\nseq_len = 512\nprecision = \"bf16\"\n"
         "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
         "[parallel]\n" + parallel;
}

inline std::string all_errors(const Diagnostics& d) {
  std::string out;
  for (const auto& x : d) out += to_string(x) + "\n";
  return out;
}

/// The scenario of `text`, or an empty one and a test failure with the reader's messages.
inline Scenario load(const std::string& text) {
  auto s = parse(text);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : all_errors(s.errors()));
  return s.ok() ? *s : Scenario{};
}

}  // namespace hetsim::test

#include <gtest/gtest.h>

#include "sim/io/catalog_reader.hpp"
#include "sim/report/estimate_report.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

TEST(Catalog, HasEveryRequiredDevice) {
  const auto& cat = test::catalog();
  for (const char* name : {"v100-sxm2-32gb", "a100-sxm4-40gb", "a100-sxm4-80gb", "a100-pcie-80gb",
                           "h100-sxm5", "h100-pcie", "h200-sxm", "b200", "l40s", "mi250x", "mi300x",
                           "tpu-v4", "tpu-v5e", "tpu-v5p", "gaudi2", "gaudi3"})
    EXPECT_NE(cat.find_device(name), nullptr) << name;
}

TEST(Catalog, HasEveryRequiredLink) {
  const auto& cat = test::catalog();
  for (const char* name : {"nvlink3", "nvlink4", "nvlink5", "pcie4", "pcie5", "xgmi-mi250x",
                           "xgmi-mi300x", "ici-v4", "ici-v5p", "ib-hdr-200", "ib-ndr-400",
                           "roce-100", "roce-200", "roce-400"})
    EXPECT_NE(cat.find_link(name), nullptr) << name;
}

TEST(Catalog, EveryDeviceIsCompleteAndSourced) {
  const auto& cat = test::catalog();
  for (const auto& d : cat.devices) {
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(d.peak_for(hw::Dtype::Bf16) || d.peak_for(hw::Dtype::Fp16));
    EXPECT_GT(d.memory.v, 0);
    EXPECT_GT(d.memory_bandwidth.v, 0);
    EXPECT_GT(d.tdp.v, 0);
    EXPECT_GT(d.price_usd_per_hour, 0);
    EXPECT_NE(cat.find_link(d.node.fabric), nullptr) << d.node.fabric;
    EXPECT_NE(cat.find_link(d.node.nic), nullptr) << d.node.nic;
    EXPECT_TRUE(d.sources.count("peak")) << "no source for the peak rates";
    EXPECT_GT(d.efficiency.gemm, 0.3);
    EXPECT_LE(d.efficiency.gemm, 1.0);
    // An fp8 main loop is given with the fp8 peak it applies to, and its source says where from.
    if (d.efficiency.gemm_fp8 > 0) {
      EXPECT_TRUE(d.peak_for(hw::Dtype::Fp8).has_value()) << d.name;
      EXPECT_NE(d.sources.at("efficiency").find("gemm_fp8"), std::string::npos) << d.name;
    }
    // The hierarchical dispatch kernels' own rate, where given, is sourced too.
    if (d.efficiency.dispatch_bandwidth.v > 0) {
      EXPECT_NE(d.sources.at("efficiency").find("dispatch_bandwidth"), std::string::npos) << d.name;
    }
    // So is the backward's precise-accumulation main loop, never above the fast one.
    if (d.efficiency.gemm_fp8_precise > 0) {
      EXPECT_GT(d.efficiency.gemm_fp8, 0) << d.name;
      EXPECT_LE(d.efficiency.gemm_fp8_precise, d.efficiency.gemm_fp8) << d.name;
      EXPECT_NE(d.sources.at("efficiency").find("gemm_fp8_precise"), std::string::npos) << d.name;
    }
  }
  for (const auto& l : cat.links) {
    EXPECT_GT(l.bandwidth.v, 0) << l.name;
    EXPECT_FALSE(l.source.empty()) << l.name;
  }
}

// Scenarios are read against the catalogue without its sources (half the parse): every figure
// the same as the whole catalogue's, sources empty.
TEST(Catalog, TheFiguresAloneAreTheWholeCatalogueWithoutItsSources) {
  auto whole = io::builtin_catalog();
  auto figures = io::builtin_catalog(false);
  ASSERT_TRUE(whole.ok());
  ASSERT_TRUE(figures.ok());
  ASSERT_EQ(figures->devices.size(), whole->devices.size());
  ASSERT_EQ(figures->links.size(), whole->links.size());
  std::size_t cited = 0;
  for (auto& d : whole->devices) {
    cited += d.sources.size();
    d.sources.clear();
  }
  EXPECT_GT(cited, whole->devices.size() * 4);
  for (const auto& d : figures->devices) {
    EXPECT_TRUE(d.sources.empty()) << d.name;
    EXPECT_TRUE(d.builtin) << d.name;  // whose sources the whole catalogue has
  }
  EXPECT_EQ(report::catalog_json(*figures), report::catalog_json(*whole));
  // A user's file that reuses a built-in name replaces the device, provenance included.
  hw::Catalog mine = *figures;
  const std::string text =
      "[[device]]\nname = \"h100-sxm5\"\npeak = { bf16 = \"100TFLOPS\" }\nmemory = \"8GiB\"\n"
      "memory_bandwidth = \"1TB/s\"\nnode = { devices = 8, fabric = \"nvlink4\", nics = 8, nic = \"ib-ndr-400\" }\n";
  EXPECT_EQ(test::all_errors(io::read_catalog_text(text, "mine.toml", mine)), "");
  ASSERT_NE(mine.find_device("h100-sxm5"), nullptr);
  EXPECT_FALSE(mine.find_device("h100-sxm5")->builtin);
}

TEST(Catalog, H100FiguresMatchTheDatasheet) {
  const auto* d = test::catalog().find_device("h100-sxm5");
  ASSERT_NE(d, nullptr);
  EXPECT_DOUBLE_EQ(d->peak_for(hw::Dtype::Bf16)->v, 989e12);
  EXPECT_DOUBLE_EQ(d->peak_for(hw::Dtype::Fp8)->v, 1979e12);
  EXPECT_DOUBLE_EQ(d->memory.v, 80 * kGiB);
  EXPECT_DOUBLE_EQ(d->memory_bandwidth.v, 3.35e12);
  EXPECT_EQ(d->node.devices, 8);
  EXPECT_FALSE(test::catalog().find_device("v100-sxm2-32gb")->peak_for(hw::Dtype::Bf16).has_value());
}

TEST(Catalog, BrokenCatalogTextIsReported) {
  hw::Catalog cat;
  auto d = io::read_catalog_text("[[device]]\nname = \"x\"\nmemory = 80\n", "extra.toml", cat);
  ASSERT_FALSE(d.empty());
  EXPECT_NE(test::all_errors(d).find("extra.toml:3:10"), std::string::npos) << test::all_errors(d);
}

TEST(Catalog, OutOfRangeEfficienciesAreRejectedWithTheirKey) {
  // A device whose efficiency table has a unit mistake (a tile taking 5 ms), a negative SM
  // count and a slow-down of 95 %: each is named with file:line:col and its key.
  hw::Catalog cat = test::catalog();
  const std::string text =
      "[[device]]\nname = \"x\"\npeak = { bf16 = \"100TFLOPS\" }\nmemory = \"8GiB\"\n"
      "memory_bandwidth = \"1TB/s\"\nnode = { devices = 8, fabric = \"nvlink4\", nics = 8, nic = \"ib-ndr-400\" }\n"
      "efficiency = { tile_overhead = \"5ms\", sms = -1, overlap_slowdown = 0.95, attention_half_seq = -4, "
      "attention_bwd = 0, attention_noncausal = 5, attention_head_half = -1, gemm_fp8 = 1.3, attention_fa2 = 1.5, "
      "attention_bwd_wide = 1.2, dispatch_bandwidth = \"0GB/s\" }\n";
  auto d = io::read_catalog_text(text, "bad.toml", cat);
  const std::string all = test::all_errors(d);
  for (const char* key : {"efficiency.tile_overhead", "efficiency.sms", "efficiency.overlap_slowdown",
                          "efficiency.attention_half_seq", "efficiency.attention_bwd",
                          "efficiency.attention_noncausal", "efficiency.attention_head_half", "efficiency.gemm_fp8",
                          "efficiency.attention_fa2", "efficiency.attention_bwd_wide", "efficiency.dispatch_bandwidth"})
    EXPECT_NE(all.find(key), std::string::npos) << key << " in\n" << all;
  EXPECT_NE(all.find("bad.toml:7:"), std::string::npos) << all;
}

// The backward's precise-accumulation fp8 main loop: out of range, or above the fast one it
// cannot beat (gemm_fp8, else gemm), is named with file:line:col and its key; below it, read.
TEST(Catalog, Fp8PreciseMainLoopIsCheckedAgainstTheFastOne) {
  hw::Catalog cat = test::catalog();
  auto text = [](const std::string& eff) {
    return "[[device]]\nname = \"x\"\npeak = { bf16 = \"100TFLOPS\", fp8 = \"200TFLOPS\" }\nmemory = \"8GiB\"\n"
           "memory_bandwidth = \"1TB/s\"\nnode = { devices = 8, fabric = \"nvlink4\", nics = 8, nic = \"ib-ndr-400\" }\n"
           "efficiency = { " + eff + " }\n";
  };
  for (const char* eff : {"gemm_fp8 = 0.7, gemm_fp8_precise = 0.75", "gemm = 0.6, gemm_fp8_precise = 0.65",
                          "gemm_fp8 = 0.7, gemm_fp8_precise = 0"}) {
    auto d = io::read_catalog_text(text(eff), "bad.toml", cat);
    const std::string all = test::all_errors(d);
    EXPECT_NE(all.find("bad.toml:7:"), std::string::npos) << eff << ": " << all;
    EXPECT_NE(all.find("efficiency.gemm_fp8_precise"), std::string::npos) << eff << ": " << all;
  }
  auto ok = io::read_catalog_text(text("gemm_fp8 = 0.7, gemm_fp8_precise = 0.6"), "good.toml", cat);
  EXPECT_EQ(test::all_errors(ok), "");
  const hw::DeviceSpec* x = cat.find_device("x");
  ASSERT_NE(x, nullptr);
  EXPECT_DOUBLE_EQ(x->efficiency.backward_main_loop(hw::Dtype::Fp8), 0.6);
  EXPECT_DOUBLE_EQ(x->efficiency.main_loop(hw::Dtype::Fp8), 0.7);
  EXPECT_DOUBLE_EQ(x->efficiency.backward_main_loop(hw::Dtype::Bf16), x->efficiency.gemm);
}

// measured_gemms (a calibrated profile's timed GEMMs): read with their format and time; a
// GEMM faster than its format's peak, in a format without a peak, measured twice, with a
// non-positive dimension or time, or without its time is named with file:line:col and key.
TEST(Catalog, MeasuredGemmsAreReadAndCheckedOneByOne) {
  const std::string head =
      "[[device]]\nname = \"x\"\npeak = { fp32 = \"1TFLOPS\" }\nmemory = \"8GiB\"\n"
      "memory_bandwidth = \"100GB/s\"\nnode = { devices = 1, fabric = \"nvlink4\", nics = 1, nic = \"ib-ndr-400\" }\n";
  {
    hw::Catalog cat = test::catalog();
    auto d = io::read_catalog_text(head + "measured_gemms = [{ m = 1024, n = 512, k = 256, dtype = \"fp32\", time = \"300us\" }]\n",
                                   "ok.toml", cat);
    ASSERT_TRUE(d.empty()) << test::all_errors(d);
    const auto* x = cat.find_device("x");
    ASSERT_NE(x, nullptr);
    ASSERT_EQ(x->measured_gemms.size(), 1u);
    EXPECT_EQ(x->measured_gemms[0].m, 1024);
    EXPECT_EQ(x->measured_gemms[0].n, 512);
    EXPECT_EQ(x->measured_gemms[0].k, 256);
    EXPECT_EQ(x->measured_gemms[0].dtype, hw::Dtype::Fp32);
    EXPECT_DOUBLE_EQ(x->measured_gemms[0].time.v, 300e-6);
  }
  hw::Catalog cat = test::catalog();
  // 2·1024·512·256 = 268 MFLOP in 100 us is 2.7 TFLOP/s, above the 1 TFLOP/s peak.
  const std::string text = head +
                           "measured_gemms = [\n"
                           "  { m = 1024, n = 512, k = 256, dtype = \"fp32\", time = \"100us\" },\n"
                           "  { m = 64, n = 64, k = 64, dtype = \"bf16\", time = \"1ms\" },\n"
                           "  { m = 64, n = 64, k = 64, dtype = \"fp32\", time = \"1ms\" },\n"
                           "  { m = 64, n = 64, k = 64, dtype = \"fp32\", time = \"2ms\" },\n"
                           "  { m = 0, n = 64, k = 64, dtype = \"fp32\", time = \"1ms\" },\n"
                           "  { m = 32, n = 64, k = 64, dtype = \"fp32\", time = \"-1ms\" },\n"
                           "  { m = 32, n = 32, k = 64, dtype = \"fp32\" },\n"
                           "]\n";
  const std::string all = test::all_errors(io::read_catalog_text(text, "bad.toml", cat));
  for (const char* want : {"bad.toml:8:", "measured_gemms[0].time", "above the device's fp32 peak",  //
                           "bad.toml:9:", "measured_gemms[1].dtype", "no bf16 peak",                //
                           "bad.toml:11:", "measured_gemms[3]", "measured twice",                   //
                           "bad.toml:12:", "measured_gemms[4].m",                                   //
                           "bad.toml:13:", "measured_gemms[5].time",                                //
                           "measured_gemms[6].time"})
    EXPECT_NE(all.find(want), std::string::npos) << want << " in\n" << all;
  EXPECT_EQ(all.find("measured_gemms[2]"), std::string::npos) << all;
}

TEST(Catalog, GpuDevicesCarryATileModelAndSourcesForIt) {
  for (const char* name : {"a100-sxm4-80gb", "h100-sxm5", "mi300x"}) {
    const auto* d = test::catalog().find_device(name);
    ASSERT_NE(d, nullptr);
    EXPECT_GT(d->efficiency.sms, 0) << name;
    EXPECT_GT(d->efficiency.attention_half_seq, 0) << name;
    EXPECT_NE(d->sources.at("efficiency").find("ile model"), std::string::npos) << name;
  }
}

}  // namespace
}  // namespace hetsim

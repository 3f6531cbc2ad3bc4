#include "models/base/units.hpp"

#include <gtest/gtest.h>

namespace hetsim {
namespace {

double parse_ok(std::string_view s, Dimension d) {
  ParsedQuantity q = parse_quantity(s, d);
  EXPECT_TRUE(q.ok()) << s << ": " << q.error;
  return q.value;
}

TEST(ParseQuantity, BytesDecimalAndBinary) {
  EXPECT_DOUBLE_EQ(parse_ok("80GiB", Dimension::Size), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("80GB", Dimension::Size), 80e9);
  EXPECT_DOUBLE_EQ(parse_ok("512MiB", Dimension::Size), 512.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("1.5 TB", Dimension::Size), 1.5e12);
}

TEST(ParseQuantity, BandwidthBytesAndBits) {
  EXPECT_DOUBLE_EQ(parse_ok("3.35TB/s", Dimension::Bandwidth), 3.35e12);
  EXPECT_DOUBLE_EQ(parse_ok("450GBps", Dimension::Bandwidth), 450e9);
  // 400 Gb/s = 400e9 bits/s = 50e9 bytes/s
  EXPECT_DOUBLE_EQ(parse_ok("400Gbps", Dimension::Bandwidth), 50e9);
  EXPECT_DOUBLE_EQ(parse_ok("200Gb/s", Dimension::Bandwidth), 25e9);
}

TEST(ParseQuantity, TimeRateAndPower) {
  EXPECT_DOUBLE_EQ(parse_ok("2us", Dimension::Time), 2e-6);
  EXPECT_DOUBLE_EQ(parse_ok("3.4µs", Dimension::Time), 3.4e-6);
  EXPECT_DOUBLE_EQ(parse_ok("1.5ms", Dimension::Time), 1.5e-3);
  EXPECT_DOUBLE_EQ(parse_ok("989TFLOPS", Dimension::Compute), 989e12);
  EXPECT_DOUBLE_EQ(parse_ok("2.25PFLOP/s", Dimension::Compute), 2.25e15);
  EXPECT_DOUBLE_EQ(parse_ok("700W", Dimension::Power), 700);
  EXPECT_DOUBLE_EQ(parse_ok("1kW", Dimension::Power), 1000);
}

TEST(ParseQuantity, RejectsBareNumbersWithAHint) {
  ParsedQuantity q = parse_quantity("80", Dimension::Size);
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.error.find("no unit"), std::string::npos);
  EXPECT_NE(q.hint.find("GiB"), std::string::npos);
}

TEST(ParseQuantity, UnknownUnitSuggestsTheRightCase) {
  ParsedQuantity q = parse_quantity("400gbps", Dimension::Bandwidth);
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.hint.find("Gbps"), std::string::npos) << q.hint;
}

TEST(ParseQuantity, SizeUnitForABandwidthSaysPerSecond) {
  ParsedQuantity q = parse_quantity("400GB", Dimension::Bandwidth);
  EXPECT_FALSE(q.ok());
  EXPECT_NE(q.hint.find("GB/s"), std::string::npos) << q.hint;
}

TEST(ParseQuantity, RejectsGarbageAndNegatives) {
  EXPECT_FALSE(parse_quantity("fast", Dimension::Bandwidth).ok());
  EXPECT_FALSE(parse_quantity("", Dimension::Time).ok());
  EXPECT_FALSE(parse_quantity("-3GB", Dimension::Size).ok());
  EXPECT_FALSE(parse_quantity("3GB", Dimension::Time).ok());
}

TEST(FormatQuantity, RoundTripsThroughParse) {
  // format_bytes(80 GiB) = "80 GiB", which parses back to the same value.
  for (double v : {80.0 * kGiB, 512.0 * 1024 * 1024, 1536.0}) {
    const std::string s = format_bytes(Bytes{v});
    EXPECT_NEAR(parse_ok(s, Dimension::Size), v, v * 1e-3) << s;
  }
  EXPECT_EQ(format_duration(Duration{0.0123}), "12.3 ms");
  EXPECT_EQ(format_duration(Duration{508}), "508 s");
  EXPECT_EQ(format_duration(Duration{1800}), "30 min");
  EXPECT_EQ(format_duration(Duration{3 * 3600}), "3 h");
  EXPECT_EQ(format_duration(Duration{999 * 86400.0}), "999 days");
  EXPECT_EQ(format_duration(Duration{1510 * 86400.0}), "4.13 years");
  EXPECT_EQ(format_bandwidth(BytesPerSec{3.35e12}), "3.35 TB/s");
}

TEST(Quantity, TypedArithmetic) {
  const Duration t = Bytes{1e9} / BytesPerSec{1e11};  // 10 ms
  EXPECT_DOUBLE_EQ(t.v, 0.01);
  const Duration c = Flops{989e12} / FlopRate{989e12};
  EXPECT_DOUBLE_EQ(c.v, 1.0);
  EXPECT_DOUBLE_EQ((Bytes{3} + Bytes{4} * 2.0).v, 11.0);
}

}  // namespace
}  // namespace hetsim

#include "sim/io/detail/variability_reader.hpp"

#include "sim/io/variability_reader.hpp"

#include <cstdint>
#include <cstdio>
#include <string>

namespace hetsim::io {

int parse_rank_by(std::string_view text) {
  if (text == "nominal") return 0;
  if (text.size() < 2 || text.size() > 4 || text[0] != 'p') return -1;
  int p = 0;
  for (char c : text.substr(1)) {
    if (c < '0' || c > '9') return -1;
    p = p * 10 + (c - '0');
  }
  return p >= 1 && p <= 100 ? p : -1;
}

namespace detail {
namespace {

constexpr int kMaxSteps = 100000;

std::string g6(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

void read_variability(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "variability");
  if (!t) return;
  r.check_keys(*t, {"seed", "steps", "slow_fraction", "slow_devices", "slow_factor", "sigma", "jitter", "rank_by"});
  VariabilitySpec v;
  v.seed = s.seed;
  auto bad = [&](const char* key, const std::string& msg, const std::string& hint) {
    r.error(r.loc(r.node(*t, key)), r.key_path(*t, key), msg, hint);
  };
  if (auto x = r.integer(*t, "seed", 0, INT64_MAX)) v.seed = static_cast<std::uint64_t>(*x);
  if (const toml::node* n = r.node(*t, "steps"); n && n->is_integer() &&
                                                 (n->as_integer()->get() < 1 || n->as_integer()->get() > kMaxSteps))
    bad("steps", "steps = " + std::to_string(n->as_integer()->get()) + " is not a number of steps to sample",
        "1 to 100000 (each is one run of the engine); for more, sweep variability.seed");
  else if (auto x = r.integer(*t, "steps", 1, kMaxSteps))
    v.steps = static_cast<int>(*x);
  constexpr double kAny = 1e300;
  if (auto x = r.number(*t, "slow_fraction", -kAny, kAny)) {
    if (*x < 0 || *x > 1)
      bad("slow_fraction", "slow_fraction = " + g6(*x) + " is not a probability",
          "0 to 1: the chance that a device is a straggler (0.02 = 2 % of the devices)");
    else
      v.slow_fraction = *x;
  }
  if (const toml::node* n = r.node(*t, "slow_devices"); n && n->is_integer() && n->as_integer()->get() < 0)
    bad("slow_devices", "slow_devices = " + std::to_string(n->as_integer()->get()) + " is negative",
        "the number of straggling devices, 0 or more");
  else if (auto x = r.integer(*t, "slow_devices", 0, INT32_MAX)) {
    int devices = 0;
    for (const auto& p : s.cluster.pools) devices += p.devices();
    if (*x > devices)
      bad("slow_devices", "slow_devices = " + std::to_string(*x) + " but the cluster has " +
                              std::to_string(devices) + " devices",
          "at most the devices of the cluster (or slow_fraction for a share of them)");
    else
      v.slow_devices = static_cast<int>(*x);
  }
  if (r.node(*t, "slow_fraction") && r.node(*t, "slow_devices"))
    bad("slow_devices", "slow_fraction and slow_devices both say how many devices straggle",
        "give one: slow_fraction = 0.01 (each device with that chance) or slow_devices = 3 (exactly three)");
  if (auto x = r.number(*t, "slow_factor", -kAny, kAny)) {
    if (*x < 1)
      bad("slow_factor", "slow_factor = " + g6(*x) + " would make stragglers faster",
          "1 or more: a straggler's compute takes slow_factor × its nominal time (1.3 = 30 % slower); "
          "sigma spreads speeds both ways");
    else if (*x > 100)
      bad("slow_factor", "slow_factor = " + g6(*x) + " is not a straggler but a dead device", "1 to 100");
    else
      v.slow_factor = *x;
  } else if ((r.node(*t, "slow_fraction") || r.node(*t, "slow_devices")) && !r.failed()) {
    bad(r.node(*t, "slow_fraction") ? "slow_fraction" : "slow_devices", "stragglers without a slow_factor are not slow",
        "add slow_factor = 1.3 (their compute 30 % slower)");
  }
  for (const char* key : {"sigma", "jitter"}) {
    auto x = r.number(*t, key, -kAny, kAny);
    if (!x) continue;
    if (*x < 0 || *x > 1)
      bad(key, std::string(key) + " = " + g6(*x) + (*x < 0 ? " is negative" : " is beyond any measured spread"),
          "0 to 1: the standard deviation of the log of the factor (0.03 ≈ ±3 %)");
    else
      (key[0] == 's' ? v.sigma : v.jitter) = *x;
  }
  if (auto x = r.string(*t, "rank_by")) {
    const int p = parse_rank_by(*x);
    if (p < 0)
      bad("rank_by", "rank_by = \"" + *x + "\" is not a percentile", "\"nominal\", or \"p50\", \"p90\", \"p99\" (p1 to p100)");
    else
      v.rank_by = p;
  }
  s.variability = v;
}

}  // namespace detail
}  // namespace hetsim::io

#pragma once
// A scenario file's sections, each read by a file of its own (private to sim/io):
// scenario_model.cpp reads [model] and [training], scenario_cluster.cpp [cluster] and
// [purchase], scenario_parallel.cpp [parallel] (and validate_plan); scenario_reader.cpp reads
// the rest and puts the Scenario together (read_scenario_document). Each reports its problems
// through the TomlReader it is given.

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"
#include "sim/io/detail/toml_reader.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io::detail {

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

inline int as_int(std::optional<std::int64_t> v, int fallback) {
  return v ? static_cast<int>(*v) : fallback;
}

// [model] (scenario_model.cpp).
void read_model(TomlReader& r, const TableRef& root, Scenario& s);
// [training] (scenario_model.cpp).
void read_training(TomlReader& r, const TableRef& root, Scenario& s);
// The message and the hint of the error an expert-only key set on a dense model gets
// (scenario_model.cpp).
std::string dense_model_message(std::string_view key, int experts);
std::string dense_model_hint(std::string_view key);
// The reader's error for an expert-only key set on a dense model.
void refuse_on_dense(TomlReader& r, const TableRef& t, const Scenario& s, const char* key);

// [cluster], its pools and network, and [purchase] (scenario_cluster.cpp).
void read_cluster(TomlReader& r, const TableRef& root, hw::Catalog& cat, Scenario& s);

// The keys [parallel] may have (scenario_parallel.cpp).
extern const std::vector<std::string> kParallelKeys;
// The framework keys of [parallel] into `p` (how the framework runs, not the layout): read for
// every command, `hetsim plan` and `hetsim buy` included (Scenario::framework).
void read_framework(TomlReader& r, const TableRef& t, const Scenario& s, plan::Plan& p);
/// [parallel] recompute_modules into p.recompute_modules: with `searched` (the planner picks
/// recompute) whatever [parallel] recompute says; otherwise only with recompute = "selective".
void read_recompute_modules(TomlReader& r, const TableRef& t, const Scenario& s, plan::Plan& p, bool searched);
// [parallel] as a plan: tp, pp and dp, or [[parallel.replicas]]; `where` becomes the table's
// place (scenario_parallel.cpp).
std::optional<plan::Plan> read_parallel(TomlReader& r, const TableRef& root, const Scenario& s,
                                        SourceLoc& where);

}  // namespace hetsim::io::detail

#pragma once
// The names a plan's enumerations take in its files (private to sim/io): the plan JSON
// (plan_json.cpp) and the [parallel] table of a written scenario (scenario_writer.cpp) use the
// same words as the scenario reader's [parallel].

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "models/cost/collectives.hpp"
#include "models/cost/memory.hpp"
#include "sim/plan/plan.hpp"

namespace hetsim::io::detail {

/// An enumeration's names, each with its value.
template <class E>
struct Names {
  std::vector<std::pair<std::string, E>> all;
  /// The name of `e` ("?" for a value the table lacks).
  [[nodiscard]] std::string name(E e) const {
    for (const auto& [n, v] : all)
      if (v == e) return n;
    return "?";
  }
  /// The value named `n`, if any.
  [[nodiscard]] std::optional<E> find(std::string_view n) const {
    for (const auto& [name, v] : all)
      if (name == n) return v;
    return std::nullopt;
  }
};

inline const Names<cost::Schedule> kSchedules{{{"gpipe", cost::Schedule::GPipe},
                                               {"1f1b", cost::Schedule::OneFOneB},
                                               {"interleaved", cost::Schedule::Interleaved}}};
inline const Names<cost::Recompute> kRecompute{{{"none", cost::Recompute::None},
                                                {"selective", cost::Recompute::Selective},
                                                {"full", cost::Recompute::Full},
                                                {"selective_op", cost::Recompute::SelectiveOp}}};
/// Megatron-Core's --recompute-modules names (workload::recompute_module_name).
inline const Names<workload::RecomputeModule> kRecomputeModules = [] {
  Names<workload::RecomputeModule> n;
  for (auto m : workload::kRecomputeModuleList) n.all.emplace_back(std::string(workload::recompute_module_name(m)), m);
  return n;
}();
/// The names of the modules in `set`, in kRecomputeModules' order.
inline std::vector<std::string> recompute_module_names(workload::RecomputeModules set) {
  std::vector<std::string> out;
  for (const auto& [n, m] : kRecomputeModules.all)
    if (workload::has_module(set, m)) out.push_back(n);
  return out;
}
/// Why recompute_modules cannot stand beside recompute `r` (not "selective"), for the scenario
/// reader and the plan files alike.
inline std::string modules_without_selective(cost::Recompute r) {
  return "recompute_modules chooses what selective recompute re-runs, and recompute is \"" + kRecompute.name(r) + "\"";
}

/// Every module name, for messages.
inline std::vector<std::string> recompute_module_names() {
  workload::RecomputeModules all = 0;
  for (auto m : workload::kRecomputeModuleList) all = static_cast<workload::RecomputeModules>(all | workload::module_bit(m));
  return recompute_module_names(all);
}

inline const Names<cost::Algorithm> kAlgorithms{{{"auto", cost::Algorithm::Auto},
                                                 {"ring", cost::Algorithm::Ring},
                                                 {"tree", cost::Algorithm::Tree},
                                                 {"hierarchical", cost::Algorithm::Hierarchical}}};
inline const Names<plan::Plan::EpDispatch> kEpDispatch{{{"all-to-all", plan::Plan::EpDispatch::AllToAll},
                                                        {"hierarchical", plan::Plan::EpDispatch::Hierarchical}}};
inline const Names<plan::Plan::CpComm> kCpComm{{{"p2p", plan::Plan::CpComm::Ring},
                                                {"all_gather", plan::Plan::CpComm::AllGather},
                                                {"a2a", plan::Plan::CpComm::AllToAll}}};

}  // namespace hetsim::io::detail

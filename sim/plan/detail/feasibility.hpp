#pragma once
// Whether a plan's shape can run at all, before it is priced (private to sim/plan).

#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::planner::detail {

/// A plan whose traffic leaves a node from a pool without NICs (a send to another pool, replicas
/// in several groups), or that puts a stage on a device without the training's number format,
/// cannot run: validate_plan refuses it, the search never prices it.
[[nodiscard]] bool nic_paths_ok(const Scenario& s, const plan::Plan& p);

}  // namespace hetsim::planner::detail

#pragma once
// The order of a stage's pipeline units (private to sim/schedule): which forward and backward
// unit a stage runs when, and which chunk and micro-batch a unit is.

#include <utility>
#include <vector>

#include "models/cost/memory.hpp"

namespace hetsim::schedule::detail {

// The order in which one stage runs its forward (F) and backward (B) units: pairs of
// (is_backward, unit index). Units are numbered per schedule (see unit_of below). With `runs` > 1
// the mb micro-batches run as that many schedules of mb/runs each, one after another (each
// filling and draining), numbered on: run r's units follow run r − 1's.
// Requires: runs divides mb; interleaved (v > 1), stages divides mb/runs.
std::vector<std::pair<bool, int>> stage_order(cost::Schedule sch, int stage, int stages, int mb, int v, int runs = 1);

// Unit u of a stage → (local chunk, micro-batch). Interleaved: groups of p micro-batches per
// chunk, forward chunks ascending and backward chunks descending (Megatron-LM).
std::pair<int, int> unit_of(bool backward, int u, int stages, int v);

}  // namespace hetsim::schedule::detail

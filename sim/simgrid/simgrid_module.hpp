#pragma once
// The simgrid engine as a module that `hetsim` loads only when a command asks for it
// (`simulate --engine simgrid`): SimGrid and the libraries it pulls in (ns-3, Boost) then cost
// nothing to every other command's start (about 40 ms and 30 MB of a `hetsim estimate`).
// SimGrid-free; the module itself is simgrid_module.cpp.

#include <string>

#include "models/base/result.hpp"
#include "sim/simgrid/simgrid_engine.hpp"

namespace hetsim::engine {

/// What the module offers. `abi` guards against a module from another build.
struct SimgridModule {
  int abi = 0;
  Result<SimgridRun> (*run)(const schedule::TaskGraph& g, const hw::ClusterSpec& cluster) = nullptr;
};

/// Bumped whenever SimgridModule, SimgridRun or the types they carry change.
inline constexpr int kSimgridModuleAbi = 1;

/// The module's file name; it is built next to the executables.
inline constexpr const char* kSimgridModuleFile = "libhetsim_simgrid.so";

/// Opens the module next to the running executable (once per process). An environment error
/// (the file is missing or from another build) comes back with a hint.
[[nodiscard]] Result<const SimgridModule*> load_simgrid_module();

}  // namespace hetsim::engine

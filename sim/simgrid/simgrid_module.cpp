// The simgrid engine's module entry point (see simgrid_module.hpp).

#include "sim/simgrid/simgrid_module.hpp"

extern "C" __attribute__((visibility("default"))) const hetsim::engine::SimgridModule* hetsim_simgrid_module() {
  static const hetsim::engine::SimgridModule m{hetsim::engine::kSimgridModuleAbi, &hetsim::engine::run_simgrid};
  return &m;
}

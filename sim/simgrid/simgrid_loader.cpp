// Opens the simgrid engine module (simgrid_module.hpp) with dlopen, next to the executable.

#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <optional>

#include "sim/simgrid/simgrid_module.hpp"

namespace hetsim::engine {

Result<const SimgridModule*> load_simgrid_module() {
  static std::once_flag once;
  static std::optional<Result<const SimgridModule*>> loaded;
  std::call_once(once, [] {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const auto path = (ec ? std::filesystem::path(".") : exe.parent_path()) / kSimgridModuleFile;
    auto fail = [&](const std::string& what) {
      Diagnostic d;
      d.where.file = path.string();
      d.message = "cannot load the simgrid engine: " + what;
      d.hint = "it is built next to hetsim with -DHETSIM_WITH_SIMGRID=ON; or use --engine native";
      d.kind = ErrorKind::Environment;
      loaded.emplace(Diagnostics{d});
    };
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      fail(e != nullptr ? e : "dlopen failed");
      return;
    }
    using Entry = const SimgridModule* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "hetsim_simgrid_module"));
    const SimgridModule* m = entry != nullptr ? entry() : nullptr;
    if (m == nullptr || m->abi != kSimgridModuleAbi || m->run == nullptr) {
      fail("the module is from another build (entry point or ABI differs)");
      return;
    }
    loaded.emplace(m);
  });
  return *loaded;
}

}  // namespace hetsim::engine

// hetsim-exec: runs plans on real devices, compares with the prediction, calibrates device
// profiles. The exit status follows from the kind of what went wrong (ErrorKind): 0 ok,
// 1 environment (device failure, out of memory), 2 bad input, 3 plan does not fit, 4 internal.
// With --json, stdout holds one JSON document whatever happens: the report or the error.

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <unistd.h>
#include <filesystem>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <vector>

#include "exec/calibrate/calibrate.hpp"
#include "exec/compare/compare.hpp"
#include "exec/cpu/cpu_backend.hpp"
#ifdef HETSIM_HAVE_CUDA
#include "exec/cuda/cuda_backend.hpp"
#endif
#ifdef HETSIM_HAVE_HIP
#include "exec/hip/hip_backend.hpp"
#endif
#ifdef HETSIM_HAVE_MPI
#include "exec/mpi/mpi_group.hpp"
#endif
#include "exec/replay/replay.hpp"
#include "exec/replay/scale.hpp"
#include "sim/schedule/schedule.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/plan_json.hpp"
#include "sim/io/scenario_reader.hpp"
#include "sim/io/trace_json.hpp"
#include "sim/cli/diagnostics.hpp"
#include "sim/cli/validators.hpp"
#include "sim/io/error_json.hpp"

namespace {

// -o, --save-plan, --trace, --out: refused before any work when they cannot be written.
const CLI::Validator kOutputPath(
    [](const std::string& v) { return hetsim::io::output_path_problem(v); }, "FILE");

constexpr int kOk = 0, kEnvironment = 1, kBadInput = 2;

// Under mpirun every process reads the same input and meets the same errors: rank 0 reports.
bool quiet = false;
// --json of the command that runs: errors go to stdout as one JSON document too.
bool json_out = false;

// Ends the command with these diagnostics: on stderr, and as the error document on stdout under
// --json; the exit status follows from their kind.
int fail(const hetsim::Diagnostics& d) {
  if (!quiet) {
    for (const auto& x : d) std::cerr << hetsim::to_string(x) << "\n";
    if (json_out) std::cout << hetsim::io::error_json(d) << std::flush;
  }
  return hetsim::exit_status(hetsim::worst_kind(d));
}

using hetsim::cli::about;
using hetsim::cli::named_in;

int write(const std::vector<hetsim::io::OutputFile>& files) {
  if (auto e = hetsim::io::write_files_atomic(files); !e.empty()) return fail(e);
  return kOk;
}

// A POOL=VALUE option's value as a plain number: digits, and with `decimal` one or more of them
// after a dot (std::stod alone would take " 8", "+2", "0x1", "inf"); nothing otherwise.
std::optional<double> plain_number(const std::string& v, bool decimal) {
  if (v.empty() || v.size() > 32 ||
      !std::all_of(v.begin(), v.end(), [&](unsigned char c) { return std::isdigit(c) || (decimal && c == '.'); }))
    return std::nullopt;
  try {
    std::size_t used = 0;
    const double x = std::stod(v, &used);
    return used == v.size() ? std::optional<double>(x) : std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The backend by name; cuda and hip only where they were built (HETSIM_WITH_CUDA, HETSIM_WITH_HIP)
// and a GPU is present.
// `cores` applies to the cpu backend only (the callers refuse it elsewhere).
hetsim::Result<std::unique_ptr<hetsim::exec::Backend>> backend_for(const std::string& name, int devices,
                                                                     double memory_gib, double speed = 1.0, int cores = 1) {
  if (name == "cpu")
    return hetsim::exec::make_cpu_backend_at(devices, static_cast<std::size_t>(memory_gib * 1073741824.0), speed, cores);
  if (speed != 1.0)
    return hetsim::Diagnostic{{}, "", "--speed: the " + name + " backend cannot slow its devices",
                              "device speed factors are a cpu backend feature (docs/executor.md)", hetsim::ErrorKind::BadInput};
#ifdef HETSIM_HAVE_CUDA
  if (name == "cuda") return hetsim::exec::make_cuda_backend(devices);
#endif
#ifdef HETSIM_HAVE_HIP
  if (name == "hip") return hetsim::exec::make_hip_backend(devices);
#endif
  return hetsim::Diagnostic{{}, "", "backend '" + name + "' is not built into this hetsim-exec",
                            name == "hip" ? "build with -DHETSIM_WITH_HIP=ON (./install-deps.sh --hip), or use --backend cpu"
                                          : "build with -DHETSIM_WITH_CUDA=ON (needs /usr/local/cuda), or use --backend cpu",
                            hetsim::ErrorKind::Environment};
}

}  // namespace

int main(int argc, char** argv) {
  // `mpirun -np N hetsim-exec run …`: one process per device (MPI initialised before parsing,
  // as MPI may take its own arguments).
  std::unique_ptr<hetsim::exec::ProcessGroup> world;
#ifdef HETSIM_HAVE_MPI
  if (hetsim::exec::launched_by_mpi()) {
    auto w = hetsim::exec::mpi_world(argc, argv);
    if (!w) return fail(hetsim::with_kind(w.errors(), hetsim::ErrorKind::Environment));
    world = std::move(*w);
    quiet = world->rank() != 0;
  }
#else
  // Started by mpirun but built without MPI: every process would run the whole plan on its own.
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* n = std::getenv(v); n != nullptr && std::atoi(n) > 1) {
      std::cerr << "error: started by mpirun, but this hetsim-exec was built without MPI\n"
                   "  hint: rebuild with -DHETSIM_WITH_MPI=ON (libopenmpi-dev), or run without mpirun\n";
      return kEnvironment;
    }
#endif
  CLI::App app{"hetsim-exec: runs a plan for real, compares the measurement with hetsim's prediction, and "
               "calibrates device profiles (guide: docs/executor.md). Backends: cpu (always: one worker thread per "
               "device, shared-memory collectives); cuda where built with HETSIM_WITH_CUDA (cuBLAS, NCCL; one process "
               "driving the local GPUs, or one per GPU under mpirun); hip where built with HETSIM_WITH_HIP (rocBLAS and "
               "RCCL where found, else own kernels and host-staged collectives)."};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", std::string("hetsim-exec ") + HETSIM_VERSION);
  std::string backend_name = "cpu";
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int devices = cores;
  double memory_gib = 4;

  std::string scenario, plan_file, out, predicted_out;
  int steps = 5, warmup = 1;
  bool json = false;
  auto* run = app.add_subcommand(
      "run", "Replay a plan's training step on real devices and compare with the prediction. Under mpirun (-np = "
             "the plan's devices) each process drives one device: its node-local rank picks the GPU");
  run->add_option("scenario", scenario, "Scenario TOML (its [parallel], or --plan)")->required();
  run->add_option("--plan", plan_file, "Plan JSON (from `hetsim plan --out`)");
  run->add_option("--backend", backend_name, "cpu, cuda or hip")->check(CLI::IsMember({"cpu", "cuda", "hip"}))->default_val("cpu");
  run->add_option("--devices", devices,
                  "Devices the backend offers: cpu worker threads (default: one per core); for cuda/hip, more than "
                  "the GPUs share them round-robin (default: the GPUs)")
      ->check(hetsim::cli::count_between(1, 4096, "devices"))
      ->default_val(cores);
  // At least about 1 MiB (0 would mean unlimited to the cpu backend), at most 64 TiB.
  run->add_option("--memory", memory_gib,
                  "Memory per cpu device, GiB (default: a calibrated cpu profile's own memory for its pool, else 4)")
      ->check(hetsim::cli::between(0.001, 65536, "GiB"))
      ->default_val(4);
  run->add_option("--steps", steps, "Measured steps (the median is reported)")->check(CLI::Range(1, 1000))->default_val(5);
  run->add_option("--warmup", warmup, "Steps run first and discarded")->check(CLI::Range(0, 100))->default_val(1);
  run->add_option("--out", out, "Write the measured trace (docs/formats.md#trace-json)")->check(kOutputPath);
  run->add_option("--predicted", predicted_out, "Write the predicted trace of the same step")->check(kOutputPath);
  run->add_flag("--json", json,
                "Print the comparison as one JSON document on stdout (an {\"error\": …} document when the run fails)");
  std::vector<std::string> pool_speeds;
  run->add_option("--speed", pool_speeds,
                  "POOL=FACTOR (repeatable): run that pool's devices at FACTOR of full speed, 0 < FACTOR <= 1 (cpu "
                  "backend: each kernel, then an idle of 1/FACTOR - 1 times its length), so the pools of a scenario "
                  "are devices of unequal speed on one machine")
      ->type_name("POOL=FACTOR");
  std::vector<std::string> pool_device_lists;
  run->add_option("--pool-devices", pool_device_lists,
                  "POOL=LIST (repeatable): run that pool's devices on these backend devices (indexes such as 0,1 or "
                  "2-3, or a device model such as H100: the GPUs whose names contain it; shared round-robin when the "
                  "pool has more), so a node with two GPU models runs each pool on its own GPUs; the other pools on "
                  "the device of their own index. One process only")
      ->type_name("POOL=LIST");
  std::vector<std::string> pool_core_counts;
  run->add_option("--cores", pool_core_counts,
                  "POOL=N (repeatable): that pool's cpu devices split each kernel over N cores (1-256; default 1), so "
                  "the pools of a scenario are cpu devices of different sizes; cpu backend")
      ->type_name("POOL=N");
  std::vector<std::string> pool_memories;
  run->add_option("--pool-memory", pool_memories,
                  "POOL=GiB (repeatable): memory per device of that pool (cpu devices; on a GPU a cap below its own "
                  "memory, so it stands for a smaller one), over --memory and a profile's own")
      ->type_name("POOL=GiB");
  bool fit = false;
  run->add_flag("--fit", fit,
                "Scale the plan down to the devices at hand: fewer data-parallel replicas, then fewer layers per "
                "stage until a device's memory holds it (kernel shapes stay as planned; the report lists the changes)");

  std::string pred_in, meas_in;
  bool cmp_json = false;
  auto* cmp = app.add_subcommand("compare", "Compare a predicted trace with a measured one");
  cmp->add_option("predicted", pred_in, "Predicted trace JSON")->required();
  cmp->add_option("measured", meas_in, "Measured trace JSON")->required();
  cmp->add_flag("--json", cmp_json, "Print the comparison as one JSON document on stdout (or an {\"error\": …} one)");

  std::string profile_out, profile_name = "cpu-calibrated";
  double seconds = 2;
  auto* cal = app.add_subcommand("calibrate", "Microbenchmark a device and fit the cost model's parameters");
  cal->add_option("--backend", backend_name, "cpu, cuda or hip")->check(CLI::IsMember({"cpu", "cuda", "hip"}))->default_val("cpu");
  cal->add_option("--out", profile_out, "Write the profile (a catalogue file for [[cluster.pool]] catalog = …)")->check(kOutputPath);
  // The name becomes a catalogue id inside a TOML string: letters, digits, '.', '_' and '-' only.
  cal->add_option("--name", profile_name, "Device name in the profile (letters, digits, '.', '_', '-')")
      ->default_val("cpu-calibrated")
      ->check([](const std::string& v) -> std::string {
        if (v.empty() || v.size() > 64) return "a device name of 1 to 64 characters";
        for (unsigned char c : v)
          if (!std::isalnum(c) && c != '.' && c != '_' && c != '-')
            return "a device name of letters, digits, '.', '_' and '-' (it becomes a catalogue id)";
        return {};
      });
  int cal_cores = 1;
  cal->add_option("--cores", cal_cores,
                  "Calibrate a device that splits each kernel over this many cores (cpu backend, 1-256; see run --cores)")
      ->check(CLI::Range(1, 256))
      ->default_val(1);
  double cal_speed = 1.0;
  cal->add_option("--speed", cal_speed,
                  "Calibrate a device slowed to this factor of full speed (cpu backend, 0 < FACTOR <= 1; see run --speed)")
      ->check(hetsim::cli::between(1e-3, 1, "speed"))
      ->default_val(1.0);
  std::vector<double> alongside;
  cal->add_option("--alongside", alongside,
                  "SPEED (repeatable): while the device is measured, one more cpu device per SPEED runs the "
                  "calibration's kernels over and over at that factor of full speed (0.1 <= SPEED <= 1), as a replay's "
                  "other pools run beside it (e.g. --speed 0.5 --alongside 1 for a half-speed pool run beside a "
                  "full-speed one); cpu backend")
      ->type_name("SPEED")
      ->check(hetsim::cli::between(0.1, 1, "speed"));
  std::vector<std::string> shapes_of, shapes_plans;
  cal->add_option("--shapes-of", shapes_of,
                  "Also time the GEMMs this scenario's plan runs (repeatable; its [parallel], and each --shapes-plan), so "
                  "that the profile prices them as measured")
      ->check(CLI::ExistingFile);
  cal->add_option("--shapes-plan", shapes_plans, "A plan JSON whose GEMMs to time as well, for every --shapes-of scenario (repeatable)")
      ->check(CLI::ExistingFile);
  cal->add_option("--seconds", seconds, "Time to spend measuring (at least about 1 s in all)")
      ->check(hetsim::cli::between(0.2, 600, "seconds"))
      ->default_val(2);
  cal->add_option("--devices", devices, "Devices per node recorded in the profile (default: one per core)")
      ->check(hetsim::cli::count_between(1, 4096, "devices"))
      ->default_val(cores);
  cal->add_option("--memory", memory_gib, "Memory per device recorded in the profile, GiB")
      ->check(hetsim::cli::between(0.001, 65536, "GiB"))
      ->default_val(4);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return hetsim::cli::parse_failed(app, e, argc, argv);
  }
  json_out = (*run && json) || (*cmp && cmp_json);

  if (*run) {
    auto cat = hetsim::io::builtin_catalog();
    if (!cat) return fail(cat.errors());
    auto sc = hetsim::io::read_scenario(scenario, *cat);
    if (!sc) return fail(sc.errors());
    hetsim::plan::Plan plan;
    if (!plan_file.empty()) {
      auto p = hetsim::io::read_plan_json(plan_file, *sc);
      if (!p) return fail(p.errors());
      plan = *p;
    } else if (sc->plan) {
      plan = *sc->plan;
    } else {
      return fail({about(scenario, "", "no plan to run", "add [parallel] or give --plan PLAN.json")});
    }
    hetsim::exec::ReplayOptions opts{steps, warmup};
    opts.world = world.get();
    // POOL=VALUE options: the pool's index and the value, or what is wrong with the item.
    std::string pool_names;
    for (const auto& pool : sc->cluster.pools) pool_names += (pool_names.empty() ? "" : ", ") + pool.name;
    auto pool_item = [&](const std::string& option, const std::string& item,
                         const std::string& form) -> hetsim::Result<std::pair<std::size_t, std::string>> {
      const auto eq = item.rfind('=');
      if (eq == std::string::npos)
        return about("", "", option + " " + item + ": expected " + form, "pools of " + scenario + ": " + pool_names);
      const std::string name = item.substr(0, eq);
      const auto pool = std::find_if(sc->cluster.pools.begin(), sc->cluster.pools.end(),
                                     [&](const auto& p) { return p.name == name; });
      if (pool == sc->cluster.pools.end())
        return about("", "", option + " " + item + ": no pool '" + name + "' in " + scenario, "its pools: " + pool_names);
      return std::pair{static_cast<std::size_t>(pool - sc->cluster.pools.begin()), item.substr(eq + 1)};
    };
    // --speed POOL=FACTOR: the pools' devices at their factors (the others at full speed).
    if (!pool_speeds.empty()) {
      opts.pool_speed.assign(sc->cluster.pools.size(), 1.0);
      for (const auto& item : pool_speeds) {
        auto parsed = pool_item("--speed", item, "POOL=FACTOR");
        if (!parsed) return fail(parsed.errors());
        const auto& [pool_index, value] = *parsed;
        double factor = 0;
        std::size_t used = 0;
        try {
          factor = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || !(factor > 0 && factor <= 1))
          return fail({about("", "", "--speed " + item + ": the factor must be a number above 0 and at most 1",
                             "0.5: the pool's devices take twice as long for every kernel")});
        opts.pool_speed[pool_index] = factor;
      }
    }
    // --cores POOL=N: the pool's cpu devices of N cores (the others of the backend's one).
    if (!pool_core_counts.empty()) {
      opts.pool_cores.assign(sc->cluster.pools.size(), 0);
      for (const auto& item : pool_core_counts) {
        auto parsed = pool_item("--cores", item, "POOL=N");
        if (!parsed) return fail(parsed.errors());
        const auto& [pool_index, value] = *parsed;
        if (opts.pool_cores[pool_index] != 0)
          return fail({about("", "", "--cores " + item + ": pool '" + sc->cluster.pools[pool_index].name +
                                         "' is listed twice", "one core count per pool")});
        const auto n = plain_number(value, false);
        if (!n || *n < 1 || *n > hetsim::exec::kMaxCores)
          return fail({about("", "", "--cores " + item + ": the count must be a whole number from 1 to " +
                                         std::to_string(hetsim::exec::kMaxCores),
                             "2: each of the pool's devices splits its kernels over two cores")});
        opts.pool_cores[pool_index] = static_cast<int>(*n);
      }
      if (backend_name != "cpu")
        return fail({about("", "", "--cores: the " + backend_name + " backend's devices have no core count to set",
                           "cores per device are a cpu backend feature (docs/executor.md)")});
    }
    // Memory per pool: --pool-memory POOL=GiB, else --memory when given, else (cpu backend) a
    // calibrated cpu profile's own memory for its pool.
    if (!pool_memories.empty() || (backend_name == "cpu" && run->count("--memory") == 0)) {
      opts.pool_memory.assign(sc->cluster.pools.size(), 0);
      if (backend_name == "cpu" && run->count("--memory") == 0)
        for (std::size_t k = 0; k < sc->cluster.pools.size(); ++k)
          if (const auto& dev = sc->cluster.pools[k].device; dev.vendor == "host" && dev.memory.v >= 1048576.0) {
            const auto bytes = static_cast<std::size_t>(std::min(dev.memory.v, 65536.0 * 1073741824.0));
            if (bytes != static_cast<std::size_t>(memory_gib * 1073741824.0)) opts.pool_memory[k] = bytes;  // else as --memory
          }
      std::vector<bool> given(sc->cluster.pools.size(), false);
      for (const auto& item : pool_memories) {
        auto parsed = pool_item("--pool-memory", item, "POOL=GiB");
        if (!parsed) return fail(parsed.errors());
        const auto& [pool_index, value] = *parsed;
        if (given[pool_index])
          return fail({about("", "", "--pool-memory " + item + ": pool '" + sc->cluster.pools[pool_index].name +
                                         "' is listed twice", "one memory per pool")});
        given[pool_index] = true;
        const auto gib = plain_number(value, true);
        if (!gib || !(*gib >= 0.001 && *gib <= 65536))
          return fail({about("", "", "--pool-memory " + item + ": the memory must be a number from 0.001 to 65536 (GiB)",
                             "8: each of the pool's devices may allocate 8 GiB")});
        opts.pool_memory[pool_index] = static_cast<std::size_t>(*gib * 1073741824.0);
      }
      if (std::all_of(opts.pool_memory.begin(), opts.pool_memory.end(), [](std::size_t b) { return b == 0; }))
        opts.pool_memory.clear();
    }
    // --pool-devices POOL=LIST: indexes and ranges, "0,2" or "0-3"; or POOL=MODEL, the backend's
    // devices whose model names contain MODEL (any case), "H100".
    std::vector<std::pair<std::size_t, std::string>> pool_models;
    if (!pool_device_lists.empty()) {
      opts.pool_devices.assign(sc->cluster.pools.size(), {});
      for (const auto& item : pool_device_lists) {
        auto parsed = pool_item("--pool-devices", item, "POOL=LIST");
        if (!parsed) return fail(parsed.errors());
        const auto& [pool_index, value] = *parsed;
        if (!opts.pool_devices[pool_index].empty())
          return fail({about("", "", "--pool-devices " + item + ": pool '" + sc->cluster.pools[pool_index].name +
                                         "' is listed twice", "one list per pool")});
        std::vector<int> indexes;
        std::string why;
        const bool named = std::any_of(value.begin(), value.end(), [](unsigned char c) { return std::isalpha(c); });
        if (named) {  // a device model: resolved once the backend is open
          pool_models.emplace_back(pool_index, value);
          opts.pool_devices[pool_index] = {-1};
          continue;
        }
        if (!hetsim::cli::index_list(value, 4096, indexes, why))
          return fail({about("", "", "--pool-devices " + item + ": " + why,
                             "device indexes such as 0,1 or 2-3, or a device model with a letter in it, such as H100 or "
                             "\"RTX 4090\"")});
        opts.pool_devices[pool_index] = std::move(indexes);
      }
    }
#ifdef HETSIM_HAVE_MPI
    opts.local_device = world ? hetsim::exec::mpi_local_rank() : 0;
#endif
    // A device of this process failing mid-step under mpirun: the others would wait for it
    // forever, so it ends the run.
    if (world)
      opts.on_fatal = [&](const hetsim::Diagnostic& d) {
        std::cerr << "process " << world->rank() << ": " << hetsim::to_string(d) << "\n";
        world->abort(kEnvironment);
      };
    // Under mpirun a cpu process is its own device (whatever --devices says).
    // GPU backends offer their GPUs, or --devices of them sharing the GPUs when given.
    const int offered = backend_name != "cpu"   ? (run->count("--devices") > 0 ? devices : 0)
                        : world                 ? std::max(devices, opts.local_device + 1)
                                                : devices;
    auto backend = backend_for(backend_name, offered, memory_gib);
    if (!backend) return fail(hetsim::with_kind(backend.errors(), hetsim::ErrorKind::Environment));
    if (!quiet && backend_name != "cpu") std::cerr << "note: " << (*backend)->describe() << "\n";
    for (const auto& [pool_index, wanted] : pool_models) {
      auto lower = [](std::string t) {
        for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return t;
      };
      std::vector<int> indexes;
      std::string have;
      for (int i = 0; i < (*backend)->device_count(); ++i) {
        const std::string model = (*backend)->model(i);
        if (lower(model).find(lower(wanted)) != std::string::npos) indexes.push_back(i);
        if (i < 16) have += (have.empty() ? "" : ", ") + std::to_string(i) + " " + model;
      }
      if (indexes.empty())
        return fail({about("", "", "--pool-devices " + sc->cluster.pools[pool_index].name + "=" + wanted + ": no " +
                                       backend_name + " device here is a '" + wanted + "'",
                           "this machine's: " + have, hetsim::ErrorKind::Environment)});
      opts.pool_devices[pool_index] = std::move(indexes);
    }
    if (!quiet && backend_name == "cpu" && !world && devices > cores)
      std::cerr << "note: " << devices << " cpu devices share " << cores
                << " cores: the measured times include that sharing, which the prediction does not\n";
    if (!quiet && backend_name == "cpu")
      for (const auto& pool : sc->cluster.pools)
        if (pool.device.vendor != "host") {
          std::cerr << "note: the scenario prices " << pool.device.name << " but runs on this machine's cpu threads: "
                    << "the comparison measures the cpu, not the " << pool.device.name
                    << " (calibrate a cpu profile with `hetsim-exec calibrate`, or use --backend cuda/hip)\n";
          break;
        }
    // Each pool's memory a device: its own where set (a GPU's cap checked against the GPU by
    // opening one), else the backend's.
    const std::size_t capacity = (*backend)->open(opts.local_device)->capacity();
    std::vector<std::size_t> pool_capacity(sc->cluster.pools.size(), capacity);
    for (std::size_t k = 0; k < opts.pool_memory.size(); ++k)
      if (opts.pool_memory[k] != 0) {
        hetsim::exec::DeviceSetup setup;
        setup.memory = opts.pool_memory[k];
        auto probe = (*backend)->open_as(opts.local_device, setup);
        if (!probe) return fail(hetsim::with_kind(probe.errors(), hetsim::ErrorKind::BadInput));
        pool_capacity[k] = (*probe)->capacity();
      }
    std::string scaled;
    if (fit) {
      const int available = world && world->size() > 1 ? world->size() : (*backend)->device_count();
      auto sd = hetsim::exec::scale_to_fit(*sc, plan, available, pool_capacity);
      if (!sd) {
        return fail(named_in(sd.errors(), scenario));
      }
      for (const auto& n : sd->notes) scaled += (scaled.empty() ? "" : "; ") + n;
      if (!scaled.empty() && !quiet && json) std::cerr << "note: plan scaled down to fit (--fit): " << scaled << "\n";
      *sc = std::move(sd->scenario);
      plan = std::move(sd->plan);
    } else if (std::any_of(pool_capacity.begin(), pool_capacity.end(), [](std::size_t c) { return c > 0; })) {
      // A plan that does not fit is refused before it runs (as `hetsim simulate` refuses it).
      auto over = hetsim::exec::over_capacity(*sc, plan, pool_capacity);
      if (!over) return fail(over.errors());
      if (const auto& o = *over)
        return fail({about(scenario, "",
                           fmt::format("the plan does not fit: device {} needs {:.4g} GiB, the {} devices of pool '{}' "
                                       "have {:.4g} GiB",
                                       o->device, static_cast<double>(o->needs) / 1073741824.0, backend_name,
                                       sc->cluster.pools[o->pool].name, static_cast<double>(o->has) / 1073741824.0),
                           "--fit (fewer layers), or --memory GiB (--pool-memory POOL=GiB) for cpu devices",
                           hetsim::ErrorKind::DoesNotFit)});
    }
    if (!quiet && backend_name == "cpu" && !world && !opts.pool_cores.empty()) {
      const auto g = hetsim::schedule::build_schedule(*sc, plan);
      long threads = 0;
      for (const auto& d : g.devices)
        threads += long{d.count} * std::max(1, opts.pool_cores[static_cast<std::size_t>(d.pool)]);
      if (threads > cores)
        std::cerr << "note: the plan's cpu devices run " << threads << " threads (devices × their cores) on " << cores
                  << " cores: the measured times include that sharing, which the prediction does not\n";
    }
    const std::string source = "measured (" + backend_name + " backend" +
                               (world && world->size() > 1 ? ", mpirun" : "") +
                               (scaled.empty() ? ")" : ", scaled down: " + scaled + ")");
    // Under mpirun a failing device ends every process: the steps measured before it are
    // written as they come.
    if (world && world->size() > 1 && !quiet && !out.empty())
      opts.on_step = [&](const hetsim::exec::Replay& so_far) {
        (void)write({{out, hetsim::io::trace_to_json(hetsim::io::make_trace_file(so_far.graph, so_far.measured, source,
                                                                                 so_far.measured_parts))}});
      };
    auto r = hetsim::exec::replay(*sc, plan, **backend, opts);
    if (r && quiet) return kOk;  // rank 0 reports
    if (!r && world && world->size() > 1 && hetsim::worst_kind(r.errors()) == hetsim::ErrorKind::Environment) {
      // A failure of this process alone (a device, a communicator): the others would wait for
      // it forever, so it ends the run.
      for (const auto& d : r.errors()) std::cerr << "process " << world->rank() << ": " << hetsim::to_string(d) << "\n";
      world->abort(kEnvironment);
    }
    if (!r) {
      // A plan this executor cannot run is bad input, named by the scenario or plan file; a
      // device that fails (out of memory, missing) is the environment.
      return fail(named_in(r.errors(), plan_file.empty() ? scenario : plan_file, /*bad_input_only=*/true));
    }
    const auto pred = hetsim::io::make_trace_file(
        r->graph, r->predicted, scaled.empty() ? "predicted (native engine)" : "predicted (native engine, scaled down: " + scaled + ")",
        r->predicted_parts);
    for (const auto& n : r->notes) std::cerr << "note: " << n << "\n";
    const auto meas =
        hetsim::io::make_trace_file(r->graph, r->measured, source, r->measured_parts);
    std::vector<hetsim::io::OutputFile> files;
    if (!out.empty()) files.push_back({out, hetsim::io::trace_to_json(meas)});
    if (!predicted_out.empty()) files.push_back({predicted_out, hetsim::io::trace_to_json(pred)});
    if (int rc = write(files)) return rc;
    if (!out.empty()) std::cerr << "wrote " << out << " (measured trace)\n";
    if (!predicted_out.empty()) std::cerr << "wrote " << predicted_out << " (predicted trace)\n";
    auto c = hetsim::exec::compare(pred, meas);
    if (!c) return fail(hetsim::with_kind(c.errors(), hetsim::ErrorKind::Internal));  // our own two traces
    if (!scaled.empty()) c->notes.push_back("plan scaled down to fit (--fit): " + scaled);
    std::string steps_txt;
    for (auto s : r->step_ns) steps_txt += fmt::format("{}{:.4f}", steps_txt.empty() ? "" : " ", static_cast<double>(s) * 1e-9);
    // A device that failed after some steps: the report of those steps, with the failure.
    if (r->failure) c->failure = hetsim::to_string(*r->failure);
    if (json) std::cout << hetsim::exec::comparison_json(*c);
    else std::cout << fmt::format("measured steps (s): {}\n", steps_txt) << hetsim::exec::comparison_text(*c);
    if (r->failure) {
      std::cerr << hetsim::to_string(*r->failure) << "\n  (the steps measured before it are reported above)\n";
      return hetsim::exit_status(r->failure->kind);
    }
    return kOk;
  }
  if (*cmp) {
    auto p = hetsim::io::read_trace_json(pred_in);
    if (!p) return fail(p.errors());
    auto m = hetsim::io::read_trace_json(meas_in);
    if (!m) return fail(m.errors());
    if (p->source.rfind("measured", 0) == 0 && m->source.rfind("predicted", 0) == 0)
      std::cerr << "note: " << pred_in << " is a measured trace and " << meas_in
                << " a predicted one: the arguments are PREDICTED MEASURED\n";
    auto c = hetsim::exec::compare(*p, *m);
    if (!c) {
      return fail(named_in(c.errors(), meas_in));
    }
    std::cout << (cmp_json ? hetsim::exec::comparison_json(*c) : hetsim::exec::comparison_text(*c));
    return kOk;
  }
  if (*cal) {
    if (!profile_out.empty()) {
      // Before minutes of measuring: can the profile be written there?
      const auto dir = std::filesystem::absolute(profile_out).parent_path();
      if (!std::filesystem::is_directory(dir) || ::access(dir.c_str(), W_OK) != 0) {
        std::cerr << profile_out << ": error: cannot write the profile there (no such directory, or not writable)\n"
                  << "  hint: an existing, writable directory, or no --out to print the profile\n";
        return kEnvironment;
      }
    }
    if (backend_name != "cpu" && cal_speed != 1.0)
      return fail({about("", "", "--speed: the " + backend_name + " backend cannot slow its devices",
                         "device speed factors are a cpu backend feature (docs/executor.md)")});
    if (backend_name != "cpu" && cal_cores != 1)
      return fail({about("", "", "--cores: the " + backend_name + " backend's devices have no core count to set",
                         "cores per device are a cpu backend feature (docs/executor.md)")});
    if (backend_name != "cpu" && !alongside.empty())
      return fail({about("", "", "--alongside: only the cpu backend runs a load beside the device it measures",
                         "drop --alongside, or calibrate with --backend cpu (docs/executor.md)")});
    // The GEMMs of the plans named (read before minutes of measuring; a bad file fails here).
    std::vector<std::array<int, 3>> extra;
    if (!shapes_plans.empty() && shapes_of.empty())
      return fail({about("", "--shapes-plan", "a plan's GEMM shapes need its scenario", "add --shapes-of SCENARIO.toml")});
    if (!shapes_of.empty()) {
      auto cat = hetsim::io::builtin_catalog();
      if (!cat) return fail(cat.errors());
      for (const std::string& f : shapes_of) {
        auto sc = hetsim::io::read_scenario(f, *cat);
        if (!sc) return fail(sc.errors());
        std::vector<hetsim::plan::Plan> plans;
        if (sc->plan) plans.push_back(*sc->plan);
        for (const std::string& pf : shapes_plans) {
          auto p = hetsim::io::read_plan_json(pf, *sc);
          if (!p) return fail(p.errors());
          plans.push_back(*p);
        }
        if (plans.empty())
          return fail({about(f, "", "no plan whose GEMMs to time", "add [parallel] to the scenario or give --shapes-plan PLAN.json")});
        for (const auto& p : plans)
          for (const auto& g : hetsim::exec::gemm_shapes(*sc, p))
            if (std::find(extra.begin(), extra.end(), g) == extra.end()) extra.push_back(g);
      }
    }
    auto backend = backend_for(backend_name, 2, memory_gib, cal_speed, cal_cores);  // a second device for the link
    if (!backend) return fail(hetsim::with_kind(backend.errors(), hetsim::ErrorKind::Environment));
    // --alongside: the other pools' devices, each at its own speed, running the calibration load.
    std::vector<std::unique_ptr<hetsim::exec::Device>> neighbours;
    std::vector<hetsim::exec::Device*> load;
    if (!alongside.empty()) {
      auto others = hetsim::exec::make_cpu_backend_at(static_cast<int>(alongside.size()),
                                                      static_cast<std::size_t>(memory_gib * 1073741824.0), 1.0);
      if (!others) return fail(hetsim::with_kind(others.errors(), hetsim::ErrorKind::Environment));
      for (std::size_t k = 0; k < alongside.size(); ++k) {
        hetsim::exec::DeviceSetup setup;
        setup.speed = alongside[k];
        setup.cores = cal_cores;  // the pools beside it as large as the one measured
        auto d = (*others)->open_as(static_cast<int>(k), setup);
        if (!d) return fail(d.errors());
        load.push_back(d->get());
        neighbours.push_back(std::move(*d));
      }
    }
    hetsim::exec::Profile prof;
    try {
      prof = hetsim::exec::calibrate(**backend, seconds, extra, load);
    } catch (const std::system_error& e) {  // a device of several cores whose threads cannot start
      std::cerr << "error: calibration: cannot start the device's threads (" << e.what() << ")\n"
                << "  hint: fewer --cores\n";
      return kEnvironment;
    }
    prof.cores = cal_cores;
    if (!prof.failure.empty()) {
      std::cerr << "error: calibration: the device failed: " << prof.failure << "\n";
      return kEnvironment;
    }
    const std::string toml = hetsim::exec::profile_toml(prof, profile_name, memory_gib * 1073741824.0, devices);
    {
      // Write only a profile a scenario can load: read it back with the catalogue's own rules.
      hetsim::hw::Catalog check;
      auto bad = hetsim::io::read_catalog_text(toml, profile_out.empty() ? "<calibrated profile>" : profile_out, check);
      if (!bad.empty()) {
        std::cerr << "error: calibration measured figures the catalogue cannot load; nothing written:\n";
        return fail(hetsim::with_kind(std::move(bad), hetsim::ErrorKind::Environment));
      }
    }
    if (profile_out.empty()) std::cout << toml;
    else if (int rc = write({{profile_out, toml}})) return rc;
    else std::cerr << "wrote " << profile_out << " (device '" << profile_name << "')\n";
    if (!alongside.empty()) {
      std::string speeds;
      for (double v : alongside) speeds += (speeds.empty() ? "" : ", ") + fmt::format("{:g}", v);
      std::cerr << "measured beside " << alongside.size() << " device(s) running the calibration load at speed " << speeds << "\n";
    }
    const auto& g = prof.train_gemm();
    std::cerr << fmt::format("GEMM: {:.4g} GFLOP/s peak fp32 ({:.4g} bf16, {:.4g} fp16), {} half_dim {:.0f}, launch {:.3g} us (fit rms {:.1f} %); "
                             "stream {:.3g} GB/s ({:.2f} of it one element at a time); copy {:.3g} GB/s; attention efficiency {:.2f}; link {:.3g} us + "
                             "{:.3g} GB/s (all-reduce fit); point-to-point {:.3g} us + {:.3g} GB/s\n",
                             prof.gemm.peak_flops / 1e9, prof.peak_bf16 / 1e9, prof.peak_fp16 / 1e9,
                             prof.tensor_cores() ? "bf16" : "fp32", g.half_dim, g.launch_s * 1e6, 100 * g.rms_rel_error, prof.memory_bandwidth / 1e9,
                             prof.unvectorized_memory, prof.copy_bandwidth / 1e9,
                             prof.attention_efficiency, prof.link_latency_s * 1e6, prof.link_bandwidth / 1e9,
                             prof.p2p_latency_s * 1e6, prof.p2p_bandwidth / 1e9);
    return kOk;
  }
  std::cerr << app.help() << "error: a command is needed: run, compare or calibrate\n";
  return kBadInput;
}

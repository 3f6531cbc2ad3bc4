#pragma once
// A sweep across MPI ranks (`mpirun -np N hetsim sweep …`; docs/scenario-format.md#across-nodes-mpirun):
// every rank validates a share of the points, then rank 0 hands out batches of points to whichever
// rank asks (dynamic load balancing, its own threads included; distributed.cpp says how a batch is
// sized), collects the rows and delivers them in point order; the other ranks run the points they
// are given. MPI itself is behind a small module, libhetsim_mpi.so (sim/sweep/mpi_module.cpp, the
// only file including mpi.h), opened only under mpirun, so hetsim starts without MPI's libraries
// otherwise.

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "sim/sweep/rows.hpp"
#include "sim/sweep/sweep.hpp"

namespace hetsim::sweep {

/// The MPI calls a distributed sweep makes; `abi` guards against a module from another build.
struct MpiModule {
  int abi = 0;
  /// MPI_Init_thread (funneled): this process's rank and the number of ranks; false on failure.
  bool (*init)(int* rank, int* size) = nullptr;
  void (*finalize)() = nullptr;
  /// Sends `data` to rank `dest` with `tag` (blocking until buffered).
  void (*send)(int dest, int tag, const std::string& data) = nullptr;
  /// Receives the next message from `src` (any rank when src < 0): its source, tag and bytes.
  void (*recv)(int src, int* from, int* tag, std::string* data) = nullptr;
  /// Whether a message is waiting (MPI_Iprobe from any rank).
  bool (*probe)() = nullptr;
  /// Starts sending `*data` to `dest` with `tag` (MPI_Isend) and returns at once; `*data` must
  /// stay as it is until finish_send of the returned handle.
  void* (*start_send)(int dest, int tag, const std::string* data) = nullptr;
  /// Waits until the send started as `handle` has completed (MPI_Wait); the handle is then gone.
  void (*finish_send)(void* handle) = nullptr;
  /// Whether the send started as `handle` has completed (MPI_Test), without waiting; once it
  /// returns true the handle is gone.
  bool (*test_send)(void* handle) = nullptr;
};

inline constexpr int kMpiModuleAbi = 3;
inline constexpr const char* kMpiModuleFile = "libhetsim_mpi.so";

/// Whether this process was started by mpirun with more than one rank (OpenMPI's, MPICH's or
/// PMIx's environment says so).
[[nodiscard]] bool under_mpirun();

/// Opens the module next to the running executable (once per process): an Environment error
/// when this build has none (configured with HETSIM_WITH_MPI=OFF).
[[nodiscard]] Result<const MpiModule*> load_mpi_module();

/// Rank 0, before any point runs: checks its share of the points (i % size == 0) on `jobs`
/// threads while each other rank checks its own, then takes every rank's request for points with
/// what that rank found; a rank whose request carries another sweep's hash (it read another file)
/// is told to stop and its share is checked here. Returns what validate(doc, jobs) returns for
/// all the points (the same errors, in point order); `ready` gets the ranks to hand points to.
[[nodiscard]] Validation validate_across(const io::SweepDocument& doc, int jobs, const MpiModule& mpi, int size,
                                         std::vector<int>& ready);

/// Rank 0, after validate_across: runs points [opts.first, points) on its own `opts.jobs` threads
/// and on the `ready` ranks, each point to whoever asks first; delivers rows in point order through
/// opts.on_row, on this thread (the only one making MPI calls). The other ranks encode their
/// rows as opts.encoding asks, so the bytes delivered are those of a local run; rank 0 reads a
/// row's JSON back only for Encoding::row. Returns the rows delivered; every other rank has been
/// told to stop by then.
std::size_t run_coordinator(const io::SweepDocument& doc, const RunOptions& opts, const MpiModule& mpi,
                            const std::vector<int>& ready);

/// Rank 0 when nothing is to run (bad input, a complete file): tells every other rank to stop,
/// the `ready` ranks of validate_across when it has run (null: it has not, none was heard from).
void release_workers(const MpiModule& mpi, int size, const std::vector<int>* ready);

/// Where a rank other than 0 keeps each row it has finished before it sends it (the CLI: a file
/// FILE.pending.rankR beside the results file; docs/scenario-format.md#across-nodes-mpirun), so
/// that a row still on its way to rank 0 when the job ends is not lost: `--resume` takes it from
/// there. Rank 0 names the place (RunOptions::journal) only when it writes a results file.
struct Journal {
  /// Called once, before the rank's first row, with rank 0's RunOptions::journal; false: the rank
  /// keeps no journal (the callee says why), and its rows are only sent.
  std::function<bool(const std::string& base)> open;
  /// Keeps one row (its Encoding::json set) where a process that dies cannot lose it (written to
  /// the file, not buffered); false when it could not: the rank keeps no more.
  std::function<bool(const Finished&)> keep;
};

/// Rank `rank` of `size` (1 …): checks its share of the points (i % size == rank) and sends what
/// it found with its request for points; then runs the points rank 0 gives it (through `runner`
/// when set, else run_point) and sends each row, encoded as rank 0 asked, as soon as its point has
/// run, until told to stop. With `journal` (and a place named by rank 0), each row is kept there
/// before it is sent: a rank that dies, or whose rows are on their way when the job ends, loses no
/// row it finished.
void run_worker(const io::SweepDocument& doc, const MpiModule& mpi, int rank, int size,
                const std::function<Row(std::size_t)>& runner, const Journal& journal = {});

}  // namespace hetsim::sweep

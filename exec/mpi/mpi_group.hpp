#pragma once
// Multi-process runs over MPI: `mpirun -np N hetsim-exec run …` runs one device per process. The
// world group, its sub-groups (MPI_Comm_split) and host-level collectives (MPI, staged through
// host memory for device buffers). MPI headers stay in this folder.

#include <memory>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// True when this process was started by an MPI launcher (mpirun/mpiexec, srun with PMI/PMIx).
[[nodiscard]] bool launched_by_mpi();

/// Initialises MPI (threads: serialized at least; ProcessGroup::concurrent() where the library
/// gives MPI_THREAD_MULTIPLE) and returns MPI_COMM_WORLD as a group; MPI is finalised when the
/// group is destroyed. Call once, only when launched_by_mpi().
[[nodiscard]] Result<std::unique_ptr<ProcessGroup>> mpi_world(int& argc, char**& argv);

/// This process's rank among the processes of its node (the GPU it should drive).
[[nodiscard]] int mpi_local_rank();

}  // namespace hetsim::exec

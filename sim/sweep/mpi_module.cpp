// The MPI module of distributed sweeps (sim/sweep/distributed.hpp): the only file of sim/ that
// includes mpi.h. Built as libhetsim_mpi.so next to hetsim (HETSIM_WITH_MPI), opened only under
// mpirun. Only the thread that called init makes MPI calls (MPI_THREAD_FUNNELED).

#include <mpi.h>

#include <string>

#include "sim/sweep/distributed.hpp"

namespace hetsim::sweep {
namespace {

bool init(int* rank, int* size) {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return false;
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
  return true;
}

void finalize() { MPI_Finalize(); }

void send(int dest, int tag, const std::string& data) {
  MPI_Send(data.data(), static_cast<int>(data.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
}

void recv(int src, int* from, int* tag, std::string* data) {
  MPI_Status st;
  MPI_Probe(src < 0 ? MPI_ANY_SOURCE : src, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  data->assign(static_cast<std::size_t>(n), '\0');
  MPI_Recv(data->data(), n, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  *from = st.MPI_SOURCE;
  *tag = st.MPI_TAG;
}

bool probe() {
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

void* start_send(int dest, int tag, const std::string* data) {
  auto* request = new MPI_Request;
  MPI_Isend(data->data(), static_cast<int>(data->size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD, request);
  return request;
}

void finish_send(void* handle) {
  auto* request = static_cast<MPI_Request*>(handle);
  MPI_Wait(request, MPI_STATUS_IGNORE);
  delete request;
}

bool test_send(void* handle) {
  auto* request = static_cast<MPI_Request*>(handle);
  int done = 0;
  MPI_Test(request, &done, MPI_STATUS_IGNORE);
  if (done != 0) delete request;
  return done != 0;
}

}  // namespace
}  // namespace hetsim::sweep

extern "C" __attribute__((visibility("default"))) const hetsim::sweep::MpiModule* hetsim_mpi_module() {
  static const hetsim::sweep::MpiModule m{hetsim::sweep::kMpiModuleAbi, &hetsim::sweep::init,
                                          &hetsim::sweep::finalize,     &hetsim::sweep::send,
                                          &hetsim::sweep::recv,         &hetsim::sweep::probe,
                                          &hetsim::sweep::start_send,   &hetsim::sweep::finish_send,
                                          &hetsim::sweep::test_send};
  return &m;
}

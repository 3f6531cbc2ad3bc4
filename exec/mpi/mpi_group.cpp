#include "exec/mpi/mpi_group.hpp"

#include "exec/comm/host_stage.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <vector>

namespace hetsim::exec {
namespace {

int as_count(std::size_t n) {
  HETSIM_ASSERT(n <= static_cast<std::size_t>(INT_MAX), "an MPI message of more than 2^31 values");
  return static_cast<int>(n);
}

// Collectives on host buffers over an MPI communicator; device buffers are staged through
// host copies. Collectives start with a barrier so that the time they return as their start is
// when the last member arrived (as the shared-memory group reports it).
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm c, Device* staged) : c_(c), stage_(staged) {
    MPI_Comm_rank(c_, &rank_);
    MPI_Comm_size(c_, &size_);
  }
  ~MpiCommunicator() override { finish_sends(); }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Result<std::int64_t> all_reduce(float* buf, std::size_t count) override {
    const auto t = arrive();
    float* h = stage_.in(buf, count, 0);
    MPI_Allreduce(MPI_IN_PLACE, h, as_count(count), MPI_FLOAT, MPI_SUM, c_);
    stage_.out(h, buf, count);
    return t;
  }
  Result<std::int64_t> all_gather(const float* in, float* out, std::size_t count) override {
    const auto t = arrive();
    const int c = as_count(count);
    stage_.through(in, count, out, count * n(), [&](const float* h, float* ho) {
      return MPI_Allgather(h, c, MPI_FLOAT, ho, c, MPI_FLOAT, c_);
    });
    return t;
  }
  Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t count) override {
    const auto t = arrive();
    stage_.through(in, count * n(), out, count, [&](const float* h, float* ho) {
      return MPI_Reduce_scatter_block(h, ho, as_count(count), MPI_FLOAT, MPI_SUM, c_);
    });
    return t;
  }
  Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t count) override {
    const auto t = arrive();
    const int c = as_count(count);
    stage_.through(in, count * n(), out, count * n(), [&](const float* h, float* ho) {
      return MPI_Alltoall(h, c, MPI_FLOAT, ho, c, MPI_FLOAT, c_);
    });
    return t;
  }
  // Sends never block (Isend from a copy kept until it completes): pipeline stages sending to
  // each other in both directions cannot deadlock.
  Result<std::int64_t> send(const float* buf, std::size_t count, int peer, int tag) override {
    const std::int64_t t = host_clock_ns();
    reap();
    auto& p = pending_.emplace_back();
    const float* h = stage_.in(buf, count, 0);
    p.data.assign(h, h + count);
    MPI_Isend(p.data.data(), as_count(count), MPI_FLOAT, peer, tag, c_, &p.request);
    return t;
  }
  Result<std::int64_t> recv(float* buf, std::size_t count, int peer, int tag) override {
    const std::int64_t t = host_clock_ns();
    float* h = stage_.out_buffer(buf, count, 0);
    if (MPI_Recv(h, as_count(count), MPI_FLOAT, peer, tag, c_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return Diagnostic{{}, "", "recv from process " + std::to_string(peer) + " failed", ""};
    stage_.out(h, buf, count);
    return t;
  }
  Diagnostics barrier() override {
    MPI_Barrier(c_);
    return {};
  }
  void leave() override {}  // MPI cannot drop a member: a failing process aborts the run instead

 private:
  struct Pending {
    std::vector<float> data;
    MPI_Request request = MPI_REQUEST_NULL;
  };
  std::size_t n() const { return static_cast<std::size_t>(size_); }
  std::int64_t arrive() {
    MPI_Barrier(c_);
    return host_clock_ns();
  }
  void reap() {
    for (auto it = pending_.begin(); it != pending_.end();) {
      int done = 0;
      MPI_Test(&it->request, &done, MPI_STATUS_IGNORE);
      it = done ? pending_.erase(it) : std::next(it);
    }
  }
  void finish_sends() {
    for (auto& p : pending_) MPI_Wait(&p.request, MPI_STATUS_IGNORE);
    pending_.clear();
  }

  MPI_Comm c_;
  HostStage stage_;
  int rank_ = 0, size_ = 1;
  std::list<Pending> pending_;
};

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup(MPI_Comm c, bool world, bool concurrent) : c_(c), world_(world), concurrent_(concurrent) {
    MPI_Comm_rank(c_, &rank_);
    MPI_Comm_size(c_, &size_);
  }
  ~MpiGroup() override {
    if (!world_) {
      MPI_Comm_free(&c_);
    } else {
      MPI_Finalize();
    }
  }
  MpiGroup(const MpiGroup&) = delete;
  MpiGroup& operator=(const MpiGroup&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void broadcast(void* data, std::size_t bytes, int root) override {
    MPI_Bcast(data, as_count(bytes), MPI_BYTE, root, c_);
  }
  std::vector<std::vector<std::int64_t>> gather(const std::vector<std::int64_t>& mine, int root) override {
    int n = as_count(mine.size());
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
    MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, c_);
    std::vector<std::int64_t> all;
    if (rank_ == root) {
      int total = 0;
      for (int r = 0; r < size_; ++r) {
        displs[static_cast<std::size_t>(r)] = total;
        total += counts[static_cast<std::size_t>(r)];
      }
      all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(mine.data(), n, MPI_INT64_T, all.data(), counts.data(), displs.data(), MPI_INT64_T, root, c_);
    std::vector<std::vector<std::int64_t>> out;
    if (rank_ == root)
      for (int r = 0; r < size_; ++r) {
        const auto b = all.begin() + displs[static_cast<std::size_t>(r)];
        out.emplace_back(b, b + counts[static_cast<std::size_t>(r)]);
      }
    return out;
  }
  std::unique_ptr<ProcessGroup> split(bool member, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    MPI_Comm_split(c_, member ? 0 : MPI_UNDEFINED, key, &sub);
    if (sub == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiGroup>(sub, false, concurrent_);
  }
  std::unique_ptr<Communicator> communicator(Device* dev) override {
    return std::make_unique<MpiCommunicator>(c_, dev != nullptr && !dev->host_memory() ? dev : nullptr);
  }
  void barrier() override { MPI_Barrier(c_); }
  bool concurrent() const override { return concurrent_; }
  [[noreturn]] void abort(int code) override {
    MPI_Abort(c_, code);
    std::_Exit(code);
  }

 private:
  MPI_Comm c_;
  bool world_;
  bool concurrent_;  // MPI_THREAD_MULTIPLE
  int rank_ = 0, size_ = 1;
};

const char* env(const char* name) { return std::getenv(name); }

}  // namespace

bool launched_by_mpi() {
  return env("OMPI_COMM_WORLD_SIZE") != nullptr || env("PMI_SIZE") != nullptr || env("PMIX_RANK") != nullptr;
}

int mpi_local_rank() {
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (const char* s = env(v)) return std::atoi(s);
  return 0;
}

Result<std::unique_ptr<ProcessGroup>> mpi_world(int& argc, char**& argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
    return Diagnostic{{}, "", "MPI_Init_thread failed", "start with mpirun, or run without it"};
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return Diagnostic{{}, "", "this MPI library offers no thread support (MPI_THREAD_SERIALIZED needed)", ""};
  }
  return std::unique_ptr<ProcessGroup>(std::make_unique<MpiGroup>(MPI_COMM_WORLD, true, provided == MPI_THREAD_MULTIPLE));
}

}  // namespace hetsim::exec

#include "exec/comm/shm_group.hpp"

#include "exec/comm/host_stage.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace hetsim::exec {

ShmGroup::ShmGroup(int members)
    : n_(members),
      bar_(members),
      in_(static_cast<std::size_t>(members), nullptr),
      gone_(static_cast<std::size_t>(members), false) {}

void ShmGroup::barrier() { bar_.arrive_and_wait(); }

// out[i − lo] (or out[i] when out is the shared sum) = Σ_r in_r[offset + i] for i in [lo, hi):
// members added in rank order, one vectorisable pass per member.
void ShmGroup::sum_slice(float* out, std::size_t offset, std::size_t lo, std::size_t hi) {
  bool first = true;
  for (int r = 0; r < n_; ++r) {
    const float* in = in_[static_cast<std::size_t>(r)];
    if (in == nullptr) continue;
    in += offset;
    if (first) {
      for (std::size_t i = lo; i < hi; ++i) out[i] = in[i];
      first = false;
    } else {
      for (std::size_t i = lo; i < hi; ++i) out[i] += in[i];
    }
  }
  if (first)
    for (std::size_t i = lo; i < hi; ++i) out[i] = 0.0f;
}

void ShmGroup::leave(int rank) {
  in_[static_cast<std::size_t>(rank)] = nullptr;
  ++departed_;
  {
    const std::lock_guard<std::mutex> lock(mail_mutex_);
    gone_[static_cast<std::size_t>(rank)] = true;
  }
  mail_cv_.notify_all();
  bar_.arrive_and_drop();
}

std::int64_t ShmGroup::all_reduce(int rank, float* buf, std::size_t count) {
  if (n_ == 1) return host_clock_ns();
  in_[static_cast<std::size_t>(rank)] = buf;
  {
    // Every member makes room (a member may have left; the buffer only grows).
    const std::lock_guard<std::mutex> lock(sum_mutex_);
    if (sum_.size() < count) sum_.resize(count);
  }
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  // Each member sums its slice of the vector (ranks in order: the same bits every time).
  const std::size_t per = (count + static_cast<std::size_t>(n_) - 1) / static_cast<std::size_t>(n_);
  const std::size_t lo = std::min(count, per * static_cast<std::size_t>(rank));
  const std::size_t hi = std::min(count, lo + per);
  sum_slice(sum_.data(), 0, lo, hi);
  bar_.arrive_and_wait();
  std::memcpy(buf, sum_.data(), count * sizeof(float));
  bar_.arrive_and_wait();  // nobody reuses sum_ before all have copied
  return began;
}

std::int64_t ShmGroup::all_gather(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  for (int r = 0; r < n_; ++r)
    if (in_[static_cast<std::size_t>(r)] != nullptr)
      std::memcpy(out + static_cast<std::size_t>(r) * count, in_[static_cast<std::size_t>(r)], count * sizeof(float));
  bar_.arrive_and_wait();
  return began;
}

std::int64_t ShmGroup::reduce_scatter(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  sum_slice(out, static_cast<std::size_t>(rank) * count, 0, count);
  bar_.arrive_and_wait();
  return began;
}

std::int64_t ShmGroup::all_to_all(int rank, const float* in, float* out, std::size_t count) {
  in_[static_cast<std::size_t>(rank)] = in;
  bar_.arrive_and_wait();
  const std::int64_t began = host_clock_ns();
  // Pull: slice `rank` of every member's input lands in slot p of this member's output.
  for (int p = 0; p < n_; ++p)
    if (const float* src = in_[static_cast<std::size_t>(p)]; src != nullptr)
      std::memcpy(out + static_cast<std::size_t>(p) * count, src + static_cast<std::size_t>(rank) * count,
                  count * sizeof(float));
  bar_.arrive_and_wait();
  return began;
}

std::int64_t ShmGroup::send(int from, int to, int tag, const float* buf, std::size_t count) {
  const std::int64_t began = host_clock_ns();
  std::vector<float> msg(buf, buf + count);
  {
    const std::lock_guard<std::mutex> lock(mail_mutex_);
    mail_[{from, to, tag}].push_back(std::move(msg));
  }
  mail_cv_.notify_all();
  return began;
}

bool ShmGroup::recv(int to, int from, int tag, float* buf, std::size_t count) {
  std::unique_lock<std::mutex> lock(mail_mutex_);
  auto& q = mail_[{from, to, tag}];
  mail_cv_.wait(lock, [&] { return !q.empty() || gone_[static_cast<std::size_t>(from)]; });
  if (q.empty()) return false;
  std::vector<float> msg = std::move(q.front());
  q.pop_front();
  lock.unlock();
  std::memcpy(buf, msg.data(), std::min(count, msg.size()) * sizeof(float));
  return true;
}

namespace {

class ShmCommunicator final : public Communicator {
 public:
  ShmCommunicator(std::shared_ptr<ShmGroup> g, int rank, Device* staged)
      : g_(std::move(g)), rank_(rank), stage_(staged) {}
  int rank() const override { return rank_; }
  int size() const override { return g_->size(); }

  Result<std::int64_t> all_reduce(float* buf, std::size_t count) override {
    float* h = stage_.in(buf, count, 0);
    const auto t = g_->all_reduce(rank_, h, count);
    stage_.out(h, buf, count);
    return checked(t, "all-reduce");
  }
  Result<std::int64_t> all_gather(const float* in, float* out, std::size_t count) override {
    return checked(stage_.through(in, count, out, count * n(), [&](const float* h, float* ho) {
      return g_->all_gather(rank_, h, ho, count);
    }), "all-gather");
  }
  Result<std::int64_t> reduce_scatter(const float* in, float* out, std::size_t count) override {
    return checked(stage_.through(in, count * n(), out, count, [&](const float* h, float* ho) {
      return g_->reduce_scatter(rank_, h, ho, count);
    }), "reduce-scatter");
  }
  Result<std::int64_t> all_to_all(const float* in, float* out, std::size_t count) override {
    return checked(stage_.through(in, count * n(), out, count * n(), [&](const float* h, float* ho) {
      return g_->all_to_all(rank_, h, ho, count);
    }), "all-to-all");
  }
  Result<std::int64_t> send(const float* buf, std::size_t count, int peer, int tag) override {
    return checked(g_->send(rank_, peer, tag, stage_.in(buf, count, 0), count), "send");
  }
  Result<std::int64_t> recv(float* buf, std::size_t count, int peer, int tag) override {
    const std::int64_t t = host_clock_ns();
    float* h = stage_.out_buffer(buf, count, 0);
    if (!g_->recv(rank_, peer, tag, h, count))
      return Diagnostic{{}, "", "recv: member " + std::to_string(peer) + " left the group before sending", ""};
    stage_.out(h, buf, count);
    return t;
  }
  Diagnostics barrier() override {
    g_->barrier();
    if (g_->departed()) return {Diagnostic{{}, "", "barrier: a member of the group failed", ""}};
    return {};
  }
  void leave() override { g_->leave(rank_); }

 private:
  std::size_t n() const { return static_cast<std::size_t>(g_->size()); }
  Result<std::int64_t> checked(std::int64_t t, const char* what) const {
    if (g_->departed())
      return Diagnostic{{}, "", std::string(what) + ": a member of the group failed and left", ""};
    return t;
  }

  std::shared_ptr<ShmGroup> g_;
  int rank_;
  HostStage stage_;
};

}  // namespace

std::unique_ptr<Communicator> shm_communicator(std::shared_ptr<ShmGroup> group, int rank, Device* staged) {
  return std::make_unique<ShmCommunicator>(std::move(group), rank, staged);
}

Result<Communicators> Backend::communicators(const std::vector<Device*>& members) {
  auto g = std::make_shared<ShmGroup>(static_cast<int>(members.size()));
  Communicators out;
  for (std::size_t i = 0; i < members.size(); ++i)
    out.push_back(shm_communicator(g, static_cast<int>(i), members[i]->host_memory() ? nullptr : members[i]));
  return out;
}

Result<std::unique_ptr<Device>> Backend::open_as(int index, const DeviceSetup& setup) {
  if (setup.speed != 1.0)
    return Diagnostic{{}, "speed", "the " + name() + " backend cannot slow its devices (speed " + std::to_string(setup.speed) + ")",
                      "device speed factors are a cpu backend feature (docs/executor.md)"};
  if (setup.cores != 0)
    return Diagnostic{{}, "cores", "the " + name() + " backend's devices have no core count to set",
                      "cores per device are a cpu backend feature (docs/executor.md)"};
  if (setup.memory != 0)
    return Diagnostic{{}, "memory", "the " + name() + " backend cannot cap its devices' memory",
                      "run without a memory per pool"};
  return open(index);
}

Result<std::unique_ptr<Communicator>> Backend::communicator(Device* device, ProcessGroup& group) {
  return group.communicator(device);
}

std::string Backend::transport(const std::vector<Device*>& members) const {
  return !members.empty() && !members[0]->host_memory() ? "shared memory, staged through host buffers"
                                                         : "shared memory";
}

}  // namespace hetsim::exec

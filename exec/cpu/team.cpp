#include "exec/cpu/team.hpp"

#include <chrono>
#include <thread>

#include "models/base/assert.hpp"

namespace hetsim::exec::cpu {
namespace {

// Spins until `done()` or `kSpin` has passed; true when done. A helper that slept on a condition
// variable takes 20-50 µs to wake on the development machine, longer than many kernels, so the
// team's threads spin that long between kernels before they sleep (as OpenMP runtimes do).
constexpr auto kSpin = std::chrono::microseconds(200);
// Each turn yields the core (a no-op when nothing else wants it; where the plan's devices have
// more threads than the machine cores, the threads that have work get them).
template <class Done>
bool spin_until(Done&& done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    std::this_thread::yield();
    if ((i & 15) == 15 && std::chrono::steady_clock::now() > until) return false;
  }
}

}  // namespace

Team::Team(int members) {
  HETSIM_ASSERT(members >= 1, "a team of at least one thread");
  helpers_.reserve(static_cast<std::size_t>(members - 1));
  try {
    for (int i = 1; i < members; ++i) helpers_.emplace_back([this, i] { serve(i); });
  } catch (...) {  // the ones started stop before the error goes on
    stop();
    throw;
  }
}

Team::~Team() { stop(); }

void Team::stop() {
  {
    const std::lock_guard lock(mutex_);
    stop_ = true;
  }
  start_.notify_all();
  for (auto& t : helpers_)
    if (t.joinable()) t.join();
}

void Team::run(int parts, const std::function<void(int, int)>& part) {
  HETSIM_ASSERT(parts >= 1 && parts <= size(), "parts within the team");
  if (parts == 1) {
    part(0, 1);
    return;
  }
  {
    const std::lock_guard lock(mutex_);  // a helper about to sleep sees the new round or is woken
    job_ = &part;
    parts_ = parts;
    pending_.store(parts - 1, std::memory_order_relaxed);
    round_.fetch_add(1, std::memory_order_release);
  }
  start_.notify_all();
  part(0, parts);
  if (!spin_until([&] { return pending_.load(std::memory_order_acquire) == 0; })) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_.load(std::memory_order_acquire) == 0; });
  }
}

void Team::serve(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    const auto next = [&] { return round_.load(std::memory_order_acquire) != seen; };
    if (!spin_until(next)) {
      std::unique_lock lock(mutex_);
      start_.wait(lock, [&] { return stop_ || next(); });
      if (stop_) return;
    }
    int parts = 0;
    const std::function<void(int, int)>* job = nullptr;
    {  // the round, its parts and its job as one (a later round may have begun meanwhile)
      const std::lock_guard lock(mutex_);
      if (stop_) return;
      seen = round_.load(std::memory_order_relaxed);
      parts = parts_;
      job = job_;
    }
    if (index >= parts) continue;  // a round with fewer parts than helpers
    (*job)(index, parts);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      const std::lock_guard lock(mutex_);  // the caller, if it sleeps, is woken
      done_.notify_one();
    }
  }
}

}  // namespace hetsim::exec::cpu

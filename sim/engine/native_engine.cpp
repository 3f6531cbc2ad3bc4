#include "sim/engine/native_engine.hpp"

#include <algorithm>
#include <cmath>
#include <queue>

#include "models/base/assert.hpp"

namespace hetsim::engine {
namespace {

constexpr std::uint32_t kNone = 0xffffffffu;

struct Event {
  EventKey key;
  std::uint32_t task = 0;
  std::uint32_t version = 0;  // a completion moved later (retime) leaves its old event stale
  bool operator>(const Event& o) const { return key > o.key; }
};

class Run {
 public:
  Run(const schedule::TaskGraph& g, const RunControl& c, std::span<const double> f) : g_(g), c_(c), factor_(f) {
    const std::size_t n = g.tasks.size();
    tr_.start.assign(n, -1);
    tr_.end.assign(n, -1);
    pending_ = g.pred_count;
    via_.assign(n, kNone);
    version_.assign(n, 0);
    dev_.resize(g.devices.size());
    arrived_.assign(g.collectives.size(), 0);
    last_via_.assign(g.collectives.size(), kNone);
    live_.resize(g.devices.size());
    tr_.memory.resize(g.devices.size());
    tr_.peak_bytes.resize(g.devices.size());
    tr_.busy.assign(g.devices.size(), {});
    for (std::size_t d = 0; d < g.devices.size(); ++d) {
      live_[d] = g.devices[d].baseline_bytes;
      tr_.peak_bytes[d] = live_[d];
      tr_.memory[d].push_back({0, live_[d]});
    }
  }

  Result<Trace> go() {
    for (std::uint32_t t = 0; t < g_.tasks.size(); ++t)
      if (pending_[t] == 0) ready(t, 0, kNone);
    const double n = std::max<double>(1.0, static_cast<double>(g_.tasks.size()));
    while (!queue_.empty()) {
      const Event e = queue_.top();
      queue_.pop();
      if (e.version != version_[e.task]) continue;  // retimed
      ++tr_.events;  // one per task: its completion
      complete(e.task, e.key.time);
      if ((tr_.events & 0xffffu) == 0) {
        if (c_.stop.stop_requested()) return stopped_error();
        if (c_.progress) c_.progress(std::min(1.0, static_cast<double>(tr_.events) / n));
      }
    }
    if (c_.stop.stop_requested()) return stopped_error();
    if (c_.progress) c_.progress(1.0);
    for (std::uint32_t t = 0; t < g_.tasks.size(); ++t)
      if (tr_.end[t] < 0) {
        const auto& task = g_.tasks[t];
        return Diagnostic{{}, "",
                          "the schedule deadlocks: task '" + schedule::task_name(task) + "' on device " +
                              g_.devices[task.device].label + " never runs",
                          "this is a bug in the schedule; please report it with the scenario", ErrorKind::Internal};
      }
    critical_path();
    return std::move(tr_);
  }

 private:
  void ready(std::uint32_t t, SimTime now, std::uint32_t via) {
    via_[t] = via;
    const std::uint32_t c = g_.tasks[t].collective;
    if (c == schedule::kNoCollective) {
      start(t, now);
      return;
    }
    // A collective starts when its last member is ready; its members share that member's
    // predecessor on the critical path.
    last_via_[c] = via;
    if (++arrived_[c] < g_.collectives[c].size()) return;
    for (std::uint32_t m : g_.collectives[c]) {
      via_[m] = last_via_[c];
      start(m, now);
    }
  }

  void start(std::uint32_t t, SimTime now) {
    const auto& task = g_.tasks[t];
    tr_.start[t] = now;
    const SimTime d = factor_.empty() || task.stream != schedule::Stream::Compute
                          ? task.duration
                          : scaled(task.duration, factor_[task.device]);
    if (task.alloc_bytes != 0) change_memory(task.device, now, task.alloc_bytes);
    Device& dv = dev_[task.device];
    if (task.stream == schedule::Stream::Compute) {
      dv.computing = t;
      dv.left = static_cast<double>(d);
      dv.since = now;
      dv.rate = rate(task.device);
      queue_.push({{now + finish_in(dv), Phase::Complete, seq_++}, t, version_[t]});
      return;
    }
    if (schedule::slows_compute(task) && dv.collectives++ == 0) retime(task.device, now);
    queue_.push({{now + d, Phase::Complete, seq_++}, t, version_[t]});
  }

  // A device's compute speed now: 1, or 1/(1 + σ) while a DP collective runs beside it.
  double rate(std::uint32_t d) const {
    const double s = g_.devices[d].overlap_slowdown;
    return dev_[d].collectives > 0 && s > 0 ? 1.0 / (1.0 + s) : 1.0;
  }
  static SimTime finish_in(const auto& dv) { return static_cast<SimTime>(std::llround(dv.left / dv.rate)); }

  // The device's speed changed at `now`: its running compute task keeps the work it has done
  // and ends when the rest is done at the new speed.
  void retime(std::uint32_t d, SimTime now) {
    Device& dv = dev_[d];
    const double r = rate(d);
    if (dv.computing == kNone || r == dv.rate) return;
    dv.left = std::max(0.0, dv.left - static_cast<double>(now - dv.since) * dv.rate);
    dv.since = now;
    dv.rate = r;
    queue_.push({{now + finish_in(dv), Phase::Complete, seq_++}, dv.computing, ++version_[dv.computing]});
  }

  void complete(std::uint32_t t, SimTime now) {
    const auto& task = g_.tasks[t];
    tr_.end[t] = now;
    tr_.busy[task.device][static_cast<int>(task.stream)] += now - tr_.start[t];
    if (task.stream == schedule::Stream::Compute) dev_[task.device].computing = kNone;
    else if (schedule::slows_compute(task) && --dev_[task.device].collectives == 0) retime(task.device, now);
    if (now > tr_.makespan) tr_.makespan = now;
    if (task.free_bytes != 0) change_memory(task.device, now, -task.free_bytes);
    for (std::uint32_t i = g_.succ_begin[t]; i < g_.succ_begin[t + 1]; ++i) {
      const std::uint32_t s = g_.succ[i];
      if (--pending_[s] == 0) ready(s, now, t);
    }
  }

  void change_memory(std::uint32_t d, SimTime now, std::int64_t delta) {
    live_[d] += delta;
    auto& pts = tr_.memory[d];
    if (!pts.empty() && pts.back().time == now) pts.back().bytes = live_[d];
    else pts.push_back({now, live_[d]});
    if (live_[d] > tr_.peak_bytes[d]) tr_.peak_bytes[d] = live_[d];
  }

  // From the task that ends last, follow the predecessor that made each task ready.
  void critical_path() {
    std::uint32_t last = kNone;
    for (std::uint32_t t = 0; t < g_.tasks.size(); ++t)
      if (last == kNone || tr_.end[t] > tr_.end[last]) last = t;
    for (std::uint32_t t = last; t != kNone; t = via_[t]) tr_.critical_path.push_back(t);
    std::reverse(tr_.critical_path.begin(), tr_.critical_path.end());
  }

  // A device's running compute task (its compute stream runs one at a time): the work left at
  // `since` (ns at full speed) and its speed since then; how many DP collectives run beside it.
  struct Device {
    std::uint32_t computing = kNone;
    double left = 0, rate = 1;
    SimTime since = 0;
    int collectives = 0;
  };

  const schedule::TaskGraph& g_;
  const RunControl& c_;
  std::span<const double> factor_;
  Trace tr_;
  std::vector<Device> dev_;
  std::vector<std::uint32_t> pending_, via_, version_, arrived_, last_via_;
  std::vector<std::int64_t> live_;
  std::priority_queue<Event, std::vector<Event>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
};

}  // namespace

Diagnostic stopped_error() { return Diagnostic{{}, "", "the simulation was stopped", "", ErrorKind::Environment}; }

SimTime scaled(SimTime d, double factor) {
  if (factor == 1.0) return d;
  return static_cast<SimTime>(std::llround(static_cast<double>(d) * factor));
}

Result<Trace> run_native(const schedule::TaskGraph& g, const RunControl& control,
                         std::span<const double> compute_factor) {
  HETSIM_ASSERT(compute_factor.empty() || compute_factor.size() == g.devices.size(),
                "one compute factor per device");
  return Run(g, control, compute_factor).go();
}

}  // namespace hetsim::engine

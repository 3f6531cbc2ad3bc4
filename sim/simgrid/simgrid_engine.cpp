#include "sim/simgrid/simgrid_engine.hpp"

#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <list>
#include <map>
#include <tuple>

#include "sim/simgrid/flows.hpp"
#include "sim/simgrid/platform.hpp"

namespace sg4 = simgrid::s4u;

namespace hetsim::engine {
namespace {

constexpr std::uint32_t kNone = 0xffffffffu;
constexpr double kSpeed = 1e9;  // flop/s of every host: an execution of d ns is d flops
constexpr int kDelay = -2;      // Tag::flow of a task's wait before its flows (TaskWork::delay)
constexpr int kTimerCores = 1 << 20;  // more than waits ever run at once

schedule::SimTime to_ns(double s) { return static_cast<schedule::SimTime>(std::llround(s * 1e9)); }

// One flow as it ran, for the contention report.
struct FlowRecord {
  std::uint32_t task = 0;
  int src = 0, dst = 0;
  double bytes = 0, rate = 0, start = 0, end = 0;
};

class Run {
 public:
  Run(const schedule::TaskGraph& g, const platform::Platform& p, const platform::Decomposition& d)
      : g_(g), p_(p), d_(d) {}

  Result<SimgridRun> go() {
    build_platform();
    const std::size_t n = g_.size();
    out_.trace.start.assign(n, -1);
    out_.trace.end.assign(n, -1);
    pending_ = g_.pred_count;
    via_.assign(n, kNone);
    outstanding_.assign(n, 0);
    arrived_.assign(g_.collectives.size(), 0);
    last_via_.assign(g_.collectives.size(), kNone);
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) { finished(a); });
    sg4::Engine::on_time_advance_cb([this](double) { released_.clear(); });
    for (std::uint32_t t = 0; t < n; ++t)
      if (pending_[t] == 0) ready(t, kNone);
    drain();
    engine_->run();
    // The slowing executions (suspended ones, and any still running if a collective never ended)
    // are cancelled and SimGrid runs once more to let them go, so that none outlives the engine
    // (their actions would be freed after its model).
    for (auto& c : sm_)
      if (c.slowing) parked_.push_back(std::move(c.slowing));
    for (auto& x : parked_) x->cancel();
    engine_->run();
    parked_.clear();
    for (std::uint32_t t = 0; t < n; ++t)
      if (out_.trace.end[t] < 0)
        return Diagnostic{{}, "", "the simgrid engine never ran task '" + schedule::task_name(g_.tasks[t]) + "' of " +
                                      g_.devices[g_.tasks[t].device].label,
                          "this is a bug; please report it with the scenario", ErrorKind::Internal};
    finish_trace();
    report_contention();
    return std::move(out_);
  }

 private:
  void build_platform() {
    int argc = 1;
    char arg0[] = "hetsim";
    char* argv[] = {arg0, nullptr};
    engine_ = std::make_unique<sg4::Engine>(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    // Textbook flows: time = latency + size / bandwidth share (no TCP corrections).
    sg4::Engine::set_config("network/model:CM02");
    sg4::Engine::set_config("network/crosstraffic:0");
    sg4::Engine::set_config("network/TCP-gamma:0");  // no TCP window cap (it bit NVLink 5 ports)
    auto* zone = sg4::create_full_zone("cluster");
    for (const auto& h : p_.hosts) hosts_.push_back(zone->create_host(h.name, kSpeed)->set_core_count(4)->seal());
    // Per simulated device, one core for its compute stream, which its DP collectives share:
    // while one runs, an execution of weight σ beside the compute leaves it 1/(1 + σ) of the
    // core (SimGrid shares a core by the executions' priorities).
    timer_ = zone->create_host("timer", kSpeed)->set_core_count(kTimerCores)->seal();
    for (std::size_t d = 0; d < g_.devices.size(); ++d)
      sm_.push_back({zone->create_host("compute-" + std::to_string(d), kSpeed)->seal(), nullptr, 0});
    for (const auto& l : p_.links)
      links_.push_back(zone->create_split_duplex_link(l.name, l.bandwidth)->set_latency(l.latency)->seal());
    // Routes of the pairs that communicate (a Full zone holds only what is added).
    std::map<std::pair<int, int>, bool> pairs;
    for (const auto& w : d_.work)
      for (const auto& f : w.flows) pairs[{f.src, f.dst}] = true;
    for (const auto& [ab, unused] : pairs) {
      std::vector<sg4::LinkInRoute> r;
      for (const auto& hop : p_.route(ab.first, ab.second))
        r.emplace_back(links_[hop.link],
                       hop.up ? sg4::LinkInRoute::Direction::UP : sg4::LinkInRoute::Direction::DOWN);
      zone->add_route(hosts_[static_cast<std::size_t>(ab.first)]->get_netpoint(),
                      hosts_[static_cast<std::size_t>(ab.second)]->get_netpoint(), nullptr, nullptr, r, false);
    }
    zone->seal();
  }

  // As the native engine: a task is ready when its predecessors ended; a collective's members
  // start together when the last is ready.
  void ready(std::uint32_t t, std::uint32_t via) {
    via_[t] = via;
    const std::uint32_t c = g_.tasks[t].collective;
    if (c == schedule::kNoCollective) {
      start(t);
      return;
    }
    last_via_[c] = via;
    if (++arrived_[c] < g_.collectives[c].size()) return;
    for (std::uint32_t m : g_.collectives[c]) {
      via_[m] = last_via_[c];
      start(m);
    }
  }

  void start(std::uint32_t t) {
    const double now = sg4::Engine::get_clock();
    out_.trace.start[t] = to_ns(now);
    const auto& w = d_.work[t];
    const auto& task = g_.tasks[t];
    if (schedule::slows_compute(task)) collectives_beside(task.device, +1);
    if (d_.owner[t] != t) return;  // ends with its collective's first member
    if (task.duration == 0) {
      done_now_.push_back(t);
      return;
    }
    if (w.exec_host >= 0) {
      sg4::ExecPtr x = sg4::Exec::init();
      x->set_flops_amount(static_cast<double>(task.duration) * (kSpeed * 1e-9));
      x->set_host(task.stream == schedule::Stream::Compute ? sm_[task.device].host
                                                           : hosts_[static_cast<std::size_t>(w.exec_host)]);
      start_exec(t, x, -1);
      return;
    }
    if (w.delay > 0) {
      // The task's time beyond its transfers first: a wait on the timer host (one core per
      // wait, so that waits never share), then the flows.
      sg4::ExecPtr x = sg4::Exec::init();
      x->set_flops_amount(w.delay * kSpeed)->set_host(timer_);
      start_exec(t, x, kDelay);
      return;
    }
    start_flows(t);
  }

  // Starts exec `x` as task t's one outstanding activity, tagged `part`.
  void start_exec(std::uint32_t t, const sg4::ExecPtr& x, int part) {
    Tag* tg = tag(t, part);
    x->set_data(tg);
    outstanding_[t] = 1;
    x->start();
    tg->activity = x;
    ++out_.activities;
  }

  // Starts task t's flows.
  void start_flows(std::uint32_t t) {
    const auto& w = d_.work[t];
    outstanding_[t] = static_cast<std::uint32_t>(w.flows.size());
    for (std::size_t k = 0; k < w.flows.size(); ++k) {
      const auto& f = w.flows[k];
      // Setting both ends starts the flow. (No rate cap: SimGrid 3.32 ignores Comm::set_rate on
      // host-to-host flows, so a flow on links faster than it was priced for runs faster.)
      sg4::CommPtr c = sg4::Comm::sendto_init();
      c->set_payload_size(static_cast<std::uint64_t>(std::ceil(f.bytes)));
      Tag* tg = tag(t, static_cast<int>(k));
      c->set_data(tg);
      c->set_source(hosts_[static_cast<std::size_t>(f.src)]);
      c->set_destination(hosts_[static_cast<std::size_t>(f.dst)]);
      tg->activity = c;
      ++out_.activities;
      ++out_.flows;
    }
  }

  // One more (+1) or one fewer (−1) DP collective runs on device d: the first starts an
  // execution that slows its compute, the last suspends it for good (a suspended execution
  // shares nothing; SimGrid 3.32's Activity::resume leaves the activity marked suspended, so
  // that it could not be suspended again, hence a new one each time). It carries no tag
  // (`finished` ignores it) and is held until the run ends.
  void collectives_beside(std::uint32_t d, int change) {
    Compute& c = sm_[d];
    const double sigma = g_.devices[d].overlap_slowdown;
    if (sigma <= 0) return;
    c.collectives += change;
    if (change > 0 && c.collectives == 1) {
      c.slowing = sg4::Exec::init();
      c.slowing->set_flops_amount(1e30)->set_priority(sigma)->set_host(c.host);
      c.slowing->start();
    } else if (change < 0 && c.collectives == 0 && c.slowing) {
      c.slowing->suspend();
      parked_.push_back(std::move(c.slowing));
      c.slowing = nullptr;
    }
  }

  // Activities carry (task, flow index) in their data pointer; the tag holds the activity alive
  // until it has finished.
  struct Tag {
    std::uint32_t task;
    int flow;
    sg4::ActivityPtr activity;
  };
  Tag* tag(std::uint32_t t, int flow) {
    tags_.push_back({t, flow, nullptr});
    return &tags_.back();
  }

  void finished(const sg4::Activity& a) {
    auto* tg = a.get_data<Tag>();
    if (tg == nullptr) return;
    // Released once SimGrid has moved on (never inside its own callback).
    released_.push_back(std::move(tg->activity));
    if (tg->flow == kDelay) {
      start_flows(tg->task);
      return;
    }
    if (tg->flow >= 0) {
      const auto& f = d_.work[tg->task].flows[static_cast<std::size_t>(tg->flow)];
      flows_.push_back({tg->task, f.src, f.dst, f.bytes, f.rate, a.get_start_time(), a.get_finish_time()});
    }
    if (--outstanding_[tg->task] == 0) done_now_.push_back(tg->task);
    drain();
  }

  // Completes the tasks that ended now and starts what they make ready (a worklist: zero-length
  // tasks end at once).
  void drain() {
    const double now = sg4::Engine::get_clock();
    while (!done_now_.empty()) {
      const std::uint32_t t = done_now_.back();
      done_now_.pop_back();
      std::vector<std::uint32_t> ended{t};
      const std::uint32_t c = g_.tasks[t].collective;
      if (c != schedule::kNoCollective && d_.owner[t] == t)
        for (std::uint32_t m : g_.collectives[c])
          if (m != t && d_.owner[m] == t) ended.push_back(m);
      for (std::uint32_t e : ended) {
        out_.trace.end[e] = std::max(to_ns(now), out_.trace.start[e]);
        if (schedule::slows_compute(g_.tasks[e])) collectives_beside(g_.tasks[e].device, -1);
        for (std::uint32_t i = g_.succ_begin[e]; i < g_.succ_begin[e + 1]; ++i)
          if (--pending_[g_.succ[i]] == 0) ready(g_.succ[i], e);
      }
    }
  }

  // Memory, stream occupancy, makespan and critical path from the start and end times, the
  // native engine's way (frees before allocations at the same instant).
  void finish_trace() {
    auto& tr = out_.trace;
    const std::size_t nd = g_.devices.size();
    tr.memory.assign(nd, {});
    tr.peak_bytes.assign(nd, 0);
    tr.busy.assign(nd, {});
    struct Change {
      schedule::SimTime time;
      int order;
      std::uint32_t device;
      std::int64_t delta;
    };
    std::vector<Change> changes;
    for (std::uint32_t t = 0; t < g_.size(); ++t) {
      const auto& task = g_.tasks[t];
      tr.makespan = std::max(tr.makespan, tr.end[t]);
      tr.busy[task.device][static_cast<int>(task.stream)] += tr.end[t] - tr.start[t];
      if (task.alloc_bytes != 0) changes.push_back({tr.start[t], 1, task.device, task.alloc_bytes});
      if (task.free_bytes != 0) changes.push_back({tr.end[t], 0, task.device, -task.free_bytes});
    }
    std::stable_sort(changes.begin(), changes.end(),
                     [](const Change& a, const Change& b) { return std::tie(a.time, a.order) < std::tie(b.time, b.order); });
    std::vector<std::int64_t> live(nd);
    for (std::size_t d = 0; d < nd; ++d) {
      live[d] = g_.devices[d].baseline_bytes;
      tr.peak_bytes[d] = live[d];
      tr.memory[d].push_back({0, live[d]});
    }
    for (const auto& ch : changes) {
      live[ch.device] += ch.delta;
      auto& pts = tr.memory[ch.device];
      if (pts.back().time == ch.time) pts.back().bytes = live[ch.device];
      else pts.push_back({ch.time, live[ch.device]});
      tr.peak_bytes[ch.device] = std::max(tr.peak_bytes[ch.device], live[ch.device]);
    }
    std::uint32_t last = kNone;
    for (std::uint32_t t = 0; t < g_.size(); ++t)
      if (last == kNone || tr.end[t] > tr.end[last]) last = t;
    for (std::uint32_t t = last; t != kNone; t = via_[t]) tr.critical_path.push_back(t);
    std::reverse(tr.critical_path.begin(), tr.critical_path.end());
    tr.events = out_.activities;
  }

  // Per link and direction: when did the flows crossing it ask for more than its bandwidth (each
  // flow at the rate it would get alone)? And what did contention cost the flows in all?
  void report_contention() {
    struct Edge {
      double time;
      double rate;
    };
    std::map<std::pair<std::uint32_t, bool>, std::vector<Edge>> on;
    for (const auto& f : flows_) {
      const auto r = p_.route(f.src, f.dst);
      // Alone, a flow runs at the rate it was sized for (the cost model's): that is the demand it
      // puts on each link, and the time it should have taken.
      const double rate = f.rate;
      const double alone = p_.latency(r) + (rate > 0 ? f.bytes / rate : 0);
      out_.flow_delay_s += std::max(0.0, (f.end - f.start) - alone);
      for (const auto& h : r) {
        on[{h.link, h.up}].push_back({f.start, rate});
        on[{h.link, h.up}].push_back({f.end, -rate});
      }
    }
    for (auto& [key, edges] : on) {
      std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
        return a.time < b.time || (a.time == b.time && a.rate < b.rate);  // ends first
      });
      const double bw = p_.links[key.first].bandwidth;
      double demand = 0, over = 0, peak = 0;
      for (std::size_t i = 0; i < edges.size(); ++i) {
        demand += edges[i].rate;
        peak = std::max(peak, demand / bw);
        if (demand > bw * (1 + 1e-9) && i + 1 < edges.size()) over += edges[i + 1].time - edges[i].time;
      }
      if (over > 0)
        out_.contended.push_back({p_.links[key.first].name + (key.second ? " (up)" : " (down)"), over, peak});
    }
    std::stable_sort(out_.contended.begin(), out_.contended.end(),
                     [](const Contention& a, const Contention& b) { return a.overloaded_s > b.overloaded_s; });
  }

  const schedule::TaskGraph& g_;
  const platform::Platform& p_;
  const platform::Decomposition& d_;
  std::unique_ptr<sg4::Engine> engine_;
  std::vector<sg4::Host*> hosts_;
  sg4::Host* timer_ = nullptr;  ///< where tasks wait out their delay (TaskWork::delay)
  std::vector<sg4::Link*> links_;
  struct Compute {
    sg4::Host* host;
    sg4::ExecPtr slowing;  // running while `collectives` > 0
    int collectives;
  };
  std::vector<Compute> sm_;             // per simulated device
  std::vector<sg4::ExecPtr> parked_;    // suspended slowing executions
  SimgridRun out_;
  std::vector<std::uint32_t> pending_, via_, outstanding_, arrived_, last_via_, done_now_;
  std::deque<Tag> tags_;  // stable addresses
  std::vector<sg4::ActivityPtr> released_;
  std::vector<FlowRecord> flows_;
};

std::atomic<bool> used{false};

}  // namespace

Result<PlatformCheck> load_platform_file(const std::string& path, const std::string& src, const std::string& dst) {
  if (used.exchange(true))
    return Diagnostic{{}, "", "SimGrid runs one simulation per process", "run each simulation in its own process"};
  int argc = 1;
  char arg0[] = "hetsim";
  char* argv[] = {arg0, nullptr};
  sg4::Engine e(&argc, argv);
  xbt_log_control_set("root.thres:critical");
  try {
    e.load_platform(path);
    PlatformCheck c;
    c.hosts = e.get_host_count();
    sg4::Host* a = e.host_by_name_or_null(src);
    sg4::Host* b = e.host_by_name_or_null(dst);
    if (a == nullptr || b == nullptr) return Diagnostic{{path, 0, 0}, "", "no host '" + (a ? dst : src) + "'", ""};
    std::vector<sg4::Link*> links;
    double latency = 0;
    a->route_to(b, links, &latency);
    c.route_links = links.size();
    return c;
  } catch (const std::exception& ex) {
    return Diagnostic{{path, 0, 0}, "", std::string("SimGrid cannot load the platform: ") + ex.what(), ""};
  }
}

Result<SimgridRun> run_simgrid(const schedule::TaskGraph& g, const hw::ClusterSpec& cluster) {
  if (used.exchange(true))
    return Diagnostic{{}, "", "SimGrid runs one simulation per process", "run each simulation in its own process",
                      ErrorKind::Internal};
  const auto p = platform::build(cluster);
  auto d = platform::decompose(g, cluster, p);
  if (!d) return d.errors();
  return Run(g, p, *d).go();
}

}  // namespace hetsim::engine

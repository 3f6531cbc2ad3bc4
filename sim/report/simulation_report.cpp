#include "sim/report/simulation_report.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "sim/report/estimate_report.hpp"
#include "sim/schedule/schedule.hpp"

namespace hetsim::report {

std::optional<Diagnostic> beyond_the_clock(const Scenario& s, double step_s) {
  if (step_s <= schedule::kMaxSimulatedStepS) return std::nullopt;  // (NaN is beyond it too)
  return Diagnostic{{s.file, 0, 0}, "",
                    fmt::format("the step would last about {:.3g} s (its estimate), beyond the {:.0e} s the "
                                "simulation's clock is for", step_s, schedule::kMaxSimulatedStepS),
                    "check the scenario's link bandwidths and device peaks; `hetsim estimate` gives the closed form"};
}

Result<Simulation> run_simulation(const Scenario& s, const plan::Plan& p, const engine::RunControl& control) {
  Simulation sim;
  sim.estimate = analytic::estimate(s, p);
  if (auto d = beyond_the_clock(s, sim.estimate.step_time.v)) return *d;
  sim.graph = schedule::build_schedule(s, p);
  auto trace = engine::run_native(sim.graph, control);
  if (!trace) return trace.errors();
  sim.trace = std::move(*trace);
  sim.summary = engine::summarize(sim.graph, sim.trace);
  apply_simulation(sim);
  return sim;
}

void apply_simulation(Simulation& sim) {
  analytic::Estimate e = sim.estimate;
  const double step = static_cast<double>(sim.trace.makespan) * 1e-9;
  const double r = e.step_time.v / step;  // >1 when the simulation is faster
  e.step_time = Duration{step};
  e.tokens_per_s *= r;
  e.flops_per_device = e.flops_per_device * r;
  e.mfu *= r;
  e.time_to_train = e.time_to_train / r;
  e.cost_to_train_usd /= r;
  e.usd_per_million_tokens /= r;
  e.energy_kwh /= r;
  e.bubble_fraction = sim.summary.bubble_fraction;
  e.fits = true;
  for (std::size_t pi = 0; pi < e.device_types.size(); ++pi) {
    auto& d = e.device_types[pi];
    d.peak_memory = Bytes{0};
    for (std::size_t k = 0; k < sim.graph.devices.size(); ++k) {
      const auto& rep = sim.graph.devices[k];
      if (rep.pool != static_cast<int>(pi)) continue;
      const Bytes peak{static_cast<double>(sim.summary.devices[k].peak_bytes)};
      if (peak > d.peak_memory) {
        d.peak_memory = peak;
        d.worst_stage = "group " + std::to_string(rep.group) + " stage " + std::to_string(rep.stage);
      }
    }
    d.fits = d.count == 0 || d.peak_memory <= d.capacity;
    e.fits = e.fits && d.fits;
  }
  sim.simulated = std::move(e);
}

namespace {

// Busy fraction of a device type: the compute-stream busy fraction of its simulated devices,
// weighted by the real devices each stands for.
double busy_of_pool(const Simulation& sim, int pool) {
  double busy = 0, n = 0;
  for (std::size_t k = 0; k < sim.graph.devices.size(); ++k) {
    const auto& rep = sim.graph.devices[k];
    if (rep.pool != pool) continue;
    busy += sim.summary.devices[k].busy_fraction * rep.count;
    n += rep.count;
  }
  return n > 0 ? busy / n : 0;
}

double seconds(schedule::SimTime t) { return static_cast<double>(t) * 1e-9; }

}  // namespace

namespace {

// The SimGrid engine's section: its cost, its step beside the native engine's, contended links.
std::string simgrid_text(const SimgridReport& sg, double step) {
  std::string o = fmt::format(
      "\nengine      simgrid: {} activities ({} flows) in {:.2f} s ({:.3g} activities/s); the native engine "
      "says {:.4g} s, simgrid {:.4g} s ({:+.2f} %)\n",
      sg.activities, sg.flows, sg.wall_s, static_cast<double>(sg.activities) / std::max(sg.wall_s, 1e-9),
      sg.native_step_s, step, 100 * (step / sg.native_step_s - 1));
  if (sg.contended.empty()) {
    o += "contention  none: no link was asked for more than its bandwidth\n";
    return o;
  }
  o += fmt::format("contention  flows took {:.4g} s longer in all than alone; links asked for more than their "
                   "bandwidth:\n",
                   sg.flow_delay_s);
  for (std::size_t i = 0; i < std::min<std::size_t>(8, sg.contended.size()); ++i)
    o += fmt::format("  {:<28} overloaded {:.4g} s, peak demand {:.2f}× its bandwidth\n", sg.contended[i].link,
                     sg.contended[i].overloaded_s, sg.contended[i].peak_demand);
  if (sg.contended.size() > 8) o += fmt::format("  … and {} more\n", sg.contended.size() - 8);
  return o;
}

}  // namespace

// The distribution of the step over sampled steps (docs/simulation.md#variability).
std::string variability_text(const Scenario& s, const engine::StepDistribution& d, SampledBy by) {
  const auto& v = *s.variability;
  auto pct = [&](double x) { return fmt::format("{:+.2f} %", 100.0 * (x / d.nominal_s - 1.0)); };
  std::string o = fmt::format("\nvariability {} sampled steps{}, seed {}: {} straggler(s) × {:g}, sigma {:g}, jitter {:g}\n",
                              d.steps_s.size(), by == SampledBy::ClosedForm ? " of the closed-form estimate" : "",
                              d.seed, d.stragglers, v.slow_factor, v.sigma, v.jitter);
  o += fmt::format("  step p50 {} ({}) · p90 {} ({}) · p99 {} ({})\n", format_duration(Duration{d.p50_s}),
                   pct(d.p50_s), format_duration(Duration{d.p90_s}), pct(d.p90_s),
                   format_duration(Duration{d.p99_s}), pct(d.p99_s));
  o += fmt::format("  mean {} · min {} · max {} (nominal {})\n", format_duration(Duration{d.mean_s}),
                   format_duration(Duration{d.min_s}), format_duration(Duration{d.max_s}),
                   format_duration(Duration{d.nominal_s}));
  return o;
}

nlohmann::ordered_json variability_json(const Scenario& s, const engine::StepDistribution& d, SampledBy by) {
  const auto& v = *s.variability;
  return {{"seed", d.seed},           {"steps", d.steps_s.size()},  {"slow_fraction", v.slow_fraction},
          {"slow_devices", v.slow_devices}, {"slow_factor", v.slow_factor}, {"sigma", v.sigma},
          {"jitter", v.jitter},
          {"sampled_by", by == SampledBy::ClosedForm ? "closed_form" : "engine"},
          {"stragglers", d.stragglers}, {"nominal_step_time_s", d.nominal_s},
          {"mean_step_time_s", d.mean_s}, {"p50_step_time_s", d.p50_s}, {"p90_step_time_s", d.p90_s},
          {"p99_step_time_s", d.p99_s}, {"min_step_time_s", d.min_s}, {"max_step_time_s", d.max_s},
          {"step_times_s", d.steps_s}};
}

std::string simulate_text(const Scenario& s, const plan::Plan& p, const Simulation& sim, const SimgridReport* simgrid) {
  std::string o = estimate_text(s, p, sim.simulated);
  o += fmt::format("\nsimulated  {} tasks ({:.4g} unfolded) on {} simulated device(s), {} events\n",
                   sim.graph.size(), sim.graph.unfolded_size(), sim.graph.devices.size(), sim.trace.events);
  o += fmt::format("  step {} (closed-form estimate {}, {:+.2f} %)\n", format_duration(sim.simulated.step_time),
                   format_duration(sim.estimate.step_time),
                   100.0 * (sim.estimate.step_time.v / sim.simulated.step_time.v - 1.0));
  o += fmt::format("  exposed communication on the critical path {}\n",
                   format_duration(Duration{seconds(sim.summary.exposed_comm)}));
  o += "  critical path:";
  for (std::size_t i = 0; i < sim.summary.critical_by_kind.size(); ++i) {
    const auto& [kind, t] = sim.summary.critical_by_kind[i];
    o += fmt::format("{} {} {}", i ? " ·" : "", kind, format_duration(Duration{seconds(t)}));
  }
  o += "\n";
  // The expert all-to-alls' column only where there are any (MoE with ep > 1). "dp": the
  // reductions' and the gathers' streams together (they may overlap: up to 200 %).
  const auto ep = static_cast<std::size_t>(schedule::Stream::EpComm);
  const auto gather = static_cast<std::size_t>(schedule::Stream::DpGather);
  bool with_ep = false;
  for (const auto& u : sim.summary.devices) with_ep = with_ep || u.stream_fraction[ep] > 0;
  o += fmt::format("  {:<34}{:>8}{:>8}{:>8}{:>8}{}{:>12}{:>12}\n", "device (stands for)", "compute", "tp", "pp", "dp",
                   with_ep ? fmt::format("{:>8}", "ep") : "", "bubble", "peak mem");
  for (std::size_t k = 0; k < sim.graph.devices.size(); ++k) {
    const auto& rep = sim.graph.devices[k];
    const auto& u = sim.summary.devices[k];
    o += fmt::format("  {:<34}{:>7.1f}%{:>7.1f}%{:>7.1f}%{:>7.1f}%{}{:>12}{:>12}\n", rep.label,
                     100 * u.stream_fraction[0], 100 * u.stream_fraction[1], 100 * u.stream_fraction[2],
                     100 * (u.stream_fraction[3] + u.stream_fraction[gather]), with_ep ? fmt::format("{:>7.1f}%", 100 * u.stream_fraction[ep]) : "",
                     format_duration(Duration{seconds(u.bubble)}), format_bytes(Bytes{static_cast<double>(u.peak_bytes)}));
  }
  if (simgrid) o += simgrid_text(*simgrid, static_cast<double>(sim.trace.makespan) * 1e-9);
  if (sim.variability) o += variability_text(s, *sim.variability, SampledBy::Engine);
  return o;
}

std::string simulate_json(const Scenario& s, const plan::Plan& p, const Simulation& sim, const SimgridReport* simgrid) {
  nlohmann::ordered_json j = estimate_object(s, p, sim.simulated);
  j["estimate_step_time_s"] = sim.estimate.step_time.v;
  j["exposed_comm_s"] = seconds(sim.summary.exposed_comm);
  nlohmann::ordered_json crit = nlohmann::ordered_json::object();
  for (const auto& [kind, t] : sim.summary.critical_by_kind) crit[kind] = seconds(t);
  j["critical_path_s"] = crit;
  j["tasks"] = sim.graph.size();
  j["unfolded_tasks"] = sim.graph.unfolded_size();
  for (std::size_t pi = 0; pi < j["devices"].size(); ++pi)
    j["devices"][pi]["busy_fraction"] = busy_of_pool(sim, static_cast<int>(pi));
  j["simulated_devices"] = nlohmann::ordered_json::array();
  for (std::size_t k = 0; k < sim.graph.devices.size(); ++k) {
    const auto& rep = sim.graph.devices[k];
    const auto& u = sim.summary.devices[k];
    j["simulated_devices"].push_back({{"label", rep.label}, {"group", rep.group}, {"stage", rep.stage},
                                      {"pool", s.cluster.pools[rep.pool].name}, {"count", rep.count},
                                      {"busy_fraction", u.busy_fraction},
                                      {"stream_busy_fraction", u.stream_fraction},
                                      {"bubble_s", seconds(u.bubble)}, {"peak_memory_bytes", u.peak_bytes}});
  }
  if (simgrid) {
    nlohmann::ordered_json e = {{"engine", "simgrid"},
                                {"activities", simgrid->activities},
                                {"flows", simgrid->flows},
                                {"wall_s", simgrid->wall_s},
                                {"native_step_time_s", simgrid->native_step_s},
                                {"flow_delay_s", simgrid->flow_delay_s},
                                {"contended_links", nlohmann::ordered_json::array()}};
    for (const auto& k : simgrid->contended)
      e["contended_links"].push_back({{"link", k.link}, {"overloaded_s", k.overloaded_s}, {"peak_demand", k.peak_demand}});
    j["engine"] = std::move(e);
  }
  if (sim.variability) j["variability"] = variability_json(s, *sim.variability, SampledBy::Engine);
  return j.dump(2) + "\n";
}

}  // namespace hetsim::report

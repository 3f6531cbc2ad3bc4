#include "exec/compare/compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

namespace hetsim::exec {

Result<Comparison> compare(const io::TraceFile& p, const io::TraceFile& m, int worst) {
  if (p.tasks.size() != m.tasks.size() || p.devices.size() != m.devices.size())
    return Diagnostic{{}, "", "the traces describe different steps (" + std::to_string(p.tasks.size()) + " vs " +
                                  std::to_string(m.tasks.size()) + " tasks: " + p.source + " vs " + m.source + ")",
                      "compare a plan's predicted trace with the measured trace of the same plan"};
  if (m.makespan_ns <= 0)
    return Diagnostic{{}, "/makespan_ns", "the measured step took no time (makespan_ns 0): nothing to compare with",
                      "compare a predicted trace with a measured one (hetsim-exec run --out)"};
  Comparison c;
  c.predicted_step_s = static_cast<double>(p.makespan_ns) * 1e-9;
  c.measured_step_s = static_cast<double>(m.makespan_ns) * 1e-9;
  std::vector<TaskMiss> misses;
  for (std::size_t i = 0; i < p.tasks.size(); ++i) {
    const auto& a = p.tasks[i];
    const auto& b = m.tasks[i];
    if (a.name != b.name || a.device != b.device || a.kind != b.kind)
      return Diagnostic{{}, "/tasks/" + std::to_string(i), "task " + std::to_string(i) + " differs: '" + a.name + "' (" + a.kind +
                                                    ", device " + std::to_string(a.device) + ") vs '" + b.name + "' (" +
                                                    b.kind + ", device " + std::to_string(b.device) + ")",
                        "compare a plan's predicted trace with the measured trace of the same plan"};
    const double pd = static_cast<double>(a.end_ns - a.start_ns) * 1e-9;
    const double md = static_cast<double>(b.end_ns - b.start_ns) * 1e-9;
    auto it = std::find_if(c.kinds.begin(), c.kinds.end(), [&](const KindError& k) { return k.kind == a.kind; });
    if (it == c.kinds.end()) it = c.kinds.insert(c.kinds.end(), KindError{a.kind, 0, 0});
    it->predicted_s += pd;
    it->measured_s += md;
    misses.push_back({p.devices[a.device], a.name, pd, md});
    // Op classes: the predicted side names what the cost model priced; the measured side what ran.
    auto part = [&](const std::string& cls) -> KindError& {
      auto k = std::find_if(c.classes.begin(), c.classes.end(), [&](const KindError& x) { return x.kind == cls; });
      return k != c.classes.end() ? *k : c.classes.emplace_back(KindError{cls, 0, 0});
    };
    for (const auto& [cls, ns] : a.parts) part(cls).predicted_s += static_cast<double>(ns) * 1e-9;
    for (const auto& [cls, ns] : b.parts) part(cls).measured_s += static_cast<double>(ns) * 1e-9;
  }
  for (std::size_t d = 0; d < p.devices.size(); ++d)
    c.peak_bytes.emplace_back(static_cast<double>(p.peak_bytes[d]), static_cast<double>(m.peak_bytes[d]));
  c.devices = p.devices;
  std::stable_sort(misses.begin(), misses.end(), [](const TaskMiss& x, const TaskMiss& y) {
    return std::fabs(x.predicted_s - x.measured_s) > std::fabs(y.predicted_s - y.measured_s);
  });
  misses.resize(std::min<std::size_t>(misses.size(), static_cast<std::size_t>(worst)));
  c.worst = std::move(misses);
  return c;
}

std::string comparison_text(const Comparison& c) {
  std::string o;
  for (const auto& n : c.notes) o += n + "\n";
  o += fmt::format("step        predicted {:.4f} s, measured {:.4f} s, error {:+.1f} %\n", c.predicted_step_s,
                              c.measured_step_s, 100 * c.step_error());
  o += fmt::format("  {:<18}{:>14}{:>14}{:>10}\n", "task kind", "predicted s", "measured s", "error");
  for (const auto& k : c.kinds)
    o += fmt::format("  {:<18}{:>14.5f}{:>14.5f}{:>+9.1f}%\n", k.kind, k.predicted_s, k.measured_s, 100 * k.error());
  if (!c.classes.empty()) {
    o += fmt::format("  {:<18}{:>14}{:>14}{:>10}\n", "op class", "predicted s", "measured s", "error");
    for (const auto& k : c.classes)
      o += fmt::format("  {:<18}{:>14.5f}{:>14.5f}{:>+9.1f}%\n", k.kind, k.predicted_s, k.measured_s, 100 * k.error());
  }
  for (std::size_t d = 0; d < c.peak_bytes.size(); ++d)
    o += fmt::format("  peak memory device {}: predicted {:.4g} MiB, measured {:.4g} MiB ({:+.1f} %)\n", d,
                     c.peak_bytes[d].first / 1048576.0, c.peak_bytes[d].second / 1048576.0,
                     100 * (c.peak_bytes[d].first / std::max(1.0, c.peak_bytes[d].second) - 1));
  o += "  largest misses:\n";
  for (const auto& t : c.worst)
    o += fmt::format("    {:<24} {:<20} predicted {:.5f} s, measured {:.5f} s\n", t.device, t.name, t.predicted_s,
                     t.measured_s);
  return o;
}

std::string comparison_json(const Comparison& c) {
  nlohmann::ordered_json j;
  j["predicted_step_s"] = c.predicted_step_s;
  j["measured_step_s"] = c.measured_step_s;
  j["step_error"] = c.step_error();
  if (!c.notes.empty()) j["notes"] = c.notes;
  if (!c.failure.empty()) j["failure"] = c.failure;
  j["kinds"] = nlohmann::ordered_json::array();
  for (const auto& k : c.kinds)
    j["kinds"].push_back({{"kind", k.kind}, {"predicted_s", k.predicted_s}, {"measured_s", k.measured_s},
                          {"error", k.error()}});
  j["op_classes"] = nlohmann::ordered_json::array();
  for (const auto& k : c.classes)
    j["op_classes"].push_back({{"class", k.kind}, {"predicted_s", k.predicted_s}, {"measured_s", k.measured_s},
                               {"error", k.error()}});
  j["peak_bytes"] = nlohmann::ordered_json::array();
  for (std::size_t d = 0; d < c.peak_bytes.size(); ++d)
    j["peak_bytes"].push_back({{"device", d < c.devices.size() ? c.devices[d] : std::string()},
                               {"predicted", static_cast<std::int64_t>(c.peak_bytes[d].first)},
                               {"measured", static_cast<std::int64_t>(c.peak_bytes[d].second)}});
  j["worst"] = nlohmann::ordered_json::array();
  for (const auto& t : c.worst)
    j["worst"].push_back({{"device", t.device}, {"task", t.name}, {"predicted_s", t.predicted_s},
                          {"measured_s", t.measured_s}});
  return j.dump(2) + "\n";
}

}  // namespace hetsim::exec

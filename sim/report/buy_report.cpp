#include "sim/report/buy_report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/report/estimate_report.hpp"

namespace hetsim::report {
namespace {

const char* objective_name(PurchaseSpec::Objective o) {
  switch (o) {
    case PurchaseSpec::Objective::Time: return "time";
    case PurchaseSpec::Objective::Cost: return "cost";
    case PurchaseSpec::Objective::Pareto: return "pareto";
  }
  return "?";
}

std::string what_is_bought(const Scenario& s, const buy::Point& p) {
  std::string o;
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    if (p.nodes[k] == 0) continue;
    const auto& c = s.purchase->candidates[k].pool;
    o += fmt::format("{}{} × {} ({} devices)", o.empty() ? "" : " + ", p.nodes[k], c.name, p.nodes[k] * c.devices_per_node);
  }
  return o.empty() ? "nothing" : o;
}

std::string usd(double v) {
  if (v >= 1e6) return fmt::format("${:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("${:.3g}k", v / 1e3);
  return fmt::format("${:.3g}", v);
}

}  // namespace

std::string buy_text(const Scenario& s, const buy::Result& r, double seconds) {
  const PurchaseSpec& ps = *s.purchase;
  std::string o = fmt::format("scenario   {}  ({})\n", s.name, s.file);
  std::string owned;
  for (const auto& p : s.cluster.pools) owned += fmt::format("{}{} × {}", owned.empty() ? "" : " + ", p.devices(), p.name);
  std::string may;
  for (const auto& c : ps.candidates)
    may += fmt::format("{}{} ≤ {} nodes of {}{}", may.empty() ? "" : ", ", c.pool.name, c.max_nodes, c.pool.devices_per_node,
                       c.node_step > 1 ? fmt::format(" (by {})", c.node_step) : "");
  o += fmt::format("question   owns {}; may {} {}", owned.empty() ? "nothing" : owned,
                   s.cost.mode == CostSpec::Mode::Rent ? "rent" : "buy", may);
  if (ps.budget_usd > 0) o += fmt::format("; budget {}", usd(ps.budget_usd));
  if (ps.power_kw > 0) o += fmt::format("; power ≤ {:.4g} kW", ps.power_kw);
  if (ps.deadline_days > 0) o += fmt::format("; deadline {:.4g} days", ps.deadline_days);
  o += fmt::format("; {:.4g} tokens\n", s.training.tokens);
  o += fmt::format("searched   {} compositions in {:.2f} s: {} over budget, {} over power, {} too small, {} pruned "
                   "by their bounds, {} planned{}{}\n",
                   r.compositions, seconds, r.over_budget, r.over_power, r.too_small, r.pruned, r.planned,
                   r.none_fits ? fmt::format(" ({} with no plan that fits)", r.none_fits) : "",
                   r.stopped ? "; STOPPED early: the front of what was searched" : "");
  if (r.front.empty()) return o + "\nno composition has a plan that fits within the limits\n";
  o += "\nfront: total cost against effective time to train (goodput included), fastest first\n";
  o += fmt::format(" {:<3} {:<34} {:>9} {:>9} {:>9} {:>11} {:>8} {:>9} {:>5}  {}\n", "#", "buy", "capex", "run",
                   "total", "time", "$/Mtok", "power", "due", "plan");
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const auto& p = r.front[i];
    o += fmt::format(" {:<3} {:<34} {:>9} {:>9} {:>9} {:>11} {:>8.3g} {:>6.4g} kW {:>5}  {}\n",
                     fmt::format("{}{}", i + 1, i == r.recommended ? "*" : ""), what_is_bought(s, p), usd(p.capex_usd),
                     usd(p.run_usd), usd(p.total_usd), format_duration(Duration{p.effective_time_s}),
                     p.usd_per_million_tokens, p.power_kw, ps.deadline_days > 0 ? (p.meets_deadline ? "yes" : "NO") : "-",
                     plan_summary(p.scenario, p.best.plan));
  }
  const auto& best = r.front[r.recommended];
  o += fmt::format("\nrecommended  #{}: buy {}: {} in {}", r.recommended + 1, what_is_bought(s, best), usd(best.total_usd),
                   format_duration(Duration{best.effective_time_s}));
  switch (ps.objective) {
    case PurchaseSpec::Objective::Time: o += " (objective time: the fastest)"; break;
    case PurchaseSpec::Objective::Cost: o += " (objective cost: the cheapest"; o += ps.deadline_days > 0 ? " that meets the deadline)" : ")"; break;
    case PurchaseSpec::Objective::Pareto:
      o += ps.deadline_days > 0 ? " (the cheapest point that meets the deadline)" : " (the knee: least cost × time)";
      break;
  }
  o += "\n";
  // Against its neighbours on the front: what one more (or one less) step buys.
  if (r.recommended > 0) {
    const auto& f = r.front[r.recommended - 1];
    o += fmt::format("  vs #{} (faster): {:.1f} % less time for {} more\n", r.recommended, 100 * (1 - f.effective_time_s / best.effective_time_s),
                     usd(f.total_usd - best.total_usd));
  }
  if (r.recommended + 1 < r.front.size()) {
    const auto& n = r.front[r.recommended + 1];
    o += fmt::format("  vs #{} (cheaper): saves {} for {:.1f} % more time{}\n", r.recommended + 2, usd(best.total_usd - n.total_usd),
                     100 * (n.effective_time_s / best.effective_time_s - 1),
                     ps.deadline_days > 0 && !n.meets_deadline ? ", and misses the deadline" : "");
  }
  if (best.idle_owned_devices > 0) o += fmt::format("  leaves {} owned devices unused\n", best.idle_owned_devices);
  if (!r.sensitivity.empty()) {
    o += "\nsensitivity  does the recommendation change? (each price alone; over the planned compositions)\n";
    for (const auto& x : r.sensitivity) {
      buy::Point shown;
      shown.nodes = x.nodes;
      o += fmt::format("  {:<28} {:>+5.0f} %  {}\n", x.what, 100 * (x.factor - 1),
                       x.nodes.empty() ? std::string("nothing fits the budget")
                       : x.changes     ? "yes: buy " + what_is_bought(s, shown)
                                       : std::string("no"));
    }
  }
  if (ps.deadline_days > 0 && !best.meets_deadline) o += "  no point of the front meets the deadline\n";
  return o;
}

std::string buy_json(const Scenario& s, const buy::Result& r, double seconds) {
  const PurchaseSpec& ps = *s.purchase;
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["file"] = s.file;
  j["objective"] = objective_name(ps.objective);
  j["seconds"] = seconds;
  j["compositions"] = r.compositions;
  j["over_budget"] = r.over_budget;
  j["over_power"] = r.over_power;
  j["too_small"] = r.too_small;
  j["pruned"] = r.pruned;
  j["planned"] = r.planned;
  j["none_fits"] = r.none_fits;
  j["stopped"] = r.stopped;
  j["front"] = nlohmann::ordered_json::array();
  for (const auto& p : r.front) {
    nlohmann::ordered_json b = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < p.nodes.size(); ++k) b[s.purchase->candidates[k].pool.name] = p.nodes[k];
    j["front"].push_back({{"buy_nodes", b},
                          {"capex_usd", p.capex_usd},
                          {"run_usd", p.run_usd},
                          {"total_usd", p.total_usd},
                          {"effective_time_to_train_s", p.effective_time_s},
                          {"usd_per_million_tokens", p.usd_per_million_tokens},
                          {"power_kw", p.power_kw},
                          {"meets_deadline", p.meets_deadline},
                          {"idle_owned_devices", p.idle_owned_devices},
                          {"plan", plan_summary(p.scenario, p.best.plan)},
                          {"family", p.best.family},
                          {"verified", p.best.verified()},
                          {"estimate", estimate_object(p.scenario, p.best.plan, p.best.estimate)}});
  }
  j["recommended"] = r.front.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.recommended);
  j["sensitivity"] = nlohmann::ordered_json::array();
  for (const auto& x : r.sensitivity) {
    nlohmann::ordered_json b = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < x.nodes.size(); ++k) b[s.purchase->candidates[k].pool.name] = x.nodes[k];
    j["sensitivity"].push_back({{"what", x.what}, {"factor", x.factor}, {"changes", x.changes},
                                {"buy_nodes", x.nodes.empty() ? nlohmann::ordered_json(nullptr) : b}});
  }
  return j.dump(2) + "\n";
}

}  // namespace hetsim::report

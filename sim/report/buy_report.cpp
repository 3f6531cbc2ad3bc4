#include "sim/report/buy_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/plan/buy_pricing.hpp"
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

// Candidate name → nodes bought.
nlohmann::ordered_json buy_nodes_json(const Scenario& s, const std::vector<int>& nodes) {
  nlohmann::ordered_json b = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < nodes.size(); ++k) b[s.purchase->candidates[k].pool.name] = nodes[k];
  return b;
}

// Columns as a terminal shows them: code points, not bytes ("×").
std::size_t utf8_width(const std::string& v) {
  std::size_t n = 0;
  for (unsigned char ch : v) n += (ch & 0xC0) != 0x80;
  return n;
}

// RFC 4180: a field with a comma, a quote or a line break is quoted, quotes doubled.
std::string csv_field(const std::string& v) {
  if (v.find_first_of(",\"\r\n") == std::string::npos) return v;
  std::string o = "\"";
  for (char ch : v) o += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return o + "\"";
}

std::string usd(double v) {
  if (v >= 1e6) return fmt::format("${:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("${:.3g}k", v / 1e3);
  return fmt::format("${:.3g}", v);
}

// A change: "+$1.2M", "-$300k", "$0".
std::string signed_usd(double v) {
  if (v == 0) return "$0";
  return (v > 0 ? "+" : "-") + usd(std::fabs(v));
}

// A change of time: "+2.1 days", "-3 h", "0".
std::string signed_duration(double s) {
  if (s == 0) return "0";
  return (s > 0 ? "+" : "-") + format_duration(Duration{std::fabs(s)});
}

// The value of the part named `name` (0 when `parts` has none).
double part(const std::vector<buy::Part>& parts, const std::string& name) {
  for (const buy::Part& x : parts)
    if (x.name == name) return x.value;
  return 0;
}

// "why #2, not #3": the recommended point against the runner-up, time and cost by part; parts
// that are 0 in both points are left out.
std::string why_text(const buy::Result& r) {
  const buy::Versus v = buy::versus(r.front[r.recommended], r.front[r.runner_up]);
  const std::string a = fmt::format("#{}", r.recommended + 1), b = fmt::format("#{}", r.runner_up + 1);
  std::string o = fmt::format("\nwhy {}, not {} (the objective's second choice): time until trained and total cost "
                              "by part\n",
                              a, b);
  auto table = [&](const char* title, const std::vector<buy::Part>& chosen, const std::vector<buy::Part>& other,
                   const std::vector<buy::Part>& diff, auto&& value, auto&& change) {
    o += fmt::format("  {:<24}{:>12}{:>12}{:>12}\n", title, a, b, a + " - " + b);
    double tc = 0, to = 0, td = 0;
    for (const buy::Part& d : diff) {
      const double c = part(chosen, d.name), x = part(other, d.name);
      tc += c;
      to += x;
      td += d.value;
      if (c == 0 && x == 0) continue;
      o += fmt::format("  {:<24}{:>12}{:>12}{:>12}\n", d.name, value(c), value(x), change(d.value));
    }
    o += fmt::format("  {:<24}{:>12}{:>12}{:>12}\n", "total", value(tc), value(to), change(td));
  };
  auto time = [](double s) { return s == 0 ? std::string("0") : format_duration(Duration{s}); };
  table("time until trained", v.chosen_time, v.other_time, v.time_s, time, signed_duration);
  table("total cost", v.chosen_cost, v.other_cost, v.cost_usd, usd, signed_usd);
  return o;
}

// One side of buy::versus as JSON: [{"part", "recommended", "runner_up", "difference"}], every part.
nlohmann::ordered_json parts_json(const std::vector<buy::Part>& chosen, const std::vector<buy::Part>& other,
                                  const std::vector<buy::Part>& diff) {
  nlohmann::ordered_json a = nlohmann::ordered_json::array();
  for (const buy::Part& d : diff)
    a.push_back({{"part", d.name},
                 {"recommended", part(chosen, d.name)},
                 {"runner_up", part(other, d.name)},
                 {"difference", d.value}});
  return a;
}

}  // namespace

std::string what_is_bought(const Scenario& s, const buy::Point& p) {
  std::string o;
  for (std::size_t k = 0; k < p.nodes.size(); ++k) {
    if (p.nodes[k] == 0) continue;
    const auto& c = s.purchase->candidates[k].pool;
    o += fmt::format("{}{} × {} ({} devices)", o.empty() ? "" : " + ", p.nodes[k], c.name, p.nodes[k] * c.devices_per_node);
  }
  return o.empty() ? "nothing" : o;
}

std::string buy_text(const Scenario& s, const buy::Result& r, double seconds, std::size_t top) {
  const PurchaseSpec& ps = *s.purchase;
  std::string o = fmt::format("scenario   {}  ({})\n", s.name, s.file);
  std::string owned;
  for (const auto& p : s.cluster.pools) owned += fmt::format("{}{} × {}", owned.empty() ? "" : " + ", p.devices(), p.name);
  std::string may;
  for (const auto& c : ps.candidates)
    may += fmt::format("{}{} ≤ {} nodes of {}{}{}", may.empty() ? "" : ", ", c.pool.name, c.max_nodes, c.pool.devices_per_node,
                       c.node_step > 1 ? fmt::format(" (by {})", c.node_step) : "",
                       c.lead_time_days > 0 ? fmt::format(", {:.4g} days' lead time", c.lead_time_days) : "");
  o += fmt::format("question   owns {}; may {} {}", owned.empty() ? "nothing" : owned,
                   s.cost.mode == CostSpec::Mode::Rent ? "rent" : "buy", may);
  if (ps.budget_usd > 0) o += fmt::format("; budget {}", usd(ps.budget_usd));
  if (ps.power_kw > 0) o += fmt::format("; power ≤ {:.4g} kW", ps.power_kw);
  if (ps.deadline_days > 0) o += fmt::format("; deadline {:.4g} days", ps.deadline_days);
  o += fmt::format("; {:.4g} tokens\n", s.training.tokens);
  o += fmt::format("searched   {} compositions in {:.2f} s{}: {} over budget, {} over power, {} too small, {} pruned "
                   "by their bounds, {} planned{}{}\n",
                   r.compositions, seconds,
                   r.first_point_s >= 0 ? fmt::format(" (first front point after {:.2f} s)", r.first_point_s) : "",
                   r.over_budget, r.over_power, r.too_small, r.pruned, r.planned,
                   r.none_fits ? fmt::format(" ({} with no plan that fits)", r.none_fits) : "",
                   r.stopped ? "; STOPPED early: the front of what was searched" : "");
  if (r.front.empty()) {
    o += "\nno composition has a plan that fits within the limits\n";
    if (r.smallest_fit) {
      const auto& p = *r.smallest_fit;
      o += fmt::format("smallest that would fit: buy {}: capex {}, total {}, {:.4g} kW, {} ({})\n", what_is_bought(s, p),
                       usd(p.capex_usd), usd(p.total_usd), p.power_kw, format_duration(Duration{p.effective_time_s}),
                       plan_summary(p.scenario, p.best.plan));
      std::string needs;
      const double spent = s.cost.mode == CostSpec::Mode::Rent ? p.total_usd : p.capex_usd;  // what the budget limits
      if (ps.budget_usd > 0 && spent > ps.budget_usd) needs += fmt::format("a budget of at least {}", usd(spent));
      if (ps.power_kw > 0 && p.power_kw > ps.power_kw)
        needs += fmt::format("{}a power limit of at least {:.4g} kW", needs.empty() ? "" : " and ", p.power_kw);
      if (!needs.empty()) o += "  it needs " + needs + "\n";
    }
    return o;
  }
  const bool leads = std::any_of(ps.candidates.begin(), ps.candidates.end(),
                                 [](const PurchaseSpec::Candidate& c) { return c.lead_time_days > 0; });
  o += leads ? "\nfront: total cost against the time until trained (lead time + effective time to train, goodput "
               "included), soonest first\n"
             : "\nfront: total cost against effective time to train (goodput included), fastest first\n";
  std::size_t wbuy = 3;
  for (const auto& p : r.front) wbuy = std::max(wbuy, utf8_width(what_is_bought(s, p)));
  o += fmt::format(" {:<3} {:<{}} {:>9} {:>9} {:>9} {}{:>11} {:>8} {:>9} {:>5}  {}\n", "#", "buy", wbuy, "capex", "run",
                   "total", leads ? fmt::format("{:>11} ", "lead") : "", "time", "$/Mtok", "power", "due", "plan");
  std::size_t hidden = 0;
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    if (top > 0 && i >= top && i != r.recommended) {
      ++hidden;
      continue;
    }
    const auto& p = r.front[i];
    const std::string what = what_is_bought(s, p);
    o += fmt::format(" {:<3} {}{} {:>9} {:>9} {:>9} {}{:>11} {:>8.3g} {:>6.4g} kW {:>5}  {}\n",
                     fmt::format("{}{}", i + 1, i == r.recommended ? "*" : ""), what,
                     std::string(wbuy - utf8_width(what), ' '), usd(p.capex_usd),
                     usd(p.run_usd), usd(p.total_usd),
                     leads ? fmt::format("{:>11} ", p.lead_time_s > 0 ? format_duration(Duration{p.lead_time_s}) : "-") : "",
                     format_duration(Duration{p.effective_time_s}),
                     p.usd_per_million_tokens, p.power_kw, ps.deadline_days > 0 ? (p.meets_deadline ? "yes" : "NO") : "-",
                     plan_summary(p.scenario, p.best.plan));
  }
  if (hidden > 0) o += fmt::format(" … {} more point{} (--top 0 shows all; --csv and --json carry every one)\n", hidden, hidden == 1 ? "" : "s");
  const auto& best = r.front[r.recommended];
  const bool any_meets = ps.deadline_days > 0 && std::any_of(r.front.begin(), r.front.end(),
                                                             [](const buy::Point& p) { return p.meets_deadline; });
  o += fmt::format("\nrecommended  #{}: buy {}: {} in {}", r.recommended + 1, what_is_bought(s, best), usd(best.total_usd),
                   format_duration(Duration{best.effective_time_s}));
  if (best.lead_time_s > 0) o += fmt::format(" after a lead time of {} (trained in {})", format_duration(Duration{best.lead_time_s}),
                                             format_duration(Duration{best.trained_in_s}));
  switch (ps.objective) {
    case PurchaseSpec::Objective::Time: o += " (objective time: the fastest)"; break;
    case PurchaseSpec::Objective::Cost: o += " (objective cost: the cheapest"; o += any_meets ? " that meets the deadline)" : ")"; break;
    case PurchaseSpec::Objective::Pareto:
      o += any_meets ? " (the cheapest point that meets the deadline)" : " (the knee: least cost × time)";
      break;
  }
  o += "\n";
  // Against its neighbours on the front: what one more (or one less) step buys.
  if (r.recommended > 0) {
    const auto& f = r.front[r.recommended - 1];
    o += fmt::format("  vs #{} (faster): {:.1f} % less time for {} more\n", r.recommended, 100 * (1 - f.trained_in_s / best.trained_in_s),
                     usd(f.total_usd - best.total_usd));
  }
  if (r.recommended + 1 < r.front.size()) {
    const auto& n = r.front[r.recommended + 1];
    o += fmt::format("  vs #{} (cheaper): saves {} for {:.1f} % more time{}\n", r.recommended + 2, usd(best.total_usd - n.total_usd),
                     100 * (n.trained_in_s / best.trained_in_s - 1),
                     ps.deadline_days > 0 && !n.meets_deadline ? ", and misses the deadline" : "");
  }
  if (best.idle_owned_devices > 0) o += fmt::format("  leaves {} owned devices unused\n", best.idle_owned_devices);
  if (r.runner_up != r.recommended) o += why_text(r);
  if (!r.sensitivity.empty()) {
    o += fmt::format("\nsensitivity  each price alone, over the planned compositions: how much the recommendation's total "
                     "cost and time until trained change from #{}'s, and whether it becomes another point\n",
                     r.recommended + 1);
    for (const auto& x : r.sensitivity) {
      buy::Point shown;
      shown.nodes = x.nodes;
      o += fmt::format("  {:<28} {:>+5.0f} %  {}\n", x.what, 100 * (x.factor - 1),
                       x.nodes.empty() ? std::string("nothing fits the budget")
                                       : fmt::format("cost {:>8}  time {:>11}  changes: {}", signed_usd(x.total_change_usd),
                                                     signed_duration(x.time_change_s),
                                                     x.changes ? "yes: buy " + what_is_bought(s, shown) : std::string("no")));
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
  if (r.first_point_s >= 0) j["first_point_s"] = r.first_point_s;
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
    const nlohmann::ordered_json b = buy_nodes_json(s, p.nodes);
    j["front"].push_back({{"buy_nodes", b},
                          {"capex_usd", p.capex_usd},
                          {"run_usd", p.run_usd},
                          {"total_usd", p.total_usd},
                          {"effective_time_to_train_s", p.effective_time_s},
                          {"lead_time_s", p.lead_time_s},
                          {"trained_in_s", p.trained_in_s},
                          {"usd_per_million_tokens", p.usd_per_million_tokens},
                          {"power_kw", p.power_kw},
                          {"meets_deadline", p.meets_deadline},
                          {"idle_owned_devices", p.idle_owned_devices},
                          {"plan", plan_summary(p.scenario, p.best.plan)},
                          {"family", p.best.family},
                          {"verified", p.best.verified()},
                          {"estimate", estimate_object(p.scenario, p.best.plan, p.best.estimate)}});
  }
  if (r.smallest_fit) {
    const auto& p = *r.smallest_fit;
    const nlohmann::ordered_json b = buy_nodes_json(s, p.nodes);
    j["smallest_fit"] = {{"buy_nodes", b},
                         {"capex_usd", p.capex_usd},
                         {"total_usd", p.total_usd},
                         {"effective_time_to_train_s", p.effective_time_s},
                         {"lead_time_s", p.lead_time_s},
                         {"trained_in_s", p.trained_in_s},
                         {"power_kw", p.power_kw},
                         {"plan", plan_summary(p.scenario, p.best.plan)}};
  } else {
    j["smallest_fit"] = nullptr;
  }
  j["recommended"] = r.front.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.recommended);
  j["sensitivity"] = nlohmann::ordered_json::array();
  for (const auto& x : r.sensitivity) {
    const nlohmann::ordered_json b = buy_nodes_json(s, x.nodes);
    const auto number = [&](double v) { return x.nodes.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v); };
    j["sensitivity"].push_back({{"what", x.what},
                                {"factor", x.factor},
                                {"changes", x.changes},
                                {"buy_nodes", x.nodes.empty() ? nlohmann::ordered_json(nullptr) : b},
                                {"total_usd", number(x.total_usd)},
                                {"trained_in_s", number(x.trained_in_s)},
                                {"total_change_usd", number(x.total_change_usd)},
                                {"time_change_s", number(x.time_change_s)}});
  }
  if (!r.front.empty() && r.runner_up != r.recommended) {
    const buy::Versus v = buy::versus(r.front[r.recommended], r.front[r.runner_up]);
    j["why"] = {{"recommended", r.recommended},
                {"runner_up", r.runner_up},
                {"time_s", parts_json(v.chosen_time, v.other_time, v.time_s)},
                {"cost_usd", parts_json(v.chosen_cost, v.other_cost, v.cost_usd)}};
  } else {
    j["why"] = nullptr;
  }
  return j.dump(2) + "\n";
}

std::string buy_csv(const Scenario& s, const buy::Result& r) {
  std::string o = "point,recommended";
  for (const auto& c : s.purchase->candidates) o += "," + csv_field("buy_nodes_" + c.pool.name);
  o += ",bought_devices,capex_usd,run_usd,total_usd,effective_time_to_train_s,effective_time_to_train_days,"
       "lead_time_days,trained_in_days,usd_per_million_tokens,power_kw,meets_deadline,idle_owned_devices,step_time_s,mfu,verified,plan\r\n";
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const auto& p = r.front[i];
    int devices = 0;
    o += fmt::format("{},{}", i + 1, i == r.recommended ? "yes" : "no");
    for (std::size_t k = 0; k < p.nodes.size(); ++k) {
      o += fmt::format(",{}", p.nodes[k]);
      devices += p.nodes[k] * s.purchase->candidates[k].pool.devices_per_node;
    }
    o += fmt::format(",{},{:.2f},{:.2f},{:.2f},{:.1f},{:.3f},{:.3f},{:.3f},{:.6g},{:.4g},{},{},{:.6g},{:.4f},{},{}\r\n", devices,
                     p.capex_usd, p.run_usd, p.total_usd, p.effective_time_s, p.effective_time_s / 86400,
                     p.lead_time_s / 86400, p.trained_in_s / 86400,
                     p.usd_per_million_tokens, p.power_kw, p.meets_deadline ? "yes" : "no", p.idle_owned_devices,
                     p.best.estimate.step_time.v, p.best.estimate.mfu, p.best.verified() ? "yes" : "no",
                     csv_field(plan_summary(p.scenario, p.best.plan)));
  }
  return o;
}

}  // namespace hetsim::report

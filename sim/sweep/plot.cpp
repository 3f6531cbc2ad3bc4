#include "sim/sweep/plot.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

namespace hetsim::sweep {

namespace {

struct Figure {
  std::string label;  ///< with its unit
  double scale = 1;
};

std::optional<Figure> figure_of(const Layout& l, const std::string& y) {
  static const std::map<std::string, Figure> known = {
      {"step_s", {"step time (s)", 1}},
      {"tokens_per_s", {"throughput (tokens/s)", 1}},
      {"mfu", {"MFU (%)", 100}},
      {"time_to_train_s", {"time to train (days)", 1.0 / 86400}},
      {"effective_time_to_train_s", {"effective time to train (days)", 1.0 / 86400}},
      {"cost_to_train_usd", {"cost to train (USD)", 1}},
      {"goodput", {"goodput (%)", 100}},
      {"devices", {"devices used (devices)", 1}},
  };
  if (auto it = known.find(y); it != known.end()) return it->second;
  if (l.variability)
    for (const char* p : {"p50", "p90", "p99"})
      if (y == fmt::format("step_{}_s", p)) return Figure{fmt::format("step time, {} of the sampled steps (s)", p), 1};
  for (const auto& p : l.pools)
    if (y == p + ".peak_GiB") return Figure{"peak memory per device on " + p + " (GiB)", 1};
  return std::nullopt;
}

std::optional<double> value_of(const Row& r, const std::string& y) {
  if (!r.has_figures) return std::nullopt;
  const std::string peak = ".peak_GiB";
  if (y.size() > peak.size() && y.compare(y.size() - peak.size(), peak.size(), peak) == 0) {
    const std::string pool = y.substr(0, y.size() - peak.size());
    for (const auto& p : r.pools)
      if (p.name == pool) return p.peak_bytes / (1024.0 * 1024.0 * 1024.0);  // shown for a plan that does not fit too
    return std::nullopt;
  }
  if (!r.ok) return std::nullopt;
  if (y == "step_s") return r.step_s;
  if (y == "tokens_per_s") return r.tokens_per_s;
  if (y == "mfu") return r.mfu;
  if (y == "time_to_train_s") return r.time_to_train_s;
  if (y == "effective_time_to_train_s") return r.effective_time_to_train_s;
  if (y == "cost_to_train_usd") return r.cost_to_train_usd;
  if (y == "goodput") return r.goodput;
  if (y == "devices") return r.devices;
  if (r.sampled && y == "step_p50_s") return r.step_p50_s;
  if (r.sampled && y == "step_p90_s") return r.step_p90_s;
  if (r.sampled && y == "step_p99_s") return r.step_p99_s;
  return std::nullopt;
}

// The unit of a key the scenario format gives as a plain number.
std::string unit_of_key(const std::string& path) {
  static const std::map<std::string, std::string> units = {
      {"global_batch", "sequences"}, {"micro_batch", "sequences"}, {"seq_len", "tokens"},
      {"tokens", "tokens"},          {"nodes", "nodes"},            {"devices_per_node", "devices"},
      {"tp", "devices"},             {"pp", "stages"},              {"dp", "replicas"},
      {"oversubscription", "ratio"}, {"mtbf_hours", "hours"},       {"purchase_usd", "USD"},
      {"rent_usd_per_hour", "USD/h"}, {"budget_usd", "USD"},        {"power_kw", "kW"},
      {"electricity_usd_per_kwh", "USD/kWh"}, {"layers", "layers"}, {"max_nodes", "nodes"}};
  const std::string last = path.substr(path.find_last_of('.') + 1);
  if (auto it = units.find(last); it != units.end()) return it->second;
  if (path.rfind("cost.purchase_usd.", 0) == 0) return "USD";
  if (path.rfind("cost.price_usd_per_hour.", 0) == 0) return "USD/h";
  return "";
}

// "100Gbps" → {100, "Gbps"}; "8" → {8, ""}; nullopt when it does not start with a number.
std::optional<std::pair<double, std::string>> number_and_unit(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str()) return std::nullopt;
  std::string unit(end);
  unit.erase(0, unit.find_first_not_of(' '));
  return std::pair{v, unit};
}

std::optional<std::size_t> axis_index(const Layout& l, const std::string& name) {
  for (std::size_t a = 0; a < l.spec->axes; ++a)
    if (l.spec->columns[a] == name) return a;
  return std::nullopt;
}

std::string axis_names(const Layout& l) {
  std::string s;
  for (std::size_t a = 0; a < l.spec->axes; ++a) s += (a ? ", " : "") + l.spec->columns[a];
  return s;
}

template <class T>
std::size_t index_in(std::vector<T>& v, const T& x) {
  auto it = std::find(v.begin(), v.end(), x);
  if (it != v.end()) return static_cast<std::size_t>(it - v.begin());
  v.push_back(x);
  return v.size() - 1;
}

}  // namespace

std::vector<std::string> plot_figures(const Layout& l) {
  std::vector<std::string> f = {"step_s", "tokens_per_s", "mfu", "time_to_train_s", "effective_time_to_train_s",
                                "cost_to_train_usd", "goodput", "devices"};
  if (l.variability) f.insert(f.begin() + 1, {"step_p50_s", "step_p90_s", "step_p99_s"});
  for (const auto& p : l.pools) f.push_back(p + ".peak_GiB");
  return f;
}

Result<Chart> make_chart(const Layout& l, const std::vector<Row>& rows, const PlotOptions& o) {
  const auto fig = figure_of(l, o.y);
  if (!fig) {
    const auto names = plot_figures(l);
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return about("", "--plot-y", "'" + o.y + "' is not a figure of the sweep's rows", "one of " + list);
  }
  if (l.spec->axes == 0)
    return about(l.spec->file, "--plot", "the sweep has no axes to plot against (only [[sweep.case]] points)",
                 "add an axis to [sweep]");
  std::size_t x = 0;
  if (!o.x.empty()) {
    auto i = axis_index(l, o.x);
    if (!i) return about("", "--plot-x", "'" + o.x + "' is not an axis of the sweep", "one of " + axis_names(l));
    x = *i;
  }
  std::optional<std::size_t> by;
  if (!o.by.empty()) {
    by = axis_index(l, o.by);
    if (!by) return about("", "--plot-by", "'" + o.by + "' is not an axis of the sweep", "one of " + axis_names(l));
    if (*by == x) return about("", "--plot-by", "--plot-by is the x axis", "another axis: one of " + axis_names(l));
  } else {
    for (std::size_t a = 0; a < l.spec->axes && !by; ++a)
      if (a != x) by = a;
  }
  if (o.heatmap && !by)
    return about(l.spec->file, "--heatmap", "a heat map needs two axes and the sweep has one",
                 "add a second axis to [sweep], or plot lines without --heatmap");

  Chart c;
  c.heatmap = o.heatmap;
  const std::string stem = std::filesystem::path(l.spec->file).stem().string();
  c.title = fig->label.substr(0, fig->label.find(" (")) + " — " + stem;
  // Axes other than x and by are held at their first point's value.
  std::vector<std::string> fixed;
  std::string held;
  for (const auto& r : rows)
    if (r.point == 0) fixed = r.values;
  for (std::size_t a = 0; a < l.spec->axes; ++a)
    if (a != x && (!by || a != *by) && a < fixed.size())
      held += (held.empty() ? "" : ", ") + l.spec->columns[a] + " = " + fixed[a];
  if (!held.empty()) c.subtitle = "at " + held;

  std::vector<std::string> xs, bys;
  std::map<std::pair<std::size_t, std::size_t>, std::optional<double>> cell;
  for (const auto& r : rows) {
    if (r.point >= l.spec->grid_points || r.values.size() < l.spec->axes) continue;
    bool keep = true;
    for (std::size_t a = 0; a < l.spec->axes; ++a)
      if (a != x && (!by || a != *by) && r.values[a] != fixed[a]) keep = false;
    if (!keep) continue;
    const std::size_t xi = index_in(xs, r.values[x]);
    const std::size_t bi = by ? index_in(bys, r.values[*by]) : 0;
    auto v = value_of(r, o.y);
    if (v) *v *= fig->scale;
    cell[{bi, xi}] = v;
  }
  if (!by) bys.emplace_back("");

  // Numbers with one unit (or none) are a numeric axis; anything else is categories.
  std::string unit;
  c.x_numeric = !xs.empty();
  for (std::size_t i = 0; i < xs.size() && c.x_numeric; ++i) {
    auto nu = number_and_unit(xs[i]);
    if (!nu || (i > 0 && nu->second != unit)) c.x_numeric = false;
    else {
      unit = nu->second;
      c.x.push_back(nu->first);
    }
  }
  if (!c.x_numeric) {
    c.x.clear();
    unit.clear();
    for (std::size_t i = 0; i < xs.size(); ++i) c.x.push_back(static_cast<double>(i));
  } else if (!c.heatmap) {
    const auto [lo, hi] = std::minmax_element(c.x.begin(), c.x.end());
    c.x_log = *lo > 0 && *hi / *lo >= 100;
  }
  if (unit.empty()) unit = unit_of_key(l.spec->columns[x]);
  c.x_label = l.spec->columns[x] + (unit.empty() ? "" : " (" + unit + ")");
  c.x_text = xs;
  if (c.heatmap) {
    const std::string bu = unit_of_key(l.spec->columns[*by]);
    c.y_label = l.spec->columns[*by] + (bu.empty() ? "" : " (" + bu + ")");
    c.value_label = fig->label;
  } else {
    c.y_label = fig->label;
  }
  for (std::size_t b = 0; b < bys.size(); ++b) {
    Chart::Series s;
    s.name = by ? (c.heatmap ? bys[b] : l.spec->columns[*by] + " = " + bys[b]) : "";
    for (std::size_t i = 0; i < xs.size(); ++i) {
      auto it = cell.find({b, i});
      s.y.push_back(it == cell.end() ? std::nullopt : it->second);
    }
    c.series.push_back(std::move(s));
  }
  return c;
}

Result<const PlotModule*> load_plot_module() {
  static std::once_flag once;
  static std::optional<Result<const PlotModule*>> loaded;
  std::call_once(once, [] {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const auto path = (ec ? std::filesystem::path(".") : exe.parent_path()) / kPlotModuleFile;
    auto fail = [&](const std::string& what) {
      loaded.emplace(Diagnostics{about(path.string(), "--plot", "cannot load the plot module: " + what,
                                       "it is built next to hetsim when Qt 6 is found (-DHETSIM_WITH_GUI=ON, "
                                       "./install-deps.sh); the rows themselves are written without it",
                                       ErrorKind::Environment)});
    };
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
      const char* e = dlerror();
      fail(e != nullptr ? e : "dlopen failed");
      return;
    }
    using Entry = const PlotModule* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "hetsim_plot_module"));
    const PlotModule* m = entry != nullptr ? entry() : nullptr;
    if (m == nullptr || m->abi != kPlotModuleAbi || m->render_svg == nullptr) {
      fail("the module is from another build (entry point or ABI differs)");
      return;
    }
    loaded.emplace(m);
  });
  return *loaded;
}

}  // namespace hetsim::sweep

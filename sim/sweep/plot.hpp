#pragma once
// A quick plot of a sweep (`hetsim sweep --plot FILE.svg`): one figure of the rows against one
// axis, one line per value of a second axis, or a heat map over two axes. This header is the
// chart as data (built here, Qt-free, tested without a display) and the plot module that draws
// it: gui/plot/ renders it with Qt's QSvgGenerator into libhetsim_plot.so, which `hetsim` opens
// only for --plot (Qt stays in gui/, and costs nothing to every other command's start).

#include <optional>
#include <string>
#include <vector>

#include "models/base/result.hpp"
#include "sim/sweep/rows.hpp"

namespace hetsim::sweep {

/// What to draw.
struct PlotOptions {
  std::string y = "step_s";  ///< a figure: step_s, tokens_per_s, mfu, time_to_train_s,
                             ///< effective_time_to_train_s, cost_to_train_usd, goodput, devices, POOL.peak_GiB;
                             ///< with Layout::variability, step_p50_s, step_p90_s, step_p99_s
  std::string x;             ///< an axis (key path); "" = the first
  std::string by;            ///< an axis, one line (or heat-map row) per value; "" = the second axis, if any
  bool heatmap = false;      ///< x against `by`, the figure as colour
};

/// The chart as data: positions, labels with units, values (std::nullopt where a point failed).
struct Chart {
  bool heatmap = false;
  std::string title;     ///< the figure and the scenario
  std::string subtitle;  ///< the other axes' values the plot holds fixed, if any
  std::string x_label;   ///< with its unit: "training.global_batch (sequences)"
  std::string y_label;   ///< lines: the figure with its unit; heat map: the `by` axis
  std::string value_label;  ///< heat map: the figure with its unit (the colour scale)
  bool x_numeric = false;   ///< else categories, evenly spaced
  bool x_log = false;       ///< values spanning 100× or more, all above 0, on a log scale
  std::vector<double> x;    ///< numeric positions (categories: 0, 1, …)
  std::vector<std::string> x_text;
  struct Series {
    std::string name;  ///< "by = value" ("" with a single series)
    std::vector<std::optional<double>> y;  ///< per x
  };
  std::vector<Series> series;
};

/// The chart of `rows` (the grid's points; cases are left out). Bad input naming the option
/// when the figure or an axis is not one of the sweep's, or a heat map lacks a second axis.
[[nodiscard]] Result<Chart> make_chart(const Layout& l, const std::vector<Row>& rows, const PlotOptions& o);

/// The figures --plot can draw, for messages.
[[nodiscard]] std::vector<std::string> plot_figures(const Layout& l);

/// What the plot module offers; `abi` guards against a module from another build.
struct PlotModule {
  int abi = 0;
  /// The SVG document of `c`, or "" with `*error` set.
  std::string (*render_svg)(const Chart& c, std::string* error) = nullptr;
};

/// Bumped whenever PlotModule or Chart changes.
inline constexpr int kPlotModuleAbi = 1;
inline constexpr const char* kPlotModuleFile = "libhetsim_plot.so";

/// Opens the module next to the running executable (once per process): an Environment error
/// when this build has none (configured without Qt, HETSIM_WITH_GUI=OFF) or it is from another build.
[[nodiscard]] Result<const PlotModule*> load_plot_module();

}  // namespace hetsim::sweep

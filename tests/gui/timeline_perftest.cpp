// The timeline target of issue 13, measured (docs/benchmarks.md, "GUI"); built, never run by
// ctest, and no pass or fail: it prints figures. In hetsim-gui's main window (its own size,
// 1280×860), with a simulated step of some 10⁵ tasks on the plan view's Timeline page, each frame
// pans the timeline by 1/40 of the time in view (what a drag of ~26 pixels does), bouncing at
// the step's ends, and repaints it at once: TimelineView::repaint(), a synchronous paintEvent
// into the window's backing store, clipped to the part of the timeline its scroll area shows.
// It times pan + repaint per frame, at the whole step and zoomed 2×, 8× and 64× about its middle
// (target ≥ 30 frames/s, i.e. ≤ 33 ms a frame). It then times TimelineView::grab() the same
// way: every lane painted into an image, as on a screen tall enough for all of them. Both again
// with a kind picked and a search on. Last, a search typed into the page's field (the matches
// found, counted and listed, the list and the timeline repainted) and a pick from the list of
// matches (the timeline centred on it and repainted), each timed.
// Usage: gui_timeline_perftest [SCENARIO] [GLOBAL_BATCH] [FRAMES]; by default
// tests/gui/data/gpt3-175b-960.toml with its global batch set to 11520 through the what-if
// control (125,544 tasks), and 120 frames a zoom. GLOBAL_BATCH 0 keeps the scenario's.
// Headless (QT_QPA_PLATFORM=offscreen unless set).
#include <QApplication>
#include <QElapsedTimer>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gui/app/main_window.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/timeline_page.hpp"
#include "gui/widgets/timeline_matches.hpp"
#include "gui/widgets/timeline_view.hpp"
#include "tests/gui/perftest_support.hpp"

namespace {

using hetsim::gui::TimelineView;
using hetsim::gui::perf::stats;
using hetsim::gui::perf::Stats;

double ms_since(const QElapsedTimer& clock) { return static_cast<double>(clock.nsecsElapsed()) * 1e-6; }

// Shows 1/zoom of the step about its middle.
void set_zoom(TimelineView& tl, double zoom) {
  tl.reset_view();
  if (zoom > 1) tl.zoom(zoom, static_cast<double>(tl.data()->makespan_ns) / 2);
}

// `frames` frames of pan + draw from the view set_zoom(zoom) shows, `draw` being repaint or
// grab; the time of each frame in ms.
template <class Draw>
std::vector<double> pan_frames(TimelineView& tl, double zoom, int frames, Draw draw) {
  const double full = static_cast<double>(tl.data()->makespan_ns);
  set_zoom(tl, zoom);
  double dir = 1;
  std::vector<double> ms;
  QElapsedTimer clock;
  for (int i = 0; i < frames; ++i) {
    const auto [t0, t1] = tl.visible_range();
    if ((dir > 0 && t1 >= full) || (dir < 0 && t0 <= 0)) dir = -dir;
    clock.start();
    tl.pan(dir * (t1 - t0) / 40);
    draw();
    ms.push_back(ms_since(clock));
  }
  return ms;
}

// Tasks whose span meets the time in view (on every lane, shown or scrolled away).
std::size_t tasks_in_view(const TimelineView& tl) {
  const auto [t0, t1] = tl.visible_range();
  return static_cast<std::size_t>(std::count_if(tl.data()->tasks.begin(), tl.data()->tasks.end(), [&](const auto& t) {
    return static_cast<double>(t.end_ns) >= t0 && static_cast<double>(t.start_ns) <= t1;
  }));
}

}  // namespace

int main(int argc, char** argv) {
  QTemporaryDir runtime;
  hetsim::gui::perf::headless(runtime);
  QApplication app(argc, argv);
  const std::string file = argc > 1 ? argv[1]
                                    : (std::filesystem::path(HETSIM_SOURCE_DIR) / "tests/gui/data/gpt3-175b-960.toml").string();
  const int batch = argc > 2 ? std::atoi(argv[2]) : 11520;
  const int frames = argc > 3 ? std::max(1, std::atoi(argv[3])) : 120;

  hetsim::gui::MainWindow w;
  w.show();
  if (!w.open_file(QString::fromStdString(file)) || !w.run()) {
    std::fprintf(stderr, "gui_timeline_perftest: cannot run %s\n", file.c_str());
    return 1;
  }
  hetsim::gui::PlanView* view = w.plan_view();
  // Without [parallel] the plan search comes first, then the simulation of its best plan.
  for (int job = 0; job < 2 && !view->simulation(); ++job) hetsim::gui::perf::wait_finished(w, 300000);
  if (view->simulation() && batch > 0 && batch != view->what_if().global_batch) {
    view->global_batch_control()->setValue(batch);
    if (view->global_batch_control()->value() != batch || !hetsim::gui::perf::wait_finished(w, 300000)) {
      std::fprintf(stderr, "gui_timeline_perftest: no simulation with global batch %d\n", batch);
      return 1;
    }
  }
  if (!view->simulation() || !view->simulation()->timeline) {
    std::fprintf(stderr, "gui_timeline_perftest: no simulated step to draw\n");
    return 1;
  }
  w.tabs()->setCurrentWidget(view);
  view->show_page(1);
  QApplication::processEvents();
  TimelineView& tl = *view->timeline();
  if (!tl.isVisible() || tl.data() != view->simulation()->timeline) {
    std::fprintf(stderr, "gui_timeline_perftest: the timeline is not on screen\n");
    return 1;
  }
  const QRect shown = tl.visibleRegion().boundingRect();
  std::printf("scenario %s, global batch %d: %zu tasks on %zu lanes; the window shows %d×%d of the timeline's %d×%d\n",
              file.c_str(), view->what_if().global_batch, tl.data()->tasks.size(), tl.data()->lanes.size(), shown.width(),
              shown.height(), tl.width(), tl.height());

  const struct {
    const char* name;
    std::function<void()> draw;
  } modes[] = {{"repaint (the window's view)", [&] { tl.repaint(); }},
               {"grab (every lane)", [&] {
                  if (tl.grab().isNull()) std::fprintf(stderr, "gui_timeline_perftest: grab failed\n");
                }}};
  // Plain, then with a kind picked and a search on (faded bars, outlines): the critical path's
  // line across lanes is drawn in both.
  const auto& kinds = tl.data()->kinds;
  const int forward = static_cast<int>(std::find(kinds.begin(), kinds.end(), QString("forward")) - kinds.begin());
  for (const bool filtered : {false, true})
  for (const auto& mode : modes) {
    if (filtered && &mode == &modes[0]) {
      tl.set_kinds_shown({forward < static_cast<int>(kinds.size()) ? forward : 0});
      const int found = tl.set_search("mb1");
      std::printf("with kind '%s' picked and %d of its tasks found by \"mb1\":\n",
                  qPrintable(kinds[static_cast<std::size_t>(tl.kinds_shown().front())]), found);
    }
    for (double zoom : {1.0, 2.0, 8.0, 64.0}) {
      set_zoom(tl, zoom);
      const std::size_t in_view = tasks_in_view(tl);
      const std::vector<double> ms = pan_frames(tl, zoom, frames, mode.draw);
      const Stats s = stats(ms);
      double total = 0;
      for (double m : ms) total += m;
      std::printf("%-28s zoom %3.0f× (%6zu tasks in view): median %6.2f ms, max %6.2f ms a frame; %6.1f frames/s\n",
                  mode.name, zoom, in_view, s.median, s.max, 1000.0 * static_cast<double>(ms.size()) / total);
    }
  }

  // A search typed into the Timeline page, and picks from its list of matches.
  hetsim::gui::TimelinePage* page = view->timeline_page();
  page->every_kind_button()->click();
  tl.reset_view();
  QApplication::processEvents();
  const QString rare = tl.data()->tasks[tl.data()->tasks.size() / 2].name;
  for (const QString& needle : {QString("F"), QString("mb1"), rare}) {
    std::vector<double> typed, picked;
    QElapsedTimer clock;
    for (int rep = 0; rep < 10; ++rep) {
      page->find_control()->clear();
      QApplication::processEvents();
      clock.start();
      page->find_control()->setText(needle);
      QApplication::processEvents();  // the list's layout
      page->matches_list()->repaint();
      tl.repaint();
      typed.push_back(ms_since(clock));
      const int n = page->matches_model()->rowCount();
      for (int k = 0; k < 5 && n > 0; ++k) {
        const QModelIndex at = page->matches_model()->index((n - 1) * k / 4);
        clock.start();
        emit page->matches_list()->clicked(at);
        tl.repaint();
        picked.push_back(ms_since(clock));
      }
    }
    const Stats t = stats(typed);
    std::printf("search \"%s\": %zu matches listed in median %.2f ms (max %.2f) from the text set to the list "
                "and timeline repainted",
                qPrintable(needle), tl.matches().size(), t.median, t.max);
    if (!picked.empty()) {
      const Stats p = stats(picked);
      std::printf("; a pick from the list centres and repaints in median %.2f ms (max %.2f)", p.median, p.max);
    }
    std::printf("\n");
  }
  return 0;
}

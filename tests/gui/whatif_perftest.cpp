// The what-if targets of issue 13, measured (docs/benchmarks.md, "GUI"); built, never run by
// ctest, and no pass or fail: it prints figures. In hetsim-gui's main window, with the plan of
// a scenario of at most 1,000 devices on screen, each round changes one what-if value (the NIC
// bandwidth, the device prices or the global batch, in turn) and times
//   - the new estimate on screen: from the change to the headline painted (target < 100 ms);
//   - the new simulated step on screen: from the change to the simulation job's result shown,
//     the window's 300 ms pause after the last change included (target < 1 s);
//   - the simulation job alone: from its start to its result shown.
// Usage: gui_whatif_perftest [SCENARIO] [ROUNDS]; tests/gui/data/gpt3-175b-960.toml and 12 by
// default. A scenario without [parallel] is planned first and its best plan changed. A purchase
// scenario is searched first; each round then changes the purchase view's device prices or
// electricity and times the re-priced front on screen (api::reprice on the UI thread, the view
// repainted).
// Headless (QT_QPA_PLATFORM=offscreen unless set).
#include <QApplication>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QSpinBox>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "gui/app/job_runner.hpp"
#include "gui/app/document.hpp"
#include "gui/app/main_window.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "gui/widgets/timeline_view.hpp"
#include "tests/gui/perftest_support.hpp"

using hetsim::gui::JobRunner;
using hetsim::gui::MainWindow;
using hetsim::gui::perf::stats;
using hetsim::gui::perf::Stats;
using hetsim::gui::perf::wait_finished;

int main(int argc, char** argv) {
  QTemporaryDir runtime;
  hetsim::gui::perf::headless(runtime);
  QApplication app(argc, argv);
  const std::string file = argc > 1 ? argv[1]
                                    : (std::filesystem::path(HETSIM_SOURCE_DIR) / "tests/gui/data/gpt3-175b-960.toml").string();
  const int rounds = argc > 2 ? std::max(1, std::atoi(argv[2])) : 12;

  MainWindow w;
  w.show();
  if (!w.open_file(QString::fromStdString(file)) || !w.run()) {
    std::fprintf(stderr, "gui_whatif_perftest: cannot run %s\n", file.c_str());
    return 1;
  }
  if (hetsim::gui::PurchaseView* pv = w.purchase_view(); w.document()->is_purchase()) {
    if (!wait_finished(w, 600000) || !pv->searched()) {
      std::fprintf(stderr, "gui_whatif_perftest: the search did not come back\n");
      return 1;
    }
    std::printf("scenario %s: %zu compositions planned, %zu on the front\n", file.c_str(),
                pv->searched()->result.planned_points.size(), pv->searched()->result.front.size());
    std::vector<double> ms;
    QElapsedTimer clock;
    const double kwh = pv->electricity_usd_per_kwh();
    for (int i = 0; i < rounds; ++i) {
      const bool away = (i / 2) % 2 == 0;
      clock.start();
      if (i % 2 == 0) pv->price_control()->setValue(away ? 1.5 : 1.0);
      else pv->electricity_control()->setValue(away ? 2 * kwh : kwh);
      pv->repaint();
      ms.push_back(static_cast<double>(clock.nsecsElapsed()) * 1e-6);
      std::printf("round %2d: re-priced front on screen %7.2f ms%s\n", i, ms.back(),
                  pv->outcome()->what_if ? "" : " (the search's own)");
    }
    const Stats r = stats(ms);
    std::printf("re-priced front on screen: median %7.2f ms, max %7.2f ms (target < 100 ms)\n", r.median, r.max);
    return 0;
  }
  // Without [parallel] the plan search comes first, then the simulation of its best plan.
  for (int job = 0; job < 2 && !w.plan_view()->simulation(); ++job) wait_finished(w, 120000);
  if (!w.plan_view()->simulation()) {
    std::fprintf(stderr, "gui_whatif_perftest: the first simulation did not come back\n");
    return 1;
  }
  hetsim::gui::PlanView* view = w.plan_view();
  const hetsim::gui::WhatIf base = view->what_if();
  std::printf("scenario %s: global batch %d, %zu tasks in the simulated step\n", file.c_str(), base.global_batch,
              view->simulation()->timeline ? view->simulation()->timeline->tasks.size() : std::size_t{0});

  QElapsedTimer clock;
  double job_started_ms = -1;
  QObject::connect(w.jobs(), &JobRunner::started, [&] { job_started_ms = static_cast<double>(clock.nsecsElapsed()) * 1e-6; });
  std::vector<double> estimate_ms, shown_ms, job_ms;
  for (int i = 0; i < rounds; ++i) {
    const QString before = view->headline_text();
    job_started_ms = -1;
    clock.start();
    // One value a round, each moved away from the scenario's and back: NIC ×, prices ×, batch.
    const bool away = (i / 3) % 2 == 0;
    switch (i % 3) {
      case 0: view->what_if_control(0)->setValue(away ? 0.5 : base.nic_factor); break;
      case 1: view->what_if_control(2)->setValue(away ? 1.5 : base.price_factor); break;
      default: view->global_batch_control()->setValue(away ? base.global_batch / 2 : base.global_batch); break;
    }
    view->repaint();  // the new estimate painted, as the user sees it
    estimate_ms.push_back(static_cast<double>(clock.nsecsElapsed()) * 1e-6);
    if (view->headline_text() == before) {
      std::fprintf(stderr, "gui_whatif_perftest: round %d did not change the estimate\n", i);
      return 1;
    }
    if (!wait_finished(w, 120000) || !view->simulation() || job_started_ms < 0) {
      std::fprintf(stderr, "gui_whatif_perftest: round %d's simulation did not come back\n", i);
      return 1;
    }
    const double end = static_cast<double>(clock.nsecsElapsed()) * 1e-6;
    shown_ms.push_back(end);
    job_ms.push_back(end - job_started_ms);
    std::printf("round %2d: estimate on screen %7.2f ms, simulation on screen %7.1f ms (its job %6.1f ms)\n", i,
                estimate_ms.back(), shown_ms.back(), job_ms.back());
  }
  const Stats e = stats(estimate_ms), s = stats(shown_ms), j = stats(job_ms);
  std::printf("estimate on screen:   median %7.2f ms, max %7.2f ms (target < 100 ms)\n", e.median, e.max);
  std::printf("simulation on screen: median %7.1f ms, max %7.1f ms (target < 1 s; 300 ms pause included)\n",
              s.median, s.max);
  std::printf("simulation job alone: median %7.1f ms, max %7.1f ms\n", j.median, j.max);
  return 0;
}

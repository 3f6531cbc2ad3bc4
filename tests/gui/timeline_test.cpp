// The timeline of a simulated step: one lane per device and stream with tasks, every task of the
// engine's trace drawn where the trace puts it, zoom and pan keep to the step, hovering finds the
// task under the pointer; a 100,000-task step pans (the frame time is printed, not asserted:
// timings belong to benchmarks).
#include <QElapsedTimer>
#include <QScrollArea>
#include <QTest>

#include <set>

#include "gui/views/plan_view.hpp"
#include "gui/widgets/timeline_view.hpp"
#include "sim/api/api.hpp"
#include "tests/gui/gui_test.hpp"

namespace hetsim::gui {
namespace {

class TimelineTest : public QObject {
  Q_OBJECT

 private slots:
  void the_timeline_holds_the_engines_trace() {
    auto s = api::load(test::source_file("scenarios/mixed-h100-a100.toml").toStdString());
    QVERIFY(s.ok());
    auto sim = api::simulate(*s, *s->plan);
    QVERIFY(sim.ok());
    const SimFigures f = sim_figures(*s, *sim);
    QVERIFY(f.timeline);
    const TimelineData& d = *f.timeline;
    const auto& g = sim->sim.graph;
    const auto& tr = sim->sim.trace;
    QCOMPARE(d.tasks.size(), g.size());
    QCOMPARE(d.makespan_ns, tr.makespan);
    std::set<std::pair<std::uint32_t, int>> used;
    for (const auto& t : g.tasks) used.insert({t.device, static_cast<int>(t.stream)});
    QCOMPARE(d.lanes.size(), used.size());
    // Sorted by lane then start, and a lane's tasks never overlap (one in-order stream).
    std::size_t critical = 0;
    for (std::size_t i = 0; i < d.tasks.size(); ++i) {
      critical += d.tasks[i].critical ? 1 : 0;
      QVERIFY(d.tasks[i].start_ns <= d.tasks[i].end_ns);
      if (i > 0 && d.tasks[i].lane == d.tasks[i - 1].lane) QVERIFY(d.tasks[i - 1].end_ns <= d.tasks[i].start_ns);
      if (i > 0) QVERIFY(d.tasks[i - 1].lane <= d.tasks[i].lane);
    }
    QCOMPARE(critical, tr.critical_path.size());
    QVERIFY(!d.kinds.empty());
  }

  void zoom_pan_and_hover() {
    auto s = api::load(test::source_file("scenarios/mixed-h100-a100.toml").toStdString());
    QVERIFY(s.ok());
    auto sim = api::simulate(*s, *s->plan);
    QVERIFY(sim.ok());
    const SimFigures f = sim_figures(*s, *sim);
    TimelineView v;
    v.resize(1000, v.sizeHint().height());
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    v.set_data(f.timeline);
    const double full = static_cast<double>(f.timeline->makespan_ns);
    QCOMPARE(v.visible_range().first, 0.0);
    QCOMPARE(v.visible_range().second, full);
    v.zoom(4, full / 2);
    QVERIFY(std::abs((v.visible_range().second - v.visible_range().first) - full / 4) < 1e-6 * full);
    QVERIFY(std::abs(v.visible_range().first - 3 * full / 8) < 1e-6 * full);
    v.pan(full);  // past the end: kept inside the step
    QCOMPARE(v.visible_range().second, full);
    v.zoom(0.01, 0);  // out beyond the step: the whole step
    QCOMPARE(v.visible_range().first, 0.0);
    QCOMPARE(v.visible_range().second, full);
    // Every long enough task is found where it is drawn.
    int checked = 0;
    for (int i = 0; i < static_cast<int>(f.timeline->tasks.size()); ++i) {
      const TimelineTask& t = f.timeline->tasks[static_cast<std::size_t>(i)];
      if (static_cast<double>(t.end_ns - t.start_ns) < full / 100) continue;
      const QPoint at = v.task_position(i);
      QVERIFY(!at.isNull());
      QCOMPARE(v.task_at(at), i);
      ++checked;
    }
    QVERIFY(checked > 10);
    QCOMPARE(v.task_at(QPoint(5, 5)), -1);  // the axis
    // A drag to the left shows later times.
    v.zoom(2, full / 2);
    const double before = v.visible_range().first;
    QTest::mousePress(&v, Qt::LeftButton, {}, QPoint(600, 60));
    QTest::mouseMove(&v, QPoint(400, 60));
    QTest::mouseRelease(&v, Qt::LeftButton, {}, QPoint(400, 60));
    QVERIFY(v.visible_range().first > before);
    QTest::mouseDClick(&v, Qt::LeftButton, {}, QPoint(400, 60));
    QCOMPARE(v.visible_range().second, full);
  }

  void a_hundred_thousand_tasks_pan() {
    auto d = std::make_shared<TimelineData>();
    d->kinds = {"forward", "backward"};
    const int lanes = 64, per_lane = 1600;  // 102,400 tasks
    for (int l = 0; l < lanes; ++l) d->lanes.push_back(QString("lane %1").arg(l));
    for (int l = 0; l < lanes; ++l)
      for (int i = 0; i < per_lane; ++i) {
        TimelineTask t;
        t.lane = static_cast<std::uint32_t>(l);
        t.start_ns = 1000LL * i;
        t.end_ns = t.start_ns + 900;
        t.kind = static_cast<std::uint16_t>(i % 2);
        t.critical = l == 0;
        t.name = "t";
        d->tasks.push_back(t);
      }
    d->makespan_ns = 1000LL * per_lane;
    TimelineView v;
    v.resize(1200, v.sizeHint().height());
    v.set_data(d);
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    QElapsedTimer clock;
    clock.start();
    const int frames = 20;
    for (int i = 0; i < frames; ++i) {
      v.pan(static_cast<double>(d->makespan_ns) / 50.0);
      QVERIFY(!v.grab().isNull());
      if (i == frames / 2) v.zoom(8, static_cast<double>(d->makespan_ns) / 2.0);
    }
    qInfo("timeline: %lld ms per frame of 102,400 tasks (grab included)", clock.elapsed() / frames);
  }

  void the_plan_view_shows_the_timeline_page() {
    auto s = api::load(test::source_file("scenarios/mixed-h100-a100.toml").toStdString());
    QVERIFY(s.ok());
    auto sim = api::simulate(*s, *s->plan);
    QVERIFY(sim.ok());
    PlanView view;
    view.show_estimate(*s, *s->plan, api::estimate(*s, *s->plan), "the scenario's plan");
    QVERIFY(!view.timeline()->data());
    view.show_simulation(sim_figures(*s, *sim));
    QVERIFY(view.timeline()->data());
    QCOMPARE(view.timeline()->data()->tasks.size(), sim->sim.graph.size());
    view.clear("cleared");
    QVERIFY(!view.timeline()->data());
  }
};

HETSIM_GUI_SUITE(TimelineTest);

}  // namespace
}  // namespace hetsim::gui

#include "timeline_test.moc"

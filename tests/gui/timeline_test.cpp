// The timeline of a simulated step: one lane per device and stream with tasks, every task of the
// engine's trace drawn where the trace puts it, zoom and pan keep to the step, hovering finds the
// task under the pointer; the critical path is drawn across lanes; a set of kinds can be picked
// and tasks found by name, listed, and centred from the list; a 100,000-task step pans (the frame
// time is printed, not asserted: timings belong to benchmarks).
#include <QAbstractItemModelTester>
#include <QElapsedTimer>
#include <QImage>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QScrollArea>
#include <QTest>
#include <QToolButton>

#include <optional>
#include <set>

#include "gui/views/plan_view.hpp"
#include "gui/views/timeline_page.hpp"
#include "gui/widgets/timeline_matches.hpp"
#include "gui/widgets/timeline_view.hpp"
#include "sim/api/api.hpp"
#include "tests/gui/gui_test.hpp"

namespace hetsim::gui {
namespace {

// Shows `span` ns of the step centred on `at_ns` (as far as the step's ends allow).
void show_around(TimelineView& v, double at_ns, double span) {
  v.reset_view();
  v.zoom((v.visible_range().second - v.visible_range().first) / span, at_ns);
  v.pan(at_ns - (v.visible_range().first + v.visible_range().second) / 2);
}

class TimelineTest : public QObject {
  Q_OBJECT

  // scenarios/mixed-h100-a100.toml, its simulated step and the figures the plan view keeps.
  std::optional<Scenario> scenario_;
  std::optional<api::Simulated> simulated_;
  std::optional<SimFigures> figures_;

 private slots:
  void initTestCase() {
    auto s = api::load(test::source_file("scenarios/mixed-h100-a100.toml").toStdString());
    QVERIFY(s.ok());
    auto sim = api::simulate(*s, *s->plan);
    QVERIFY(sim.ok());
    figures_ = sim_figures(*s, *sim);
    scenario_ = std::move(*s);
    simulated_ = std::move(*sim);
  }

  void the_timeline_holds_the_engines_trace() {
    const api::Simulated* sim = &*simulated_;
    const SimFigures& f = *figures_;
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
    const SimFigures& f = *figures_;
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

  // The critical path, drawn across lanes: its tasks in time order, and the line from one to the
  // next in another lane painted in the critical colour.
  void the_critical_path_is_drawn_across_lanes() {
    const api::Simulated* sim = &*simulated_;
    const SimFigures& f = *figures_;
    TimelineView v;
    v.set_data(f.timeline);
    v.resize(1400, v.sizeHint().height());  // every lane
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    const auto& tasks = f.timeline->tasks;
    const auto& chain = v.critical_chain();
    QCOMPARE(chain.size(), sim->sim.trace.critical_path.size());
    int across = -1;
    for (std::size_t k = 1; k < chain.size(); ++k) {
      QVERIFY(tasks[chain[k - 1]].start_ns <= tasks[chain[k]].start_ns);
      QVERIFY(tasks[chain[k]].critical);
      if (across < 0 && tasks[chain[k - 1]].lane != tasks[chain[k]].lane) across = static_cast<int>(k);
    }
    QVERIFY2(across > 0, "the critical path never changes lanes");
    // Zoomed on that link, the middle of the line between the two tasks is red.
    const TimelineTask& a = tasks[chain[static_cast<std::size_t>(across) - 1]];
    const TimelineTask& b = tasks[chain[static_cast<std::size_t>(across)]];
    const double mid_ns = (static_cast<double>(a.end_ns) + static_cast<double>(b.start_ns)) / 2;
    show_around(v, mid_ns, std::max(4.0 * static_cast<double>(b.end_ns - a.start_ns), 2000.0));
    const QImage img = v.grab().toImage();
    const QPoint pa = v.task_position(static_cast<int>(chain[static_cast<std::size_t>(across) - 1]));
    const QPoint pb = v.task_position(static_cast<int>(chain[static_cast<std::size_t>(across)]));
    QVERIFY(!pa.isNull() && !pb.isNull());
    // The line runs from a's end to b's start; its middle lies halfway between the two lanes.
    const auto [t0, t1] = v.visible_range();
    const double x_end = 230 + (static_cast<double>(a.end_ns) - t0) / (t1 - t0) * (v.width() - 238);
    const double x_start = 230 + (static_cast<double>(b.start_ns) - t0) / (t1 - t0) * (v.width() - 238);
    const QPoint mid(static_cast<int>((x_end + x_start) / 2), (pa.y() + pb.y()) / 2);
    bool red = false;
    for (int dx = -2; dx <= 2 && !red; ++dx)
      for (int dy = -2; dy <= 2 && !red; ++dy) {
        const QColor c = img.pixelColor(mid.x() + dx, mid.y() + dy);
        red = c.red() > 150 && c.green() < 110 && c.blue() < 110;
      }
    QVERIFY2(red, qPrintable(QString("no critical line at %1,%2").arg(mid.x()).arg(mid.y())));
  }

  // A set of kinds shown, the others faded; tasks found by name, outlined, and visited in turn.
  void a_kind_filter_and_a_search() {
    const Scenario* s = &*scenario_;
    const SimFigures& f = *figures_;
    const auto& tasks = f.timeline->tasks;
    TimelineView v;
    v.set_data(f.timeline);
    v.resize(1400, v.sizeHint().height());  // every lane
    v.show();
    QVERIFY(QTest::qWaitForWindowExposed(&v));
    const double full = static_cast<double>(f.timeline->makespan_ns);
    // The longest task, and the longest of another kind.
    std::size_t big = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].end_ns - tasks[i].start_ns > tasks[big].end_ns - tasks[big].start_ns) big = i;
    std::size_t other = tasks.size();
    for (std::size_t i = 0; i < tasks.size(); ++i)
      if (tasks[i].kind != tasks[big].kind &&
          (other == tasks.size() || tasks[i].end_ns - tasks[i].start_ns > tasks[other].end_ns - tasks[other].start_ns))
        other = i;
    QVERIFY(other < tasks.size());
    QVERIFY(static_cast<double>(tasks[other].end_ns - tasks[other].start_ns) > full / 100000);
    v.set_kinds_shown({tasks[big].kind});
    QCOMPARE(v.kinds_shown(), std::vector<int>{tasks[big].kind});
    for (std::size_t i = 0; i < tasks.size(); ++i) QCOMPARE(v.task_shown(i), tasks[i].kind == tasks[big].kind);
    // Drawn so: zoomed on `other`, its bar is faded; zoomed on `big`, in its kind's colour.
    auto colour_at = [&](std::size_t i) {
      show_around(v, (static_cast<double>(tasks[i].start_ns) + static_cast<double>(tasks[i].end_ns)) / 2,
                  4.0 * static_cast<double>(tasks[i].end_ns - tasks[i].start_ns));
      const QPoint at = v.task_position(static_cast<int>(i));
      const QColor c = v.grab().toImage().pixelColor(at);
      v.reset_view();
      return c;
    };
    QCOMPARE(colour_at(other), TimelineView::faded_color());
    QCOMPARE(colour_at(big), TimelineView::kind_color(tasks[big].kind));
    // Two kinds: both in colour, every other kind faded; a kind that does not exist is ignored.
    const int two[] = {tasks[big].kind, tasks[other].kind};
    const std::vector<int> both = {std::min(two[0], two[1]), std::max(two[0], two[1])};
    QVERIFY(f.timeline->kinds.size() >= 3);  // so that some kind is left out
    v.set_kinds_shown({two[1], two[0], static_cast<int>(f.timeline->kinds.size()), -1});
    QCOMPARE(v.kinds_shown(), both);
    std::size_t faded = 0;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const bool in = tasks[i].kind == two[0] || tasks[i].kind == two[1];
      QCOMPARE(v.task_shown(i), in);
      faded += in ? 0 : 1;
    }
    QVERIFY(faded > 0);
    QCOMPARE(colour_at(other), TimelineView::kind_color(tasks[other].kind));
    QCOMPARE(colour_at(big), TimelineView::kind_color(tasks[big].kind));
    v.set_kinds_shown({});
    QVERIFY(v.kinds_shown().empty());
    QVERIFY(v.task_shown(other));

    // Found by name, case-insensitive: every task whose name holds it, and no other.
    const QString name = tasks[big].name;
    const QString needle = name.left(std::min<qsizetype>(name.size(), 4)).toLower();
    const int n = v.set_search(needle);
    int expected = 0;
    for (const TimelineTask& t : tasks) expected += t.name.contains(needle, Qt::CaseInsensitive) ? 1 : 0;
    QCOMPARE(n, expected);
    QVERIFY(n >= 1);
    for (std::size_t i = 0; i < tasks.size(); ++i)
      QCOMPARE(v.task_shown(i), tasks[i].name.contains(needle, Qt::CaseInsensitive));
    // Next: each match in turn comes into view, then the first again.
    for (int k = 0; k < std::min(n, 3) + 1; ++k) {
      const int i = v.next_match();
      QCOMPARE(static_cast<std::size_t>(i), v.matches()[static_cast<std::size_t>(k % n)]);
      const double mid = (static_cast<double>(tasks[static_cast<std::size_t>(i)].start_ns) +
                          static_cast<double>(tasks[static_cast<std::size_t>(i)].end_ns)) / 2;
      QVERIFY(v.visible_range().first <= mid && mid <= v.visible_range().second);
      if (k == n) break;
    }
    // show_match centres any match, and Next goes on from it.
    QCOMPARE(v.show_match(static_cast<std::size_t>(n)), -1);
    QCOMPARE(v.show_match(static_cast<std::size_t>(n - 1)), static_cast<int>(v.matches().back()));
    QCOMPARE(v.current_match(), n - 1);
    QCOMPARE(v.next_match(), static_cast<int>(v.matches().front()));
    // With kinds picked, only those kinds' matches.
    v.set_kinds_shown({tasks[big].kind});
    for (std::size_t i : v.matches()) QCOMPARE(tasks[i].kind, tasks[big].kind);
    QCOMPARE(v.set_search(QString()), 0);
    QVERIFY(!v.task_shown(other));  // the kind filter alone again

    // In the plan view: a button per kind, the count of tasks found, the list of them.
    PlanView view;
    view.show_estimate(*s, *s->plan, api::estimate(*s, *s->plan), "the scenario's plan");
    view.show_simulation(f);
    view.resize(1400, 900);
    view.show_page(1);
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    TimelinePage* page = view.timeline_page();
    TimelineView* tl = view.timeline();
    QCOMPARE(page->kind_button_count(), f.timeline->kinds.size());
    for (std::size_t k = 0; k < page->kind_button_count(); ++k) QCOMPARE(page->kind_button(k)->text(), f.timeline->kinds[k]);
    QVERIFY(!page->matches_list()->isVisible());  // no search, no list
    page->find_control()->setText(needle);
    QCOMPARE(tl->matches().size(), static_cast<std::size_t>(n));
    QVERIFY2(page->found_text().startsWith(QString::number(n) + " task"), qPrintable(page->found_text()));
    // The list holds the matches, in order.
    TimelineMatchesModel* m = page->matches_model();
    QAbstractItemModelTester tester(m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QVERIFY(page->matches_list()->isVisible());
    QCOMPARE(m->rowCount(), n);
    for (int row = 0; row < n; ++row) {
      const QModelIndex at = m->index(row);
      const std::size_t i = tl->matches()[static_cast<std::size_t>(row)];
      QCOMPARE(at.data(TimelineMatchesModel::kTaskRole).toULongLong(), static_cast<qulonglong>(i));
      QVERIFY2(at.data().toString().startsWith(tasks[i].name + " · " + f.timeline->lanes[tasks[i].lane]),
               qPrintable(at.data().toString()));
    }
    // A click on the last one centres it (zoomed in far from it first), and Next goes on from it.
    const std::size_t last = tl->matches().back();
    const double last_mid =
        (static_cast<double>(tasks[last].start_ns) + static_cast<double>(tasks[last].end_ns)) / 2;
    tl->reset_view();
    tl->zoom(1000, last_mid < full / 2 ? full : 0);
    QVERIFY(tl->visible_range().second < last_mid || tl->visible_range().first > last_mid);
    QListView* list = page->matches_list();
    list->scrollTo(m->index(n - 1));
    QTest::mouseClick(list->viewport(), Qt::LeftButton, {}, list->visualRect(m->index(n - 1)).center());
    QCOMPARE(tl->current_match(), n - 1);
    QVERIFY(tl->visible_range().first <= last_mid && last_mid <= tl->visible_range().second);
    QTest::keyClick(page->find_control(), Qt::Key_Return);
    QCOMPARE(tl->current_match(), 0);
    QCOMPARE(list->currentIndex().row(), 0);

    // Two kinds picked by their buttons: the timeline shows those, the search and its list keep to
    // them; Every kind clears the pick.
    page->kind_button(static_cast<std::size_t>(two[0]))->click();
    page->kind_button(static_cast<std::size_t>(two[1]))->click();
    QCOMPARE(tl->kinds_shown(), both);
    int in_kinds = 0;
    for (const TimelineTask& t : tasks)
      in_kinds += (t.kind == two[0] || t.kind == two[1]) && t.name.contains(needle, Qt::CaseInsensitive) ? 1 : 0;
    QCOMPARE(static_cast<int>(tl->matches().size()), in_kinds);
    QCOMPARE(m->rowCount(), in_kinds);
    page->kind_button(static_cast<std::size_t>(two[0]))->click();  // unpicked again
    QCOMPARE(tl->kinds_shown(), std::vector<int>{two[1]});
    page->every_kind_button()->click();
    QVERIFY(tl->kinds_shown().empty());
    for (std::size_t k = 0; k < page->kind_button_count(); ++k) QVERIFY(!page->kind_button(k)->isChecked());
    QCOMPARE(m->rowCount(), n);
    page->find_control()->clear();
    QCOMPARE(m->rowCount(), 0);
    QVERIFY(!list->isVisible());
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
    const Scenario* s = &*scenario_;
    const api::Simulated* sim = &*simulated_;
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

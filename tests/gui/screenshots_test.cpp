// Screenshots of each view of hetsim-gui (QWidget::grab, offscreen), written to the build folder
// (HETSIM_GUI_SCREENSHOT_DIR) for docs/gui.md: the purchase view after a search, the plan view
// after a simulation, the scenario view listing a bad file's errors. They are drawn in DejaVu Sans
// 9 pt (fonts-dejavu-core, installed by install-deps.sh), not the machine's default font, so that
// the images are the same on every machine.
#include <QApplication>
#include <QDir>
#include <QFont>
#include <QFontInfo>
#include <QImage>
#include <QPixmap>
#include <QSet>
#include <QTabWidget>
#include <QTest>

#include "gui/app/job_runner.hpp"
#include "gui/app/main_window.hpp"
#include "gui/views/plan_view.hpp"
#include "gui/views/purchase_view.hpp"
#include "tests/gui/gui_test.hpp"

namespace hetsim::gui {
namespace {

// Distinct colours on a grid of samples: a blank or unpainted grab has one or two.
int colours(const QImage& img) {
  QSet<QRgb> seen;
  for (int y = 0; y < img.height(); y += 7)
    for (int x = 0; x < img.width(); x += 7) seen.insert(img.pixel(x, y));
  return static_cast<int>(seen.size());
}

class ScreenshotsTest : public QObject {
  Q_OBJECT

  QString out_ = HETSIM_GUI_SCREENSHOT_DIR;
  QFont font_before_;

  void shoot(MainWindow& w, const QString& name) {
    QCoreApplication::processEvents();
    const QImage img = w.grab().toImage();
    QVERIFY(!img.isNull());
    QCOMPARE(img.size(), w.size() * img.devicePixelRatio());
    QVERIFY2(colours(img) > 20, qPrintable(name + " looks blank"));
    const QString path = QDir(out_).filePath(name);
    QVERIFY2(img.save(path), qPrintable(path));
  }

  void prepare(MainWindow& w) {
    Prompts p;
    p.unsaved = [](QWidget*, const QString&) { return QMessageBox::Discard; };
    p.error = [](QWidget*, const QString&, const QString& m) { QFAIL(qPrintable(m)); };
    w.set_prompts(p);
    w.resize(1280, 860);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
  }

 private slots:
  void initTestCase() {
    QVERIFY(QDir().mkpath(out_));
    font_before_ = QApplication::font();
    QFont font(QStringLiteral("DejaVu Sans"), 9);
    font.setStyleHint(QFont::SansSerif, QFont::PreferDefault);
    QApplication::setFont(font);
    // Another family substituted silently would make the images depend on the machine again.
    QCOMPARE(QFontInfo(QApplication::font()).family(), QStringLiteral("DejaVu Sans"));
  }

  void cleanupTestCase() { QApplication::setFont(font_before_); }

  void purchase_view() {
    MainWindow w;
    prepare(w);
    QVERIFY(w.open_file(test::source_file("scenarios/purchase/llama3-8b-add-to-one-a100-node.toml")));
    shoot(w, "gui-scenario-form.png");
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(w.jobs()->running() == 0 && !w.jobs()->busy(), 300000);
    QVERIFY(w.purchase_view()->outcome());
    QCOMPARE(w.tabs()->currentWidget(), w.purchase_view());
    shoot(w, "gui-purchase.png");
    w.purchase_view()->side_pages()->setCurrentIndex(1);
    shoot(w, "gui-purchase-sensitivity.png");
    w.purchase_view()->side_pages()->setCurrentIndex(2);
    shoot(w, "gui-purchase-why.png");
  }

  void plan_view() {
    MainWindow w;
    prepare(w);
    QVERIFY(w.open_file(test::source_file("scenarios/mixed-h100-a100.toml")));
    QVERIFY(w.run());
    QTRY_VERIFY_WITH_TIMEOUT(w.jobs()->running() == 0 && !w.jobs()->busy(), 300000);
    shoot(w, "gui-plan.png");
    w.plan_view()->show_page(1);
    shoot(w, "gui-timeline.png");
  }

  void scenario_view_with_errors() {
    MainWindow w;
    prepare(w);
    QVERIFY(w.open_file(test::source_file("tests/gui/data/bad-device.toml")));
    shoot(w, "gui-scenario-errors.png");
  }
};

HETSIM_GUI_SUITE(ScreenshotsTest);

}  // namespace
}  // namespace hetsim::gui

#include "screenshots_test.moc"

#include "gui/widgets/undo_keys.hpp"

#include <QKeyEvent>
#include <QKeySequence>
#include <QWidget>

namespace hetsim::gui {

namespace {

class UndoKeys : public QObject {
 public:
  using QObject::QObject;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::ShortcutOverride && event->type() != QEvent::KeyPress)
      return QObject::eventFilter(watched, event);
    auto* key = static_cast<QKeyEvent*>(event);
    if (!key->matches(QKeySequence::Undo) && !key->matches(QKeySequence::Redo))
      return QObject::eventFilter(watched, event);
    // Not overridden: the window's shortcut takes the key. A key press that still comes (no
    // enabled action: nothing to undo) goes nowhere, rather than to the widget's own undo.
    event->ignore();
    return true;
  }
};

}  // namespace

void route_undo_keys(QWidget* w) { w->installEventFilter(new UndoKeys(w)); }

}  // namespace hetsim::gui

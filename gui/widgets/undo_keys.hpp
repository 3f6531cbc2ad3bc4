#pragma once
// The document's undo for the keys of undo: a text widget (the scenario editor, a form's field)
// handles Ctrl+Z and Ctrl+Shift+Z (Ctrl+Y) itself, with an undo of its own. route_undo_keys lets
// them through to the window's Edit > Undo and Redo, which undo the document's edits, so that
// the keys and the menu always do the same.

class QWidget;

namespace hetsim::gui {

/// `w` leaves the undo and redo keys to the window's shortcuts.
void route_undo_keys(QWidget* w);

}  // namespace hetsim::gui

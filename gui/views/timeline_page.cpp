#include "gui/views/timeline_page.hpp"

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPixmap>
#include <QPushButton>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

#include "gui/widgets/timeline_matches.hpp"
#include "gui/widgets/timeline_view.hpp"

namespace hetsim::gui {

TimelinePage::TimelinePage(QWidget* parent) : QWidget(parent) {
  timeline_ = new TimelineView(this);
  auto* scroll = new QScrollArea(this);
  scroll->setWidget(timeline_);
  scroll->setWidgetResizable(true);
  auto* hint = new QLabel(tr("One lane per simulated device and stream. Wheel: zoom; drag: pan; double click: the "
                             "whole step; hover a task for its kind and duration."),
                          this);
  hint->setWordWrap(true);

  // The kinds: pick some to show them alone (in colour); none picked shows every kind.
  kind_row_ = new QHBoxLayout();
  kind_row_->addWidget(new QLabel(tr("Kinds"), this));
  every_kind_ = new QPushButton(tr("Every kind"), this);
  every_kind_->setToolTip(tr("Show every kind of task in its colour"));
  kind_row_->addWidget(every_kind_);
  kind_row_->addStretch(1);
  connect(every_kind_, &QPushButton::clicked, this, [this] {
    for (QToolButton* b : kind_buttons_) {
      const QSignalBlocker quiet(b);  // one re-filter, below
      b->setChecked(false);
    }
    kinds_picked();
  });

  auto* find_row = new QHBoxLayout();
  find_ = new QLineEdit(this);
  find_->setPlaceholderText(tr("Find tasks by name (F L12-23 mb5, AR, …)"));
  find_->setClearButtonEnabled(true);
  auto* next = new QPushButton(tr("Next"), this);
  next->setToolTip(tr("Show the next task found (Enter in the search field)"));
  found_ = new QLabel(this);
  find_row->addWidget(new QLabel(tr("Find"), this));
  find_row->addWidget(find_, 1);
  find_row->addWidget(next);
  find_row->addWidget(found_);
  connect(find_, &QLineEdit::textChanged, this, [this](const QString& t) {
    timeline_->set_search(t);
    show_found();
  });
  auto next_match = [this] {
    const int at = timeline_->next_match();
    if (at >= 0) matches_list_->setCurrentIndex(matches_->index(timeline_->current_match()));
  };
  connect(find_, &QLineEdit::returnPressed, this, next_match);
  connect(next, &QPushButton::clicked, this, next_match);

  matches_ = new TimelineMatchesModel(this);
  matches_list_ = new QListView(this);
  matches_list_->setModel(matches_);
  matches_list_->setUniformItemSizes(true);  // 10⁵ rows lay out at once
  matches_list_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  matches_list_->setToolTip(tr("The tasks found: click one to centre the timeline on it"));
  matches_list_->hide();
  connect(matches_list_, &QListView::clicked, this,
          [this](const QModelIndex& at) { timeline_->show_match(static_cast<std::size_t>(at.row())); });
  connect(matches_list_, &QListView::activated, this,
          [this](const QModelIndex& at) { timeline_->show_match(static_cast<std::size_t>(at.row())); });

  auto* split = new QSplitter(Qt::Horizontal, this);
  split->addWidget(scroll);
  split->addWidget(matches_list_);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(hint);
  layout->addLayout(kind_row_);
  layout->addLayout(find_row);
  layout->addWidget(split, 1);
}

void TimelinePage::set_data(std::shared_ptr<const TimelineData> step) {
  timeline_->set_data(step);
  for (QToolButton* b : kind_buttons_) delete b;
  kind_buttons_.clear();
  if (step)
    for (std::size_t k = 0; k < step->kinds.size(); ++k) {
      auto* b = new QToolButton(this);
      b->setText(step->kinds[k]);
      QPixmap swatch(12, 12);
      swatch.fill(TimelineView::kind_color(static_cast<int>(k)));
      b->setIcon(QIcon(swatch));
      b->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
      b->setCheckable(true);
      b->setToolTip(tr("Show %1 tasks (with the other kinds picked) in colour; the others fade").arg(step->kinds[k]));
      connect(b, &QToolButton::toggled, this, [this] { kinds_picked(); });
      kind_row_->insertWidget(static_cast<int>(k) + 1, b);  // after the label
      kind_buttons_.push_back(b);
    }
  timeline_->set_search(find_->text());
  show_found();
}

void TimelinePage::kinds_picked() {
  std::vector<int> kinds;
  for (std::size_t k = 0; k < kind_buttons_.size(); ++k)
    if (kind_buttons_[k]->isChecked()) kinds.push_back(static_cast<int>(k));
  timeline_->set_kinds_shown(kinds);
  show_found();
}

void TimelinePage::show_found() {
  matches_->set_matches(timeline_->data(), timeline_->matches());
  matches_list_->setVisible(!find_->text().isEmpty());
  if (find_->text().isEmpty()) {
    found_->clear();
    return;
  }
  found_->setText(tr("%n task(s)", "", static_cast<int>(timeline_->matches().size())));
}

QString TimelinePage::found_text() const { return found_->text(); }

}  // namespace hetsim::gui

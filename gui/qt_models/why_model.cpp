#include "gui/qt_models/why_model.hpp"

#include <algorithm>
#include <cmath>

#include "gui/qt_models/format.hpp"

namespace hetsim::gui {

namespace {

QString signed_usd(double usd) {
  if (usd == 0) return "$0";
  return (usd > 0 ? "+" : "−") + format_usd(std::abs(usd));
}

QString signed_seconds(double s) {
  if (s == 0) return "0";
  return (s > 0 ? "+" : "−") + format_seconds(std::abs(s));
}

QString percent(double factor) {
  const long pct = std::lround(100 * (factor - 1));
  return (pct > 0 ? "+" : "") + QString::number(pct) + " %";
}

// The largest cost change first; equal swings keep their order.
void sort_by_swing(std::vector<TornadoModelRow>& rows) {
  auto swing = [](const TornadoModelRow& t) { return std::max(std::abs(t.low_change_usd), std::abs(t.high_change_usd)); };
  std::stable_sort(rows.begin(), rows.end(),
                   [&](const TornadoModelRow& a, const TornadoModelRow& b) { return swing(a) > swing(b); });
}

}  // namespace

std::vector<TornadoModelRow> tornado_rows(const buy::Result& r) {
  std::vector<TornadoModelRow> rows;
  for (const buy::Sensitivity& x : r.sensitivity) {
    const QString what = qs(x.what);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const TornadoModelRow& t) { return t.what == what; });
    if (it == rows.end()) {
      rows.push_back({});
      it = rows.end() - 1;
      it->what = what;
    }
    if (x.factor < 1) {
      it->low_factor = x.factor;
      it->low_change_usd = x.total_change_usd;
      it->low_time_change_s = x.time_change_s;
      it->low_changes = x.changes;
      it->low_nothing = x.nodes.empty();
    } else {
      it->high_factor = x.factor;
      it->high_change_usd = x.total_change_usd;
      it->high_time_change_s = x.time_change_s;
      it->high_changes = x.changes;
      it->high_nothing = x.nodes.empty();
    }
  }
  sort_by_swing(rows);
  return rows;
}

std::vector<TornadoModelRow> point_tornado_rows(const Scenario& s, const buy::Result& r, std::size_t i) {
  std::vector<TornadoModelRow> rows;
  if (!s.purchase) return rows;
  for (const buy::PointSensitivity& x : buy::point_sensitivity(s, r, i)) {
    const QString what = qs(x.what);
    auto it = std::find_if(rows.begin(), rows.end(), [&](const TornadoModelRow& row) { return row.what == what; });
    if (it == rows.end()) {
      rows.push_back({});
      it = rows.end() - 1;
      it->what = what;
    }
    (x.factor < 1 ? it->low_factor : it->high_factor) = x.factor;
    (x.factor < 1 ? it->low_change_usd : it->high_change_usd) = x.total_change_usd;
    (x.factor < 1 ? it->low_time_change_s : it->high_time_change_s) = x.time_change_s;
  }
  sort_by_swing(rows);
  return rows;
}

TornadoModel::TornadoModel(QObject* parent) : QAbstractTableModel(parent) {}

void TornadoModel::set_rows(std::vector<TornadoModelRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int TornadoModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int TornadoModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant TornadoModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const TornadoModelRow& r = rows_[static_cast<std::size_t>(index.row())];
  const bool low = index.column() == kLow;
  if (role == Qt::DisplayRole) {
    if (index.column() == kWhat) return r.what;
    const bool nothing = low ? r.low_nothing : r.high_nothing;
    const QString at = percent(low ? r.low_factor : r.high_factor);
    if (nothing) return tr("%1: nothing fits the budget").arg(at);
    return tr("%1: %2%3")
        .arg(at, signed_usd(low ? r.low_change_usd : r.high_change_usd),
             (low ? r.low_changes : r.high_changes) ? tr(" (another point)") : QString());
  }
  if (role == kValueRole && index.column() != kWhat) return low ? r.low_change_usd : r.high_change_usd;
  if (role == Qt::ToolTipRole && index.column() != kWhat)
    return tr("time until trained %1").arg(signed_seconds(low ? r.low_time_change_s : r.high_time_change_s));
  return {};
}

QVariant TornadoModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kWhat: return tr("Price");
    case kLow: return tr("Lower: cost change");
    case kHigh: return tr("Higher: cost change");
    default: return {};
  }
}

std::vector<PartRow> part_rows(const buy::Versus& v, PartUnit unit) {
  const bool time = unit == PartUnit::Seconds;
  const auto& chosen = time ? v.chosen_time : v.chosen_cost;
  const auto& other = time ? v.other_time : v.other_cost;
  const auto& difference = time ? v.time_s : v.cost_usd;
  std::vector<PartRow> rows;
  for (std::size_t i = 0; i < difference.size(); ++i) {
    PartRow r;
    r.part = qs(difference[i].name);
    r.difference = difference[i].value;
    for (const buy::Part& p : chosen)
      if (p.name == difference[i].name) r.chosen = p.value;
    for (const buy::Part& p : other)
      if (p.name == difference[i].name) r.other = p.value;
    rows.push_back(std::move(r));
  }
  return rows;
}

PartsModel::PartsModel(PartUnit unit, QObject* parent) : QAbstractTableModel(parent), unit_(unit) {}

void PartsModel::set_rows(std::vector<PartRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int PartsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int PartsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

QVariant PartsModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const PartRow& r = rows_[static_cast<std::size_t>(index.row())];
  const double values[] = {0, r.other, r.chosen, r.difference};
  const double v = values[index.column()];
  if (role == Qt::DisplayRole) {
    if (index.column() == kPart) return r.part;
    const bool usd = unit_ == PartUnit::Usd;
    if (index.column() == kDifference) return usd ? signed_usd(v) : signed_seconds(v);
    return usd ? format_usd(v) : format_seconds(v);
  }
  if (role == kValueRole && index.column() != kPart) return v;
  if (role == Qt::TextAlignmentRole && index.column() != kPart)
    return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
  return {};
}

QVariant PartsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kPart: return unit_ == PartUnit::Usd ? tr("Cost") : tr("Time");
    case kOther: return tr("Runner-up");
    case kChosen: return tr("Recommended");
    case kDifference: return tr("Difference");
    default: return {};
  }
}

}  // namespace hetsim::gui

#include "gui/qt_models/front_model.hpp"

#include <QFont>

#include "gui/qt_models/format.hpp"
#include "sim/report/buy_report.hpp"
#include "sim/report/estimate_report.hpp"

namespace hetsim::gui {

std::vector<FrontRow> front_rows(const Scenario& s, const buy::Result& r) {
  std::vector<FrontRow> rows;
  if (!s.purchase) return rows;
  for (std::size_t i = 0; i < r.front.size(); ++i) {
    const buy::Point& p = r.front[i];
    FrontRow row;
    row.index = i;
    row.recommended = i == r.recommended;
    row.buy = qs(report::what_is_bought(s, p));
    for (std::size_t k = 0; k < p.nodes.size() && k < s.purchase->candidates.size(); ++k)
      row.devices_bought += p.nodes[k] * s.purchase->candidates[k].pool.devices_per_node;
    row.capex_usd = p.capex_usd;
    row.run_usd = p.run_usd;
    row.total_usd = p.total_usd;
    row.effective_time_s = p.effective_time_s;
    row.lead_time_s = p.lead_time_s;
    row.trained_in_s = p.trained_in_s;
    row.usd_per_million_tokens = p.usd_per_million_tokens;
    row.power_kw = p.power_kw;
    row.has_deadline = s.purchase->deadline_days > 0;
    row.meets_deadline = p.meets_deadline;
    row.step_s = p.best.step_s();
    row.mfu = p.best.estimate.mfu;
    row.plan = qs(report::plan_summary(p.scenario, p.best.plan));
    rows.push_back(std::move(row));
  }
  return rows;
}

FrontModel::FrontModel(QObject* parent) : QAbstractTableModel(parent) {}

void FrontModel::set_rows(std::vector<FrontRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

void FrontModel::clear() { set_rows({}); }

int FrontModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int FrontModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : kColumns; }

namespace {

QVariant raw(const FrontRow& r, int column) {
  switch (column) {
    case FrontModel::kPoint: return static_cast<qulonglong>(r.index + 1);
    case FrontModel::kBuy: return r.buy;
    case FrontModel::kDevices: return r.devices_bought;
    case FrontModel::kCapex: return r.capex_usd;
    case FrontModel::kRun: return r.run_usd;
    case FrontModel::kTotal: return r.total_usd;
    case FrontModel::kTime: return r.effective_time_s;
    case FrontModel::kLead: return r.lead_time_s;
    case FrontModel::kTrainedIn: return r.trained_in_s;
    case FrontModel::kUsdPerMTok: return r.usd_per_million_tokens;
    case FrontModel::kPower: return r.power_kw;
    case FrontModel::kDeadline: return r.has_deadline ? (r.meets_deadline ? 1 : 0) : -1;
    case FrontModel::kStep: return r.step_s;
    case FrontModel::kMfu: return r.mfu;
    case FrontModel::kPlan: return r.plan;
    default: return {};
  }
}

QString shown(const FrontRow& r, int column) {
  switch (column) {
    case FrontModel::kPoint: return QString::number(r.index + 1) + (r.recommended ? "*" : "");
    case FrontModel::kBuy: return r.buy;
    case FrontModel::kDevices: return QString::number(r.devices_bought);
    case FrontModel::kCapex: return format_usd(r.capex_usd);
    case FrontModel::kRun: return format_usd(r.run_usd);
    case FrontModel::kTotal: return format_usd(r.total_usd);
    case FrontModel::kTime: return format_seconds(r.effective_time_s);
    case FrontModel::kLead: return r.lead_time_s > 0 ? format_seconds(r.lead_time_s) : QStringLiteral("-");
    case FrontModel::kTrainedIn: return format_seconds(r.trained_in_s);
    case FrontModel::kUsdPerMTok: return QString::number(r.usd_per_million_tokens, 'g', 3);
    case FrontModel::kPower: return QString::number(r.power_kw, 'g', 4);
    case FrontModel::kDeadline:
      return r.has_deadline ? (r.meets_deadline ? QStringLiteral("yes") : QStringLiteral("NO")) : QStringLiteral("-");
    case FrontModel::kStep: return format_seconds(r.step_s);
    case FrontModel::kMfu: return QString::number(100 * r.mfu, 'f', 1) + " %";
    case FrontModel::kPlan: return r.plan;
    default: return {};
  }
}

}  // namespace

QVariant FrontModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid)) return {};
  const FrontRow& r = rows_[static_cast<std::size_t>(index.row())];
  switch (role) {
    case Qt::DisplayRole: return shown(r, index.column());
    case Qt::ToolTipRole: return index.column() == kPlan || index.column() == kBuy ? shown(r, index.column()) : QVariant();
    case kSortRole: return raw(r, index.column());
    case kPointRole: return static_cast<qulonglong>(r.index);
    case Qt::FontRole:
      if (r.recommended) {
        QFont f;
        f.setBold(true);
        return f;
      }
      return {};
    case Qt::TextAlignmentRole:
      return QVariant::fromValue(index.column() == kBuy || index.column() == kPlan
                                     ? Qt::Alignment(Qt::AlignLeft | Qt::AlignVCenter)
                                     : Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    default: return {};
  }
}

QVariant FrontModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, o, role);
  switch (section) {
    case kPoint: return tr("#");
    case kBuy: return tr("Buy");
    case kDevices: return tr("Devices bought");
    case kCapex: return tr("Capex");
    case kRun: return tr("Run");
    case kTotal: return tr("Total");
    case kTime: return tr("Time to train");
    case kLead: return tr("Lead");
    case kTrainedIn: return tr("Trained in");
    case kUsdPerMTok: return tr("$/M tokens");
    case kPower: return tr("Power (kW)");
    case kDeadline: return tr("Deadline");
    case kStep: return tr("Step");
    case kMfu: return tr("MFU");
    case kPlan: return tr("Plan");
    default: return {};
  }
}

}  // namespace hetsim::gui

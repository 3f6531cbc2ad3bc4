#include "gui/views/parallel_form.hpp"

#include <QAbstractButton>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QVBoxLayout>

#include "gui/app/document.hpp"

namespace hetsim::gui {

namespace {
const TomlTable kParallel{"parallel", false, 0};
const QString kGroups = QStringLiteral("parallel.replicas");
}  // namespace

ParallelForm::ParallelForm(Document* doc, QWidget* parent) : TomlForm(doc, {"parallel"}, parent) { rebuild(); }

QString ParallelForm::note_text() const { return note_ ? note_->text() : QString(); }

QString ParallelForm::stages_text(int i) const {
  return i >= 0 && i < static_cast<int>(stages_.size()) ? stages_[static_cast<std::size_t>(i)]->text() : QString();
}

bool ParallelForm::shown() const {
  return !doc_->text().trimmed().isEmpty() && !has_toml_table(doc_->text(), {"purchase", false, 0});
}

QString ParallelForm::layout_key() const {
  if (!has_toml_table(doc_->text(), kParallel)) return "none";
  const int groups = toml_array_count(doc_->text(), kGroups);
  return groups > 0 ? QString("replicas %1").arg(groups) : QString("uniform");
}

void ParallelForm::lay_out() {
  auto* v = static_cast<QVBoxLayout*>(body_->layout());
  stages_.clear();
  const QString key = layout_key().section(' ', 0, 0);
  const int groups = toml_array_count(doc_->text(), kGroups);
  auto* box = new QGroupBox(tr("Plan ([parallel])"), body_);
  auto* f = new QFormLayout(box);
  note_ = new QLabel(box);
  note_->setWordWrap(true);
  if (key == "none")
    note_->setText(tr("No [parallel]: Run searches the best plan (hetsim plan). A value typed here fixes the plan."));
  else if (key == "replicas")
    note_->setText(tr("Replica groups ([[parallel.replicas]]), below: their stages are edited in the text."));
  else
    note_->setText(tr("A fixed plan: every replica is pp stages of tp devices of one pool (hetsim simulate)."));
  f->addRow(note_);
  if (key != "replicas") {
    add_line(f, tr("TP"), kParallel, "tp", "1", tr("tensor-parallel degree; divides the heads and the node"));
    add_line(f, tr("PP"), kParallel, "pp", "1", tr("pipeline stages; divides the layers"));
    add_line(f, tr("DP"), kParallel, "dp", tr("derived"),
             tr("replicas; a check: tp·cp·pp·dp must be every device of the cluster"));
  }
  add_line(f, tr("CP"), kParallel, "cp", "1",
           tr("context parallelism: each sequence split over this many ranks, which exchange keys and values "
              "inside attention; a replica group's count is data-parallel replicas of cp blocks each"));
  add_choice(f, tr("CP exchange"), kParallel, "cp_comm", {"p2p", "all_gather", "a2a"},
             tr("how the cp ranks exchange keys and values; empty: p2p (a ring beside the attention kernels)"), "p2p");
  add_line(f, tr("Micro-batch"), kParallel, "micro_batch", "1", tr("sequences per micro-batch"));
  add_line(f, tr("EP"), kParallel, "ep", "1",
           tr("expert parallelism (MoE models): each MoE layer's experts over this many data-parallel replicas; "
              "divides the experts and every group's replicas (or, folded, ep × expert tp divides tp × replicas)"));
  add_line(f, tr("Expert TP"), kParallel, "expert_tp", {},
           tr("the routed experts' tensor parallelism (MoE models); empty: tp; below tp folds the other TP ranks "
              "into expert parallelism"));
  add_choice(f, tr("Schedule"), kParallel, "schedule", {"gpipe", "1f1b", "interleaved"}, tr("empty: 1f1b"), "1f1b");
  add_line(f, tr("Virtual stages"), kParallel, "virtual_stages", {},
           tr("model chunks per stage with \"interleaved\" (2 when empty), else 1"));
  add_line(f, tr("Pipeline runs"), kParallel, "pipeline_runs", "1",
           tr("the step's micro-batches as this many pipeline schedules one after another, each filling and "
              "draining (gradient accumulation around a PyTorch pipeline schedule: torchtitan, NeMo Automodel); "
              "divides every group's micro-batches"));
  add_choice(f, tr("Recompute"), kParallel, "recompute", {"none", "selective", "full", "selective_op"},
             tr("activation recomputation; empty: none. With selective, recompute_modules (edited in the text) chooses "
                "what it re-runs, Megatron-Core's modules; empty: the attention core"),
             "none");
  add_choice(f, tr("ZeRO"), kParallel, "zero", {"0", "1", "2", "3"},
             tr("0: none; 1: optimizer state sharded (Megatron's distributed optimizer); 2: and gradients; 3: and "
                "weights; empty: 1"),
             "1", false);
  add_choice(f, tr("Sequence parallel"), kParallel, "sequence_parallel", {"true", "false"},
             tr("for stages with tp > 1; empty: true"), "true", false);
  if (key != "none")
    f->addRow(add_button(box, "parallel.remove", tr("Remove [parallel] (search the plan)"),
                         [](const QString& text) { return remove_toml_table(text, kParallel); },
                         tr("remove [parallel]")));
  v->addWidget(box);
  for (int k = 0; k < groups; ++k) {
    auto* group = new QGroupBox(tr("Replica group %1").arg(k + 1), body_);
    auto* g = new QFormLayout(group);
    const TomlTable t{kGroups, true, k};
    add_line(g, tr("Replicas"), t, "count", "1", tr("identical data-parallel replicas in the group"));
    add_line(g, tr("Micro-batches"), t, "micro_batches", tr("shared evenly"),
             tr("per replica per step; empty: what the groups without it share evenly"));
    auto* stages = new QLabel(group);
    stages->setWordWrap(true);
    stages->setTextInteractionFlags(Qt::TextSelectableByMouse);
    stages->setToolTip(tr("the group's stages (pool, tp, layers) as read; edit `stages` in the text"));
    g->addRow(tr("Stages"), stages);
    stages_.push_back(stages);
    g->addRow(add_button(group, QString("%1.%2.copy").arg(kGroups).arg(k), tr("Copy this group"),
                         [k](const QString& text) { return copy_toml_array_table(text, kGroups, k); },
                         tr("copy replica group %1").arg(k + 1)));
    g->addRow(add_button(group, QString("%1.%2.remove").arg(kGroups).arg(k), tr("Remove this group"),
                         [k](const QString& text) { return remove_toml_table(text, {kGroups, true, k}); },
                         tr("remove replica group %1").arg(k + 1)));
    v->addWidget(group);
  }
}

void ParallelForm::refreshed() {
  // Each group's stages as the reader made them (the plan's groups are the tables, in order).
  const auto& s = doc_->scenario();
  const bool read = s && s->plan && s->plan->groups.size() == stages_.size();
  for (std::size_t k = 0; k < stages_.size(); ++k) {
    QStringList parts;
    if (read)
      for (const plan::Stage& st : s->plan->groups[k].stages)
        parts << QString("%1 tp%2 L%3")
                     .arg(QString::fromStdString(s->cluster.pools[static_cast<std::size_t>(st.pool)].name))
                     .arg(st.tp)
                     .arg(st.layers);
    stages_[k]->setText(read ? parts.join(" | ") : tr("(as read: the file has errors)"));
  }
}

}  // namespace hetsim::gui

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
}  // namespace

ParallelForm::ParallelForm(Document* doc, QWidget* parent) : TomlForm(doc, {"parallel"}, parent) { rebuild(); }

QString ParallelForm::note_text() const { return note_ ? note_->text() : QString(); }

bool ParallelForm::shown() const {
  return !doc_->text().trimmed().isEmpty() && !has_toml_table(doc_->text(), {"purchase", false, 0});
}

QString ParallelForm::layout_key() const {
  if (!has_toml_table(doc_->text(), kParallel)) return "none";
  return has_toml_table(doc_->text(), {"parallel.replicas", true, 0}) ? "replicas" : "uniform";
}

void ParallelForm::lay_out() {
  auto* v = static_cast<QVBoxLayout*>(body_->layout());
  const QString key = layout_key();
  auto* box = new QGroupBox(tr("Plan ([parallel])"), body_);
  auto* f = new QFormLayout(box);
  note_ = new QLabel(box);
  note_->setWordWrap(true);
  if (key == "none")
    note_->setText(tr("No [parallel]: Run searches the best plan (hetsim plan). A value typed here fixes the plan."));
  else if (key == "replicas")
    note_->setText(tr("Replica groups ([[parallel.replicas]]): their counts, micro-batches and stages are edited "
                      "in the text."));
  else
    note_->setText(tr("A fixed plan: every replica is pp stages of tp devices of one pool (hetsim simulate)."));
  f->addRow(note_);
  if (key != "replicas") {
    add_line(f, tr("TP"), kParallel, "tp", "1", tr("tensor-parallel degree; divides the heads and the node"));
    add_line(f, tr("PP"), kParallel, "pp", "1", tr("pipeline stages; divides the layers"));
    add_line(f, tr("DP"), kParallel, "dp", tr("derived"),
             tr("replicas; a check: tp·pp·dp must be every device of the cluster"));
  }
  add_line(f, tr("Micro-batch"), kParallel, "micro_batch", "1", tr("sequences per micro-batch"));
  add_choice(f, tr("Schedule"), kParallel, "schedule", {"gpipe", "1f1b", "interleaved"}, tr("empty: 1f1b"), "1f1b");
  add_line(f, tr("Virtual stages"), kParallel, "virtual_stages", {},
           tr("model chunks per stage with \"interleaved\" (2 when empty), else 1"));
  add_choice(f, tr("Recompute"), kParallel, "recompute", {"none", "selective", "full", "selective_op"},
             tr("activation recomputation; empty: none"), "none");
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
}

}  // namespace hetsim::gui

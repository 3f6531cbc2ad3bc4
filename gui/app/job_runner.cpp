#include "gui/app/job_runner.hpp"

#include <QCoreApplication>
#include <QThread>

#include <algorithm>

namespace hetsim::gui {

JobRunner::JobRunner(QObject* parent) : QObject(parent) {}

JobRunner::~JobRunner() {
  for (Job& j : jobs_) {
    j.stop.request_stop();
    QObject::disconnect(j.thread, nullptr, this, nullptr);
  }
  for (Job& j : jobs_) {
    j.thread->wait();
    delete j.thread;
  }
  // Results the threads posted to this object are discarded with it.
}

quint64 JobRunner::launch(const QString& what, Work work) {
  if (current_ != 0) {
    for (Job& j : jobs_)
      if (j.id == current_) j.stop.request_stop();
  }
  const quint64 id = ++next_id_;
  Job job;
  job.id = id;
  JobContext ctx;
  ctx.stop = job.stop.get_token();
  ctx.progress = [this, id](double f) {
    QMetaObject::invokeMethod(
        this,
        [this, id, f] {
          if (id == current_) emit progressed(id, f);
        },
        Qt::QueuedConnection);
  };
  ctx.partial = [this, id](std::function<void()> deliver) {
    QMetaObject::invokeMethod(
        this,
        [this, id, deliver = std::move(deliver)] {
          if (id == current_) deliver();
        },
        Qt::QueuedConnection);
  };
  job.thread = QThread::create([this, id, ctx = std::move(ctx), work = std::move(work)] {
    std::function<void()> deliver = work(ctx);
    QMetaObject::invokeMethod(
        this, [this, id, deliver = std::move(deliver)] { arrive(id, deliver); }, Qt::QueuedConnection);
  });
  job.thread->setObjectName(QStringLiteral("hetsim job %1").arg(id));
  connect(job.thread, &QThread::finished, this, [this, id] { reap(id); }, Qt::QueuedConnection);
  jobs_.push_back(job);
  current_ = id;
  emit started(id, what);
  job.thread->start();
  return id;
}

void JobRunner::arrive(quint64 id, const std::function<void()>& deliver) {
  if (id != current_) {
    emit dropped(id);
    return;
  }
  current_ = 0;
  deliver();
  emit finished(id);
}

void JobRunner::reap(quint64 id) {
  const auto it = std::find_if(jobs_.begin(), jobs_.end(), [id](const Job& j) { return j.id == id; });
  if (it == jobs_.end()) return;
  it->thread->wait();
  delete it->thread;
  jobs_.erase(it);
}

void JobRunner::cancel() {
  if (current_ == 0) return;
  const quint64 id = current_;
  for (Job& j : jobs_)
    if (j.id == id) j.stop.request_stop();
  current_ = 0;
  emit cancelled(id);
}

void JobRunner::wait_all() {
  while (!jobs_.empty()) {
    std::vector<quint64> ended;
    for (Job& j : jobs_) {
      j.thread->wait();
      ended.push_back(j.id);
    }
    // The results, then the threads' finished signals (posted after them); a delivered result
    // may start another job, which the next round waits for.
    QCoreApplication::sendPostedEvents(this);
    for (quint64 id : ended) reap(id);
  }
}

}  // namespace hetsim::gui

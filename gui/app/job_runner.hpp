#pragma once
// Background jobs (plan, buy, simulate) with the job-id pattern: each request gets a new id and
// becomes the current job; an older job still running is asked to stop and whatever it sends
// later (progress, result) is dropped, so a stale answer never reaches a view. Work runs on its
// own QThread over copies of its inputs; results come back as values through queued calls.
// Thread-safety: use a JobRunner from the thread that owns it; the work runs elsewhere.

#include <QObject>
#include <QString>

#include <functional>
#include <memory>
#include <stop_token>
#include <utility>
#include <vector>

class QThread;

namespace hetsim::gui {

/// What a job's work is given: a stop token to pass on (buy::Options::stop, planner::Options::
/// stop), a progress sink (fraction 0..1) and a way to hand over partial results (`partial(f)`
/// runs f on the runner's thread while the job is current; dropped otherwise). Both may be called
/// from any thread.
struct JobContext {
  std::stop_token stop;
  std::function<void(double)> progress;
  std::function<void(std::function<void()>)> partial;
};

class JobRunner : public QObject {
  Q_OBJECT
 public:
  explicit JobRunner(QObject* parent = nullptr);
  /// Asks every job to stop and waits for its thread: no work outlives the runner.
  ~JobRunner() override;

  /// Runs `work` on a new thread as the current job, superseding the one before (asked to stop,
  /// its result dropped). `done` runs on this object's thread with the result, only while the
  /// job is still current when the result arrives. Returns the new job's id (> 0).
  template <class T>
  quint64 start(const QString& what, std::function<T(const JobContext&)> work, std::function<void(T)> done) {
    return launch(what, [work = std::move(work), done = std::move(done)](const JobContext& ctx) {
      auto result = std::make_shared<T>(work(ctx));
      return std::function<void()>([done, result] { done(std::move(*result)); });
    });
  }

  /// Asks the current job to stop and forgets it: its result will be dropped. No-op when idle.
  void cancel();
  /// The current job's id; 0 when there is none.
  [[nodiscard]] quint64 current() const { return current_; }
  [[nodiscard]] bool busy() const { return current_ != 0; }
  /// Threads still running: the current job's and those of superseded or cancelled jobs.
  [[nodiscard]] int running() const { return static_cast<int>(jobs_.size()); }
  /// Blocks until every job's thread has ended, then delivers what they sent (tests; closing).
  void wait_all();

 signals:
  void started(quint64 id, const QString& what);
  /// Progress of the current job (never of a superseded one).
  void progressed(quint64 id, double fraction);
  /// The current job delivered its result (after `done` ran).
  void finished(quint64 id);
  /// The current job was cancelled (cancel(), not superseded).
  void cancelled(quint64 id);
  /// A result arrived from a job that is no longer current, and was dropped.
  void dropped(quint64 id);

 private:
  using Work = std::function<std::function<void()>(const JobContext&)>;
  quint64 launch(const QString& what, Work work);
  void arrive(quint64 id, const std::function<void()>& deliver);
  void reap(quint64 id);

  struct Job {
    quint64 id = 0;
    QThread* thread = nullptr;
    std::stop_source stop;
  };
  std::vector<Job> jobs_;
  quint64 next_id_ = 0;
  quint64 current_ = 0;
};

}  // namespace hetsim::gui

#include "sim/sweep/detail/ordered_run.hpp"

#include <algorithm>
#include <utility>

namespace hetsim::sweep::detail {

OrderedRun::OrderedRun(const io::SweepDocument& doc, const RunOptions& opts, std::size_t window)
    : doc_(doc), opts_(opts), n_(doc.spec().points), window_(window), next_(opts.first), written_(opts.first) {
  for (const auto& [i, f] : opts.finished)
    if (i >= opts.first && i < n_) done_.emplace(i, f);  // not fresh: the caller keeps them already
  skip_finished();
}

OrderedRun::~OrderedRun() {
  cv_.notify_all();
  threads_.clear();
}

void OrderedRun::skip_finished() {
  while (next_ < n_ && opts_.finished.count(next_) > 0) ++next_;
}

void OrderedRun::start() {
  for (int t = 0; t < std::max(opts_.jobs, 1); ++t) threads_.emplace_back([this] { work(); });
}

void OrderedRun::work() {
  std::unique_lock lock(mu_);
  while (true) {
    // Timed waits: a stop request wakes nobody. The oldest batch out on another rank holds the
    // next row to deliver for up to two batches' time (the rank runs the batch before it first),
    // in which these threads, as fast as that rank, run about as many points as are out: they
    // may run ahead by the window plus three times the points out, or they would idle.
    while (!(next_ >= n_ || stopped() || next_ < written_ + window_ + 3 * remote_))
      cv_.wait_for(lock, std::chrono::milliseconds(50));
    if (next_ >= n_ || stopped()) break;
    const std::size_t i = next_++;
    skip_finished();
    ++running_;
    lock.unlock();
    Finished f = finish(opts_.encoding, opts_.runner ? opts_.runner(i) : run_point(doc_, i));
    lock.lock();
    --running_;
    done_.emplace(i, std::move(f));
    fresh_.push_back(i);
    ++changes_;
    cv_.notify_all();
  }
  ++changes_;
  cv_.notify_all();
}

std::vector<std::size_t> OrderedRun::claim(std::size_t count) {
  std::vector<std::size_t> points;
  std::lock_guard lock(mu_);
  while (points.size() < count && next_ < n_ && !stopped()) {
    points.push_back(next_++);
    skip_finished();
  }
  remote_ += points.size();
  return points;
}

void OrderedRun::take(std::vector<Finished> rows, std::size_t points) {
  {
    std::lock_guard lock(mu_);
    for (Finished& f : rows)
      if (f.point >= written_ && f.point < n_) {
        const std::size_t i = f.point;
        if (done_.emplace(i, std::move(f)).second) fresh_.push_back(i);
      }
    remote_ -= std::min(remote_, points);
    ++changes_;
  }
  cv_.notify_all();  // the window moved
}

std::size_t OrderedRun::left() const {
  std::lock_guard lock(mu_);
  return next_ < n_ ? n_ - next_ : 0;
}

bool OrderedRun::deliver() {
  std::unique_lock lock(mu_);
  seen_ = changes_;
  const std::size_t before = delivered_;
  // Rows whose turn has come: taken out under the lock, handed over outside it.
  for (auto node = done_.extract(written_); !node.empty(); node = done_.extract(written_)) {
    ++written_;
    cv_.notify_all();
    lock.unlock();
    if (opts_.on_row) opts_.on_row(node.mapped());
    ++delivered_;
    lock.lock();
  }
  // Rows that came in and wait for an earlier one. Only this thread erases from done_, so the
  // pointers stay good while other threads add rows.
  std::vector<const Finished*> waiting;
  for (std::size_t i : fresh_)
    if (i >= written_)
      if (auto it = done_.find(i); it != done_.end()) waiting.push_back(&it->second);
  fresh_.clear();
  const bool burst = delivered_ > before || (opts_.on_waiting && !waiting.empty());
  if (opts_.on_waiting && !waiting.empty()) {
    lock.unlock();
    for (const Finished* f : waiting) opts_.on_waiting(*f);
    lock.lock();
  }
  if (burst && opts_.on_burst) {
    lock.unlock();
    opts_.on_burst();
    lock.lock();
  }
  return done_.count(written_) > 0 || running_ > 0 || remote_ > 0 || (next_ < n_ && !stopped());
}

void OrderedRun::wait(std::chrono::microseconds d) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, d, [this] { return changes_ != seen_; });
}

}  // namespace hetsim::sweep::detail

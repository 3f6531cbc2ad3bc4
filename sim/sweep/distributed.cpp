#include "sim/sweep/distributed.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

namespace hetsim::sweep {

namespace {

// Rank → rank 0: "give me points" (payload: the sweep's hash); the rows of a batch (payload: for
// each row, "I\n" + JSON + "\n"), which asks for another batch too. Rank 0 → rank: a batch of
// points to run ("I J K…", space separated) or "stop". Rank 0 answers the first request with two
// batches, so a rank always has its next batch before it finishes the one it runs: it never waits
// for a round trip (a sweep's points can take 0.1 ms each, rank 0 looks at its messages every
// 0.2 ms). A batch holds the points for about kBatchSeconds of work, from the time the rank's
// previous batch took, at most a quarter of each rank's share of what is left.
constexpr int kRequest = 1, kRow = 2, kPoint = 3;
const std::string kStop = "stop";
constexpr double kBatchSeconds = 0.02;
constexpr std::size_t kMaxBatch = 4096;

int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : 0;
}

}  // namespace

bool under_mpirun() {
  return env_int("OMPI_COMM_WORLD_SIZE") > 1 || env_int("PMI_SIZE") > 1 || env_int("PMIX_SIZE") > 1;
}

Result<const MpiModule*> load_mpi_module() {
  static std::once_flag once;
  static std::optional<Result<const MpiModule*>> loaded;
  std::call_once(once, [] {
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    const auto path = (ec ? std::filesystem::path(".") : exe.parent_path()) / kMpiModuleFile;
    auto fail = [&](const std::string& what) {
      loaded.emplace(Diagnostics{about(path.string(), "", "cannot load the MPI module for a sweep under mpirun: " + what,
                                       "it is built next to hetsim with -DHETSIM_WITH_MPI=ON (libopenmpi-dev); or run "
                                       "the sweep without mpirun (--jobs N)",
                                       ErrorKind::Environment)});
    };
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);  // MPI's plugins look up its symbols globally
    if (h == nullptr) {
      const char* e = dlerror();
      fail(e != nullptr ? e : "dlopen failed");
      return;
    }
    using Entry = const MpiModule* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(h, "hetsim_mpi_module"));
    const MpiModule* m = entry != nullptr ? entry() : nullptr;
    if (m == nullptr || m->abi != kMpiModuleAbi || m->init == nullptr) {
      fail("the module is from another build (entry point or ABI differs)");
      return;
    }
    loaded.emplace(m);
  });
  return *loaded;
}

std::size_t run_coordinator(const io::SweepDocument& doc, const RunOptions& opts, const MpiModule& mpi, int size) {
  const std::size_t n = doc.spec().points;
  const std::string hash = io::sweep_hash_hex(doc.spec().hash);
  const std::size_t window = static_cast<std::size_t>(std::max(opts.jobs, 1) + size) * 16;
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::size_t, Row> done;
  std::set<std::size_t> kept;  // rows handed to on_waiting (or finished before)
  for (const auto& [i, r] : opts.finished)
    if (i >= opts.first && i < n) {
      done.emplace(i, r);
      kept.insert(i);
    }
  // remote: points handed to other ranks whose rows have not come back (rank 0's own threads may
  // run that much further ahead of the rows written).
  std::size_t next = opts.first, written = opts.first, running = 0, remote_points = 0;
  auto claim = [&]() -> std::optional<std::size_t> {  // under mu
    while (next < n && opts.finished.count(next) > 0) ++next;  // done by an earlier run
    if (next >= n || opts.stop.stop_requested()) return std::nullopt;
    return next++;
  };
  auto work = [&] {
    std::unique_lock lock(mu);
    while (true) {
      while (!(next >= n || opts.stop.stop_requested() || next < written + window + remote_points))
        cv.wait_for(lock, std::chrono::milliseconds(50));
      const auto i = claim();
      if (!i) break;
      ++running;
      lock.unlock();
      Row row = opts.runner ? opts.runner(*i) : run_point(doc, *i);
      lock.lock();
      --running;
      done.emplace(*i, std::move(row));
      cv.notify_all();
    }
    cv.notify_all();
  };
  std::vector<std::jthread> threads;
  for (int t = 0; t < std::max(opts.jobs, 1); ++t) threads.emplace_back(work);

  int remote = size - 1;  // ranks not yet told to stop
  std::size_t delivered = 0;
  // Per rank: its next batch size and when each batch in flight was sent (at most two).
  struct Remote {
    std::size_t batch = 1;
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::size_t>> sent;
  };
  std::map<int, Remote> ranks;
  // Sends rank `to` its next batch, or "stop" (once nothing is left and nothing is in flight).
  auto hand_out = [&](int to) {
    Remote& r = ranks[to];
    std::string points;
    std::size_t count = 0;
    {
      std::lock_guard lock(mu);
      const std::size_t left = next < n ? n - next : 0;
      const std::size_t fair = std::max<std::size_t>(1, left / (4 * static_cast<std::size_t>(size)));
      const std::size_t want = std::min(r.batch, fair);
      while (count < want) {
        const auto i = claim();
        if (!i) break;
        points += (count > 0 ? " " : "") + std::to_string(*i);
        ++count;
      }
      remote_points += count;
    }
    if (count > 0) {
      mpi.send(to, kPoint, points);
      r.sent.emplace_back(std::chrono::steady_clock::now(), count);
    } else if (r.sent.empty()) {
      mpi.send(to, kPoint, kStop);
      --remote;
    }
  };
  while (true) {
    std::unique_lock lock(mu);
    for (auto it = done.find(written); it != done.end(); it = done.find(written)) {
      Row row = std::move(it->second);
      done.erase(it);
      ++written;
      cv.notify_all();
      lock.unlock();
      if (opts.on_row) opts.on_row(row);
      ++delivered;
      lock.lock();
    }
    if (opts.on_waiting) {  // rows that wait for an earlier point's: kept by the caller meanwhile
      std::vector<Row> waiting;
      for (auto it = done.upper_bound(written); it != done.end(); ++it)
        if (kept.insert(it->first).second) waiting.push_back(it->second);
      lock.unlock();
      for (const auto& r : waiting) opts.on_waiting(r);
      lock.lock();
    }
    const bool local_idle = (next >= n || opts.stop.stop_requested()) && running == 0;
    if (remote == 0 && local_idle && done.count(written) == 0) break;
    lock.unlock();
    bool any = false;
    while (remote > 0 && mpi.probe()) {
      any = true;
      int from = 0, tag = 0;
      std::string data;
      mpi.recv(-1, &from, &tag, &data);
      if (tag == kRequest && data != hash) {  // that rank read another sweep
        mpi.send(from, kPoint, kStop);
        --remote;
        continue;
      }
      if (tag == kRequest) {  // a new rank: two batches, so that it never waits for the next
        hand_out(from);
        if (!ranks[from].sent.empty()) hand_out(from);
        continue;
      }
      if (tag == kRow) {
        std::vector<Row> rows;
        for (std::size_t at = 0; at < data.size();) {
          const auto nl = data.find('\n', at);
          const auto end = nl == std::string::npos ? std::string::npos : data.find('\n', nl + 1);
          const std::size_t i = std::strtoull(data.c_str() + at, nullptr, 10);
          Row row;
          if (auto j = nl == std::string::npos ? nlohmann::json() : nlohmann::json::parse(data.substr(nl + 1, end - nl - 1), nullptr, false);
              i < n && j.is_object()) {
            row = row_from_json(j);
          } else {
            row.kind = ErrorKind::Internal;
            row.error = "error: rank " + std::to_string(from) + " sent a row that does not parse";
          }
          row.point = i;
          row.values = i < n ? doc.values(i) : decltype(row.values){};
          rows.push_back(std::move(row));
          if (end == std::string::npos) break;
          at = end + 1;
        }
        lock.lock();
        for (Row& row : rows)
          if (row.point < n) done.emplace(row.point, std::move(row));
        lock.unlock();
        // The batch took `took` (in flight with the one before it): the next one holds the
        // points for kBatchSeconds at that pace.
        Remote& r = ranks[from];
        if (!r.sent.empty()) {
          const auto [at, count] = r.sent.front();
          r.sent.pop_front();
          {
            std::lock_guard points_lock(mu);
            remote_points -= std::min(remote_points, count);
          }
          cv.notify_all();
          const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - at).count();
          const double per = took / static_cast<double>(std::max<std::size_t>(count, 1)) / (r.sent.empty() ? 1.0 : 2.0);
          r.batch = std::clamp<std::size_t>(static_cast<std::size_t>(kBatchSeconds / std::max(per, 1e-7)), 1, kMaxBatch);
        }
        hand_out(from);
      }
    }
    if (!any) {
      lock.lock();
      cv.wait_for(lock, std::chrono::microseconds(200));
    }
  }
  threads.clear();
  return delivered;
}

void release_workers(const MpiModule& mpi, int size) {
  for (int k = 1; k < size; ++k) {
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(-1, &from, &tag, &data);
    mpi.send(from, kPoint, kStop);
  }
}

void run_worker(const io::SweepDocument& doc, const MpiModule& mpi, const std::function<Row(std::size_t)>& runner) {
  const Layout layout{&doc.spec(), {}};
  mpi.send(0, kRequest, io::sweep_hash_hex(doc.spec().hash));
  while (true) {
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(0, &from, &tag, &data);
    if (data == kStop) break;
    std::string rows;
    for (const char* p = data.c_str(); *p != '\0';) {
      char* end = nullptr;
      const std::size_t i = std::strtoull(p, &end, 10);
      if (end == p) break;
      const Row row = runner ? runner(i) : run_point(doc, i);
      rows += std::to_string(i) + "\n" + row_json(layout, row).dump() + "\n";
      p = end;
    }
    mpi.send(0, kRow, rows);
  }
}

}  // namespace hetsim::sweep

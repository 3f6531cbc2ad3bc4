#include "sim/sweep/distributed.hpp"

#include "sim/sweep/detail/ordered_run.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <vector>

namespace hetsim::sweep {

namespace {

// Rank → rank 0: "give me points" (kRequest; payload: the sweep's hash); the rows of a batch
// (kRow; pack_row), which asks for another batch too. Rank 0 → rank: how to encode rows (kEncoding,
// once, before the first batch), a batch of points to run (kPoint: runs of points "I-J" or "I",
// space separated; points_text) or "stop". The ranks encode their rows as rank 0's Encoding asks (the results file's line, the
// pending file's JSON), so that rank 0 writes their bytes without reading them: a row parsed
// and formatted again there cost as much as an estimate point, and estimate sweeps did not
// scale. Rank 0 answers the first request with two batches, so a rank always has its next batch
// before it finishes the one it runs, and sends a batch's rows without waiting for rank 0 to take
// them: it never waits for a round trip (a sweep's points can take 0.1 ms each, rank 0 looks at
// its messages every kPoll). A batch holds the points for about
// kBatchSeconds of work, from the time the rank's previous batch took, at most a quarter of each
// rank's share of what is left.
constexpr int kRequest = 1, kRow = 2, kPoint = 3, kEncoding = 4;
const std::string kStop = "stop";
constexpr double kBatchSeconds = 0.02;
constexpr auto kPoll = std::chrono::milliseconds(1);
constexpr std::size_t kMaxBatch = 4096;

// A batch's points as runs of consecutive points ("3-9 12"): a few bytes, so that MPI sends it at
// once (a message past the eager limit, a list of thousands of points, would hold rank 0 in
// MPI_Send, spinning, until the rank had finished the batch it runs).
std::string points_text(const std::vector<std::size_t>& points) {
  std::string text;
  for (std::size_t k = 0; k < points.size();) {
    std::size_t j = k;
    while (j + 1 < points.size() && points[j + 1] == points[j] + 1) ++j;
    if (!text.empty()) text += ' ';
    text += std::to_string(points[k]);
    if (j > k) text += '-' + std::to_string(points[j]);
    k = j + 1;
  }
  return text;
}

// The encoding a rank is asked for: rank 0's, with the row itself sent as its JSON (rank 0 reads
// it back only when it needs the Row: --json, --plot).
std::string encoding_text(const Encoding& e) {
  nlohmann::json j;
  j["format"] = e.format == Format::Jsonl ? "jsonl" : "csv";
  j["line"] = e.line;
  j["json"] = e.json || e.row;
  j["pools"] = e.layout.pools;
  j["variability"] = e.layout.variability;
  return j.dump();
}

std::optional<Encoding> encoding_from_text(const io::SweepSpec& spec, const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  Encoding e;
  e.layout.spec = &spec;
  e.format = j.value("format", "csv") == "jsonl" ? Format::Jsonl : Format::Csv;
  e.line = j.value("line", true);
  e.json = j.value("json", false);
  e.layout.variability = j.value("variability", false);
  if (const auto p = j.find("pools"); p != j.end() && p->is_array())
    for (const auto& x : *p)
      if (x.is_string()) e.layout.pools.push_back(x.get<std::string>());
  return e;
}

// One row on the wire: "POINT OK KIND LINE_BYTES JSON_BYTES\n", then the line and the JSON.
void pack_row(std::string& out, const Finished& f) {
  out += fmt::format("{} {} {} {} {}\n", f.point, f.ok ? 1 : 0, static_cast<int>(f.kind), f.line.size(), f.json.size());
  out += f.line;
  out += f.json;
}

// The rows of a batch of `points` as rank 0 delivers them; the rows that do not unpack (none
// unless the ranks run different builds) are internal errors.
std::vector<Finished> unpack_rows(const io::SweepDocument& doc, const Encoding& e, const std::string& data, int from,
                                  const std::vector<std::size_t>& points) {
  std::vector<Finished> rows;
  const std::size_t n = doc.spec().points;
  for (std::size_t at = 0; at < data.size();) {
    std::size_t field[5] = {};
    const char* p = data.c_str() + at;
    bool good = true;
    for (std::size_t& v : field) {
      char* end = nullptr;
      v = std::strtoull(p, &end, 10);
      good = good && end != p;
      p = end;
    }
    const std::size_t body = static_cast<std::size_t>(p - data.c_str()) + 1;  // past the newline
    good = good && *p == '\n' && body + field[3] + field[4] <= data.size() && field[0] < n && field[2] <= 3;
    if (!good) break;
    Finished f;
    f.point = field[0];
    f.ok = field[1] != 0;
    f.kind = static_cast<ErrorKind>(field[2]);
    f.line = data.substr(body, field[3]);
    f.json = data.substr(body + field[3], field[4]);
    at = body + field[3] + field[4];
    if (e.row) {
      auto j = nlohmann::json::parse(f.json, nullptr, false);
      Row r = j.is_object() ? row_from_json(j) : Row{};
      if (!j.is_object()) {
        r.kind = ErrorKind::Internal;
        r.error = "error: rank " + std::to_string(from) + " sent a row that does not parse";
      }
      r.point = f.point;
      r.values = doc.values(f.point);
      f.row = std::move(r);
    }
    if (!e.json) f.json.clear();
    rows.push_back(std::move(f));
  }
  if (rows.size() == points.size()) return rows;
  std::set<std::size_t> have;
  for (const Finished& f : rows) have.insert(f.point);
  for (std::size_t i : points)
    if (have.count(i) == 0) {
      Row r;
      r.point = i;
      r.values = doc.values(i);
      r.kind = ErrorKind::Internal;
      r.error = "error: rank " + std::to_string(from) + " sent a row that does not unpack";
      rows.push_back(finish(e, std::move(r)));
    }
  return rows;
}

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
    if (m == nullptr || m->abi != kMpiModuleAbi || m->init == nullptr || m->start_send == nullptr) {
      fail("the module is from another build (entry point or ABI differs)");
      return;
    }
    loaded.emplace(m);
  });
  return *loaded;
}

std::size_t run_coordinator(const io::SweepDocument& doc, const RunOptions& opts, const MpiModule& mpi, int size) {
  const std::string hash = io::sweep_hash_hex(doc.spec().hash);
  const std::string encoding = encoding_text(opts.encoding);
  // Rank 0's own threads may run ahead of the rows written by the window plus the points out on
  // other ranks.
  detail::OrderedRun run(doc, opts, static_cast<std::size_t>(std::max(opts.jobs, 1) + size) * 16);
  run.start();

  int remote = size - 1;  // ranks not yet told to stop
  // Per rank: its next batch size and when each batch in flight was sent (at most two).
  struct Remote {
    std::size_t batch = 1;
    std::deque<std::pair<std::chrono::steady_clock::time_point, std::vector<std::size_t>>> sent;
  };
  std::map<int, Remote> ranks;
  // Sends rank `to` its next batch, or "stop" (once nothing is left and nothing is in flight).
  auto hand_out = [&](int to) {
    Remote& r = ranks[to];
    const std::size_t fair = std::max<std::size_t>(1, run.left() / (4 * static_cast<std::size_t>(size)));
    std::vector<std::size_t> points = run.claim(std::min(r.batch, fair));
    if (!points.empty()) {
      mpi.send(to, kPoint, points_text(points));
      r.sent.emplace_back(std::chrono::steady_clock::now(), std::move(points));
    } else if (r.sent.empty()) {
      mpi.send(to, kPoint, kStop);
      --remote;
    }
  };
  while (run.deliver() || remote > 0) {
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
      if (tag == kRequest) {  // a new rank: how to encode rows, then two batches so that it never waits
        mpi.send(from, kEncoding, encoding);
        hand_out(from);
        if (!ranks[from].sent.empty()) hand_out(from);
        continue;
      }
      if (tag != kRow) continue;
      Remote& r = ranks[from];
      if (r.sent.empty()) continue;  // not asked for
      const auto [at, points] = std::move(r.sent.front());
      r.sent.pop_front();
      const std::size_t count = points.size();
      run.take(unpack_rows(doc, opts.encoding, data, from, points), count);
      // The batch took `took` (in flight with the one before it): the next one holds the points
      // for kBatchSeconds at that pace.
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - at).count();
      const double per = took / static_cast<double>(count) / (r.sent.empty() ? 1.0 : 2.0);
      r.batch = std::clamp<std::size_t>(static_cast<std::size_t>(kBatchSeconds / std::max(per, 1e-7)), 1, kMaxBatch);
      hand_out(from);
    }
    // Nothing came: look again in kPoll. Not woken by this process's own rows (they wait in
    // order meanwhile): every wake-up costs the core the points run on.
    if (!any) std::this_thread::sleep_for(kPoll);
  }
  return run.delivered();
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
  mpi.send(0, kRequest, io::sweep_hash_hex(doc.spec().hash));
  std::optional<Encoding> encoding;
  // The rows of the last batch, on their way while the next batch runs: rank 0 takes them when
  // it next looks at its messages, and this rank does not wait for that.
  std::string sending;
  void* in_flight = nullptr;
  while (true) {
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(0, &from, &tag, &data);
    if (tag == kEncoding) {
      encoding = encoding_from_text(doc.spec(), data);
      continue;
    }
    if (data == kStop) break;
    std::string rows;  // without an encoding (rank 0 is another build) none: rank 0 marks them failed
    for (const char* p = data.c_str(); encoding && *p != '\0';) {
      char* end = nullptr;
      const std::size_t first = std::strtoull(p, &end, 10);
      if (end == p) break;
      std::size_t last = first;
      if (*end == '-') {
        p = end + 1;
        last = std::strtoull(p, &end, 10);
        if (end == p) break;
      }
      for (std::size_t i = first; i <= last; ++i)
        pack_row(rows, finish(*encoding, runner ? runner(i) : run_point(doc, i)));
      p = end;
    }
    if (in_flight != nullptr) mpi.finish_send(in_flight);
    sending = std::move(rows);
    in_flight = mpi.start_send(0, kRow, &sending);
  }
  if (in_flight != nullptr) mpi.finish_send(in_flight);
}

}  // namespace hetsim::sweep

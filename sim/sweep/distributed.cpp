#include "sim/sweep/distributed.hpp"

#include "sim/sweep/detail/ordered_run.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace hetsim::sweep {

namespace {

// Rank → rank 0: "give me points" (kRequest, once; payload: request_text, the sweep's hash and
// what the rank found checking its share of the points, which rank 0 waits for from every rank
// before any point runs); each row as soon as its point has run (kRow; pack_row), kept in the
// rank's journal first when rank 0 names one, so that a rank that dies, or whose rows are on
// their way when the job ends, loses no row it finished; "that batch is done" (kDone, empty),
// which asks for another batch. Rank 0 → rank: how to encode rows and where to keep them
// (kEncoding, once, before the first batch), a batch of points to run (kPoint: runs of points
// "I-J" or "I", space separated; points_text) or "stop". The ranks encode their rows as rank 0's
// Encoding asks (the results file's line, the pending file's JSON), so that rank 0 writes their
// bytes without reading them: a row parsed and formatted again there cost as much as an estimate
// point, and estimate sweeps did not scale. Rank 0 starts each rank with two batches, so
// a rank always has its next batch before it finishes the one it runs, and a rank sends its rows
// without waiting for rank 0 to take them (MPI_Isend): it never waits for a round trip (a sweep's
// points can take 0.1 ms each, rank 0 looks at its messages every kPoll and writes what came in
// before it sleeps again). A batch holds the points for about kBatchSeconds of work, from the time
// the rank's previous batch took, at most a quarter of each rank's share of what is left.
constexpr int kRequest = 1, kRow = 2, kPoint = 3, kEncoding = 4, kDone = 5;
const std::string kStop = "stop";
constexpr double kBatchSeconds = 0.02;
constexpr auto kPoll = std::chrono::milliseconds(1);
constexpr auto kDrainQuiet = std::chrono::milliseconds(50);
constexpr auto kDrainMax = std::chrono::milliseconds(500);
constexpr std::size_t kMaxBatch = 4096;
// Messages rank 0 takes before it writes the rows that came in: rows stay in memory no longer
// than that while many ranks send.
constexpr int kMaxMessages = 256;
// Invalid points whose errors a validation reports (the CLI's default, validate's).
constexpr std::size_t kMaxReported = 20;

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
// it back only when it needs the Row: --json, --plot), and where the rank keeps its rows
// (RunOptions::journal, empty for nowhere).
std::string encoding_text(const Encoding& e, const std::string& journal) {
  nlohmann::json j;
  j["journal"] = journal;
  j["format"] = e.format == Format::Jsonl ? "jsonl" : "csv";
  j["line"] = e.line;
  j["json"] = e.json || e.row;
  j["pools"] = e.layout.pools;
  j["variability"] = e.layout.variability;
  return j.dump();
}

std::optional<Encoding> encoding_from_text(const io::SweepSpec& spec, const std::string& text, std::string& journal) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  if (const auto p = j.find("journal"); p != j.end() && p->is_string()) journal = p->get<std::string>();
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

// A rank's request for points: the sweep's hash (rank 0 sends away a rank that read another
// file) and the validation of its share, each diagnostic with its point.
std::string request_text(const std::string& hash, const Validation& v) {
  nlohmann::json errors = nlohmann::json::array();
  for (std::size_t k = 0; k < v.errors.size() && k < v.error_points.size(); ++k) {
    const Diagnostic& d = v.errors[k];
    errors.push_back({{"point", v.error_points[k]}, {"file", d.where.file}, {"line", d.where.line},
                      {"col", d.where.col}, {"key", d.key}, {"message", d.message}, {"hint", d.hint},
                      {"kind", static_cast<int>(d.kind)}});
  }
  return nlohmann::json{{"hash", hash}, {"invalid", v.invalid}, {"errors", std::move(errors)}}.dump();
}

// The hash and validation of a request; nullopt when it is not one (the rank runs another build).
std::optional<std::pair<std::string, Validation>> request_from_text(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains("hash") || !j["hash"].is_string() || !j.contains("invalid") ||
      !j["invalid"].is_number_unsigned() || !j.contains("errors") || !j["errors"].is_array())
    return std::nullopt;
  Validation v;
  v.invalid = j["invalid"].get<std::size_t>();
  for (const auto& e : j["errors"]) {
    if (!e.is_object() || !e.contains("point") || !e["point"].is_number_unsigned()) return std::nullopt;
    Diagnostic d;
    d.where.file = e.value("file", "");
    d.where.line = e.value("line", 0u);
    d.where.col = e.value("col", 0u);
    d.key = e.value("key", "");
    d.message = e.value("message", "");
    d.hint = e.value("hint", "");
    d.kind = static_cast<ErrorKind>(std::clamp(e.value("kind", 0), 0, static_cast<int>(ErrorKind::Internal)));
    v.errors.push_back(std::move(d));
    v.error_points.push_back(e["point"].get<std::size_t>());
  }
  return std::pair{j["hash"].get<std::string>(), std::move(v)};
}

// One row on the wire: "POINT OK KIND LINE_BYTES JSON_BYTES\n", then the line and the JSON.
void pack_row(std::string& out, const Finished& f) {
  out += fmt::format("{} {} {} {} {}\n", f.point, f.ok ? 1 : 0, static_cast<int>(f.kind), f.line.size(), f.json.size());
  out += f.line;
  out += f.json;
}

// The rows in a kRow message as rank 0 delivers them, as many as unpack (all of them unless the
// ranks run different builds).
std::vector<Finished> unpack_rows(const io::SweepDocument& doc, const Encoding& e, const std::string& data, int from) {
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
  return rows;
}

// The rows of a batch's points that a rank said were done but whose rows did not come (none
// unless the ranks run different builds): internal errors.
std::vector<Finished> missing_rows(const io::SweepDocument& doc, const Encoding& e, int from,
                                   const std::vector<std::size_t>& points, const std::vector<bool>& got) {
  std::vector<Finished> rows;
  for (std::size_t k = 0; k < points.size(); ++k)
    if (!got[k]) {
      Row r;
      r.point = points[k];
      r.values = doc.values(points[k]);
      r.kind = ErrorKind::Internal;
      r.error = "error: rank " + std::to_string(from) + " sent a row that does not unpack";
      rows.push_back(finish(e, std::move(r)));
    }
  return rows;
}

// A rank's rows on their way to rank 0, one MPI_Isend each. A deque, as MPI_Isend's buffers must
// stay where they are until sent: adding at the back and taking from the front moves no other.
// For tests (tests/cli/sweep_mpi.sh), HETSIM_SWEEP_SENT_LOG names a file to which "RANK POINT"
// is appended for each row once its send has completed (the row has left this process), in the
// order the rank sent them, so that a test that kills a rank can check that what rank 0 kept of
// each rank's rows is the first of them (MPI delivers one sender's messages in order).
class Outbox {
 public:
  Outbox(const MpiModule& mpi, int rank) : mpi_(mpi), rank_(rank) {
    if (const char* log = std::getenv("HETSIM_SWEEP_SENT_LOG"); log != nullptr)
      log_ = ::open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  }
  ~Outbox() {
    for (Sending& s : q_) {
      mpi_.finish_send(s.handle);
      sent(s);
    }
    if (log_ >= 0) ::close(log_);
  }
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Starts sending `data` (the row of `point`, or none) to rank 0 and forgets the sends that have
  // completed, without waiting.
  void send(int tag, std::string data, std::optional<std::size_t> point = std::nullopt) {
    q_.push_back({std::move(data), nullptr, point});
    q_.back().handle = mpi_.start_send(0, tag, &q_.back().data);
    while (!q_.empty() && mpi_.test_send(q_.front().handle)) {
      sent(q_.front());
      q_.pop_front();
    }
  }

 private:
  struct Sending {
    std::string data;
    void* handle;
    std::optional<std::size_t> point;
  };
  void sent(const Sending& s) const {
    if (log_ < 0 || !s.point) return;
    const std::string line = fmt::format("{} {}\n", rank_, *s.point);
    [[maybe_unused]] const auto n = ::write(log_, line.data(), line.size());
  }
  const MpiModule& mpi_;
  int rank_;
  std::deque<Sending> q_;
  int log_ = -1;
};

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
    if (m == nullptr || m->abi != kMpiModuleAbi || m->init == nullptr || m->test_send == nullptr) {
      fail("the module is from another build (entry point or ABI differs)");
      return;
    }
    loaded.emplace(m);
  });
  return *loaded;
}

Validation validate_across(const io::SweepDocument& doc, int jobs, const MpiModule& mpi, int size,
                           std::vector<int>& ready) {
  const auto of = static_cast<std::size_t>(std::max(size, 1));
  const std::string hash = io::sweep_hash_hex(doc.spec().hash);
  std::vector<Validation> shares;
  shares.push_back(validate(doc, jobs, kMaxReported, {0, of}));
  for (int k = 1; k < size; ++k) {  // one request from each rank, its share checked
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(-1, &from, &tag, &data);
    auto request = request_from_text(data);
    if (request && request->first == hash) {
      shares.push_back(std::move(request->second));
      ready.push_back(from);
      continue;
    }
    mpi.send(from, kPoint, kStop);  // another sweep, or another build: its share is checked here
    shares.push_back(validate(doc, jobs, kMaxReported, {static_cast<std::size_t>(from), of}));
  }
  std::sort(ready.begin(), ready.end());
  return merge(std::move(shares), kMaxReported);
}

std::size_t run_coordinator(const io::SweepDocument& doc, const RunOptions& opts, const MpiModule& mpi,
                            const std::vector<int>& ready) {
  const std::string encoding = encoding_text(opts.encoding, opts.journal);
  const std::size_t size = ready.size() + 1;  // ranks taking points, this one included
  // Rank 0's own threads may run ahead of the rows written by the window plus the points out on
  // other ranks.
  detail::OrderedRun run(doc, opts, (static_cast<std::size_t>(std::max(opts.jobs, 1)) + size) * 16);
  run.start();

  int remote = static_cast<int>(ready.size());  // ranks not yet told to stop
  // A batch out on a rank: when it was sent, its points (ascending) and which of their rows came.
  struct Batch {
    std::chrono::steady_clock::time_point sent;
    std::vector<std::size_t> points;
    std::vector<bool> got;
  };
  // Per rank: its next batch size and the batches in flight (at most two; it runs the first).
  struct Remote {
    std::size_t batch = 1;
    std::deque<Batch> sent;
  };
  std::map<int, Remote> ranks;
  // Sends rank `to` its next batch, or "stop" (once nothing is left and nothing is in flight).
  auto hand_out = [&](int to) {
    Remote& r = ranks[to];
    const std::size_t fair = std::max<std::size_t>(1, run.left() / (4 * size));
    std::vector<std::size_t> points = run.claim(std::min(r.batch, fair));
    if (!points.empty()) {
      mpi.send(to, kPoint, points_text(points));
      const std::size_t count = points.size();
      r.sent.push_back({std::chrono::steady_clock::now(), std::move(points), std::vector<bool>(count, false)});
    } else if (r.sent.empty()) {
      mpi.send(to, kPoint, kStop);
      --remote;
    }
  };
  // Each rank: how to encode rows, then two batches so that it never waits.
  for (int to : ready) {
    mpi.send(to, kEncoding, encoding);
    hand_out(to);
    if (!ranks[to].sent.empty()) hand_out(to);
  }
  // One message from a rank: a row of the batch it runs, or that batch done (then its next
  // batch goes out, unless `hand` is false: the job is ending).
  auto take_message = [&](bool hand) {
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(-1, &from, &tag, &data);
    if (tag != kRow && tag != kDone) return;
    const auto at = ranks.find(from);
    if (at == ranks.end() || at->second.sent.empty()) return;  // not asked for
    Remote& r = at->second;
    if (tag == kRow) {  // a row of the batch the rank runs, each point's once
      Batch& b = r.sent.front();
      std::vector<Finished> rows;
      for (Finished& f : unpack_rows(doc, opts.encoding, data, from)) {
        const auto it = std::lower_bound(b.points.begin(), b.points.end(), f.point);
        const auto k = static_cast<std::size_t>(it - b.points.begin());
        if (it == b.points.end() || *it != f.point || b.got[k]) continue;
        b.got[k] = true;
        rows.push_back(std::move(f));
      }
      const std::size_t count = rows.size();
      run.take(std::move(rows), count);
      return;
    }
    const Batch b = std::move(r.sent.front());
    r.sent.pop_front();
    const std::size_t count = b.points.size();
    auto missing = missing_rows(doc, opts.encoding, from, b.points, b.got);
    const std::size_t lost = missing.size();
    run.take(std::move(missing), lost);
    if (!hand) return;
    // The batch took `took` (in flight with the one before it): the next one holds the points
    // for kBatchSeconds at that pace.
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - b.sent).count();
    const double per = took / static_cast<double>(count) / (r.sent.empty() ? 1.0 : 2.0);
    r.batch = std::clamp<std::size_t>(static_cast<std::size_t>(kBatchSeconds / std::max(per, 1e-7)), 1, kMaxBatch);
    hand_out(from);
  };
  while (run.deliver() || remote > 0) {
    if (opts.abandon && opts.abandon()) {
      // The job is being ended (mpirun's SIGTERM after another rank died): every row that has
      // come is taken and delivered (in order, or to on_waiting), and nobody is waited for. A
      // send its rank saw complete may still be on its way (an eager send completes when it
      // leaves the sender): rank 0 looks until nothing has come for kDrainQuiet, at most
      // kDrainMax (mpirun's SIGKILL follows its SIGTERM later than that).
      const auto start = std::chrono::steady_clock::now();
      auto last = start;
      for (auto now = start; now - last < kDrainQuiet && now - start < kDrainMax; now = std::chrono::steady_clock::now()) {
        if (mpi.probe()) {
          take_message(false);
          last = std::chrono::steady_clock::now();
        } else {
          std::this_thread::sleep_for(kPoll);
        }
      }
      run.deliver();
      break;
    }
    int taken = 0;
    while (taken < kMaxMessages && remote > 0 && mpi.probe()) {
      ++taken;
      take_message(true);
    }
    // Nothing came: look again in kPoll. Not woken by this process's own rows (they wait in
    // order meanwhile): every wake-up costs the core the points run on.
    if (taken == 0) std::this_thread::sleep_for(kPoll);
  }
  return run.delivered();
}

void release_workers(const MpiModule& mpi, int size, const std::vector<int>* ready) {
  if (ready != nullptr) {
    for (int to : *ready) mpi.send(to, kPoint, kStop);
    return;
  }
  for (int k = 1; k < size; ++k) {  // each rank's request first
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(-1, &from, &tag, &data);
    mpi.send(from, kPoint, kStop);
  }
}

void run_worker(const io::SweepDocument& doc, const MpiModule& mpi, int rank, int size,
                const std::function<Row(std::size_t)>& runner, const Journal& journal) {
  const Share share{static_cast<std::size_t>(std::max(rank, 0)), static_cast<std::size_t>(std::max(size, 1))};
  const Validation v = validate(doc, 1, kMaxReported, share);
  mpi.send(0, kRequest, request_text(io::sweep_hash_hex(doc.spec().hash), v));
  std::optional<Encoding> encoding;
  // With a journal, rows are encoded with their JSON (what the journal keeps) whatever rank 0
  // asked; the JSON goes on the wire only if asked.
  Encoding local;
  bool journaling = false;
  Outbox outbox(mpi, rank);  // waits for the sends still on their way when this returns
  while (true) {
    int from = 0, tag = 0;
    std::string data;
    mpi.recv(0, &from, &tag, &data);
    if (tag == kEncoding) {
      std::string base;
      encoding = encoding_from_text(doc.spec(), data, base);
      if (encoding) {
        local = *encoding;
        journaling = !base.empty() && journal.open && journal.keep && journal.open(base);
        local.json = local.json || journaling;
      }
      continue;
    }
    if (data == kStop) break;
    // Without an encoding (rank 0 is another build) no rows: rank 0 marks them failed.
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
      for (std::size_t i = first; i <= last; ++i) {
        Finished f = finish(local, runner ? runner(i) : run_point(doc, i));
        if (journaling) journaling = journal.keep(f);  // kept before it is sent
        if (!encoding->json) f.json.clear();
        std::string row;
        pack_row(row, f);
        outbox.send(kRow, std::move(row), i);
      }
      p = end;
    }
    outbox.send(kDone, {});
  }
}

}  // namespace hetsim::sweep

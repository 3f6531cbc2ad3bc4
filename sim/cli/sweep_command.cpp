#include "sim/cli/sweep_command.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <stop_token>
#include <thread>
#include <vector>

#include "sim/api/api.hpp"
#include "sim/cli/diagnostics.hpp"
#include "sim/cli/validators.hpp"
#include "sim/io/error_json.hpp"
#include "sim/io/output_file.hpp"
#include "sim/io/sweep_reader.hpp"
#include "sim/sweep/distributed.hpp"
#include "sim/sweep/plot.hpp"
#include "sim/sweep/rows.hpp"
#include "sim/sweep/sweep.hpp"

extern char** environ;

namespace hetsim::cli {

namespace {

constexpr int kExitInterrupted = 128 + SIGINT;

volatile std::sig_atomic_t g_sweep_interrupted = 0;
extern "C" void on_sweep_interrupt(int) {
  g_sweep_interrupted = 1;
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C ends the process at once
}

// Under mpirun, rank 0: mpirun ends the job with SIGTERM (then SIGKILL) when another rank dies;
// rank 0 then writes the rows that have come before it goes (RunOptions::abandon).
std::atomic<int> g_sweep_terminated{0};
static_assert(std::atomic<int>::is_always_lock_free, "set in a signal handler");
extern "C" void on_sweep_terminate(int) {
  g_sweep_terminated.store(1);
  g_sweep_interrupted = 1;
  std::signal(SIGTERM, SIG_DFL);  // a second SIGTERM ends the process at once
}

int fail(const SweepArgs& a, const Diagnostics& d) {
  for (const auto& x : d) std::cerr << to_string(x) << "\n";
  if (a.json) std::cout << io::error_json(d) << std::flush;
  return exit_status(worst_kind(d));
}

sweep::Format format_of(const std::string& out) {
  return std::filesystem::path(out).extension() == ".jsonl" ? sweep::Format::Jsonl : sweep::Format::Csv;
}

// SimGrid runs one simulation per process: each point of a SimGrid sweep runs in a child
// (`hetsim sweep FILE --point I`), which prints the point's row as one JSON object.
sweep::Row run_in_child(const io::SweepDocument& doc, const std::string& file,
                        std::size_t i) {
  sweep::Row row;
  row.point = i;
  row.values = doc.values(i);
  auto env_error = [&](const std::string& why) {
    row.ok = false;
    row.kind = ErrorKind::Environment;
    row.error = "error: sweep point " + std::to_string(i) + ": " + why;
    return row;
  };
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return env_error("cannot find the hetsim executable to run the point in: " + ec.message());
  int fds[2];
  if (pipe(fds) != 0) return env_error("cannot make a pipe");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addclose(&fa, fds[1]);
  const std::string exe = self.string(), point = std::to_string(i);
  std::vector<char*> argv = {const_cast<char*>(exe.c_str()), const_cast<char*>("sweep"),
                             const_cast<char*>(file.c_str()), const_cast<char*>("--point"),
                             const_cast<char*>(point.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return env_error("cannot start a child process: " + std::string(std::strerror(rc)));
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !j.is_object())
    return env_error(fmt::format("its process ended without a row (status {})", status));
  auto r = sweep::row_from_json(j);
  r.point = i;
  r.values = doc.values(i);
  return r;
}

// A progress line on a terminal: points done, rate, time left.
class Progress {
 public:
  Progress(std::size_t first, std::size_t total) : first_(first), total_(total), on_(isatty(fileno(stderr)) != 0) {}
  void update(std::size_t done) {
    if (!on_) return;
    const auto now = std::chrono::steady_clock::now();
    if (done < total_ && now - last_ < std::chrono::milliseconds(100)) return;
    last_ = now;
    const double s = std::chrono::duration<double>(now - t0_).count();
    const double rate = s > 0 ? static_cast<double>(done - first_) / s : 0;
    const double left = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    const double f = total_ ? static_cast<double>(done) / static_cast<double>(total_) : 1;
    // The last update says how long the points took instead of an ETA of nothing.
    const std::string when = done >= total_ ? "in " + format_duration(Duration{s})
                             : rate > 0     ? "ETA " + format_duration(Duration{left})
                                            : std::string("ETA ?");
    std::fprintf(stderr, "\rsweep [%-30s] %zu/%zu points, %.0f/s, %s   ",
                 std::string(static_cast<std::size_t>(f * 30), '#').c_str(), done, total_, rate, when.c_str());
    std::fflush(stderr);
  }
  void clear() {
    if (on_) std::fprintf(stderr, "\r%100s\r", "");
  }

 private:
  std::size_t first_, total_;
  bool on_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now(), last_{};
};

// `--point I`: one point's row on stdout as JSON (the child of a SimGrid sweep).
int run_one_point(const io::SweepDocument& doc, const sweep::Layout& layout, std::size_t i) {
  if (i >= doc.spec().points) {
    std::cerr << fmt::format("hetsim: --point {}: the sweep has {} points\n", i, doc.spec().points);
    return exit_status(ErrorKind::BadInput);
  }
  std::cout << sweep::row_json(layout, sweep::run_point(doc, i)).dump() << "\n" << std::flush;
  return 0;
}

// FILE.pending, beside the results file: rows that finished before an earlier point's and wait
// for their turn, so that a crash or a kill loses no finished row. A header line with the sweep's
// hash, then one row_json per line; --resume takes the rows of points not yet in the file.
class PendingRows {
 public:
  PendingRows(std::string path, const io::SweepSpec& spec) : path_(std::move(path)), spec_(spec) {}
  ~PendingRows() {
    if (f_ != nullptr) std::fclose(f_);
  }
  PendingRows(const PendingRows&) = delete;
  PendingRows& operator=(const PendingRows&) = delete;

  // The rows of points ≥ first that an earlier run kept (none when the file is another sweep's),
  // encoded as `e` asks.
  std::map<std::size_t, sweep::Finished> read(const io::SweepDocument& doc, const sweep::Encoding& e,
                                              std::size_t first) const {
    std::map<std::size_t, sweep::Finished> rows;
    std::ifstream in(path_);
    std::string line;
    if (!std::getline(in, line)) return rows;
    const auto head = nlohmann::json::parse(line, nullptr, false);
    if (!head.is_object() || !head.contains("hash") || head["hash"] != io::sweep_hash_hex(spec_.hash)) return rows;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);  // a line cut by a crash does not parse
      if (!j.is_object() || !j.contains("point") || !j["point"].is_number_unsigned()) continue;
      const auto i = j["point"].get<std::size_t>();
      if (i < first || i >= spec_.points) continue;
      sweep::Row r = sweep::row_from_json(j);
      r.point = i;
      r.values = doc.values(i);
      rows.insert_or_assign(i, sweep::finish(e, std::move(r)));
    }
    return rows;
  }
  // Opens the file for appending, with its header when it is new (`truncate`: a new file
  // whatever is there, as a rank's journal starts); a line an earlier run left cut is ended
  // first, so that the next row parses. false (errno set) when it cannot.
  bool open(bool truncate = false) {
    if (f_ != nullptr) return true;
    std::error_code ec;
    const auto size = std::filesystem::exists(path_, ec) ? std::filesystem::file_size(path_, ec) : 0;
    const bool fresh = truncate || ec || size == 0;
    bool cut = false;
    if (!fresh) {
      std::ifstream in(path_, std::ios::binary);
      in.seekg(-1, std::ios::end);
      cut = in.get() != '\n';
    }
    f_ = std::fopen(path_.c_str(), fresh ? "wb" : "ab");
    if (f_ == nullptr) return false;
    if (fresh) std::fputs((header() + "\n").c_str(), f_);
    if (cut) std::fputc('\n', f_);
    return true;
  }
  // Appends one row (its Encoding::json; the file made at the first; written out by flush());
  // false when it cannot be written.
  bool keep(const sweep::Finished& r) {
    if (!open()) return false;
    return std::fwrite(r.json.data(), 1, r.json.size(), f_) == r.json.size() && std::fputc('\n', f_) == '\n';
  }
  // Writes out the rows kept since the last flush; false when that fails.
  bool flush() { return f_ == nullptr || std::fflush(f_) == 0; }
  void remove() {
    if (f_ != nullptr) std::fclose(f_);
    f_ = nullptr;
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string header() const {
    return nlohmann::json{{"hetsim_sweep_pending", 1}, {"hash", io::sweep_hash_hex(spec_.hash)}}.dump();
  }
  std::string path_;
  const io::SweepSpec& spec_;
  std::FILE* f_ = nullptr;
};

// The journals the other ranks of an mpirun keep beside FILE.pending (`pending`):
// FILE.pending.rankR, each in PendingRows' format (sweep::Journal).
std::vector<std::string> rank_journals(const std::string& pending) {
  std::vector<std::string> found;
  const std::filesystem::path p(pending);
  const std::string prefix = p.filename().string() + ".rank";
  std::error_code ec;
  const auto dir = p.parent_path().empty() ? std::filesystem::path(".") : p.parent_path();
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
        name.find_first_not_of("0123456789", prefix.size()) == std::string::npos)
      found.push_back((p.parent_path() / name).string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

void remove_files(const std::vector<std::string>& paths) {
  std::error_code ec;
  for (const auto& f : paths) std::filesystem::remove(f, ec);
}

// Under mpirun: the MPI session of this process. Rank 0 tells the other ranks to stop on every
// way out that has not handed them out points, then every rank finalizes.
struct MpiSession {
  const sweep::MpiModule* mpi = nullptr;
  int rank = 0, size = 1;
  bool validated = false;  // rank 0 has heard from every rank (sweep::validate_across)
  std::vector<int> ready;  // then: the ranks to hand points to
  bool released = false;
  bool abandoned = false;  // the job is being ended: no rank is told or waited for
  MpiSession() = default;
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession() {
    if (mpi == nullptr || abandoned) return;  // MPI_Finalize could wait on a dead rank
    if (rank == 0 && !released) sweep::release_workers(*mpi, size, validated ? &ready : nullptr);
    mpi->finalize();
  }
};

}  // namespace

CLI::App* add_sweep_command(CLI::App& app, SweepArgs& a) {
  auto* s = app.add_subcommand(
      "sweep",
      "Run every point of the scenario's [sweep] table (docs/scenario-format.md#sweep): axes over any key, as "
      "lists or ranges, combined as a product or zipped, plus [[sweep.case]] points; each point estimated, "
      "simulated or planned as [sweep] command says. Every point is validated before any runs; one row per "
      "point (its values, status, step time, tokens/s, MFU, time and cost to train, goodput, plan, peak memory "
      "and fit per pool, error), in point order. Without --out the rows go to stdout as CSV. Under `mpirun -np N` "
      "rank 0 hands the points out to the ranks as they ask and writes the rows (docs/scenario-format.md#across-nodes-mpirun)");
  s->add_option("scenario", a.scenario, "Scenario TOML file with a [sweep] table")->required();
  s->add_option("-j,--jobs", a.jobs, "Points run at once, on this many threads")
      ->check(count_between(1, 1024, "threads"))
      ->default_val(1);
  s->add_option("--out", a.out,
                "Write the rows to this file as each is ready: results.csv (CSV) or results.jsonl (JSON lines); "
                "a header with the sweep's hash first, one line per point, flushed, in point order, so that an "
                "interrupted sweep leaves a valid file")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            const auto ext = std::filesystem::path(v).extension();
            if (ext != ".csv" && ext != ".jsonl") return "the results file must end in .csv or .jsonl, not '" + v + "'";
            return io::output_path_problem(v);
          },
          "FILE"));
  s->add_flag("--resume", a.resume,
              "Keep the rows already in --out (written by this same sweep: its hash must match) and run only the "
              "points missing after them");
  s->add_flag("--json", a.json, "Print one JSON document on stdout: the sweep and every row (docs/scenario-format.md#results)");
  s->add_option("--plot", a.plot,
                "Also draw the rows as an SVG chart (Qt's SVG generator; needs a build with Qt): --plot-y against "
                "--plot-x, one line per value of --plot-by, or a heat map of the two with --heatmap; other axes held "
                "at point 0's values; [[sweep.case]] points left out")
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            if (std::filesystem::path(v).extension() != ".svg") return "the plot file must end in .svg, not '" + v + "'";
            return io::output_path_problem(v);
          },
          "FILE.svg"));
  s->add_option("--plot-y", a.plot_y,
                "The figure to plot: step_s, tokens_per_s, mfu, time_to_train_s, effective_time_to_train_s, "
                "cost_to_train_usd, goodput, devices or POOL.peak_GiB")
      ->default_val("step_s");
  s->add_option("--plot-x", a.plot_x, "The axis along x (a key path of [sweep]; default: the first axis)");
  s->add_option("--plot-by", a.plot_by, "One line (heat map: one row) per value of this axis (default: the next axis)");
  s->add_flag("--heatmap", a.heatmap, "Plot --plot-y as colour over --plot-x and --plot-by");
  s->add_option("--point", a.point)->group("");  // a SimGrid sweep's child process
  return s;
}

int run_sweep(const SweepArgs& a) {
  auto cat = api::figures_catalog();
  if (!cat) return fail(a, cat.errors());
  auto doc = io::read_sweep(a.scenario, *cat);
  if (!doc) {
    const int rc = fail(a, doc.errors());
    std::cerr << fmt::format("hetsim: {} error(s) in the [sweep] of {}; nothing run\n", doc.errors().size(), a.scenario);
    return rc;
  }
  const io::SweepSpec& spec = doc->spec();
  if (a.resume && a.out.empty())
    return fail(a, {about("", "--resume", "--resume completes a results file: give it with --out", "")});

  sweep::Layout layout{&spec, {}};
  if (a.point >= 0) {
    auto sc = doc->scenario(0);
    if (sc) {
      for (const auto& p : sc->cluster.pools) layout.pools.push_back(p.name);
      layout.variability = sc->variability.has_value();
    }
    return run_one_point(*doc, layout, static_cast<std::size_t>(a.point));
  }

  // Under mpirun, rank 0 runs this command and hands out points; the other ranks run them.
  MpiSession session;
  if (sweep::under_mpirun()) {
    auto m = sweep::load_mpi_module();
    if (!m) return fail(a, m.errors());
    if (!(*m)->init(&session.rank, &session.size))
      return fail(a, {about("", "", "MPI_Init_thread failed under mpirun", "run the sweep without mpirun (--jobs N)",
                            ErrorKind::Environment)});
    session.mpi = *m;
    if (session.rank > 0) {
      std::function<sweep::Row(std::size_t)> runner;
      if (spec.command == io::SweepCommand::Simulate && spec.simgrid)
        runner = [&](std::size_t i) { return run_in_child(*doc, a.scenario, i); };
      // Each row kept in FILE.pending.rankR before it is sent (the place is rank 0's to name).
      std::unique_ptr<PendingRows> kept;
      sweep::Journal journal;
      const int rank = session.rank;
      auto warn = [rank](const std::string& path) {
        std::cerr << fmt::format(
            "hetsim: rank {} cannot keep its rows in {} ({}): a row on its way to rank 0 when the job ends would be "
            "run again by --resume (the results file's folder must be one every rank can write, as a shared "
            "filesystem is)\n",
            rank, path, std::strerror(errno));
      };
      journal.open = [&](const std::string& base) {
        kept = std::make_unique<PendingRows>(base + ".rank" + std::to_string(rank), spec);
        if (kept->open(true)) return true;  // rank 0 has taken (and removed) what an earlier run kept
        warn(kept->path());
        return false;
      };
      journal.keep = [&](const sweep::Finished& r) {
        if (kept->keep(r) && kept->flush()) return true;
        warn(kept->path());
        return false;
      };
      sweep::run_worker(*doc, *session.mpi, session.rank, session.size, runner, journal);
      return 0;
    }
  }

  // Every point is a valid scenario before any runs (under mpirun, each rank checks a share).
  sweep::Validation v;
  if (session.mpi != nullptr) {
    v = sweep::validate_across(*doc, a.jobs, *session.mpi, session.size, session.ready);
    session.validated = true;
  } else {
    v = sweep::validate(*doc, a.jobs);
  }
  if (v.invalid > 0) {
    Diagnostics errs = v.errors;
    const int rc = fail(a, errs);
    const std::size_t shown = std::min<std::size_t>(v.invalid, 20);
    std::cerr << fmt::format("hetsim: {} of the sweep's {} points are not valid scenarios{}; nothing run\n", v.invalid,
                             spec.points, v.invalid > shown ? fmt::format(" (the first {} shown)", shown) : "");
    return rc;
  }
  layout.pools = v.pools;
  layout.variability = v.variability;

  // A plot that cannot be drawn is said before the sweep runs, not after.
  const sweep::PlotOptions plot_opts{a.plot_y, a.plot_x, a.plot_by, a.heatmap};
  const sweep::PlotModule* plotter = nullptr;
  if (!a.plot.empty()) {
    if (auto c = sweep::make_chart(layout, {}, plot_opts); !c) return fail(a, c.errors());
    auto m = sweep::load_plot_module();
    if (!m) return fail(a, m.errors());
    plotter = *m;
  }
  std::vector<sweep::Row> plot_rows;

  const sweep::Format format = format_of(a.out);
  std::size_t first = 0;
  std::FILE* out = nullptr;
  PendingRows pending(a.out + ".pending", spec);
  // Rows are encoded where they run (a thread, another rank): the results file's line, the
  // pending file's JSON, the Row itself only for --json and --plot.
  sweep::Encoding encoding;
  encoding.layout = layout;
  encoding.format = format;
  encoding.line = !a.out.empty() || !a.json;
  encoding.json = !a.out.empty();
  encoding.row = a.json || plotter != nullptr;
  std::map<std::size_t, sweep::Finished> finished;
  if (!a.out.empty()) {
    std::error_code ec;
    const std::string header = sweep::file_header(format, layout);
    if (a.resume && std::filesystem::exists(a.out, ec)) {
      std::ifstream in(a.out, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      auto existing = sweep::check_existing(format, layout, ss.str(), a.out);
      if (!existing) return fail(a, existing.errors());
      std::filesystem::resize_file(a.out, existing->keep_bytes, ec);
      if (ec) return fail(a, {about(a.out, "--out", "cannot cut the file's last, unfinished line: " + ec.message(), "", ErrorKind::Environment)});
      first = existing->rows;
      finished = pending.read(*doc, encoding, first);
      // The rows other ranks kept when an mpirun ended (sweep::Journal) join FILE.pending before
      // their journals go, so that a second interruption cannot lose them either.
      const auto journals = rank_journals(pending.path());
      bool kept = true;
      for (const auto& path : journals)
        for (auto& [i, r] : PendingRows(path, spec).read(*doc, encoding, first))
          if (finished.find(i) == finished.end()) {
            kept = kept && pending.keep(r);
            finished.emplace(i, std::move(r));
          }
      if (!kept || !pending.flush())  // the journals stay: nothing of theirs is lost
        return fail(a, {about(pending.path(), "--out", std::string("cannot write: ") + std::strerror(errno), "",
                              ErrorKind::Environment)});
      remove_files(journals);
      if (plotter != nullptr) plot_rows = sweep::read_rows(format, layout, std::string_view(ss.str()).substr(0, existing->keep_bytes));
      out = std::fopen(a.out.c_str(), "ab");
    } else {
      pending.remove();  // an earlier, interrupted run's: this one starts over
      remove_files(rank_journals(pending.path()));
      out = std::fopen(a.out.c_str(), "wb");
      if (out != nullptr) {
        std::fwrite(header.data(), 1, header.size(), out);
        std::fflush(out);
      }
    }
    if (out == nullptr)
      return fail(a, {about(a.out, "--out", std::string("cannot write the results file: ") + std::strerror(errno), "",
                            ErrorKind::Environment)});
  } else if (!a.json) {
    const std::string header = sweep::file_header(sweep::Format::Csv, layout);
    std::fwrite(header.data(), 1, header.size(), stdout);
    std::fflush(stdout);
  }

  std::stop_source stop;
  std::signal(SIGINT, on_sweep_interrupt);
  if (session.mpi != nullptr) std::signal(SIGTERM, on_sweep_terminate);
  std::jthread watcher([&stop](std::stop_token done) {
    while (!done.stop_requested() && !stop.stop_requested()) {
      if (g_sweep_interrupted) {
        stop.request_stop();
        std::fputs("\ninterrupted: finishing the points being run; --resume runs the rest\n", stderr);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  Progress progress(first, spec.points);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::size_t ok = 0, not_fit = 0, failed = 0;
  bool write_failed = false;
  sweep::RunOptions opts;
  opts.jobs = a.jobs;
  opts.first = first;
  opts.encoding = encoding;
  const std::size_t reused = finished.size();
  opts.finished = std::move(finished);
  if (out != nullptr) opts.journal = pending.path();
  auto write_failure = [&] {
    if (!write_failed) stop.request_stop();
    write_failed = true;
  };
  if (out != nullptr)
    opts.on_waiting = [&](const sweep::Finished& r) {
      if (!pending.keep(r)) write_failure();
    };
  opts.stop = stop.get_token();
  if (spec.command == io::SweepCommand::Simulate && spec.simgrid)
    opts.runner = [&](std::size_t i) { return run_in_child(*doc, a.scenario, i); };
  opts.on_row = [&](const sweep::Finished& r) {
    (r.ok ? ok : r.kind == ErrorKind::DoesNotFit ? not_fit : failed) += 1;
    if (out != nullptr) {
      if (std::fwrite(r.line.data(), 1, r.line.size(), out) != r.line.size()) write_failure();
    } else if (!a.json) {
      std::fwrite(r.line.data(), 1, r.line.size(), stdout);
    }
    if (a.json) rows.push_back(sweep::row_json(layout, *r.row));
    if (plotter != nullptr) plot_rows.push_back(*r.row);
    progress.update(r.point + 1);
  };
  // Once a burst of rows, not once a row (under mpirun a burst is the rows that came in since
  // rank 0 last looked, at most a millisecond apart): what was written reaches the files. A kill
  // between two flushes loses at most the burst's rows, which --resume runs again.
  opts.on_burst = [&] {
    if (out != nullptr) {
      if (!pending.flush() || std::fflush(out) != 0) write_failure();
    } else if (!a.json) {
      std::fflush(stdout);
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  std::size_t delivered = 0;
  if (session.mpi != nullptr) {
    opts.abandon = [] { return g_sweep_terminated.load() != 0; };
    delivered = sweep::run_coordinator(*doc, opts, *session.mpi, session.ready);
    session.released = true;
    session.abandoned = g_sweep_terminated.load() != 0;
  } else {
    delivered = sweep::run(*doc, opts);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  watcher.request_stop();
  progress.clear();
  if (out != nullptr && std::fclose(out) != 0) write_failed = true;
  if (write_failed)
    return fail(a, {about(a.out, "--out", "writing the results file failed (disk full?); the rows before are kept",
                          "free space, then --resume", ErrorKind::Environment)});
  const bool complete = first + delivered == spec.points;
  if (out != nullptr && complete) {
    pending.remove();
    remove_files(rank_journals(pending.path()));
  }
  if (plotter != nullptr && complete) {
    auto chart = sweep::make_chart(layout, plot_rows, plot_opts);
    if (!chart) return fail(a, chart.errors());
    std::string why;
    const std::string svg = plotter->render_svg(*chart, &why);
    if (svg.empty())
      return fail(a, {about(a.plot, "--plot", "the plot could not be drawn: " + why, "", ErrorKind::Environment)});
    if (auto errs = io::write_file_atomic(a.plot, svg); !errs.empty()) return fail(a, errs);
  }
  if (a.json) {
    nlohmann::ordered_json j;
    j["sweep"] = sweep::sweep_json(layout);
    j["resumed_from"] = first;
    j["complete"] = complete;
    j["rows"] = std::move(rows);
    std::cout << j.dump(2) << "\n" << std::flush;
  }
  std::cerr << fmt::format("hetsim: {} point{} run in {:.2f} s ({} ok, {} do not fit, {} failed){}{}\n", delivered,
                           delivered == 1 ? "" : "s", seconds, ok, not_fit, failed,
                           (first > 0 ? fmt::format("; {} were in {} already", first, a.out) : "") +
                               (reused > 0 ? fmt::format("; {} of these were kept in {}.pending, not run again", reused, a.out) : ""),
                           a.out.empty() ? "" : "; rows in " + a.out);
  if (!complete) {
    std::cerr << fmt::format("hetsim: stopped after point {} of {}; `hetsim sweep {} --out {} --resume` runs the rest\n",
                             first + delivered, spec.points, a.scenario, a.out.empty() ? "FILE" : a.out);
    return kExitInterrupted;
  }
  return 0;
}

}  // namespace hetsim::cli

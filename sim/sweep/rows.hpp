#pragma once
// The rows of a sweep as files and documents (docs/scenario-format.md#results): CSV or JSON lines,
// each starting with a header that carries the sweep's hash, so that `--resume` can tell its
// own file from another sweep's; and the whole sweep as one JSON document (--json).

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/base/result.hpp"
#include "sim/io/sweep_reader.hpp"
#include "sim/sweep/row.hpp"

namespace hetsim::sweep {

enum class Format { Csv, Jsonl };

/// What a results file's header says: the sweep and the pools whose memory the rows show.
struct Layout {
  const io::SweepSpec* spec = nullptr;
  std::vector<std::string> pools;
  bool variability = false;  ///< step_p50_s, step_p90_s, step_p99_s columns after step_s
};

/// What the rows of a run are delivered as (RunOptions::encoding). Each row is encoded on the
/// thread or the rank that ran its point, so that whoever delivers the rows in point order (the
/// calling thread, rank 0 of an mpirun) only counts them and writes their bytes.
/// The default asks only for each row's status.
struct Encoding {
  Layout layout;  ///< needed (its spec) for line and json
  Format format = Format::Csv;
  bool line = false;  ///< Finished::line: the row as row_line(format) writes it
  bool json = false;  ///< Finished::json: row_json's text (FILE.pending keeps it)
  bool row = false;   ///< Finished::row: the Row itself (--json, --plot)
};

/// A row as a run delivers it: its status and what Encoding asked for.
struct Finished {
  std::size_t point = 0;
  bool ok = false;
  ErrorKind kind = ErrorKind::BadInput;
  std::string line;        ///< with Encoding::line: the results file's line, newline included
  std::string json;        ///< with Encoding::json: row_json(…).dump(), no newline
  std::optional<Row> row;  ///< with Encoding::row

  /// Row::status(): "ok" or kind_name(kind).
  [[nodiscard]] std::string status() const;
};

/// `r` encoded as `e` asks.
[[nodiscard]] Finished finish(const Encoding& e, Row r);

/// The columns of a CSV row: point, the sweep's columns, status, the figures (with
/// Layout::variability, the step's percentiles after step_s), plan, two per pool
/// ("<pool>.peak_GiB", "<pool>.fits"), error.
[[nodiscard]] std::vector<std::string> csv_columns(const Layout& l);

/// The header of a results file, ending in a newline: CSV, a "# hetsim sweep …" line (file,
/// hash, points, command) then the column names; JSON lines, one object
/// {"hetsim_sweep": 1, "file", "hash", "points", "command", "columns", "pools"}.
[[nodiscard]] std::string file_header(Format f, const Layout& l);

/// One row as a line of the file, ending in a newline.
[[nodiscard]] std::string row_line(Format f, const Layout& l, const Row& r);

/// One row as a JSON object: point, values (numbers and booleans typed), status, error, the
/// figures, plan, pools.
[[nodiscard]] nlohmann::ordered_json row_json(const Layout& l, const Row& r);

/// A row read back from row_json (a SimGrid point's child process prints it): status, error,
/// figures, plan, pools. The point and its values are left for the caller to set.
[[nodiscard]] Row row_from_json(const nlohmann::json& j);

/// The rows of a results file's valid prefix (`content` checked by check_existing): what
/// --resume kept, for --plot.
[[nodiscard]] std::vector<Row> read_rows(Format f, const Layout& l, std::string_view content);

/// The sweep without its rows, as JSON: file, hash, points, command, columns, pools.
[[nodiscard]] nlohmann::ordered_json sweep_json(const Layout& l);

/// An existing results file, checked for --resume.
struct Existing {
  std::size_t rows = 0;        ///< points 0 … rows-1 are in it, in order
  std::size_t keep_bytes = 0;  ///< its valid prefix: the header and those rows (a line cut short by a crash is not kept)
};

/// Checks `content` (a results file) against this sweep's header: bad input naming `file` when
/// it was written by another sweep or in another layout, or when its rows are not the points in
/// order.
[[nodiscard]] Result<Existing> check_existing(Format f, const Layout& l, std::string_view content,
                                              const std::string& file);

}  // namespace hetsim::sweep

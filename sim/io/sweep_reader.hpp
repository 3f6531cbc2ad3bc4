#pragma once
// Reading a scenario with a [sweep] table (docs/scenario-format.md#sweep): its axes (lists or
// ranges over any key path), how they combine (product or zip), its explicit [[sweep.case]]
// points and the command every point runs. A point's scenario is the file's document with the
// point's values put in at their key paths, read by the normal scenario reader, so its messages
// are the reader's own, naming the point and its values.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/result.hpp"
#include "models/hw/catalog.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io {

/// What each point of a sweep runs.
enum class SweepCommand { Estimate, Simulate, Plan };

/// A sweep without its scenarios: what it runs and the columns that name its points.
struct SweepSpec {
  std::string file;
  SweepCommand command = SweepCommand::Estimate;
  bool simgrid = false;         ///< Simulate: SimGrid's engine instead of the native one
  bool cost_objective = false;  ///< Plan: rank by cost per token instead of step time
  bool zip = false;             ///< axes zipped (the i-th values together), else their product
  /// Key paths ("cluster.pool[1].nodes"): the axes in the order the file gives them, then the
  /// keys that only [[sweep.case]] tables set.
  std::vector<std::string> columns;
  std::size_t axes = 0;         ///< columns[0, axes) are the axes
  std::size_t grid_points = 0;  ///< points made by the axes (0 without axes); the cases follow them
  std::size_t points = 0;       ///< grid_points + the cases
  std::uint64_t hash = 0;       ///< FNV-1a of the file's text: `--resume` compares it
};

/// The hash as 16 hexadecimal digits.
[[nodiscard]] std::string sweep_hash_hex(std::uint64_t hash);

/// A parsed sweep: its spec, and each point's values and scenario. Copies share the parsed
/// document; every const member is thread-safe.
class SweepDocument {
 public:
  [[nodiscard]] const SweepSpec& spec() const;
  /// Point `i`'s value of each column, as text (a string without its quotes; "" where neither
  /// the point nor the scenario sets the key). Requires: i < spec().points.
  [[nodiscard]] std::vector<std::string> values(std::size_t i) const;
  /// Point `i`'s scenario: the document with the point's values put in, read and validated by
  /// the scenario reader ([parallel] too, unless the command is Plan). Each diagnostic starts
  /// with "sweep point I (key = value, …): "; one about a key the point set without a line of its
  /// own is placed at that axis in [sweep]. Requires: i < spec().points.
  [[nodiscard]] Result<Scenario> scenario(std::size_t i) const;

  struct Impl;

 private:
  friend Result<SweepDocument> parse_sweep(std::string_view, const std::string&, const hw::Catalog&);
  std::shared_ptr<const Impl> impl_;
};

/// Reads the [sweep] table of the scenario text (its points are not read: scenario(i) does
/// that). Bad input, every problem collected: no [sweep] table, an unknown key, a key path that
/// does not lead to a value of the scenario, an empty or malformed range, zipped axes of
/// different lengths, more than 10 million points.
[[nodiscard]] Result<SweepDocument> parse_sweep(std::string_view text, const std::string& file,
                                                const hw::Catalog& catalog);
/// The same for the file at `file`.
[[nodiscard]] Result<SweepDocument> read_sweep(const std::filesystem::path& file, const hw::Catalog& catalog);

}  // namespace hetsim::io

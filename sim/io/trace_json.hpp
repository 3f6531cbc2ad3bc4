#pragma once
// Traces as JSON (docs/formats.md#trace-json): the predicted step (engine) and the measured one
// (executor) in one schema, so `hetsim-exec compare` reads both the same way.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/result.hpp"
#include "sim/engine/native_engine.hpp"
#include "sim/schedule/task_graph.hpp"

namespace hetsim::io {

/// What a trace may hold: times of at most 10^15 ns (11.6 days for one step), memory peaks of
/// at most 2^56 bytes (64 PiB, where the schedule saturates).
inline constexpr std::int64_t kMaxTraceNs = 1'000'000'000'000'000;
inline constexpr std::int64_t kMaxTraceBytes = std::int64_t{1} << 56;

/// Time per op class inside one task: ("gemm", ns), ("attention", ns), …
using TaskParts = std::vector<std::pair<std::string, std::int64_t>>;

struct TraceTask {
  std::uint32_t device = 0;
  std::string kind;  ///< schedule::task_kind_name
  std::string name;  ///< schedule::task_name
  std::int64_t start_ns = 0, end_ns = 0;
  /// Time per op class inside a compute task ("gemm", "attention", "norm", …, "optimizer"), in
  /// ns; empty where not known (the engine's collectives; traces of older versions).
  TaskParts parts;
};

struct TraceFile {
  std::string source;  ///< "predicted (native engine)", "measured (cpu backend)"
  std::int64_t makespan_ns = 0;
  std::vector<std::string> devices;         ///< labels
  std::vector<std::int64_t> peak_bytes;     ///< per device
  std::vector<TraceTask> tasks;             ///< in task-graph order
};

/// `parts`, where given, holds each task's time per op class (indexed like the graph's tasks).
[[nodiscard]] TraceFile make_trace_file(const schedule::TaskGraph& g, const engine::Trace& t, std::string source,
                                        const std::vector<TaskParts>& parts = {});
[[nodiscard]] std::string trace_to_json(const TraceFile& t);
[[nodiscard]] Result<TraceFile> read_trace_json(const std::filesystem::path& file);
/// The same for text already in memory; `name` names it in messages.
[[nodiscard]] Result<TraceFile> parse_trace_json(std::string_view text, const std::string& name);

}  // namespace hetsim::io

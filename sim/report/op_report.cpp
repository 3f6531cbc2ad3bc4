#include "sim/report/op_report.hpp"

#include <fmt/format.h>

namespace hetsim::report {
namespace {

using nlohmann::ordered_json;

// What binds a pass of an op: its launch gaps when they exceed the kernels' work, else the
// larger of compute and memory.
std::string_view bound(const cost::OpTime& t) {
  if (t.total.v <= 0) return "-";
  if (t.launch.v > std::max(t.compute.v, t.memory.v)) return "launch";
  return t.memory_bound() ? "memory" : "compute";
}

double tflops(Flops f, Duration t) { return t.v > 0 ? f.v / t.v * 1e-12 : 0.0; }

ordered_json pass_json(const cost::OpTime& t, Flops f, Bytes b, int kernels) {
  return {{"time_s", t.total.v},   {"compute_s", t.compute.v}, {"memory_s", t.memory.v},
          {"launch_s", t.launch.v}, {"flops", f.v},            {"bytes", b.v},
          {"kernels", kernels},     {"tflops", tflops(f, t.total)}, {"bound", bound(t)}};
}

}  // namespace

std::string ops_text(const std::vector<analytic::StageOps>& stages) {
  std::string o;
  for (const analytic::StageOps& st : stages) {
    o += fmt::format("\nops of one micro-batch on pool '{}' ({}), tp {}, {} layers (group {} stage {}{})\n", st.pool,
                     st.device, st.tp, st.layers, st.group, st.stage,
                     st.alike > 1 ? fmt::format("; {} stages alike", st.alike) : "");
    o += fmt::format("  {:<16} {:<11} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}  {:<7} {:<7}\n", "op", "kind", "fwd ms",
                     "bwd ms", "fwd TF/s", "bwd TF/s", "fwd MB", "bwd MB", "fwd", "bwd");
    for (const analytic::OpPart& part : st.parts) {
      o += fmt::format("  {}{}\n", part.part, part.repeat > 1 ? fmt::format(" (× {})", part.repeat) : "");
      for (const analytic::OpCost& oc : part.ops) {
        const workload::Op& c = oc.op;
        const bool has_flops = c.kind == workload::OpKind::Gemm || c.kind == workload::OpKind::Attention;
        o += fmt::format("  {:<16} {:<11} {:>9.3f} {:>9.3f} {:>9} {:>9} {:>9.1f} {:>9.1f}  {:<7} {:<7}\n",
                         c.name, workload::op_kind_name(c.kind), oc.fwd.total.v * 1e3, oc.bwd.total.v * 1e3,
                         has_flops ? fmt::format("{:.1f}", tflops(c.fwd_flops, oc.fwd.total)) : "-",
                         has_flops ? fmt::format("{:.1f}", tflops(c.bwd_flops, oc.bwd.total)) : "-",
                         c.fwd_bytes.v * 1e-6, c.bwd_bytes.v * 1e-6, bound(oc.fwd), bound(oc.bwd));
      }
      o += fmt::format("  {:<28} {:>9.3f} {:>9.3f}{}\n", fmt::format("= {}", part.part), part.fwd.v * 1e3,
                       part.bwd.v * 1e3,
                       part.fwd_host_bound || part.bwd_host_bound ? "  (host-bound: kernels × host_overhead)" : "");
    }
    o += fmt::format("  one micro-batch, forward + backward, no recompute: {:.3f} ms\n", st.compute().v * 1e3);
  }
  return o;
}

ordered_json ops_json(const std::vector<analytic::StageOps>& stages) {
  ordered_json a = ordered_json::array();
  for (const analytic::StageOps& st : stages) {
    ordered_json j = {{"group", st.group}, {"stage", st.stage}, {"alike", st.alike}, {"pool", st.pool},
                      {"device", st.device}, {"tp", st.tp}, {"layers", st.layers},
                      {"micro_batch_compute_s", st.compute().v}, {"parts", ordered_json::array()}};
    for (const analytic::OpPart& part : st.parts) {
      ordered_json pj = {{"part", part.part},
                         {"repeat", part.repeat},
                         {"fwd_s", part.fwd.v},
                         {"bwd_s", part.bwd.v},
                         {"fwd_host_bound", part.fwd_host_bound},
                         {"bwd_host_bound", part.bwd_host_bound},
                         {"ops", ordered_json::array()}};
      for (const analytic::OpCost& oc : part.ops) {
        const workload::Op& c = oc.op;
        pj["ops"].push_back({{"name", c.name},
                             {"kind", workload::op_kind_name(c.kind)},
                             {"count", c.count},
                             {"fwd", pass_json(oc.fwd, c.fwd_flops, c.fwd_bytes, c.fwd_kernels)},
                             {"bwd", pass_json(oc.bwd, c.bwd_flops, c.bwd_bytes, c.bwd_kernels)}});
      }
      j["parts"].push_back(std::move(pj));
    }
    a.push_back(std::move(j));
  }
  return a;
}

}  // namespace hetsim::report

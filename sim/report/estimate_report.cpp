#include "sim/report/estimate_report.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace hetsim::report {
namespace {

std::string_view memory_kind_name(MemoryKind k) {
  switch (k) {
    case MemoryKind::Allocated: return "max allocated";
    case MemoryKind::Reserved: return "max reserved";
    case MemoryKind::Device: return "whole device";
  }
  return "?";
}


using nlohmann::ordered_json;

double pct(double x) { return 100.0 * x; }

template <class Q>
ordered_json breakdown_json(const cost::Breakdown<Q>& b) {
  ordered_json j = ordered_json::object();
  for (const auto& [n, v] : b.parts) j[n] = v.v;
  return j;
}

// A MoE model's routing: the most loaded expert-parallel rank, and the tokens a dropping router
// drops (docs/cost-models.md#routing-imbalance).
std::string routing_line(const workload::ModelSpec& m, const plan::Plan& p) {
  std::string o = fmt::format("routing    busiest EP rank at {:.3g}× the balanced expert rows", workload::moe_rank_load(m, p.ep));
  if (m.dropless) return o + "; dropless, no token dropped\n";
  const double dropped = workload::moe_dropped_fraction(m);
  return o + fmt::format("; capacity factor {:.3g} drops {:.2f} % of the routed tokens per MoE layer{}\n",
                         m.capacity_factor > 0 ? m.capacity_factor : 1.0, pct(dropped),
                         dropped > 0 ? " (they skip their experts: the model learns from fewer tokens)" : "");
}

}  // namespace

std::string plan_summary(const Scenario& s, const plan::Plan& p) {
  std::string out;
  for (const auto& g : p.groups) {
    if (!out.empty()) out += " + ";
    out += fmt::format("{} × [", g.replicas / std::max(1, p.cp));  // data-parallel replicas (each cp blocks)
    // Runs of identical stages print once with their count: "10 × h100 tp8 L6".
    for (std::size_t i = 0; i < g.stages.size();) {
      const auto& st = g.stages[i];
      std::size_t j = i + 1;
      while (j < g.stages.size() && g.stages[j].pool == st.pool && g.stages[j].tp == st.tp &&
             g.stages[j].layers == st.layers)
        ++j;
      out += fmt::format("{}{}{} tp{} L{}", i ? " | " : "", j - i > 1 ? fmt::format("{} × ", j - i) : "",
                         s.cluster.pools[st.pool].name, st.tp, st.layers);
      i = j;
    }
    out += fmt::format("] × {} mb", g.micro_batches);
  }
  out += fmt::format("; micro_batch {}, {}", p.micro_batch, cost::schedule_name(p.schedule));
  if (p.schedule == cost::Schedule::Interleaved) out += fmt::format(" v{}", p.virtual_stages);
  if (p.pipeline_runs > 1) out += fmt::format(" in {} runs", p.pipeline_runs);
  out += fmt::format(", recompute {}", cost::recompute_name(p.recompute));
  if (p.recompute == cost::Recompute::Selective && p.recompute_modules != workload::kDefaultRecomputeModules) {
    std::vector<std::string_view> mods;
    for (auto m : workload::kRecomputeModuleList)
      if (workload::has_module(p.recompute_modules, m)) mods.push_back(workload::recompute_module_name(m));
    out += fmt::format(" ({})", fmt::join(mods, ", "));
  }
  out += fmt::format(", ZeRO {}", p.zero);
  if (p.ep > 1 || p.expert_tp > 0)
    out += fmt::format(", EP {}{}{}{}{}", p.ep, p.expert_tp > 0 ? fmt::format(" ETP {}", p.expert_tp) : std::string(),
                       p.overlap_ep_comm ? " overlapped" : "",
                       p.ep_dispatch == plan::Plan::EpDispatch::Hierarchical ? " hierarchical" : "",
                       p.fp8_dispatch ? " fp8 dispatch" : "");
  if (p.cp > 1)
    out += fmt::format(", CP {} ({})", p.cp,
                       p.cp_comm == plan::Plan::CpComm::Ring         ? "p2p ring"
                       : p.cp_comm == plan::Plan::CpComm::AllGather ? "all-gather"
                                                                     : "all-to-all");
  return out;
}

std::string estimate_text(const Scenario& s, const plan::Plan& p, const analytic::Estimate& e) {
  std::string o;
  o += fmt::format("scenario   {}  ({})\n", s.name, s.file);
  const double params = workload::count_params(s.model).total(s.model.layers);
  o += fmt::format("model      {}: {} parameters, {} layers, hidden {}, seq {}, batch {}, {}\n",
                   s.model.name, params >= 1e9 ? fmt::format("{:.2f} B", params / 1e9) : fmt::format("{:.3g} M", params / 1e6),
                   s.model.layers, s.model.hidden, s.training.seq_len,
                   s.training.global_batch, hw::dtype_name(s.training.precision));
  o += fmt::format("plan       {}\n", plan_summary(s, p));
  o += fmt::format("devices    {}\n\n", e.devices);

  o += fmt::format("step time  {:>12}\n", format_duration(e.step_time));
  // After a simulation the step is measured; the parts below stay the closed-form model's.
  if (std::fabs(e.step.total().v - e.step_time.v) > 1e-9 * e.step_time.v)
    o += fmt::format("  (closed-form breakdown, totalling {}:)\n", format_duration(e.step.total()));
  for (const auto& [name, d] : e.step.parts) {
    if (d.v <= 0) continue;
    o += fmt::format("  {:<18}{:>12}  {:5.1f} %\n", name, format_duration(d), pct(d / e.step_time));
  }
  if (e.groups.size() > 1) {
    o += "\nreplica groups (the slowest sets the step; the others wait)\n";
    for (std::size_t g = 0; g < e.groups.size(); ++g)
      o += fmt::format("  group {}: {} replica(s){} × {} micro-batches: pipeline {}\n", g,
                       e.groups[g].replicas / std::max(1, p.cp), p.cp > 1 ? fmt::format(" of cp {}", p.cp) : std::string(),
                       e.groups[g].micro_batches, format_duration(e.groups[g].pipeline));
  }
  o += fmt::format("\nthroughput {:.4g} tokens/s, {:.3g} TFLOP/s per device (model FLOPs), MFU {:.1f} %\n",
                   e.tokens_per_s, e.flops_per_device.v / 1e12, pct(e.mfu));
  o += fmt::format("bubble     {:.1f} % of the step\n", pct(e.bubble_fraction));
  if (s.model.moe()) o += routing_line(s.model, p);
  o += "\n";

  o += "memory per device (worst stage)\n";
  o += fmt::format("  {:<16}{:>7}{:>12}{:>12}{:>10}  {}\n", "pool", "count", "peak", "capacity", "headroom", "verdict");
  for (const auto& d : e.device_types) {
    if (d.count == 0) {
      o += fmt::format("  {:<16}{:>7}  (unused: {} idle devices)\n", d.pool, 0, d.idle);
      continue;
    }
    const double head = 1.0 - d.peak_memory / d.capacity;
    o += fmt::format("  {:<16}{:>7}{:>12}{:>12}{:>9.1f}%  {}{}\n", d.pool, d.count,
                     format_bytes(d.peak_memory), format_bytes(d.capacity), pct(head),
                     d.fits ? "fits" : "DOES NOT FIT",
                     d.idle > 0 ? fmt::format(" ({} idle)", d.idle) : "");
    std::string parts;
    for (const auto& [name, b] : d.memory.parts)
      if (b.v > 0) parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", name, format_bytes(b));
    o += fmt::format("    {}: {}\n", d.worst_stage, parts);
  }
  if (s.training.tokens > 0) {
    o += fmt::format("\ntrain      {:.4g} tokens in {}, {} ${:.4g}, {:.4g} MWh at TDP\n", s.training.tokens,
                     format_duration(e.time_to_train),
                     s.cost.mode == CostSpec::Mode::Rent ? "rented for" : "owned, costing",
                     e.cost_to_train_usd, e.energy_kwh / 1000.0);
    o += fmt::format("           with interruptions, checkpoints and restarts: {}, ${:.4g}\n",
                     format_duration(e.time_to_train / e.goodput.fraction),
                     e.cost_to_train_usd / e.goodput.fraction);
  }
  o += fmt::format("{}goodput    {:.1f} %: {}; checkpoint {} written in {}, every {}; restart {}\n",
                   s.training.tokens > 0 ? "" : "\n", pct(e.goodput.fraction),
                   std::isfinite(e.goodput.job_mtbf.v)
                       ? "an interruption every " + format_duration(e.goodput.job_mtbf)
                       : std::string("no interruptions"),
                   format_bytes(e.checkpoint), format_duration(e.goodput.checkpoint_write),
                   e.goodput.interval.v > 0 ? format_duration(e.goodput.interval) : std::string("never"),
                   format_duration(s.reliability.restart));
  if (s.reference) {
    const auto& ref = *s.reference;
    if (ref.step_time_s > 0) {
      const double err = e.step_time.v / ref.step_time_s - 1.0;
      o += fmt::format("\nreference  measured {} per step{}: predicted {:+.1f} %  ({})\n",
                       format_duration(Duration{ref.step_time_s}),
                       ref.tflops_per_device > 0 ? fmt::format(" ({:.1f} TFLOP/s per device)", ref.tflops_per_device)
                                                 : std::string(),
                       pct(err), ref.source);
    }
    if (ref.peak_memory.v > 0) {
      const Bytes pred = analytic::peak_memory_as(e, ref.peak_memory_kind);
      o += fmt::format("{}measured peak memory {} per device ({}), predicted {}: {:+.1f} %{}\n",
                       ref.step_time_s > 0 ? "           " : "\nreference  ", format_bytes(ref.peak_memory),
                       memory_kind_name(ref.peak_memory_kind), format_bytes(pred),
                       pct(pred.v / ref.peak_memory.v - 1.0),
                       ref.step_time_s > 0 ? "" : "  (" + ref.source + ")");
    }
  }
  if (!e.fits) o += "\nverdict    the plan does NOT fit in device memory (see above)\n";
  return o;
}

ordered_json estimate_object(const Scenario& s, const plan::Plan& p, const analytic::Estimate& e) {
  ordered_json j;
  j["scenario"] = s.name;
  j["file"] = s.file;
  j["model"] = s.model.name;
  j["parameters"] = workload::count_params(s.model).total(s.model.layers);
  j["plan"] = plan_summary(s, p);
  j["step_time_s"] = e.step_time.v;
  j["step_breakdown_s"] = breakdown_json(e.step);
  j["tokens_per_step"] = e.tokens_per_step;
  j["tokens_per_s"] = e.tokens_per_s;
  j["model_flops_per_step"] = e.model_flops_per_step.v;
  j["tflops_per_device"] = e.flops_per_device.v / 1e12;
  j["mfu"] = e.mfu;
  j["bubble_fraction"] = e.bubble_fraction;
  if (s.model.moe())
    j["moe_routing"] = {{"busiest_rank_load", workload::moe_rank_load(s.model, p.ep)},
                        {"dropless", s.model.dropless},
                        {"dropped_token_fraction", workload::moe_dropped_fraction(s.model)}};
  j["time_to_train_s"] = e.time_to_train.v;
  j["cost_to_train_usd"] = e.cost_to_train_usd;
  j["usd_per_hour"] = e.usd_per_hour;
  j["usd_per_million_tokens"] = e.usd_per_million_tokens;
  j["energy_kwh"] = e.energy_kwh;
  {
    const bool fails = std::isfinite(e.goodput.job_mtbf.v);
    j["goodput"] = {{"fraction", e.goodput.fraction},
                    {"job_mtbf_s", fails ? ordered_json(e.goodput.job_mtbf.v) : ordered_json(nullptr)},
                    {"checkpoint_bytes", e.checkpoint.v},
                    {"checkpoint_write_s", e.goodput.checkpoint_write.v},
                    {"checkpoint_interval_s", e.goodput.interval.v},
                    {"restart_s", s.reliability.restart.v},
                    {"effective_time_to_train_s", e.time_to_train.v / e.goodput.fraction},
                    {"effective_cost_to_train_usd", e.cost_to_train_usd / e.goodput.fraction}};
  }
  j["fits"] = e.fits;
  if (s.reference) {
    const auto& ref = *s.reference;
    j["reference"] = {{"step_time_s", ref.step_time_s},
                      {"tflops_per_device", ref.tflops_per_device},
                      {"source", ref.source},
                      {"step_time_error", ref.step_time_s > 0 ? ordered_json(e.step_time.v / ref.step_time_s - 1.0)
                                                              : ordered_json(nullptr)}};
    if (ref.peak_memory.v > 0) {
      const Bytes pred = analytic::peak_memory_as(e, ref.peak_memory_kind);
      j["reference"]["peak_memory_bytes"] = ref.peak_memory.v;
      j["reference"]["peak_memory_kind"] = memory_kind_name(ref.peak_memory_kind);
      j["reference"]["predicted_peak_memory_bytes"] = pred.v;
      j["reference"]["peak_memory_error"] = pred.v / ref.peak_memory.v - 1.0;
    }
  }
  j["devices"] = ordered_json::array();
  for (const auto& d : e.device_types) {
    ordered_json dj;
    dj["pool"] = d.pool;
    dj["device"] = d.device;
    dj["count"] = d.count;
    dj["idle"] = d.idle;
    dj["peak_memory_bytes"] = d.peak_memory.v;
    dj["memory_capacity_bytes"] = d.capacity.v;
    dj["fits"] = d.fits;
    dj["memory_breakdown_bytes"] = breakdown_json(d.memory);
    dj["worst_stage"] = d.worst_stage;
    j["devices"].push_back(dj);
  }
  j["groups"] = ordered_json::array();
  for (const auto& g : e.groups)
    j["groups"].push_back({{"replicas", g.replicas}, {"micro_batches", g.micro_batches},
                           {"pipeline_s", g.pipeline.v}});
  j["stages"] = ordered_json::array();
  for (const auto& st : e.stages) {
    ordered_json sj;
    sj["group"] = st.group;
    sj["stage"] = st.stage;
    sj["pool"] = st.pool;
    sj["tp"] = st.tp;
    sj["first_layer"] = st.first_layer;
    sj["layers"] = st.layers;
    sj["per_micro_batch_s"] = breakdown_json(st.per_micro_batch);
    sj["tp_comm_by_pass_s"] = breakdown_json(st.tp_by_pass);
    sj["dp_comm_s"] = st.dp_comm.v;
    sj["dp_exposed_s"] = st.dp_exposed.v;
    sj["optimizer_s"] = st.optimizer.v;
    sj["in_flight_micro_batches"] = st.in_flight;
    sj["peak_memory_bytes"] = st.memory.total().v;
    j["stages"].push_back(sj);
  }
  return j;
}

std::string estimate_json(const Scenario& s, const plan::Plan& p, const analytic::Estimate& e) {
  return estimate_object(s, p, e).dump(2) + "\n";
}

std::string catalog_text(const hw::Catalog& c) {
  std::string o = fmt::format("{:<16}{:>11}{:>11}{:>11}{:>11}{:>8}  {:<24}{:>9}\n", "device", "bf16 TF",
                              "fp8 TF", "memory", "mem bw", "node", "fabric / nic", "$/h");
  for (const auto& d : c.devices) {
    auto tf = [&](hw::Dtype dt) {
      auto p = d.peak_for(dt);
      return p ? fmt::format("{:.0f}", p->v / 1e12) : std::string("-");
    };
    o += fmt::format("{:<16}{:>11}{:>11}{:>11}{:>11}{:>8}  {:<24}{:>9.2f}\n", d.name,
                     d.peak_for(hw::Dtype::Bf16) ? tf(hw::Dtype::Bf16) : tf(hw::Dtype::Fp16) + "*",
                     tf(hw::Dtype::Fp8), format_bytes(d.memory), format_bandwidth(d.memory_bandwidth),
                     d.node.devices, d.node.fabric + " / " + d.node.nic, d.price_usd_per_hour);
  }
  o += "(* fp16: the device has no bf16)\n\n";
  o += fmt::format("{:<16}{:<11}{:>12}{:>10}{:>7}  {}\n", "link", "kind", "bandwidth", "latency", "eff", "what");
  for (const auto& l : c.links) {
    o += fmt::format("{:<16}{:<11}{:>12}{:>10}{:>7.2f}  {}\n", l.name, l.scale_up ? "scale-up" : "scale-out",
                     format_bandwidth(l.bandwidth), format_duration(l.latency), l.efficiency,
                     l.per_peer.v > 0 ? l.display + "; " + format_bandwidth(l.per_peer) + " per peer" : l.display);
    for (const auto& g : l.groups)  // measured collectives over part of a node (docs/cost-models.md#algorithms)
      o += fmt::format("{:<16}  measured: {} over {}: {} + size at {} bus bandwidth\n", "", hw::group_kind_name(g.kind),
                       g.ranks, format_duration(g.call), format_bandwidth(g.busbw));
  }
  return o;
}

std::string catalog_json(const hw::Catalog& c) {
  ordered_json j;
  j["devices"] = ordered_json::array();
  for (const auto& d : c.devices) {
    ordered_json dj;
    dj["name"] = d.name;
    dj["display"] = d.display;
    dj["vendor"] = d.vendor;
    ordered_json peak = ordered_json::object();
    for (const auto& [dt, r] : d.peak) peak[std::string(hw::dtype_name(dt))] = r.v;
    dj["peak_flops"] = peak;
    dj["memory_bytes"] = d.memory.v;
    dj["memory_bandwidth_bytes_per_s"] = d.memory_bandwidth.v;
    dj["tdp_w"] = d.tdp.v;
    dj["price_usd_per_hour"] = d.price_usd_per_hour;
    dj["purchase_usd"] = d.purchase_usd;
    dj["mtbf_hours"] = d.mtbf_hours;
    dj["node"] = {{"devices", d.node.devices}, {"fabric", d.node.fabric}, {"nics", d.node.nics}, {"nic", d.node.nic}};
    const auto& e = d.efficiency;
    dj["efficiency"] = {{"gemm", e.gemm},
                        {"gemm_fp8", e.main_loop(hw::Dtype::Fp8)},
                        {"gemm_fp8_precise", e.backward_main_loop(hw::Dtype::Fp8)},
                        {"gemm_half_dim", e.gemm_half_dim},
                        {"sms", e.sms},
                        {"tile_m", e.tile_m}, {"tile_n", e.tile_n}, {"tile_overhead_s", e.tile_overhead.v},
                        {"attention", e.attention}, {"attention_half_seq", e.attention_half_seq},
                        {"attention_head_half", e.attention_head_half}, {"attention_bwd", e.attention_bwd},
                        {"attention_bwd_wide", e.attention_bwd_wide},
                        {"attention_noncausal", e.attention_noncausal}, {"attention_fa2", e.attention_fa2},
                        {"memory", e.memory}, {"launch_overhead_s", e.launch_overhead.v},
                        {"host_overhead_s", e.host_overhead.v}, {"overlap_slowdown", e.overlap_slowdown}};
    // The op classes' own streaming fractions, as priced (`memory` where the class has none).
    auto fraction = [&](double f) { return f > 0 ? f : e.memory; };
    dj["efficiency"]["norm_memory"] = fraction(e.norm_memory);
    dj["efficiency"]["loss_memory"] = fraction(e.loss_memory);
    dj["efficiency"]["optimizer_memory"] = fraction(e.optimizer_memory);
    dj["efficiency"]["unvectorized_memory"] = fraction(e.unvectorized_memory);
    dj["efficiency"]["score_memory"] = fraction(e.score_memory);
    // The hierarchical dispatch's own rate; null where only the fabric's applies.
    dj["efficiency"]["dispatch_bandwidth_bytes_per_s"] =
        e.dispatch_bandwidth.v > 0 ? ordered_json(e.dispatch_bandwidth.v) : ordered_json(nullptr);
    if (!d.measured_gemms.empty()) {  // a calibrated profile's
      ordered_json mg = ordered_json::array();
      for (const auto& g : d.measured_gemms)
        mg.push_back({{"m", g.m}, {"n", g.n}, {"k", g.k}, {"dtype", hw::dtype_name(g.dtype)}, {"time_s", g.time.v}});
      dj["measured_gemms"] = mg;
    }
    dj["sources"] = d.sources;
    j["devices"].push_back(dj);
  }
  j["links"] = ordered_json::array();
  for (const auto& l : c.links) {
    ordered_json lj = {{"name", l.name}, {"display", l.display}, {"kind", l.scale_up ? "scale-up" : "scale-out"},
                       {"bandwidth_bytes_per_s", l.bandwidth.v}, {"latency_s", l.latency.v}, {"call_latency_s", l.call_latency.v},
                       {"efficiency", l.efficiency}};
    if (l.per_peer.v > 0) lj["per_peer_bytes_per_s"] = l.per_peer.v;
    if (!l.groups.empty()) {
      ordered_json gj = ordered_json::array();
      for (const auto& g : l.groups)
        gj.push_back({{"ranks", g.ranks}, {"collective", hw::group_kind_name(g.kind)}, {"call_s", g.call.v},
                      {"busbw_bytes_per_s", g.busbw.v}, {"source", g.source}});
      lj["groups"] = gj;
    }
    lj["source"] = l.source;
    j["links"].push_back(std::move(lj));
  }
  return j.dump(2) + "\n";
}

}  // namespace hetsim::report

#include "sim/analytic/estimate.hpp"

#include <algorithm>
#include <limits>

#include "models/workload/layer_ops.hpp"
#include "sim/analytic/stage_cost.hpp"

namespace hetsim::analytic {

Bytes peak_memory_as(const Estimate& e, MemoryKind k) {
  Bytes best{0};
  for (const auto& d : e.device_types) {
    if (d.count == 0) continue;
    const auto& m = d.memory;
    Bytes b = m.get("weights") + m.get("gradients") + m.get("optimizer") + m.get("activations") +
              m.get("transient");
    if (k != MemoryKind::Allocated) b += m.get("fragmentation");
    if (k == MemoryKind::Device) b = m.total();
    if (b > best) best = b;
  }
  return best;
}

Estimate estimate(const Scenario& s, const plan::Plan& p) {
  const auto& tr = s.training;
  const auto& cl = s.cluster;
  const hw::Dtype dt = tr.precision;
  const auto costs = stage_costs(s, p, /*with_calls=*/false);

  Estimate est;
  est.tokens_per_step = static_cast<double>(p.sequences_per_step()) * tr.seq_len;
  // Count the model FLOPs of the sequences the plan actually processes.
  est.model_flops_per_step = workload::model_flops_per_step(s.model, tr) *
                             (static_cast<double>(p.sequences_per_step()) / tr.global_batch);

  Duration pipe_max{0};
  cost::TimeBreakdown critical;  // decomposition of the slowest replica's pipeline
  Duration dp_exposed_max{0}, optimizer_max{0};
  const int v = p.schedule == cost::Schedule::Interleaved ? p.virtual_stages : 1;

  for (std::size_t gi = 0; gi < p.groups.size(); ++gi) {
    const auto& grp = p.groups[gi];
    const int pp = static_cast<int>(grp.stages.size());
    // Per stage and micro-batch: compute, recompute, exposed TP, and the PP messages (one
    // forward send to the next stage, one backward send to the previous; v of each when
    // interleaved).
    std::vector<cost::TimeBreakdown> per_mb(pp);
    for (int si = 0; si < pp; ++si) {
      const StageCost& c = costs[gi][si];
      const int L = grp.stages[si].layers;
      // (Interleaved, the first and the last stage also the wrap-around between them.)
      const Duration pp_comm = pipeline_sends(costs[gi], static_cast<std::size_t>(si), v);
      per_mb[si].add("forward", c.fwd(L));
      per_mb[si].add("backward", c.bwd(L));
      per_mb[si].add("recompute", c.recompute(L));
      per_mb[si].add("tp comm", c.tp(L));
      if (c.ep(L).v > 0) per_mb[si].add("ep comm", c.ep(L));
      if (c.cp(L).v > 0) per_mb[si].add("cp comm", c.cp(L));
      per_mb[si].add("pp comm", pp_comm);
    }

    // Pipeline time (docs/cost-models.md#pipeline): with c_i the per-micro-batch time of stage
    // i and m micro-batches, T = m·max c + (Σ c − max c)/v. Uniform stages give the closed form
    // (m + p − 1)·c for 1F1B and GPipe, and (m + (p − 1)/v)·c for interleaved 1F1B. Run as R
    // pipeline schedules of m/R micro-batches each (pipeline_runs), every run fills and drains:
    // T = m·max c + R·(Σ c − max c)/v.
    Duration cmax{0}, csum{0};
    int bottleneck = 0;
    for (int si = 0; si < pp; ++si) {
      const Duration c = per_mb[si].total();
      csum += c;
      if (c > cmax) { cmax = c; bottleneck = si; }
    }
    const double mb = grp.micro_batches;
    const Duration pipe = cmax * mb + (csum - cmax) * p.pipeline_runs / v;
    est.groups.push_back({grp.replicas, grp.micro_batches, pipe});
    if (pipe >= pipe_max) {
      pipe_max = pipe;
      const cost::TimeBreakdown& w = per_mb[bottleneck];
      critical = {};
      critical.add("compute", (w.get("forward") + w.get("backward")) * mb);
      critical.add("recompute", w.get("recompute") * mb);
      critical.add("tp comm", w.get("tp comm") * mb);
      if (w.get("ep comm").v > 0) critical.add("ep comm", w.get("ep comm") * mb);
      if (w.get("cp comm").v > 0) critical.add("cp comm", w.get("cp comm") * mb);
      critical.add("pp comm", w.get("pp comm") * mb);
      critical.add("pipeline bubble", pipe - cmax * mb);
    }

    // In 1F1B the stages before stage i are still draining their last backwards when stage i
    // has finished its own, and were already filling when its first forward began: its
    // gradient reduction and parameter gathers can hide behind those too.
    Duration drain{0}, fill{0};
    for (int si = 0; si < pp; ++si) {
      const plan::Stage& st = grp.stages[si];
      const StageCost& c = costs[gi][si];
      StageEstimate se;
      se.group = static_cast<int>(gi);
      se.stage = si;
      se.pool = cl.pools[st.pool].name;
      se.tp = st.tp;
      se.first_layer = st.first_layer;
      se.layers = st.layers;
      se.per_micro_batch = per_mb[si];
      se.tp_by_pass.add("forward", c.layer_tp_fwd * st.layers + c.regather * c.regathers_fwd);
      se.tp_by_pass.add("backward", c.layer_tp_bwd * st.layers + c.regather * c.regathers_bwd);
      se.tp_by_pass.add("recompute", c.layer_tp_recompute * st.layers);
      se.tp_by_pass.add("embedding and head", c.emb_tp + c.head_tp);  // both passes
      // ZeRO ≤ 1 syncs once per step. ZeRO 2 reduce-scatters the gradients after every
      // micro-batch (they are not kept whole); ZeRO 3 also gathers the weights before every
      // forward and every backward (docs/cost-models.md#data-parallel-sync).
      const double mb_count = grp.micro_batches;
      const double reduces = p.zero >= 2 ? mb_count : 1;
      const double gathers = p.zero >= 3 ? 2 * mb_count : 1;
      // Hybrid sharding adds the all-reduce of the shards across groups once per step
      // (StageCost::dp_cross; 0 otherwise).
      se.dp_comm = c.dp_reduce * reduces + c.dp_gather * gathers + c.dp_cross;
      if (p.overlap_grad_reduce) {
        // Buckets are reduced as a backward produces them: the last bucket starts after the
        // stage's own backward and can hide only behind the drain of the stages before it (all
        // of it when the stage has one bucket, as Megatron's later pipeline stages do); the
        // first bucket's gather must be in before the stage's first forward, behind the fill.
        const double bucket = std::min(1.0, c.bucket / std::max(1.0, c.params));
        const Duration bwd = c.bwd(st.layers) + c.recompute(st.layers);
        const Duration fwd = c.fwd(st.layers);
        // While a bucket's collective runs beside the compute it hides behind, the compute
        // loses overlap_slowdown of its speed (the collective's kernels hold SMs).
        const double slow = cl.pools[st.pool].device.efficiency.overlap_slowdown;
        // `own`: the stage's compute the collectives run beside, `own_comm` its blocking TP, CP
        // and EP collectives in between (the DP stream runs on through them); `other`: the other
        // stages' drain or fill, which the last (first) bucket can still hide behind.
        auto exposed = [&](Duration comm, Duration own, Duration own_comm, Duration other) {
          const Duration hide = own + own_comm + other;
          return max(max(comm - hide, comm * bucket - other), Duration{0}) + min(comm, own + other) * slow;
        };
        if (p.zero <= 1) {
          // Chunk by chunk (Megatron-Core syncs each model chunk's gradients once its last
          // backward has run, one DDP per chunk; docs/cost-models.md#data-parallel-sync). The
          // stage's last backward is chunk 0's of the last micro-batch; chunk c's ran before the
          // last round's backwards of the chunks below it, g = min(pp, micro-batches) of each:
          // its reduce can start during its own last backward (bucket by bucket, the chunk's last
          // bucket after it) and hides behind those, and the DP stream takes the chunks in turn.
          // The first forwards mirror it for the gathers. (With v = 1 it is `exposed` above.)
          const int g = std::min(pp, p.run_micro_batches(grp));
          // `per_layer`: a layer's pass; the embedding's runs in the stage's first chunk (the
          // first stage's), the head's in its last (the last stage's): zero elsewhere.
          // `per_layer_comm`, `edge_comm`: the blocking collectives among them (the embedding's
          // and head's together, on the chunks that hold them).
          auto chunked = [&](Duration comm, Duration per_layer, Duration emb, Duration head, Duration per_layer_comm,
                             Duration edge_comm, Duration other) {
            const Duration pass = per_layer * st.layers + emb + head;
            const Duration pass_comm = per_layer_comm * st.layers + edge_comm;
            if (v == 1 || comm.v <= 0) return exposed(comm, pass, pass_comm, other);
            // Per chunk: its parameters, its pass of one micro-batch, and the end of its last
            // one relative to the end of the stage's (chunk 0's): the last round's passes of the
            // chunks below it come after it.
            std::vector<double> w(static_cast<std::size_t>(v));
            std::vector<Duration> unit(static_cast<std::size_t>(v)), end(static_cast<std::size_t>(v));
            double wsum = 0;
            Duration below{0};
            for (int ch = 0; ch < v; ++ch) {
              const auto i = static_cast<std::size_t>(ch);
              const int layers = st.layers / v + (ch < st.layers % v ? 1 : 0);
              const bool edge = (ch == 0 && emb.v > 0) || (ch == v - 1 && head.v > 0);
              unit[i] = (per_layer + per_layer_comm) * layers + (ch == 0 ? emb : Duration{0}) +
                        (ch == v - 1 ? head : Duration{0}) + (edge ? edge_comm : Duration{0});
              end[i] = Duration{0} - below;
              below += unit[i] * static_cast<double>(g);
              w[i] = c.params_layer * layers + (si == 0 && ch == 0 ? c.params_emb : 0.0) +
                     (si == pp - 1 && ch == v - 1 ? c.params_head : 0.0);
              wsum += w[i];
            }
            if (wsum <= 0) return exposed(comm, pass, pass_comm, other);
            double finish = -std::numeric_limits<double>::infinity();
            for (int ch = v - 1; ch >= 0; --ch) {
              const auto i = static_cast<std::size_t>(ch);
              const Duration r = comm * (w[i] / wsum);
              const double last_bucket = std::min(1.0, c.bucket / std::max(1.0, w[i]));
              const double start = std::max(finish, (end[i] - unit[i]).v);
              finish = std::max(start + r.v, (end[i] + r * last_bucket).v);
            }
            // (The slow-down is the compute's: the window less its collectives.)
            const Duration window = Duration{0} - (end.back() - unit.back());
            const Duration busy = pass.v > 0 ? window * (pass / (pass + pass_comm)) : Duration{0};
            return max(Duration{finish} - other, Duration{0}) + min(comm, busy + other) * slow;
          };
          // A pass's blocking collectives: per layer, and the embedding's and head's (half a
          // step's each way, as the task graph splits them).
          const Duration comm_bwd = c.layer_tp_bwd + c.layer_tp_recompute + c.layer_cp_bwd + c.layer_cp_recompute +
                                    c.layer_ep_bwd + c.layer_ep_recompute;
          const Duration comm_fwd = c.layer_tp_fwd + c.layer_cp_fwd + c.layer_ep_fwd;
          const Duration edge_tp = (c.emb_tp + c.head_tp) / 2.0;
          se.dp_exposed =
              chunked(c.dp_reduce, c.layer_bwd + c.layer_recompute, c.emb_bwd, c.head_bwd, comm_bwd, edge_tp, drain) +
              chunked(c.dp_gather, c.layer_fwd, c.emb_fwd, c.head_fwd, comm_fwd, edge_tp, fill);
        } else {
          // One DP stream carries each micro-batch's collectives while the stage computes the
          // micro-batches around them: what exceeds a micro-batch's compute is exposed.
          const Duration load = c.dp_reduce + (p.zero >= 3 ? c.dp_gather * 2 : Duration{0});
          se.dp_exposed = exposed(load, fwd + bwd, Duration{0}, Duration{0}) * mb_count;
          if (p.zero == 2) se.dp_exposed += exposed(c.dp_gather, fwd, Duration{0}, fill);
          // The shards' all-reduce follows each layer's last reduce-scatter on the same
          // stream: it hides behind what of the last backward that reduce leaves, and the drain.
          if (c.dp_cross.v > 0)
            se.dp_exposed += exposed(c.dp_cross, max(bwd - c.dp_reduce, Duration{0}), Duration{0}, drain);
        }
      } else {
        se.dp_exposed = se.dp_comm;
      }
      // (Interleaved, only a stage's first chunk's backward of the last micro-batch follows the
      // later stages' last, and its first chunk's forward of the first precedes theirs: 1/v.)
      drain += (per_mb[si].get("backward") + per_mb[si].get("recompute")) / static_cast<double>(v);
      fill += per_mb[si].get("forward") / static_cast<double>(v);
      se.optimizer = c.optimizer;
      dp_exposed_max = max(dp_exposed_max, se.dp_exposed);
      optimizer_max = max(optimizer_max, se.optimizer);

      se.in_flight = cost::in_flight_micro_batches(p.schedule, si, pp, p.run_micro_batches(grp), v);
      cost::DeviceMemoryInput mi = c.memory;
      mi.activations_per_micro_batch = c.act_per_layer * st.layers + c.act_edge;
      mi.in_flight = se.in_flight;
      se.memory = cost::device_memory(mi);
      est.stages.push_back(std::move(se));
    }
  }

  est.step = critical;
  est.step.add("dp comm", dp_exposed_max);
  est.step.add("optimizer", optimizer_max);
  est.step_time = est.step.total();
  est.bubble_fraction = est.step_time.v > 0 ? est.step.get("pipeline bubble") / est.step_time : 0;
  est.tokens_per_s = est.tokens_per_step / est.step_time.v;

  // Per device type: count, peak memory of the worst stage, verdict.
  double peak_sum = 0, watts = 0, usd_per_hour = 0, interruptions_per_hour = 0;
  for (std::size_t pi = 0; pi < cl.pools.size(); ++pi) {
    const hw::PoolSpec& pool = cl.pools[pi];
    DeviceEstimate de;
    de.pool = pool.name;
    de.device = pool.device.name;
    de.capacity = pool.device.memory;
    for (const auto& g : p.groups)
      for (const auto& st : g.stages)
        if (st.pool == static_cast<int>(pi)) de.count += g.replicas * st.tp;
    de.idle = pool.devices() - de.count;
    for (const auto& se : est.stages) {
      if (se.pool != pool.name) continue;
      const Bytes peak = se.memory.total();
      if (peak > de.peak_memory) {
        de.peak_memory = peak;
        de.memory = se.memory;
        de.worst_stage = "group " + std::to_string(se.group) + " stage " + std::to_string(se.stage);
      }
    }
    de.fits = de.count == 0 || de.peak_memory <= de.capacity;
    est.fits = est.fits && de.fits;
    est.devices += de.count;
    peak_sum += de.count * pool.device.peak_for(dt).value_or(FlopRate{0}).v;
    watts += de.count * pool.device.tdp.v;
    // Every used device can interrupt the job (docs/cost-models.md#goodput).
    const double mtbf = s.reliability.mtbf_hours > 0        ? s.reliability.mtbf_hours
                        : pool.device.mtbf_hours > 0 ? pool.device.mtbf_hours
                                                     : ReliabilitySpec::kDefaultMtbfHours;
    interruptions_per_hour += de.count / mtbf;
    const double hourly =
        s.cost.mode == CostSpec::Mode::Rent
            ? pool.device.price_usd_per_hour
            : pool.device.purchase_usd / (s.cost.amortisation_years * 365.25 * 24) +
                  pool.device.tdp.v * s.cost.pue / 1000.0 * s.cost.electricity_usd_per_kwh;
    // Rented devices are paid while used; owned ones cost their amortisation (and, idle, no
    // power) whether the plan uses them or not.
    usd_per_hour += de.count * hourly;
    if (s.cost.mode == CostSpec::Mode::Own)
      usd_per_hour += de.idle * pool.device.purchase_usd / (s.cost.amortisation_years * 365.25 * 24);
    est.device_types.push_back(std::move(de));
  }
  const double model_rate = est.model_flops_per_step.v / est.step_time.v;
  est.flops_per_device = FlopRate{model_rate / std::max(1, est.devices)};
  est.mfu = peak_sum > 0 ? model_rate / peak_sum : 0;
  est.usd_per_hour = usd_per_hour;
  est.usd_per_million_tokens = usd_per_hour / 3600.0 / est.tokens_per_s * 1e6;
  // Goodput: a checkpoint holds the weights and the optimizer state (as wide as the framework
  // keeps it: [memory] optimizer_bytes), written by all used devices together.
  {
    const cost::StateBytes sb = cost::state_bytes(dt, tr.optimizer, tr.autocast);
    est.checkpoint = Bytes{workload::count_params(s.model).total(s.model.layers) *
                           (sb.weights + s.memory.optimizer_bytes.value_or(sb.optimizer))};
    cost::GoodputInput gi;
    gi.interruptions_per_hour = interruptions_per_hour;
    gi.checkpoint = est.checkpoint;
    gi.write_bandwidth = s.reliability.checkpoint_bandwidth_per_device * std::max(1, est.devices);
    gi.restart = s.reliability.restart;
    gi.interval = s.reliability.checkpoint_interval;
    est.goodput = cost::goodput(gi);
  }
  if (tr.tokens > 0) {
    est.time_to_train = Duration{tr.tokens / est.tokens_per_s};
    const double hours = est.time_to_train.v / 3600.0;
    est.cost_to_train_usd = usd_per_hour * hours;
    est.energy_kwh = watts * s.cost.pue / 1000.0 * hours;
  }
  return est;
}

}  // namespace hetsim::analytic

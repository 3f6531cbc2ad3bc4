#include "sim/plan/buy.hpp"

#include "sim/plan/buy_pricing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <limits>
#include <map>

#include "models/cost/memory.hpp"
#include "models/workload/model_spec.hpp"

namespace hetsim::buy {
namespace {

// Matmul FLOPs per token of forward + backward (6 per weight): the layers' projections (the
// experts a token visits) and the output head. Attention scores, norms and element-wise work
// only add to it, so the bound stays below any plan's time.
double matmul_flops_per_token(const workload::ModelSpec& m) {
  const double h = m.hidden;
  const double mats = m.activation == workload::Activation::SwiGlu ? 3 : 2;
  double attention = 2 * h * m.q_width() + 2 * h * m.kv_width();
  if (m.mla()) {
    // Multi-head latent attention's projections (docs/cost-models.md#parameters), no norms.
    const double heads = m.heads, ql = m.q_lora_rank, kl = m.kv_lora_rank, rope = m.qk_rope_dim;
    const double hd = m.head_dim(), v = m.v_head_dim;
    attention = (ql > 0 ? h * ql + ql * heads * hd : h * heads * hd) + h * (kl + rope) + kl * heads * (hd - rope + v) +
                heads * v * h;
  }
  const double per_layer = attention + ((m.moe() ? m.top_k : 1) * m.ffn_hidden + m.shared_width()) * mats * h;
  // A MoE model's dense layers (first_dense_layers, moe_layer_freq) run their own MLP instead.
  const int moe_layers = m.moe() ? m.moe_layers(0, m.layers) : m.layers;
  const double dense_layer = attention + (m.dense_ffn_hidden > 0 ? m.dense_ffn_hidden : m.ffn_hidden) * mats * h;
  return 6.0 * (moe_layers * per_layer + (m.layers - moe_layers) * dense_layer + static_cast<double>(m.vocab) * h);
}

struct Island {
  double peak = 0;    ///< the cost model's best GEMM FLOP/s in the training's format
  double memory = 0;  ///< bytes
};

// Groups of devices that may train together: all of them, or one vendor's each.
std::vector<Island> islands(const hw::ClusterSpec& c, hw::Dtype dt, bool same_vendor) {
  std::map<std::string, Island> by;
  for (const auto& p : c.pools) {
    const auto peak = p.device.peak_for(dt);
    if (!peak || p.devices() == 0) continue;
    Island& i = by[same_vendor ? p.device.vendor : std::string()];
    // No op of the cost model runs faster than peak × the catalogue's GEMM efficiency (the
    // tile model's main loop is that rate; tiles and launches only slow it). In fp8, GEMMs kept
    // in 16 bits run at the 16-bit peak (≤ the fp8 one) × gemm: the larger fraction bounds both.
    const auto& e = p.device.efficiency;
    i.peak += peak->v * std::max(e.gemm, e.main_loop(dt)) * p.devices();
    i.memory += p.device.memory.v * p.devices();
  }
  std::vector<Island> out;
  for (auto& [k, v] : by) out.push_back(v);
  return out;
}

}  // namespace

double lead_time_s(const PurchaseSpec& ps, const std::vector<int>& nodes) {
  double days = 0;
  for (std::size_t k = 0; k < nodes.size() && k < ps.candidates.size(); ++k)
    if (nodes[k] > 0) days = std::max(days, ps.candidates[k].lead_time_days);
  return days * 86400.0;
}

double composition_count(const PurchaseSpec& ps) {
  double n = 1;
  for (const auto& c : ps.candidates) n *= c.max_nodes / c.node_step + 1;
  return n;
}

double time_lower_bound_s(const Scenario& s, bool same_vendor) {
  double peak = 0;
  for (const auto& i : islands(s.cluster, s.training.precision, same_vendor)) peak = std::max(peak, i.peak);
  if (peak <= 0) return std::numeric_limits<double>::infinity();
  return s.training.tokens * matmul_flops_per_token(s.model) / peak;
}

Result search(const Scenario& s, const Options& o) {
  const auto began = std::chrono::steady_clock::now();
  Result r;
  const PurchaseSpec& ps = *s.purchase;
  const bool rent = s.cost.mode == CostSpec::Mode::Rent;
  const std::size_t K = ps.candidates.size();
  const std::size_t owned = s.cluster.pools.size();

  // Every composition: 0, step, 2·step, … ≤ max_nodes nodes of each candidate.
  std::vector<std::vector<int>> all;
  {
    if (composition_count(ps) > static_cast<double>(o.max_compositions)) return r;  // sim/api refuses it first
    const auto n = static_cast<std::size_t>(composition_count(ps));
    std::vector<int> cur(K, 0);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t rest = i;
      for (std::size_t k = 0; k < K; ++k) {
        const std::size_t choices = static_cast<std::size_t>(ps.candidates[k].max_nodes / ps.candidates[k].node_step + 1);
        cur[k] = static_cast<int>(rest % choices) * ps.candidates[k].node_step;
        rest /= choices;
      }
      const bool buys = std::any_of(cur.begin(), cur.end(), [](int x) { return x > 0; });
      if (buys || owned > 0) all.push_back(cur);
    }
  }
  r.compositions = all.size();

  struct Screened {
    std::vector<int> nodes;
    Scenario scenario;
    double t_lb = 0, c_lb = 0, capex = 0, power_kw = 0;
    double lead = 0;  ///< lead time, s: the time axis bound is lead + t_lb
  };
  const cost::StateBytes sb = cost::state_bytes(s.training.precision, s.training.optimizer, s.training.autocast);
  // (A lower bound: the smaller of the two gradient widths for every parameter.)
  const double state = workload::count_params(s.model).total(s.model.layers) *
                       (sb.weights + std::min(s.memory.gradient_bytes, s.memory.expert_gradient_bytes.value_or(s.memory.gradient_bytes)) +
                        s.memory.optimizer_bytes.value_or(sb.optimizer));
  std::vector<Screened> todo, refused;  // refused: by the budget or the power limit alone
  auto big_enough = [&](const Screened& c) {
    double memory = 0;
    for (const auto& i : islands(c.scenario.cluster, s.training.precision, o.same_vendor)) memory = std::max(memory, i.memory);
    return std::isfinite(c.t_lb) && memory >= state;
  };
  // Compositions left out for their prices or bounds, which other prices could bring in.
  auto unplanned = [&](const Screened& c) { r.unplanned.push_back({c.nodes, c.t_lb}); };
  for (const auto& nodes : all) {
    Screened c;
    c.nodes = nodes;
    c.scenario = composition_scenario(s, nodes);
    c.power_kw = installed_kw(s, nodes);
    c.capex = bought_cost(s, nodes).capex;
    c.t_lb = time_lower_bound_s(c.scenario, o.same_vendor);
    c.lead = lead_time_s(ps, nodes);
    c.c_lb = std::isfinite(c.t_lb) ? cost_lower_bound(s, nodes, c.t_lb) : c.capex;
    if (ps.power_kw > 0 && c.power_kw > ps.power_kw) {
      ++r.over_power;
      if (big_enough(c)) {
        unplanned(c);
        refused.push_back(std::move(c));
      }
      continue;
    }
    // The budget: the capex when buying; the rent over the run (at least the lower bound's)
    // when renting.
    if (ps.budget_usd > 0 && (rent ? c.c_lb : c.capex) > ps.budget_usd) {
      ++r.over_budget;
      if (big_enough(c)) {
        unplanned(c);
        refused.push_back(std::move(c));
      }
      continue;
    }
    if (!big_enough(c)) {
      ++r.too_small;
      continue;
    }
    todo.push_back(std::move(c));
  }
  // Fastest bounds first: the points found early prune the slower compositions.
  // Among equal bounds (a composition that adds another vendor's devices to the same island)
  // the cheaper first, so that it prunes the dearer.
  std::stable_sort(todo.begin(), todo.end(), [](const Screened& a, const Screened& b) {
    return a.lead + a.t_lb < b.lead + b.t_lb || (a.lead + a.t_lb == b.lead + b.t_lb && a.c_lb < b.c_lb);
  });

  planner::Options po;
  po.top = 1;
  po.verify = o.verify;
  po.same_vendor = o.same_vendor;
  po.stop = o.stop;
  // What re-pricing needs of a planned composition: its plan, time and power (buy_pricing.hpp
  // prices it, for the search as for the sensitivity and the what-if).
  auto planned = [&](const Screened& c, planner::Candidate best) {
    Priced q;
    q.nodes = c.nodes;
    q.best = std::move(best);
    const analytic::Estimate& e = q.best.estimate;
    // The verified step when the engine ran: the estimate's figures scale with it.
    const double scale = q.best.verified() ? q.best.simulated_step_s / e.step_time.v : 1.0;
    q.time_s = e.time_to_train.v * scale / e.goodput.fraction;
    for (std::size_t pi = 0; pi < e.device_types.size(); ++pi) {
      const double kw = e.device_types[pi].count * c.scenario.cluster.pools[pi].device.tdp.v / 1000.0;
      q.kw_used += kw;
      if (pi >= owned) q.kw_bought += kw;
      if (pi < owned) q.idle_owned_devices += e.device_types[pi].idle;
    }
    return q;
  };
  std::vector<Point> front;
  auto pruned = [&](const Screened& c) {
    return !o.exhaustive && std::any_of(front.begin(), front.end(), [&](const Point& p) {
      return p.trained_in_s <= c.lead + c.t_lb && p.total_usd <= c.c_lb;
    });
  };
  auto dominates = [](const Point& a, const Point& b) {
    return a.trained_in_s <= b.trained_in_s && a.total_usd <= b.total_usd &&
           (a.trained_in_s < b.trained_in_s || a.total_usd < b.total_usd);
  };
  // The planner runs on two compositions at a time (it shares nothing); the front they join
  // is updated in composition order, so the result does not depend on the timing.
  constexpr std::size_t kWorkers = 2;
  std::size_t next = 0;
  while (next < todo.size()) {
    if (o.stop.stop_requested()) {
      r.stopped = true;
      for (std::size_t i = next; i < todo.size(); ++i) unplanned(todo[i]);
      break;
    }
    if (o.progress) o.progress(static_cast<double>(next) / static_cast<double>(todo.size()));
    std::vector<std::size_t> batch;
    while (next < todo.size() && batch.size() < kWorkers) {
      if (pruned(todo[next])) {
        ++r.pruned;
        unplanned(todo[next]);
      } else {
        batch.push_back(next);
      }
      ++next;
    }
    std::vector<std::future<planner::Result>> runs;
    for (std::size_t i : batch)
      runs.push_back(std::async(std::launch::async, [&, i] { return planner::search(todo[i].scenario, po); }));
    bool changed = false;
    for (std::size_t b = 0; b < batch.size(); ++b) {
      Screened& c = todo[batch[b]];
      planner::Result pr = runs[b].get();
      ++r.planned;
      if (pr.top.empty()) {
        ++r.none_fits;
        continue;
      }
      r.planned_points.push_back(planned(c, std::move(pr.top.front())));
      Point p = price(s, r.planned_points.back(), std::move(c.scenario));
      if (!within_limits(s, p)) {  // renting: the rent over the planned time is over the budget
        ++r.over_budget;
        continue;
      }
      if (std::any_of(front.begin(), front.end(), [&](const Point& q) {
            return dominates(q, p) || (q.trained_in_s == p.trained_in_s && q.total_usd == p.total_usd);
          }))
        continue;
      std::erase_if(front, [&](const Point& q) { return dominates(p, q); });
      front.push_back(std::move(p));
      changed = true;
      if (r.first_point_s < 0)
        r.first_point_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    }
    if (changed && o.on_front) {
      std::vector<Point> sofar = front;
      sort_front(sofar);
      o.on_front(sofar);
    }
  }
  if (o.progress) o.progress(1.0);
  sort_front(front);
  r.front = std::move(front);
  if (r.front.empty()) {
    // Nothing within the limits: the cheapest composition over them that has a plan, so the
    // report can say what the answer would cost. A few tries, least capex (rent: least
    // lower-bound cost) first, then least power.
    std::stable_sort(refused.begin(), refused.end(), [](const Screened& a, const Screened& b) {
      return a.c_lb < b.c_lb || (a.c_lb == b.c_lb && a.power_kw < b.power_kw);
    });
    constexpr std::size_t kTries = 8;
    for (std::size_t i = 0; i < refused.size() && i < kTries && !r.stopped; ++i) {
      if (o.stop.stop_requested()) {
        r.stopped = true;
        break;
      }
      planner::Result pr = planner::search(refused[i].scenario, po);
      if (pr.top.empty()) continue;
      const Priced q = planned(refused[i], std::move(pr.top.front()));
      r.smallest_fit = price(s, q, std::move(refused[i].scenario));
      break;
    }
    return r;
  }
  const std::vector<std::size_t> order = ranking(r.front, ps);
  r.recommended = order[0];
  r.runner_up = order.size() > 1 ? order[1] : order[0];
  r.sensitivity = sensitivity(s, r);
  return r;
}

}  // namespace hetsim::buy

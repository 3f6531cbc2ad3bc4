#include "sim/simgrid/flows.hpp"

#include <algorithm>

namespace hetsim::platform {
namespace {

using schedule::TaskKind;

// The bandwidth the cost model priced a route with (sim/analytic/stage_cost.cpp): the fabric
// within a node; between nodes the NIC share per device, divided by the oversubscription (the
// slower end's).
double priced_bandwidth(const hw::ClusterSpec& c, const Platform& p, int a, int b) {
  const Host& x = p.hosts[static_cast<std::size_t>(a)];
  const Host& y = p.hosts[static_cast<std::size_t>(b)];
  const auto& px = c.pools[static_cast<std::size_t>(x.pool)];
  const auto& py = c.pools[static_cast<std::size_t>(y.pool)];
  if (x.pool == y.pool && x.node == y.node) return px.fabric.effective().v;
  auto nic = [&](const hw::PoolSpec& q) {
    return q.nic_bandwidth_per_device().v * q.nic.efficiency / std::max(1.0, c.network.oversubscription);
  };
  return std::min(nic(px), nic(py));
}

}  // namespace

Result<Decomposition> decompose(const schedule::TaskGraph& g, const hw::ClusterSpec& c, const Platform& p) {
  Decomposition d;
  // Placement: each pool's devices in the order the graph lists them.
  std::vector<int> used(c.pools.size(), 0);
  for (const auto& dev : g.devices) {
    const auto pool = static_cast<std::size_t>(dev.pool);
    if (used[pool] + dev.count > c.pools[pool].devices())
      return Diagnostic{{}, "", "the plan needs more devices of pool '" + c.pools[pool].name + "' than it has (" +
                                    std::to_string(c.pools[pool].devices()) + ")",
                        ""};
    d.first_host.push_back(p.first_host[pool] + used[pool]);
    used[pool] += dev.count;
  }
  d.work.resize(g.size());
  d.owner.resize(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) d.owner[i] = i;
  const auto host = [&](std::uint32_t dev, int member) { return d.first_host[dev] + member; };
  auto flow = [&](TaskWork& w, int a, int b, schedule::SimTime duration) {
    const auto r = p.route(a, b);
    const double t = static_cast<double>(duration) * 1e-9 - p.latency(r);
    w.flows.push_back({a, b, std::max(1.0, t * priced_bandwidth(c, p, a, b))});
  };
  // A ring over `members` (hosts): each sends to the next.
  auto ring = [&](TaskWork& w, const std::vector<int>& members, schedule::SimTime duration) {
    if (members.size() < 2) return;
    for (std::size_t k = 0; k < members.size(); ++k) flow(w, members[k], members[(k + 1) % members.size()], duration);
  };
  // The flows of one collective over `members` by the algorithm the cost model chose
  // (models/cost/collectives.cpp): a ring; a tree (each child reduces up to its parent and gets
  // the result back down); hierarchical (a ring inside each node over the fabric, and across
  // nodes one ring per local position, each over its own NIC).
  auto collective = [&](TaskWork& w, const std::vector<int>& members, cost::Algorithm alg,
                        schedule::SimTime duration) {
    if (members.size() < 2) return;
    if (alg == cost::Algorithm::Tree) {
      for (std::size_t k = 1; k < members.size(); ++k) {
        flow(w, members[k], members[(k - 1) / 2], duration);
        flow(w, members[(k - 1) / 2], members[k], duration);
      }
      return;
    }
    if (alg != cost::Algorithm::Hierarchical) {
      ring(w, members, duration);
      return;
    }
    std::vector<std::pair<std::pair<int, int>, std::vector<int>>> nodes;  // (pool, node) → members
    for (int m : members) {
      const auto& h = p.hosts[static_cast<std::size_t>(m)];
      auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& e) { return e.first == std::pair{h.pool, h.node}; });
      if (it == nodes.end()) it = nodes.insert(nodes.end(), {{h.pool, h.node}, {}});
      it->second.push_back(m);
    }
    std::size_t most = 0;
    for (const auto& [key, local] : nodes) {
      ring(w, local, duration);
      most = std::max(most, local.size());
    }
    for (std::size_t j = 0; j < most; ++j) {
      std::vector<int> across;
      for (const auto& [key, local] : nodes)
        if (j < local.size()) across.push_back(local[j]);
      ring(w, across, duration);
    }
  };

  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto& dev = g.devices[t.device];
    TaskWork& w = d.work[i];
    switch (t.kind) {
      case TaskKind::TpCollective:
        for (int r = 0; r < dev.replicas; ++r) {
          std::vector<int> members;
          for (int k = 0; k < dev.tp; ++k) members.push_back(host(t.device, r * dev.tp + k));
          collective(w, members, t.algorithm, t.duration);
        }
        break;
      case TaskKind::GradReduce:
      case TaskKind::ParamGather: {
        // The replicas of each tp rank; a collective across simulated devices (several replica
        // groups) is one ring per tp rank over all of them, carried by its first member.
        std::vector<std::uint32_t> tasks{i};
        if (t.collective != schedule::kNoCollective) {
          tasks = g.collectives[t.collective];
          if (tasks.front() != i) {
            d.owner[i] = tasks.front();
            continue;
          }
        }
        int tp = 1;
        for (std::uint32_t m : tasks) tp = std::max(tp, g.devices[g.tasks[m].device].tp);
        for (int k = 0; k < tp; ++k) {
          std::vector<int> members;
          for (std::uint32_t m : tasks) {
            const auto& md = g.devices[g.tasks[m].device];
            if (k >= md.tp) continue;
            for (int r = 0; r < md.replicas; ++r) members.push_back(host(g.tasks[m].device, r * md.tp + k));
          }
          collective(w, members, t.algorithm, t.duration);
        }
        break;
      }
      case TaskKind::SendActivation:
      case TaskKind::SendGradient: {
        // To the device of the first successor elsewhere: rank k of replica r feeds rank k mod
        // the receiver's tp of the same replica.
        std::uint32_t to = t.device;
        for (std::uint32_t k = g.succ_begin[i]; k < g.succ_begin[i + 1] && to == t.device; ++k)
          to = g.tasks[g.succ[k]].device;
        if (to == t.device) break;
        const auto& rd = g.devices[to];
        for (int m = 0; m < dev.count; ++m) {
          const int r = m / dev.tp, k = m % dev.tp;
          flow(w, host(t.device, m), host(to, std::min(r, rd.replicas - 1) * rd.tp + k % rd.tp), t.duration);
        }
        break;
      }
      default:
        break;
    }
    if (w.flows.empty() && d.owner[i] == i) w.exec_host = host(t.device, 0);
    d.flows += w.flows.size();
    d.execs += w.exec_host >= 0 ? 1 : 0;
  }
  return d;
}

}  // namespace hetsim::platform

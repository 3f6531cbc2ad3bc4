#include "sim/simgrid/flows.hpp"

#include "sim/schedule/unfold.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>

namespace hetsim::platform {
namespace {

using schedule::TaskKind;

// The bandwidth the cost model priced a route with (sim/analytic/detail/links.cpp): the fabric
// within a node (on a full mesh, what a device exchanging with `peers` node-mates at once
// reaches: cost::LinkCost::reach); between nodes the NIC share per device, divided by
// the oversubscription (the slower end's).
double priced_bandwidth(const hw::ClusterSpec& c, const Platform& p, int a, int b, int peers) {
  const Host& x = p.hosts[static_cast<std::size_t>(a)];
  const Host& y = p.hosts[static_cast<std::size_t>(b)];
  const auto& px = c.pools[static_cast<std::size_t>(x.pool)];
  const auto& py = c.pools[static_cast<std::size_t>(y.pool)];
  if (x.pool == y.pool && x.node == y.node) return cost::fabric_link(px.fabric).reach(peers).v;
  auto nic = [&](const hw::PoolSpec& q) {
    return q.nic_bandwidth_per_device().v * q.nic.efficiency / std::max(1.0, c.network.oversubscription);
  };
  return std::min(nic(px), nic(py));
}

// How many times a ring passes a collective's buffer round (models/cost/collectives.cpp).
double ring_rounds(cost::Collective c) { return c == cost::Collective::AllReduce ? 2.0 : 1.0; }

}  // namespace

Result<Decomposition> decompose(const schedule::TaskGraph& g, const hw::ClusterSpec& c, const Platform& p) {
  Decomposition d;
  // Placement: each pool's devices in the order the graph lists them. Tensor-parallel groups
  // never straddle a node (the cost model keeps TP on the fabric): hw::BlockPlacer.
  hw::BlockPlacer placer(c);
  for (const auto& dev : g.devices) {
    const auto pool = static_cast<std::size_t>(dev.pool);
    const int start = placer.place(dev.pool, dev.tp, dev.count);
    if (start + dev.count > c.pools[pool].devices())
      return Diagnostic{{}, "", "the plan needs more devices of pool '" + c.pools[pool].name + "' than it has (" +
                                    std::to_string(c.pools[pool].devices()) + ")",
                        ""};
    d.first_host.push_back(p.first_host[pool] + start);
  }
  d.work.resize(g.size());
  d.owner.resize(g.size());
  for (std::uint32_t i = 0; i < g.size(); ++i) d.owner[i] = i;
  const auto host = [&](std::uint32_t dev, int member) { return d.first_host[dev] + member; };
  // A group's hosts: its members (schedule/unfold.hpp, as the replay groups them) where placed.
  const auto hosts = [&](const std::vector<schedule::Member>& members) {
    std::vector<int> out;
    for (const auto& m : members) out.push_back(host(m.device, m.member));
    return out;
  };
  const auto seconds = [](schedule::SimTime ns) { return static_cast<double>(ns) * 1e-9; };
  // One flow of `bytes` at `rate`.
  auto flow_at = [&](TaskWork& w, int a, int b, double bytes, double rate) {
    if (bytes > 0) w.flows.push_back({a, b, bytes, rate});
  };
  auto priced = [&](int a, int b, int peers) { return priced_bandwidth(c, p, a, b, peers); };
  auto node_of = [&](int h) {
    const auto& x = p.hosts[static_cast<std::size_t>(h)];
    return std::pair{x.pool, x.node};
  };
  // A collective's members per node: on a full-mesh fabric a member reaches the links to the
  // others on its node (the cost model's CommGroup::ranks_per_node − 1 peers).
  using PerNode = std::map<std::pair<int, int>, int>;
  auto per_node = [&](const std::vector<int>& members) {
    PerNode n;
    for (int m : members) ++n[node_of(m)];
    return n;
  };
  auto peers = [&](const PerNode& n, int member) { return n.at(node_of(member)) - 1; };
  // A ring's rate on a full mesh (models/cost/collectives.cpp, ring_link): inside one node the
  // links to its other members; across nodes its k channels' traffic over the node's k(k − 1)
  // pairs, k · per_peer.
  auto ring_peers = [&](const PerNode& n, int member) { return n.at(node_of(member)) - (n.size() > 1 ? 0 : 1); };
  // A ring over `members`: every edge carries the same bytes at the ring's bottleneck rate. Over
  // several nodes with k members each, k channels run side by side (NCCL's rings, one per NIC):
  // channel j enters each node at its member j, so each channel crosses nodes from a different
  // device, and carries 1/k of the data.
  auto ring = [&](TaskWork& w, const std::vector<int>& members, double edge_bytes) {
    if (members.size() < 2) return;
    std::vector<std::vector<int>> nodes;  // members grouped by node, in ring order
    for (int m : members) {
      if (nodes.empty() || node_of(nodes.back().front()) != node_of(m)) nodes.push_back({});
      nodes.back().push_back(m);
    }
    std::size_t k = nodes.front().size();
    for (const auto& n : nodes) k = std::min(k, n.size());
    const bool channels = nodes.size() > 1 && k > 1 && nodes.size() * k == members.size();
    const std::size_t nch = channels ? k : 1;
    const PerNode on = per_node(members);
    for (std::size_t j = 0; j < nch; ++j) {
      std::vector<int> order;
      if (!channels) {
        order = members;
      } else {
        for (const auto& n : nodes)
          for (std::size_t i = 0; i < k; ++i) order.push_back(n[(i + j) % k]);
      }
      // The bottleneck: the slowest edge's priced rate, shared by the channels on its links.
      double rate = 1e300;
      for (std::size_t e = 0; e < order.size(); ++e) {
        const int a = order[e], b = order[(e + 1) % order.size()];
        rate = std::min(rate, priced(a, b, ring_peers(on, a)) * (node_of(a) == node_of(b) ? 1.0 : static_cast<double>(nch)));
      }
      rate /= static_cast<double>(nch);
      for (std::size_t e = 0; e < order.size(); ++e)
        flow_at(w, order[e], order[(e + 1) % order.size()], edge_bytes / static_cast<double>(nch), rate);
    }
  };
  // Each flow at its route's priced rate, shared with the task's other flows of its kind (to a
  // node-mate, over the fabric; to another node, over the NIC) leaving the same device or
  // entering the same device (what a tree or hierarchical pattern puts on a port or a NIC).
  // Edge k carries bytes[k].
  auto by_degree = [&](TaskWork& w, const std::vector<std::pair<int, int>>& edges, const std::vector<double>& bytes,
                       const PerNode& on) {
    std::map<std::pair<int, bool>, int> out, in;
    for (const auto& [a, b] : edges) {
      const bool near = node_of(a) == node_of(b);
      ++out[{a, near}];
      ++in[{b, near}];
    }
    for (std::size_t k = 0; k < edges.size(); ++k) {
      const auto [a, b] = edges[k];
      const bool near = node_of(a) == node_of(b);
      flow_at(w, a, b, bytes[k], priced(a, b, peers(on, a)) / std::max(out[{a, near}], in[{b, near}]));
    }
  };
  // On a full mesh a collective's ranks in a node use every link between them at once (RCCL's and
  // HCCL's channels, one per peer link; docs/cost-models.md#full-mesh-fabrics): the flows it put
  // between node-mates, from flow `from` on, are spread evenly over every ordered pair of them,
  // their bytes and rates summed per node. Each member sends and receives what it did before.
  auto spread_on_mesh = [&](TaskWork& w, std::size_t from) {
    struct Node {
      std::vector<int> members;
      double bytes = 0, rate = 0;
    };
    std::map<std::pair<int, int>, Node> nodes;
    std::vector<Flow> kept(w.flows.begin(), w.flows.begin() + static_cast<std::ptrdiff_t>(from));
    for (std::size_t i = from; i < w.flows.size(); ++i) {
      const Flow& f = w.flows[i];
      if (p.hosts[static_cast<std::size_t>(f.src)].mesh == kNoLink || node_of(f.src) != node_of(f.dst)) {
        kept.push_back(f);
        continue;
      }
      Node& n = nodes[node_of(f.src)];
      for (int h : {f.src, f.dst})
        if (std::find(n.members.begin(), n.members.end(), h) == n.members.end()) n.members.push_back(h);
      n.bytes += f.bytes;
      n.rate += f.rate;
    }
    for (const auto& [key, n] : nodes) {
      const double pairs = static_cast<double>(n.members.size() * (n.members.size() - 1));
      for (int a : n.members)
        for (int b : n.members)
          if (a != b) kept.push_back({a, b, std::max(1.0, n.bytes / pairs), n.rate / pairs});
    }
    w.flows = std::move(kept);
  };
  // The flows of collective calls over `members` by the algorithm the cost model chose
  // (models/cost/collectives.cpp), `load` their buffers (as cost::collective_time counts them)
  // times their rounds (ring_rounds), summed: a ring, each edge carrying load·(n − 1)/n; NCCL's
  // two complementary binary trees (the second over the members in reverse, so that inner nodes
  // of one are leaves of the other), each child reducing its half of the buffer up to its parent
  // and getting it back down (all-reduce only: load/4 each way); hierarchical (a ring inside each
  // node over the buffer, and one ring across nodes per local position over its 1/k shard, each
  // over its own NIC). Whatever the algorithm, the flows carry load·(n − 1) in all.
  auto flows_of = [&](TaskWork& w, const std::vector<int>& members, cost::Algorithm alg, double load) {
    const auto n = static_cast<double>(members.size());
    if (alg == cost::Algorithm::Tree) {
      std::vector<std::pair<int, int>> edges;
      for (int tree = 0; tree < 2; ++tree)
        for (std::size_t k = 1; k < members.size(); ++k) {
          const auto at = [&](std::size_t i) { return members[tree == 0 ? i : members.size() - 1 - i]; };
          edges.emplace_back(at(k), at((k - 1) / 2));
          edges.emplace_back(at((k - 1) / 2), at(k));
        }
      by_degree(w, edges, std::vector<double>(edges.size(), load / 4), per_node(members));
      return;
    }
    if (alg != cost::Algorithm::Hierarchical) {
      ring(w, members, load * (n - 1) / n);
      return;
    }
    std::vector<std::pair<std::pair<int, int>, std::vector<int>>> nodes;  // (pool, node) → members
    for (int m : members) {
      auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& e) { return e.first == node_of(m); });
      if (it == nodes.end()) it = nodes.insert(nodes.end(), {node_of(m), {}});
      it->second.push_back(m);
    }
    std::vector<std::pair<int, int>> edges;
    std::vector<double> bytes;
    std::size_t most = 0;
    for (const auto& [key, local] : nodes) {
      const auto k = static_cast<double>(local.size());
      if (local.size() > 1)
        for (std::size_t j = 0; j < local.size(); ++j) {
          edges.emplace_back(local[j], local[(j + 1) % local.size()]);
          bytes.push_back(load * (k - 1) / k);
        }
      most = std::max(most, local.size());
    }
    for (std::size_t j = 0; j < most; ++j) {
      std::vector<int> across;
      for (const auto& [key, local] : nodes)
        if (j < local.size()) across.push_back(local[j]);
      const auto a = static_cast<double>(across.size());
      if (across.size() > 1)
        for (std::size_t k = 0; k < across.size(); ++k) {
          edges.emplace_back(across[k], across[(k + 1) % across.size()]);
          bytes.push_back(load / static_cast<double>(most) * (a - 1) / a);
        }
    }
    by_degree(w, edges, bytes, per_node(members));
  };
  // The same, on full meshes spread over the links between node-mates.
  auto collective = [&](TaskWork& w, const std::vector<int>& members, cost::Algorithm alg, double load) {
    if (members.size() < 2 || !(load > 0)) return;
    const std::size_t from = w.flows.size();
    flows_of(w, members, alg, load);
    spread_on_mesh(w, from);
  };

  // A pairwise all-to-all over `members` of a `size`-byte send buffer (models/cost/collectives.cpp;
  // the cost model prices the busiest rank's routed bytes and every rank moving as much): each
  // member sends size/n to every other. A member's flows to node-mates share its fabric port,
  // those to other nodes its NIC share (and, arriving, the receiver's).
  auto all_to_all = [&](TaskWork& w, const std::vector<int>& members, double size) {
    if (members.size() < 2 || !(size > 0)) return;
    std::map<int, int> local, remote;  // a member's peers on its node, on other nodes
    for (int a : members)
      for (int b : members)
        if (a != b) ++(node_of(a) == node_of(b) ? local : remote)[a];
    for (int a : members)
      for (int b : members) {
        if (a == b) continue;
        const bool near = node_of(a) == node_of(b);
        const double rate = priced(a, b, local[a]) / std::max(near ? local[a] : remote[a], near ? local[b] : remote[b]);
        flow_at(w, a, b, size / static_cast<double>(members.size()), rate);
      }
  };
  // A call's bytes as the wire sees them: its buffer, as often as the task makes it, in the share
  // its time is exposed (CommCall::exposed: the rest runs hidden behind compute).
  auto wire = [](const cost::CommCall& call) { return call.bytes * call.count * call.exposed; };
  // The algorithm of call `c` of a task priced with `alg`: the tree is an all-reduce's only.
  auto algorithm_of = [](cost::Algorithm alg, const cost::CommCall& call) {
    return alg == cost::Algorithm::Tree && call.kind != cost::Collective::AllReduce ? cost::Algorithm::Ring : alg;
  };
  // The load (CommCall bytes × rounds) of `calls` per algorithm: calls of one algorithm over the
  // same members run as one pattern carrying their sum.
  auto loads = [&](std::span<const cost::CommCall> calls, cost::Algorithm alg, auto&& size_of) {
    std::map<cost::Algorithm, double> out;
    for (const auto& call : calls) out[algorithm_of(alg, call)] += ring_rounds(call.kind) * size_of(call);
    return out;
  };

  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto& dev = g.devices[t.device];
    TaskWork& w = d.work[i];
    switch (t.kind) {
      case TaskKind::TpCollective:
        // Each call over the tp ranks of every replica (or over blocks of CommCall::ranks of them:
        // the MoE block's expert_tp groups).
        {
          std::map<int, std::vector<cost::CommCall>> by_ranks;  // calls per group size
          for (const auto& call : g.calls_of(i)) by_ranks[call.ranks > 0 ? call.ranks : dev.tp].push_back(call);
          for (const auto& [n, calls] : by_ranks)
            for (const auto& [alg, load] : loads(calls, t.algorithm, wire))
              for (const auto& block : schedule::blocks_of(g, t.device, n)) collective(w, hosts(block), alg, load);
        }
        break;
      case TaskKind::GradReduce:
      case TaskKind::ParamGather: {
        // The layers' parameters cut into C chunks, C the lcm of the members' tp degrees (as the
        // executor's dp_layout cuts them): one ring per chunk over the rank of every replica
        // that holds it; with one degree, one ring per tp rank. A collective across simulated
        // devices (several replica groups) is carried by its first member, whose duration
        // priced its 1/tp shard: a chunk is tp/C of that.
        const std::vector<std::uint32_t> tasks = g.members_of(i);
        if (tasks.front() != i) {
          d.owner[i] = tasks.front();
          continue;
        }
        if (t.across_groups) {
          // Hybrid sharding's all-reduce of the shards across groups: a group's device of degree
          // tp over R replicas cuts the layer into n = tp·R pieces (tp rank k's slice sharded
          // over the replicas: piece k·R + r on replica r, rank k). N = the lcm of the n (as the
          // executor's dp_layout cuts the layer): chunk j of N lies in one piece of every group's
          // device, and those all-reduce it. A device of the group with the fewest pieces, n_min,
          // joins N/n_min of these rings; each ring carries n_min/N of the task's time (priced
          // for that device's whole shard), so that device's rings, sharing its links, end in
          // about that time. Consecutive rings over the same devices are one ring carrying their
          // sum. (N must be the lcm, not the largest n: where the counts do not divide one
          // another, a cut into the largest would give a device's first members more chunks.)
          const long long cut = schedule::dp_piece_chunks(g, tasks);
          // A piece: a member's shard (its task's payload) is N/n of them, for its n.
          double piece = 0;
          for (const auto& call : g.calls_of(i)) piece += schedule::dp_chunk_bytes(g, i, call, cut) * call.exposed;
          std::vector<int> run;
          long long count = 0;
          auto flush = [&] {
            if (count == 0) return;
            collective(w, run, t.algorithm, ring_rounds(cost::Collective::AllReduce) * piece * static_cast<double>(count));
          };
          for (long long j = 0; j < cut; ++j) {
            std::vector<int> members = hosts(schedule::dp_piece_members(g, tasks, j, cut));
            if (members != run) {
              flush();
              run = std::move(members);
              count = 0;
            }
            ++count;
          }
          flush();
          break;
        }
        const long long chunks = g.dp_chunks(i);
        const bool folded = schedule::folds_experts(g, tasks);
        for (const auto& call : g.calls_of(i)) {
          if (call.experts && folded) {
            // MoE parallel folding: the routed experts' part once over each expert-data-parallel
            // group (the members at one offset of every expert_tp · ep block), not per chunk.
            const double size = schedule::expert_dp_bytes(g, i, call) * call.exposed;
            for (const auto& group : schedule::expert_dp_groups(g, tasks))
              collective(w, hosts(group), algorithm_of(t.algorithm, call), ring_rounds(call.kind) * size);
            continue;
          }
          // A chunk's buffer: a member's call (the same kind, dense or experts) of its 1/tp share
          // of the layer is C/tp chunks; the largest over the members (norms are whole on every
          // tp rank), as the executor sizes it (schedule::dp_chunk_bytes).
          const double size = schedule::dp_chunk_bytes(g, i, call, chunks) * call.exposed;
          const int ep = call.experts ? std::max(1, dev.ep) : 1;
          for (long long chunk = 0; chunk < chunks; ++chunk)
            for (int q = 0; q < ep; ++q)  // the routed experts' part: among the replicas that hold the same experts
              collective(w, hosts(schedule::dp_chunk_members(g, tasks, chunk, chunks, ep, q)),
                         algorithm_of(t.algorithm, call), ring_rounds(call.kind) * size);
        }
        break;
      }
      case TaskKind::EpAllToAll: {
        // Expert parallelism (Megatron-Core's expert rank order: expert_tp fastest, then ep):
        // the stage's devices in blocks of expert_tp · ep, and in each block the ranks
        // expert_tp apart exchange tokens. With expert_tp = tp these are tp rank k of replicas
        // e·ep … e·ep + ep − 1 (EP ranks drawn from the data-parallel ones); folded (expert_tp <
        // tp), the TP ranks join the groups. Every group at once.
        double size = 0;  // the task's all-to-alls, one after the other, as one exchange
        for (const auto& call : g.calls_of(i)) size += wire(call);
        for (const auto& group : schedule::ep_groups(g, t.device)) all_to_all(w, hosts(group), size);
        break;
      }
      case TaskKind::SendActivation:
      case TaskKind::SendGradient:
        // Every part of the message (schedule::pipeline_messages: each sender rank to every
        // receiver rank of its replica it feeds, resharded between tp degrees when the message is
        // split), each flow one priced message.
        for (const auto& part : schedule::pipeline_messages(g, i)) {
          const int a = host(part.from.device, part.from.member), b = host(part.to.device, part.to.member);
          flow_at(w, a, b, part.bytes, priced(a, b, 1));
        }
        break;
      default:
        break;
    }
    // What the cost model charges beyond moving the bytes (its per-step latencies and call
    // costs, over the routes' own latency): a wait before the flows, so that alone on the
    // platform the task takes its priced time, and contention stretches only its transfers.
    double alone = 0;
    for (const Flow& f : w.flows) alone = std::max(alone, p.latency(p.route(f.src, f.dst)) + f.bytes / f.rate);
    if (!w.flows.empty()) w.delay = std::max(0.0, seconds(t.duration) - alone);
    if (w.flows.empty() && d.owner[i] == i) w.exec_host = host(t.device, 0);
    d.flows += w.flows.size();
    d.execs += w.exec_host >= 0 ? 1 : 0;
  }
  return d;
}

}  // namespace hetsim::platform

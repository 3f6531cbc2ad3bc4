// The SimGrid platform as data and the flows each task becomes: routes by topology, link
// bandwidths from the catalogue, and flow sizes that make every task, alone on the fabric, take
// exactly its modelled time. No SimGrid here (tests/sim/simgrid_test.cpp runs it).

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "sim/schedule/schedule.hpp"
#include "sim/simgrid/flows.hpp"
#include "sim/simgrid/platform.hpp"
#include "tests/support/scenario_support.hpp"

namespace hetsim {
namespace {

std::string cluster(const char* network, int nics = 8, const char* parallel = "tp = 4\npp = 2\ndp = 4\n") {
  return std::string("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nseq_len = 4096\n"
                     "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 4\nnics_per_node = ") +
         std::to_string(nics) + "\n[cluster.network]\nnic = \"ib-ndr-400\"\n" + network + "[parallel]\n" + parallel;
}

TEST(Platform, RoutesFollowTheTopology) {
  auto s = test::parse(cluster("oversubscription = 2\n", 2));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto p = platform::build(s->cluster);
  ASSERT_EQ(p.hosts.size(), 32u);
  const auto& pool = s->cluster.pools[0];
  // Within a node: out of one fabric port, into the other, at the fabric's effective bandwidth.
  auto r = p.route(0, 5);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_TRUE(r[0].up);
  EXPECT_FALSE(r[1].up);
  EXPECT_DOUBLE_EQ(p.bottleneck(r), pool.fabric.effective().v);
  EXPECT_DOUBLE_EQ(p.latency(r), pool.fabric.latency.v);
  // Between nodes on a fat-tree: NIC, both uplinks, NIC. Two NICs per node: devices 0–3 share
  // NIC 0; the uplink carries 2 NICs' bandwidth / 2 (oversubscription).
  r = p.route(1, 8 + 6);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(p.links[r[0].link].name, "p0n0-nic0");
  EXPECT_EQ(p.links[r[1].link].name, "p0n0-uplink");
  EXPECT_EQ(p.links[r[2].link].name, "p0n1-uplink");
  EXPECT_EQ(p.links[r[3].link].name, "p0n1-nic1");
  EXPECT_DOUBLE_EQ(p.links[r[1].link].bandwidth, 2 * pool.nic.effective().v / 2);
  // Rail-optimised: same rail skips the uplinks, another rail does not.
  auto rail = test::parse(cluster("topology = \"rail-optimized\"\n"));
  ASSERT_TRUE(rail.ok()) << test::all_errors(rail.errors());
  const auto q = platform::build(rail->cluster);
  EXPECT_EQ(q.route(3, 8 + 3).size(), 2u);
  EXPECT_EQ(q.route(3, 8 + 4).size(), 4u);
  // The XML names every host and link and writes the routes asked for.
  const auto xml = platform::to_xml(p, {{1, 14}});
  EXPECT_NE(xml.find("<host id=\"p0n3d7\""), std::string::npos);
  EXPECT_NE(xml.find("<link id=\"p0n1-uplink\""), std::string::npos);
  EXPECT_NE(xml.find("<route src=\"p0n0d1\" dst=\"p0n1d6\" symmetrical=\"NO\"><link_ctn id=\"p0n0-nic0\" "
                     "direction=\"UP\"/><link_ctn id=\"p0n0-uplink\" direction=\"UP\"/>"),
            std::string::npos);
}

// One node of 8 H100: 2 replicas of Llama 3 8B's first 8 layers at tp 2 (2 micro-batches each), and
// one two-stage replica at tp 1 (4 micro-batches), under ZeRO `zero`.
std::string two_groups_on_one_node(int zero) {
  return "[model]\npreset = \"llama3-8b\"\nlayers = 8\n[training]\nglobal_batch = 8\nseq_len = 2048\n"
         "[[cluster.pool]]\nname = \"h100\"\ndevice = \"h100-sxm5\"\nnodes = 1\n[parallel]\nmicro_batch = 1\nzero = " +
         std::to_string(zero) +
         "\n[[parallel.replicas]]\ncount = 2\nmicro_batches = 2\nstages = [{pool = \"h100\", tp = 2, layers = 8}]\n"
         "[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\n"
         "stages = [{pool = \"h100\", tp = 1, layers = 4}, {pool = \"h100\", tp = 1, layers = 4}]\n";
}

// Replica groups of different tp (2 replicas at tp 2, one two-stage replica at tp 1) join each
// layer's data-parallel collective by chunks, as the executor runs it (exec/replay/dp_groups):
// lcm(2, 1) = 2 rings, each over tp 2 rank c of both replicas and the tp 1 device. So every rank
// sends, and the tp 1 device, holding the whole layer, sends twice what a tp 2 rank does.
TEST(Platform, GroupsOfDifferentTpReduceByChunks) {
  auto s = test::parse(two_groups_on_one_node(1));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  ASSERT_FALSE(g.collectives.empty());
  for (const auto& members : g.collectives) {
    const auto& w = d->work[members.front()];
    std::map<int, double> sent;  // host → bytes
    for (const auto& f : w.flows) sent[f.src] += f.bytes;
    // Hosts of the tp 2 ranks (two replicas × two ranks) and of the tp 1 device holding the layer.
    std::vector<int> tp2, tp1;
    for (auto m : members) {
      const auto dev = g.tasks[m].device;
      for (int k = 0; k < g.devices[dev].count; ++k)
        (g.devices[dev].tp == 2 ? tp2 : tp1).push_back(d->first_host[dev] + k);
    }
    ASSERT_EQ(tp2.size(), 4u);
    ASSERT_EQ(tp1.size(), 1u);
    for (int h : tp2) EXPECT_GT(sent[h], 0) << "every tp 2 rank is in a ring";
    for (int h : tp2) EXPECT_NEAR(sent[tp1[0]] / sent[h], 2.0, 1e-6);
    EXPECT_EQ(sent.size(), 5u);
  }
}

// A mixed pipeline (tp 2 then tp 4, sequence parallel, one node): each pipeline message flows
// from every sending rank to the receiving ranks whose slices overlap its own, as the executor
// sends it (schedule::pipeline_share): forward rank j → ranks 2j and 2j + 1, backward rank k →
// rank k/2.
TEST(Platform, MixedPipelinesReshardTheirMessages) {
  auto s = test::parse(
      "[model]\npreset = \"llama3-8b\"\nlayers = 4\n[training]\nglobal_batch = 4\nseq_len = 2048\n"
      "[[cluster.pool]]\nname = \"h100\"\ndevice = \"h100-sxm5\"\nnodes = 1\n"
      "[parallel]\nmicro_batch = 1\nsequence_parallel = true\n"
      "[[parallel.replicas]]\ncount = 1\nmicro_batches = 4\n"
      "stages = [{pool = \"h100\", tp = 2, layers = 2}, {pool = \"h100\", tp = 4, layers = 2}]\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  int sends = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (t.kind != schedule::TaskKind::SendActivation && t.kind != schedule::TaskKind::SendGradient) continue;
    ++sends;
    EXPECT_TRUE(t.split);
    std::set<std::pair<int, int>> pairs;  // (sender rank, receiver rank)
    for (const auto& f : d->work[i].flows) {
      const int other = 1 - static_cast<int>(t.device);
      pairs.insert({f.src - d->first_host[t.device], f.dst - d->first_host[static_cast<std::uint32_t>(other)]});
    }
    if (t.kind == schedule::TaskKind::SendActivation)
      EXPECT_EQ(pairs, (std::set<std::pair<int, int>>{{0, 0}, {0, 1}, {1, 2}, {1, 3}}));
    else
      EXPECT_EQ(pairs, (std::set<std::pair<int, int>>{{0, 0}, {1, 0}, {2, 1}, {3, 1}}));
  }
  EXPECT_EQ(sends, 2 * 4);
}

// Alone on the platform, task i's flows carry its payload no slower than the cost model priced
// it, and after its wait (TaskWork::delay: the model's per-step latencies and call costs beyond
// the routes' own) the slowest ends at the task's modelled time.
void expect_alone_takes_its_time(const schedule::TaskGraph& g, std::uint32_t i, const platform::TaskWork& w,
                                 const platform::Platform& p) {
  if (w.flows.empty()) return;
  const double modelled = static_cast<double>(g.tasks[i].duration) * 1e-9;
  double alone = 0;
  for (const auto& f : w.flows) alone = std::max(alone, p.latency(p.route(f.src, f.dst)) + f.bytes / f.rate);
  EXPECT_LE(alone, modelled * (1 + 1e-9)) << schedule::task_name(g.tasks[i]);
  EXPECT_GE(w.delay, 0);
  EXPECT_NEAR(w.delay + alone, modelled, modelled * 1e-9) << schedule::task_name(g.tasks[i]);
}

TEST(Platform, FlowsAloneTakeTheModelledTime) {
  auto s = test::parse(cluster("oversubscription = 2\n", 2));
  ASSERT_TRUE(s.ok());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  std::set<schedule::TaskKind> with_flows;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto& w = d->work[i];
    const auto& dev = g.devices[t.device];
    switch (t.kind) {
      case schedule::TaskKind::TpCollective:
        EXPECT_EQ(w.flows.size(), static_cast<std::size_t>(dev.count));  // a ring per replica
        break;
      case schedule::TaskKind::SendActivation:
      case schedule::TaskKind::SendGradient:
        EXPECT_EQ(w.flows.size(), static_cast<std::size_t>(dev.count));  // one per rank
        break;
      case schedule::TaskKind::Forward:
      case schedule::TaskKind::Backward:
        EXPECT_EQ(w.exec_host, d->first_host[t.device]);
        EXPECT_TRUE(w.flows.empty());
        break;
      default:
        break;
    }
    // Alone, each flow runs at its rate, never above the bandwidth the cost model priced its route
    // with, and the task's own flows never ask a link for more than it has: so the task, alone,
    // takes exactly its modelled time (expect_alone_takes_its_time).
    std::map<std::pair<std::uint32_t, bool>, double> load;
    for (const auto& f : w.flows) {
      with_flows.insert(t.kind);
      const auto r = p.route(f.src, f.dst);
      const bool same_node = p.hosts[static_cast<std::size_t>(f.src)].node == p.hosts[static_cast<std::size_t>(f.dst)].node;
      const double priced = same_node ? s->cluster.pools[0].fabric.effective().v
                                      : s->cluster.pools[0].nic_bandwidth_per_device().v * s->cluster.pools[0].nic.efficiency / 2;
      EXPECT_LE(f.rate, priced * (1 + 1e-12));
      for (const auto& h : r) load[{h.link, h.up}] += f.rate;
    }
    for (const auto& [link, rate] : load) EXPECT_LE(rate, p.links[link.first].bandwidth * (1 + 1e-9)) << p.links[link.first].name;
    expect_alone_takes_its_time(g, i, w, p);
  }
  EXPECT_TRUE(with_flows.count(schedule::TaskKind::TpCollective));
  EXPECT_TRUE(with_flows.count(schedule::TaskKind::SendActivation));
  EXPECT_TRUE(with_flows.count(schedule::TaskKind::GradReduce));
  // The plan placed 32 devices on 32 hosts, each once.
  std::set<int> hosts;
  for (std::size_t k = 0; k < g.devices.size(); ++k)
    for (int m = 0; m < g.devices[k].count; ++m) EXPECT_TRUE(hosts.insert(d->first_host[k] + m).second);
  EXPECT_EQ(hosts.size(), 32u);
}

// Each algorithm's pattern: 2 nodes × 8 devices, tp 2, 8 replicas, so each tp rank's DP group
// has 4 members in each node.
TEST(Platform, CollectivesFollowTheirAlgorithm) {
  auto flows_of = [](const char* grad_sync, std::size_t& intra, std::size_t& inter) {
    auto s = test::parse(std::string("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nseq_len = 4096\n"
                                     "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
                                     "[parallel]\ntp = 2\npp = 1\ndp = 8\nzero = 0\ngrad_sync = \"") +
                         grad_sync + "\"\n");
    EXPECT_TRUE(s.ok()) << test::all_errors(s.errors());
    const auto g = schedule::build_schedule(*s, *s->plan);
    const auto p = platform::build(s->cluster);
    auto d = platform::decompose(g, s->cluster, p);
    EXPECT_TRUE(d.ok());
    intra = inter = 0;
    for (std::uint32_t i = 0; i < g.size(); ++i) {
      if (g.tasks[i].kind != schedule::TaskKind::GradReduce) continue;
      std::map<std::pair<std::uint32_t, bool>, double> load;  // alone, no link asked for more than it has
      for (const auto& f : d->work[i].flows) {
        ++(p.hosts[static_cast<std::size_t>(f.src)].node == p.hosts[static_cast<std::size_t>(f.dst)].node ? intra : inter);
        for (const auto& h : p.route(f.src, f.dst)) load[{h.link, h.up}] += f.rate;
      }
      for (const auto& [link, rate] : load) EXPECT_LE(rate, p.links[link.first].bandwidth * (1 + 1e-9)) << grad_sync;
      // (Not the tree across nodes: the cost model prices it at the bandwidth of the node's k
      // NICs (collectives.cpp, ring_link), while its flows, a binary tree over the devices, cross
      // the nodes on single devices' NIC shares: alone they take 2.8 times its priced time here.)
      if (g.tasks[i].algorithm != cost::Algorithm::Tree) expect_alone_takes_its_time(g, i, d->work[i], p);
      return g.tasks[i].algorithm;  // the first gradient reduction
    }
    return cost::Algorithm::Auto;
  };
  std::size_t intra = 0, inter = 0;
  // Ring over the 8 replicas of each of the 2 ranks, 4 per node: 4 channels of 8 edges, each
  // crossing between the nodes twice.
  EXPECT_EQ(flows_of("ring", intra, inter), cost::Algorithm::Ring);
  EXPECT_EQ(intra, 2u * 4 * 6);
  EXPECT_EQ(inter, 2u * 4 * 2);
  // Tree: two trees of 7 child–parent pairs, both ways.
  EXPECT_EQ(flows_of("tree", intra, inter), cost::Algorithm::Tree);
  EXPECT_EQ(intra + inter, 2u * 2 * 14);
  // Hierarchical: a ring of 4 inside each node, then 4 rings of 2 across (one per position).
  EXPECT_EQ(flows_of("hierarchical", intra, inter), cost::Algorithm::Hierarchical);
  EXPECT_EQ(intra, 2u * 2 * 4);
  EXPECT_EQ(inter, 2u * 4 * 2);
}

// A full-mesh fabric (Gaudi 2: 3 × 100 GbE to each of 7 node-mates, no switch): each pair of a
// node's devices has its own link at per_peer × efficiency, which node-mates talk over, and a collective's
// flows between node-mates spread over every pair of them, so that, alone, no link is asked for
// more than it has and every flow takes its task's time. 2 nodes × 8, tp 2, 8 replicas: each
// TP ring is one pair; each tp rank's DP ring has 4 members in each node.
TEST(Platform, OnAFullMeshEachPairHasItsOwnLinkAndCollectivesSpreadOverThem) {
  auto s = test::parse("[model]\npreset = \"llama3-8b\"\n[training]\nglobal_batch = 64\nseq_len = 4096\n"
                       "[[cluster.pool]]\ndevice = \"gaudi2\"\nnodes = 2\n"
                       "[parallel]\ntp = 2\npp = 1\ndp = 8\nzero = 0\ngrad_sync = \"ring\"\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto& fabric = s->cluster.pools[0].fabric;
  ASSERT_GT(fabric.per_peer.v, 0);
  const double pair_bw = (fabric.per_peer * fabric.efficiency).v;
  const auto p = platform::build(s->cluster);
  std::size_t mesh = 0;
  for (const auto& l : p.links) mesh += l.kind == platform::LinkKind::MeshLink ? 1 : 0;
  EXPECT_EQ(mesh, 2u * 28);  // 8 · 7 / 2 pairs per node
  // Within a node: the pair's own link, at the fabric's latency, one direction each way.
  const auto r = p.route(2, 5);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_DOUBLE_EQ(p.bottleneck(r), pair_bw);
  EXPECT_DOUBLE_EQ(p.latency(r), fabric.latency.v);
  const auto back = p.route(5, 2);
  EXPECT_EQ(back[0].link, r[0].link);
  EXPECT_NE(back[0].up, r[0].up);
  std::set<std::uint32_t> pair_links;
  for (int a = 0; a < 8; ++a)
    for (int b = a + 1; b < 8; ++b) pair_links.insert(p.route(a, b)[0].link);
  EXPECT_EQ(pair_links.size(), 28u);
  EXPECT_EQ(p.route(9, 14).size(), 1u);  // the second node's own pairs
  EXPECT_NE(p.route(9, 14)[0].link, p.route(1, 6)[0].link);

  const auto g = schedule::build_schedule(*s, *s->plan);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  std::set<schedule::TaskKind> seen;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    std::map<std::pair<std::uint32_t, bool>, double> load;
    std::map<int, double> sent;
    for (const auto& f : d->work[i].flows) {
      seen.insert(t.kind);
      const auto route = p.route(f.src, f.dst);
      for (const auto& h : route) load[{h.link, h.up}] += f.rate;
      if (p.hosts[static_cast<std::size_t>(f.src)].node == p.hosts[static_cast<std::size_t>(f.dst)].node) sent[f.src] += f.rate;
    }
    for (const auto& [link, rate] : load)
      EXPECT_LE(rate, p.links[link.first].bandwidth * (1 + 1e-9)) << schedule::task_name(t) << " " << p.links[link.first].name;
    expect_alone_takes_its_time(g, i, d->work[i], p);
    // A TP pair reaches its one link; a DP ring member, its node-mates' three links between them
    // (over nodes, k = 4 channels: k · per_peer, under the port and the NICs).
    if (t.kind == schedule::TaskKind::TpCollective) {
      for (const auto& [host, rate] : sent) EXPECT_NEAR(rate, pair_bw, pair_bw * 1e-9);
    }
  }
  EXPECT_TRUE(seen.count(schedule::TaskKind::TpCollective));
  EXPECT_TRUE(seen.count(schedule::TaskKind::GradReduce));
}

// Folded expert parallelism (expert_tp 1, tp 2, dp 8 on 2 nodes of 8, ep 8): Megatron-Core's
// expert rank order puts the EP ranks next to each other, so each EP group is one node's 8
// consecutive hosts (both TP ranks of 4 replicas), not tp rank k of 8 replicas across both nodes.
TEST(Platform, FoldedExpertGroupsAreConsecutiveDevices) {
  auto s = test::parse(
      "[model]\npreset = \"mixtral-8x7b\"\nlayers = 2\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
      "[[cluster.pool]]\ndevice = \"h100-sxm5\"\nnodes = 2\n"
      "[parallel]\ntp = 2\npp = 1\ndp = 8\nep = 8\nexpert_tp = 1\nmicro_batch = 1\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  int tasks = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    if (g.tasks[i].kind != schedule::TaskKind::EpAllToAll) continue;
    ++tasks;
    const auto& flows = d->work[i].flows;
    EXPECT_EQ(flows.size(), 2u * 8 * 7);  // two groups, 8 · 7 ordered pairs each
    for (const auto& f : flows) EXPECT_EQ(f.src / 8, f.dst / 8) << f.src << " -> " << f.dst;  // inside a node
  }
  EXPECT_GT(tasks, 0);
}

// An expert all-to-all (issue 15): Mixtral cut to 2 layers on 2 nodes of 8 devices with a
// 1000 GB/s fabric and a 50 GB/s NIC each, no latencies; tp 2 · dp 8 · ep 4. Each EP task is, for
// every EP group (replicas e·ep … e·ep + ep − 1) and every tp rank k, a flow between each ordered
// pair of the group's ranks (hosts tp apart), all of the same bytes: the task's all-to-alls × the
// routed bytes / ep.
TEST(Platform, AnExpertAllToAllIsAPairwiseExchangeWithinEachEpGroup) {
  auto s = test::parse(
      "[model]\npreset = \"mixtral-8x7b\"\nlayers = 2\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
      "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"1000GB/s\"\nlatency = \"0us\"\n"
      "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"50GB/s\"\nlatency = \"0us\"\n"
      "[[cluster.pool]]\nnodes = 2\n[cluster.pool.device]\nname = \"g\"\npeak = { bf16 = \"1000TFLOPS\" }\n"
      "memory = \"192GiB\"\nmemory_bandwidth = \"4TB/s\"\nnode = { devices = 8, fabric = \"fab\", nics = 8, nic = \"net\" }\n"
      "[parallel]\ntp = 2\npp = 1\ndp = 8\nep = 4\nmicro_batch = 1\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  ASSERT_EQ(g.devices.size(), 1u);
  ASSERT_EQ(d->first_host[0], 0);
  // Replicas 0–3 (hosts 0–7) and 4–7 (hosts 8–15) form the EP groups: one per node, so every
  // flow stays on the fabric. Host = replica · 2 + tp rank.
  const double routed = 4096.0 / 2 * 2 * 4096 * 2;  // tokens / tp · top_k · h · 2 B (uniform routing)
  int tasks = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (t.kind != schedule::TaskKind::EpAllToAll) continue;
    ++tasks;
    const auto& flows = d->work[i].flows;
    EXPECT_EQ(flows.size(), 2u * 2 * 4 * 3) << schedule::task_name(t);  // groups × tp ranks × ep·(ep − 1)
    std::set<std::pair<int, int>> pairs;
    for (const auto& f : flows) {
      EXPECT_TRUE(pairs.insert({f.src, f.dst}).second);
      EXPECT_NE(f.src, f.dst);
      EXPECT_EQ(f.src % 2, f.dst % 2);          // the same tp rank
      EXPECT_EQ(f.src / 8, f.dst / 8);          // the same EP group (replicas 0–3 or 4–7)
      // 4 all-to-alls (2 layers × dispatch, combine), each sending routed / 4 to each peer over
      // the fabric; 3 peers share the port: time = 4 · 3 · (routed / 4) / 1000 GB/s.
      EXPECT_NEAR(f.bytes, 4 * routed / 4, f.rate * 1e-9) << schedule::task_name(t);  // within 1 ns of rounding
      EXPECT_DOUBLE_EQ(f.rate, 1000e9 / 3);
    }
    EXPECT_NEAR(static_cast<double>(t.duration) * 1e-9, 4 * 3 * (routed / 4) / 1000e9, 1e-9);
  }
  EXPECT_EQ(tasks, 2 * 2);  // (forward, backward) × 2 micro-batches
}

// The same with the EP groups across the nodes: dp 8 · ep 8, ranks k, k + 2, …, k + 14, 4 on
// each node. A rank sends 3/8 of its buffer to node-mates (3 flows on its port) and 4/8 over its
// NIC (4 flows): the NIC side paces it, and every flow carries its 1/8.
TEST(Platform, AnExpertAllToAllAcrossNodesIsPacedByTheNics) {
  auto s = test::parse(
      "[model]\npreset = \"mixtral-8x7b\"\nlayers = 2\n[training]\nglobal_batch = 16\nseq_len = 4096\n"
      "[[cluster.link]]\nname = \"fab\"\nkind = \"scale-up\"\nbandwidth = \"1000GB/s\"\nlatency = \"0us\"\n"
      "[[cluster.link]]\nname = \"net\"\nkind = \"scale-out\"\nbandwidth = \"50GB/s\"\nlatency = \"0us\"\n"
      "[[cluster.pool]]\nnodes = 2\n[cluster.pool.device]\nname = \"g\"\npeak = { bf16 = \"1000TFLOPS\" }\n"
      "memory = \"192GiB\"\nmemory_bandwidth = \"4TB/s\"\nnode = { devices = 8, fabric = \"fab\", nics = 8, nic = \"net\" }\n"
      "[parallel]\ntp = 2\npp = 1\ndp = 8\nep = 8\nmicro_batch = 1\n");
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  const double routed = 4096.0 / 2 * 2 * 4096 * 2;
  int tasks = 0;
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (t.kind != schedule::TaskKind::EpAllToAll) continue;
    ++tasks;
    const auto& flows = d->work[i].flows;
    EXPECT_EQ(flows.size(), 2u * 8 * 7);  // tp ranks × ep·(ep − 1)
    std::size_t across = 0;
    std::map<std::pair<std::uint32_t, bool>, double> load;
    for (const auto& f : flows) {
      EXPECT_EQ(f.src % 2, f.dst % 2);
      const bool remote = f.src / 8 != f.dst / 8;
      across += remote ? 1 : 0;
      EXPECT_DOUBLE_EQ(f.rate, remote ? 50e9 / 4 : 1000e9 / 3);
      EXPECT_NEAR(f.bytes, 4 * routed / 8, 50e9 / 4 * 1e-9);  // within 1 ns of rounding
      for (const auto& h : p.route(f.src, f.dst)) load[{h.link, h.up}] += f.rate;
    }
    EXPECT_EQ(across, 2u * 8 * 4);
    for (const auto& [link, rate] : load) EXPECT_LE(rate, p.links[link.first].bandwidth * (1 + 1e-9)) << p.links[link.first].name;
    EXPECT_NEAR(static_cast<double>(t.duration) * 1e-9, 4 * 4 * (routed / 8) / 50e9, 1e-9);
  }
  EXPECT_EQ(tasks, 2 * 2);
}

// Hybrid sharding's all-reduce of the shards: a tp 2 group of two replicas cuts a layer into four
// pieces, a lone tp 1 replica holds it whole; each piece is one ring over its holder in each
// group, so the lone device is in all four rings and sends four times what each other does.
TEST(Platform, HybridShardingAllReducesEachPieceAcrossTheGroups) {
  auto s = test::parse(two_groups_on_one_node(2));
  ASSERT_TRUE(s.ok()) << test::all_errors(s.errors());
  const auto g = schedule::build_schedule(*s, *s->plan);
  const auto p = platform::build(s->cluster);
  auto d = platform::decompose(g, s->cluster, p);
  ASSERT_TRUE(d.ok()) << test::all_errors(d.errors());
  ASSERT_EQ(g.collectives.size(), 8u);
  for (const auto& members : g.collectives) {
    const auto& w = d->work[members.front()];
    EXPECT_EQ(w.flows.size(), 8u);  // four rings of two
    std::map<int, double> sent;
    for (const auto& f : w.flows) sent[f.src] += f.bytes;
    std::vector<int> pieces, whole;
    for (auto m : members) {
      const auto dev = g.tasks[m].device;
      for (int k = 0; k < g.devices[dev].count; ++k)
        (g.devices[dev].tp == 2 ? pieces : whole).push_back(d->first_host[dev] + k);
    }
    ASSERT_EQ(pieces.size(), 4u);
    ASSERT_EQ(whole.size(), 1u);
    EXPECT_EQ(sent.size(), 5u);
    for (int h : pieces) EXPECT_NEAR(sent[whole[0]] / sent[h], 4.0, 1e-6);
  }
}

}  // namespace
}  // namespace hetsim

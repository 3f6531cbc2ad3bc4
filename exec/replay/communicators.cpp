#include "exec/replay/communicators.hpp"

#include "sim/schedule/unfold.hpp"

#include <algorithm>
#include <cstddef>
#include <set>

namespace hetsim::exec {
namespace {

// Makes the communicators of one group of real devices (in rank order), recording what it made.
class GroupMaker {
 public:
  GroupMaker(const GroupSite& site, ReplayComms& comms) : site_(site), comms_(comms) {}

  Result<Communicators> operator()(const std::vector<int>& reals, const char* what) const {
    std::vector<Device*> members;
    for (int r : reals) members.push_back(site_.devices[static_cast<std::size_t>(r)].get());
    if (site_.world == nullptr) {
      const std::string note = std::string(what) + " collectives: " + site_.backend.transport(members);
      if (reals.size() > 1 && std::find(site_.notes.begin(), site_.notes.end(), note) == site_.notes.end())
        site_.notes.push_back(note);
      return site_.backend.communicators(members);
    }
    Communicators out(reals.size());
    const auto mine = std::find(reals.begin(), reals.end(), site_.me);
    auto sub = site_.world->split(mine != reals.end(), static_cast<int>(mine - reals.begin()));
    if (sub) {
      const auto i = static_cast<std::size_t>(mine - reals.begin());
      auto c = site_.backend.communicator(members[i], *sub);
      if (!c) return c.errors();
      out[i] = std::move(*c);
      comms_.subgroups.push_back(std::move(sub));
    }
    return out;
  }

 private:
  const GroupSite& site_;
  ReplayComms& comms_;
};

// The real devices of `members` (schedule/unfold.hpp: the SimGrid flows group the same members).
std::vector<int> reals_of(const DpLayout& layout, const std::vector<schedule::Member>& members) {
  std::vector<int> out;
  for (const auto& m : members) out.push_back(layout.first_real[m.device] + m.member);
  return out;
}

// Each replica's tp ranks.
Diagnostics make_tp_groups(const GroupMaker& make, const schedule::TaskGraph& g, const DpLayout& layout,
                           ReplayComms& out) {
  out.tp.resize(g.devices.size());
  for (std::uint32_t d = 0; d < g.devices.size(); ++d)
    for (const auto& block : schedule::blocks_of(g, d, g.devices[d].tp)) {
      auto c = make(reals_of(layout, block), "tensor-parallel");
      if (!c) return c.errors();
      out.tp[d].push_back(std::move(*c));
    }
  return {};
}

// The EP groups (schedule::ep_groups, as the SimGrid flows draw them) and, where a device folds
// its experts below its tp, its expert_tp groups (the MoE block's TP collectives: CommCall::ranks).
Diagnostics make_expert_groups(const GroupMaker& make, const schedule::TaskGraph& g, const DpLayout& layout,
                               bool moe_ep, ReplayComms& out) {
  out.ep_of.assign(static_cast<std::size_t>(layout.real_devices), nullptr);
  out.etp_of.assign(static_cast<std::size_t>(layout.real_devices), nullptr);
  auto add = [&](const std::vector<schedule::Member>& members, const char* what, std::vector<Communicators>& owner,
                 std::vector<Communicator*>& of) -> Diagnostics {
    const std::vector<int> reals = reals_of(layout, members);
    auto c = make(reals, what);
    if (!c) return c.errors();
    for (std::size_t m = 0; m < reals.size(); ++m) of[static_cast<std::size_t>(reals[m])] = (*c)[m].get();
    owner.push_back(std::move(*c));
    return {};
  };
  for (std::uint32_t d = 0; d < g.devices.size(); ++d) {
    const int et = g.devices[d].expert_tp_or_tp();
    if (et > 1 && et < g.devices[d].tp)
      for (const auto& block : schedule::blocks_of(g, d, et))
        if (auto errs = add(block, "expert tensor-parallel", out.etp, out.etp_of); !errs.empty()) return errs;
    if (moe_ep)
      for (const auto& group : schedule::ep_groups(g, d))
        if (auto errs = add(group, "expert-parallel", out.ep, out.ep_of); !errs.empty()) return errs;
  }
  return {};
}

Diagnostics make_dispatch_groups(const GroupMaker& make, const schedule::TaskGraph& g, const plan::Plan& p,
                                 const DpLayout& layout, const std::vector<int>& ep_nodes, ReplayComms& out) {
  out.rail_of.assign(static_cast<std::size_t>(layout.real_devices), nullptr);
  out.node_of.assign(static_cast<std::size_t>(layout.real_devices), nullptr);
  auto add = [&](const std::vector<int>& reals, const char* what, std::vector<Communicator*>& of) -> Diagnostics {
    auto c = make(reals, what);
    if (!c) return c.errors();
    for (std::size_t m = 0; m < reals.size(); ++m) of[static_cast<std::size_t>(reals[m])] = (*c)[m].get();
    out.hier.push_back(std::move(*c));
    return {};
  };
  for (std::uint32_t d = 0; d < g.devices.size(); ++d) {
    const int nodes = ep_nodes[d];
    if (nodes <= 1) continue;
    const int k = p.ep / nodes;
    for (const auto& group : schedule::ep_groups(g, d)) {  // EP rank q on node q / k, local index q mod k
      const std::vector<int> reals = reals_of(layout, group);
      auto real = [&](int q) { return reals[static_cast<std::size_t>(q)]; };
      for (int i = 0; i < k; ++i) {
        std::vector<int> rail;
        for (int b = 0; b < nodes; ++b) rail.push_back(real(b * k + i));
        if (auto errs = add(rail, "expert-parallel (across nodes)", out.rail_of); !errs.empty()) return errs;
      }
      if (k > 1)
        for (int b = 0; b < nodes; ++b) {
          std::vector<int> node;
          for (int i = 0; i < k; ++i) node.push_back(real(b * k + i));
          if (auto errs = add(node, "expert-parallel (within a node)", out.node_of); !errs.empty()) return errs;
        }
    }
  }
  return {};
}

Diagnostics make_dp_groups(const GroupMaker& make, const DpLayout& layout, ReplayComms& out) {
  for (const auto& reals : layout.groups) {
    auto c = make(reals, "data-parallel");
    if (!c) return c.errors();
    out.dp.push_back(std::move(*c));
  }
  out.dp_of.resize(static_cast<std::size_t>(layout.real_devices));
  for (std::size_t gi = 0; gi < layout.groups.size(); ++gi)
    for (std::size_t m = 0; m < layout.groups[gi].size(); ++m)
      if (auto* c = out.dp[gi][m].get(); c != nullptr)
        out.dp_of[static_cast<std::size_t>(layout.groups[gi][m])][static_cast<int>(gi)] = c;
  return {};
}

// Under expert parallelism, each data-parallel collective's members that hold the same experts
// (replica ≡ q mod ep: schedule::dp_chunk_members, as the SimGrid flows draw the routed experts'
// part), in rank order; one communicator per distinct member list. Only the groups of
// collectives within the groups (hybrid sharding's all-reduce across them moves the whole shard
// on its own groups).
Diagnostics make_expert_dp_groups(const GroupMaker& make, const schedule::TaskGraph& g, const plan::Plan& p,
                                  const DpLayout& layout, ReplayComms& out) {
  // A collective (task, chunk) of each group that collectives within the groups use.
  std::map<int, std::pair<std::uint32_t, int>> within;
  for (std::uint32_t i = 0; i < layout.member_of.size(); ++i) {
    const auto& per_rank = layout.member_of[i];
    for (std::size_t k = 0; k < per_rank.size(); ++k)
      for (std::size_t c = 0; c < per_rank[k].size(); ++c)
        within.try_emplace(per_rank[k][c], i, static_cast<int>(k * per_rank[k].size() + c));
  }
  std::map<std::vector<int>, std::size_t> made;
  auto made_over = [&](const std::vector<int>& part) -> Result<std::size_t> {
    auto at = made.find(part);
    if (at == made.end()) {
      auto c = make(part, "expert data-parallel");
      if (!c) return c.errors();
      out.edp.push_back(std::move(*c));
      at = made.emplace(part, out.edp.size() - 1).first;
    }
    return at->second;
  };
  // Folded (MoE parallel folding): each member's expert-data-parallel group, keyed by the first
  // group the member joins for the collective.
  for (std::uint32_t i = 0; i < layout.member_of.size(); ++i) {
    if (layout.member_of[i].empty()) continue;
    const std::vector<std::uint32_t> tasks = g.members_of(i);
    if (tasks.front() != i || !schedule::folds_experts(g, tasks)) continue;
    for (const auto& group : schedule::expert_dp_groups(g, tasks)) {
      std::vector<int> part = reals_of(layout, group);
      std::sort(part.begin(), part.end());
      if (part.size() < 2) continue;
      auto at = made_over(part);
      if (!at) return at.errors();
      for (const auto& m : group) {
        const auto task = *std::find_if(tasks.begin(), tasks.end(), [&](std::uint32_t k) { return g.tasks[k].device == m.device; });
        const int gi = layout.member_of[task][static_cast<std::size_t>(m.member % g.devices[m.device].tp)].front();
        const int real = layout.first_real[m.device] + m.member;
        if (auto* c = out.edp[*at][static_cast<std::size_t>(rank_in(part, real))].get(); c != nullptr)
          out.edp_of[static_cast<std::size_t>(real)][gi] = c;
      }
    }
  }
  for (const auto& [gi, at_chunk] : within) {
    const auto [task, chunk] = at_chunk;
    const std::vector<std::uint32_t> tasks = g.members_of(task);
    if (p.ep <= 1 || schedule::folds_experts(g, tasks)) continue;
    for (int q = 0; q < p.ep; ++q) {
      std::vector<int> part = reals_of(layout, schedule::dp_chunk_members(g, tasks, chunk, layout.chunks[task], p.ep, q));
      std::sort(part.begin(), part.end());
      if (part.size() < 2) continue;
      auto at = made_over(part);
      if (!at) return at.errors();
      for (std::size_t m = 0; m < part.size(); ++m)
        if (auto* c = out.edp[*at][m].get(); c != nullptr)
          out.edp_of[static_cast<std::size_t>(part[m])][gi] = c;
    }
  }
  return {};
}

}  // namespace

Result<ReplayComms> make_communicators(const GroupSite& site, const schedule::TaskGraph& g, const plan::Plan& p,
                                       const DpLayout& layout, bool moe_ep, const std::vector<int>& ep_nodes) {
  ReplayComms out;
  const GroupMaker make(site, out);
  if (auto errs = make_tp_groups(make, g, layout, out); !errs.empty()) return errs;
  if (auto errs = make_expert_groups(make, g, layout, moe_ep, out); !errs.empty()) return errs;
  if (auto errs = make_dispatch_groups(make, g, p, layout, ep_nodes, out); !errs.empty()) return errs;
  if (auto errs = make_dp_groups(make, layout, out); !errs.empty()) return errs;
  out.edp_of.resize(static_cast<std::size_t>(layout.real_devices));
  // Folded experts sync apart also without expert parallelism (ep = 1, expert_tp < tp).
  if (moe_ep || schedule::folds_experts(g))
    if (auto errs = make_expert_dp_groups(make, g, p, layout, out); !errs.empty()) return errs;
  return out;
}

}  // namespace hetsim::exec

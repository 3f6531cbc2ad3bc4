#include "exec/replay/dp_groups.hpp"

#include "sim/schedule/unfold.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>

namespace hetsim::exec {

namespace {

std::string degree_list(const std::set<int>& values) {
  std::string out;
  for (int v : values) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace

int rank_in(const std::vector<int>& group, int real) {
  const auto it = std::lower_bound(group.begin(), group.end(), real);
  return it != group.end() && *it == real ? static_cast<int>(it - group.begin()) : -1;
}

Result<DpLayout> dp_layout(const schedule::TaskGraph& g) {
  using schedule::TaskKind;
  DpLayout out;
  const schedule::Unfolding unfolded = schedule::unfold(g);
  out.first_real = unfolded.first;
  out.real_devices = unfolded.count;
  out.member_of.resize(g.size());
  out.pieces_of.resize(g.size());
  out.chunks.assign(g.size(), 0);
  std::map<std::vector<int>, int> index;
  auto group_of = [&](const std::vector<schedule::Member>& members) {
    std::vector<int> reals;
    for (const auto& m : members) reals.push_back(unfolded.real(m));
    std::sort(reals.begin(), reals.end());
    reals.erase(std::unique(reals.begin(), reals.end()), reals.end());
    const auto [it, fresh] = index.try_emplace(reals, static_cast<int>(out.groups.size()));
    if (fresh) out.groups.push_back(reals);
    return it->second;
  };
  auto layer_name = [](const schedule::Task& t) {
    return t.layers > 1 ? "layers " + std::to_string(t.first_layer) + "-" + std::to_string(t.first_layer + t.layers - 1)
                        : "layer " + std::to_string(t.first_layer);
  };
  for (std::uint32_t i = 0; i < g.size(); ++i) {
    const auto& t = g.tasks[i];
    if (t.kind != TaskKind::GradReduce && t.kind != TaskKind::ParamGather) continue;
    const std::vector<std::uint32_t> members = g.members_of(i);
    const int tp = g.devices[t.device].tp;
    if (t.across_groups) {
      auto pieces = [&](std::uint32_t m) { return schedule::dp_pieces(g.devices[g.tasks[m].device]); };
      const long long c_all = schedule::dp_piece_chunks(g, members);
      if (c_all > kMaxDpChunks) {
        std::set<int> counts;
        for (std::uint32_t m : members) counts.insert(static_cast<int>(pieces(m)));
        return Diagnostic{{}, "plan", layer_name(t) + ": hybrid sharding's all-reduce across groups joins groups of " +
                                          degree_list(counts) + " devices (tp · replicas), whose least common multiple, " +
                                          std::to_string(c_all) + ", cuts the layer into more than " +
                                          std::to_string(kMaxDpChunks) + " chunks",
                          "give the groups device counts that divide one another, or zero = 0 or 1"};
      }
      out.chunks[i] = static_cast<int>(c_all);
      const auto& dev = g.devices[t.device];
      out.pieces_of[i].resize(static_cast<std::size_t>(dev.count));
      for (long long c = 0; c < c_all; ++c)  // each member's chunks come in order; chunk c's holder in every group
        out.pieces_of[i][static_cast<std::size_t>(schedule::dp_piece_holder(c, c_all, dev))].push_back(
            group_of(schedule::dp_piece_members(g, members, c, c_all)));
      continue;
    }
    const long long chunks = g.dp_chunks(i);
    if (chunks > kMaxDpChunks) {
      std::set<int> degrees;
      for (std::uint32_t m : members) degrees.insert(g.devices[g.tasks[m].device].tp);
      return Diagnostic{{}, "plan", layer_name(t) + ": its data-parallel " + std::string(schedule::task_kind_name(t.kind)) +
                                        " joins tensor-parallel degrees " + degree_list(degrees) + ", whose least common multiple, " +
                                        std::to_string(chunks) + ", cuts the layer into more than " +
                                        std::to_string(kMaxDpChunks) + " chunks",
                        "give the replica groups tensor-parallel degrees that divide one another (1, 2, 4, 8)"};
    }
    const int c_all = static_cast<int>(chunks);
    out.chunks[i] = c_all;
    const int per = c_all / tp;  // chunks each rank of this device holds
    out.member_of[i].resize(static_cast<std::size_t>(tp));
    for (int k = 0; k < tp; ++k)
      for (int c = k * per; c < (k + 1) * per; ++c)  // every replica of every member, at the rank that holds chunk c
        out.member_of[i][static_cast<std::size_t>(k)].push_back(group_of(schedule::dp_chunk_members(g, members, c, c_all)));
  }
  return out;
}

}  // namespace hetsim::exec

#include "sim/analytic/detail/links.hpp"

#include <algorithm>

namespace hetsim::analytic::detail {

using cost::LinkCost;

LinkCost fabric_cost(const hw::PoolSpec& p) { return cost::fabric_link(p.fabric); }

LinkCost nic_cost(const hw::PoolSpec& p, const hw::NetworkSpec& net) {
  const double eff = p.nic.efficiency / std::max(1.0, net.oversubscription);
  return {p.nic_bandwidth_per_device() * eff, p.nic.latency, p.nic.call_latency, BytesPerSec{0},
          p.nic.all_to_all_efficiency > 0 ? p.nic.all_to_all_efficiency / p.nic.efficiency : 1.0, p.nic.peer_latency};
}

LinkCost slower(LinkCost a, LinkCost b) {
  // A full mesh's per-peer rate bounds a mixed group's (switched fabrics have none: 0).
  BytesPerSec peer = a.per_peer.v > 0 ? a.per_peer : b.per_peer;
  if (b.per_peer.v > 0 && b.per_peer < peer) peer = b.per_peer;
  const BytesPerSec bw = a.bandwidth < b.bandwidth ? a.bandwidth : b.bandwidth;
  const double a2a = std::min(a.bandwidth.v * a.all_to_all, b.bandwidth.v * b.all_to_all) / std::max(1e-300, bw.v);
  // Measured group points only where both sides are the same fabric (a group of one link).
  return {bw, max(a.latency, b.latency), max(a.call, b.call), peer, a2a, max(a.peer_latency, b.peer_latency),
          a.groups == b.groups ? a.groups : nullptr};
}

}  // namespace hetsim::analytic::detail

#pragma once
// The links a collective group's ranks cross (private to sim/analytic): a pool's fabric and
// NICs as cost::LinkCost, and the slower of two for a group that spans pools.

#include "models/cost/collectives.hpp"
#include "models/hw/device.hpp"

namespace hetsim::analytic::detail {

/// The intra-node fabric of pool `p`.
[[nodiscard]] cost::LinkCost fabric_cost(const hw::PoolSpec& p);

/// A device's share of pool `p`'s NICs on network `net`, at the NIC's efficiency over the
/// network's oversubscription.
[[nodiscard]] cost::LinkCost nic_cost(const hw::PoolSpec& p, const hw::NetworkSpec& net);

/// The slower of two links, field by field: what a group spanning both runs at.
[[nodiscard]] cost::LinkCost slower(cost::LinkCost a, cost::LinkCost b);

}  // namespace hetsim::analytic::detail

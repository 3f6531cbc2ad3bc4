#pragma once
// The network a SimGrid simulation runs on, as plain data built from the ClusterSpec: one host per
// real device; per device a port into its node's fabric (NVLink/NVSwitch, PCIe: a non-blocking
// switch, so a port is the only shared piece; on a full mesh, xGMI or Gaudi's RoCE, one link per
// pair of devices instead, hw::LinkSpec::per_peer); per node its NICs and, for
// traffic that leaves a rail or a leaf, one uplink of the NICs' bandwidth divided by the network's
// oversubscription. Every link is split-duplex. Routes are computed here; the SimGrid adapter
// (simgrid_engine.cpp) and the XML export use the same ones. No SimGrid headers here.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/hw/device.hpp"

namespace hetsim::platform {

inline constexpr std::uint32_t kNoLink = 0xffffffffu;

enum class LinkKind : std::uint8_t { FabricPort, MeshLink, Nic, Uplink };

struct Link {
  std::string name;      ///< "p0n3-port5", "p0n3-mesh2-5", "p0n3-nic2", "p0n3-uplink"
  LinkKind kind = LinkKind::FabricPort;
  double bandwidth = 0;  ///< bytes/s per direction: the catalogue figure × its measured efficiency
  double latency = 0;    ///< s; a route's latency is the sum over its links
};

struct Host {
  std::string name;  ///< "p0n3d5": pool 0, node 3, device 5
  int pool = 0, node = 0, slot = 0;
  std::uint32_t port = kNoLink, nic = kNoLink, uplink = kNoLink;
  int rail = 0;  ///< the NIC index within the node
  /// Full-mesh fabrics: the first of the node's pair links (slots i < j in row order), and the
  /// node's device count; kNoLink on a switched fabric.
  std::uint32_t mesh = kNoLink;
  int node_devices = 1;
};

/// One link of a route and the direction it is crossed in (up: from the route's source side).
struct Hop {
  std::uint32_t link = kNoLink;
  bool up = true;
};

struct Platform {
  std::vector<Host> hosts;  ///< pool by pool, node by node, device by device
  std::vector<Link> links;
  std::vector<int> first_host;  ///< per pool
  hw::Topology topology = hw::Topology::FatTree;
  double oversubscription = 1;

  /// The links from host a to host b (a ≠ b): within a node the two fabric ports (on a full
  /// mesh the pair's own link instead); between nodes
  /// the two NICs, and the two nodes' uplinks unless both NICs sit on the same rail of a
  /// rail-optimised network.
  [[nodiscard]] std::vector<Hop> route(int a, int b) const;
  [[nodiscard]] double latency(const std::vector<Hop>& r) const;
  [[nodiscard]] double bottleneck(const std::vector<Hop>& r) const;
};

/// Requires: every pool has ≥ 1 device per node and, when it has several nodes, ≥ 1 NIC.
[[nodiscard]] Platform build(const hw::ClusterSpec& c);

/// The platform as a SimGrid platform file (version 4.1): one zone with Full routing, every
/// host and link, and the route of every ordered pair in `pairs` (all pairs when empty).
[[nodiscard]] std::string to_xml(const Platform& p, const std::vector<std::pair<int, int>>& pairs);

}  // namespace hetsim::platform

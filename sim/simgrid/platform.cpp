#include "sim/simgrid/platform.hpp"

#include <algorithm>
#include <sstream>

namespace hetsim::platform {

Platform build(const hw::ClusterSpec& c) {
  Platform p;
  p.topology = c.network.topology;
  p.oversubscription = std::max(1.0, c.network.oversubscription);
  auto add = [&](std::string name, LinkKind kind, double bw, double lat) {
    p.links.push_back({std::move(name), kind, bw, lat});
    return static_cast<std::uint32_t>(p.links.size() - 1);
  };
  for (std::size_t pi = 0; pi < c.pools.size(); ++pi) {
    const auto& pool = c.pools[pi];
    p.first_host.push_back(static_cast<int>(p.hosts.size()));
    const int dpn = std::max(1, pool.devices_per_node), nics = std::max(1, pool.nics_per_node);
    for (int n = 0; n < pool.nodes; ++n) {
      const std::string node = "p" + std::to_string(pi) + "n" + std::to_string(n);
      // With at least one NIC per device, each device gets its share of the node's NICs as one
      // link (nics/dpn of them); with fewer, blocks of neighbouring devices share a NIC.
      const int ports = std::min(nics, dpn);
      const double per_port = pool.nic.effective().v * static_cast<double>(nics) / ports;
      std::vector<std::uint32_t> nic;
      for (int k = 0; k < ports; ++k)
        nic.push_back(add(node + "-nic" + std::to_string(k), LinkKind::Nic, per_port, pool.nic.latency.v / 2));
      const std::uint32_t uplink =
          pool.nodes > 1 || c.pools.size() > 1
              ? add(node + "-uplink", LinkKind::Uplink, nics * pool.nic.effective().v / p.oversubscription, 0.0)
              : kNoLink;
      for (int d = 0; d < dpn; ++d) {
        Host h;
        h.name = node + "d" + std::to_string(d);
        h.pool = static_cast<int>(pi);
        h.node = n;
        h.slot = d;
        h.port = add(node + "-port" + std::to_string(d), LinkKind::FabricPort, pool.fabric.effective().v,
                     pool.fabric.latency.v / 2);
        h.rail = d * ports / dpn;  // NICs shared by blocks of neighbouring devices
        h.nic = nic[static_cast<std::size_t>(h.rail)];
        h.uplink = uplink;
        h.node_devices = dpn;
        p.hosts.push_back(std::move(h));
      }
      // A full mesh: one direct link per pair of the node's devices, per_peer × efficiency each
      // way, with the fabric's latency; node-mates talk over it alone (see route()).
      if (pool.fabric.per_peer.v > 0 && dpn > 1) {
        const auto first = static_cast<std::uint32_t>(p.links.size());
        for (int i = 0; i < dpn; ++i)
          for (int j = i + 1; j < dpn; ++j)
            add(node + "-mesh" + std::to_string(i) + "-" + std::to_string(j), LinkKind::MeshLink,
                (pool.fabric.per_peer * pool.fabric.efficiency).v, pool.fabric.latency.v);
        for (int d = 0; d < dpn; ++d) p.hosts[p.hosts.size() - static_cast<std::size_t>(dpn - d)].mesh = first;
      }
    }
  }
  return p;
}

std::vector<Hop> Platform::route(int a, int b) const {
  const Host& x = hosts[static_cast<std::size_t>(a)];
  const Host& y = hosts[static_cast<std::size_t>(b)];
  if (x.pool == y.pool && x.node == y.node) {
    if (x.mesh == kNoLink) return {{x.port, true}, {y.port, false}};
    // Pair (i, j), i < j, of n devices: row i starts after the rows of 0 … i − 1.
    const int i = std::min(x.slot, y.slot), j = std::max(x.slot, y.slot), n = x.node_devices;
    const auto pair = x.mesh + static_cast<std::uint32_t>(i * (2 * n - i - 1) / 2 + (j - i - 1));
    // The pair's link alone: a device's links to its node-mates are its fabric, so the port adds
    // no bound where (devices − 1) · per_peer is the device's bandwidth, as on every catalogue
    // mesh. (With the ports as well, SimGrid 3.32 ran some of these flows faster than the pair
    // link they crossed.)
    return {{pair, x.slot < y.slot}};
  }
  const bool same_rail = topology == hw::Topology::RailOptimized && x.rail == y.rail;
  if (same_rail || x.uplink == kNoLink || y.uplink == kNoLink) return {{x.nic, true}, {y.nic, false}};
  return {{x.nic, true}, {x.uplink, true}, {y.uplink, false}, {y.nic, false}};
}

double Platform::latency(const std::vector<Hop>& r) const {
  double s = 0;
  for (const auto& h : r) s += links[h.link].latency;
  return s;
}

double Platform::bottleneck(const std::vector<Hop>& r) const {
  double bw = 1e300;
  for (const auto& h : r) bw = std::min(bw, links[h.link].bandwidth);
  return bw;
}

std::string to_xml(const Platform& p, const std::vector<std::pair<int, int>>& pairs) {
  std::ostringstream o;
  o.precision(10);
  o << "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
    << "<!-- Written by `hetsim platform`: one host per device (speed: 1 Gflop/s, 4 cores, one per\n"
    << "     stream), split-duplex links with the catalogue's bandwidth x efficiency, routes as hetsim\n"
    << "     computes them (docs/simulation.md, section: The simgrid engine). -->\n"
    << "<platform version=\"4.1\">\n  <zone id=\"cluster\" routing=\"Full\">\n";
  for (const auto& h : p.hosts) o << "    <host id=\"" << h.name << "\" speed=\"1Gf\" core=\"4\"/>\n";
  for (const auto& l : p.links)
    o << "    <link id=\"" << l.name << "\" bandwidth=\"" << l.bandwidth << "Bps\" latency=\"" << l.latency
      << "s\" sharing_policy=\"SPLITDUPLEX\"/>\n";
  auto one = [&](int a, int b) {
    o << "    <route src=\"" << p.hosts[static_cast<std::size_t>(a)].name << "\" dst=\""
      << p.hosts[static_cast<std::size_t>(b)].name << "\" symmetrical=\"NO\">";
    for (const auto& h : p.route(a, b))
      o << "<link_ctn id=\"" << p.links[h.link].name << "\" direction=\"" << (h.up ? "UP" : "DOWN") << "\"/>";
    o << "</route>\n";
  };
  if (pairs.empty()) {
    const int n = static_cast<int>(p.hosts.size());
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) one(a, b);
  } else {
    for (const auto& [a, b] : pairs) one(a, b);
  }
  o << "  </zone>\n</platform>\n";
  return o.str();
}

}  // namespace hetsim::platform

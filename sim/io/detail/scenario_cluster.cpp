#include "sim/io/detail/scenario_sections.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "models/base/nearest.hpp"
#include "sim/io/catalog_reader.hpp"
#include "sim/io/detail/hw_tables.hpp"
#include "sim/io/input_file.hpp"

namespace hetsim::io {
namespace {

using detail::as_int;
using detail::pick;
using detail::TableRef;
using detail::TomlReader;

// -------------------------------------------------------------------------------- [cluster]
const hw::LinkSpec* link_or_error(TomlReader& r, const TableRef& t, const char* key,
                                  const hw::Catalog& cat) {
  auto name = r.string(t, key);
  if (!name) return nullptr;
  const hw::LinkSpec* l = cat.find_link(*name);
  if (l == nullptr)
    r.error(r.loc(r.node(t, key)), r.key_path(t, key), "unknown link '" + *name + "'",
            suggest(*name, cat.link_names()));
  return l;
}

// What every pool of the cluster (and every purchase candidate) takes from [cluster.network].
struct PoolDefaults {
  const hw::LinkSpec* net_nic = nullptr;
  std::optional<int> net_nics;
  std::optional<hw::LinkSpec> custom_nic;
  std::vector<std::string> extra_keys;  ///< keys the table may have besides a pool's own
  bool nodes_required = true;
};

// One pool table: the device (catalogue name or inline), nodes, the node's shape and links.
std::optional<hw::PoolSpec> read_pool(TomlReader& r, const TableRef& pt, hw::Catalog& cat, const PoolDefaults& defs) {
  std::vector<std::string> keys = {"name", "device", "nodes", "devices_per_node", "fabric", "nic",
                                   "nics_per_node", "catalog"};
  keys.insert(keys.end(), defs.extra_keys.begin(), defs.extra_keys.end());
  r.check_keys(pt, keys);
  hw::PoolSpec pool;
  // An extra catalogue file (e.g. a device profile from `hetsim-exec calibrate`), relative to
  // the scenario; its devices and links join the catalogue.
  if (auto extra = r.string(pt, "catalog")) {
    // Lexically normal: "out/../profiles/x.toml" resolves even before out/ exists.
    const std::filesystem::path path = (std::filesystem::path(r.file()).parent_path() / *extra).lexically_normal();
    auto text = read_input_file(path, "catalogue file", "write one with `hetsim-exec calibrate --out FILE`");
    if (!text) {
      const Diagnostic& e = text.errors().front();
      r.error(r.loc(r.node(pt, "catalog")), pt.path + ".catalog", e.message + " '" + path.string() + "'", e.hint);
      return std::nullopt;
    }
    for (auto& d : read_catalog_text(*text, path.string(), cat)) r.error(d.where, d.key, d.message, d.hint);
    if (r.failed()) return std::nullopt;
  }
  const toml::node* dev = r.node(pt, "device");
  if (dev == nullptr) {
    r.missing(pt, "device", "\"h100-sxm5\" (a catalogue name; `hetsim catalog` lists them)");
    return std::nullopt;
  }
  if (dev->is_table()) {
    auto d = detail::read_device(r, {dev->as_table(), pt.path + ".device"}, &cat);
    if (!d) return std::nullopt;
    pool.device = *d;
  } else if (auto name = r.string(pt, "device")) {
    const hw::DeviceSpec* d = cat.find_device(*name);
    if (d == nullptr) {
      r.error(r.loc(dev), pt.path + ".device", "unknown device '" + *name + "'",
              suggest(*name, cat.device_names()));
      return std::nullopt;
    }
    pool.device = *d;
  } else {
    return std::nullopt;
  }
  pool.name = r.string(pt, "name").value_or(pool.device.name);
  pool.nodes = as_int(r.integer(pt, "nodes", 0, 1 << 20), defs.nodes_required ? -1 : 0);
  if (pool.nodes < 0) {
    if (!r.node(pt, "nodes")) r.missing(pt, "nodes", "<number of nodes>");
    pool.nodes = 0;
  }
  pool.devices_per_node = as_int(r.integer(pt, "devices_per_node", 1, 4096), pool.device.node.devices);
  // Device counts stay far inside int (and the planner's arithmetic): at most 2^24 devices
  // per pool and in the cluster (the largest published clusters have ~10^5).
  constexpr long long kMaxDevices = 1LL << 24;
  if (static_cast<long long>(pool.nodes) * pool.devices_per_node > kMaxDevices) {
    r.error(r.loc(r.node(pt, "nodes") ? r.node(pt, "nodes") : pt.table), pt.path + ".nodes",
            "nodes × devices_per_node = " + std::to_string(static_cast<long long>(pool.nodes) * pool.devices_per_node) +
                " devices, more than the 16,777,216 (2^24) a pool may have",
            "fewer nodes");
    pool.nodes = 0;
  }
  const hw::LinkSpec* fabric = link_or_error(r, pt, "fabric", cat);
  if (!fabric) fabric = cat.find_link(pool.device.node.fabric);
  const hw::LinkSpec* nic = link_or_error(r, pt, "nic", cat);
  if (nic) pool.nic = *nic;
  else if (defs.custom_nic) pool.nic = *defs.custom_nic;
  else if (defs.net_nic) pool.nic = *defs.net_nic;
  else if (const hw::LinkSpec* l = cat.find_link(pool.device.node.nic)) pool.nic = *l;
  if (fabric) pool.fabric = *fabric;
  // A full mesh (a fabric with per_peer) links every pair of a node's devices: at most 64 of
  // them, and a device's links to its node-mates within its bandwidth, as the SimGrid engine's
  // pair links assume (docs/cost-models.md#full-mesh-fabrics).
  if (pool.fabric.per_peer.v > 0 && pool.devices_per_node > 1) {
    const toml::node* at = r.node(pt, "devices_per_node") ? r.node(pt, "devices_per_node") : pt.table;
    const double links = pool.devices_per_node - 1.0;
    if (pool.devices_per_node > 64)
      r.error(r.loc(at), pt.path + ".devices_per_node",
              "the full-mesh fabric '" + pool.fabric.name + "' cannot join " + std::to_string(pool.devices_per_node) +
                  " devices per node (at most 64 are modelled)",
              "fewer devices_per_node, or a switched fabric (a link without per_peer)");
    else if (links * pool.fabric.per_peer.v > pool.fabric.bandwidth.v * (1 + 1e-9))
      r.error(r.loc(at), pt.path + ".devices_per_node",
              std::to_string(pool.devices_per_node) + " devices per node on the full-mesh fabric '" + pool.fabric.name +
                  "' give each " + std::to_string(pool.devices_per_node - 1) + " links of " +
                  format_bandwidth(pool.fabric.per_peer) + ", more than its " + format_bandwidth(pool.fabric.bandwidth),
              "at most bandwidth / per_peer + 1 devices per node, or a lower per_peer");
  }
  const bool nic_given = r.node(pt, "nic") || defs.custom_nic || defs.net_nic;
  pool.nics_per_node = as_int(r.integer(pt, "nics_per_node", 0, 4096),
                              defs.net_nics.value_or(nic_given && pool.device.node.nics == 0
                                                    ? pool.devices_per_node
                                                    : pool.device.node.nics));
  // A NIC count that follows the device's node scales with a different devices_per_node.
  if (!r.node(pt, "nics_per_node") && !defs.net_nics && pool.devices_per_node != pool.device.node.devices)
    pool.nics_per_node = std::max(1, pool.device.node.nics * pool.devices_per_node / pool.device.node.devices);
  if (pool.nodes > 1 && pool.nics_per_node == 0)
    r.error(r.loc(pt.table), pt.path + ".nics_per_node", "a pool of several nodes needs NICs",
            "set nics_per_node ≥ 1");
  return pool;
}

// ------------------------------------------------------------------------------- [purchase]
void read_purchase(TomlReader& r, const TableRef& root, hw::Catalog& cat, Scenario& s, PoolDefaults d) {
  auto t = r.table(root, "purchase");
  if (!t) return;
  r.check_keys(*t, {"candidate", "objective", "budget_usd", "power_kw", "deadline_days"});
  PurchaseSpec p;
  if (auto o = pick<PurchaseSpec::Objective>(r, *t, "objective", {{"pareto", PurchaseSpec::Objective::Pareto},
                                                                  {"time", PurchaseSpec::Objective::Time},
                                                                  {"cost", PurchaseSpec::Objective::Cost}}))
    p.objective = *o;
  p.budget_usd = r.number(*t, "budget_usd", 1, 1e13).value_or(0);
  p.power_kw = r.number(*t, "power_kw", 0.001, 1e8).value_or(0);
  p.deadline_days = r.number(*t, "deadline_days", 0.001, 1e5).value_or(0);
  d.extra_keys = {"max_nodes", "node_step", "purchase_usd", "rent_usd_per_hour", "lead_time_days"};
  d.nodes_required = false;
  const auto cands = r.table_array(*t, "candidate");
  if (cands.empty() && !r.failed())
    r.error(r.loc(t->table), t->path + ".candidate", "a purchase needs at least one candidate",
            "add a [[purchase.candidate]] with device = \"…\" and max_nodes = …");
  for (const auto& ct : cands) {
    auto pool = read_pool(r, ct, cat, d);
    if (!pool) continue;
    if (r.node(ct, "nodes"))
      r.error(r.loc(r.node(ct, "nodes")), r.key_path(ct, "nodes"), "a candidate has no nodes yet",
              "give max_nodes (and node_step) for how many the search may buy");
    PurchaseSpec::Candidate c;
    c.max_nodes = as_int(r.integer(ct, "max_nodes", 0, 4096), -1);
    if (c.max_nodes < 0) {
      if (!r.node(ct, "max_nodes")) r.missing(ct, "max_nodes", "<most nodes to buy>");
      continue;
    }
    if (c.max_nodes == 0)
      r.error(r.loc(r.node(ct, "max_nodes")), r.key_path(ct, "max_nodes"), "a candidate with max_nodes = 0 can never be bought",
              "remove the candidate or allow at least one node");
    c.node_step = as_int(r.integer(ct, "node_step", 1, 4096), 1);
    c.lead_time_days = r.number(ct, "lead_time_days", 0, 3650).value_or(0);
    if (auto v = r.number(ct, "purchase_usd", 0, 1e9)) pool->device.purchase_usd = *v;
    if (auto v = r.number(ct, "rent_usd_per_hour", 0, 1e6)) pool->device.price_usd_per_hour = *v;
    // [cost] is read after the cluster (its price overrides name pools): its mode, here, from the
    // table itself (the default is rent).
    bool rent = true;
    if (auto ct2 = root.table->get_as<toml::table>("cost"))
      if (auto m = ct2->get_as<std::string>("mode")) rent = m->get() != "own";
    if (!rent && pool->device.purchase_usd <= 0)
      r.error(r.loc(ct.table), r.key_path(ct, "purchase_usd"),
              "no purchase price for '" + pool->device.name + "' (the catalogue has none)",
              "give purchase_usd = <price per device>");
    if (rent && pool->device.price_usd_per_hour <= 0)
      r.error(r.loc(ct.table), r.key_path(ct, "rent_usd_per_hour"),
              "no rental price for '" + pool->device.name + "' (the catalogue has none)",
              "give rent_usd_per_hour = <price per device-hour>");
    for (const auto& other : s.cluster.pools)
      if (other.name == pool->name)
        r.error(r.loc(ct.table), ct.path + ".name", "a candidate and an owned pool are both named '" + pool->name + "'",
                "give the candidate its own name = \"…\"");
    for (const auto& other : p.candidates)
      if (other.pool.name == pool->name)
        r.error(r.loc(ct.table), ct.path + ".name", "two candidates are named '" + pool->name + "'",
                "give each its own name = \"…\"");
    c.pool = std::move(*pool);
    p.candidates.push_back(std::move(c));
  }
  s.purchase = std::move(p);
}

}  // namespace

namespace detail {

void read_cluster(TomlReader& r, const TableRef& root, hw::Catalog& cat, Scenario& s) {
  auto t = r.table(root, "cluster");
  if (!t) {
    // A purchase may start from nothing owned.
    if (!r.node(root, "cluster") && !r.node(root, "purchase")) r.missing(root, "cluster", "at least one [[cluster.pool]]");
    if (!r.node(root, "cluster")) read_purchase(r, root, cat, s, PoolDefaults{});
    return;
  }
  r.check_keys(*t, {"pool", "network", "link"});
  // Inline links first: pools and devices may refer to them.
  for (const auto& lt : r.table_array(*t, "link"))
    if (auto l = detail::read_link(r, lt)) {
      auto it = std::find_if(cat.links.begin(), cat.links.end(), [&](const auto& x) { return x.name == l->name; });
      if (it != cat.links.end()) *it = *l;  // a scenario's own definition wins
      else cat.links.push_back(*l);
    }

  // The network's defaults apply to every pool that does not say otherwise.
  const hw::LinkSpec* net_nic = nullptr;
  std::optional<int> net_nics;
  std::optional<hw::LinkSpec> custom_nic;
  if (auto n = r.table(*t, "network")) {
    r.check_keys(*n, {"nic", "nic_bandwidth", "nic_latency", "nics_per_node", "topology",
                      "oversubscription"});
    net_nic = link_or_error(r, *n, "nic", cat);
    if (auto bw = r.quantity(*n, "nic_bandwidth", Dimension::Bandwidth)) {
      if (r.node(*n, "nic"))
        r.error(r.loc(r.node(*n, "nic_bandwidth")), n->path + ".nic_bandwidth",
                "give either nic or nic_bandwidth, not both");
      if (*bw <= 0)
        r.error(r.loc(r.node(*n, "nic_bandwidth")), n->path + ".nic_bandwidth", "nic_bandwidth must be positive",
                "e.g. \"400Gbps\"");
      hw::LinkSpec l;
      l.name = "custom-nic";
      l.display = "custom NIC";
      l.bandwidth = BytesPerSec{*bw};
      l.latency = Duration{r.quantity(*n, "nic_latency", Dimension::Time).value_or(5e-6)};
      l.efficiency = 1.0;
      l.source = "scenario " + r.file();
      custom_nic = l;
    }
    if (r.node(*n, "nic_latency") && !r.node(*n, "nic_bandwidth"))
      r.error(r.loc(r.node(*n, "nic_latency")), n->path + ".nic_latency",
              "nic_latency applies to a custom NIC only", "give nic_bandwidth too, or drop nic_latency");
    if (auto k = r.integer(*n, "nics_per_node", 0, 4096)) net_nics = static_cast<int>(*k);
    if (auto topo = pick<hw::Topology>(r, *n, "topology", {{"fat-tree", hw::Topology::FatTree},
                                                           {"rail-optimized", hw::Topology::RailOptimized},
                                                           {"torus", hw::Topology::Torus}}))
      s.cluster.network.topology = *topo;
    s.cluster.network.oversubscription =
        r.number(*n, "oversubscription", 1.0, 1000.0).value_or(s.cluster.network.oversubscription);
  }

  auto pools = r.table_array(*t, "pool");
  if (pools.empty() && !r.failed() && !r.node(root, "purchase"))
    r.error(r.loc(t->table), t->path + ".pool", "the cluster has no pools",
            "add a [[cluster.pool]] with device = \"…\" and nodes = …");
  PoolDefaults defaults{net_nic, net_nics, custom_nic, {}, true};
  for (const auto& pt : pools) {
    auto read = read_pool(r, pt, cat, defaults);
    if (!read) continue;
    hw::PoolSpec pool = std::move(*read);
    for (const auto& other : s.cluster.pools)
      if (other.name == pool.name)
        r.error(r.loc(pt.table), pt.path + ".name", "two pools are named '" + pool.name + "'",
                "give each pool of the same device its own name = \"…\"");
    s.cluster.pools.push_back(pool);
    long long total = 0;
    for (const auto& q : s.cluster.pools) total += static_cast<long long>(q.nodes) * q.devices_per_node;
    if (total > (1LL << 24)) {
      r.error(r.loc(pt.table), pt.path, "the cluster has " + std::to_string(total) +
              " devices, more than the 16,777,216 (2^24) hetsim plans for", "fewer or smaller pools");
      s.cluster.pools.back().nodes = 0;
    }
  }
  read_purchase(r, root, cat, s, defaults);
}

}  // namespace detail
}  // namespace hetsim::io

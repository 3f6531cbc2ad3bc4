#include "models/hw/device.hpp"

#include <algorithm>

namespace hetsim::hw {

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::Fp32: return "fp32";
    case Dtype::Tf32: return "tf32";
    case Dtype::Bf16: return "bf16";
    case Dtype::Fp16: return "fp16";
    case Dtype::Fp8: return "fp8";
  }
  return "?";
}

std::string_view group_kind_name(GroupPoint::Kind k) {
  switch (k) {
    case GroupPoint::Kind::AllReduce: return "all_reduce";
    case GroupPoint::Kind::AllGather: return "all_gather";
    case GroupPoint::Kind::ReduceScatter: return "reduce_scatter";
  }
  return "?";
}

double dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::Fp32:
    case Dtype::Tf32: return 4;
    case Dtype::Bf16:
    case Dtype::Fp16: return 2;
    case Dtype::Fp8: return 1;
  }
  return 4;
}

std::optional<FlopRate> DeviceSpec::peak_for(Dtype d) const {
  auto it = peak.find(d);
  if (it == peak.end()) return std::nullopt;
  return it->second;
}

BytesPerSec PoolSpec::nic_bandwidth_per_device() const {
  return nic.bandwidth * (static_cast<double>(nics_per_node) / devices_per_node);
}

std::string_view topology_name(Topology t) {
  switch (t) {
    case Topology::FatTree: return "fat-tree";
    case Topology::RailOptimized: return "rail-optimized";
    case Topology::Torus: return "torus";
  }
  return "?";
}

int ClusterSpec::devices() const {
  int n = 0;
  for (const auto& p : pools) n += p.devices();
  return n;
}

int BlockPlacer::place(int pool, int tp, int count) {
  const auto& ps = c_.pools[static_cast<std::size_t>(pool)];
  const int dpn = std::max(1, ps.devices_per_node);
  int& u = used_[static_cast<std::size_t>(pool)];
  u = (u + tp - 1) / tp * tp;
  if (count <= dpn && u % dpn + count > dpn && (u / dpn + 1) * dpn + count <= ps.devices()) u = (u / dpn + 1) * dpn;
  const int start = u;
  u += count;
  return start;
}

}  // namespace hetsim::hw

#include "models/hw/catalog.hpp"

namespace hetsim::hw {

const DeviceSpec* Catalog::find_device(std::string_view name) const {
  for (const auto& d : devices)
    if (d.name == name) return &d;
  return nullptr;
}

const LinkSpec* Catalog::find_link(std::string_view name) const {
  for (const auto& l : links)
    if (l.name == name) return &l;
  return nullptr;
}

std::vector<std::string> Catalog::device_names() const {
  std::vector<std::string> out;
  for (const auto& d : devices) out.push_back(d.name);
  return out;
}

std::vector<std::string> Catalog::link_names() const {
  std::vector<std::string> out;
  for (const auto& l : links) out.push_back(l.name);
  return out;
}

}  // namespace hetsim::hw

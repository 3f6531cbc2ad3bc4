#pragma once
// The set of known devices and links: the built-in catalogue plus what a scenario adds.

#include <string>
#include <vector>

#include "models/hw/device.hpp"

namespace hetsim::hw {

struct Catalog {
  std::vector<DeviceSpec> devices;  ///< in catalogue order
  std::vector<LinkSpec> links;

  /// nullptr when unknown. Names are matched exactly (they are ids).
  [[nodiscard]] const DeviceSpec* find_device(std::string_view name) const;
  [[nodiscard]] const LinkSpec* find_link(std::string_view name) const;
  [[nodiscard]] std::vector<std::string> device_names() const;
  [[nodiscard]] std::vector<std::string> link_names() const;
};

}  // namespace hetsim::hw

#pragma once
// The catalogue files, embedded at build time by cmake/EmbedCatalog.cmake.

#include <string_view>
#include <vector>

namespace hetsim::io::detail {

struct EmbeddedFile {
  std::string_view name;  ///< "models/catalog/nvidia.toml"
  std::string_view text;
};

[[nodiscard]] const std::vector<EmbeddedFile>& catalog_files();

}  // namespace hetsim::io::detail

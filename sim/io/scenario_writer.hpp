#pragma once
// Writing a scenario back as TOML: what `hetsim buy --out DIR` leaves beside each front point's
// plan, so that the point runs as it is (`hetsim simulate point-1.toml --plan point-1.plan.json`,
// `hetsim-exec run --plan …`).

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "models/base/result.hpp"
#include "sim/plan/plan.hpp"
#include "sim/scenario/scenario.hpp"

namespace hetsim::io {

/// The purchase scenario `source` (the text of `source_file`, which `ps` was read from) as the
/// cluster one front point buys: [purchase] removed, [parallel] replaced by `plan` (the point's
/// plan over `planned`, the point's scenario: its layout as [[parallel.replicas]] and every
/// framework key, so that `hetsim estimate` runs it and `hetsim plan` keeps its framework; the
/// one exception, recompute_modules, is written only with a selective plan, as the reader takes
/// it only there) or
/// removed when `plan` is null, each candidate with
/// nodes[k] > 0 appended to [[cluster.pool]] as it was written (its name made explicit, the
/// purchase-only keys dropped, its purchase_usd / rent_usd_per_hour moved into [cost]), every
/// pool's relative `catalog` path rewritten to be relative to `out_dir`. Comments are not kept;
/// `header` (comment lines) opens the file; `name`, when given, becomes [scenario] name.
[[nodiscard]] Result<std::string> bought_scenario_toml(std::string_view source, const std::string& source_file,
                                                       const PurchaseSpec& ps, const std::vector<int>& nodes,
                                                       const std::filesystem::path& out_dir,
                                                       const std::string& header, const std::string& name = "",
                                                       const Scenario* planned = nullptr,
                                                       const plan::Plan* plan = nullptr);

}  // namespace hetsim::io

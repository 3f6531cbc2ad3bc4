#pragma once
// What [variability]'s rank_by and `hetsim plan --rank-by` accept.

#include <string_view>

namespace hetsim::io {

/// "nominal" → 0, "p1" … "p100" → the percentile; -1 for anything else.
[[nodiscard]] int parse_rank_by(std::string_view text);

}  // namespace hetsim::io

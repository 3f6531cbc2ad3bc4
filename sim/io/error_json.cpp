#include "sim/io/error_json.hpp"

#include <nlohmann/json.hpp>

namespace hetsim::io {

std::string error_json(const Diagnostics& d) {
  const ErrorKind k = worst_kind(d);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& x : d)
    list.push_back({{"file", x.where.file},
                    {"line", x.where.line},
                    {"column", x.where.col},
                    {"key", x.key},
                    {"message", x.message},
                    {"hint", x.hint},
                    {"kind", kind_name(x.kind)}});
  nlohmann::ordered_json j;
  j["error"] = {{"kind", kind_name(k)}, {"exit_status", exit_status(k)}, {"diagnostics", std::move(list)}};
  // Names and messages may quote bytes of the user's input that are not UTF-8: replace them
  // rather than throw.
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

}  // namespace hetsim::io

#include "sim/io/json_strict.hpp"

#include <map>
#include <set>
#include <vector>

namespace hetsim::io {
namespace {

SourceLoc at(std::string_view text, std::size_t byte, const std::string& file) {
  std::uint32_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {file, line, col};
}

// Byte offset of the n-th (1-based) occurrence of "key" used as an object key (followed by ':'),
// or npos.
std::size_t nth_key(std::string_view text, const std::string& key, int n) {
  const std::string q = nlohmann::json(key).dump();
  for (std::size_t pos = text.find(q); pos != std::string_view::npos; pos = text.find(q, pos + 1)) {
    std::size_t e = pos + q.size();
    while (e < text.size() && (text[e] == ' ' || text[e] == '\t' || text[e] == '\n' || text[e] == '\r')) ++e;
    if (e < text.size() && text[e] == ':' && --n == 0) return pos;
  }
  return std::string_view::npos;
}

}  // namespace

Result<nlohmann::ordered_json> parse_json_strict(std::string_view text, const std::string& file,
                                                 const std::string& hint) {
  using json = nlohmann::ordered_json;
  std::vector<std::set<std::string>> open;  // keys seen in each enclosing object
  std::map<std::string, int> seen;          // occurrences of each key so far, in text order
  std::string duplicate;
  int duplicate_n = 0;
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) open.emplace_back();
    if (ev == json::parse_event_t::object_end && !open.empty()) open.pop_back();
    if (ev == json::parse_event_t::key && parsed.is_string()) {
      const std::string k = parsed.get<std::string>();
      const int n = ++seen[k];
      if (!open.empty() && !open.back().insert(k).second && duplicate.empty()) {
        duplicate = k;
        duplicate_n = n;
      }
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text, cb);
  } catch (const json::parse_error& e) {
    // nlohmann reports the byte after the offending one.
    return Diagnostic{at(text, e.byte > 0 ? e.byte - 1 : 0, file), "", std::string("JSON syntax: ") + e.what(), hint};
  } catch (const json::exception& e) {
    // Numbers beyond double range (1e400) and the like: no byte offset is given; point at the
    // first number of that spelling.
    std::string msg = e.what();
    SourceLoc loc{file, 0, 0};
    if (auto q = msg.find('\''); q != std::string::npos) {
      const auto q2 = msg.find('\'', q + 1);
      const std::string lit = msg.substr(q + 1, q2 == std::string::npos ? std::string::npos : q2 - q - 1);
      if (auto pos = text.find(lit); !lit.empty() && pos != std::string_view::npos) loc = at(text, pos, file);
    }
    return Diagnostic{loc, "", "JSON: " + msg,
                      hint.empty() ? "numbers must fit a double (about ±1.8e308)" : hint};
  }
  if (!duplicate.empty()) {
    const std::size_t pos = nth_key(text, duplicate, duplicate_n);
    return Diagnostic{pos == std::string_view::npos ? SourceLoc{file, 0, 0} : at(text, pos, file), duplicate,
                      "duplicate key \"" + duplicate + "\" in a JSON object",
                      hint.empty() ? "each key may appear once per object" : hint};
  }
  return j;
}

}  // namespace hetsim::io

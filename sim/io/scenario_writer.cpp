#include "sim/io/scenario_writer.hpp"

#include <sstream>

#include "sim/io/detail/toml_reader.hpp"

namespace hetsim::io {
namespace {

// A pool's `catalog` is relative to the scenario that names it; the written scenario lives in
// out_dir, so the path is made relative to that (absolute where no relative path exists).
void rebase_catalog(toml::table& pool, const std::filesystem::path& from_dir, const std::filesystem::path& out_dir) {
  auto* c = pool.get_as<std::string>("catalog");
  if (c == nullptr) return;
  const std::filesystem::path p(c->get());
  if (p.is_absolute()) return;
  std::error_code ec;
  const auto target = std::filesystem::weakly_canonical(std::filesystem::absolute(from_dir / p, ec), ec);
  const auto base = std::filesystem::weakly_canonical(std::filesystem::absolute(out_dir, ec), ec);
  auto rel = std::filesystem::relative(target, base, ec);
  *c = (ec || rel.empty() ? target : rel).generic_string();
}

toml::table& subtable(toml::table& t, std::string_view key) {
  if (!t.get_as<toml::table>(key)) {
    t.erase(key);
    t.insert(key, toml::table{});
  }
  return *t.get_as<toml::table>(key);
}

}  // namespace

Result<std::string> bought_scenario_toml(std::string_view source, const std::string& source_file,
                                         const PurchaseSpec& ps, const std::vector<int>& nodes,
                                         const std::filesystem::path& out_dir, const std::string& header,
                                         const std::string& name) {
  Diagnostics diags;
  auto root = detail::parse_toml(source, source_file, diags);
  if (!root) return diags;
  const auto internal = [&](const std::string& why) {
    return about(source_file, "purchase", why, "", ErrorKind::Internal);
  };
  const toml::array* cands = root->at_path("purchase.candidate").as_array();
  if (cands == nullptr || cands->size() != ps.candidates.size() || nodes.size() != ps.candidates.size())
    return internal("the [[purchase.candidate]] tables do not match the purchase that was searched");
  const std::filesystem::path from_dir = std::filesystem::path(source_file).parent_path();

  toml::array bought;
  for (std::size_t k = 0; k < ps.candidates.size(); ++k) {
    if (nodes[k] <= 0) continue;
    const toml::table* ct = (*cands)[k].as_table();
    if (ct == nullptr) return internal("a [[purchase.candidate]] is not a table");
    toml::table pool = *ct;
    const std::string& pool_name = ps.candidates[k].pool.name;
    for (const char* key : {"max_nodes", "node_step", "purchase_usd", "rent_usd_per_hour", "lead_time_days"}) pool.erase(key);
    pool.insert_or_assign("name", pool_name);
    pool.insert_or_assign("nodes", static_cast<std::int64_t>(nodes[k]));
    // The prices the search used stay with the pool: per-pool overrides in [cost].
    for (const char* key : {"purchase_usd", "rent_usd_per_hour"})
      if (const toml::node* v = ct->get(key)) {
        toml::table& cost = subtable(*root, "cost");
        toml::table& prices = subtable(cost, std::string_view(key) == "purchase_usd" ? "purchase_usd" : "price_usd_per_hour");
        prices.insert_or_assign(pool_name, *v);
      }
    bought.push_back(std::move(pool));
  }
  root->erase("purchase");
  root->erase("parallel");

  toml::table& cluster = subtable(*root, "cluster");
  if (!cluster.get_as<toml::array>("pool")) {
    cluster.erase("pool");
    cluster.insert("pool", toml::array{});
  }
  toml::array& pools = *cluster.get_as<toml::array>("pool");
  for (auto& b : bought) pools.push_back(std::move(b));
  for (auto& p : pools)
    if (auto* t = p.as_table()) rebase_catalog(*t, from_dir, out_dir);
  if (pools.empty()) return internal("the point buys nothing and nothing is owned");
  if (!name.empty()) subtable(*root, "scenario").insert_or_assign("name", name);

  std::ostringstream out;
  out << header
      << toml::toml_formatter(*root, toml::toml_formatter::default_flags | toml::format_flags::relaxed_float_precision)
      << "\n";
  return out.str();
}

}  // namespace hetsim::io

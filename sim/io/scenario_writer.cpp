#include "sim/io/scenario_writer.hpp"

#include <algorithm>
#include <sstream>

#include "sim/io/detail/plan_names.hpp"
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

// `plan` over the pools of `s` as a [parallel] table that the reader turns back into the same
// plan: micro_batch, schedule, the search's choices, the framework keys (those only MoE models
// take written only when set, as the reader refuses them on dense ones), and one
// [[parallel.replicas]] per group, `count` data-parallel replicas of cp blocks each.
toml::table parallel_table(const Scenario& s, const plan::Plan& p) {
  toml::table t;
  t.insert("micro_batch", static_cast<std::int64_t>(p.micro_batch));
  t.insert("schedule", detail::kSchedules.name(p.schedule));
  if (p.schedule == cost::Schedule::Interleaved) t.insert("virtual_stages", static_cast<std::int64_t>(p.virtual_stages));
  t.insert("recompute", detail::kRecompute.name(p.recompute));
  if (p.recompute == cost::Recompute::Selective && p.recompute_modules != workload::kDefaultRecomputeModules) {
    toml::array mods;
    for (const auto& n : detail::recompute_module_names(p.recompute_modules)) mods.push_back(n);
    t.insert("recompute_modules", mods);
  }
  t.insert("zero", static_cast<std::int64_t>(p.zero));
  if (p.ep > 1) t.insert("ep", static_cast<std::int64_t>(p.ep));
  if (p.expert_tp > 0) t.insert("expert_tp", static_cast<std::int64_t>(p.expert_tp));
  if (p.cp > 1) t.insert("cp", static_cast<std::int64_t>(p.cp));
  // (A framework key: kept without context parallelism too, as the plan file keeps it.)
  if (p.cp_comm != plan::Plan::CpComm::Ring) t.insert("cp_comm", detail::kCpComm.name(p.cp_comm));
  if (p.pipeline_runs > 1) t.insert("pipeline_runs", static_cast<std::int64_t>(p.pipeline_runs));
  t.insert("sequence_parallel", p.sequence_parallel);
  t.insert("grad_sync", detail::kAlgorithms.name(p.grad_sync));
  t.insert("overlap_grad_reduce", p.overlap_grad_reduce);
  t.insert("overlap_tp_comm", p.overlap_tp_comm);
  t.insert("overlap_tp_backward", p.overlap_tp_backward);
  if (p.overlap_ep_comm) t.insert("overlap_ep_comm", true);
  if (p.ep_dispatch != plan::Plan::EpDispatch::AllToAll) t.insert("ep_dispatch", detail::kEpDispatch.name(p.ep_dispatch));
  if (p.fp8_dispatch) t.insert("fp8_dispatch", true);
  toml::array groups;
  for (const auto& g : p.groups) {
    toml::table gt;
    gt.insert("count", static_cast<std::int64_t>(g.replicas / std::max(1, p.cp)));
    gt.insert("micro_batches", static_cast<std::int64_t>(g.micro_batches));
    toml::array stages;
    for (const auto& st : g.stages) {
      toml::table stt{{"pool", s.cluster.pools[static_cast<std::size_t>(st.pool)].name},
                      {"tp", static_cast<std::int64_t>(st.tp)},
                      {"layers", static_cast<std::int64_t>(st.layers)}};
      stt.is_inline(true);
      stages.push_back(std::move(stt));
    }
    gt.insert("stages", std::move(stages));
    groups.push_back(std::move(gt));
  }
  t.insert("replicas", std::move(groups));
  return t;
}

}  // namespace

Result<std::string> bought_scenario_toml(std::string_view source, const std::string& source_file,
                                         const PurchaseSpec& ps, const std::vector<int>& nodes,
                                         const std::filesystem::path& out_dir, const std::string& header,
                                         const std::string& name, const Scenario* planned, const plan::Plan* plan) {
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
  if (planned != nullptr && plan != nullptr) root->insert("parallel", parallel_table(*planned, *plan));

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

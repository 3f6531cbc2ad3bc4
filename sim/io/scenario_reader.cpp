#include "sim/io/scenario_reader.hpp"

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "models/base/nearest.hpp"
#include "sim/io/detail/scenario_document.hpp"
#include "sim/io/detail/scenario_sections.hpp"
#include "sim/io/detail/toml_reader.hpp"
#include "sim/io/detail/variability_reader.hpp"
#include "sim/io/input_file.hpp"

namespace hetsim::io {
namespace {

using detail::pick;
using detail::TableRef;
using detail::TomlReader;

// ----------------------------------------------------------------------------------- [cost]
void read_cost(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "cost");
  if (!t) return;
  r.check_keys(*t, {"mode", "electricity_usd_per_kwh", "pue", "amortisation_years",
                    "price_usd_per_hour", "purchase_usd"});
  if (auto mode = pick<CostSpec::Mode>(r, *t, "mode", {{"rent", CostSpec::Mode::Rent},
                                                       {"own", CostSpec::Mode::Own}}))
    s.cost.mode = *mode;
  s.cost.electricity_usd_per_kwh = r.number(*t, "electricity_usd_per_kwh", 0, 100).value_or(s.cost.electricity_usd_per_kwh);
  s.cost.pue = r.number(*t, "pue", 1, 10).value_or(s.cost.pue);
  s.cost.amortisation_years = r.number(*t, "amortisation_years", 0.1, 100).value_or(s.cost.amortisation_years);
  // Per-device price overrides, keyed by device or pool name.
  for (const char* key : {"price_usd_per_hour", "purchase_usd"}) {
    auto prices = r.table(*t, key);
    if (!prices) continue;
    std::vector<std::string> names;
    for (const auto& pool : s.cluster.pools) {
      names.push_back(pool.name);
      if (pool.device.name != pool.name) names.push_back(pool.device.name);
    }
    for (auto&& [k, v] : *prices->table) {
      const std::string name(k.str());
      auto price = r.number(*prices, name, 0, 1e9);
      if (!price) continue;
      bool found = false;
      for (auto& pool : s.cluster.pools)
        if (pool.name == name || pool.device.name == name) {
          (std::string_view(key) == "purchase_usd" ? pool.device.purchase_usd
                                                   : pool.device.price_usd_per_hour) = *price;
          found = true;
        }
      if (!found)
        r.error(r.loc(k.source()), prices->path + "." + name, "no pool uses device '" + name + "'",
                suggest(name, names));
    }
  }
}

void read_memory(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "memory");
  if (!t) return;
  r.check_keys(*t, {"runtime_reserve", "comm_buffers", "fragmentation", "gradient_bytes", "expert_gradient_bytes",
                    "optimizer_bytes"});
  if (auto v = r.quantity(*t, "runtime_reserve", Dimension::Size)) s.memory.runtime_reserve = Bytes{*v};
  if (auto v = r.quantity(*t, "comm_buffers", Dimension::Size)) s.memory.comm_buffers = Bytes{*v};
  s.memory.fragmentation = r.number(*t, "fragmentation", 0, 0.9).value_or(s.memory.fragmentation);
  s.memory.gradient_bytes = r.number(*t, "gradient_bytes", 1, 16).value_or(s.memory.gradient_bytes);
  if (auto v = r.number(*t, "expert_gradient_bytes", 1, 16)) {
    s.memory.expert_gradient_bytes = *v;
    if (!s.model.moe())
      r.error(r.loc(r.node(*t, "expert_gradient_bytes")), r.key_path(*t, "expert_gradient_bytes"),
              "expert_gradient_bytes sets the routed experts' gradient width, and this model has experts = " +
                  std::to_string(s.model.experts),
              "remove it (gradient_bytes is every parameter's), or set [model] experts (> 1) and top_k");
  }
  if (auto v = r.number(*t, "optimizer_bytes", 0, 32)) s.memory.optimizer_bytes = *v;
}

void read_reliability(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "reliability");
  if (!t) return;
  r.check_keys(*t, {"mtbf_hours", "checkpoint_bandwidth", "restart_time", "checkpoint_interval"});
  auto& rel = s.reliability;
  rel.mtbf_hours = r.number(*t, "mtbf_hours", 1, 1e9).value_or(rel.mtbf_hours);
  if (auto v = r.quantity(*t, "checkpoint_bandwidth", Dimension::Bandwidth)) {
    if (*v < 1e6)
      r.error(r.loc(r.node(*t, "checkpoint_bandwidth")), r.key_path(*t, "checkpoint_bandwidth"),
              "checkpoint bandwidth below 1 MB/s per device", "give it per device, e.g. \"0.12GB/s\"");
    else
      rel.checkpoint_bandwidth_per_device = BytesPerSec{*v};
  }
  if (auto v = r.quantity(*t, "restart_time", Dimension::Time)) rel.restart = Duration{*v};
  if (auto v = r.quantity(*t, "checkpoint_interval", Dimension::Time)) {
    if (*v < 1)
      r.error(r.loc(r.node(*t, "checkpoint_interval")), r.key_path(*t, "checkpoint_interval"),
              "checkpoint interval under one second", "leave it out for the Young/Daly optimum");
    else
      rel.checkpoint_interval = Duration{*v};
  }
}

void read_reference(TomlReader& r, const TableRef& root, Scenario& s) {
  auto t = r.table(root, "reference");
  if (!t) return;
  r.check_keys(*t, {"step_time_s", "tflops_per_device", "peak_memory", "peak_memory_kind", "source"});
  ReferenceSpec ref;
  ref.step_time_s = r.number(*t, "step_time_s", 0, 1e9).value_or(0);
  ref.tflops_per_device = r.number(*t, "tflops_per_device", 0, 1e6).value_or(0);
  if (auto m = r.quantity(*t, "peak_memory", Dimension::Size)) {
    if (*m <= 0 || *m > 1e15)
      r.error(r.loc(r.node(*t, "peak_memory")), t->path + ".peak_memory",
              "must be between 1 byte and 1 PB per device", "e.g. \"59GiB\"");
    else
      ref.peak_memory = Bytes{*m};
  }
  if (auto k = pick<MemoryKind>(r, *t, "peak_memory_kind", {{"allocated", MemoryKind::Allocated},
                                                           {"reserved", MemoryKind::Reserved},
                                                           {"device", MemoryKind::Device}}))
    ref.peak_memory_kind = *k;
  ref.source = r.string(*t, "source").value_or("");
  if (ref.step_time_s <= 0 && ref.peak_memory.v <= 0 && !r.failed())
    r.missing(*t, "step_time_s", "<measured seconds per step> (or peak_memory = \"…GiB\")");
  s.reference = ref;
}

std::string stem_of(const std::string& file) {
  std::filesystem::path p(file);
  return p.stem().string();
}

}  // namespace

Result<Scenario> parse_scenario(std::string_view text, const std::string& file, const hw::Catalog& catalog,
                                ReadOptions options) {
  Diagnostics diags;
  auto tbl = detail::parse_toml(text, file, diags);
  if (!tbl) return diags;
  // A sweep is many scenarios: `hetsim sweep` reads it (sim/io/sweep_reader.hpp), one point at a time.
  if (const toml::node* sw = tbl->get("sweep")) {
    TomlReader r(file, diags);
    r.error(r.loc(sw), "sweep", "this scenario has a [sweep] table: it describes many runs, not one",
            "use `hetsim sweep " + file + "` (docs/scenario-format.md#sweep), or remove [sweep] to run one scenario");
    return diags;
  }
  return detail::read_scenario_document(*tbl, file, catalog, options);
}

namespace detail {

Result<Scenario> read_scenario_document(const toml::table& doc, const std::string& file, const hw::Catalog& catalog,
                                        ReadOptions options) {
  Diagnostics diags;
  TomlReader r(file, diags);
  const TableRef root{&doc, ""};
  r.check_keys(root, {"sweep", "schema", "scenario", "model", "training", "cluster", "parallel", "cost",
                      "memory", "reliability", "reference", "purchase", "variability"});
  if (auto schema = r.integer(root, "schema", 1, 1000); schema && *schema != 1)
    r.error(r.loc(r.node(root, "schema")), "schema", "unsupported schema " + std::to_string(*schema),
            "this hetsim reads schema = 1");

  Scenario s;
  s.file = file;
  s.name = stem_of(file);
  if (auto sc = r.table(root, "scenario")) {
    r.check_keys(*sc, {"name", "description", "seed"});
    s.name = r.string(*sc, "name").value_or(s.name);
    (void)r.string(*sc, "description");
    s.seed = static_cast<std::uint64_t>(r.integer(*sc, "seed", 0, INT64_MAX).value_or(1));
  }
  hw::Catalog cat = catalog;
  read_model(r, root, s);
  read_training(r, root, s);
  read_cluster(r, root, cat, s);
  read_cost(r, root, s);
  read_memory(r, root, s);
  read_reliability(r, root, s);
  read_reference(r, root, s);
  read_variability(r, root, s);
  if (!r.failed() && s.model.positions == workload::Positions::Learned &&
      s.training.seq_len > s.model.max_positions)
    r.error(r.loc(r.node(root, "training")), "training.seq_len",
            "seq_len " + std::to_string(s.training.seq_len) + " exceeds the model's " +
                std::to_string(s.model.max_positions) + " learned positions",
            "shorten seq_len or raise model.max_positions");
  if (r.failed()) return diags;

  SourceLoc where{file, 0, 0};
  if (!options.plan) {
    if (auto t = r.table(root, "parallel")) {
      r.check_keys(*t, kParallelKeys);
      read_framework(r, *t, s, s.framework);
      read_recompute_modules(r, *t, s, s.framework, true);
    }
    if (r.failed()) return diags;
    return s;
  }
  s.plan = read_parallel(r, root, s, where);
  if (r.failed()) return diags;
  if (s.plan) plan::copy_framework(*s.plan, s.framework);
  if (s.plan) {
    Diagnostics pd = validate_plan(s, *s.plan, where);
    if (!pd.empty()) return pd;
  }
  return s;
}

}  // namespace detail

Result<Scenario> read_scenario(const std::filesystem::path& file, const hw::Catalog& catalog, ReadOptions options) {
  auto text = read_input_file(file, "scenario file");
  if (!text) return text.errors();
  return parse_scenario(*text, file.string(), catalog, options);
}

}  // namespace hetsim::io

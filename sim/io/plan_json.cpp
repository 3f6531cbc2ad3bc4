#include "sim/io/plan_json.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/base/nearest.hpp"
#include "sim/io/detail/plan_names.hpp"
#include "sim/io/input_file.hpp"
#include "sim/io/json_strict.hpp"
#include "sim/io/scenario_reader.hpp"

namespace hetsim::io {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

using detail::kAlgorithms;
using detail::kCpComm;
using detail::kEpDispatch;
using detail::kRecompute;
using detail::kRecomputeModules;
using detail::recompute_module_names;
using detail::kSchedules;
using detail::Names;

class Reader {
 public:
  Reader(std::string file, Diagnostics& d) : file_(std::move(file)), d_(d) {}
  void error(const std::string& path, std::string msg, std::string hint = {}) {
    Diagnostic d;
    d.where.file = file_;
    d.key = path;
    d.message = std::move(msg);
    d.hint = std::move(hint);
    d_.push_back(std::move(d));
  }
  void check_keys(const json& obj, const std::string& path, const std::vector<std::string>& allowed) {
    for (const auto& [k, v] : obj.items()) {
      if (std::find(allowed.begin(), allowed.end(), k) == allowed.end())
        error(path + "/" + k, "unknown key '" + k + "'", suggest(k, allowed));
    }
  }
  std::optional<long long> integer(const json& obj, const std::string& path, const char* key, long long lo,
                                   long long hi, bool required) {
    const std::string p = path + "/" + key;
    if (!obj.contains(key)) {
      if (required) error(p, std::string("missing key '") + key + "'");
      return std::nullopt;
    }
    const json& v = obj[key];
    if (!v.is_number_integer()) {
      error(p, std::string("expected an integer for '") + key + "'");
      return std::nullopt;
    }
    const long long x = v.get<long long>();
    if (x < lo || x > hi) {
      error(p, std::string(key) + " = " + std::to_string(x) + " is out of range",
            "expected " + std::to_string(lo) + " to " + std::to_string(hi));
      return std::nullopt;
    }
    return x;
  }
  std::optional<bool> boolean(const json& obj, const std::string& path, const char* key) {
    if (!obj.contains(key)) return std::nullopt;
    if (!obj[key].is_boolean()) {
      error(path + "/" + key, std::string("expected true or false for '") + key + "'");
      return std::nullopt;
    }
    return obj[key].get<bool>();
  }
  template <class E>
  std::optional<E> choice(const json& obj, const std::string& path, const char* key, const Names<E>& names) {
    if (!obj.contains(key)) return std::nullopt;
    std::vector<std::string> all;
    for (const auto& [n, v] : names.all) all.push_back(n);
    if (!obj[key].is_string()) {
      error(path + "/" + key, std::string("expected a string for '") + key + "'");
      return std::nullopt;
    }
    const std::string s = obj[key].get<std::string>();
    for (const auto& [n, v] : names.all)
      if (n == s) return v;
    error(path + "/" + key, "unknown " + std::string(key) + " \"" + s + "\"", suggest(s, all));
    return std::nullopt;
  }

 private:
  std::string file_;
  Diagnostics& d_;
};

}  // namespace

std::string plan_to_json(const Scenario& s, const plan::Plan& p) {
  ordered_json j;
  j["format"] = "hetsim-plan";
  j["version"] = kPlanFormatVersion;
  j["scenario"] = s.name;
  j["micro_batch"] = p.micro_batch;
  j["schedule"] = kSchedules.name(p.schedule);
  j["virtual_stages"] = p.virtual_stages;
  j["recompute"] = kRecompute.name(p.recompute);
  // absent: the attention core (plans written before the key)
  if (p.recompute == cost::Recompute::Selective && p.recompute_modules != workload::kDefaultRecomputeModules)
    j["recompute_modules"] = recompute_module_names(p.recompute_modules);
  j["zero"] = p.zero;
  if (p.ep > 1) j["ep"] = p.ep;  // absent: 1 (plans written before expert parallelism)
  if (p.expert_tp > 0) j["expert_tp"] = p.expert_tp;  // absent: each stage's tp
  j["sequence_parallel"] = p.sequence_parallel;
  j["grad_sync"] = kAlgorithms.name(p.grad_sync);
  j["overlap_grad_reduce"] = p.overlap_grad_reduce;
  j["overlap_tp_comm"] = p.overlap_tp_comm;
  j["overlap_tp_backward"] = p.overlap_tp_backward;
  if (p.overlap_ep_comm) j["overlap_ep_comm"] = true;  // absent: false (plans written before it)
  if (p.ep_dispatch != plan::Plan::EpDispatch::AllToAll) j["ep_dispatch"] = kEpDispatch.name(p.ep_dispatch);  // absent: all-to-all
  if (p.fp8_dispatch) j["fp8_dispatch"] = true;  // absent: false (plans written before it)
  if (p.cp > 1) j["cp"] = p.cp;  // absent: 1 (plans written before context parallelism)
  if (p.cp_comm != plan::Plan::CpComm::Ring) j["cp_comm"] = kCpComm.name(p.cp_comm);  // absent: p2p
  if (p.pipeline_runs > 1) j["pipeline_runs"] = p.pipeline_runs;  // absent: 1 (plans written before it)
  j["groups"] = ordered_json::array();
  for (const auto& g : p.groups) {
    ordered_json gj;
    gj["replicas"] = g.replicas;
    gj["micro_batches"] = g.micro_batches;
    gj["stages"] = ordered_json::array();
    for (const auto& st : g.stages)
      gj["stages"].push_back({{"pool", s.cluster.pools[st.pool].name}, {"tp", st.tp},
                              {"first_layer", st.first_layer}, {"layers", st.layers}});
    j["groups"].push_back(gj);
  }
  return j.dump(2) + "\n";
}

Result<plan::Plan> parse_plan_json(std::string_view text, const std::string& file, const Scenario& s) {
  Diagnostics d;
  auto parsed = parse_json_strict(text, file);
  if (!parsed) return parsed.errors();
  const json j = *parsed;
  Reader r(file, d);
  if (!j.is_object()) return Diagnostic{{file, 1, 1}, "", "a plan must be a JSON object", ""};
  r.check_keys(j, "", {"format", "version", "scenario", "micro_batch", "schedule", "virtual_stages", "recompute",
                       "recompute_modules", "zero", "ep", "expert_tp", "sequence_parallel", "grad_sync", "overlap_grad_reduce", "overlap_tp_comm", "overlap_tp_backward", "overlap_ep_comm", "ep_dispatch", "fp8_dispatch", "cp", "cp_comm", "pipeline_runs", "groups"});
  if (!j.contains("format") || j["format"] != "hetsim-plan")
    r.error("/format", "not a hetsim plan (\"format\": \"hetsim-plan\" missing)");
  if (auto v = r.integer(j, "", "version", 1, 1000, true); v && *v != kPlanFormatVersion)
    r.error("/version", "unsupported plan version " + std::to_string(*v),
            "this hetsim reads version " + std::to_string(kPlanFormatVersion));
  plan::Plan p;
  p.micro_batch = static_cast<int>(r.integer(j, "", "micro_batch", 1, 1 << 20, true).value_or(1));
  p.schedule = r.choice(j, "", "schedule", kSchedules).value_or(p.schedule);
  p.virtual_stages = static_cast<int>(r.integer(j, "", "virtual_stages", 1, 1024, false)
                                          .value_or(p.schedule == cost::Schedule::Interleaved ? 2 : 1));
  p.recompute = r.choice(j, "", "recompute", kRecompute).value_or(p.recompute);
  if (j.contains("recompute_modules")) {
    // An array of Megatron-Core module names (validate_plan checks them against the model).
    const json& mods = j["recompute_modules"];
    const auto names = recompute_module_names();
    if (p.recompute != cost::Recompute::Selective) {
      r.error("/recompute_modules", detail::modules_without_selective(p.recompute),
              "set \"recompute\": \"selective\", or remove recompute_modules");
    } else if (!mods.is_array()) {
      r.error("/recompute_modules", "expected an array of module names", "e.g. [\"layernorm\", \"moe_act\"]");
    } else {
      workload::RecomputeModules set = 0;
      for (std::size_t i = 0; i < mods.size(); ++i) {
        const std::string at = "/recompute_modules/" + std::to_string(i);
        if (!mods[i].is_string()) {
          r.error(at, "expected a module name (a string)", suggest("", names));
          continue;
        }
        const auto mod = kRecomputeModules.find(mods[i].get<std::string>());
        if (!mod) {
          r.error(at, "unknown recompute module " + mods[i].dump(), suggest(mods[i].get<std::string>(), names));
          continue;
        }
        set = static_cast<workload::RecomputeModules>(set | workload::module_bit(*mod));
      }
      p.recompute_modules = set;
    }
  }
  p.zero = static_cast<int>(r.integer(j, "", "zero", 0, 3, false).value_or(p.zero));
  p.ep = static_cast<int>(r.integer(j, "", "ep", 1, 1 << 20, false).value_or(p.ep));
  p.expert_tp = static_cast<int>(r.integer(j, "", "expert_tp", 1, 1024, false).value_or(p.expert_tp));
  p.sequence_parallel = r.boolean(j, "", "sequence_parallel").value_or(p.sequence_parallel);
  p.grad_sync = r.choice(j, "", "grad_sync", kAlgorithms).value_or(p.grad_sync);
  p.overlap_grad_reduce = r.boolean(j, "", "overlap_grad_reduce").value_or(p.overlap_grad_reduce);
  p.overlap_tp_comm = r.boolean(j, "", "overlap_tp_comm").value_or(p.overlap_tp_comm);
  p.overlap_tp_backward = r.boolean(j, "", "overlap_tp_backward").value_or(p.overlap_tp_backward);
  p.overlap_ep_comm = r.boolean(j, "", "overlap_ep_comm").value_or(p.overlap_ep_comm);
  p.ep_dispatch = r.choice(j, "", "ep_dispatch", kEpDispatch).value_or(p.ep_dispatch);
  p.fp8_dispatch = r.boolean(j, "", "fp8_dispatch").value_or(p.fp8_dispatch);
  p.cp = static_cast<int>(r.integer(j, "", "cp", 1, 1024, false).value_or(p.cp));
  p.cp_comm = r.choice(j, "", "cp_comm", kCpComm).value_or(p.cp_comm);
  p.pipeline_runs = static_cast<int>(r.integer(j, "", "pipeline_runs", 1, 1 << 20, false).value_or(p.pipeline_runs));
  if (!j.contains("groups") || !j["groups"].is_array() || j["groups"].empty()) {
    r.error("/groups", "a plan needs a non-empty array \"groups\"");
    return d;
  }
  std::vector<std::string> pools;
  for (const auto& pool : s.cluster.pools) pools.push_back(pool.name);
  for (std::size_t gi = 0; gi < j["groups"].size(); ++gi) {
    const json& gj = j["groups"][gi];
    const std::string gp = "/groups/" + std::to_string(gi);
    if (!gj.is_object()) { r.error(gp, "a group must be an object"); continue; }
    r.check_keys(gj, gp, {"replicas", "micro_batches", "stages"});
    plan::ReplicaGroup g;
    g.replicas = static_cast<int>(r.integer(gj, gp, "replicas", 1, 1 << 24, true).value_or(1));
    g.micro_batches = static_cast<int>(r.integer(gj, gp, "micro_batches", 1, 1 << 24, true).value_or(1));
    if (!gj.contains("stages") || !gj["stages"].is_array() || gj["stages"].empty()) {
      r.error(gp + "/stages", "a group needs a non-empty array \"stages\"");
      continue;
    }
    int next_layer = 0;
    for (std::size_t si = 0; si < gj["stages"].size(); ++si) {
      const json& sj = gj["stages"][si];
      const std::string sp = gp + "/stages/" + std::to_string(si);
      if (!sj.is_object()) { r.error(sp, "a stage must be an object"); continue; }
      r.check_keys(sj, sp, {"pool", "tp", "first_layer", "layers"});
      plan::Stage st;
      if (!sj.contains("pool") || !sj["pool"].is_string()) {
        r.error(sp + "/pool", "missing or non-string \"pool\"", suggest("", pools));
        continue;
      }
      const std::string name = sj["pool"].get<std::string>();
      auto it = std::find(pools.begin(), pools.end(), name);
      if (it == pools.end()) {
        r.error(sp + "/pool", "unknown pool '" + name + "'", suggest(name, pools));
        continue;
      }
      st.pool = static_cast<int>(it - pools.begin());
      st.tp = static_cast<int>(r.integer(sj, sp, "tp", 1, 4096, true).value_or(1));
      st.layers = static_cast<int>(r.integer(sj, sp, "layers", 1, 1 << 20, true).value_or(1));
      st.first_layer = static_cast<int>(r.integer(sj, sp, "first_layer", 0, 1 << 20, false).value_or(next_layer));
      next_layer = st.first_layer + st.layers;
      g.stages.push_back(st);
    }
    p.groups.push_back(g);
  }
  if (!d.empty()) return d;
  Diagnostics v = validate_plan(s, p, {file, 0, 0});
  if (!v.empty()) return v;
  return p;
}

Result<plan::Plan> read_plan_json(const std::filesystem::path& file, const Scenario& s) {
  auto text = read_input_file(file, "plan file", "write one with `hetsim plan --out FILE` or --save-plan");
  if (!text) return text.errors();
  return parse_plan_json(*text, file.string(), s);
}

}  // namespace hetsim::io

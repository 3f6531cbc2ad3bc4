#include "sim/io/catalog_reader.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "models/base/nearest.hpp"
#include "sim/io/detail/catalog_data.hpp"
#include "sim/io/detail/hw_tables.hpp"

namespace hetsim::io {

namespace detail {

namespace {

// `[[link.group]]`: a collective measured over `ranks` devices inside one node of this fabric.
void read_group_point(TomlReader& r, const TableRef& t, hw::LinkSpec& l) {
  r.check_keys(t, {"ranks", "collective", "call", "busbw", "source"});
  hw::GroupPoint g;
  const auto ranks = r.integer(t, "ranks", 2, 4096);
  if (!ranks && !r.node(t, "ranks")) r.missing(t, "ranks", "4");
  std::vector<std::string> kinds;
  for (const auto k : hw::GroupPoint::kAllKinds) kinds.emplace_back(hw::group_kind_name(k));
  const auto kind = r.choice(t, "collective", kinds);
  if (!kind && !r.node(t, "collective")) r.missing(t, "collective", "\"all_reduce\"");
  const auto call = r.quantity(t, "call", Dimension::Time);
  if (!call && !r.node(t, "call")) r.missing(t, "call", "\"30us\"");
  const auto busbw = r.quantity(t, "busbw", Dimension::Bandwidth);
  if (!busbw && !r.node(t, "busbw")) r.missing(t, "busbw", "\"350GB/s\"");
  bool ok = ranks && kind && call && busbw;
  if (call && !(*call > 0 && *call <= 0.01)) {
    r.error(r.loc(r.node(t, "call")), r.key_path(t, "call"), "call must be above 0 and at most 10ms",
            "the fixed cost of one call, fitted to the sweep, e.g. \"30us\"");
    ok = false;
  }
  // At most the rate the rings reach (bandwidth × efficiency): the SimGrid flows run a group's
  // traffic on the fabric at that rate, so a faster point could not be replayed there.
  if (busbw && !(*busbw > 0 && *busbw <= l.effective().v * (1 + 1e-9))) {
    r.error(r.loc(r.node(t, "busbw")), r.key_path(t, "busbw"),
            fmt::format("busbw must be above 0 and at most the link's bandwidth × efficiency ({:.4g} GB/s)", l.effective().v / 1e9),
            "nccl-tests' bus bandwidth of the group, e.g. \"350GB/s\"; a group faster than the link's rings (NVLink SHARP) is not modelled");
    ok = false;
  }
  if (!l.scale_up && r.node(t, "ranks") != nullptr) {
    r.error(r.loc(r.node(t, "ranks")), r.key_path(t, "ranks"), "group points describe groups inside one node; this link is kind = \"scale-out\"",
            "move the point under the node's fabric, or set kind = \"scale-up\"");
    ok = false;
  }
  if (!ok) return;
  g.ranks = static_cast<int>(*ranks);
  g.kind = *std::find_if(hw::GroupPoint::kAllKinds.begin(), hw::GroupPoint::kAllKinds.end(),
                         [&](hw::GroupPoint::Kind k) { return hw::group_kind_name(k) == *kind; });
  g.call = Duration{*call};
  g.busbw = BytesPerSec{*busbw};
  g.source = r.string(t, "source").value_or("");
  for (const auto& other : l.groups)
    if (other.ranks == g.ranks && other.kind == g.kind) {
      r.error(r.loc(r.node(t, "ranks")), r.key_path(t, "ranks"),
              fmt::format("a second {} point for {} ranks", *kind, g.ranks), "one point per collective and group size");
      return;
    }
  l.groups.push_back(std::move(g));
}

}  // namespace

std::optional<hw::LinkSpec> read_link(TomlReader& r, const TableRef& t) {
  r.check_keys(t, {"name", "display", "kind", "bandwidth", "latency", "call_latency", "efficiency", "per_peer",
                   "all_to_all_efficiency", "peer_latency", "group", "source"});
  hw::LinkSpec l;
  auto name = r.string(t, "name");
  if (!name) { r.missing(t, "name", "\"my-link\""); return std::nullopt; }
  l.name = *name;
  l.display = r.string(t, "display").value_or(l.name);
  auto kind = r.choice(t, "kind", {"scale-up", "scale-out"});
  l.scale_up = kind.value_or("scale-out") == "scale-up";
  auto bw = r.quantity(t, "bandwidth", Dimension::Bandwidth);
  if (!bw && !r.node(t, "bandwidth")) r.missing(t, "bandwidth", "\"400Gbps\"");
  if (bw && *bw <= 0) r.error(r.loc(r.node(t, "bandwidth")), r.key_path(t, "bandwidth"), "bandwidth must be positive");
  l.bandwidth = BytesPerSec{bw.value_or(0)};
  l.latency = Duration{r.quantity(t, "latency", Dimension::Time).value_or(0)};
  l.call_latency = Duration{r.quantity(t, "call_latency", Dimension::Time).value_or(0)};
  l.efficiency = r.number(t, "efficiency", 0.01, 1.5).value_or(1.0);
  if (auto pp = r.quantity(t, "per_peer", Dimension::Bandwidth)) {
    const auto at = r.loc(r.node(t, "per_peer"));
    if (*pp <= 0)
      r.error(at, r.key_path(t, "per_peer"), "per_peer must be positive");
    else if (!l.scale_up)
      r.error(at, r.key_path(t, "per_peer"), "per_peer describes a full-mesh fabric; this link is kind = \"scale-out\"",
              "drop per_peer, or set kind = \"scale-up\"");
    else if (bw && *pp > *bw)
      r.error(at, r.key_path(t, "per_peer"), "per_peer is above the link's bandwidth",
              "per_peer is one peer's share of `bandwidth` (e.g. 64GB/s of 448GB/s)");
    else
      l.per_peer = BytesPerSec{*pp};
  }
  l.all_to_all_efficiency = r.number(t, "all_to_all_efficiency", 0.01, 1.5).value_or(0.0);
  if (auto pl = r.quantity(t, "peer_latency", Dimension::Time)) {
    if (*pl < 0 || *pl > 1e-3)
      r.error(r.loc(r.node(t, "peer_latency")), r.key_path(t, "peer_latency"),
              "peer_latency must be between 0 and 1ms", "a communication library's cost per peer, e.g. \"2.7us\"");
    else
      l.peer_latency = Duration{*pl};
  }
  for (const auto& gt : r.table_array(t, "group")) read_group_point(r, gt, l);
  l.source = r.string(t, "source").value_or("");
  return l;
}

namespace {

// `measured_gemms = [{ m = 1024, n = 1024, k = 1024, dtype = "fp32", time = "61.2ms" }, …]`:
// GEMMs timed on the device (hetsim-exec calibrate). Each must be a shape, in a format the device
// has a peak for, no faster than that peak, and given once.
void read_measured_gemms(TomlReader& r, const TableRef& t, hw::DeviceSpec& d) {
  for (const TableRef& g : r.table_array(t, "measured_gemms")) {
    r.check_keys(g, {"m", "n", "k", "dtype", "time"});
    hw::MeasuredGemm mg;
    bool ok = true;
    for (auto [key, into] : {std::pair{"m", &mg.m}, std::pair{"n", &mg.n}, std::pair{"k", &mg.k}}) {
      auto v = r.integer(g, key, 1, std::int64_t{1} << 24);
      if (!v && !r.node(g, key)) r.missing(g, key, "a dimension of the GEMM, e.g. 1024");
      if (!v) ok = false;
      else *into = static_cast<double>(*v);
    }
    auto dt = r.choice(g, "dtype", {"fp32", "tf32", "bf16", "fp16", "fp8"});
    if (!dt && !r.node(g, "dtype")) r.missing(g, "dtype", "\"fp32\"");
    auto time = r.quantity(g, "time", Dimension::Time);
    if (!time && !r.node(g, "time")) r.missing(g, "time", "\"61.2ms\"");
    if (!dt || !time || !ok) continue;
    for (hw::Dtype x : hw::kAllDtypes)
      if (hw::dtype_name(x) == *dt) mg.dtype = x;
    const auto peak = d.peak_for(mg.dtype);
    if (!peak) {
      r.error(r.loc(r.node(g, "dtype")), r.key_path(g, "dtype"),
              "the device has no " + *dt + " peak, so a " + *dt + " GEMM cannot be priced",
              "add " + *dt + " to the device's peak, or remove this measurement");
      continue;
    }
    if (!(*time > 0 && *time <= 3600)) {
      r.error(r.loc(r.node(g, "time")), r.key_path(g, "time"), "a measured GEMM takes more than 0 and at most an hour",
              "times are per call, e.g. \"61.2ms\"");
      continue;
    }
    mg.time = Duration{*time};
    const double rate = 2 * mg.m * mg.n * mg.k / *time;
    if (rate > peak->v * (1 + 1e-3)) {  // 0.1 %: the written figures' rounding
      r.error(r.loc(r.node(g, "time")), r.key_path(g, "time"),
              fmt::format("this GEMM would run at {:.4g} FLOP/s, above the device's {} peak of {:.4g} FLOP/s", rate, *dt,
                          peak->v),
              "the time or the peak is wrong; hetsim-exec calibrate writes the fastest measured rate as the peak");
      continue;
    }
    const bool again = std::any_of(d.measured_gemms.begin(), d.measured_gemms.end(), [&](const hw::MeasuredGemm& o) {
      return o.m == mg.m && o.n == mg.n && o.k == mg.k && o.dtype == mg.dtype;
    });
    if (again) {
      r.error(r.loc(r.node(g, "m")), g.path, "this shape and format is measured twice", "keep one measurement of it");
      continue;
    }
    d.measured_gemms.push_back(mg);
  }
}

}  // namespace

std::optional<hw::DeviceSpec> read_device(TomlReader& r, const TableRef& t, const hw::Catalog* known) {
  r.check_keys(t, {"name", "display", "vendor", "peak", "memory", "memory_bandwidth", "tdp",
                   "price_usd_per_hour", "purchase_usd", "mtbf_hours", "node", "efficiency",
                   "measured_gemms", "sources"});
  hw::DeviceSpec d;
  auto name = r.string(t, "name");
  if (!name) { r.missing(t, "name", "\"my-accelerator\""); return std::nullopt; }
  d.name = *name;
  d.display = r.string(t, "display").value_or(d.name);
  d.vendor = r.string(t, "vendor").value_or("");

  if (auto peak = r.table(t, "peak")) {
    r.check_keys(*peak, {"fp32", "tf32", "bf16", "fp16", "fp8"});
    bool given = false;
    for (hw::Dtype dt : hw::kAllDtypes)
      if (auto v = r.quantity(*peak, hw::dtype_name(dt), Dimension::Compute)) {
        given = true;
        // Physical range of one device: a MFLOP/s (a calibrated host core under a sanitizer or an
        // emulator measures well under a GFLOP/s) to an EFLOP/s.
        if (!(*v >= 1e6 && *v <= 1e18))
          r.error(r.loc(r.node(*peak, hw::dtype_name(dt))), r.key_path(*peak, hw::dtype_name(dt)),
                  "peak must be between 1 MFLOPS and 1 EFLOPS per device", "e.g. \"989TFLOPS\"");
        else
          d.peak[dt] = FlopRate{*v};
      }
    if (d.peak.empty() && !given)
      r.error(r.loc(peak->table), peak->path, "a device needs at least one peak rate",
              "e.g. bf16 = \"989TFLOPS\"");
  } else {
    r.missing(t, "peak", "{ bf16 = \"989TFLOPS\" }");
  }
  auto need_q = [&](const char* key, Dimension dim, const char* example, double lo, double hi,
                    const char* range) -> double {
    auto v = r.quantity(t, key, dim);
    if (!v && !r.node(t, key)) r.missing(t, key, example);
    if (v && !(*v >= lo && *v <= hi)) {
      r.error(r.loc(r.node(t, key)), r.key_path(t, key), std::string(key) + " must be between " + range,
              std::string("e.g. ") + example);
      return 0;
    }
    return v.value_or(0);
  };
  d.memory = Bytes{need_q("memory", Dimension::Size, "\"80GiB\"", 1024.0 * 1024, 1024.0 * 1024 * 1024 * 1024 * 1024,
                          "1 MiB and 1 PiB")};
  d.memory_bandwidth = BytesPerSec{need_q("memory_bandwidth", Dimension::Bandwidth, "\"3.35TB/s\"", 1e8, 1e21,
                                          "0.1 GB/s and 1 ZB/s (an idealised device)")};
  d.tdp = Watts{r.quantity(t, "tdp", Dimension::Power).value_or(0)};
  d.price_usd_per_hour = r.number(t, "price_usd_per_hour", 0, 1e6).value_or(0);
  d.purchase_usd = r.number(t, "purchase_usd", 0, 1e9).value_or(0);
  d.mtbf_hours = r.number(t, "mtbf_hours", 0, 1e9).value_or(0);

  if (auto node = r.table(t, "node")) {
    r.check_keys(*node, {"devices", "fabric", "nics", "nic"});
    d.node.devices = static_cast<int>(r.integer(*node, "devices", 1, 4096).value_or(8));
    d.node.nics = static_cast<int>(r.integer(*node, "nics", 0, 4096).value_or(d.node.devices));
    for (const char* key : {"fabric", "nic"}) {
      auto link = r.string(*node, key);
      if (!link) { r.missing(*node, key, "\"<link name>\""); continue; }
      if (known && !known->find_link(*link))
        r.error(r.loc(r.node(*node, key)), r.key_path(*node, key), "unknown link '" + *link + "'",
                suggest(*link, known->link_names()));
      (std::string_view(key) == "fabric" ? d.node.fabric : d.node.nic) = *link;
    }
  } else {
    r.missing(t, "node", "{ devices = 8, fabric = \"nvlink4\", nics = 8, nic = \"ib-ndr-400\" }");
  }

  if (auto eff = r.table(t, "efficiency")) {
    r.check_keys(*eff, {"gemm", "gemm_fp8", "gemm_fp8_precise", "gemm_half_dim", "sms", "tile_m", "tile_n",
                        "tile_overhead", "attention", "attention_half_seq", "attention_head_half", "attention_bwd",
                        "attention_bwd_wide", "attention_noncausal", "attention_fa2", "memory", "launch_overhead",
                        "host_overhead", "overlap_slowdown", "norm_memory", "loss_memory",
                        "optimizer_memory", "unvectorized_memory", "score_memory", "dispatch_bandwidth"});
    auto& e = d.efficiency;
    e.gemm = r.number(*eff, "gemm", 0.01, 1).value_or(e.gemm);
    e.gemm_fp8 = r.number(*eff, "gemm_fp8", 0.01, 1).value_or(e.gemm_fp8);
    e.gemm_fp8_precise = r.number(*eff, "gemm_fp8_precise", 0.01, 1).value_or(e.gemm_fp8_precise);
    // Promoting partial sums to fp32 costs issue slots: never faster than fast accumulation.
    if (e.gemm_fp8_precise > e.main_loop(hw::Dtype::Fp8))
      r.error(r.loc(r.node(*eff, "gemm_fp8_precise")), r.key_path(*eff, "gemm_fp8_precise"),
              fmt::format("{:g} is above the fast-accumulation fp8 main loop {:g} ({})", e.gemm_fp8_precise,
                          e.main_loop(hw::Dtype::Fp8), e.gemm_fp8 > 0 ? "gemm_fp8" : "gemm, there being no gemm_fp8"),
              "promoting the sums to fp32 is at most as fast: give gemm_fp8 the fast-accumulation figure");
    e.gemm_half_dim = r.number(*eff, "gemm_half_dim", 0, 1e6).value_or(e.gemm_half_dim);
    e.sms = static_cast<int>(r.integer(*eff, "sms", 0, 100000).value_or(e.sms));
    e.tile_m = static_cast<int>(r.integer(*eff, "tile_m", 1, 4096).value_or(e.tile_m));
    e.tile_n = static_cast<int>(r.integer(*eff, "tile_n", 1, 4096).value_or(e.tile_n));
    e.attention = r.number(*eff, "attention", 0.01, 1).value_or(e.attention);
    e.attention_half_seq = r.number(*eff, "attention_half_seq", 0, 1e7).value_or(e.attention_half_seq);
    e.attention_head_half = r.number(*eff, "attention_head_half", 0, 4096).value_or(e.attention_head_half);
    e.attention_bwd = r.number(*eff, "attention_bwd", 0.1, 10).value_or(e.attention_bwd);
    e.attention_bwd_wide = r.number(*eff, "attention_bwd_wide", 0.1, 1).value_or(e.attention_bwd_wide);
    e.attention_noncausal = r.number(*eff, "attention_noncausal", 0.5, 2).value_or(e.attention_noncausal);
    e.attention_fa2 = r.number(*eff, "attention_fa2", 0.05, 1).value_or(e.attention_fa2);
    e.memory = r.number(*eff, "memory", 0.01, 1).value_or(e.memory);
    e.norm_memory = r.number(*eff, "norm_memory", 0.001, 1).value_or(e.norm_memory);
    e.loss_memory = r.number(*eff, "loss_memory", 0.001, 1).value_or(e.loss_memory);
    e.optimizer_memory = r.number(*eff, "optimizer_memory", 0.001, 1).value_or(e.optimizer_memory);
    e.unvectorized_memory = r.number(*eff, "unvectorized_memory", 0.001, 1).value_or(e.unvectorized_memory);
    e.score_memory = r.number(*eff, "score_memory", 0.001, 1).value_or(e.score_memory);
    e.overlap_slowdown = r.number(*eff, "overlap_slowdown", 0, 0.9).value_or(e.overlap_slowdown);
    // Per-kernel and per-tile times: physical only between 0 and a millisecond (a kernel that
    // costs more than that to start is a unit mistake).
    auto time = [&](const char* key, Duration& into) {
      auto v = r.quantity(*eff, key, Dimension::Time);
      if (!v) return;
      if (*v < 0 || *v > 1e-3) {
        r.error(r.loc(r.node(*eff, key)), r.key_path(*eff, key),
                "must be between 0 and 1ms per kernel or tile", "per-kernel costs are microseconds, e.g. \"4us\"");
        return;
      }
      into = Duration{*v};
    };
    if (auto v = r.quantity(*eff, "dispatch_bandwidth", Dimension::Bandwidth)) {
      if (*v <= 0 || *v > 1e14)
        r.error(r.loc(r.node(*eff, "dispatch_bandwidth")), r.key_path(*eff, "dispatch_bandwidth"),
                "must be above 0 and at most 100TB/s", "a rank's dispatch rate, e.g. \"308GB/s\"");
      else
        e.dispatch_bandwidth = BytesPerSec{*v};
    }
    time("tile_overhead", e.tile_overhead);
    time("launch_overhead", e.launch_overhead);
    time("host_overhead", e.host_overhead);
  }
  read_measured_gemms(r, t, d);
  if (auto src = r.table(t, "sources")) {
    for (auto&& [k, v] : *src->table)
      if (v.is_string()) d.sources[std::string(k.str())] = v.as_string()->get();
  }
  return d;
}

}  // namespace detail

Diagnostics read_catalog_text(std::string_view text, const std::string& file, hw::Catalog& into) {
  Diagnostics diags;
  auto tbl = detail::parse_toml(text, file, diags);
  if (!tbl) return diags;
  detail::TomlReader r(file, diags);
  const detail::TableRef root{&*tbl, ""};
  r.check_keys(root, {"link", "device"});
  // A later definition of the same name replaces the earlier one.
  auto upsert = [](auto& list, auto item) {
    auto it = std::find_if(list.begin(), list.end(), [&](const auto& x) { return x.name == item.name; });
    if (it != list.end()) *it = std::move(item);
    else list.push_back(std::move(item));
  };
  for (const auto& lt : r.table_array(root, "link"))
    if (auto l = detail::read_link(r, lt)) upsert(into.links, *l);
  for (const auto& dt : r.table_array(root, "device"))
    if (auto d = detail::read_device(r, dt, &into)) upsert(into.devices, *d);
  return diags;
}

namespace {

// The text with every `[device.sources]` table's lines emptied (their line breaks kept, so that
// a message still names the right line; a link's one-line `source` stays). The built-in files
// hold no multi-line strings, so a table runs from its header to the next line opening with `[`.
std::string without_sources(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool skipping = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with('[')) skipping = line.starts_with("[device.sources]");
    if (!skipping) out += line;
    if (end < text.size()) out += '\n';
    pos = end + 1;
  }
  return out;
}

}  // namespace

Result<hw::Catalog> builtin_catalog(bool with_sources) {
  hw::Catalog cat;
  Diagnostics all;
  auto read = [&](const detail::EmbeddedFile& f) {
    auto d = with_sources ? read_catalog_text(f.text, std::string(f.name), cat)
                          : read_catalog_text(without_sources(f.text), std::string(f.name), cat);
    all.insert(all.end(), d.begin(), d.end());
  };
  // Links first: devices refer to them.
  for (const auto& f : detail::catalog_files())
    if (f.name.find("links") != std::string_view::npos) read(f);
  for (const auto& f : detail::catalog_files())
    if (f.name.find("links") == std::string_view::npos) read(f);
  if (!all.empty()) return with_kind(std::move(all), ErrorKind::Internal);  // compiled in: a bug
  for (auto& d : cat.devices) d.builtin = true;
  return cat;
}

}  // namespace hetsim::io

#include "exec/calibrate/calibrate.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <thread>

#include "exec/comm/shm_group.hpp"

namespace hetsim::exec {

GemmFit fit_gemm(const std::vector<GemmSample>& samples) {
  GemmFit best;
  double best_err = 1e300;
  const auto n = static_cast<Eigen::Index>(samples.size());
  for (double h = 0; h <= 512; h += 4) {
    // t_i = x0 · flops_i·(d+h)/d + x1, weighted by 1/t_i so every size counts alike.
    Eigen::MatrixXd A(n, 2);
    Eigen::VectorXd b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto& s = samples[static_cast<std::size_t>(i)];
      const double d = std::min({s.m, s.n, s.k});
      const double w = 1.0 / s.seconds;
      A(i, 0) = 2 * s.m * s.n * s.k * (d + h) / d * w;
      A(i, 1) = w;
      b(i) = 1.0;
    }
    const Eigen::VectorXd x = A.colPivHouseholderQr().solve(b);
    if (x(0) <= 0) continue;
    const double err = std::sqrt((A * x - b).squaredNorm() / static_cast<double>(n));
    if (err < best_err) {
      best_err = err;
      best.peak_flops = 1.0 / x(0);
      best.half_dim = h;
      best.launch_s = std::max(0.0, x(1));
      best.rms_rel_error = err;
    }
  }
  return best;
}

namespace {

template <class F>
double time_per_call(Device& dev, F&& f, double budget_s) {
  f();  // warm up
  int calls = 0;
  const std::int64_t t0 = dev.now_ns();
  std::int64_t t = t0;
  do {
    f();
    ++calls;
    t = dev.now_ns();
  } while (static_cast<double>(t - t0) * 1e-9 < budget_s && calls < 1000);
  return static_cast<double>(t - t0) * 1e-9 / calls;
}

}  // namespace

Profile calibrate(Backend& backend, double seconds) {
  Profile p;
  auto dev = backend.open(0);
  const std::vector<std::array<int, 3>> shapes = {
      {64, 64, 64},     {128, 128, 128},  {256, 256, 256},  {512, 512, 512},  {768, 768, 768},
      {1024, 1024, 1024}, {2048, 256, 256}, {256, 2048, 256}, {1024, 64, 1024}, {32, 1024, 1024},
      {2048, 1024, 256}, {512, 2048, 512}};
  const double per = seconds * 0.7 / static_cast<double>(shapes.size() + 2);
  // Operands in the device's own memory (host or GPU).
  float* a = dev->workspace(0, 2048 * 2048);
  float* b = dev->workspace(1, 2048 * 2048);
  float* c = dev->workspace(2, 2048 * 2048);
  for (const auto& s : shapes) {
    const double t = time_per_call(*dev, [&] { dev->gemm(s[0], s[1], s[2], a, b, c); }, per);
    p.samples.push_back({double(s[0]), double(s[1]), double(s[2]), t});
  }
  p.gemm = fit_gemm(p.samples);
  // Attention-shaped GEMMs (sequence × half sequence × head dim), as replay runs them.
  {
    const double t = time_per_call(*dev, [&] { dev->gemm(1024, 512, 64, a, b, c); }, per);
    const double model = 2.0 * 1024 * 512 * 64 / (p.gemm.peak_flops * 64 / (64 + p.gemm.half_dim)) + p.gemm.launch_s;
    p.attention_efficiency = std::clamp(model / t * 64 / (64 + p.gemm.half_dim), 0.01, 1.0);
  }
  // Streaming bandwidth: read one float, write one, over 64 MiB.
  {
    const std::size_t count = 16u << 20;
    float* src = dev->workspace(0, count);
    float* dst = dev->workspace(1, count);
    const double t = time_per_call(*dev, [&] { dev->stream(src, dst, count); }, per);
    p.memory_bandwidth = 8.0 * static_cast<double>(count) / t;
    const double tc = time_per_call(*dev, [&] { dev->copy(src, dst, count); }, per);
    p.copy_bandwidth = 4.0 * static_cast<double>(count) / tc;
  }
  // Collectives between two devices over the shared-memory group: all-reduce time against
  // message size, t = a + b·S, read as the ring model's 2α + S/bw.
  if (dev->host_memory()) {
    ShmGroup grp(2);
    std::vector<double> sizes, times;
    for (std::size_t floats : {std::size_t{256}, std::size_t{4096}, std::size_t{65536}, std::size_t{1} << 20}) {
      std::vector<float> x(floats, 1.0f), y(floats, 2.0f);
      const int reps = floats < 100000 ? 200 : 20;
      double t = 0;
      std::thread other([&] {
        for (int r = 0; r < reps + 1; ++r) grp.all_reduce(1, y.data(), floats);
      });
      grp.all_reduce(0, x.data(), floats);  // warm up together
      const std::int64_t t0 = dev->now_ns();
      for (int r = 0; r < reps; ++r) grp.all_reduce(0, x.data(), floats);
      t = static_cast<double>(dev->now_ns() - t0) * 1e-9 / reps;
      other.join();
      sizes.push_back(4.0 * static_cast<double>(floats));
      times.push_back(t);
    }
    Eigen::MatrixXd A(static_cast<Eigen::Index>(sizes.size()), 2);
    Eigen::VectorXd rhs(static_cast<Eigen::Index>(sizes.size()));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double w = 1.0 / times[i];  // relative errors count alike
      A(static_cast<Eigen::Index>(i), 0) = w;
      A(static_cast<Eigen::Index>(i), 1) = sizes[i] * w;
      rhs(static_cast<Eigen::Index>(i)) = 1.0;
    }
    const Eigen::VectorXd x = A.colPivHouseholderQr().solve(rhs);
    if (x(1) > 0) {
      p.link_latency_s = std::max(0.0, x(0)) / 2;
      p.link_bandwidth = 1.0 / x(1);
    }
  }
  return p;
}

std::string profile_toml(const Profile& p, const std::string& name, double memory_bytes, int devices) {
  const std::string src = "measured by `hetsim-exec calibrate` on this machine";
  std::string o = fmt::format("# Device profile written by `hetsim-exec calibrate` (load it with catalog = \"…\" in a\n"
                              "# [[cluster.pool]]). GEMM fit: peak {:.4g} FLOP/s, half_dim {:.0f}, launch {:.3g} s,\n"
                              "# rms relative error {:.3f} over {} shapes.\n\n",
                              p.gemm.peak_flops, p.gemm.half_dim, p.gemm.launch_s, p.gemm.rms_rel_error, p.samples.size());
  o += fmt::format("[[link]]\nname = \"{}-copy\"\ndisplay = \"shared-memory copy between {} devices\"\nkind = \"scale-up\"\n"
                   "bandwidth = \"{:.6g}GB/s\"\nlatency = \"{:.4g}us\"\nefficiency = 1.0\nsource = \"{}\"\n\n",
                   name, name, (p.link_bandwidth > 0 ? p.link_bandwidth : p.copy_bandwidth) / 1e9,
                   p.link_bandwidth > 0 ? p.link_latency_s * 1e6 : 1.0,
                   p.link_bandwidth > 0 ? src + " (all-reduce over the shared-memory group, fitted)" : src + " (copy; latency assumed)");
  o += fmt::format("[[device]]\nname = \"{}\"\ndisplay = \"calibrated {} device\"\nvendor = \"host\"\n"
                   "peak = {{ fp32 = \"{:.6g}GFLOPS\" }}\nmemory = \"{:.6g}GiB\"\nmemory_bandwidth = \"{:.6g}GB/s\"\n"
                   "tdp = \"15W\"\nprice_usd_per_hour = 0.05\n"
                   "node = {{ devices = {}, fabric = \"{}-copy\", nics = {}, nic = \"{}-copy\" }}\n"
                   "efficiency = {{ gemm = 1.0, gemm_half_dim = {:.0f}, attention = {:.4f}, memory = 1.0, "
                   "launch_overhead = \"{:.4g}us\" }}\n\n[device.sources]\npeak = \"{}\"\nmemory = \"{}\"\n"
                   "efficiency = \"{}\"\npower = \"assumption: 15 W per core\"\nprice = \"assumption\"\n",
                   name, name, p.gemm.peak_flops / 1e9, memory_bytes / (1024.0 * 1024 * 1024), p.memory_bandwidth / 1e9,
                   devices, name, devices, name, p.gemm.half_dim, p.attention_efficiency, p.gemm.launch_s * 1e6, src, src,
                   src);
  return o;
}

}  // namespace hetsim::exec

#include "exec/calibrate/calibrate.hpp"

#include <Eigen/Core>
#include <Eigen/LU>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>


namespace hetsim::exec {

namespace {

// min |A·x − b| for two unknowns: each column scaled to unit length, then the 2 × 2 normal
// equations in closed form. Fixed-size Eigen: the QR solvers' templates cost minutes of
// compilation under the sanitizers, and two columns need none of them. Collinear columns
// (fewer than two distinct samples) give x = (NaN, NaN), which every caller skips.
Eigen::Vector2d least_squares2(const Eigen::MatrixX2d& A, const Eigen::VectorXd& b) {
  const Eigen::Vector2d norms = A.colwise().norm().transpose();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (!(norms(0) > 0) || !(norms(1) > 0)) return {nan, nan};
  const Eigen::MatrixX2d S = A * norms.cwiseInverse().asDiagonal();
  const Eigen::Matrix2d N = S.transpose() * S;
  const double det = N.determinant();
  if (!(std::abs(det) > 1e-12)) return {nan, nan};
  const Eigen::Vector2d y = N.inverse() * (S.transpose() * b);
  return y.cwiseQuotient(norms);
}

}  // namespace

GemmFit fit_gemm(const std::vector<GemmSample>& samples) {
  GemmFit best;
  double best_err = 1e300;
  const auto n = static_cast<Eigen::Index>(samples.size());
  for (double h = 0; h <= 4096; h += 8) {  // tensor-core GEMMs saturate late: half_dim of 1000 and more
    // t_i = x0 · flops_i·(d+h)/d + x1, weighted by 1/t_i so every size counts alike.
    Eigen::MatrixX2d A(n, 2);
    Eigen::VectorXd b(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      const auto& s = samples[static_cast<std::size_t>(i)];
      const double d = std::min({s.m, s.n, s.k});
      const double w = 1.0 / s.seconds;
      A(i, 0) = 2 * s.m * s.n * s.k * (d + h) / d * w;
      A(i, 1) = w;
      b(i) = 1.0;
    }
    const Eigen::Vector2d x = least_squares2(A, b);
    if (!(x(0) > 0)) continue;
    const double err = std::sqrt((A * x - b).squaredNorm() / static_cast<double>(n));
    if (err < best_err) {
      best_err = err;
      best.peak_flops = 1.0 / x(0);
      best.half_dim = h;
      // The catalogue takes 0–1 ms per kernel; a fit beyond it is the noise of a loaded host
      // (seen under AddressSanitizer on 2 busy cores), which the fit's rms error shows.
      best.launch_s = std::clamp(x(1), 0.0, 1e-3);
      best.rms_rel_error = err;
    }
  }
  return best;
}

namespace {

// Seconds per call of f. Calls are queued back to back and a batch is timed with one wait for
// the device, as a training step queues its kernels: on a GPU the per-call figure then holds the
// launch gap and not the host's synchronisation (about 20 us on the device machine, which made
// every GEMM look launch-bound); on the host, where each call runs synchronously, batching
// changes nothing. The median of at least three batches; one call where a call takes more than a
// third of the budget, the warm-up call itself where it took more than the whole budget, unless
// `warm` asks for the median of three warm calls at least, whatever the budget (the GEMMs the
// profile writes as measured: two calibrations minutes apart timed single long GEMMs up to 25–30 %
// apart on the development VM, one call each).
template <class F>
double time_per_call(Device& dev, F&& f, double budget_s, bool warm = false) {
  std::int64_t t = host_clock_ns();
  f();  // warm up
  (void)dev.resolve();
  const double cold = static_cast<double>(host_clock_ns() - t) * 1e-9;
  if (cold > budget_s && !warm) return cold;  // the warm-up alone spent the budget: its time, cold
  t = host_clock_ns();
  f();
  (void)dev.resolve();
  const double one = std::max(1e-9, static_cast<double>(host_clock_ns() - t) * 1e-9);
  // A call too long for three batches within the budget (a slow host, a sanitizer build) is
  // timed once: the budget bounds the calibration, not a minimum call count.
  if (3 * one > budget_s && !warm) return one;
  const int batch = static_cast<int>(std::clamp(budget_s / 4 / one, 1.0, 1000.0));
  const std::int64_t t0 = host_clock_ns();
  std::vector<double> per;
  if (batch == 1) per.push_back(one);  // a timed warm call of its own
  do {
    t = host_clock_ns();
    for (int i = 0; i < batch; ++i) f();
    (void)dev.resolve();  // waits for the device
    per.push_back(static_cast<double>(host_clock_ns() - t) * 1e-9 / batch);
  } while ((per.size() < 3 || static_cast<double>(host_clock_ns() - t0) * 1e-9 < budget_s) && per.size() < 1000);
  std::nth_element(per.begin(), per.begin() + static_cast<std::ptrdiff_t>(per.size() / 2), per.end());
  return per[per.size() / 2];
}

// The calibration load on devices beside the one measured, each on a thread of its own, round
// after round until stopped (at the latest when it goes out of scope).
class Load {
 public:
  Load(const std::vector<Device*>& devices, const std::vector<std::array<int, 3>>& shapes) {
    try {
      for (Device* d : devices)
        threads_.emplace_back([this, d, &shapes] {
          try {
            while (!stop_.load() && calibration_load(*d, shapes, stop_) > 0) rounds_.fetch_add(1);
          } catch (...) {  // a load device that fails stops loading; the profile says so (failed())
          }
          if (!stop_.load()) failed_.store(true);
        });
    } catch (...) {  // a thread that could not start: stop and join the ones that did
      stop();
      throw;
    }
  }
  Load(const Load&) = delete;
  Load& operator=(const Load&) = delete;
  ~Load() { stop(); }
  void stop() {
    stop_ = true;
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }
  /// A load device stopped before it was told to (no memory for its kernels, or it failed).
  [[nodiscard]] bool failed() const { return failed_.load(); }

 private:
  std::atomic<bool> stop_{false}, failed_{false};
  std::atomic<long> rounds_{0};
  std::vector<std::thread> threads_;
};

}  // namespace

int calibration_load(Device& dev, const std::vector<std::array<int, 3>>& shapes, const std::atomic<bool>& stop) {
  int ran = 0;
  auto run = [&](auto&& kernel) {
    if (stop.load()) return;
    kernel();
    (void)dev.resolve();
    ++ran;
  };
  std::size_t largest = 1;
  for (const auto& s : shapes)
    largest = std::max({largest, std::size_t(s[0]) * s[2], std::size_t(s[2]) * s[1], std::size_t(s[0]) * s[1]});
  {
    void* a = dev.workspace(0, 4 * largest);
    void* b = dev.workspace(1, 4 * largest);
    void* c = dev.workspace(2, 4 * largest);
    if (a == nullptr || b == nullptr || c == nullptr) return ran;  // no memory for the load: none
    for (const auto& s : shapes) run([&] { dev.gemm(s[0], s[1], s[2], Format::Fp32, a, b, c); });
  }
  {
    const std::size_t count = std::size_t{16} << 20;
    void* src = dev.workspace(0, 4 * count);
    void* dst = dev.workspace(1, 4 * count);
    if (src == nullptr || dst == nullptr) return ran;
    run([&] { dev.elementwise(count, Format::Fp32, src, dst); });
    run([&] { dev.norm(2048, 512, Format::Fp32, src, dst, false); });
    run([&] { dev.norm(2048, 512, Format::Fp32, src, dst, true); });
  }
  {
    const AttentionShape s{4, 256, 64, true};
    const std::size_t one = std::size_t(s.heads) * s.seq * s.head_dim * 4;
    void* qkv = dev.workspace(0, 3 * one);
    void* g = dev.workspace(1, 3 * one);
    void* o = dev.workspace(2, 3 * one);
    if (qkv == nullptr || g == nullptr || o == nullptr) return ran;
    run([&] { dev.attention(s, Format::Fp32, qkv, o, g, false); });
    run([&] { dev.attention(s, Format::Fp32, qkv, o, g, true); });
  }
  {
    const std::size_t params = std::size_t{1} << 20;
    auto* state = static_cast<float*>(dev.workspace(2, 7 * 4 * params));
    if (state == nullptr) return ran;
    run([&] { dev.adam(params, state); });
  }
  return ran;
}

Profile calibrate(Backend& backend, double seconds, const std::vector<std::array<int, 3>>& extra_shapes,
                  const std::vector<Device*>& alongside) {
  Profile p;
  p.alongside = static_cast<int>(alongside.size());
  auto dev = backend.open(0);
  // A GPU (memory of its own) gets shapes and sizes that fill it; on the host the small set
  // keeps the calibration to its few seconds.
  const bool gpu = !dev->host_memory();
  std::vector<std::array<int, 3>> shapes = {
      {64, 64, 64},     {128, 128, 128},  {256, 256, 256},  {512, 512, 512},  {768, 768, 768},
      {1024, 1024, 1024}, {2048, 256, 256}, {256, 2048, 256}, {1024, 64, 1024}, {32, 1024, 1024},
      {2048, 1024, 256}, {512, 2048, 512}};
  if (gpu)
    shapes.insert(shapes.end(), {{2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192}, {8192, 2048, 4096},
                                 {4096, 1024, 8192}, {8192, 8192, 1024}});
  std::size_t largest = gpu ? std::size_t{8192} * 8192 : std::size_t{2048} * 2048;
  for (const auto& s : extra_shapes) {
    if (std::find(shapes.begin(), shapes.end(), s) != shapes.end()) continue;
    shapes.push_back(s);
    largest = std::max({largest, std::size_t(s[0]) * s[2], std::size_t(s[2]) * s[1], std::size_t(s[0]) * s[1]});
  }
  // The other devices' load, from the first kernel timed to the last (not the link's measurement).
  Load load(alongside, shapes);
  // A GPU fits each format on its own (tensor cores reach their peak at larger sizes than fp32);
  // the host scales the fp32 fit by the speed ratio at its largest square.
  const int formats = gpu ? 3 : 1;
  const double per = seconds * 0.7 / static_cast<double>(formats * shapes.size() + 8);
  // Operands in the device's own memory (host or GPU).
  void* a = dev->workspace(0, 4 * largest);
  void* b = dev->workspace(1, 4 * largest);
  void* c = dev->workspace(2, 4 * largest);
  auto fit = [&](Format f, std::vector<GemmSample>& samples) {
    for (const auto& s : shapes) {
      const double t = time_per_call(*dev, [&] { dev->gemm(s[0], s[1], s[2], f, a, b, c); }, per, true);
      samples.push_back({double(s[0]), double(s[1]), double(s[2]), t});
    }
    return fit_gemm(samples);
  };
  p.gemm = fit(Format::Fp32, p.samples);
  if (gpu) {
    p.gemm16 = fit(Format::Bf16, p.samples_bf16);
    p.peak_bf16 = p.gemm16.peak_flops;
    p.peak_fp16 = fit(Format::Fp16, p.samples_fp16).peak_flops;
  } else {
    // fp32 at 1024³ is one of the fit's own samples (the median of three warm calls at least)
    const auto square = std::find_if(p.samples.begin(), p.samples.end(), [](const GemmSample& x) {
      return x.m == 1024 && x.n == 1024 && x.k == 1024;
    });
    const double t32 = square != p.samples.end()
                           ? square->seconds
                           : time_per_call(*dev, [&] { dev->gemm(1024, 1024, 1024, Format::Fp32, a, b, c); }, per);
    const double tb = time_per_call(*dev, [&] { dev->gemm(1024, 1024, 1024, Format::Bf16, a, b, c); }, per);
    const double th = time_per_call(*dev, [&] { dev->gemm(1024, 1024, 1024, Format::Fp16, a, b, c); }, per);
    p.peak_bf16 = p.gemm.peak_flops * t32 / tb;
    p.peak_fp16 = p.gemm.peak_flops * t32 / th;
  }
  const Format train = p.tensor_cores() ? Format::Bf16 : Format::Fp32;
  const GemmFit& train_fit = p.train_gemm();
  // Streaming bandwidth: read one float, write one (64 MiB on the host, 1 GiB on a GPU).
  {
    const std::size_t count = gpu ? std::size_t{256} << 20 : std::size_t{16} << 20;
    void* src = dev->workspace(0, 4 * count);
    void* dst = dev->workspace(1, 4 * count);
    const double t = time_per_call(*dev, [&] { dev->elementwise(count, Format::Fp32, src, dst); }, per);
    p.memory_bandwidth = 8.0 * static_cast<double>(count) / t;
    const double tc = time_per_call(*dev, [&] { dev->copy(src, dst, 4 * count); }, per);
    p.copy_bandwidth = 4.0 * static_cast<double>(count) / tc;
    // The unvectorized pass in the training format (replay runs Op::unvectorized ops so).
    const double tu = time_per_call(*dev, [&] { dev->elementwise_unvectorized(count, train, src, dst); }, per);
    const double moved = 2.0 * static_cast<double>(format_bytes(train)) * static_cast<double>(count);
    p.unvectorized_memory = std::clamp(moved / tu / p.memory_bandwidth, 0.001, 1.0);
  }
  // Attention, forward and backward, as replay runs it, in the training format, at two sequence
  // lengths: the efficiency the cost model applies to the attention FLOPs it counts (causal
  // half, backward 2.5× the forward) against that format's peak, fitted to η·s/(s + half_seq)
  // through both points.
  {
    double bwd_ratio = 1;
    auto efficiency = [&](int seq) {
      const AttentionShape s = gpu ? AttentionShape{32, seq, 128, true} : AttentionShape{4, seq, 64, true};
      const std::size_t one = std::size_t(s.heads) * s.seq * s.head_dim * 4;
      void* qkv = dev->workspace(0, 3 * one);
      void* g = dev->workspace(1, 3 * one);
      void* o = dev->workspace(2, 3 * one);
      const double tf = time_per_call(*dev, [&] { dev->attention(s, train, qkv, o, g, false); }, per);
      const double tb = time_per_call(*dev, [&] { dev->attention(s, train, qkv, o, g, true); }, per);
      const double flops = 3.5 * 4.0 * s.heads * double(s.seq) * s.seq * s.head_dim / 2;
      // Backward throughput per counted FLOP over the forward's (2.5× the FLOPs).
      bwd_ratio = 2.5 * std::max(1e-9, tf - train_fit.launch_s) / std::max(1e-9, tb - train_fit.launch_s);
      return std::clamp(flops / (train_fit.peak_flops * std::max(1e-9, tf + tb - 2 * train_fit.launch_s)), 0.01, 1.0);
    };
    const double s1 = gpu ? 512 : 256, s2 = gpu ? 2048 : 1024;
    const double e1 = efficiency(static_cast<int>(s1)), e2 = efficiency(static_cast<int>(s2));
    p.attention_bwd = std::clamp(bwd_ratio, 0.1, 10.0);  // at the longer sequence
    const double r = e1 / e2;
    if (r < 1 && r * s2 > s1) {
      p.attention_half_seq = s1 * s2 * (1 - r) / (r * s2 - s1);
      p.attention_efficiency = std::clamp(e2 * (s2 + p.attention_half_seq) / s2, 0.01, 1.0);
    } else {  // no rise with the sequence: flat
      p.attention_half_seq = 0;
      p.attention_efficiency = e2;
    }
  }
  // Norms, the loss and the optimizer, as replay runs them, priced by the bytes the cost model
  // counts for them (layer_ops.cpp: a norm moves 2 fp32 tensors forward and 3 backward; the
  // cross-entropy 38 and 14 bytes per logit; Adam's pass 28 bytes per parameter).
  {
    const int rows = gpu ? 16384 : 2048, cols = gpu ? 4096 : 512;
    const std::size_t elems = std::size_t(rows) * cols;
    void* x = dev->workspace(0, 4 * elems);
    void* y = dev->workspace(1, 4 * elems);
    const double tf = time_per_call(*dev, [&] { dev->norm(rows, cols, Format::Fp32, x, y, false); }, per / 2);
    const double tb = time_per_call(*dev, [&] { dev->norm(rows, cols, Format::Fp32, x, y, true); }, per / 2);
    p.norm_memory = std::clamp(20.0 * double(elems) / (tf + tb) / p.memory_bandwidth, 0.001, 1.0);
    // the loss normalises wide rows: a vocabulary shard per token
    const int lrows = rows / 16, lcols = cols * 16;
    auto loss_pass = [&](bool backward) {
      dev->norm(lrows, lcols, Format::Fp32, x, y, backward);
      // the rest of the 38 (forward) or 14 (backward) bytes per logit, as replay moves it
      dev->elementwise(elems * (backward ? 6 : 30) / 8, Format::Fp32, x, y);
    };
    const double lf = time_per_call(*dev, [&] { loss_pass(false); }, per / 2);
    const double lb = time_per_call(*dev, [&] { loss_pass(true); }, per / 2);
    p.loss_memory = std::clamp(52.0 * double(elems) / (lf + lb) / p.memory_bandwidth, 0.001, 1.0);
    const std::size_t params = gpu ? std::size_t{32} << 20 : std::size_t{1} << 20;
    auto* state = static_cast<float*>(dev->workspace(2, 7 * 4 * params));
    const double ta = time_per_call(*dev, [&] { dev->adam(params, state); }, per);
    p.optimizer_memory = std::clamp(28.0 * double(params) / ta / p.memory_bandwidth, 0.001, 1.0);
  }
  load.stop();
  const bool load_failed = load.failed();
  // Collectives between two devices through the backend's own communicators (shared memory,
  // NCCL): all-reduce time against message size, t = a + b·S, read as the ring model's
  // 2α + S/bw. Each rank times its own calls; the slower rank's time counts.
  auto peer = backend.open(1);
  auto comms = backend.communicators({dev.get(), peer.get()});
  if (comms) {
    // Repetitions per message size follow the budget (those below at the default 2 s): both
    // ranks must run the same count, so it is fixed before the first call rather than timed.
    const double share = std::clamp(seconds / 2, 0.05, 1.0);
    const auto reps_for = [&](int full) { return std::max(2, static_cast<int>(full * share)); };
    std::vector<double> sizes, times;
    for (std::size_t floats : {std::size_t{256}, std::size_t{4096}, std::size_t{65536}, std::size_t{1} << 20}) {
      const int reps = reps_for(floats < 100000 ? 200 : 20);
      double t[2] = {0, 0};
      auto side = [&](int r) {
        Device& d = r == 0 ? *dev : *peer;
        auto* buf = static_cast<float*>(d.workspace(0, floats * 4));
        Communicator& comm = *(*comms)[static_cast<std::size_t>(r)];
        (void)comm.all_reduce(buf, floats);  // warm up together
        (void)d.resolve();
        const std::int64_t t0 = host_clock_ns();
        for (int k = 0; k < reps; ++k) (void)comm.all_reduce(buf, floats);
        (void)d.resolve();
        t[r] = static_cast<double>(host_clock_ns() - t0) * 1e-9 / reps;
      };
      std::thread other(side, 1);
      side(0);
      other.join();
      sizes.push_back(4.0 * static_cast<double>(floats));
      times.push_back(std::max(t[0], t[1]));
    }
    Eigen::MatrixX2d A(static_cast<Eigen::Index>(sizes.size()), 2);
    Eigen::VectorXd rhs(static_cast<Eigen::Index>(sizes.size()));
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      const double w = 1.0 / times[i];  // relative errors count alike
      A(static_cast<Eigen::Index>(i), 0) = w;
      A(static_cast<Eigen::Index>(i), 1) = sizes[i] * w;
      rhs(static_cast<Eigen::Index>(i)) = 1.0;
    }
    const Eigen::Vector2d x = least_squares2(A, rhs);
    if (x(1) > 0 && std::isfinite(x(0))) {
      p.link_latency_s = std::max(0.0, x(0)) / 2;
      p.link_bandwidth = 1.0 / x(1);
    }
    // Point-to-point: device 0 sends, device 1 answers with the same message; half the round
    // trip is one message, fitted as α + S/bw over the sizes.
    std::vector<double> p2p_sizes, p2p_times;
    for (std::size_t floats : {std::size_t{256}, std::size_t{65536}, std::size_t{1} << 20}) {
      const int reps = reps_for(floats < 100000 ? 100 : 10);
      auto* a0 = static_cast<float*>(dev->workspace(0, floats * 4));
      auto* a1 = static_cast<float*>(peer->workspace(0, floats * 4));
      Communicator& c0 = *(*comms)[0];
      Communicator& c1 = *(*comms)[1];
      std::thread echo([&] {
        for (int k = 0; k < reps + 1; ++k) {
          (void)c1.recv(a1, floats, 0, 1);
          (void)c1.send(a1, floats, 0, 2);
        }
      });
      std::int64_t t0 = 0;
      for (int k = 0; k < reps + 1; ++k) {
        if (k == 1) t0 = host_clock_ns();  // the first round trip warms up
        (void)c0.send(a0, floats, 1, 1);
        (void)c0.recv(a0, floats, 1, 2);
      }
      (void)dev->resolve();
      const double one_way = static_cast<double>(host_clock_ns() - t0) * 1e-9 / reps / 2;
      echo.join();
      p2p_sizes.push_back(4.0 * static_cast<double>(floats));
      p2p_times.push_back(one_way);
    }
    // Through the smallest and the largest message: α + S/bw.
    const double bw = (p2p_sizes.back() - p2p_sizes.front()) / std::max(1e-12, p2p_times.back() - p2p_times.front());
    if (bw > 0) {
      p.p2p_bandwidth = bw;
      p.p2p_latency_s = std::max(0.0, p2p_times.front() - p2p_sizes.front() / bw);
    }
  }
  p.failure = dev->failure();
  if (p.failure.empty() && peer) p.failure = peer->failure();
  if (p.failure.empty() && load_failed)
    p.failure = "a device alongside (--alongside) stopped running the calibration load before the measurement ended";
  return p;
}

namespace {

// The fastest rate among `samples`, or `floor` if it is faster.
double fastest(const std::vector<GemmSample>& samples, double floor) {
  for (const auto& s : samples)
    if (s.seconds > 0) floor = std::max(floor, 2 * s.m * s.n * s.k / s.seconds);
  return floor;
}

}  // namespace

std::string profile_toml(const Profile& p, const std::string& name, double memory_bytes, int devices) {
  const std::string src = "measured by `hetsim-exec calibrate` on this machine";
  // No measured GEMM may beat its format's peak (the catalogue reader checks it): a peak is at
  // least the fastest GEMM timed.
  const double peak32 = fastest(p.samples, p.gemm.peak_flops);
  const double peak_bf16 = fastest(p.samples_bf16, p.peak_bf16 > 0 ? p.peak_bf16 : peak32);
  const double peak_fp16 = fastest(p.samples_fp16, p.peak_fp16 > 0 ? p.peak_fp16 : peak32);
  std::string measured;
  for (const auto& [dtype, samples] : {std::pair{"fp32", &p.samples}, std::pair{"bf16", &p.samples_bf16},
                                       std::pair{"fp16", &p.samples_fp16}})
    for (const auto& s : *samples)
      if (s.seconds > 0)
        measured += fmt::format("  {{ m = {:.0f}, n = {:.0f}, k = {:.0f}, dtype = \"{}\", time = \"{:.6g}us\" }},\n", s.m, s.n,
                                s.k, dtype, s.seconds * 1e6);
  const GemmFit& g = p.train_gemm();
  std::string o = fmt::format("# Device profile written by `hetsim-exec calibrate` (load it with catalog = \"…\" in a\n"
                              "# [[cluster.pool]]). GEMM fit ({}): peak {:.4g} FLOP/s, half_dim {:.0f}, launch {:.3g} s,\n"
                              "# rms relative error {:.3f} over {} shapes. Point-to-point between two devices: {:.3g} us +\n"
                              "# {:.4g} GB/s per message (the link below is fitted from all-reduces).\n\n",
                              p.tensor_cores() ? "bf16" : "fp32", g.peak_flops, g.half_dim, g.launch_s, g.rms_rel_error,
                              p.samples.size(), p.p2p_latency_s * 1e6, p.p2p_bandwidth / 1e9);
  if (p.alongside > 0)
    o += fmt::format("# Kernels timed beside {} other device(s) running the calibration's kernels at their own speeds\n"
                     "# (calibrate --alongside): as the device runs beside the other pools in a replay.\n\n",
                     p.alongside);
  if (p.cores > 1)
    o += fmt::format("# Measured on a device of {} cores (calibrate --cores {}): replay the pool on such devices,\n"
                     "# hetsim-exec run --cores POOL={}.\n\n",
                     p.cores, p.cores, p.cores);
  o += fmt::format("[[link]]\nname = \"{}-copy\"\ndisplay = \"shared-memory copy between {} devices\"\nkind = \"scale-up\"\n"
                   "bandwidth = \"{:.6g}GB/s\"\nlatency = \"{:.4g}us\"\nefficiency = 1.0\nsource = \"{}\"\n\n",
                   name, name, (p.link_bandwidth > 0 ? p.link_bandwidth : p.copy_bandwidth) / 1e9,
                   p.link_bandwidth > 0 ? p.link_latency_s * 1e6 : 1.0,
                   p.link_bandwidth > 0 ? src + " (all-reduce between two devices through the backend's communicators, fitted)" : src + " (copy; latency assumed)");
  o += fmt::format("[[device]]\nname = \"{}\"\ndisplay = \"calibrated {} device\"\nvendor = \"host\"\n"
                   "peak = {{ fp32 = \"{:.6g}GFLOPS\", bf16 = \"{:.6g}GFLOPS\", fp16 = \"{:.6g}GFLOPS\" }}\nmemory = \"{:.6g}GiB\"\nmemory_bandwidth = \"{:.6g}GB/s\"\n"
                   "tdp = \"15W\"\nprice_usd_per_hour = 0.05\n"
                   "node = {{ devices = {}, fabric = \"{}-copy\", nics = {}, nic = \"{}-copy\" }}\n"
                   "efficiency = {{ gemm = 1.0, gemm_half_dim = {:.0f}, attention = {:.4f}, attention_half_seq = {:.0f}, "
                   "attention_bwd = {:.4f}, memory = 1.0, norm_memory = {:.4f}, loss_memory = {:.4f}, optimizer_memory = {:.4f}, "
                   "unvectorized_memory = {:.4f}, "
                   "launch_overhead = \"{:.4g}us\" }}\n{}\n[device.sources]\npeak = \"{}\"\nmemory = \"{}\"\n"
                   "efficiency = \"{}\"\npower = \"assumption: 15 W per core\"\nprice = \"assumption\"\n",
                   name, name, peak32 / 1e9, peak_bf16 / 1e9, peak_fp16 / 1e9, memory_bytes / (1024.0 * 1024 * 1024), p.memory_bandwidth / 1e9,
                   devices, name, devices, name, g.half_dim, p.attention_efficiency, p.attention_half_seq,
                   p.attention_bwd, p.norm_memory > 0 ? p.norm_memory : 1.0, p.loss_memory > 0 ? p.loss_memory : 1.0,
                   p.optimizer_memory > 0 ? p.optimizer_memory : 1.0, p.unvectorized_memory > 0 ? p.unvectorized_memory : 1.0,
                   g.launch_s * 1e6,
                   measured.empty() ? std::string{} : "# GEMMs as timed here, one call each; the cost model follows them.\nmeasured_gemms = [\n" + measured + "]\n",
                   src, src,
                   src);
  return o;
}

}  // namespace hetsim::exec

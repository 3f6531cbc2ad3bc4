#include "exec/cpu/cpu_backend.hpp"

#include "exec/cpu/matmul.hpp"
#include "exec/cpu/pacer.hpp"
#include "exec/cpu/team.hpp"
#include "models/base/assert.hpp"

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <system_error>
#include <unordered_map>
#include <vector>

namespace hetsim::exec {
namespace {

// Device::elementwise_unvectorized: one element per iteration whatever the optimiser would do.
#if defined(__clang__)
#define HETSIM_SCALAR_FN
#define HETSIM_SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#elif defined(__GNUC__)
#define HETSIM_SCALAR_FN __attribute__((optimize("no-tree-vectorize")))
#define HETSIM_SCALAR_LOOP
#else
#define HETSIM_SCALAR_FN
#define HETSIM_SCALAR_LOOP
#endif

HETSIM_SCALAR_FN void scalar_pass(const float* s, float* d, std::size_t count) {
  HETSIM_SCALAR_LOOP
  for (std::size_t i = 0; i < count; ++i) d[i] = s[i] * 0.999f + 1e-3f;
}
HETSIM_SCALAR_FN void scalar_pass(const std::uint16_t* s, std::uint16_t* d, std::size_t count) {
  HETSIM_SCALAR_LOOP
  for (std::size_t i = 0; i < count; ++i) d[i] = static_cast<std::uint16_t>(s[i] ^ 0x0101u);
}

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Map = Eigen::Map<RowMatrix>;

// 16-bit formats are stored as such and computed in fp32 (the cpu has no bf16 matrix units that
// Eigen uses): operands are widened into scratch, results narrowed back. The conversions are
// O(m·k + k·n + m·n) against the GEMM's O(m·n·k).
void widen(Format f, const void* src, float* dst, std::size_t n) {
  if (f == Format::Fp32) {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (f == Format::Bf16) {
    const auto* s = static_cast<const Eigen::bfloat16*>(src);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
  } else {
    const auto* s = static_cast<const Eigen::half*>(src);
    for (std::size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(s[i]);
  }
}
void narrow(Format f, const float* src, void* dst, std::size_t n) {
  if (f == Format::Fp32) {
    std::memcpy(dst, src, n * sizeof(float));
  } else if (f == Format::Bf16) {
    auto* d = static_cast<Eigen::bfloat16*>(dst);
    for (std::size_t i = 0; i < n; ++i) d[i] = Eigen::bfloat16(src[i]);
  } else {
    auto* d = static_cast<Eigen::half*>(dst);
    for (std::size_t i = 0; i < n; ++i) d[i] = Eigen::half(src[i]);
  }
}

// Row softmax of s (rows × cols) in place; with `causal`, row i of the block sees keys up to
// `first_row + i` only.
void softmax_rows(Map s, bool causal, int first_row) {
  for (Eigen::Index i = 0; i < s.rows(); ++i) {
    const Eigen::Index visible = causal ? std::min<Eigen::Index>(s.cols(), first_row + i + 1) : s.cols();
    auto row = s.row(i);
    const float mx = row.head(visible).maxCoeff();
    row.head(visible) = (row.head(visible).array() - mx).exp();
    row.head(visible) /= row.head(visible).sum();
    if (visible < s.cols()) row.tail(s.cols() - visible).setZero();
  }
}

class CpuDevice final : public Device {
 public:
  // Throws std::system_error when a helper thread of a device of several cores cannot start.
  CpuDevice(int index, std::size_t capacity, double speed, int cores)
      : index_(index), capacity_(capacity), pacer_(speed), team_(cores) {}

  std::string name() const override { return "cpu" + std::to_string(index_); }

  Result<void*> allocate(std::size_t bytes) override {
    if (capacity_ > 0 && live_ + bytes > capacity_)
      return Diagnostic{{}, "", name() + ": out of memory allocating " + std::to_string(bytes) + " bytes (" +
                                    std::to_string(live_) + " of " + std::to_string(capacity_) + " in use)",
                        "more memory per cpu device (--memory GiB, --pool-memory POOL=GiB), or a smaller plan (--fit)"};
    const std::size_t rounded = block_size(bytes);
    void* p = nullptr;
    if (auto it = cached_.find(rounded); it != cached_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      cached_bytes_ -= rounded;
    } else {
      p = std::aligned_alloc(64, rounded);
      if (p == nullptr) {  // the kept blocks back to the host, then once more
        drop_cache();
        p = std::aligned_alloc(64, rounded);
      }
      if (p == nullptr) return Diagnostic{{}, "", name() + ": the host has no memory left", ""};
    }
    live_ += bytes;
    if (live_ > peak_) peak_ = live_;
    return p;
  }

  void release(void* p, std::size_t bytes) override {
    HETSIM_ASSERT(p != nullptr && bytes <= live_, "release() of a block allocate() did not give");
    live_ -= bytes;
    const std::size_t rounded = block_size(bytes);
    if (cached_bytes_ + rounded > kCacheBytes) {
      std::free(p);
      return;
    }
    cached_[rounded].push_back(p);
    cached_bytes_ += rounded;
  }

  ~CpuDevice() override { drop_cache(); }

  void* workspace(int slot, std::size_t bytes) override {
    auto& w = work_[static_cast<std::size_t>(slot)];
    const std::size_t floats = (bytes + 3) / 4;
    if (w.size() < floats) {
      try {
        w.assign(floats, 0.5f);
      } catch (const std::bad_alloc&) {  // the caller fails the task with a message
        w = {};
        return nullptr;
      }
    }
    return w.data();
  }

  void gemm(int m, int n, int k, Format f, const void* a, const void* b, void* c) override {
    paced([&] { gemm_kernel(m, n, k, f, a, b, c); });
  }
  // Rows of C split over the device's cores (each part its rows of A and C; B shared).
  void gemm_kernel(int m, int n, int k, Format f, const void* a, const void* b, void* c) {
    const int parts = std::clamp(m / kMinRowsAPart, 1, team_.size());
    const auto rows = [&](int i, int all) { return cpu::part_of(static_cast<std::size_t>(m), i, all); };
    if (f == Format::Fp32) {
      team_.run(parts, [&](int i, int all) {
        const auto r = rows(i, all);
        if (r.end > r.begin)
          cpu::matmul(static_cast<const float*>(a) + r.begin * k, false, static_cast<const float*>(b), false,
                      static_cast<float*>(c) + r.begin * n, static_cast<int>(r.end - r.begin), n, k, 1.0f, false);
      });
      return;
    }
    const auto mk = std::size_t(m) * k, kn = std::size_t(k) * n, mn = std::size_t(m) * n;
    float* w = scratch(mk + kn + mn);
    const std::size_t eb = format_bytes(f);
    team_.run(parts_for(kn), [&](int i, int all) {  // B widened by all first: every part reads all of it
      const auto r = cpu::part_of(kn, i, all, 64);
      if (r.end > r.begin) widen(f, static_cast<const char*>(b) + r.begin * eb, w + mk + r.begin, r.end - r.begin);
    });
    team_.run(parts, [&](int i, int all) {
      const auto r = rows(i, all);
      if (r.end == r.begin) return;
      const auto count = r.end - r.begin;
      widen(f, static_cast<const char*>(a) + r.begin * k * eb, w + r.begin * k, count * k);
      cpu::matmul(w + r.begin * k, false, w + mk, false, w + mk + kn + r.begin * n, static_cast<int>(count), n, k, 1.0f,
                  false);
      narrow(f, w + mk + kn + r.begin * n, static_cast<char*>(c) + r.begin * n * eb, count * n);
    });
  }

  void attention(const AttentionShape& s, Format f, const void* qkv, void* o, void* grads, bool backward) override {
    paced([&] { attention_kernel(s, f, qkv, o, grads, backward); });
  }
  void attention_kernel(const AttentionShape& s, Format f, const void* qkv, void* o, void* grads, bool backward) {
    // per: one head's Q or K (seq × d); pv: its V or O (seq × dv).
    const int d = s.head_dim, dvw = s.value_dim();
    const std::size_t per = std::size_t(s.seq) * d, pv = std::size_t(s.seq) * dvw, heads = std::size_t(s.heads);
    const int blk = std::min(s.seq, 128);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    // fp32 views of one head: q, k, v, o (dO in backward), dq, dk, dv, then the score block and
    // its gradient.
    // The heads split over the device's cores, each part with its own views.
    const std::size_t views = 4 * per + 3 * pv + 2 * std::size_t(blk) * s.seq;
    const int parts = std::clamp(s.heads, 1, team_.size());
    float* all_views = scratch(views * static_cast<std::size_t>(parts));
    const std::size_t eb = format_bytes(f);
    auto at = [&](const void* base, std::size_t elems) { return static_cast<const char*>(base) + elems * eb; };
    auto at_mut = [&](void* base, std::size_t elems) { return static_cast<char*>(base) + elems * eb; };
    const std::size_t v_at = 2 * heads * per;  // where the heads' V (dV) begin
    team_.run(parts, [&](int part, int all) {
    float* w = all_views + views * static_cast<std::size_t>(part);
    float *q = w, *kk = w + per, *dq = w + 2 * per, *dk = w + 3 * per, *v = w + 4 * per, *out = v + pv, *dv = out + pv,
          *sc = dv + pv, *ds = sc + std::size_t(blk) * s.seq;
    const auto mine = cpu::part_of(heads, part, all);
    for (std::size_t h = mine.begin; h < mine.end; ++h) {
      widen(f, at(qkv, h * per), q, per);
      widen(f, at(qkv, (heads + h) * per), kk, per);
      widen(f, at(qkv, v_at + h * pv), v, pv);
      if (backward) {
        widen(f, at(o, h * pv), out, pv);  // dO
        std::fill(dk, dk + per, 0.0f);     // dk and dv accumulate over row blocks
        std::fill(dv, dv + pv, 0.0f);
      }
      for (int r0 = 0; r0 < s.seq; r0 += blk) {
        const int rows = std::min(blk, s.seq - r0);
        const int keys = s.causal ? r0 + rows : s.seq;  // the masked blocks are skipped
        const float* qr = q + std::size_t(r0) * d;
        Map S(sc, rows, keys);
        cpu::matmul(qr, false, kk, true, sc, rows, keys, d, scale, false);  // S = Q·Kᵀ/√d
        softmax_rows(S, s.causal, r0);
        if (!backward) {
          cpu::matmul(sc, false, v, false, out + std::size_t(r0) * dvw, rows, dvw, keys, 1.0f, false);  // O = P·V
          continue;
        }
        const float* dO = out + std::size_t(r0) * dvw;
        cpu::matmul(sc, true, dO, false, dv, keys, dvw, rows, 1.0f, true);  // dV += Pᵀ·dO
        Map dP(ds, rows, keys);
        cpu::matmul(dO, false, v, true, ds, rows, keys, dvw, 1.0f, false);  // dP = dO·Vᵀ
        // dS = P ∘ (dP − rowsum(P ∘ dP)), the softmax gradient.
        const Eigen::VectorXf dsum = (S.array() * dP.array()).rowwise().sum();
        dP = S.array() * (dP.array().colwise() - dsum.array());
        cpu::matmul(ds, false, kk, false, dq + std::size_t(r0) * d, rows, d, keys, scale, false);  // dQ = dS·K
        cpu::matmul(ds, true, qr, false, dk, keys, d, rows, scale, true);                           // dK += dSᵀ·Q
      }
      if (!backward) {
        narrow(f, out, at_mut(o, h * pv), pv);
      } else {
        narrow(f, dq, at_mut(grads, h * per), per);
        narrow(f, dk, at_mut(grads, (heads + h) * per), per);
        narrow(f, dv, at_mut(grads, v_at + h * pv), pv);
      }
    }
    });
  }

  void norm(int rows, int cols, Format f, const void* x, void* y, bool backward) override {
    paced([&] { norm_kernel(rows, cols, f, x, y, backward); });
  }
  void norm_kernel(int rows, int cols, Format f, const void* x, void* y, bool backward) {
    const auto n = std::size_t(cols);
    const int parts = std::clamp(rows / kMinRowsAPart, 1, team_.size());
    float* all_rows = scratch(3 * n * static_cast<std::size_t>(parts));
    const std::size_t eb = format_bytes(f);
    team_.run(parts, [&](int part, int all) {
    float* w = all_rows + 3 * n * static_cast<std::size_t>(part);
    float *xr = w, *yr = w + n, *dx = w + 2 * n;
    const auto mine = cpu::part_of(static_cast<std::size_t>(rows), part, all);
    for (auto r = mine.begin; r < mine.end; ++r) {
      const auto off = r * n * eb;
      widen(f, static_cast<const char*>(x) + off, xr, n);
      Eigen::Map<Eigen::ArrayXf> X(xr, cols), Y(yr, cols), DX(dx, cols);
      const float mean = X.mean();
      const float rstd = 1.0f / std::sqrt((X - mean).square().mean() + 1e-5f);
      if (!backward) {
        Y = (X - mean) * rstd;
        narrow(f, yr, static_cast<char*>(y) + off, n);
        continue;
      }
      // dx = rstd·(dy − mean(dy) − x̂·mean(dy·x̂)), dy read from y and dx written over it.
      widen(f, static_cast<const char*>(y) + off, yr, n);
      DX = (X - mean) * rstd;
      const float mdy = Y.mean(), mdyx = (Y * DX).mean();
      DX = rstd * (Y - mdy - DX * mdyx);
      narrow(f, dx, static_cast<char*>(y) + off, n);
    }
    });
  }

  void elementwise(std::size_t count, Format f, const void* src, void* dst) override {
    paced([&] { split(count, 64, f, src, dst, [&](std::size_t n, const void* s, void* d) { elementwise_kernel(n, f, s, d); }); });
  }
  void elementwise_kernel(std::size_t count, Format f, const void* src, void* dst) {
    if (f == Format::Fp32) {  // Eigen's packets: SIMD at any optimisation level
      using Array = Eigen::Array<float, Eigen::Dynamic, 1>;
      Eigen::Map<Array>(static_cast<float*>(dst), static_cast<Eigen::Index>(count)) =
          Eigen::Map<const Array>(static_cast<const float*>(src), static_cast<Eigen::Index>(count)) * 0.999f + 1e-3f;
    } else {
      // 16-bit values: the same pass on the bits' halves (bandwidth is what is measured), four
      // at a time in 64-bit words, the rest one by one.
      const std::size_t words = count / 4;
      for (std::size_t i = 0; i < words; ++i) {
        std::uint64_t w;
        std::memcpy(&w, static_cast<const char*>(src) + 8 * i, 8);
        w ^= 0x0101010101010101ull;
        std::memcpy(static_cast<char*>(dst) + 8 * i, &w, 8);
      }
      scalar_pass(static_cast<const std::uint16_t*>(src) + 4 * words, static_cast<std::uint16_t*>(dst) + 4 * words,
                  count - 4 * words);
    }
  }
  void elementwise_unvectorized(std::size_t count, Format f, const void* src, void* dst) override {
    paced([&] {
      split(count, 64, f, src, dst, [&](std::size_t n, const void* s, void* d) { elementwise_unvectorized_kernel(n, f, s, d); });
    });
  }
  void elementwise_unvectorized_kernel(std::size_t count, Format f, const void* src, void* dst) {
    if (f == Format::Fp32) scalar_pass(static_cast<const float*>(src), static_cast<float*>(dst), count);
    else scalar_pass(static_cast<const std::uint16_t*>(src), static_cast<std::uint16_t*>(dst), count);
  }

  void adam(std::size_t count, float* state) override {
    paced([&] { adam_kernel(count, state); });
  }
  void adam_kernel(std::size_t count, float* state) {
    constexpr float lr = 1e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
    float *p = state, *g = state + count, *m = state + 2 * count, *v = state + 3 * count;
    team_.run(parts_for(count), [&](int part, int all) {
      const auto mine = cpu::part_of(count, part, all, 64);
      for (std::size_t i = mine.begin; i < mine.end; ++i) {
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        p[i] -= lr * m[i] / (std::sqrt(v[i]) + eps);
      }
    });
  }

  void copy(const void* src, void* dst, std::size_t bytes) override { std::memcpy(dst, src, bytes); }  // not paced
  void to_host(const void* src, void* host, std::size_t bytes) override { std::memcpy(host, src, bytes); }
  void from_host(const void* host, void* dst, std::size_t bytes) override { std::memcpy(dst, host, bytes); }
  bool host_memory() const override { return true; }

  int record() override {
    marks_.push_back(host_clock_ns());
    return static_cast<int>(marks_.size()) - 1;
  }
  std::vector<std::int64_t> resolve() override {
    std::vector<std::int64_t> out;
    out.swap(marks_);
    return out;
  }

  std::size_t live_bytes() const override { return live_; }
  std::size_t peak_bytes() const override { return peak_; }
  std::size_t capacity() const override { return capacity_; }

 private:
  // Runs a kernel at the device's speed: below 1, the kernel and then an idle until it would
  // have ended on a device that much faster (Pacer: a deadline on the steady clock, lateness
  // carried into the next idles).
  template <class Kernel>
  void paced(Kernel&& kernel) {
    if (pacer_.speed() >= 1) {
      kernel();
      return;
    }
    const std::int64_t began = pacer_.now();
    kernel();
    pacer_.idle_after(began);
  }

  // A pass over `count` elements split over the device's cores, in chunks of whole `grain`s.
  template <class Pass>
  void split(std::size_t count, std::size_t grain, Format f, const void* src, void* dst, Pass&& pass) {
    const std::size_t eb = format_bytes(f);
    team_.run(parts_for(count), [&](int part, int all) {
      const auto mine = cpu::part_of(count, part, all, grain);
      if (mine.end > mine.begin)
        pass(mine.end - mine.begin, static_cast<const char*>(src) + mine.begin * eb,
             static_cast<char*>(dst) + mine.begin * eb);
    });
  }
  // Parts for a pass over `count` elements: one per core, none shorter than kMinElementsAPart.
  int parts_for(std::size_t count) const {
    return static_cast<int>(std::clamp<std::size_t>(count / kMinElementsAPart, 1, static_cast<std::size_t>(team_.size())));
  }
  // Below these a kernel is not worth waking a helper for (a wake-up costs some microseconds).
  static constexpr int kMinRowsAPart = 16;
  static constexpr std::size_t kMinElementsAPart = 1 << 14;

  // What allocate() hands out for `bytes`: whole 64-byte lines (aligned_alloc's alignment).
  static std::size_t block_size(std::size_t bytes) { return (bytes + 63) / 64 * 64; }

  void drop_cache() {
    for (auto& [size, blocks] : cached_)
      for (void* p : blocks) std::free(p);
    cached_.clear();
    cached_bytes_ = 0;
  }

  float* scratch(std::size_t floats) {
    if (scratch_.size() < floats) scratch_.resize(floats);
    return scratch_.data();
  }

  // Freed blocks, kept for the next allocation of their size, as GPU frameworks' caching
  // allocators keep theirs: a replay frees and allocates the same activation blocks task after
  // task, and handed back to malloc they were trimmed and their pages faulted in again (about 20
  // page faults a task: most of the executor's overhead per task, docs/benchmarks.md). Up to
  // kCacheBytes of host memory; the device's live and peak bytes do not count them.
  static constexpr std::size_t kCacheBytes = std::size_t{1} << 30;
  std::unordered_map<std::size_t, std::vector<void*>> cached_;
  std::size_t cached_bytes_ = 0;

  int index_;
  std::size_t capacity_;
  Pacer pacer_;
  std::size_t live_ = 0, peak_ = 0;
  std::vector<float> work_[4];
  std::vector<float> scratch_;
  std::vector<std::int64_t> marks_;
  cpu::Team team_;  // last: its helpers stop before the buffers they work on go
};

class CpuBackend final : public Backend {
 public:
  CpuBackend(int devices, std::size_t memory, double speed, int cores)
      : devices_(devices), memory_(memory), speed_(speed), cores_(cores) {
    Eigen::setNbThreads(1);  // a device's cores are its own team's threads (cpu::Team)
  }
  std::string name() const override { return "cpu"; }
  int device_count() const override { return devices_; }
  std::unique_ptr<Device> open(int index) override {
    return std::make_unique<CpuDevice>(index, memory_, speed_, cores_);  // a failing helper thread ends the process
  }
  bool slows() const override { return true; }
  bool sets_cores() const override { return true; }
  Result<std::unique_ptr<Device>> open_as(int index, const DeviceSetup& setup) override {
    if (!(setup.speed > 0 && setup.speed <= 1))
      return Diagnostic{{}, "speed", "a device speed must be above 0 and at most 1, not " + std::to_string(setup.speed), ""};
    if (setup.cores < 0 || setup.cores > kMaxCores)
      return Diagnostic{{}, "cores", "a cpu device has 1 to " + std::to_string(kMaxCores) + " cores, not " +
                                         std::to_string(setup.cores), ""};
    const int cores = setup.cores > 0 ? setup.cores : cores_;
    try {
      return std::unique_ptr<Device>(
          std::make_unique<CpuDevice>(index, setup.memory > 0 ? setup.memory : memory_, speed_ * setup.speed, cores));
    } catch (const std::system_error& e) {
      return Diagnostic{{}, "", "cpu" + std::to_string(index) + ": cannot start the threads of its " +
                                    std::to_string(cores) + " cores (" + e.what() + ")",
                        "fewer cores a device", ErrorKind::Environment};
    }
  }
  std::string describe() const override {
    return "cpu: " + std::to_string(devices_) + " devices" +
           (cores_ > 1 ? " of " + std::to_string(cores_) + " cores" : std::string()) +
           (speed_ < 1 ? " at speed " + std::to_string(speed_).substr(0, 5) : std::string());
  }

 private:
  int devices_;
  std::size_t memory_;
  double speed_;
  int cores_;
};

}  // namespace

Result<std::unique_ptr<Backend>> make_cpu_backend_at(int devices, std::size_t memory_bytes, double speed, int cores) {
  if (!(speed > 0 && speed <= 1))
    return Diagnostic{{}, "speed", "a device speed must be above 0 and at most 1, not " + std::to_string(speed), ""};
  if (cores < 1 || cores > kMaxCores)
    return Diagnostic{{}, "cores", "a cpu device has 1 to " + std::to_string(kMaxCores) + " cores, not " + std::to_string(cores), ""};
  return std::unique_ptr<Backend>(std::make_unique<CpuBackend>(devices, memory_bytes, speed, cores));
}

std::unique_ptr<Backend> make_cpu_backend(int devices, std::size_t memory_bytes) {
  return std::make_unique<CpuBackend>(devices, memory_bytes, 1.0, 1);
}

}  // namespace hetsim::exec

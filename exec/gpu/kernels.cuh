#pragma once
// Kernels shared by the cuda and hip backends (compiled by nvcc and by hipcc): elementwise
// passes, layer norm, the softmax of blocked attention and its gradient, Adam, and a tiled GEMM
// for toolchains without a vendor BLAS. 16-bit formats are converted by hand so both toolchains
// see the same code. Included only by exec/cuda/*.cu and exec/hip/*.hip, each with its own
// HETSIM_GPU_NS (cuda_impl, hip_impl) so that both backends link into one program.

#include <cstddef>
#include <cstdint>

#ifndef HETSIM_GPU_NS
#error "define HETSIM_GPU_NS (the including backend's namespace) before including exec/gpu/kernels.cuh"
#endif

namespace hetsim::exec::HETSIM_GPU_NS::gpu {

struct bf16 { std::uint16_t bits; };
struct f16 { std::uint16_t bits; };  ///< IEEE binary16

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(bf16 x) { return __uint_as_float(std::uint32_t(x.bits) << 16); }
__device__ __forceinline__ float to_float(f16 x) {
  const std::uint32_t sign = std::uint32_t(x.bits & 0x8000u) << 16, exp = (x.bits >> 10) & 0x1fu, mant = x.bits & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant · 2⁻²⁴
    const float f = float(mant) * 5.9604644775390625e-8f;
    return sign ? -f : f;
  }
  if (exp == 31) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  return __uint_as_float(sign | ((exp + 112) << 23) | (mant << 13));
}

template <class T> __device__ __forceinline__ T from_float(float f);
template <> __device__ __forceinline__ float from_float<float>(float f) { return f; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float f) {
  std::uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{static_cast<std::uint16_t>((u >> 16) | 0x40u)};  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even
  return bf16{static_cast<std::uint16_t>(u >> 16)};
}
template <> __device__ __forceinline__ f16 from_float<f16>(float f) {
  const std::uint32_t u = __float_as_uint(f), sign = (u >> 16) & 0x8000u;
  const int exp = int((u >> 23) & 0xffu) - 127 + 15;
  std::uint32_t mant = u & 0x7fffffu;
  if (((u >> 23) & 0xffu) == 0xffu && mant != 0) return f16{static_cast<std::uint16_t>(sign | 0x7e00u)};  // NaN
  if (exp >= 31) return f16{static_cast<std::uint16_t>(sign | 0x7c00u)};  // overflow → ∞
  if (exp <= 0) return f16{static_cast<std::uint16_t>(sign)};             // flush subnormals
  std::uint32_t h = sign | (std::uint32_t(exp) << 10) | (mant >> 13);
  if ((mant & 0x1fffu) > 0x1000u || ((mant & 0x1fffu) == 0x1000u && (h & 1u))) ++h;  // round to nearest even
  return f16{static_cast<std::uint16_t>(h)};
}

constexpr int kBlock = 256;  ///< threads per block of the row kernels (a power of two)

__device__ __forceinline__ float block_sum(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) sh[threadIdx.x] += sh[threadIdx.x + s];
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}
__device__ __forceinline__ float block_max(float v, float* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s) sh[threadIdx.x] = fmaxf(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const float r = sh[0];
  __syncthreads();
  return r;
}

/// dst[i] = src[i]·0.999 + 0.001: a memory-bound pass, one element a thread per step (the
/// unvectorized kernel: 2- or 4-byte loads).
template <class T>
__global__ void elementwise_kernel(const T* src, T* dst, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = from_float<T>(to_float(src[i]) * 0.999f + 1e-3f);
}

/// The same pass with 16-byte loads and stores (PyTorch's vectorized elementwise kernels):
/// `vecs` packs of 16/sizeof(T) elements; both pointers 16-byte aligned. The tail past
/// vecs·per goes to elementwise_kernel.
template <class T>
__global__ void elementwise_vec_kernel(const T* src, T* dst, std::size_t vecs) {
  constexpr int kPer = 16 / sizeof(T);
  union Pack {
    uint4 v;
    T e[kPer];
  };
  const auto* s = reinterpret_cast<const uint4*>(src);
  auto* d = reinterpret_cast<uint4*>(dst);
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < vecs; i += std::size_t(gridDim.x) * blockDim.x) {
    Pack p;
    p.v = s[i];
#pragma unroll
    for (int j = 0; j < kPer; ++j) p.e[j] = from_float<T>(to_float(p.e[j]) * 0.999f + 1e-3f);
    d[i] = p.v;
  }
}

/// One block per row: y = (x − mean)·rstd; backward: dx = rstd·(dy − mean(dy) − x̂·mean(dy·x̂)),
/// dy read from y and dx written over it.
template <class T>
__global__ void norm_kernel(const T* x, T* y, int cols, bool backward) {
  __shared__ float sh[kBlock];
  const T* xr = x + std::size_t(blockIdx.x) * cols;
  T* yr = y + std::size_t(blockIdx.x) * cols;
  // Two passes (mean, then the squared deviations): no cancellation when |mean| ≫ σ.
  float s = 0;
  for (int c = threadIdx.x; c < cols; c += kBlock) s += to_float(xr[c]);
  const float mean = block_sum(s, sh) / cols;
  float s2 = 0;
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    const float dv = to_float(xr[c]) - mean;
    s2 += dv * dv;
  }
  const float rstd = rsqrtf(block_sum(s2, sh) / cols + 1e-5f);
  if (!backward) {
    for (int c = threadIdx.x; c < cols; c += kBlock) yr[c] = from_float<T>((to_float(xr[c]) - mean) * rstd);
    return;
  }
  float sd = 0, sdx = 0;
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    const float dy = to_float(yr[c]);
    sd += dy;
    sdx += dy * (to_float(xr[c]) - mean) * rstd;
  }
  const float mdy = block_sum(sd, sh) / cols, mdyx = block_sum(sdx, sh) / cols;
  for (int c = threadIdx.x; c < cols; c += kBlock) {
    const float xh = (to_float(xr[c]) - mean) * rstd;
    yr[c] = from_float<T>(rstd * (to_float(yr[c]) - mdy - xh * mdyx));
  }
}

/// Attention scores of one row block, per head (blockIdx.x) and row (blockIdx.y): `s` (fp32,
/// rows × keys per head) becomes the softmax probabilities, also written to `p` in format T for
/// the next GEMM. With `causal`, row i sees keys up to first_row + i.
template <class T>
__global__ void softmax_kernel(float* s, T* p, int keys, long long head_stride, bool causal, int first_row) {
  __shared__ float sh[kBlock];
  const std::size_t off = std::size_t(blockIdx.x) * std::size_t(head_stride) + std::size_t(blockIdx.y) * keys;
  float* row = s + off;
  T* out = p + off;
  const int visible = causal ? min(keys, first_row + int(blockIdx.y) + 1) : keys;
  float mx = -3.0e38f;
  for (int c = threadIdx.x; c < visible; c += kBlock) mx = fmaxf(mx, row[c]);
  mx = block_max(mx, sh);
  float z = 0;
  for (int c = threadIdx.x; c < visible; c += kBlock) z += __expf(row[c] - mx);
  z = block_sum(z, sh);
  for (int c = threadIdx.x; c < keys; c += kBlock) {
    const float v = c < visible ? __expf(row[c] - mx) / z : 0.0f;
    row[c] = v;
    out[c] = from_float<T>(v);
  }
}

/// The softmax gradient of one row block (head blockIdx.x, row blockIdx.y):
/// ds = P ∘ (dP − rowsum(P ∘ dP)), in format T.
template <class T>
__global__ void softmax_grad_kernel(const float* prob, const float* dprob, T* ds, int keys, long long head_stride) {
  __shared__ float sh[kBlock];
  const std::size_t off = std::size_t(blockIdx.x) * std::size_t(head_stride) + std::size_t(blockIdx.y) * keys;
  float dot = 0;
  for (int c = threadIdx.x; c < keys; c += kBlock) dot += prob[off + c] * dprob[off + c];
  dot = block_sum(dot, sh);
  for (int c = threadIdx.x; c < keys; c += kBlock) ds[off + c] = from_float<T>(prob[off + c] * (dprob[off + c] - dot));
}

/// Fills `words` 16-bit words with pseudo-random bf16 values of magnitude [1, 2) and random sign
/// (a hash of the index and `seed`). Every format the kernels read finds finite, varied numbers
/// there: bf16 and fp16 words read as ±[1, 2), fp32 from the high word of each pair as ±[1, 2).
/// Workspaces start so, not as zeros: a GPU's GEMMs on zeros draw less power and run at
/// unthrottled clocks (an H200 ran the Llama 3 8B layer GEMMs at 912 TFLOP/s on zeros against
/// 660 sustained on random data; docs/microbenchmarks.md), which would time a step too fast.
__global__ void fill_kernel(std::uint16_t* p, std::size_t words, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < words; i += std::size_t(gridDim.x) * blockDim.x) {
    std::uint32_t x = static_cast<std::uint32_t>(i) ^ (static_cast<std::uint32_t>(i >> 32) * 0x9e3779b9u) ^ seed;
    x ^= x >> 16;  // lowbias32 (C. Wellons' integer hash)
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    p[i] = static_cast<std::uint16_t>((x & 0x8000u) | (0x7fu << 7) | ((x >> 20) & 0x7fu));
  }
}

/// Adam over fp32 state: params, grads, first and second moments, `n` each. The second moment
/// is read as |v|: the state starts as the workspace's random fill, negative halves included.
__global__ void adam_kernel(float* state, std::size_t n) {
  constexpr float lr = 1e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x) {
    const float g = state[n + i];
    const float m = b1 * state[2 * n + i] + (1 - b1) * g;
    const float v = b2 * state[3 * n + i] + (1 - b2) * g * g;
    state[2 * n + i] = m;
    state[3 * n + i] = v;
    state[i] -= lr * m / (sqrtf(fabsf(v)) + eps);
  }
}

/// Row-major C = α·op(A)·op(B) + β·C per batch (blockIdx.z), 16×16 shared-memory tiles, fp32
/// accumulation: the GEMM of toolchains without a vendor BLAS (Debian's HIP has no hipBLAS).
template <class TA, class TC>
__global__ void gemm_tiled_kernel(bool ta, bool tb, int m, int n, int k, float alpha, const TA* A, int lda, long long sa,
                                  const TA* B, int ldb, long long sb, float beta, TC* C, int ldc, long long sc) {
  constexpr int TS = 16;
  __shared__ float as[TS][TS + 1], bs[TS][TS + 1];
  A += std::size_t(blockIdx.z) * std::size_t(sa);
  B += std::size_t(blockIdx.z) * std::size_t(sb);
  C += std::size_t(blockIdx.z) * std::size_t(sc);
  const int row = int(blockIdx.y) * TS + int(threadIdx.y), col = int(blockIdx.x) * TS + int(threadIdx.x);
  float acc = 0;
  for (int t = 0; t < k; t += TS) {
    const int ak = t + int(threadIdx.x), bk = t + int(threadIdx.y);
    as[threadIdx.y][threadIdx.x] =
        row < m && ak < k ? to_float(ta ? A[std::size_t(ak) * lda + row] : A[std::size_t(row) * lda + ak]) : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        bk < k && col < n ? to_float(tb ? B[std::size_t(col) * ldb + bk] : B[std::size_t(bk) * ldb + col]) : 0.0f;
    __syncthreads();
    for (int i = 0; i < TS; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) {
    TC* c = C + std::size_t(row) * ldc + col;
    *c = from_float<TC>(alpha * acc + (beta != 0.0f ? beta * to_float(*c) : 0.0f));
  }
}

}  // namespace hetsim::exec::HETSIM_GPU_NS::gpu

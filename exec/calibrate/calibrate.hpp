#pragma once
// Calibration: microbenchmarks on a backend's device → the cost model's parameters for it,
// fitted by least squares (Eigen), written as a catalogue file a scenario can load.

#include <array>
#include <atomic>
#include <string>
#include <vector>

#include "exec/backend.hpp"

namespace hetsim::exec {

/// One timed GEMM: shape and seconds per call.
struct GemmSample {
  double m = 0, n = 0, k = 0, seconds = 0;
};

/// The cost model's view of a device, fitted from samples (docs/cost-models.md#compute):
///   t(m,n,k) = 2mnk / (peak · d/(d + half_dim)) + launch,  d = min(m,n,k).
struct GemmFit {
  double peak_flops = 0;  ///< asymptotic FLOP/s
  double half_dim = 0;
  double launch_s = 0;
  double rms_rel_error = 0;  ///< of the fit over the samples
};

/// Least-squares fit over a grid of half_dim values (the model is linear in 1/peak and launch
/// for a fixed half_dim). Requires: at least 3 samples.
[[nodiscard]] GemmFit fit_gemm(const std::vector<GemmSample>& samples);

struct Profile {
  GemmFit gemm;    ///< fp32
  GemmFit gemm16;  ///< bf16, fitted on its own on a GPU; empty on the host
  /// FLOP/s of 16-bit GEMMs: their own fits on a GPU, the fp32 peak × the measured speed ratio
  /// on the host.
  double peak_bf16 = 0, peak_fp16 = 0;
  /// The fit of the format training runs in: bf16 where its GEMMs are much faster than fp32
  /// (tensor cores; 1.5× or more), else fp32. Its half_dim and launch gap go in the profile.
  [[nodiscard]] bool tensor_cores() const { return gemm16.peak_flops > 0 && peak_bf16 > 1.5 * gemm.peak_flops; }
  [[nodiscard]] const GemmFit& train_gemm() const { return tensor_cores() ? gemm16 : gemm; }
  /// Fused attention at long sequences over the training format's GEMM peak.
  double attention_efficiency = 1;
  double attention_half_seq = 0;    ///< sequence length at which it halves (two lengths fitted)
  double attention_bwd = 1;  ///< backward / forward throughput per counted FLOP (cost model's attention_bwd)
  /// Achieved bandwidth of one op class's kernels as the cost model counts their bytes, over
  /// memory_bandwidth (0: not measured).
  double norm_memory = 0;
  double loss_memory = 0;
  double optimizer_memory = 0;
  /// Achieved bandwidth of the one-element-at-a-time pass in the training format
  /// (Device::elementwise_unvectorized) over memory_bandwidth.
  double unvectorized_memory = 0;
  double memory_bandwidth = 0;      ///< bytes/s of the streaming pass
  double copy_bandwidth = 0;        ///< bytes/s of a device-to-device copy
  /// The link between devices as the collective model sees it (ring all-reduce over 2
  /// devices: t = 2α + S/bw, fitted over message sizes); 0 when not measured.
  double link_latency_s = 0;
  double link_bandwidth = 0;
  /// Point-to-point between the same two devices (ping-pong of send/recv, fitted t = α + S/bw
  /// per one-way message); 0 when not measured. Reported, and written as a comment.
  double p2p_latency_s = 0;
  double p2p_bandwidth = 0;
  std::vector<GemmSample> samples;       ///< fp32 GEMMs as timed
  std::vector<GemmSample> samples_bf16;  ///< bf16 (a GPU; empty on the host)
  std::vector<GemmSample> samples_fp16;  ///< fp16 (a GPU; empty on the host)
  std::string failure;  ///< the device's failure(), if it met one (the figures are then void)
  int alongside = 0;    ///< devices that ran the calibration load beside it (calibrate's `alongside`)
  int cores = 1;        ///< cpu cores the measured device split its kernels over (the backend's own)
};

/// Runs the microbenchmarks on device 0 of `backend` (about `seconds` of work in total).
/// `extra_shapes` (m, n, k) are timed besides the built-in set, in every format measured (the
/// GEMMs of a scenario's plan: calibrate --shapes-of). While the kernels are timed, each device
/// of `alongside` runs the calibration's kernels over and over on a thread of its own
/// (calibration_load), at its own pace: a device is then measured beside the load of the others
/// a replay runs it with (shared caches, memory bandwidth, clocks; calibrate --alongside). The
/// load stops before the link is measured (devices 0 and 1 use both threads there).
/// Requires: `alongside` holds devices other than `backend`'s, none of them used elsewhere meanwhile.
[[nodiscard]] Profile calibrate(Backend& backend, double seconds = 2.0,
                                const std::vector<std::array<int, 3>>& extra_shapes = {},
                                const std::vector<Device*>& alongside = {});

/// One round of the calibration's kernels on `dev`, as the load beside a calibration: each
/// fp32 GEMM of `shapes`, a streaming pass, a norm and an attention
/// forward and backward, an Adam pass; between kernels it returns early once `stop` is set.
/// Returns the kernels it ran.
[[nodiscard]] int calibration_load(Device& dev, const std::vector<std::array<int, 3>>& shapes, const std::atomic<bool>& stop);

/// The profile as a catalogue file: one [[link]] "<name>-copy" and one [[device]] "<name>",
/// every figure sourced to this calibration. Every timed GEMM is written as measured_gemms (the
/// cost model then follows them), and each format's peak is at least its fastest GEMM.
[[nodiscard]] std::string profile_toml(const Profile& p, const std::string& name, double memory_bytes, int devices);

}  // namespace hetsim::exec

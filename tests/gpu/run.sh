#!/usr/bin/env bash
# GPU checks, for a machine with an NVIDIA GPU (the device tool's H200 in practice): builds the
# release preset with CUDA, runs the `gpu`-labelled tests, calibrates the GPU, replays a one-GPU
# bf16 plan with that profile and compares, replays a two-stage pipeline on two "devices" sharing
# the GPU, runs that pipeline's pool on the GPUs of its model with a memory cap, then prints a short table; with PyTorch present, also tests/gpu/microbench.py (the cost
# model's GEMM, attention, memory and launch figures on this GPU). About 5 minutes.
#   tests/gpu/run.sh [OUT_DIR]
# HETSIM_SKIP_MICROBENCH=1 leaves the microbenchmarks out. HETSIM_GPU_BIN=DIR uses binaries built elsewhere (tests/gpu/pack.sh; the device machine has no
# Debian packages to build with) instead of building here.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp/hetsim-gpu}}
mkdir -p "$out"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$out/gpu.txt" || true
bin=${HETSIM_GPU_BIN:-}
if [ -z "$bin" ]; then
  cmake --preset release -DHETSIM_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DHETSIM_WITH_HIP=OFF -DHETSIM_WITH_GUI=OFF \
    -DHETSIM_WITH_SIMGRID=OFF -DHETSIM_WITH_MPI=OFF > "$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
  cmake --build --preset release -j "$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
  bin=build/release/bin
fi
# Each step under a time limit: a hang must not eat the device time.
timeout 300 "$bin/exec_cuda_tests" --gtest_output="json:$out/gtest-gpu.json" > "$out/ctest-gpu.log" 2>&1; gpu_rc=$?
timeout 120 "$bin/hetsim-exec" calibrate --backend cuda --seconds 5 --name gpu0 --memory 139 --devices 1 \
  --out "$out/gpu0.toml" 2> "$out/calibrate.txt"
cat > "$out/gpu.toml" <<TOML
# One GPU, priced with its own calibrated profile: a 12-layer transformer (hidden 2048, bf16).
[model]
name = "gpu-check"
layers = 12
hidden = 2048
heads = 16
kv_heads = 16
ffn_hidden = 8192
vocab = 32000
[training]
global_batch = 8
seq_len = 2048
precision = "bf16"
[[cluster.pool]]
catalog = "gpu0.toml"
device = "gpu0"
nodes = 1
devices_per_node = 1
[memory]
runtime_reserve = "0GiB"
comm_buffers = "0GiB"
fragmentation = 0.0
[parallel]
tp = 1
pp = 1
dp = 1
TOML
timeout 120 "$bin/hetsim-exec" run --backend cuda --steps 5 --warmup 1 --out "$out/measured.json" \
  --predicted "$out/predicted.json" "$out/gpu.toml" > "$out/run.txt" 2>&1; run_rc=$?
# Two pipeline stages as two "devices" on the one GPU (each its own stream; copies between them).
sed -e 's/^devices_per_node = 1/devices_per_node = 2/' -e 's/^pp = 1/pp = 2/' "$out/gpu.toml" > "$out/gpu-pp2.toml"
timeout 120 "$bin/hetsim-exec" run --backend cuda --devices 2 --steps 3 --warmup 1 "$out/gpu-pp2.toml" > "$out/run-pp2.txt" 2>&1
pp2_rc=$?
# Per-pool GPU options (not run on a GPU before): the pool on the GPUs of its model (the last word
# of nvidia-smi's name, e.g. H200), capped at 16 GiB a device; a cap above the GPU's memory exits 2.
model=$(cut -d, -f1 "$out/gpu.txt" 2>/dev/null | awk '{print $NF}')
timeout 120 "$bin/hetsim-exec" run --backend cuda --devices 2 --steps 2 --warmup 1 --pool-devices "gpu0=${model:-NVIDIA}" \
  --pool-memory gpu0=16 "$out/gpu-pp2.toml" > "$out/run-pool.txt" 2>&1
pool_rc=$?
if [ $pool_rc -eq 0 ] && ! { grep -q "pool 'gpu0' runs on cuda devices 0, 1" "$out/run-pool.txt" &&
                             grep -q "of 16384 MiB" "$out/run-pool.txt"; }; then
  pool_rc=9
fi
timeout 60 "$bin/hetsim-exec" run --backend cuda --pool-memory gpu0=100000 "$out/gpu.toml" > "$out/run-toobig.txt" 2>&1
big_rc=$?
mb_rc=skipped
if [ -z "${HETSIM_SKIP_MICROBENCH:-}" ] && LD_LIBRARY_PATH="${HETSIM_PY_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" python3 -c "import torch; assert torch.cuda.is_available()" 2> /dev/null; then
  LD_LIBRARY_PATH="${HETSIM_PY_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" PYTHONUNBUFFERED=1 timeout 240 python3 tests/gpu/microbench.py "$out" ${HETSIM_MICROBENCH_ARGS:-} > "$out/microbench.txt" 2>&1
  mb_rc=$?
fi
echo
echo "== hetsim GPU check ==================================================="
echo "gpu:          $(cat "$out/gpu.txt" 2>/dev/null)"
echo "gpu tests:    $(grep -E 'PASSED|FAILED' "$out/ctest-gpu.log" | tr '\n' ' ') (rc $gpu_rc)"
grep -E '^\[  (FAILED|SKIPPED) ' "$out/ctest-gpu.log" | head -20
echo "calibration:  $(tail -1 "$out/calibrate.txt")"
echo "replay 1 GPU: rc $run_rc"
sed -n 1,24p "$out/run.txt"
echo "replay pp2 on one GPU: rc $pp2_rc"
sed -n 1,4p "$out/run-pp2.txt"
echo "pool on its GPU model, capped at 16 GiB: rc $pool_rc (9: ran without saying so)"
grep -E "^note: pool|^step" "$out/run-pool.txt" | head -4
echo "pool memory above the GPU's: rc $big_rc (2 expected): $(head -1 "$out/run-toobig.txt")"
echo "microbenchmarks: rc $mb_rc (table in $out/microbench.txt)"
[ $gpu_rc -eq 0 ] && [ $run_rc -eq 0 ] && [ $pp2_rc -eq 0 ] && [ $pool_rc -eq 0 ] && [ $big_rc -eq 2 ]

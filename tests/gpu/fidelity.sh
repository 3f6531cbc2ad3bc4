#!/usr/bin/env bash
# Measurements for the cost model on the device machine (tests/gpu/device.sh runs it after the
# checks): the sustained bf16 GEMM rate with clocks and power (sustained.py), and a replay of
# real Llama 3 8B layer shapes (4 layers, seq 4096) priced with the catalogue's h200-sxm, whose
# per-op-class table compares the catalogue GEMM model with cuBLAS at those shapes.
#   tests/gpu/fidelity.sh BIN_DIR OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
bin=$1 out=$2
mkdir -p "$out"
if LD_LIBRARY_PATH="${HETSIM_PY_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" python3 -c "import torch" 2> /dev/null; then
  LD_LIBRARY_PATH="${HETSIM_PY_LD_LIBRARY_PATH-${LD_LIBRARY_PATH:-}}" PYTHONUNBUFFERED=1 timeout 60 \
    python3 tests/gpu/sustained.py "$out" 12 > "$out/sustained.txt" 2>&1
  echo "sustained GEMM: rc $?"; tail -4 "$out/sustained.txt"
fi
for seq in 4096 8192; do
  cat > "$out/llama8b-4l-$seq.toml" <<TOML
# Llama 3 8B's layer shapes (4 of its 32 layers) on one H200, priced with the catalogue entry.
[model]
preset = "llama3-8b"
layers = 4
[training]
global_batch = 4
seq_len = $seq
precision = "bf16"
[[cluster.pool]]
device = "h200-sxm"
nodes = 1
devices_per_node = 1
[parallel]
tp = 1
pp = 1
dp = 1
micro_batch = 1
TOML
  timeout 180 "$bin/hetsim-exec" run --backend cuda --steps 3 --warmup 1 "$out/llama8b-4l-$seq.toml" > "$out/llama8b-4l-$seq.txt" 2>&1
  echo "replay llama3-8b 4 layers seq $seq (catalogue h200-sxm): rc $?"
  sed -n 1,16p "$out/llama8b-4l-$seq.txt"
done

#!/usr/bin/env bash
# On the device tool's machine, with .gpu-carry/ from tests/gpu/pack.sh carried: finds CUDA's
# libraries there, checks that every library resolves, runs tests/gpu/run.sh on the packed
# binaries and leaves its logs as one archive in $OUT (the tool brings back at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
work=/tmp/hetsim-gpu
mkdir -p "$work"
dirs=$(find /usr/local /opt /usr/lib -xdev \( -name 'libcublas.so.13' -o -name 'libcublasLt.so.13' -o -name 'libcudart.so.13' \
  -o -name 'libnccl.so.2' \) -printf '%h\n' 2> /dev/null | sort -u | tr '\n' ':')
# PyTorch keeps the machine's own library path (tests/gpu/run.sh reads HETSIM_PY_LD_LIBRARY_PATH).
export HETSIM_PY_LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
export LD_LIBRARY_PATH="$PWD/.gpu-carry/lib:${dirs}${LD_LIBRARY_PATH:-}"
# The C++ runtime built with, only where the machine's is older than the binaries need.
.gpu-carry/bin/hetsim --version > /dev/null 2>&1 || export LD_LIBRARY_PATH="$PWD/.gpu-carry/lib-cxx:$LD_LIBRARY_PATH"
echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
for b in .gpu-carry/bin/*; do ldd "$b" | grep 'not found' | sed "s|^|$b: |"; done
HETSIM_GPU_BIN=.gpu-carry/bin tests/gpu/run.sh "$work"; rc=$?
# The kernels under compute-sanitizer's memcheck, where the machine's runtime allows it.
if command -v compute-sanitizer > /dev/null; then
  timeout 120 compute-sanitizer --tool memcheck --print-limit 20 .gpu-carry/bin/exec_cuda_tests \
    --gtest_filter='-*Calibrates*' > "$work/memcheck.txt" 2>&1
  echo "memcheck: rc $? $(grep -E 'ERROR SUMMARY' "$work/memcheck.txt" | tail -1)"
fi
# Measurements for the cost model (HETSIM_FIDELITY=0 leaves them out).
[ "${HETSIM_FIDELITY:-1}" = 0 ] || tests/gpu/fidelity.sh .gpu-carry/bin "$work/fidelity"
tar czf "${OUT:-/tmp}/gpu-results.tgz" -C "$work" .
exit $rc

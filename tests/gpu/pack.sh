#!/usr/bin/env bash
# Builds the cuda binaries here (sm_90, release, no GUI/SimGrid/MPI/HIP) and packs them with the
# non-CUDA shared libraries they need into .gpu-carry/, for the device tool's machine, which has
# CUDA, cuBLAS, NCCL and PyTorch but none of the Debian packages hetsim builds with. Then:
#   device run, carry [".gpu-carry"], command: tests/gpu/device.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.gpu-carry/' .git/info/exclude 2>/dev/null || { mkdir -p .git/info; echo '/.gpu-carry/' >> .git/info/exclude; }
cmake -S . -B build/gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHETSIM_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  -DHETSIM_WITH_HIP=OFF -DHETSIM_WITH_GUI=OFF -DHETSIM_WITH_SIMGRID=OFF -DHETSIM_WITH_MPI=OFF > /dev/null
cmake --build build/gpu --target hetsim-exec exec_cuda_tests hetsim
rm -rf .gpu-carry && mkdir -p .gpu-carry/bin .gpu-carry/lib .gpu-carry/lib-cxx
cp build/gpu/bin/hetsim-exec build/gpu/bin/exec_cuda_tests build/gpu/bin/hetsim .gpu-carry/bin/
strip .gpu-carry/bin/*
# Every library the binaries load except the C library, the loader and CUDA's own (found there).
for b in .gpu-carry/bin/*; do ldd "$b"; done | awk '/=> \//{print $1" "$3}' | sort -u |
  grep -Ev '^(libc|libm|libdl|libpthread|librt|ld-linux[^ ]*|libcudart|libcublas|libcublasLt|libnccl)\.so' |
  while read -r name path; do
    case $name in libstdc++*|libgcc_s*) cp -L "$path" ".gpu-carry/lib-cxx/$name" ;;  # only where the machine's are older
                 *) cp -L "$path" ".gpu-carry/lib/$name" ;; esac
  done
du -sh .gpu-carry; ls .gpu-carry/lib .gpu-carry/lib-cxx

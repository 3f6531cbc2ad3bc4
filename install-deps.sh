#!/usr/bin/env bash
# Installs every Debian 12 package hetsim needs to build, test and run.
# Idempotent and non-interactive; run as root (or through sudo).
#   ./install-deps.sh          build + test dependencies (CUDA is used from /usr/local/cuda when present)
#   ./install-deps.sh --hip    also the ROCm HIP compiler (about 340 MB more), for HETSIM_WITH_HIP=ON
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates
  python3  # the CLI tests read JSON with it
  clang    # libFuzzer targets of the readers (tests/fuzz, the fuzz preset)
  # libraries (see ../shared/reference/dependencies.md for the why of each name)
  libsimgrid-dev libeigen3-dev libtomlplusplus-dev
  qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev
  fonts-dejavu-core  # the GUI screenshots test draws in DejaVu Sans, so its images do not depend on the machine
  libopenmpi-dev openmpi-bin
  libcli11-dev nlohmann-json3-dev libfmt-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
)
for arg in "$@"; do
  case "$arg" in
    --hip) packages+=(hipcc libamdhip64-dev) ;;
    -h|--help) sed -n '2,5p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps.sh: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
for attempt in 1 2 3; do
  if $sudo apt-get -o DPkg::Lock::Timeout=300 update -q &&
     $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"; then
    exit 0
  fi
  echo "install-deps.sh: apt-get failed (attempt $attempt), retrying in 10 s" >&2
  sleep 10
done
echo "install-deps.sh: could not install: ${missing[*]}" >&2
exit 1

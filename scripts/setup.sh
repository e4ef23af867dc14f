#!/usr/bin/env bash
# Installs every Debian package ember's build, tests and benchmarks need (Debian 12 / Ubuntu 22.04+).
# Run as root or with sudo. Safe to run again: apt skips what is already there.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake ninja-build ccache pkg-config git \
  libgtest-dev libgmock-dev libbenchmark-dev \
  libcli11-dev libfmt-dev nlohmann-json3-dev libtomlplusplus-dev \
  libdnnl-dev libopenblas-openmp-dev zlib1g-dev \
  libopenblas0-pthread libopenblas0-serial  `# every OpenBLAS build: scripts/blas-builds.sh runs ember under each (issue 22)` \
  libstb-dev libcurl4-openssl-dev \
  libturbojpeg0-dev libspng-dev libwebp-dev  `# the image decoders (src/data/decode*.cpp)` \
  clang-14 libclang-rt-14-dev \
  dataset-fashion-mnist chromium \
  libgloo-dev openmpi-bin \
  python3-venv  `# tests/export: a cached venv with onnx + onnxruntime from PyPI` \
  python3-dev  `# pip install .: the Python package's extension module (docs/python.md)` \
  debootstrap  `# scripts/test-wheel-bare-root.sh: the wheel in a minimal Debian root (issue 47)` \
  patchelf xz-utils  # scripts/gpu-bundle.sh

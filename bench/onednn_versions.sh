#!/usr/bin/env bash
# Debian's oneDNN 2.6 against PyPI's oneDNN 3.x on ember's primitives (bench/onednn_versions.cpp):
# builds the bench once per oneDNN (outside ember's CMake build, which stays on Debian's libdnnl),
# then runs the variants alternately (A B C A B C ...) for `rounds` rounds, on the CPU's own ISA and
# with oneDNN's dispatch capped to AVX512_CORE_BF16 (the AVX512-BF16-without-AMX path), and prints
# per-row ratios 3.x / 2.6 (bench/onednn_versions_table.py: median over rounds of each run's median).
#   bench/onednn_versions.sh [rounds] [reps] [outdir]
# The 3.x variants, each skipped with a note when its prefix lacks dnnl.hpp:
#   3.2  GNU OpenMP (as ember and Debian's 2.6):  ONEDNN3_GOMP=/work/venvs/onednn3, made by
#        /usr/bin/python3 -m venv /work/venvs/onednn3 && /work/venvs/onednn3/bin/pip install onednn-devel-cpu-gomp==2023.2.0
#   3.13 Intel's current build (SYCL CPU runtime, TBB threads): ONEDNN3_SYCL=/work/venvs/onednn3-sycl, made by
#        /usr/bin/python3 -m venv /work/venvs/onednn3-sycl && /work/venvs/onednn3-sycl/bin/pip install onednn-devel==2026.1.0
# Threads: THREADS (default 2) sets OMP_NUM_THREADS for the OpenMP builds; the TBB build takes its
# thread count from the CPU affinity, so every variant runs under `taskset` with the first $THREADS CPUs.
set -euo pipefail
ROUNDS=${1:-5}
REPS=${2:-15}
OUT=${3:-build-onednn-versions}
THREADS=${THREADS:-2}
GOMP=${ONEDNN3_GOMP:-/work/venvs/onednn3}
SYCL=${ONEDNN3_SYCL:-/work/venvs/onednn3-sycl}
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/onednn_versions.cpp
mkdir -p "$OUT"
CXX=${CXX:-g++}
FLAGS="-O2 -std=c++20 -Wall -Wextra"

VARIANTS=""
$CXX $FLAGS "$SRC" -o "$OUT/onednn_v2" -ldnnl && VARIANTS="v2"
if [ -f "$GOMP/include/oneapi/dnnl/dnnl.hpp" ]; then
  $CXX $FLAGS -I"$GOMP/include" "$SRC" -o "$OUT/onednn_v3_gomp" -L"$GOMP/lib" -Wl,-rpath,"$GOMP/lib" -ldnnl
  VARIANTS="$VARIANTS v3_gomp"
else
  echo "onednn_versions.sh: no oneDNN 3.x (GNU OpenMP) under $GOMP; that variant left out" >&2
fi
if [ -f "$SYCL/include/oneapi/dnnl/dnnl.hpp" ]; then
  # DT_RPATH (not RUNPATH) so that libdnnl's own dependencies (libsycl, libsvml, libtbb) resolve
  # in the venv too.
  $CXX $FLAGS -I"$SYCL/include" "$SRC" -o "$OUT/onednn_v3_sycl" -L"$SYCL/lib" \
    -Wl,--disable-new-dtags,-rpath,"$SYCL/lib" -ldnnl
  VARIANTS="$VARIANTS v3_sycl"
else
  echo "onednn_versions.sh: no oneDNN 3.x (SYCL/TBB) under $SYCL; that variant left out" >&2
fi

export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}  # as bench/compare_precision.sh, on this shared machine
CPUS=$(seq -s, 0 $((THREADS - 1)))
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') (family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')); flags: $(grep -m1 -o -w -E 'amx_bf16|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); threads=$THREADS rounds=$ROUNDS reps=$REPS OMP_WAIT_POLICY=$OMP_WAIT_POLICY; load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {  # variant isa round
  local env=(OMP_NUM_THREADS="$THREADS")
  [ "$2" != native ] && env+=(ONEDNN_MAX_CPU_ISA="$2" DNNL_MAX_CPU_ISA="$2")
  # The SYCL build's CPU engine is an OpenCL CPU device; the ICD file pip installs names a path
  # that does not exist (/opt/anaconda1anaconda2anaconda3/...), so the engine fails without this.
  [ "$1" = v3_sycl ] && env+=(OCL_ICD_FILENAMES="$SYCL/lib/libintelocl.so")
  env "${env[@]}" taskset -c "$CPUS" "$OUT/onednn_$1" --reps "$REPS" > "$OUT/$2.$1.$3.tsv"
}
for isa in native AVX512_CORE_BF16; do
  for r in $(seq 1 "$ROUNDS"); do
    for v in $VARIANTS; do run "$v" "$isa" "$r"; done
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 "$HERE/onednn_versions_table.py" "$OUT" $VARIANTS

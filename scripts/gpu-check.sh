#!/usr/bin/env bash
# One-shot check of the CUDA backend on a machine with an NVIDIA GPU (written for one GPU, 16
# cores; cuBLAS/cuDNN may come from the nvidia-* Python wheels). Runs the GPU tests, `ember
# doctor`, the benches, a 2-epoch Fashion-MNIST run on the GPU and PyTorch's side (bench/torch_gpu.py;
# ember/PyTorch ratio rows by bench/gpu_ratios.py), then the CPU tests, and prints one table last.
# Bounded to 8 minutes in all (a timeout per step).
# Without a usable GPU it still runs the CPU-side steps and says the GPU steps were skipped.
#   usage: scripts/gpu-check.sh [--bundle DIR] [--debs DIR] [OUTDIR]   (OUTDIR default: $OUT, else ./gpu-check-out)
# --bundle DIR: builds nothing; runs the binaries of a bundle made by scripts/gpu-bundle.sh (unpacked
#   into OUTDIR/bundle-root), with cuBLAS/cuDNN/NCCL found in the python wheels (site-packages/
#   nvidia/*/lib of the python3 on PATH). Without it: configures and builds Release here first.
# --debs DIR: the fallback, packages from scripts/gpu-debs.sh: when the bundle's `ember --version`
#   fails (or with no --bundle, or EMBER_GPU_CHECK_FORCE_FALLBACK=1) builds ember + ember_tests in
#   OUTDIR/debs-build against those packages unpacked into OUTDIR/debs-prefix, then goes on from it.
# Writes OUTDIR/<step>.log for every step and OUTDIR/summary.json. Exit status: 0 when every step
# that ran passed, 1 otherwise. Status: untested on a GPU as of 2026-11-30 (see docs/gpu.md).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
bundle="" debs=""
while [[ ${1:-} == --bundle || ${1:-} == --debs ]]; do
  [[ -n ${2:-} ]] || { echo "usage: $0 [--bundle DIR] [--debs DIR] [OUTDIR]" >&2; exit 2; }
  if [[ $1 == --bundle ]]; then
    bundle=$(cd "$2" && pwd) || { echo "gpu-check: no bundle directory $2 (make one with scripts/gpu-bundle.sh)" >&2; exit 2; }
  else
    debs=$(cd "$2" && pwd) || { echo "gpu-check: no directory $2 (make one with scripts/gpu-debs.sh)" >&2; exit 2; }
  fi
  shift 2
done
out=${1:-${OUT:-./gpu-check-out}}
mkdir -p "$out" && out=$(cd "$out" && pwd)
# The training steps write run directories here; a second check into the same folder starts them
# afresh (ember refuses to start a new run in a directory that already holds one).
rm -rf "$out/train-cpu-smoke" "$out/train-run" "$out/train-run-bf16" "$out/train-run-fp16"
build=${BUILD_DIR:-$root/build-gpu-check}
jobs=${JOBS:-$(nproc)}
deadline=$(( $(date +%s) + ${GPU_CHECK_SECONDS:-480} ))
names=() statuses=() seconds=()

# run NAME LIMIT_SECONDS CMD...: runs with a timeout cut to the time left, records the status.
run() {
  local name=$1 limit=$2; shift 2
  local left=$(( deadline - $(date +%s) ))
  (( limit > left )) && limit=$left
  local t0=$(date +%s) rc status
  if (( limit <= 5 )); then
    status="SKIP (out of time)"
  else
    echo "== $name (limit ${limit}s)"
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    rc=$?
    if (( rc == 0 )); then status=PASS; elif (( rc == 124 || rc == 137 )); then status="FAIL (timeout)"; else status="FAIL (rc=$rc)"; fi
  fi
  names+=("$name"); statuses+=("$status"); seconds+=($(( $(date +%s) - t0 )))
  echo "   $status"
}
skip() { names+=("$1"); statuses+=("SKIP ($2)"); seconds+=(0); echo "== $1: skipped ($2)"; }

# ---- toolchain: nvcc, and cuBLAS/cuDNN from pip wheels when the toolkit lacks them ------------
export PATH="$PATH:/usr/local/cuda/bin"
prefix_path="" libdirs=""
wheel_dirs=$(python3 - <<'PY' 2>/dev/null
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()]
for r in roots:
    for d in sorted(glob.glob(os.path.join(r, "nvidia", "*"))):
        if os.path.isdir(os.path.join(d, "include")) or os.path.isdir(os.path.join(d, "lib")):
            print(d)
PY
)
for d in $wheel_dirs; do
  prefix_path="${prefix_path:+$prefix_path;}$d"
  [[ -d $d/lib ]] && libdirs="${libdirs:+$libdirs:}$d/lib"
done
[[ -n $libdirs ]] && export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(hostname)"; echo "nproc: $(nproc)"
  echo "nvcc: $(command -v nvcc || echo none)"; nvcc --version 2>/dev/null | tail -1
  echo "nvidia wheel dirs: ${wheel_dirs:-none}"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 || echo "nvidia-smi: not available"
} >"$out/environment.log" 2>&1
gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpu_count=${gpu_count:-0}

# ---- fallback: build from the Debian packages of scripts/gpu-debs.sh ---------------------------
# build_from_debs DEBS_DIR: unpacks the .debs into OUTDIR/debs-prefix (scripts/gpu-debs-prefix.sh
# rewrites their /usr paths), configures and builds OUTDIR/debs-build against that prefix only,
# puts its libraries on LD_LIBRARY_PATH and points e/tests_bin/broot at the build, so the bundle's
# steps go on from it. Writes nothing outside OUTDIR. EMBER_GPU_CHECK_FALLBACK_TARGETS (default
# "ember_cli ember_tests") and EMBER_GPU_CHECK_FALLBACK_ARGS (more cmake -D options) narrow it.
build_from_debs() {
  local p=$out/debs-prefix b=$out/debs-build
  local L=$p/usr/lib/x86_64-linux-gnu
  run debs_unpack 90 "$root/scripts/gpu-debs-prefix.sh" "$1" "$p"
  [[ ${statuses[-1]} == PASS ]] || { skip debs_configure "debs_unpack failed"; return 1; }
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  local archs=${EMBER_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | sed 's/$/-real/')}
  # Every dependency named explicitly (the GPU machine's CMake may not know the Debian multiarch
  # directory, and OpenBLAS's libopenblas.so / cblas.h are update-alternatives links in Debian,
  # not in the packages); pkg-config sees the prefix's .pc files only.
  run debs_configure 120 env PKG_CONFIG_LIBDIR="$L/pkgconfig:$p/usr/share/pkgconfig" \
    cmake -S "$root" -B "$b" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_BENCH=OFF \
    ${archs:+"-DEMBER_CUDA_ARCHS=$archs"} "-DCMAKE_PREFIX_PATH=${prefix_path:+$prefix_path;}$p/usr" \
    "-DCMAKE_INCLUDE_PATH=$p/usr/include" "-DCMAKE_LIBRARY_PATH=$L;$p/lib/x86_64-linux-gnu" \
    "-Dfmt_DIR=$L/cmake/fmt" "-DGTest_DIR=$L/cmake/GTest" "-Dtomlplusplus_DIR=$L/cmake/tomlplusplus" "-Dnlohmann_json_DIR=$p/usr/share/cmake/nlohmann_json" \
    "-DCLI11_DIR=$p/usr/share/cmake/CLI11" "-DDNNL_INCLUDE_DIR=$p/usr/include" "-DDNNL_LIBRARY=$L/libdnnl.so" \
    "-DCBLAS_INCLUDE_DIR=$p/usr/include/x86_64-linux-gnu/openblas-openmp" \
    "-DOPENBLAS_LIBRARY=$L/openblas-openmp/libopenblas.so" "-DZLIB_INCLUDE_DIR=$p/usr/include" \
    "-DZLIB_LIBRARY=$L/libz.so" "-DCURL_INCLUDE_DIR=$p/usr/include/x86_64-linux-gnu" \
    "-DCURL_LIBRARY=$L/libcurl.so" "-DSTB_LIBRARY=$L/libstb.so" ${EMBER_GPU_CHECK_FALLBACK_ARGS:-}
  [[ ${statuses[-1]} == PASS ]] || { skip debs_build "debs_configure failed"; return 1; }
  run debs_build "${EMBER_GPU_CHECK_BUILD_SECONDS:-330}" cmake --build "$b" -j "$jobs" --target ${EMBER_GPU_CHECK_FALLBACK_TARGETS:-ember_cli ember_tests}
  [[ ${statuses[-1]} == PASS ]] || return 1
  export LD_LIBRARY_PATH="$L:$L/openblas-openmp:$p/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  e=$b/ember tests_bin=$b/tests/ember_tests broot=$b build=$b
  run debs_version 20 "$e" --version
}

# ---- CPU-side steps: always --------------------------------------------------------------------
if [[ -n $bundle || -n $debs ]]; then
  # Unpack, check every library resolves (the CUDA ones may come later, from the wheels: none is
  # linked), and start the CLI. Tests run from the unpacked root, where ./golden is.
  broot=$out/bundle-root
  e=$broot/bin/ember
  tests_bin=$broot/bin/ember_tests
  if [[ -n $bundle ]]; then
  run unpack 60 bash -c 'set -e; rm -rf "$2"; mkdir -p "$2"
    for a in "$1/payload.tar.xz" "$1/cxx-runtime.tar.xz"; do
      [[ -f $a ]] || continue
      if command -v xz >/dev/null; then tar -C "$2" -xJf "$a"
      else python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$a" "$2"; fi
    done
    cat "$1/MANIFEST.txt"' unpack "$bundle" "$broot"
  run libraries 20 bash -c "ldd '$e' '$tests_bin' && ! ldd '$e' '$tests_bin' | grep 'not found'"
  run version 20 "$e" --version
  fi
  # The bundle's CLI does not start (or there is none, or EMBER_GPU_CHECK_FORCE_FALLBACK=1): build.
  if [[ -n $debs ]] && [[ -z $bundle || ${statuses[-1]} != PASS || ${EMBER_GPU_CHECK_FORCE_FALLBACK:-0} == 1 ]]; then
    build_from_debs "$debs"
  fi
  run doctor_json 60 bash -c "'$e' doctor --json > '$out/doctor.json'"
  [[ -x $e && -x $tests_bin ]] && built=1 || built=0
  data_dir=""
  for d in "$bundle/data/fashion-mnist" "$debs/data/fashion-mnist"; do
    [[ -f $d/train-images-idx3-ubyte.gz ]] && { data_dir=$d; break; }
  done
  if [[ -n $data_dir ]]; then  # the bundled data reads, and a few CPU steps train on it
    run train_cpu_smoke 60 "$e" train --device cpu --data-dir "$data_dir" --epochs 1 --limit-train 512 \
      --limit-test 256 --run-dir "$out/train-cpu-smoke"
  else
    skip train_cpu_smoke "the bundle has no data/fashion-mnist"
  fi
else
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
# Only the card's own architecture is compiled here (CI builds the full list), to fit the 8 minutes.
archs=${EMBER_CUDA_ARCHS:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | sed 's/$/-real/')}
run configure 120 cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
  -DEMBER_BUILD_BENCH=OFF ${archs:+"-DEMBER_CUDA_ARCHS=$archs"} ${prefix_path:+"-DCMAKE_PREFIX_PATH=$prefix_path"}
if [[ ${statuses[-1]} == PASS ]]; then
  run build 330 cmake --build "$build" -j "$jobs"
else
  skip build "configure failed"
fi
built=0; [[ ${statuses[-1]} == PASS ]] && built=1
# Fashion-MNIST for the GPU training step: Debian's package, or the four .gz files carried along
# in data/fashion-mnist/ (or $EMBER_DATA_DIR/fashion-mnist).
data_dir=""
for d in "${EMBER_DATA_DIR:+$EMBER_DATA_DIR/fashion-mnist}" /usr/share/datasets/fashion-mnist "$root/data/fashion-mnist"; do
  [[ -n $d && -f $d/train-images-idx3-ubyte.gz ]] && { data_dir=$d; break; }
done
e=$build/ember
fi
gpu_steps=(gpu_tests doctor bench_matmul bench_matmul_tf32 bench_bandwidth bench_train bench_train_mnistnet128
  train_gpu train_gpu_bf16 train_gpu_fp16 torch_side torch_ratios)

# ---- GPU steps: only with a GPU -----------------------------------------------------------------
if (( gpu_count == 0 )); then
  for s in "${gpu_steps[@]}"; do skip "$s" "no NVIDIA GPU visible (nvidia-smi -L lists none)"; done
elif (( ! built )); then
  for s in "${gpu_steps[@]}"; do skip "$s" "no build"; done
else
  if [[ -n $bundle || -n $debs ]]; then
    run gpu_tests 150 bash -c "cd '$broot' && '$tests_bin' --gtest_filter='*_CUDA*' --gtest_output=json:'$out/gpu_tests.json'"
  else
    run gpu_tests 150 ctest --test-dir "$build" -L gpu --output-on-failure
  fi
  run doctor 30 "$e" doctor
  "$e" doctor --json >"$out/doctor.json" 2>/dev/null
  # The guides' seeded sizes 50..8192 (the CPU side up to 4096, each GPU C compared with it).
  # Each point timed to a steady state: warm-up until settled, median of 3 repeats of >= 0.5 s.
  run bench_matmul 120 bash -c "'$e' bench matmul --json | tee '$out/bench_matmul.json'"
  run bench_matmul_tf32 60 bash -c "'$e' bench matmul --dtype tf32 --json | tee '$out/bench_matmul_tf32.json'"
  run bench_bandwidth 30 bash -c "'$e' bench bandwidth --json | tee '$out/bench_bandwidth.json'"
  # The GPU-vs-CPU speed-up table: lenet5, mnistnet, resnet_small at batch 32..1024, each device in the
  # precision it trains in (--precision auto); 36 points, so shorter repeats (3 of >= 0.2 s, >= 3 steps).
  run bench_train 150 bash -c "'$e' bench train --device all --min-time 0.2 --steps 3 --max-warmup-time 1 \
    | tee '$out/bench_train.txt'"
  # The ember/PyTorch ratio's ember side: fp32 as torch_gpu.py trains, the default timing on both sides.
  run bench_train_mnistnet128 40 bash -c "'$e' bench train --models mnistnet --device cuda --batch-sizes 128 \
    --precision fp32 --json | tee '$out/bench_train_mnistnet128.json'"
  if [[ -n $data_dir ]]; then
    # The default model in plain fp32 (the default precision, auto, would pick bf16 on sm_80+), then
    # the same in bf16 autocast for one epoch.
    run train_gpu 120 "$e" train --device cuda --require-gpu --precision fp32 --data-dir "$data_dir" --epochs 2 \
      --batch-size 128 --run-dir "$out/train-run"
    run train_gpu_bf16 90 "$e" train --device cuda --require-gpu --precision bf16 --data-dir "$data_dir" --epochs 1 \
      --batch-size 128 --run-dir "$out/train-run-bf16"
    # Mixed precision: fp16 autocast with dynamic loss scaling (the report counts skipped steps).
    run train_gpu_fp16 90 "$e" train --device cuda --require-gpu --precision fp16 --data-dir "$data_dir" --epochs 1 \
      --batch-size 128 --run-dir "$out/train-run-fp16"
  else
    skip train_gpu "no Fashion-MNIST files (install dataset-fashion-mnist or carry data/fashion-mnist/*.gz)"
    skip train_gpu_bf16 "no Fashion-MNIST files"
    skip train_gpu_fp16 "no Fashion-MNIST files"
  fi
  if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    # PyTorch's side on the same card: matmul fp32/TF32 at the same sizes, pinned copy_, mnistnet b128.
    run torch_side 120 bash -c "python3 '$root/bench/torch_gpu.py' --device cuda \
      > '$out/torch_side.json'; rc=\$?; cat '$out/torch_side.json'; exit \$rc"
    # ember / PyTorch, one row each in the final table (targets: matmul and pinned >= 0.9, train > 1.0).
    while IFS=$'\t' read -r rname rstatus; do
      names+=("$rname"); statuses+=("$rstatus"); seconds+=(0)
    done < <(python3 "$root/bench/gpu_ratios.py" "$out" 2>"$out/torch_ratios.log")
  else
    skip torch_side "no Python with CUDA torch here"
    skip torch_ratios "no PyTorch figures"
  fi
fi

# CPU suite last, with whatever time is left (CI runs it in full on every change).
# The bundle leaves the whole-model golden files out (scripts/gpu-bundle.sh): their tests skip.
export EMBER_GOLDEN_LEFT_OUT=1
if (( built )) && [[ -n $bundle || -n $debs ]]; then
  # The unit suite, sharded over the cores (gtest's own sharding); CPU_TESTS_FILTER narrows it.
  run cpu_tests 240 bash -c "cd '$broot' && pids=() && for i in \$(seq 0 $(( jobs - 1 ))); do \
    GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=\$i '$tests_bin' --gtest_filter='${CPU_TESTS_FILTER:-*}:-*_CUDA*' \
      --gtest_brief=1 > '$out/cpu_tests.shard'\$i'.log' 2>&1 & pids+=(\$!); done; rc=0; \
    for p in \${pids[@]}; do wait \$p || rc=1; done; tail -n 3 '$out'/cpu_tests.shard*.log; exit \$rc"
elif (( built )); then
  run cpu_tests 120 ctest --test-dir "$build" -LE "gpu|install|browser" -j "$jobs" --output-on-failure
else
  skip cpu_tests "no build"
fi

# ---- summary --------------------------------------------------------------------------------------
failed=0
{
  echo "{"
  echo "  \"date\": \"$(date -u +%FT%TZ)\", \"gpus\": $gpu_count, \"build_dir\": \"$build\", \"bundle\": \"$bundle\","
  echo "  \"steps\": ["
  for i in "${!names[@]}"; do
    sep=","; (( i == ${#names[@]} - 1 )) && sep=""
    echo "    {\"step\": \"${names[$i]}\", \"status\": \"${statuses[$i]}\", \"seconds\": ${seconds[$i]}}$sep"
  done
  echo "  ]"
  echo "}"
} >"$out/summary.json"
echo
printf '%-24s %-44s %s\n' STEP STATUS SECONDS
for i in "${!names[@]}"; do
  printf '%-24s %-44s %s\n' "${names[$i]}" "${statuses[$i]}" "${seconds[$i]}"
  [[ ${statuses[$i]} == FAIL* ]] && failed=1
done
(( gpu_count == 0 )) && echo "NOTE: no GPU here: the GPU steps were SKIPPED; only CPU-side steps ran."
echo "logs and summary.json in $out"
exit $failed

#!/usr/bin/env bash
# One-shot check of the CUDA backend on a machine with an NVIDIA GPU (written for the lent H200: one
# GPU, 16 cores, cuBLAS/cuDNN from the nvidia-* Python wheels), shaped for the narrow pipe its
# results come back through: the last 12,000 characters of stdout and at most 8 files under $OUT.
#   usage: scripts/gpu-check.sh [--bundle DIR] [--debs DIR] [OUTDIR]   (OUTDIR default: $OUT, else ./gpu-check-out)
# Works in a fresh folder under /tmp (mktemp; EMBER_GPU_CHECK_WORK=DIR to choose), and leaves in OUTDIR
# only (8 files at most, each checked under 16 MiB, plain names, no sub-folders):
#   summary.json   every step: name, status PASS/FAIL/SKIP, reason, seconds, key figures
#   logs.tar.xz    every log and JSON the steps wrote (logs/...; tar.gz where xz is missing), < 16 MiB
#   bench_matmul.json, bench_matmul_tf32.json, bench_bandwidth.json, bench_train.json,
#   bench_train_resnet18_224.json, torch_side.json   the benchmark JSONs (those that were written)
# stdout ends with the PASS/FAIL table and a failure digest (each failing gtest's name and assertion
# lines, each other failing step's last lines), together under ~10,500 characters.
# Steps: the CPU side (unpack, libraries, version, doctor_json, cuobjdump, train_cpu_smoke), the GPU
# side (gpu_tests, doctor, doctor_smoke (`ember doctor --smoke`), benches, Fashion-MNIST training,
# PyTorch's side and the ratio rows, then the slow serialised reruns: gpu_tests_blocking with
# CUDA_LAUNCH_BLOCKING=1 and sanitizer = compute-sanitizer memcheck over a few CUDA tests), then
# cpu_tests (sharded, one OpenMP thread per shard). Every command runs
# under `timeout`; the whole check is bounded by GPU_CHECK_SECONDS (default 480).
# No false PASS: when nvidia-smi lists a GPU that ember cannot use (`ember doctor --json`: verdict
# gpu_usable false), every GPU step FAILs with ember's reason instead of skipping.
# --bundle DIR: builds nothing; runs the binaries of a bundle made by scripts/gpu-bundle.sh, with
#   cuBLAS/cuDNN/NCCL from the python wheels (site-packages/nvidia/*/lib of the python3 on PATH).
#   Without --bundle/--debs: configures and builds Release in the work folder first.
# --debs DIR: the fallback, packages from scripts/gpu-debs.sh (see docs/gpu.md).
# GPU_CHECK_STEPS (a regex of step names) and GPU_TESTS_FILTER, SANITIZER_FILTER, CPU_TESTS_FILTER
# (gtest filters) narrow a rerun; docs/gpu.md "Checking on a GPU machine" has the two calls to make.
# EMBER_GPU_CHECK_FAKE_FAIL=1 adds the step fake_fail, which must FAIL (CI checks the digest with it).
# Exit status: 0 when every step that ran passed, 1 otherwise, 2 on a usage error.
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
mkdir -p "$out" && out=$(cd "$out" && pwd) || { echo "gpu-check: cannot create $out" >&2; exit 2; }
if [[ -n ${EMBER_GPU_CHECK_WORK:-} ]]; then
  work=$EMBER_GPU_CHECK_WORK; rm -rf "$work"; mkdir -p "$work"
else
  work=$(mktemp -d /tmp/ember-gpu-check.XXXXXX)
fi
work=$(cd "$work" && pwd)
logs=$work/logs
mkdir -p "$logs"
steps_tsv=$work/steps.tsv
: >"$steps_tsv"
jobs=${JOBS:-$(nproc)}
started=$(date +%s)
deadline=$(( started + ${GPU_CHECK_SECONDS:-480} ))
echo "gpu-check: working in $work; results go to $out"

# record NAME STATUS REASON SECONDS LOG
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "${3//$'\t'/ }" "$4" "${5:--}" >>"$steps_tsv"; last_status=$2; }
last_status=""
# run NAME LIMIT_SECONDS CMD...: runs CMD under `timeout` (cut to the time left) with its output in
# logs/NAME.log, and records PASS, FAIL (with the exit code, or "timeout after Ns") or SKIP.
# GPU_CHECK_STEPS='regex' runs only the steps whose names match it in full (plus what the others
# need: unpack, libraries, version, doctor_json and the fallback's build); the rest are SKIPped. For a
# short second call after a fix, e.g. GPU_CHECK_STEPS='gpu_tests.*|sanitizer'.
selected() {
  [[ -z ${GPU_CHECK_STEPS:-} || $1 =~ ^(unpack|libraries|version|doctor_json|debs_.*|configure|build|results)$ ]] && return 0
  [[ $1 =~ ^(${GPU_CHECK_STEPS})$ ]]
}
run() {
  local name=$1 limit=$2; shift 2
  if ! selected "$name"; then record "$name" SKIP "not in GPU_CHECK_STEPS" 0; return; fi
  local left=$(( deadline - $(date +%s) ))
  (( limit > left )) && limit=$left
  local t0=$(date +%s) rc
  if (( limit <= 5 )); then
    record "$name" SKIP "out of time (GPU_CHECK_SECONDS=${GPU_CHECK_SECONDS:-480})" 0
    echo "== $name: SKIP (out of time)"
    return
  fi
  echo "== $name (limit ${limit}s)"
  timeout --kill-after=10 "$limit" "$@" >"$logs/$name.log" 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  if (( rc == 0 )); then record "$name" PASS "" "$dt" "$name.log"
  elif (( rc == 124 || rc == 137 )); then record "$name" FAIL "timeout after ${limit}s" "$dt" "$name.log"
  else record "$name" FAIL "exit $rc" "$dt" "$name.log"; fi
  echo "   $last_status (${dt}s)"
}
skip() { record "$1" SKIP "$2" 0; echo "== $1: SKIP ($2)"; }
fail_now() {
  if selected "$1"; then record "$1" FAIL "$2" 0; echo "== $1: FAIL ($2)"; else record "$1" SKIP "not in GPU_CHECK_STEPS" 0; fi
}
T() { timeout --kill-after=5 "$@"; }  # a helper command's own bound

# ---- toolchain: nvcc, and cuBLAS/cuDNN from pip wheels when the toolkit lacks them ------------
export PATH="$PATH:/usr/local/cuda/bin"
prefix_path="" libdirs=""
wheel_dirs=$(T 30 python3 - <<'PY' 2>/dev/null
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
# find_tool NAME: the toolkit's tool on PATH, under the CUDA folders, or in an nvidia wheel.
find_tool() {
  command -v "$1" 2>/dev/null && return
  local c
  for c in ${CUDA_HOME:+$CUDA_HOME/bin/$1} /usr/local/cuda/bin/$1 /usr/local/cuda-*/bin/$1 \
           /usr/local/cuda*/compute-sanitizer/$1 /opt/nvidia/*/$1 /opt/nvidia/*/*/$1; do
    [[ -x $c ]] && { echo "$c"; return; }
  done
  for d in $wheel_dirs; do
    for c in "$d/bin/$1" "$d/$1"; do [[ -x $c ]] && { echo "$c"; return; }; done
  done
}
sanitizer=$(find_tool compute-sanitizer)
cuobjdump=$(find_tool cuobjdump)
{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(hostname)"; echo "nproc: $(nproc)"
  echo "nvcc: $(command -v nvcc || echo none)"; T 20 nvcc --version 2>/dev/null | tail -1
  echo "compute-sanitizer: ${sanitizer:-none}"; echo "cuobjdump: ${cuobjdump:-none}"
  echo "nvidia wheel dirs: ${wheel_dirs:-none}"
  T 20 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "nvidia-smi: not available"
} >"$logs/environment.log" 2>&1
gpu_count=$(T 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
gpu_count=${gpu_count:-0}

# ---- fallback: build from the Debian packages of scripts/gpu-debs.sh ---------------------------
# build_from_debs DEBS_DIR: unpacks the .debs into WORK/debs-prefix (scripts/gpu-debs-prefix.sh
# rewrites their /usr paths), configures and builds WORK/debs-build against that prefix only, puts
# its libraries on LD_LIBRARY_PATH and points e/tests_bin/broot at the build.
# EMBER_GPU_CHECK_FALLBACK_TARGETS (default "ember_cli ember_tests") and
# EMBER_GPU_CHECK_FALLBACK_ARGS (more cmake -D options) narrow it.
build_from_debs() {
  local p=$work/debs-prefix b=$work/debs-build
  local L=$p/usr/lib/x86_64-linux-gnu
  run debs_unpack 90 "$root/scripts/gpu-debs-prefix.sh" "$1" "$p"
  [[ $last_status == PASS ]] || { skip debs_configure "debs_unpack failed"; return 1; }
  local gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  local archs=${EMBER_CUDA_ARCHS:-$(T 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | sed 's/$/-real/')}
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
  [[ $last_status == PASS ]] || { skip debs_build "debs_configure failed"; return 1; }
  run debs_build "${EMBER_GPU_CHECK_BUILD_SECONDS:-330}" cmake --build "$b" -j "$jobs" --target ${EMBER_GPU_CHECK_FALLBACK_TARGETS:-ember_cli ember_tests}
  [[ $last_status == PASS ]] || return 1
  export LD_LIBRARY_PATH="$L:$L/openblas-openmp:$p/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  e=$b/ember tests_bin=$b/tests/ember_tests broot=$b build=$b
  run debs_version 20 "$e" --version
}

# ---- CPU-side steps: always --------------------------------------------------------------------
build=""
if [[ -n $bundle || -n $debs ]]; then
  # Unpack, check every library resolves (the CUDA ones come later, from the wheels: none is
  # linked), and start the CLI. The tests find ./golden beside their bin/ (tests/support/test_data.h).
  broot=$work/bundle-root
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
  if [[ -n $debs ]] && [[ -z $bundle || $last_status != PASS || ${EMBER_GPU_CHECK_FORCE_FALLBACK:-0} == 1 ]]; then
    build_from_debs "$debs"
  fi
  data_dir=""
  for d in "$bundle/data/fashion-mnist" "$debs/data/fashion-mnist"; do
    [[ -f $d/train-images-idx3-ubyte.gz ]] && { data_dir=$d; break; }
  done
else
  build=${BUILD_DIR:-$work/build}
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  # Only the card's own architecture is compiled here (CI builds the full list), to fit the 8 minutes.
  archs=${EMBER_CUDA_ARCHS:-$(T 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d . | sed 's/$/-real/')}
  run configure 120 cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON \
    -DEMBER_BUILD_BENCH=OFF ${archs:+"-DEMBER_CUDA_ARCHS=$archs"} ${prefix_path:+"-DCMAKE_PREFIX_PATH=$prefix_path"}
  if [[ $last_status == PASS ]]; then run build 330 cmake --build "$build" -j "$jobs"; else skip build "configure failed"; fi
  e=$build/ember tests_bin=$build/tests/ember_tests broot=$build
  # Fashion-MNIST: Debian's package, or the four .gz files carried along in data/fashion-mnist/.
  data_dir=""
  for d in "${EMBER_DATA_DIR:+$EMBER_DATA_DIR/fashion-mnist}" /usr/share/datasets/fashion-mnist "$root/data/fashion-mnist"; do
    [[ -n $d && -f $d/train-images-idx3-ubyte.gz ]] && { data_dir=$d; break; }
  done
fi
# The library with the CUDA kernels: the bundle's lib/, or the build tree's (also the fallback's).
lib_for_sass=$(ls "$broot"/lib/libember.so.0 "$broot"/libember.so.* 2>/dev/null | head -1)
[[ -x $e && -x $tests_bin ]] && built=1 || built=0

run doctor_json 60 bash -c "'$e' doctor --json > '$logs/doctor.json'"
# What ember says of the GPU: usable or not, and why not (its FAIL/WARN lines).
gpu_usable=0 gpu_reason="ember doctor --json did not answer (see logs/doctor_json.log)"
if [[ -s $logs/doctor.json ]]; then
  verdict=$(T 20 python3 - "$logs/doctor.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = d.get("verdict", {})
# The "nvidia gpu" line is a PASS where the PCI bus shows no NVIDIA GPU: that is the reason then.
why = "; ".join(c["message"] + (" (fix: " + c["fix"] + ")" if c.get("fix") else "")
                for c in d.get("checks", []) if c.get("level") in ("FAIL", "WARN") or c.get("name") == "nvidia gpu")
print(("1" if v.get("gpu_usable") else "0") + "\t" + (why or "the doctor gives no reason"))
PY
)
  gpu_usable=${verdict%%$'\t'*}
  gpu_reason=${verdict#*$'\t'}
fi

# The bundle's libember carries sm_90 machine code (SASS), not only PTX for the driver to compile.
if [[ -z $cuobjdump ]]; then
  skip cuobjdump "no cuobjdump on PATH, under /usr/local/cuda* or in the nvidia wheels"
elif [[ -z $lib_for_sass || ! -f $lib_for_sass ]]; then
  skip cuobjdump "no libember to inspect"
else
  run cuobjdump 60 bash -c "'$cuobjdump' --list-elf '$lib_for_sass' && '$cuobjdump' --list-elf '$lib_for_sass' | grep -q 'sm_90' \
    || { echo 'FAIL: no sm_90 SASS in $lib_for_sass (a bundle for the H200 needs EMBER_CUDA_ARCHS with 90-real)'; exit 1; }"
fi

if [[ -n $data_dir ]] && (( built )); then  # the bundled data reads, and a few CPU steps train on it
  run train_cpu_smoke 60 "$e" train --device cpu --data-dir "$data_dir" --epochs 1 --limit-train 512 \
    --limit-test 256 --run-dir "$work/runs/train-cpu-smoke"
else
  skip train_cpu_smoke "no Fashion-MNIST files (the bundle's data/fashion-mnist, or Debian's dataset-fashion-mnist)"
fi

# A step that must fail, so CI sees the digest carry a failing test's name and assertion lines: the
# golden-file tests pointed at a folder that does not exist.
if [[ ${EMBER_GPU_CHECK_FAKE_FAIL:-0} == 1 ]] && (( built )); then
  run fake_fail 60 env EMBER_TEST_DATA_DIR=/nonexistent-ember-test-data "$tests_bin" \
    --gtest_filter='GoldenFile.OpsFile*:GoldenFile.ModelsFile*' --gtest_output=json:"$logs/fake_fail.json"
fi

# ---- GPU steps ------------------------------------------------------------------------------------
gpu_steps=(gpu_tests_blocking gpu_tests sanitizer doctor doctor_smoke bench_matmul bench_matmul_tf32 bench_bandwidth bench_train
  bench_train_resnet18_224 bench_train_mnistnet128 train_gpu train_gpu_bf16 train_gpu_fp16 torch_side)
# The CUDA tests compute-sanitizer's memcheck runs (a few, each quick; it slows kernels 10-100x).
sanitizer_filter=${SANITIZER_FILTER:-'CudaEvents.*:CudaConv.*:CudaLoader.DestroyedWithCopiesInFlight_CUDA:CudaHalf.Cast*'}
if (( gpu_count == 0 )); then
  for s in "${gpu_steps[@]}"; do skip "$s" "no NVIDIA GPU visible (nvidia-smi -L lists none)"; done
elif (( ! built )); then
  for s in "${gpu_steps[@]}"; do fail_now "$s" "nvidia-smi lists $gpu_count GPU(s) but there is no ember build to run"; done
elif [[ $gpu_usable != 1 ]]; then
  # No false PASS: the GPU tests would skip and the benches report CPU figures.
  for s in "${gpu_steps[@]}"; do fail_now "$s" "nvidia-smi lists $gpu_count GPU(s) but ember cannot use one: $gpu_reason"; done
else
  # The tests at full speed first, then the doctor, the benches and the training runs; the slow
  # serialised reruns (launch blocking, the sanitizer) last, so a hang there costs none of the figures
  # (the first H200 run, 2026-12-04, lost the training runs to one).
  run gpu_tests 120 bash -c "cd '$broot' && '$tests_bin' --gtest_filter='${GPU_TESTS_FILTER:-*_CUDA*}' --gtest_output=json:'$logs/gpu_tests.json'"
  run doctor 30 "$e" doctor
  # The smoke test (issue 28): context, a checked 64 MiB copy with its bandwidth, an ember kernel, a
  # cuBLAS GEMM and a cuDNN convolution against the CPU; --require-gpu: a SKIP here is a FAIL.
  run doctor_smoke 60 bash -c "'$e' doctor --smoke --require-gpu --json > '$logs/doctor_smoke.json'"
  # The guides' seeded sizes 50..8192 (the CPU side up to 4096, each GPU C compared with it).
  run bench_matmul 100 bash -c "'$e' bench matmul --json > '$logs/bench_matmul.json'"
  run bench_matmul_tf32 50 bash -c "'$e' bench matmul --dtype tf32 --json > '$logs/bench_matmul_tf32.json'"
  run bench_bandwidth 30 bash -c "'$e' bench bandwidth --json > '$logs/bench_bandwidth.json'"
  # The GPU-vs-CPU speed-up table: lenet5, mnistnet, resnet_small at batch 32..1024, each device in the
  # precision it trains in (--precision auto); shorter repeats (3 of >= 0.2 s, >= 3 steps).
  run bench_train 150 bash -c "'$e' bench train --device all --min-time 0.2 --steps 3 --max-warmup-time 1 --json \
    > '$logs/bench_train.json'"
  # resnet18 at ImageNet's 224 pixels (the flag --image-size of `ember bench train`), CPU and GPU.
  run bench_train_resnet18_224 120 bash -c "'$e' bench train --models resnet18 --image-size 224 --device all \
    --batch-sizes 32,128,256 --min-time 0.2 --steps 3 --max-warmup-time 1 --json > '$logs/bench_train_resnet18_224.json'"
  # The ember/PyTorch ratio's ember side: fp32 as torch_gpu.py trains, the default timing on both sides.
  run bench_train_mnistnet128 40 bash -c "'$e' bench train --models mnistnet --device cuda --batch-sizes 128 \
    --precision fp32 --json > '$logs/bench_train_mnistnet128.json'"
  if [[ -n $data_dir ]]; then
    # train_run STEP LIMIT ARGS...: a training run whose metrics.jsonl joins the logs.
    train_run() {
      local name=$1 limit=$2; shift 2
      run "$name" "$limit" "$e" train --device cuda --require-gpu --data-dir "$data_dir" --batch-size 128 \
        --run-dir "$work/runs/$name" "$@"
      cp "$work/runs/$name/metrics.jsonl" "$logs/$name.metrics.jsonl" 2>/dev/null
    }
    # The default model in plain fp32, then bf16 and fp16 autocast (dynamic loss scaling) for one epoch.
    train_run train_gpu 120 --precision fp32 --epochs 2
    train_run train_gpu_bf16 90 --precision bf16 --epochs 1
    train_run train_gpu_fp16 90 --precision fp16 --epochs 1
  else
    for s in train_gpu train_gpu_bf16 train_gpu_fp16; do
      skip "$s" "no Fashion-MNIST files (install dataset-fashion-mnist or carry data/fashion-mnist/*.gz)"
    done
  fi
  if T 60 python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    # PyTorch's side on the same card: matmul fp32/TF32 at the same sizes, pinned copy_, mnistnet b128.
    run torch_side 120 bash -c "python3 '$root/bench/torch_gpu.py' --device cuda > '$logs/torch_side.json'"
    # ember / PyTorch, one row each in the final table (targets: matmul and pinned >= 0.9, train > 1.0).
    while IFS=$'\t' read -r rname rstatus; do
      record "$rname" "${rstatus%% *}" "$( [[ $rstatus == *" ("* ]] && { r=${rstatus#* (}; echo "${r%)}"; } )" 0 -
    done < <(T 30 python3 "$root/bench/gpu_ratios.py" "$logs" 2>"$logs/torch_ratios.log")
  else
    skip torch_side "no Python with CUDA torch here"
  fi
  # Faults reported at the launch that made them (CUDA_LAUNCH_BLOCKING=1), then memcheck over a few tests.
  run gpu_tests_blocking 150 bash -c "cd '$broot' && CUDA_LAUNCH_BLOCKING=1 '$tests_bin' --gtest_filter='${GPU_TESTS_FILTER:-*_CUDA*}' \
    --gtest_output=json:'$logs/gpu_tests_blocking.json'"
  if [[ -n $sanitizer ]]; then
    run sanitizer 120 bash -c "cd '$broot' && '$sanitizer' --tool memcheck --error-exitcode 1 --print-limit 20 \
      '$tests_bin' --gtest_filter='$sanitizer_filter' --gtest_output=json:'$logs/sanitizer.json'"
  else
    skip sanitizer "no compute-sanitizer on PATH, under /usr/local/cuda* or /opt/nvidia, or in the nvidia wheels"
  fi
fi

# ---- CPU suite last, with whatever time is left (CI runs it in full on every change) ----------------
# The bundle leaves the whole-model golden files out (scripts/gpu-bundle.sh): their tests skip.
export EMBER_GOLDEN_LEFT_OUT=1
if (( built )); then
  # The unit suite without *_CUDA*, in gtest's own shards over the cores, one OpenMP (and OpenBLAS)
  # thread each: 16 shards of 16 threads would oversubscribe the machine 16 times.
  # CPU_TESTS_FILTER narrows it.
  run cpu_tests 240 bash -c "cd '$broot' && pids=() && for i in \$(seq 0 $(( jobs - 1 ))); do \
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 GTEST_TOTAL_SHARDS=$jobs GTEST_SHARD_INDEX=\$i '$tests_bin' \
      --gtest_filter='${CPU_TESTS_FILTER:-*}:-*_CUDA*' --gtest_brief=1 \
      --gtest_output=json:'$logs/cpu_tests.shard'\$i'.json' > '$logs/cpu_tests.shard'\$i'.log' 2>&1 & pids+=(\$!); done; \
    rc=0; for p in \${pids[@]}; do wait \$p || rc=1; done; tail -n 3 '$logs'/cpu_tests.shard*.log; exit \$rc"
else
  skip cpu_tests "no build"
fi

# ---- what comes back: summary.json, one archive of the logs, the benchmark JSONs --------------------
total=$(( $(date +%s) - started ))
meta=$(GC_GPUS=$gpu_count GC_USABLE=$gpu_usable GC_REASON=$gpu_reason GC_BUNDLE=$bundle GC_WORK=$work GC_SECONDS=$total \
  T 20 python3 -c 'import json, os, time; g = os.environ.get
print(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpus": int(g("GC_GPUS")),
                  "gpu_usable": g("GC_USABLE") == "1", "gpu_reason": "" if g("GC_USABLE") == "1" else g("GC_REASON"),
                  "bundle": g("GC_BUNDLE"), "work": g("GC_WORK"), "seconds": int(g("GC_SECONDS"))}))' || echo '{}')
# Logs over 4 MiB keep their first and last 2 MiB, so the archive stays well under 16 MiB.
for f in "$logs"/*; do
  if [[ -f $f ]] && (( $(stat -c %s "$f") > 4 * 1024 * 1024 )); then
    { head -c 2097152 "$f"; printf '\n... [gpu-check: cut to its first and last 2 MiB] ...\n'; tail -c 2097152 "$f"; } >"$f.cut" && mv "$f.cut" "$f"
  fi
done
cp "$steps_tsv" "$logs/steps.tsv"
report() {
  T 60 python3 "$root/scripts/gpu_check_report.py" "$steps_tsv" "$logs" "$out" --meta "$meta" >"$work/report.txt" 2>&1 \
    || { echo "(scripts/gpu_check_report.py failed; the steps as recorded:)"; column -t -s $'\t' "$steps_tsv"; } >>"$work/report.txt"
}
report
cp "$out/summary.json" "$logs/summary.json" 2>/dev/null
if command -v xz >/dev/null; then archive=logs.tar.xz; tar -C "$work" -cJf "$out/$archive" logs
else archive=logs.tar.gz; tar -C "$work" -czf "$out/$archive" logs; fi
for j in bench_matmul bench_matmul_tf32 bench_bandwidth bench_train bench_train_resnet18_224 torch_side; do
  [[ -s $logs/$j.json ]] && cp "$logs/$j.json" "$out/"
done
# The pipe's rules, checked here so a breach shows in the table and not as a missing file there.
limit=$(( 16 * 1024 * 1024 )) bad=""
n=$(find "$out" -mindepth 1 | wc -l)
(( n <= 8 )) || bad="$bad $n entries in $out (at most 8 come back);"
while IFS= read -r f; do
  b=$(basename "$f")
  [[ -f $f && ! -L $f ]] || bad="$bad $b is not a plain file;"
  [[ $b =~ ^[A-Za-z0-9._-]+$ ]] || bad="$bad odd name $b;"
  [[ -f $f ]] && (( $(stat -c %s "$f") > limit )) && bad="$bad $b is over 16 MiB;"
done < <(find "$out" -mindepth 1)
if [[ -n $bad ]]; then record results FAIL "$bad" 0; else record results PASS "" 0; fi
report  # again, with the results row in the table and summary.json

echo
echo "==== ember gpu-check: $(date -u +%FT%TZ), ${total}s, $gpu_count GPU(s) seen by nvidia-smi, ember's GPU usable: $([[ $gpu_usable == 1 ]] && echo yes || echo "no")"
cat "$work/report.txt"
(( gpu_count == 0 )) && echo "NOTE: no GPU here: the GPU steps were SKIPPED; only CPU-side steps ran."
echo "results in $out: $(cd "$out" && ls | tr '\n' ' ')($archive holds every log; work folder $work)"
grep -q $'\tFAIL\t' "$steps_tsv" && exit 1
exit 0

#!/usr/bin/env bash
# ember vs PyTorch 1.13 on the CPU, side by side in one run: training and inference throughput of
# mlp / lenet5 / mnistnet (bench/bench_models.cpp and its twin bench/torch_models.py), the OpenBLAS
# sgemm peak and mnistnet's compute-bound layers, and the peak RSS of a 20-step batch-64 training
# run of each model in each framework. Same thread count (default 2) on both sides.
#   bench/compare_cpu.sh [build-dir] [threads] [rounds]
# This machine is shared and its load moves within seconds, so the two sides alternate model by
# model for `rounds` rounds (default 5); each figure is the median over rounds of that round's
# median of 5 repetitions.
# The environment may pin OpenBLAS to Haswell kernels (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE) for the
# tests; this script unsets both, for its own commands only, so OpenBLAS (ember's and PyTorch's
# alike) picks the kernels of the machine it runs on.
set -euo pipefail
BUILD=${1:-build}
THREADS=${2:-2}
ROUNDS=${3:-5}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS="mlp lenet5 mnistnet"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "compare_cpu.sh: unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE for these runs; threads=$THREADS rounds=$ROUNDS" >&2

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for m in $MODELS; do
    "$BUILD/bench/bench_models" --threads "$THREADS" --json --only models --models $m > "$TMP/ember.$m.$r.json"
    "$PY" "$HERE/torch_models.py" --threads "$THREADS" --json --models $m > "$TMP/torch.$m.$r.json"
  done
done
"$BUILD/bench/bench_models" --threads "$THREADS" --json --only gemm > "$TMP/gemm.json"
for m in $MODELS; do
  echo "$m $("$BUILD/bench/bench_models" --threads "$THREADS" --rss $m) $("$PY" "$HERE/torch_models.py" --threads "$THREADS" --rss $m)"
done > "$TMP/rss.txt"

"$PY" - "$TMP" "$ROUNDS" "$MODELS" <<'PYEOF'
import json, statistics, sys
tmp, rounds, models = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
def median_of(side, m, key):
    return statistics.median(json.load(open(f"{tmp}/{side}.{m}.{r}.json"))["models"][m][key]
                             for r in range(1, rounds + 1))
version = json.load(open(f"{tmp}/torch.{models[0]}.1.json"))["version"]
g = json.load(open(f"{tmp}/gemm.json"))
rss = {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(f"{tmp}/rss.txt") if l.strip()}
print(f"threads={g['threads']}  {rounds} alternating rounds x 5 repetitions (median of medians)  PyTorch {version}")
print(f"{'model':10s} | {'train ember':>12s} {'train torch':>12s} {'ratio':>6s} | "
      f"{'infer ember':>12s} {'infer torch':>12s} {'ratio':>6s} | {'RSS ember':>10s} {'RSS torch':>10s} {'ratio':>6s}")
for m in models:
    te, tt = median_of("ember", m, "train_samples_per_s"), median_of("torch", m, "train_samples_per_s")
    ie, it = median_of("ember", m, "infer_samples_per_s"), median_of("torch", m, "infer_samples_per_s")
    re_, rt = rss[m]
    print(f"{m:10s} | {te:12.1f} {tt:12.1f} {te/tt:6.2f} | {ie:12.1f} {it:12.1f} {ie/it:6.2f} | "
          f"{re_/1024:8.1f}MB {rt/1024:8.1f}MB {re_/rt:6.2f}")
print("(train: batch 64, samples/s; infer: batch 256, samples/s; RSS: peak resident set of a 20-step training run)")
peak = g["sgemm_gflops"]["1024^3"]
for k, v in g["sgemm_gflops"].items():
    print(f"OpenBLAS sgemm {k:22s} {v:8.1f} GFLOP/s")
for k, v in g["layer_gflops"].items():
    print(f"ember layer    {k:22s} {v:8.1f} GFLOP/s = {100*v/peak:5.1f}% of sgemm 1024^3")
PYEOF

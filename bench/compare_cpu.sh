#!/usr/bin/env bash
# ember vs PyTorch 1.13 on the CPU, side by side in one run: training and inference throughput of
# mlp / lenet5 / mnistnet, the OpenBLAS sgemm peak and mnistnet's layers, and the peak RSS of a
# 20-step mnistnet training run in each framework. Same threads (default 2) on both sides.
#   bench/compare_cpu.sh [build-dir] [threads] [rounds]
# The two sides alternate for `rounds` rounds (default 3), so that a change in the machine's load
# during the run hits both; each figure is the median over rounds of each round's median.
# The environment may pin OpenBLAS to Haswell kernels (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE) for the
# tests; this script unsets both, for its own commands only, so OpenBLAS (ember's and PyTorch's
# alike) picks the kernels of the machine it runs on.
set -euo pipefail
BUILD=${1:-build}
THREADS=${2:-2}
ROUNDS=${3:-3}
PY=/usr/bin/python3
HERE=$(cd "$(dirname "$0")" && pwd)
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
echo "compare_cpu.sh: unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE for these runs; threads=$THREADS" >&2

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  "$BUILD/bench/bench_models" --threads "$THREADS" --json > "$TMP/ember.$r.json"
  "$PY" "$HERE/torch_models.py" --threads "$THREADS" --json > "$TMP/torch.$r.json"
done
for m in mlp lenet5 mnistnet; do
  echo "$m $("$BUILD/bench/bench_models" --threads "$THREADS" --rss $m) $("$PY" "$HERE/torch_models.py" --threads "$THREADS" --rss $m)"
done > "$TMP/rss.txt"

"$PY" - "$TMP" "$ROUNDS" <<'PYEOF'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def merged(side):
    runs = [json.load(open(f"{tmp}/{side}.{r}.json")) for r in range(1, rounds + 1)]
    out = runs[0]
    for m in out["models"]:
        for k in out["models"][m]:
            out["models"][m][k] = statistics.median(run["models"][m][k] for run in runs)
    for sec in ("sgemm_gflops", "layer_gflops"):
        if sec in out:
            for k in out[sec]:
                out[sec][k] = statistics.median(run[sec][k] for run in runs)
    return out
e, t = merged("ember"), merged("torch")
rss = {l.split()[0]: (int(l.split()[1]), int(l.split()[2])) for l in open(f"{tmp}/rss.txt") if l.strip()}
print(f"threads={e['threads']}  reps={e['reps']} per round, {rounds} alternating rounds (median of medians)  PyTorch {t['version']}")
print(f"{'model':10s} | {'train ember':>12s} {'train torch':>12s} {'ratio':>6s} | "
      f"{'infer ember':>12s} {'infer torch':>12s} {'ratio':>6s} | {'RSS ember':>10s} {'RSS torch':>10s} {'ratio':>6s}")
for m in e["models"]:
    em, tm = e["models"][m], t["models"][m]
    tr = em["train_samples_per_s"] / tm["train_samples_per_s"]
    ir = em["infer_samples_per_s"] / tm["infer_samples_per_s"]
    re_, rt = rss.get(m, (0, 1))
    print(f"{m:10s} | {em['train_samples_per_s']:12.1f} {tm['train_samples_per_s']:12.1f} {tr:6.2f} | "
          f"{em['infer_samples_per_s']:12.1f} {tm['infer_samples_per_s']:12.1f} {ir:6.2f} | "
          f"{re_/1024:8.1f}MB {rt/1024:8.1f}MB {re_/rt:6.2f}")
print("(throughput in samples/s; RSS = peak resident set of a 20-step batch-64 training run)")
peak = e["sgemm_gflops"]["1024^3"]
for k, v in e["sgemm_gflops"].items():
    print(f"OpenBLAS sgemm {k:22s} {v:8.1f} GFLOP/s")
for k, v in e["layer_gflops"].items():
    print(f"ember layer    {k:22s} {v:8.1f} GFLOP/s = {100*v/peak:5.1f}% of sgemm 1024^3")
PYEOF

#!/usr/bin/env bash
# Issue 22's training table (docs/benchmarks.md, "OpenBLAS builds"): an old and a new ember binary,
# `bench train` on the CPU at 2 threads, alternated over OpenBLAS builds and OMP_WAIT_POLICY
# values, ROUNDS rounds; prints the medians. OLD is a binary from before issue 22 (fp32 only, fixed
# steps); NEW gets --precision fp32 and its time-based points.
#   usage: bench/blas_builds_train.sh OLD_EMBER NEW_EMBER   (env: MODELS, ROUNDS, WPS)
set -euo pipefail
old=$1 new=$2
L=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
models=${MODELS:-mlp,lenet5,mnistnet}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for wp in ${WPS:-passive active}; do
  for r in $(seq "${ROUNDS:-3}"); do
    for b in pthread openmp; do
      OMP_WAIT_POLICY=$wp LD_LIBRARY_PATH=$L/openblas-$b timeout 600 "$old" bench train --model "$models" --device cpu \
        --batch-sizes 64 --threads 2 --steps 100 --warmup 20 --json >"$out/old-$b-$wp-$r.json"
      OMP_WAIT_POLICY=$wp LD_LIBRARY_PATH=$L/openblas-$b timeout 600 "$new" bench train --model "$models" --device cpu \
        --batch-sizes 64 --threads 2 --precision fp32 --json >"$out/new-$b-$wp-$r.json"
    done
  done
done
python3 - "$out" <<'PY'
import collections, glob, json, os, statistics, sys
d = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    v, b, wp, r = os.path.basename(f)[:-5].split("-")
    for row in json.load(open(f))["results"]:
        d[(row["model"], wp, b, v)].append(row["samples_per_s"])
print(f"{'model':9} {'wait':8} {'old pthr':>9} {'old omp':>9} {'new pthr':>9} {'new omp':>9} {'new/old omp':>12} {'pthr/omp new':>13}")
for wp in sorted({k[1] for k in d}, reverse=True):
    for m in sorted({k[0] for k in d}):
        g = lambda b, v: statistics.median(d[(m, wp, b, v)])
        op, oo, np_, no = g("pthread", "old"), g("openmp", "old"), g("pthread", "new"), g("openmp", "new")
        print(f"{m:9} {wp:8} {op:9.0f} {oo:9.0f} {np_:9.0f} {no:9.0f} {no / oo:12.2f} {np_ / no:13.2f}")
PY

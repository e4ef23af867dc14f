#!/usr/bin/env bash
# Issue 22, bf16 on a CPU with AVX512-BF16 or AMX: the same ember binary under the pthreads and the OpenMP
# OpenBLAS build, fp32 and bf16, alternated rounds per OMP_WAIT_POLICY; prints medians and the ratio.
#   usage: bench/blas_builds_bf16.sh EMBER   (env: ROUNDS, WPS)
set -u
E=$1; ROUNDS=${ROUNDS:-3}
L=/usr/lib/x86_64-linux-gnu
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
for wp in ${WPS:-active passive}; do
for r in $(seq $ROUNDS); do
  for prec in fp32 bf16; do
    for b in pthread openmp; do
      OMP_WAIT_POLICY=$wp LD_LIBRARY_PATH=$L/openblas-$b timeout 300 $E bench train --model mlp,lenet5,mnistnet --device cpu \
        --batch-sizes 64 --threads 2 --precision $prec --min-time 0.3 --repeats 3 --json > $out/$b-$prec-$wp-$r.json 2>/dev/null
    done
  done
done
done
python3 - $out <<'PY'
import collections, glob, json, os, statistics, sys
d = collections.defaultdict(list)
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    b, prec, wp, r = os.path.basename(f)[:-5].split("-")
    try: rows = json.load(open(f))["results"]
    except Exception as e: print("bad", f, e); continue
    for row in rows: d[(row["model"], prec, wp, b)].append(row["samples_per_s"])
print(f"{'model':9} {'prec':5} {'wait':8} {'pthreads':>9} {'openmp':>9} {'pthr/omp':>9}")
for (m, p, wp) in sorted({k[:3] for k in d}):
    a, o = statistics.median(d[(m,p,wp,'pthread')]), statistics.median(d[(m,p,wp,'openmp')])
    print(f"{m:9} {p:5} {wp:8} {a:9.0f} {o:9.0f} {a/o:9.2f}")
PY

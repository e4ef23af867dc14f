#!/usr/bin/env bash
# Issue 22: ember under each OpenBLAS build Debian ships (pthreads, OpenMP, serial), whichever the
# libopenblas.so.0 alternative points at. For every build installed it runs, with LD_LIBRARY_PATH
# pointing at that build's directory:
#   - `ember doctor --json`: the build ember reports is that one, and its blas check passes (WARNs
#     for the serial build, which ember must call one at a time);
#   - the determinism and GEMM tests (thread-count-independent bits, tiled products = float64);
#   - the GEMM fingerprint, which must be the same under every build (same bits);
# then a throughput smoke benchmark: `ember bench train` (lenet5 and mlp, fp32, batch 64, 2 threads)
# alternated between the builds over several rounds, medians printed with their ratio. The figures
# are printed, not judged, except for the defect this guards against: a build more than 3x slower
# than the fastest (the pthreads build's own threads competing with ember's ran 1.5k against 42k
# samples/s) fails.
#   usage: scripts/blas-builds.sh [BUILD_DIR] [--rounds N] [--no-bench]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=build
rounds=3
bench=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --no-bench) bench=0; shift ;;
    *) build=$1; shift ;;
  esac
done
case "$build" in /*) ;; *) build=$root/$build ;; esac
libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
names=() dirs=()
for b in pthread openmp serial; do
  if [ -e "$libdir/openblas-$b/libopenblas.so.0" ]; then names+=("$b"); dirs+=("$libdir/openblas-$b"); fi
done
if [ "${#names[@]}" -lt 2 ]; then
  echo "blas-builds: need at least two OpenBLAS builds installed (found: ${names[*]:-none});" \
       "install them with: sudo apt install libopenblas0-pthread libopenblas0-openmp" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
fail=0
echo "== OpenBLAS builds: ${names[*]} (CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'))"
for i in "${!names[@]}"; do
  n=${names[$i]} d=${dirs[$i]}
  want=$n; [ "$n" = pthread ] && want=pthreads
  level=PASS; [ "$n" = serial ] && level=WARN
  got=$(LD_LIBRARY_PATH=$d "$build/ember" doctor --json | python3 -c '
import json, sys
j = json.load(sys.stdin)
blas = [c for c in j["checks"] if c["name"] == "blas"]
print(j["build"]["blas_build"], j["build"]["blas_path"], blas[0]["level"] if blas else "none")')
  read -r gb gp gl <<<"$got"
  echo "-- $n: doctor says $gb build, $gp, blas check $gl"
  if [ "$gb" != "$want" ] || [ "$gl" != "$level" ] || [[ "$gp" != "$d"/* ]]; then
    echo "FAIL: under LD_LIBRARY_PATH=$d the doctor reported '$got'"; fail=1
  fi
  if ! LD_LIBRARY_PATH=$d EMBER_GEMM_FINGERPRINT=$out/$n.fp timeout 900 "$build/tests/ember_tests" \
      --gtest_filter='Determinism.*:CpuGemm.*:Doctor.Blas*:Doctor.ProbedBlas*:CpuConcurrency.*' \
      --gtest_brief=1 >"$out/$n.log" 2>&1; then
    echo "FAIL: tests under the $n build:"; tail -40 "$out/$n.log"; fail=1
  else
    echo "   tests: $(grep -E '^\[  PASSED  \]' "$out/$n.log")"
  fi
  # Again, five times: a library unsafe for concurrent calls gives wrong tiles only now and then.
  if ! LD_LIBRARY_PATH=$d timeout 600 "$build/tests/ember_tests" --gtest_filter='CpuGemm.*:CpuConcurrency.*' \
      --gtest_repeat=5 --gtest_brief=1 >"$out/$n-repeat.log" 2>&1; then
    echo "FAIL: repeated GEMM tests under the $n build:"; grep -B2 -A6 Failure "$out/$n-repeat.log" | head -40; fail=1
  else
    echo "   the GEMM and concurrency tests five times over: passed"
  fi
done
for n in "${names[@]:1}"; do
  if ! cmp -s "$out/${names[0]}.fp" "$out/$n.fp"; then
    echo "FAIL: GEMM bits differ between the ${names[0]} and $n builds:"; diff "$out/${names[0]}.fp" "$out/$n.fp" || true
    fail=1
  fi
done
[ "$fail" = 0 ] && echo "   GEMM fingerprints equal under ${names[*]}"

if [ "$bench" = 1 ]; then
  echo "== throughput smoke: ember bench train --model lenet5,mlp --device cpu --batch-sizes 64 --threads 2" \
       "--precision fp32, $rounds alternated rounds (OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset})"
  for r in $(seq "$rounds"); do
    for i in "${!names[@]}"; do
      LD_LIBRARY_PATH=${dirs[$i]} timeout 600 "$build/ember" bench train --model lenet5,mlp --device cpu \
        --batch-sizes 64 --threads 2 --precision fp32 --json >"$out/bench-${names[$i]}-$r.json"
    done
  done
  python3 - "$out" "${names[@]}" <<'EOF' || fail=1
import json, statistics, sys
out, names = sys.argv[1], sys.argv[2:]
sps = {}
for n in names:
    rows = {}
    r = 1
    while True:
        try:
            j = json.load(open(f"{out}/bench-{n}-{r}.json"))
        except FileNotFoundError:
            break
        for row in j["results"]:
            rows.setdefault(row["model"], []).append(row["samples_per_s"])
        r += 1
    sps[n] = {m: statistics.median(v) for m, v in rows.items()}
models = sorted(next(iter(sps.values())))
print(f"{'model':>8} " + " ".join(f"{n + ' samples/s':>20}" for n in names) + "   slowest/fastest")
bad = False
for m in models:
    vals = [sps[n][m] for n in names]
    ratio = min(vals) / max(vals)
    print(f"{m:>8} " + " ".join(f"{v:>20.0f}" for v in vals) + f"   {ratio:.2f}")
    bad |= ratio < 1 / 3
if bad:
    print("FAIL: one OpenBLAS build trains more than 3x slower than another")
    sys.exit(1)
EOF
fi
exit $fail

#!/bin/bash
# Compares the CPU training step of two ember builds with measures a busy machine does not spoil:
# instructions per step under callgrind (1 thread; oneDNN picks its AVX2 kernels there, the same in
# both builds), then process CPU time per step in alternating old/new, new/old rounds. The probe
# (bench/train_step_probe.cpp) is compiled here against each tree's headers and libember.so, so the
# old tree needs no copy of it.
#
#   bench/compare_train_step.sh OLD_SRC OLD_BUILD NEW_SRC NEW_BUILD [models=mlp,lenet5] [rounds=8]
#   e.g. git worktree add /tmp/old dbf51ab --detach; cmake -S /tmp/old -B /tmp/old/build ...; then
#        bench/compare_train_step.sh /tmp/old /tmp/old/build . build
set -euo pipefail
if [ $# -lt 4 ]; then sed -n 2,10p "$0"; exit 2; fi
OLD_SRC=$1 OLD_BUILD=$2 NEW_SRC=$3 NEW_BUILD=$4
MODELS=${5:-mlp,lenet5} ROUNDS=${6:-8}
PROBE=$(cd "$(dirname "$0")" && pwd)/train_step_probe.cpp
WORK=$(mktemp -d /tmp/compare_train_step.XXXXXX)
for side in old new; do
  src=OLD_SRC build=OLD_BUILD
  [ $side = new ] && src=NEW_SRC build=NEW_BUILD
  lib=$(cd "${!build}" && pwd)
  g++ -O2 -std=c++20 -fopenmp -I"${!src}/include" "$PROBE" -o "$WORK/probe-$side" -L"$lib" -lember -Wl,-rpath,"$lib"
done
export OMP_WAIT_POLICY=passive
echo "instructions per step (callgrind, 1 thread, 5 steps after 3 warm-up steps):"
for m in ${MODELS//,/ }; do
  for side in old new; do
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$WORK/cg.$side.$m" \
      "$WORK/probe-$side" "$m" 5 loop 1 > "$WORK/cg.$side.$m.log" 2>&1
    ir=$(grep -o 'Collected : [0-9]*' "$WORK/cg.$side.$m.log" | grep -o '[0-9]*$')
    printf "  %-9s %-4s %'14d\n" "$m" "$side" $((ir / 5))
  done
done
echo "CPU time per step (us, 1 thread, 200 steps; rounds alternate old/new and new/old; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
for m in ${MODELS//,/ }; do
  for r in $(seq "$ROUNDS"); do
    order="old new"; (( r % 2 )) || order="new old"
    for side in $order; do echo "$side $("$WORK/probe-$side" "$m" 200 loop 1)"; done
  done | awk -v m="$m" '
    function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
    { if ($1 == "old") o[++no] = $8; else n[++nn] = $8 }
    END { mo = med(o, no); mn = med(n, nn); printf "  %-9s old %8.1f  new %8.1f  new/old %.4f (medians of %d)\n", m, mo, mn, mn / mo, no }'
done
echo "(callgrind outputs in $WORK: callgrind_annotate $WORK/cg.new.MODEL)"

#!/usr/bin/env bash
# Issue 46's benchmark: pytorch/examples' MNIST training loop in Python (bench/python_loop_mnist.py,
# the same program with `import torch` or `import ember as torch`) against PyTorch, and against the
# same network trained by `ember train` from a spec file (bench/recipes/mnistnet.toml; lenet5: the
# zoo's), on Fashion-MNIST, batch 64, Adadelta lr 1, fp32. Rounds alternate the order
# (torch, ember, cli / cli, ember, torch); the medians and their ratios are printed, with the CPU
# and OMP_WAIT_POLICY. "python share" = 1 - (ember train's step time / ember's Python-loop step
# time): the time the Python loop spends outside the C++ a CLI run spends in (Python itself, the
# bindings, and any fusion the CLI's model has that layer-by-layer Python calls do not).
#
#   bench/python_loop_mnist.sh EMBER_PY TORCH_PY [model=mnistnet] [rounds=3] [steps=0: the whole epoch]
#   e.g. bench/python_loop_mnist.sh .cache/venvs/python-package/bin/python /work/wt/torchvenv/bin/python
# EMBER_BIN names the ember command (default build/ember); threads: 2 (THREADS=).
set -euo pipefail
if [ $# -lt 2 ]; then sed -n 2,13p "$0"; exit 2; fi
EMBER_PY=$1 TORCH_PY=$2 MODEL=${3:-mnistnet} ROUNDS=${4:-3} STEPS=${5:-0}
here=$(cd "$(dirname "$0")" && pwd)
EMBER_BIN=${EMBER_BIN:-$here/../build/ember}
THREADS=${THREADS:-2}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMP_NUM_THREADS=$THREADS
work=$(mktemp -d /tmp/python_loop_mnist.XXXXXX)
trap 'rm -rf "$work"' EXIT
spec=$MODEL
[ "$MODEL" = mnistnet ] && spec=$here/recipes/mnistnet.toml
limit=()
[ "$STEPS" -gt 0 ] && limit=(--limit-train $((STEPS * 64)))

py_loop() {  # framework python -> samples/s
  "$2" "$here/python_loop_mnist.py" --framework "$1" --model "$MODEL" --threads "$THREADS" --steps "$STEPS" \
    > "$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; exit 1; }
  tail -n 1 "$work/$1.log" | "$TORCH_PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["samples_per_s"])'
}
cli_run() {
  rm -rf "$work/run"
  "$EMBER_BIN" train --model "$spec" --optimizer adadelta --lr 1 --schedule none --weight-decay 0 \
    --label-smoothing 0 --hflip 0 --precision fp32 --batch-size 64 --val-split 0 --epochs 1 --limit-test 1000 \
    --seed 1 "${limit[@]}" --run-dir "$work/run" --verbose 0 > "$work/cli.log" 2>&1 || { cat "$work/cli.log" >&2; exit 1; }
  grep '"kind":"epoch"' "$work/run/metrics.jsonl" | tail -n 1 |
    "$TORCH_PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["samples_per_s"])'
}

echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $THREADS threads, OMP_WAIT_POLICY=$OMP_WAIT_POLICY," \
     "model $MODEL, steps ${STEPS/#0/one epoch}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "torch $("$TORCH_PY" -c 'import torch; print(torch.__version__)'), ember $("$EMBER_PY" -c 'import ember; print(ember.__version__)')"
for r in $(seq "$ROUNDS"); do
  order="torch ember cli"; (( r % 2 )) || order="cli ember torch"
  for side in $order; do
    case $side in
      torch) v=$(py_loop torch "$TORCH_PY") ;;
      ember) v=$(py_loop ember "$EMBER_PY") ;;
      cli) v=$(cli_run) ;;
    esac
    echo "round $r $side $v samples/s"
  done
done | tee "$work/rounds"
awk '
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  { v[$3, ++n[$3]] = $4 }
  END {
    for (s in n) { for (i = 1; i <= n[s]; i++) x[i] = v[s, i]; m[s] = med(x, n[s]) }
    printf "median samples/s: torch %.1f, ember (Python loop) %.1f, ember train %.1f\n", m["torch"], m["ember"], m["cli"]
    printf "ember Python loop / PyTorch: %.2fx; ember Python loop / ember train: %.2f; python share of a step: %.1f%%\n",
           m["ember"] / m["torch"], m["ember"] / m["cli"], 100 * (1 - m["ember"] / m["cli"])
  }' "$work/rounds"

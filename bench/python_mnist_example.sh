#!/usr/bin/env bash
# Issue 47's whole-program figure: the MNIST CNN program of tests/python/pkg/programs/mnist_cnn.py
# (Adadelta, StepLR, DataLoader over datasets.MNIST with ToTensor + Normalize, a test pass) for one
# epoch, under PyTorch + torchvision and under ember with its imports changed (programs/to_ember.py),
# rounds alternating the order; wall time of the whole process, medians and the ratio.
# The data: Fashion-MNIST's files (same format and size as MNIST's) laid out as ROOT/MNIST/raw.
#
#   bench/python_mnist_example.sh EMBER_PY TORCH_PY [rounds=3] [fashion-mnist dir=/usr/share/datasets/fashion-mnist]
set -euo pipefail
if [ $# -lt 2 ]; then sed -n 2,9p "$0"; exit 2; fi
EMBER_PY=$1 TORCH_PY=$2 ROUNDS=${3:-3} SRC=${4:-/usr/share/datasets/fashion-mnist}
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }  # not realpath: a venv's python is a symlink
EMBER_PY=$(abs "$EMBER_PY") TORCH_PY=$(abs "$TORCH_PY")
here=$(cd "$(dirname "$0")" && pwd)
progs=$here/../tests/python/pkg/programs
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMP_NUM_THREADS=${THREADS:-2}
work=$(mktemp -d /tmp/python_mnist_example.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data/MNIST/raw"
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  if [ -f "$SRC/$f" ]; then cp "$SRC/$f" "$work/data/MNIST/raw/"; else gunzip -c "$SRC/$f.gz" > "$work/data/MNIST/raw/$f"; fi
done
cp "$progs/mnist_cnn.py" "$work/torch_prog.py"
"$EMBER_PY" "$progs/to_ember.py" "$progs/mnist_cnn.py" > "$work/ember_prog.py"
run() {  # python program -> seconds
  local t0 t1
  t0=$(date +%s.%N)
  (cd "$work" && "$1" "$2" --data "$work/data" --epochs 1 --log-interval 100000 > "$work/out.log" 2>&1) || { cat "$work/out.log" >&2; exit 1; }
  t1=$(date +%s.%N)
  "$1" -c "print($t1 - $t0)"
}
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), OMP_NUM_THREADS=$OMP_NUM_THREADS," \
     "OMP_WAIT_POLICY=$OMP_WAIT_POLICY, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$ROUNDS"); do
  order="torch ember"; (( r % 2 )) || order="ember torch"
  for side in $order; do
    if [ "$side" = torch ]; then v=$(run "$TORCH_PY" "$work/torch_prog.py"); else v=$(run "$EMBER_PY" "$work/ember_prog.py"); fi
    [ -n "$v" ] || exit 1
    printf "round %d %s %.1f s  (%s)\n" "$r" "$side" "$v" "$(grep -m1 'Accuracy' "$work/out.log" | sed 's/^ *//')"
  done
done | tee /dev/stderr | awk '
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  { v[$3, ++n[$3]] = $4 }
  END { for (i = 1; i <= n["torch"]; i++) t[i] = v["torch", i]; for (i = 1; i <= n["ember"]; i++) e[i] = v["ember", i]
        mt = med(t, n["torch"]); me = med(e, n["ember"])
        printf "median seconds for one epoch: torch %.1f, ember %.1f, torch/ember %.2fx\n", mt, me, mt / me }'

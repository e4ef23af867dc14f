#!/usr/bin/env bash
# Issue 47's data figures: bench/python_dataloader.py under PyTorch + torchvision and under ember
# (the same program, imports changed), alternating the order each round; prints each round, the
# medians and ember's ratio, with the CPU, the thread count and OMP_WAIT_POLICY.
#
#   bench/python_dataloader.sh EMBER_PY TORCH_PY CASE ROOT [rounds=3] [workers=2] [batches=0: one epoch]
#   CASE: fashion (ROOT holds FashionMNIST/raw or the four IDX files), cifar (ROOT/cifar-10-batches-py),
#         folder (ROOT is an image folder: bench/make_photos.sh makes one)
set -euo pipefail
if [ $# -lt 4 ]; then sed -n 2,9p "$0"; exit 2; fi
EMBER_PY=$1 TORCH_PY=$2 CASE=$3 ROOT=$4 ROUNDS=${5:-3} WORKERS=${6:-2} BATCHES=${7:-0}
here=$(cd "$(dirname "$0")" && pwd)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMP_NUM_THREADS=${THREADS:-2}
run() {  # framework python -> images/s
  "$2" "$here/python_dataloader.py" --framework "$1" --case "$CASE" --root "$ROOT" --workers "$WORKERS" \
    --batches "$BATCHES" --threads "$OMP_NUM_THREADS" | tail -n 1 | "$2" -c 'import json,sys; print(json.load(sys.stdin)["images_per_s"])'
}
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $OMP_NUM_THREADS threads," \
     "OMP_WAIT_POLICY=$OMP_WAIT_POLICY, case $CASE, num_workers $WORKERS, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "torch $("$TORCH_PY" -c 'import torch, torchvision; print(torch.__version__, torchvision.__version__)'), ember $("$EMBER_PY" -c 'import ember; print(ember.__version__)')"
for r in $(seq "$ROUNDS"); do
  order="torch ember"; (( r % 2 )) || order="ember torch"
  for side in $order; do
    if [ "$side" = torch ]; then v=$(run torch "$TORCH_PY"); else v=$(run ember "$EMBER_PY"); fi
    echo "round $r $side $v images/s"
  done
done | tee /dev/stderr | awk '
  function med(a, n,   i, j, t) { for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
                                  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
  { v[$3, ++n[$3]] = $4 }
  END { for (i = 1; i <= n["torch"]; i++) t[i] = v["torch", i]; for (i = 1; i <= n["ember"]; i++) e[i] = v["ember", i]
        mt = med(t, n["torch"]); me = med(e, n["ember"])
        printf "median images/s: torch %.0f, ember %.0f, ember/torch %.2fx\n", mt, me, me / mt }'

#!/usr/bin/env bash
# fp32 against bf16 mixed precision on the CPU, ember and PyTorch 2.x side by side in one run:
# training (batch 64) and inference (batch 256) throughput of mlp / lenet5 / mnistnet / bncnn48_fc128
# (EMBER_BENCH_MODELS="..." picks others), ember's
# bench_models with and without --precision bf16 (ember::autocast) and bench/torch_models.py with
# and without --autocast-bf16 (torch.autocast("cpu", dtype=torch.bfloat16)). The four variants
# alternate model by model for `rounds` rounds (this machine's load moves within seconds); each
# figure is the median over rounds of that round's median of --reps repetitions.
#   bench/compare_precision.sh [build-dir] [threads] [rounds] [python] [keras-python] [debian-python]
# python: an interpreter with PyTorch 2.x (default /work/venvs/torch/bin/python; PyTorch columns are
# left out, with a note, when it cannot import torch).
# keras-python: an interpreter with Keras 3 on TensorFlow (default /work/venvs/keras/bin/python, made by
# `/usr/bin/python3 -m venv /work/venvs/keras && /work/venvs/keras/bin/pip install tensorflow-cpu`);
# bench/keras_models.py with and without --mixed-bf16 (keras.mixed_precision "mixed_bfloat16");
# Keras columns are left out, with a note, when it cannot import keras.
# debian-python: optional, an interpreter with Debian's python3-torch (1.13, OpenBLAS; `apt-get install
# python3-torch`, then /usr/bin/python3), which the issue counts as a peer too: columns torch113_*.
set -euo pipefail
BUILD=${1:-build}
THREADS=${2:-2}
ROUNDS=${3:-3}
PY=${4:-/work/venvs/torch/bin/python}
KPY=${5:-/work/venvs/keras/bin/python}
DPY=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=${EMBER_BENCH_MODELS:-"mlp lenet5 mnistnet bncnn48_fc128"}  # issue 24 adds bncnn48_fc128
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
export OMP_NUM_THREADS=$THREADS
# On a shared, loaded machine spinning OpenMP workers lose their time slices to each other (mlp
# training ran 4.4k samples/s with the default policy and 59k with passive at load ~10, 2026-11-30);
# passive is applied to both frameworks alike. Set OMP_WAIT_POLICY=active on a quiet machine.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
TORCH=1
if ! "$PY" -c "import torch" 2>/dev/null; then
  echo "compare_precision.sh: $PY cannot import torch; PyTorch columns left out" >&2
  TORCH=0
fi
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //') (family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')); bf16 flags: $(grep -m1 -o -w -E 'amx_bf16|avx512_bf16' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); threads=$THREADS rounds=$ROUNDS OMP_WAIT_POLICY=$OMP_WAIT_POLICY; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$TORCH" = 1 ] && echo "torch: $("$PY" -c 'import torch; print(torch.__version__, "oneDNN", torch.backends.mkldnn.version() if hasattr(torch.backends.mkldnn, "version") else "?")' 2>/dev/null || true)"

KERAS=1
if ! "$KPY" -c "import keras, tensorflow" 2>/dev/null; then
  echo "compare_precision.sh: $KPY cannot import keras/tensorflow; Keras columns left out" >&2
  KERAS=0
fi
[ "$KERAS" = 1 ] && echo "keras: $("$KPY" -c 'import os; os.environ["TF_CPP_MIN_LOG_LEVEL"]="3"; import keras, tensorflow as tf; print(keras.__version__, "tensorflow", tf.__version__)' 2>/dev/null || true)"

DEB=0
if [ -n "$DPY" ]; then
  if "$DPY" -c "import torch" 2>/dev/null; then
    DEB=1
    echo "torch113: $("$DPY" -c 'import torch; print(torch.__version__)' 2>/dev/null || true) ($DPY)"
  else
    echo "compare_precision.sh: $DPY cannot import torch; torch113 columns left out" >&2
  fi
fi

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
for r in $(seq 1 "$ROUNDS"); do
  for m in $MODELS; do
    "$BUILD/bench/bench_models" --threads "$THREADS" --reps 3 --json --only models --models $m > "$TMP/ember_fp32.$m.$r.json"
    "$BUILD/bench/bench_models" --threads "$THREADS" --reps 3 --json --only models --models $m --precision bf16 > "$TMP/ember_bf16.$m.$r.json"
    if [ "$TORCH" = 1 ]; then
      "$PY" "$HERE/torch_models.py" --threads "$THREADS" --reps 3 --json --models $m > "$TMP/torch_fp32.$m.$r.json"
      "$PY" "$HERE/torch_models.py" --threads "$THREADS" --reps 3 --json --models $m --autocast-bf16 > "$TMP/torch_bf16.$m.$r.json"
    fi
    if [ "$KERAS" = 1 ]; then
      "$KPY" "$HERE/keras_models.py" --threads "$THREADS" --reps 3 --json --models $m 2>/dev/null > "$TMP/keras_fp32.$m.$r.json"
      "$KPY" "$HERE/keras_models.py" --threads "$THREADS" --reps 3 --json --models $m --mixed-bf16 2>/dev/null > "$TMP/keras_bf16.$m.$r.json"
    fi
    if [ "$DEB" = 1 ]; then
      "$DPY" "$HERE/torch_models.py" --threads "$THREADS" --reps 3 --json --models $m > "$TMP/torch113_fp32.$m.$r.json"
      "$DPY" "$HERE/torch_models.py" --threads "$THREADS" --reps 3 --json --models $m --autocast-bf16 > "$TMP/torch113_bf16.$m.$r.json"
    fi
  done
done
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

/usr/bin/python3 - "$TMP" "$ROUNDS" "$MODELS" "$TORCH" "$KERAS" "$DEB" <<'PYEOF'
import json, statistics, sys
tmp, rounds, models = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
torch, keras, deb = sys.argv[4] == "1", sys.argv[5] == "1", sys.argv[6] == "1"
sides = ["ember_fp32", "ember_bf16"] + (["torch_fp32", "torch_bf16"] if torch else []) + \
    (["keras_fp32", "keras_bf16"] if keras else []) + (["torch113_fp32", "torch113_bf16"] if deb else [])
peers = [s for s in ("torch_bf16", "keras_bf16", "torch113_bf16") if s in sides]
peers32 = [s for s in ("torch_fp32", "keras_fp32", "torch113_fp32") if s in sides]
def med(side, m, key):
    return statistics.median(json.load(open(f"{tmp}/{side}.{m}.{r}.json"))["models"][m][key] for r in range(1, rounds + 1))
for key, label in [("train_samples_per_s", "training, batch 64"), ("infer_samples_per_s", "inference, batch 256")]:
    print(f"\n{label} (samples/s, median of {rounds} rounds)")
    print("| model | " + " | ".join(sides) + " | ember bf16/fp32 |" +
          (" ember bf16 / faster peer bf16 | ember fp32 / faster peer fp32 |" if peers else ""))
    print("|---" * (len(sides) + 2 + (2 if peers else 0)) + "|")
    for m in models:
        v = {s: med(s, m, key) for s in sides}
        row = f"| {m} | " + " | ".join(f"{v[s]:.0f}" for s in sides) + f" | {v['ember_bf16'] / v['ember_fp32']:.2f}x |"
        if peers:
            best = max(peers, key=lambda p: v[p])
            row += f" {v['ember_bf16'] / v[best]:.2f}x ({best.split('_')[0]}) |"
            best32 = max(peers32, key=lambda p: v[p])
            row += f" {v['ember_fp32'] / v[best32]:.2f}x ({best32.split('_')[0]}) |"
        print(row)
PYEOF

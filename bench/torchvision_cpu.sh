#!/usr/bin/env bash
# docs/benchmarks.md "torchvision's models on the CPU" (issue 26): ember against PyTorch on
# torchvision's models, training and inference images/s, batch 32, fp32 and bf16 autocast, images of
# 224 and 112 pixels, the same thread count, in alternated rounds (ember then PyTorch, per model and
# size), the median of the rounds. Prints a markdown table and leaves the raw JSON lines in OUTDIR.
#
#   usage: bench/torchvision_cpu.sh BUILD_DIR PYTHON [ROUNDS=2] [OUTDIR=/tmp/tv-cpu]
#   env:   MODELS (default resnet18,resnet50,mobilenet_v2,efficientnet_b0), SIZES (224,112),
#          PRECISIONS (fp32,bf16), THREADS (2), OMP_WAIT_POLICY (set it: active or passive)
# PYTHON has torch and torchvision (a venv: python3 -m venv V && V/bin/pip install torch torchvision).
set -euo pipefail
build=${1:?usage: bench/torchvision_cpu.sh BUILD_DIR PYTHON [ROUNDS] [OUTDIR]}
py=${2:?usage: bench/torchvision_cpu.sh BUILD_DIR PYTHON [ROUNDS] [OUTDIR]}
rounds=${3:-2}
out=${4:-/tmp/tv-cpu}
here=$(cd "$(dirname "$0")" && pwd)
models=${MODELS:-resnet18,resnet50,mobilenet_v2,efficientnet_b0}
sizes=${SIZES:-224,112}
precisions=${PRECISIONS:-fp32,bf16}
threads=${THREADS:-2}
mkdir -p "$out"
: > "$out/ember.jsonl"
: > "$out/torch.jsonl"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $threads threads, OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-unset}, $(date -u +%FT%TZ)"
for r in $(seq "$rounds"); do
  for m in ${models//,/ }; do
    for s in ${sizes//,/ }; do
      for phase in train infer; do
        for p in ${precisions//,/ }; do
          flag=""; [[ $phase == infer ]] && flag=--inference
          "$build/ember" bench train --models "$m" --image-size "$s" --batch-sizes 32 --device cpu --threads "$threads" \
            --precision "$p" $flag --repeats 3 --min-time 1 --steps 2 --max-warmup-time 4 --json 2>/dev/null |
            python3 -c "import json,sys; j=json.load(sys.stdin); r=j['results'][0]; print(json.dumps({'framework':'ember','model':r['model'],'size':$s,'phase':'$phase','precision':'$p','round':$r,'images_per_s':r.get('samples_per_s')}))" \
            >> "$out/ember.jsonl"
        done
      done
      "$py" "$here/torchvision_cpu_torch.py" --models "$m" --sizes "$s" --precisions "$precisions" --threads "$threads" |
        python3 -c "import json,sys
for l in sys.stdin: j=json.loads(l); j['round']=$r; print(json.dumps(j))" >> "$out/torch.jsonl"
      echo "round $r $m $s done" >&2
    done
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys, collections
out = sys.argv[1]
rows = collections.defaultdict(list)
torch_version = ""
for f in ("ember", "torch"):
    for l in open(f"{out}/{f}.jsonl"):
        j = json.loads(l)
        if j["framework"].startswith("torch"): torch_version = j["framework"]
        if j.get("images_per_s"): rows[(j["model"], j["size"], j["phase"], j["precision"], f)].append(j["images_per_s"])
med = {k: statistics.median(v) for k, v in rows.items()}
keys = sorted({k[:3] for k in med}, key=lambda k: (k[0], -k[1], k[2] != "train"))
print(f"| model | px | phase | ember fp32 | {torch_version} fp32 | ratio | ember bf16 | {torch_version} bf16 | ratio |")
print("|---|---|---|---|---|---|---|---|---|")
for m, s, ph in keys:
    cells = []
    for p in ("fp32", "bf16"):
        e, t = med.get((m, s, ph, p, "ember")), med.get((m, s, ph, p, "torch"))
        cells += [f"{e:.1f}" if e else "-", f"{t:.1f}" if t else "-", f"**{e / t:.2f}**" if e and t else "-"]
    print(f"| {m} | {s} | {ph} | " + " | ".join(cells) + " |")
PY

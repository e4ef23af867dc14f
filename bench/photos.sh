#!/usr/bin/env bash
# docs/benchmarks.md "The photo pipeline against torchvision's DataLoader" (issue 27): ember's
# photo DataLoader (`ember bench data`) and torchvision's (bench/data_torchvision.py) on the same
# folder, the same worker count, alternated rounds; then the medians.
#   usage: bench/photos.sh BUILD_DIR PYTHON FOLDER [ROUNDS=2] [WORKERS=2] [-- AUGMENT FLAGS]
# AUGMENT FLAGS go to both sides, e.g. `-- --augment trivial --color-jitter 0.4,0.4,0.4,0.1`.
# FOLDER: e.g. bench/make_photos.sh /tmp/photos 2000. PYTHON: torch + torchvision >= 0.16.
set -euo pipefail
build=${1:?usage: bench/photos.sh BUILD_DIR PYTHON FOLDER [ROUNDS] [WORKERS]}
py=${2:?}; folder=${3:?}; rounds=${4:-2}; workers=${5:-2}
shift $(( $# < 5 ? $# : 5 )); [[ ${1:-} == -- ]] && shift
extra=("$@")
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //') (family $(grep -m1 '^cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model\s' /proc/cpuinfo | cut -d: -f2 | tr -d ' ')), $(nproc) cores, $workers workers, $(date -u +%FT%TZ)"
for r in $(seq "$rounds"); do
  "$build/ember" bench data --data "$folder" --workers "$workers" --epochs 2 --json "${extra[@]}" > "$out/ember.$r.json"
  "$py" "$here/data_torchvision.py" "$folder" --workers "$workers" --epochs 2 "${extra[@]}" 2>/dev/null > "$out/torch.$r.json"
done
python3 - "$out" "$rounds" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
e = [json.load(open(f"{out}/ember.{r}.json")) for r in range(1, rounds + 1)]
t = [json.loads(open(f"{out}/torch.{r}.json").read()) for r in range(1, rounds + 1)]
med = lambda rows, k: statistics.median(x[k] for x in rows)
print(f"{e[0]['images']} photos, batch {e[0]['batch_size']}, {e[0].get('recipe', 'RandomResizedCrop(224) + flip')} + normalise; {t[0]['framework']}")
print("| images/s | ember | torchvision | ratio |")
print("|---|---|---|---|")
for k, name in (("loader_images_per_s", f"DataLoader, {e[0]['workers']} workers"),
                ("decode_images_per_s_one_core", "decode only, one core (Pillow: open().convert('RGB'))"),
                ("decode_augment_images_per_s_one_core", "decode + transforms, one core")):
    a, b = med(e, k), med(t, k)
    print(f"| {name} | {a:.0f} | {b:.0f} | **{a / b:.2f}** |")
PY

#!/usr/bin/env bash
# TensorBoard read-back: a short `ember train` run writes events.out.tfevents.* into its run
# directory, and TensorBoard's own EventAccumulator (PyPI `tensorboard`) reads back exactly the
# points metrics.jsonl has: 2 epochs x 8 steps with --log-every 2 -> 8 points per step tag,
# 2 per epoch tag, at the same steps, values and wall-clock times; a run stopped and resumed reads
# back with the same steps, no point twice, even where a run went back to an older checkpoint.
# Exit 77 (skipped) without PyPI.
#   run_tensorboard_test.sh EMBER_BIN SOURCE_DIR WORK_DIR
set -eu
ember=$1 src=$2 work=$3
source "$src/tests/python/venv.sh"
ember_venv tb tensorboard
rm -rf "$work" && mkdir -p "$work/data"
cd "$work"
# 256 training and 64 test images whose label picks a bright band (learnable, like tests/e2e).
"$VENV_PY" - <<'PY'
import struct
def split(name, n):
    with open(f"data/{name}-images-idx3-ubyte", "wb") as im, open(f"data/{name}-labels-idx1-ubyte", "wb") as lb:
        im.write(struct.pack(">IIII", 0x803, n, 28, 28)); lb.write(struct.pack(">II", 0x801, n))
        for i in range(n):
            label = (i * 7 + 3) % 10
            im.write(bytes((200 + (i + c) % 50) if r // 3 == label else (i * 31 + r * 7 + c) % 40
                           for r in range(28) for c in range(28)))
            lb.write(bytes([label]))
split("train", 256); split("t10k", 64)
PY
"$ember" train --model lenet5 --data-dir data --epochs 2 --batch-size 32 --log-every 2 --threads 2 \
  --run-dir runs/tb >train.log 2>&1 || { cat train.log; echo "FAIL: ember train"; exit 1; }
# The same run stopped after 5 steps, resumed to step 11, then "crashed" back to its step-5
# checkpoint (the steps 6-10 it logged are orphans) and resumed to the end: three event files that
# must read back as one curve, each point once (TensorBoard purges at the SessionLog START).
stopped() {  # runs ember, expecting the exit code of --stop-after-steps (130)
  set +e
  "$ember" "$@" >stop.log 2>&1
  local code=$?
  set -e
  [[ $code == 130 ]] || { cat stop.log; echo "FAIL: ember $* exited $code, expected 130"; exit 1; }
}
stopped train --model lenet5 --data-dir data --epochs 2 --batch-size 32 --log-every 2 --threads 2 \
  --run-dir runs/resumed --stop-after-steps 5
cp -r runs/resumed/checkpoints checkpoints-at-5
stopped train --resume runs/resumed --log-every 2 --stop-after-steps 11
rm -rf runs/resumed/checkpoints && cp -r checkpoints-at-5 runs/resumed/checkpoints
"$ember" train --resume runs/resumed --log-every 2 >resume.log 2>&1 || { cat resume.log; echo "FAIL: --resume"; exit 1; }
"$VENV_PY" - <<'PY'
import glob, json, math, sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

files = glob.glob("runs/tb/events.out.tfevents.*")
assert len(files) == 1, f"expected one event file in runs/tb, found {files}"
acc = EventAccumulator("runs/tb", size_guidance={"scalars": 0})  # 0: keep every point
acc.Reload()
tags = acc.Tags()["scalars"]
records = [json.loads(line) for line in open("runs/tb/metrics.jsonl")]
assert all("time" in r for r in records), "every metrics.jsonl record has a wall-clock time"

want = {"train/loss": 8, "train/acc": 8, "lr": 8, "samples_per_s": 8,
        "test/loss": 2, "test/acc": 2, "epoch/train_loss": 2, "epoch/train_acc": 2, "data_wait": 2,
        "epoch/samples_per_s": 2, "epoch/seconds": 2, "epoch/lr": 2}
fields = {"train/loss": ("step", "loss"), "train/acc": ("step", "acc"), "lr": ("step", "lr"),
          "test/acc": ("epoch", "test_acc"), "data_wait": ("epoch", "data_wait")}
errors = []
for tag, n in want.items():
    if tag not in tags:
        errors.append(f"tag {tag} missing (have {sorted(tags)})")
        continue
    points = acc.Scalars(tag)
    if len(points) != n:
        errors.append(f"{tag}: {len(points)} points, expected {n}")
    if tag in fields:
        kind, field = fields[tag]
        recs = [r for r in records if r["kind"] == kind and field in r]
        got = [(p.step, p.value, p.wall_time) for p in points]
        exp = [(r["step"], r[field], r["time"]) for r in recs]
        if [g[0] for g in got] != [e[0] for e in exp]:
            errors.append(f"{tag}: steps {[g[0] for g in got]} != metrics.jsonl {[e[0] for e in exp]}")
        for (s, v, t), (_, ev, et) in zip(got, exp):
            if not math.isclose(v, ev, rel_tol=1e-6, abs_tol=1e-7) or abs(t - et) > 1e-3:
                errors.append(f"{tag} step {s}: {v} at {t}, metrics.jsonl {ev} at {et}")
for tag in tags:
    if tag not in want and len(acc.Scalars(tag)) not in (2, 8):
        errors.append(f"unexpected tag {tag} with {len(acc.Scalars(tag))} points")
# Resumed: two files, and after TensorBoard drops the orphaned points (SessionLog START one step
# after the checkpoint), the same steps per tag as the uninterrupted run.
files2 = glob.glob("runs/resumed/events.out.tfevents.*")
if len(files2) != 3:
    errors.append(f"resumed run: expected three event files, found {files2}")
acc2 = EventAccumulator("runs/resumed", size_guidance={"scalars": 0})
acc2.Reload()
for tag in want:
    a = [p.step for p in acc.Scalars(tag)]
    b = [p.step for p in acc2.Scalars(tag)] if tag in acc2.Tags()["scalars"] else []
    if a != b:
        errors.append(f"resumed run, {tag}: steps {b}, uninterrupted run {a}")
if errors:
    print("FAIL:\n  " + "\n  ".join(errors)); sys.exit(1)
print(f"PASS: EventAccumulator read {len(tags)} tags from {files[0]}: "
      + ", ".join(f"{t}={len(acc.Scalars(t))}" for t in sorted(tags)))
PY

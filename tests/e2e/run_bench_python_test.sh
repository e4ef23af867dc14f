#!/usr/bin/env bash
# Tests the Python side of scripts/gpu-check.sh without a GPU.
#   ratios SRC WORK: bench/torch_gpu.py and bench/gpu_ratios.py compile; gpu_ratios.py turns fixed
#                    ember/PyTorch JSON into the expected PASS/FAIL/SKIP rows and ratios.json.
#   torch  SRC WORK: bench/torch_gpu.py runs on the CPU with tiny settings and prints the JSON
#                    gpu-check.sh reads (exit 77 = skipped, when python3 has no torch).
set -eu
mode=$1 src=$2 work=$3
py=${PYTHON:-python3}
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }

if [[ $mode == ratios ]]; then
  for f in torch_gpu.py gpu_ratios.py; do
    "$py" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
      "$src/bench/$f" "$work/$f.pyc" || fail "$f does not compile"
  done
  cd "$work"
  echo '{"results":[{"n":1000,"cuda0_gflops":950.0},{"n":8192,"cuda0_gflops":40000}]}' >bench_matmul.json
  echo '{"results":[{"n":1000,"cuda0_gflops":100.0}]}' >bench_matmul_tf32.json
  echo '{"results":[{"device":0,"h2d_pinned":50,"d2h_pinned":40}]}' >bench_bandwidth.json
  echo '{"results":[{"model":"mnistnet","device":"cpu","batch_size":128,"samples_per_s":900},
     {"model":"mnistnet","device":"cuda:0","batch_size":128,"samples_per_s":30000}]}' >bench_train_mnistnet128.json
  echo '{"matmul":[{"n":1000,"dtype":"float32","gflops":1000},{"n":8192,"dtype":"float32","gflops":50000},
     {"n":1000,"dtype":"tf32","gflops":200},{"n":50,"dtype":"tf32","gflops":1}],
     "bandwidth":{"h2d_pinned":52,"d2h_pinned":50},
     "train":[{"model":"mnistnet","batch_size":128,"samples_per_s":20000}]}' >torch_side.json
  got=$("$py" "$src/bench/gpu_ratios.py" .)
  want=$(printf '%s\t%s\n' \
    matmul_fp32_1000 "PASS (0.95, target >= 0.9)" matmul_fp32_8192 "FAIL (0.80, target >= 0.9)" \
    matmul_tf32_1000 "FAIL (0.50, target >= 0.9)" pinned_h2d "PASS (0.96, target >= 0.9)" \
    pinned_d2h "FAIL (0.80, target >= 0.9)" mnistnet_train_b128 "PASS (1.50, target > 1.0)")
  [[ $got == "$want" ]] || fail "gpu_ratios.py rows:"$'\n'"$got"$'\n'"expected:"$'\n'"$want"
  "$py" -c 'import json; r = json.load(open("ratios.json")); assert len(r) == 6 and r[0]["ratio"] == 0.95, r' \
    || fail "ratios.json"
  rm torch_side.json
  got=$("$py" "$src/bench/gpu_ratios.py" .)
  [[ $got == torch_ratios$'\t'"SKIP (no PyTorch figures: "* ]] || fail "without torch_side.json: $got"
  echo "PASS: both scripts compile; gpu_ratios.py rows as expected"
elif [[ $mode == torch ]]; then
  "$py" -c 'import torch' 2>/dev/null || { echo "SKIPPED: $py has no torch (install python3-torch)"; exit 77; }
  # Small timing values keep it to a second or two: repeats of >= 0.01 s, a 0.05 s warm-up at most.
  "$py" "$src/bench/torch_gpu.py" --device cpu --sizes 16,32 --train-steps 2 --train-warmup 1 --min-time 0.01 \
    --repeats 2 --max-warmup-time 0.05 >"$work/torch_side.json" || fail "torch_gpu.py --device cpu"
  "$py" - "$work/torch_side.json" <<'PY' || fail "torch_side.json: $(cat "$work/torch_side.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["device"] == "cpu", j
assert [(m["n"], m["dtype"]) for m in j["matmul"]] == [(16, "float32"), (32, "float32")], j["matmul"]
assert all(m["gflops"] > 0 for m in j["matmul"]), j["matmul"]
assert j["bandwidth"] is None and "CUDA" in j["bandwidth_skipped"], j
assert j["train"][0]["batch_size"] == 128 and j["train"][0]["samples_per_s"] > 0, j["train"]
# Timed as ember's benches: the median of the repeats, with the spread and each repeat's count and time.
assert j["timing"]["repeats"] == 2 and j["timing"]["min_time"] == 0.01, j["timing"]
for t in [m["timing"] for m in j["matmul"]] + [j["train"][0]["timing"]]:
    assert t["repeats"] == 2 and len(t["per_repeat"]) == 2, t
    assert t["min"] <= t["median"] <= t["max"] and t["spread"] >= 0, t
    assert all(r["seconds"] >= 0.01 for r in t["per_repeat"]), t
assert all(r["calls"] >= 2 for r in j["train"][0]["timing"]["per_repeat"]), j["train"]
PY
  echo "PASS: torch_gpu.py on the CPU"
else
  fail "mode must be ratios or torch (got $mode)"
fi

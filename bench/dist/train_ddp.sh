#!/usr/bin/env bash
# docs/distributed.md's end-to-end numbers: lenet5 on Fashion-MNIST (first N training images, one
# epoch, global batch 128) as 1 rank x 1 thread, 1 rank x 2 threads and 2 ranks x 1 thread
# (--nproc-per-node 2), alternating ROUNDS times; then the all-reduce wait with and without
# overlapping backward (lenet5 with 16 KiB / 64 KiB buckets, so that its fully connected layers'
# buckets can start while the convolutions' backward runs, and mnistnet with the default buckets).
# Prints one line per run: what, samples/s of the epoch, rank 0's all-reduce wait per step.
#   bench/dist/train_ddp.sh BUILD_DIR [ROUNDS] [N]
set -u
build=${1:-build}; rounds=${2:-2}; n=${3:-12800}
ember="$build/ember"
out=$(mktemp -d)
common="--limit-train $n --limit-test 1000 --epochs 1 --val-split 0 --device cpu --optimizer sgd --lr 0.05 --schedule none"
run() {  # name, args...
  local name=$1; shift
  local log="$out/$name.log"
  "$ember" train $common --run-dir "$out/$name-$RANDOM" "$@" >"$log" 2>&1 || { echo "$name FAILED"; tail -5 "$log"; return; }
  local sps=$(awk '/^ *1 +[0-9.]+ +[0-9.]+%/ {print $(NF-2)}' "$log")
  local comm=$(grep -o '([0-9.]* ms per step)' "$log" | tr -d '()')
  echo "$name: ${sps} samples/s ${comm:+, all-reduce wait $comm}"
}
uptime
grep -m1 "model name" /proc/cpuinfo
for r in $(seq "$rounds"); do
  run "lenet5-1rank-1thread" --model lenet5 --batch-size 128 --threads 1
  run "lenet5-1rank-2threads" --model lenet5 --batch-size 128 --threads 2
  run "lenet5-2ranks-1thread" --model lenet5 --batch-size 64 --nproc-per-node 2
done
for r in $(seq "$rounds"); do
  EMBER_DDP_BUCKET_KB=16,64 EMBER_DDP_OVERLAP=1 run "lenet5-2ranks-smallbuckets-overlap" --model lenet5 --batch-size 64 --nproc-per-node 2
  EMBER_DDP_BUCKET_KB=16,64 EMBER_DDP_OVERLAP=0 run "lenet5-2ranks-smallbuckets-after" --model lenet5 --batch-size 64 --nproc-per-node 2
  EMBER_DDP_OVERLAP=1 run "mnistnet-2ranks-overlap" --model mnistnet --batch-size 64 --nproc-per-node 2 --limit-train 3200
  EMBER_DDP_OVERLAP=0 run "mnistnet-2ranks-after" --model mnistnet --batch-size 64 --nproc-per-node 2 --limit-train 3200
done
uptime
rm -rf "$out"

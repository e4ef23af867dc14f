#!/usr/bin/env bash
# The loopback all-reduce comparison behind docs/distributed.md's choice of Gloo: 2 ranks on this
# machine, float32 sum of 1 KiB .. 64 MiB, Gloo (TCP, ring algorithm chosen by gloo::allreduce)
# against Open MPI 4.1 (shared memory, MPI_Allreduce), each run `runs` times.
#   bench/dist/run.sh [runs]     (needs libgloo-dev and libopenmpi-dev + openmpi-bin)
set -euo pipefail
runs=${1:-3}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -std=c++17 "$here/allreduce_gloo.cpp" -o "$tmp/gloo" -lgloo -lpthread
mpicxx -O2 "$here/allreduce_mpi.cpp" -o "$tmp/mpi"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for i in $(seq "$runs"); do
  echo "# run $i, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
  mkdir -p "$tmp/store$i"
  STOREDIR="$tmp/store$i" PREFIX=p SIZE=2 RANK=1 "$tmp/gloo" &
  STOREDIR="$tmp/store$i" PREFIX=p SIZE=2 RANK=0 "$tmp/gloo"
  wait
  mpirun -np 2 --oversubscribe "$tmp/mpi"
done

#!/usr/bin/env bash
# `mpirun -np 2` starts ember ranks that find each other through Open MPI's environment
# (OMPI_COMM_WORLD_*) and meet at 127.0.0.1:MASTER_PORT; the collectives run on Gloo. Then a rank
# killed mid-collective must end the job non-zero within 60 s. Skips (77) without mpirun.
#   run_mpirun_test.sh DIST_WORKER
set -u
worker="$1"
if ! command -v mpirun >/dev/null; then
  echo "SKIP: mpirun not found (apt-get install openmpi-bin)"
  exit 77
fi
if ! "$worker" backends | grep -qx gloo; then
  echo "SKIP: this build has no gloo backend (apt-get install libgloo-dev)"
  exit 77
fi
# CI runs as root; 2 ranks on a 2-core machine need --oversubscribe.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
out=$(MASTER_PORT=$port timeout 120 mpirun -np 2 --oversubscribe -x MASTER_PORT "$worker" collectives 2>&1)
rc=$?
echo "$out"
if [ $rc -ne 0 ]; then echo "FAIL: mpirun collectives exited $rc"; exit 1; fi
for r in 0 1; do
  echo "$out" | grep -q "rank $r of 2: collectives ok" || { echo "FAIL: rank $r did not report"; exit 1; }
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
start=$(date +%s)
out=$(MASTER_PORT=$port EMBER_DIST_TIMEOUT_MS=60000 timeout 120 mpirun -np 2 --oversubscribe -x MASTER_PORT \
      -x EMBER_DIST_TIMEOUT_MS "$worker" die-mid-collective 2>&1)
rc=$?
took=$(( $(date +%s) - start ))
echo "$out"
echo "mpirun with a killed rank: exit $rc after ${took} s"
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then echo "FAIL: expected a non-zero exit within 60 s"; exit 1; fi
if [ $took -gt 60 ]; then echo "FAIL: took ${took} s"; exit 1; fi
echo "PASS"

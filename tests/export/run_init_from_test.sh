#!/usr/bin/env bash
# ctest init_from_torch: check_init_from.py (PyTorch LeNet5 weights -> `ember train --init-from` ->
# the run's accuracy and final weights are PyTorch's) under Debian's /usr/bin/python3 with
# python3-torch, or $EMBER_TORCH_PYTHON. Exit 77 (skipped) with the reason when that has no torch.
#   usage: run_init_from_test.sh EMBER WORK_DIR
set -eu
export PYTHONDONTWRITEBYTECODE=1  # nothing written into the source tree
ember=$1 work=$2
python=${EMBER_TORCH_PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
if ! command -v "$python" >/dev/null; then
  echo "SKIPPED: no Python at $python (set EMBER_TORCH_PYTHON, or apt-get install python3-torch)"
  exit 77
fi
exec "$python" "$here/check_init_from.py" "$ember" "$work"

#!/usr/bin/env bash
# The export checks that need Python packages (ctest: export_onnxruntime, export_torch).
#   onnx  EMBER FIXTURE WORK: check_onnx.py in a virtual environment with onnx, onnxruntime, numpy
#         and safetensors from PyPI. The venv is $EMBER_PY_VENV, else WORK/../py-venv-export; it is
#         created once and reused (the first run downloads ~60 MB). Exit 77 (skipped) with the
#         reason when it cannot be created: no venv module, PyPI unreachable.
#   torch EMBER FIXTURE WORK: check_torch.py under Debian's /usr/bin/python3 with python3-torch,
#         or $EMBER_TORCH_PYTHON (a venv's python with torch); exit 77 (skipped) when that has no torch.
set -eu
export PYTHONDONTWRITEBYTECODE=1  # nothing written into the source tree
mode=$1 ember=$2 fixture=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"

if [[ $mode == onnx ]]; then
  venv=${EMBER_PY_VENV:-$(dirname "$work")/py-venv-export}
  need='import onnx, onnxruntime, numpy, safetensors'
  if ! "$venv/bin/python" -c "$need" 2>/dev/null; then
    echo "creating the Python venv $venv (onnx, onnxruntime, numpy, safetensors from PyPI)"
    if ! /usr/bin/python3 -m venv "$venv" >"$work/venv.log" 2>&1; then
      echo "SKIPPED: cannot create a venv with /usr/bin/python3 (install python3-venv): $(tail -1 "$work/venv.log")"
      exit 77
    fi
    if ! timeout 600 "$venv/bin/pip" install --disable-pip-version-check --timeout 20 --retries 1 -q onnx onnxruntime numpy safetensors \
        >"$work/pip.log" 2>&1; then
      echo "SKIPPED: pip could not install onnx, onnxruntime, numpy, safetensors (PyPI unreachable?): $(tail -1 "$work/pip.log")"
      exit 77
    fi
  fi
  exec "$venv/bin/python" "$here/check_onnx.py" "$ember" "$fixture" "$work"
elif [[ $mode == torch ]]; then
  python=${EMBER_TORCH_PYTHON:-/usr/bin/python3}
  if ! "$python" -c 'import torch, numpy' 2>/dev/null; then
    echo "SKIPPED: $python has no torch (apt-get install python3-torch, or set EMBER_TORCH_PYTHON)"
    exit 77
  fi
  exec "$python" "$here/check_torch.py" "$ember" "$fixture" "$work"
else
  echo "FAIL: mode must be onnx or torch (got $mode)" >&2
  exit 1
fi

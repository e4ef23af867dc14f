#!/usr/bin/env bash
# Rewrites tests/python/golden/torch_*.json: PyTorch's side of every comparison in
# tests/python/pkg/test_torch_*.py, read by those tests where `import torch` fails (CI's venv).
# Needs a venv with the ember wheel installed and torch importable (PYTHON, default: the package
# tests' venv of scripts/test-python.sh).
#   usage: scripts/make-torch-goldens.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-${EMBER_PYTHON_VENV:-$root/.cache/venvs/python-package}/bin/python}
"$py" -c "import torch, ember" || { echo "make-torch-goldens: $py cannot import both torch and ember" >&2; exit 1; }
cd "$root/tests/python/pkg"
EMBER_WRITE_TORCH_GOLDENS=1 "$py" -m pytest -q -p no:cacheprovider test_torch_*.py
echo "wrote $root/tests/python/golden/torch_*.json"

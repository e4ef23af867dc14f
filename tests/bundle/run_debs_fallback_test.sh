#!/usr/bin/env bash
# The GPU check's fallback builds against the carried Debian packages, not the machine's: runs
# `scripts/gpu-check.sh --bundle EMPTY --debs DEBS` (an empty bundle, so its `ember --version` fails
# and the fallback starts; EMBER_GPU_CHECK_FORCE_FALLBACK=1 is the other way in), building the
# ember CLI only, CPU backend, then checks that every dependency's header came from OUT/debs-prefix
# (ninja's dependency log) and that `ldd` of the result resolves oneDNN, OpenBLAS, fmt, stb and zlib
# into the prefix. Manual (a full libember build: ~10 min on 2 cores); see docs/gpu.md.
#   usage: run_debs_fallback_test.sh REPO DEBS_DIR OUT    (DEBS_DIR from scripts/gpu-debs.sh)
set -uo pipefail
repo=$(cd "$1" && pwd) debs=$2 out=$3
rm -rf "$out" && mkdir -p "$out/empty-bundle" && out=$(cd "$out" && pwd)
EMBER_GPU_CHECK_FALLBACK_ARGS="-DEMBER_CUDA=OFF -DEMBER_BUILD_TESTS=OFF" EMBER_GPU_CHECK_FALLBACK_TARGETS=ember_cli \
  EMBER_GPU_CHECK_BUILD_SECONDS=${EMBER_GPU_CHECK_BUILD_SECONDS:-1500} GPU_CHECK_SECONDS=${GPU_CHECK_SECONDS:-1800} \
  "$repo/scripts/gpu-check.sh" --bundle "$out/empty-bundle" --debs "$debs" "$out/check" >"$out/check.log" 2>&1
p=$out/check/debs-prefix b=$out/check/debs-build
fail=0
ok() { echo "PASS: $1"; }
bad() { echo "FAIL: $1"; fail=1; }

for s in debs_unpack debs_configure debs_build debs_version; do
  grep -q "\"step\": \"$s\", \"status\": \"PASS\"" "$out/check/summary.json" && ok "step $s" || bad "step $s (see $out/check/$s.log)"
done
# Headers: none of the dependencies' from /usr/include, and fmt's from the prefix.
deps=$(cd "$b" && ninja -t deps 2>/dev/null)
sys=$(grep -E '^ +/usr/include/(fmt|nlohmann|CLI|oneapi|dnnl|stb|zlib\.h|zconf\.h|cblas|x86_64-linux-gnu/(curl|openblas|cblas))' <<<"$deps" | sort -u)
[[ -z $sys ]] && ok "no dependency header from /usr/include" || bad "headers from the system: $sys"
# (ccache with CCACHE_BASEDIR writes the prefix's paths relative: match the path's tail.)
for h in fmt/core.h oneapi/dnnl/dnnl.hpp stb/stb_image.h x86_64-linux-gnu/openblas-openmp/cblas.h zlib.h; do
  grep -qE "^ +(\.\./|$out/check/)debs-prefix/usr/include/$h\$" <<<"$deps" && ok "$h from the prefix" || bad "$h not from $p"
done
# Libraries: the build's run path points into the prefix, even without LD_LIBRARY_PATH ...
libs=$(env -u LD_LIBRARY_PATH ldd "$b/ember" 2>&1)
for l in libdnnl.so.2 libopenblas.so.0 libfmt.so.9 libstb.so.0 libtomlplusplus.so.3; do
  grep -q "$l => $p/" <<<"$libs" && ok "$l from the prefix (run path)" || bad "$l: $(grep "$l" <<<"$libs")"
done
# ... and with the LD_LIBRARY_PATH gpu-check.sh exports, their own dependencies do too.
L=$p/usr/lib/x86_64-linux-gnu
libs=$(LD_LIBRARY_PATH="$L:$L/openblas-openmp:$p/lib/x86_64-linux-gnu" ldd "$b/ember" 2>&1)
for l in libz.so.1 libOpenCL.so.1 libgfortran.so.5 libquadmath.so.0; do
  grep -q "$l => $p/" <<<"$libs" && ok "$l from the prefix (LD_LIBRARY_PATH)" || bad "$l: $(grep "$l" <<<"$libs")"
done
echo "--- gpu-check table"; tail -n 25 "$out/check.log"
exit $fail

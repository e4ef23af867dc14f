#!/usr/bin/env bash
# Fetches, with `apt-get download` (no root, nothing installed), the Debian packages the GPU check's
# fallback build needs: `scripts/gpu-check.sh --debs DIR` unpacks them there into a private prefix
# and builds ember + ember_tests when the bundle's binaries cannot start (see docs/gpu.md).
#   usage: scripts/gpu-debs.sh [DIR]      (default: <repo>/gpu-debs, git-ignored)
# Writes DIR/*.deb, DIR/data/fashion-mnist/*.gz (copied from the bundle, $BUNDLE_DIR or
# <repo>/gpu-bundle, when it has them) and DIR/DEBS.txt (package, version, size; the total).
# Left out: what the GPU machine has (compiler, libgomp, CMake, Ninja, CUDA) and what only the
# benchmarks, fuzzers and the browser test need. Fails when DIR exceeds 40 MiB.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/gpu-debs}
bundle=${BUNDLE_DIR:-$root/gpu-bundle}
limit_mib=40
die() { echo "gpu-debs: $*" >&2; exit 1; }
command -v apt-get >/dev/null || die "apt-get not found: run this on the Debian machine that builds the bundle"

# Headers, CMake configs and link-time libraries for CMakeLists.txt's find_* calls (GTest for
# ember_tests), then the runtime libraries those .so links point at, with their own dependencies
# (libdnnl2 -> libOpenCL.so.1; libopenblas0 -> libgfortran5 -> libquadmath0). libcurl4 is loaded on
# first download only, but FindCURL needs libcurl.so to resolve; its own dependencies are not carried.
dev=(libdnnl-dev zlib1g-dev libfmt-dev nlohmann-json3-dev libcli11-dev libopenblas-openmp-dev
     libcurl4-openssl-dev libstb-dev libgtest-dev libtomlplusplus-dev libturbojpeg0-dev libspng-dev libwebp-dev)
runtime=(libdnnl2 zlib1g libfmt9 libopenblas0-openmp libgfortran5 libquadmath0 libstb0
         ocl-icd-libopencl1 libcurl4 libtomlplusplus3 libturbojpeg0 libspng0 libwebp7)

rm -rf "$dir"
mkdir -p "$dir"
# apt-get download writes into the current directory; _apt cannot write into a root-owned one,
# so apt falls back to downloading unsandboxed (a warning, harmless).
(cd "$dir" && apt-get download "${dev[@]}" "${runtime[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
for p in "${dev[@]}" "${runtime[@]}"; do
  compgen -G "$dir/${p}_*.deb" >/dev/null || die "apt-get download did not fetch $p (apt-get update? the sources list?)"
done

if [[ -f $bundle/data/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  mkdir -p "$dir/data"
  cp -r "$bundle/data/fashion-mnist" "$dir/data/"
fi

{
  echo "ember GPU-check fallback packages (scripts/gpu-debs.sh), fetched $(date -u +%FT%TZ)"
  echo "from: $(. /etc/os-release && echo "$PRETTY_NAME"); the GPU machine needs glibc >= $(ldd --version | head -1 | awk '{print $NF}')"
  for f in "$dir"/*.deb; do
    printf '  %10d  %s %s\n' "$(stat -c %s "$f")" "$(dpkg-deb -f "$f" Package)" "$(dpkg-deb -f "$f" Version)"
  done
  [[ -d $dir/data ]] && printf '  %10d  data/fashion-mnist (copied from %s)\n' "$(du -sb "$dir/data" | cut -f1)" "$bundle"
  echo "  $(du -cb "$dir"/*.deb | tail -1 | cut -f1) bytes of .deb in all"
} >"$dir/DEBS.txt"
cat "$dir/DEBS.txt"
size=$(du -sb "$dir" | cut -f1)
echo "gpu-debs: $dir holds $(( size / 1024 / 1024 )) MiB ($size bytes; limit $limit_mib MiB)"
(( size <= limit_mib * 1024 * 1024 )) || die "$dir is $size bytes, over the $limit_mib MiB limit"

#!/usr/bin/env bash
# Builds the GPU check's bundle: everything `scripts/gpu-check.sh --bundle DIR` needs on a machine
# that has only glibc, the NVIDIA driver and the CUDA pip wheels (cuBLAS, cuDNN come from there).
#   usage: scripts/gpu-bundle.sh [DIR]      (default: <repo>/gpu-bundle, git-ignored)
# Builds a CUDA Release tree (SASS sm_90 + PTX, $BUILD_DIR or <repo>/build-bundle), then writes
#   DIR/payload.tar.xz   bin/ember, bin/ember_tests, lib/ (libember and every shared library they
#                        load per ldd, except glibc's own and the CUDA libraries; run path $ORIGIN),
#                        golden/*.bin (the test binary reads ./golden/ from the unpacked root)
#   DIR/data/fashion-mnist/*.gz   the whole test set and the first 20,000 training images (IDX, gzip)
#   DIR/MANIFEST.txt     commit, date, architectures, what is inside and its sizes
# Fails when DIR exceeds 40 MiB (the tree that travels to the GPU machine must stay under 64 MiB).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$root/gpu-bundle}
build=${BUILD_DIR:-$root/build-bundle}
jobs=${JOBS:-$(nproc)}
limit_mib=40
archs=${EMBER_CUDA_ARCHS:-"90-real;90-virtual"}
fmnist=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

die() { echo "gpu-bundle: $*" >&2; exit 1; }
command -v patchelf >/dev/null || die "patchelf not found: apt-get install patchelf (scripts/setup.sh installs it)"
command -v xz >/dev/null || die "xz not found: apt-get install xz-utils"
[[ -f $fmnist/train-images-idx3-ubyte.gz ]] || die "no Fashion-MNIST in $fmnist: apt-get install dataset-fashion-mnist"

# ---- build (CUDA, Release; EMBER_TEST_DATA_DIR=. so the test binary finds ./golden where it runs) ----
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_BENCH=OFF \
  "-DEMBER_CUDA_ARCHS=$archs" -DEMBER_TEST_DATA_DIR=. >/dev/null
cmake --build "$build" -j "$jobs" --target ember_cli ember_tests

# ---- stage: binaries, their libraries, golden files ----
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/golden"
cp "$build/ember" "$build/tests/ember_tests" "$stage/bin/"
cp -L "$build/libember.so.0" "$stage/lib/"
# Every library ldd resolves, except glibc's own (the machine's glibc must be used) and the CUDA
# libraries (the GPU machine's driver and wheels provide them; none is linked, see CMakeLists.txt).
glibc='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|libBrokenLocale|ld-linux-x86-64)\.so'
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn.*|libnccl|libnvrtc.*|libnvJitLink)\.so'
for f in "$stage/bin/ember" "$stage/bin/ember_tests" "$stage/lib/libember.so.0"; do
  LD_LIBRARY_PATH="$stage/lib" ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $glibc || $name =~ $cuda || $name == libember.so.0 ]] && continue
  cp -L "$path" "$stage/lib/$name"
done
if LD_LIBRARY_PATH="$stage/lib" ldd "$stage/bin/ember" "$stage/bin/ember_tests" | grep -q "not found"; then
  die "a library is not found: $(LD_LIBRARY_PATH="$stage/lib" ldd "$stage/bin/ember" "$stage/bin/ember_tests" | grep 'not found')"
fi
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* 2>/dev/null || true
for f in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$stage"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
cp "$root"/tests/golden/*.bin "$stage/golden/"

# ---- write DIR ----
rm -rf "$dir"
mkdir -p "$dir/data/fashion-mnist"
tar -C "$stage" -cf - bin lib golden | xz -T"$jobs" -6 >"$dir/payload.tar.xz"
cp "$fmnist/t10k-images-idx3-ubyte.gz" "$fmnist/t10k-labels-idx1-ubyte.gz" "$dir/data/fashion-mnist/"
python3 - "$fmnist" "$dir/data/fashion-mnist" 20000 <<'PY'
# The first N training images and labels, as IDX files with the count in the header rewritten.
import gzip, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, item in (("train-images-idx3-ubyte", 28 * 28), ("train-labels-idx1-ubyte", 1)):
    raw = gzip.open(f"{src}/{name}.gz").read()
    magic, count = struct.unpack(">II", raw[:8])
    header = 16 if magic == 0x803 else 8
    assert count >= n, f"{name}: only {count} items"
    out = raw[:4] + struct.pack(">I", n) + raw[8:header] + raw[header:header + n * item]
    with open(f"{dst}/{name}.gz", "wb") as f:
        f.write(gzip.compress(out, compresslevel=9, mtime=0))
PY
{
  echo "ember GPU-check bundle"
  echo "commit: $(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%FT%TZ) on $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | head -1 | awk '{print $NF}')"
  echo "cuda architectures: $archs"
  echo "needs on the GPU machine: glibc >= $(ldd --version | head -1 | awk '{print $NF}'), the NVIDIA driver, cuBLAS/cuDNN (pip wheels)"
  echo "payload.tar.xz:"
  tar -tvJf "$dir/payload.tar.xz" | awk '{printf "  %10d  %s\n", $3, $6}'
  echo "data/fashion-mnist: test set (10,000) and the first 20,000 training images"
} >"$dir/MANIFEST.txt"

size=$(du -sb "$dir" | cut -f1)
echo "gpu-bundle: $dir holds $(( size / 1024 / 1024 )) MiB ($size bytes; limit $limit_mib MiB)"
(( size <= limit_mib * 1024 * 1024 )) || die "$dir is $size bytes, over the $limit_mib MiB limit"

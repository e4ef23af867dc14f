#!/usr/bin/env bash
# Builds the GPU check's bundle: everything `scripts/gpu-check.sh --bundle DIR` needs on a machine
# that has only glibc, the NVIDIA driver and the CUDA pip wheels (cuBLAS, cuDNN come from there).
#   usage: scripts/gpu-bundle.sh [DIR]      (default: <repo>/gpu-bundle, git-ignored)
# Builds a CUDA Release tree (SASS sm_90 + PTX, $BUILD_DIR or <repo>/build-bundle), then writes
#   DIR/payload.tar.xz   bin/ember, bin/ember_tests, lib/ (libember and every shared library they
#                        load per ldd, except glibc's own and the CUDA libraries; run path $ORIGIN),
#                        golden/ops_v1.bin, ops_tensor_v1.bin, ops_nn2_v1.bin, fixtures/pth, fixtures/doctor (the test binary reads golden/ beside its bin/,
#                        tests/support/test_data.h; so does one packed --from-build, whose configured
#                        data folder is an absolute path of the build machine)
#   DIR/cxx-runtime.tar.xz   lib/libstdc++.so.6, lib/libgcc_s.so.1, only while DIR stays under 40 MiB
#   DIR/data/fashion-mnist/*.gz   the whole test set and the first 20,000 training images (IDX, gzip)
#   DIR/MANIFEST.txt     commit, date, architectures, what is inside and its sizes
# Fails when DIR exceeds 40 MiB (the tree that travels to the GPU machine must stay under 64 MiB).
set -euo pipefail
shopt -s nullglob

root=$(cd "$(dirname "$0")/.." && pwd)
from_build="" root_only=""
while [[ ${1:-} == --* ]]; do
  case $1 in
    --from-build) from_build=$(cd "$2" && pwd); shift 2 ;;  # pack an existing CUDA build tree, build nothing
    --root-only) root_only=$2; shift 2 ;;  # write the unpacked payload (bin, lib, golden) there and stop
    *) echo "usage: $0 [--from-build BUILD] [--root-only ROOTDIR] [DIR]" >&2; exit 2 ;;
  esac
done
dir=${1:-$root/gpu-bundle}
build=${from_build:-${BUILD_DIR:-$root/build-bundle}}
jobs=${JOBS:-$(nproc)}
limit_mib=40
archs=${EMBER_CUDA_ARCHS:-"90-real;90-virtual"}
fmnist=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}

die() { echo "gpu-bundle: $*" >&2; exit 1; }
command -v patchelf >/dev/null || die "patchelf not found: apt-get install patchelf (scripts/setup.sh installs it)"
if [[ -z $root_only ]]; then
  command -v xz >/dev/null || die "xz not found: apt-get install xz-utils"
  [[ -f $fmnist/train-images-idx3-ubyte.gz ]] || die "no Fashion-MNIST in $fmnist: apt-get install dataset-fashion-mnist"
fi

# ---- build (CUDA, Release; EMBER_TEST_DATA_DIR=. so the test binary finds ./golden where it runs) ----
if [[ -z $from_build ]]; then
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_BENCH=OFF \
    "-DEMBER_CUDA_ARCHS=$archs" -DEMBER_TEST_DATA_DIR=. >/dev/null
  cmake --build "$build" -j "$jobs" --target ember_cli ember_tests
fi
[[ -x $build/ember && -x $build/tests/ember_tests ]] || die "$build has no ember and tests/ember_tests (a CUDA build tree?)"

# ---- stage: binaries, their libraries, golden files ----
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/golden"
cp "$build/ember" "$build/tests/ember_tests" "$stage/bin/"
cp -L "$build/libember.so.0" "$stage/lib/"
# Every library ldd resolves, except glibc's own (the machine's glibc must be used) and the CUDA
# libraries (the GPU machine's driver and wheels provide them; none is linked, see CMakeLists.txt).
glibc='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|libBrokenLocale|ld-linux-x86-64)\.so'
# The C++ runtime goes into its own archive, kept only while the bundle stays under the limit (the
# GPU machine has a libstdc++ too; ours is GCC 12's, GLIBCXX_3.4.30).
cxxrt='^(libstdc\+\+|libgcc_s)\.so'
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn.*|libnccl|libnvrtc.*|libnvJitLink)\.so'
for f in "$stage/bin/ember" "$stage/bin/ember_tests" "$stage/lib/libember.so.0"; do
  LD_LIBRARY_PATH="$stage/lib" ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $glibc || $name =~ $cuda || $name == libember.so.0 ]] && continue
  if [[ $name =~ $cxxrt ]]; then mkdir -p "$stage/cxx/lib" && cp -L "$path" "$stage/cxx/lib/$name"; continue; fi
  cp -L "$path" "$stage/lib/$name"
done
# OpenBLAS: the OpenMP build whenever it is installed, whichever build the libopenblas.so.0
# alternative points at (issue 22). ember runs alike on every build (src/cpu/gemm.cpp), but the
# OpenMP one starts no thread pool of its own beside ember's OpenMP threads on the GPU machine.
openmp_blas=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)/openblas-openmp/libopenblas.so.0
if [[ -e $stage/lib/libopenblas.so.0 && -e $openmp_blas ]]; then cp -L "$openmp_blas" "$stage/lib/libopenblas.so.0"; fi
missing=$(LD_LIBRARY_PATH="$stage/lib:$stage/cxx/lib" ldd "$stage/bin/ember" "$stage/bin/ember_tests" | grep "not found" || true)
[[ -z $missing ]] || die "a library is not found: $missing"
strip --strip-unneeded "$stage"/bin/* "$stage"/lib/*.so* "$stage"/cxx/lib/*.so* 2>/dev/null || true
for f in "$stage"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$stage"/lib/*.so* "$stage"/cxx/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$f"; done
# The op golden file only: the whole-model ones (models_v1.bin, models_bf16_v1.bin; mnistnet's fc1
# makes them 12.6 MB of xz) would push the bundle over its limit; the GPU check runs the CPU suite
# with EMBER_GOLDEN_LEFT_OUT=1, which skips their tests with the reason (CI runs them).
cp "$root"/tests/golden/ops_v1.bin "$stage/golden/"
# The tensor ops' PyTorch values (tests/harness/ops_tensor.cpp's Golden tests): ~100 KB.
cp "$root"/tests/golden/ops_tensor_v1.bin "$stage/golden/"
# The rest of nn.functional, the optimizers' trajectories and the schedules' lrs (ops_nn2.cpp,
# test_optim_more.cpp, test_optim_lr_schedulers_more.cpp): ~200 KB.
cp "$root"/tests/golden/ops_nn2_v1.bin "$stage/golden/"
# torchvision's transforms on hashed pictures (test_data_photo_transforms.cpp): ~600 KB.
cp "$root"/tests/golden/photo_v1.bin "$stage/golden/"
# torchvision's augmentations on hashed pictures (test_data_photo_augment.cpp): ~1 MB.
cp "$root"/tests/golden/augment_v1.bin "$stage/golden/"
# The .pth reader's torch.save fixtures (test_io_pth.cpp reads ./fixtures/pth): ~40 KB.
mkdir -p "$stage/fixtures/pth"
cp "$root"/tests/fixtures/pth/*.pth "$root"/tests/fixtures/pth/*.safetensors "$stage/fixtures/pth/"
# The doctor's replay of the H200 run (test_doctor_advice.cpp reads ./fixtures/doctor): ~16 KB.
mkdir -p "$stage/fixtures/doctor"
cp "$root"/tests/fixtures/doctor/*.json "$stage/fixtures/doctor/"
# The image decoders' fixtures and Pillow's pixels for them (test_data_decode.cpp): ~65 KB.
mkdir -p "$stage/fixtures/images"
find "$root"/tests/fixtures/images -maxdepth 1 -type f ! -name '*.py' -exec cp {} "$stage/fixtures/images/" \;
if [[ -n $root_only ]]; then
  mkdir -p "$root_only"
  cp -a "$stage"/bin "$stage"/lib "$stage"/golden "$stage"/fixtures "$root_only"/
  [[ -d $stage/cxx/lib ]] && cp -a "$stage"/cxx/lib/. "$root_only"/lib/
  echo "gpu-bundle: unpacked payload written to $root_only"
  exit 0
fi

# ---- write DIR ----
rm -rf "$dir"
mkdir -p "$dir/data/fashion-mnist"
tar -C "$stage" -cf - bin lib golden fixtures | xz -T"$jobs" -6 >"$dir/payload.tar.xz"
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
if [[ -d $stage/cxx/lib ]]; then
  tar -C "$stage/cxx" -cf - lib | xz -T"$jobs" -6 >"$dir/cxx-runtime.tar.xz"
  if (( $(du -sb "$dir" | cut -f1) > limit_mib * 1024 * 1024 )); then
    rm "$dir/cxx-runtime.tar.xz"
    echo "cxx-runtime.tar.xz: left out (over the limit); the GPU machine's libstdc++ must provide GLIBCXX_3.4.30" >>"$dir/MANIFEST.txt"
    echo "gpu-bundle: left the C++ runtime out (the bundle would exceed $limit_mib MiB)" >&2
  else
    { echo "cxx-runtime.tar.xz (unpacked over the payload's root):"; tar -tvJf "$dir/cxx-runtime.tar.xz" | awk '{printf "  %10d  %s\n", $3, $6}'; } >>"$dir/MANIFEST.txt"
  fi
  size=$(du -sb "$dir" | cut -f1)
fi
echo "gpu-bundle: $dir holds $(( size / 1024 / 1024 )) MiB ($size bytes; limit $limit_mib MiB)"
(( size <= limit_mib * 1024 * 1024 )) || die "$dir is $size bytes, over the $limit_mib MiB limit"

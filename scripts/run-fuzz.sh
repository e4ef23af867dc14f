#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ into build-fuzz/ (clang++-14, ASan + UBSan), writes a small
# seed corpus of valid files, and runs each target for SECONDS seconds. Exits non-zero on any crash,
# sanitizer report or leak; the crashing input is left in build-fuzz/artifacts/<target>/.
#   usage: scripts/run-fuzz.sh SECONDS        (CXX_FUZZ=clang++-15 to pick another clang)
set -euo pipefail

secs=${1:?usage: scripts/run-fuzz.sh SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
cxx=${CXX_FUZZ:-clang++-14}

gen=()
if [[ ! -f $build/CMakeCache.txt ]] && command -v ninja >/dev/null; then gen=(-G Ninja); fi
cmake -S "$root/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" "${gen[@]}" >/dev/null
cmake --build "$build" -j2

# Seeds: valid IDX files (plain, gzip, two gzip members) and valid CIFAR-10/100 records.
python3 - "$build/seeds" <<'PY'
import gzip, os, struct, sys
out = sys.argv[1]
def idx(dims, payload=None):
    n = 1
    for d in dims: n *= d
    payload = bytes(i % 256 for i in range(n)) if payload is None else payload
    return bytes([0, 0, 8, len(dims)]) + b"".join(struct.pack(">I", d) for d in dims) + payload
def put(target, name, data):
    os.makedirs(os.path.join(out, target), exist_ok=True)
    with open(os.path.join(out, target, name), "wb") as f: f.write(data)
images, labels = idx([3, 4, 4]), idx([3], bytes([0, 9, 5]))
put("fuzz_idx", "images-idx3", images)
put("fuzz_idx", "labels-idx1", labels)
put("fuzz_idx", "idx4", idx([1, 2, 2, 3]))
put("fuzz_idx", "empty-set-idx3", idx([0, 28, 28]))
put("fuzz_idx", "images-idx3.gz", gzip.compress(images, mtime=0))
put("fuzz_idx", "labels-idx1.gz", gzip.compress(labels, mtime=0))
put("fuzz_idx", "two-members.gz", gzip.compress(images[:7], mtime=0) + gzip.compress(images[7:], mtime=0))
rec10 = lambda label: bytes([label]) + bytes(i % 251 for i in range(3072))
rec100 = lambda coarse, fine: bytes([coarse, fine]) + bytes(i % 241 for i in range(3072))
put("fuzz_cifar", "cifar10-2", rec10(3) + rec10(9))
put("fuzz_cifar", "cifar100-2", rec100(19, 99) + rec100(0, 5))
# CIFAR pickled batches as NumPy pickles an array: protocol 4 (_reconstruct + BUILD) and protocol 5
# (_frombuffer + BYTEARRAY8); written by hand, so no NumPy is needed here.
def su(s): b = s.encode(); return b"\x8c" + bytes([len(b)]) + b
def sg(m, n): return su(m) + su(n) + b"\x93"
dtype = sg("numpy", "dtype") + su("u1") + b"\x89\x88\x87R(K\x03" + su("|") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
pixels = bytes(i % 251 for i in range(3072))
shape = b"(K\x01M\x00\x0ct"
arr4 = (sg("numpy._core.multiarray", "_reconstruct") + sg("numpy", "ndarray") + b"K\x00\x85C\x01b\x87R(K\x01" + shape
        + dtype + b"\x89B" + struct.pack("<I", len(pixels)) + pixels + b"tb")
arr5 = (sg("numpy._core.numeric", "_frombuffer") + b"(\x96" + struct.pack("<Q", len(pixels)) + pixels + dtype + shape
        + su("C") + b"tR")
for name, proto, arr in (("batch-p4", 4, arr4), ("batch-p5", 5, arr5)):
    put("fuzz_cifar_pickle", name, b"\x80" + bytes([proto]) + b"}(" + su("data") + arr + su("labels") + b"](K\x07eu.")
put("fuzz_cifar_pickle", "meta", b"\x80\x04}" + su("label_names") + b"](" + su("cat") + su("dog") + b"es.")
# A two-picture photo cache (photo_cache.h's layout: a raw 2x1 RGB picture and 4 bytes of "JPEG"),
# behind the target's first byte: 1 = the target appends the footer itself, 0 = the whole file.
import hashlib, json
data = bytes(range(6)) + b"\xff\xd8\xff\xd9"
meta = json.dumps({"classes": ["cat", "dog"], "max_side": 256, "encoding": "jpeg"}).encode()
index_off = 64 + len(data)
index = struct.pack("<QIIIIII", 64, 6, 0, 2, 1, 1, 0) + struct.pack("<QIIIIII", 70, 4, 1, 1, 1, 0, 0)
meta_off = index_off + len(index)
head = b"EMBDSET1" + struct.pack("<IIQQQQQQ", 1, 0, 2, 64, index_off, meta_off, len(meta), 0)
body = head + data + index + meta
put("fuzz_photo_cache", "two-pictures", b"\x01" + body)
put("fuzz_photo_cache", "two-pictures-whole", b"\x00" + body + b"EMBDSEND" + hashlib.sha256(body).digest())
PY

# fuzz_pth: the small torch.save fixtures (zip, zip64 end records, legacy stream, views, hostile).
mkdir -p "$build/seeds/fuzz_pth"
for f in views.pth views_legacy.pth dtypes.pth hostile_os_system.pth; do
  cp "$root/tests/fixtures/pth/$f" "$build/seeds/fuzz_pth/"
done

# fuzz_decode: the image fixtures, each behind the options byte the target reads first (RGB, EXIF
# applied, full size).
mkdir -p "$build/seeds/fuzz_decode"
for f in "$root"/tests/fixtures/images/*.{jpg,png,webp,bmp,gif,tga,ppm,pgm}; do
  { printf '\x02'; cat "$f"; } >"$build/seeds/fuzz_decode/$(basename "$f")"
done

failed=0
summary=()
for t in fuzz_idx fuzz_cifar fuzz_cifar_pickle fuzz_safetensors fuzz_pth fuzz_decode fuzz_photo_cache; do
  corpus=$build/corpus/$t
  mkdir -p "$corpus" "$build/artifacts/$t"
  echo "== $t: ${secs}s"
  set +e
  extra=("$build/seeds/$t")
  if [[ $t == fuzz_safetensors ]]; then
    extra=("$root/fuzz/safetensors/seeds" -dict="$root/fuzz/safetensors/safetensors.dict" -max_len=4096)
  elif [[ $t == fuzz_pth ]]; then
    extra=("$build/seeds/fuzz_pth" -dict="$root/fuzz/pth/pth.dict" -max_len=4096)
  elif [[ $t == fuzz_decode ]]; then
    extra=("$build/seeds/fuzz_decode" -max_len=16384 -rss_limit_mb=2048)
  fi
  "$build/$t" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$build/artifacts/$t/" \
    "$corpus" "${extra[@]}" >"$build/$t.log" 2>&1
  rc=$?
  set -e
  execs=$(grep -m1 'stat::number_of_executed_units' "$build/$t.log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+.*(DONE|cov:)' "$build/$t.log" | tail -1 | grep -o 'cov: [0-9]*' || true)
  if [[ $rc -ne 0 ]]; then
    failed=1
    tail -40 "$build/$t.log"
    summary+=("$t: FAILED (exit $rc), see $build/$t.log and $build/artifacts/$t/")
  else
    summary+=("$t: ok, ${execs:-?} executions in ${secs}s, ${cov:-cov: ?}, corpus $(ls "$corpus" | wc -l) files")
  fi
done
printf '%s\n' "${summary[@]}"
exit $failed

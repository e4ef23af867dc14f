#!/usr/bin/env bash
# The GPU check's dry run on a machine without a GPU (issue 23; scripts/test.sh runs it on the bundle
# packed from its CUDA build). What a lent GPU machine returns is only stdout's last 12,000 characters
# and at most 8 files (<= 16 MiB, plain names) under $OUT, so this checks exactly that:
#  1. `OUT=$(mktemp -d) scripts/gpu-check.sh --bundle BUNDLE` with EMBER_GPU_CHECK_FAKE_FAIL=1, in a
#     private mount namespace where the source tree's tests/ is an empty tmpfs (so the bundle's tests
#     must find golden/ and fixtures/ in the bundle, not at the build's absolute path): exit 1; in
#     $OUT at most 8 plain files, each under 16 MiB, summary.json and one logs archive among them,
#     the archive holding logs and JSON only; every CPU-side step PASS (the op golden tests ran from
#     the bundle's golden/), every GPU step SKIP, fake_fail FAIL; stdout's last 12,000 characters
#     hold the table and the failure digest with fake_fail's failing test names and assertion lines.
#  2. no false PASS: a fake nvidia-smi that lists an H200 on PATH, where ember sees no driver: every
#     GPU step FAILs with ember's reason (the doctor's "no NVIDIA driver found", or — where the PCI bus
#     shows no NVIDIA device, as on a CPU machine — "no NVIDIA GPU in this machine").
#   usage: run_gpu_check_dry_run.sh REPO BUNDLE_DIR [WORK_DIR]
# Exit: 0 pass, 1 fail. Prints how long each run took.
set -uo pipefail
repo=$(cd "$1" && pwd) bundle=$(cd "$2" && pwd)
work=${3:-$(mktemp -d /tmp/gpu-check-dry-run.XXXXXX)}
rm -rf "$work" && mkdir -p "$work"
work=$(cd "$work" && pwd)  # absolute: gpu-check.sh names $OUT by its absolute path
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }

# ---- 1: the full dry run, a fake failing step, the source tree's tests/ hidden ----------------------
out1=$work/out1
mkdir -p "$out1"
hide=()
if [[ $(id -u) == 0 ]]; then ns=(unshare -m); else ns=(unshare -rm); fi
if "${ns[@]}" true 2>/dev/null; then
  hide=("${ns[@]}" sh -c 'mount -t tmpfs ember-tests-hidden "$0/tests" && exec "$@"' "$repo")
else
  echo "note: no private mount namespace here (${ns[*]} failed): the source tree's tests/ stays visible"
fi
t0=$(date +%s)
OUT=$out1 EMBER_GPU_CHECK_FAKE_FAIL=1 EMBER_GPU_CHECK_WORK=$work/check1 JOBS=${JOBS:-$(nproc)} \
  "${hide[@]}" "$repo/scripts/gpu-check.sh" --bundle "$bundle" >"$work/stdout1.txt" 2>&1
rc=$?
echo "dry run 1 (fake failing step): exit $rc in $(( $(date +%s) - t0 )) s"
tail -c 12000 "$work/stdout1.txt" >"$work/tail1.txt"
(( rc == 1 )) && ok "exit 1 (fake_fail failed)" || bad "exit $rc, expected 1 (fake_fail must fail)"

n=$(find "$out1" -mindepth 1 | wc -l)
(( n >= 2 && n <= 8 )) && ok "$n files in \$OUT" || bad "$n entries in \$OUT, expected 2..8: $(ls -A "$out1")"
while IFS= read -r f; do
  b=${f#"$out1"/}
  [[ -f $f && ! -L $f ]] || bad "$b is not a plain file"
  [[ $b =~ ^[A-Za-z0-9._-]+$ ]] || bad "$b: a name the pipe does not carry (or in a sub-folder)"
  s=$(stat -c %s "$f")
  (( s > 0 && s <= 16 * 1024 * 1024 )) || bad "$b is $s bytes (1 .. 16 MiB)"
done < <(find "$out1" -mindepth 1)
[[ -f $out1/summary.json ]] || bad "no summary.json"
archive=$(ls "$out1"/logs.tar.* 2>/dev/null | head -1)
if [[ -z $archive ]]; then
  bad "no logs.tar.xz / logs.tar.gz"
else
  members=$(tar -tf "$archive")
  grep -qx 'logs/cpu_tests.shard0.log' <<<"$members" && grep -qx 'logs/doctor.json' <<<"$members" \
    && ok "$(basename "$archive"): $(grep -vc '/$' <<<"$members") files, $(stat -c %s "$archive") bytes" \
    || bad "$(basename "$archive") lacks logs/cpu_tests.shard0.log or logs/doctor.json"
  others=$(grep -v '/$' <<<"$members" | grep -Ev '\.(log|json|jsonl|tsv|txt)$' || true)
  [[ -z $others ]] || bad "the archive holds more than logs and JSON: $others"
  mkdir -p "$work/unpacked" && tar -C "$work/unpacked" -xf "$archive"
  elf=$(find "$work/unpacked" -type f -exec sh -c 'head -c 4 "$1" | grep -q "ELF" && echo "$1"' _ {} \; )
  [[ -z $elf ]] || bad "binaries in the archive: $elf"
fi

python3 - "$out1/summary.json" "$work/unpacked/logs" <<'PY' || fail=1
import glob, json, sys
s = json.load(open(sys.argv[1]))
st = {x["step"]: x for x in s["steps"]}
bad = []
for name in ("unpack", "libraries", "version", "doctor_json", "train_cpu_smoke", "cpu_tests", "results"):
    if st.get(name, {}).get("status") != "PASS":
        bad.append("{} is {} (want PASS): {}".format(name, st.get(name, {}).get("status"), st.get(name, {}).get("reason")))
if st.get("fake_fail", {}).get("status") != "FAIL":
    bad.append("fake_fail is {} (want FAIL)".format(st.get("fake_fail", {}).get("status")))
for name in ("gpu_tests_blocking", "gpu_tests", "sanitizer", "bench_train", "bench_train_resnet18_224", "train_gpu"):
    if st.get(name, {}).get("status") != "SKIP":
        bad.append("{} is {} (want SKIP without a GPU)".format(name, st.get(name, {}).get("status")))
for x in s["steps"]:
    if x["status"] not in ("PASS", "FAIL", "SKIP") or not isinstance(x["seconds"], int):
        bad.append("step {} has status {!r}, seconds {!r}".format(x["step"], x["status"], x["seconds"]))
fig = st.get("cpu_tests", {}).get("figures") or {}
if not fig.get("tests") or fig.get("failed") != 0:
    bad.append("cpu_tests figures: {}".format(fig))
# The op golden tests ran (not skipped) from the bundle's golden/: tests/ was hidden.
golden = [t for f in glob.glob(sys.argv[2] + "/cpu_tests.shard*.json") for suite in json.load(open(f))["testsuites"]
          for t in suite["testsuite"] if suite["name"].startswith("Ops/") and t["name"] == "Golden"]
ran = [t for t in golden if t.get("result") == "COMPLETED" and not t.get("failures")]
if not ran:
    bad.append("no op golden test ran and passed in cpu_tests ({} found)".format(len(golden)))
for b in bad:
    print("FAIL: summary.json: " + b)
print("ok: summary.json: {} steps, {} op golden tests passed from the bundle".format(len(s["steps"]), len(ran)) if not bad else "")
sys.exit(1 if bad else 0)
PY

# The end of stdout, as the pipe returns it: the table, the digest with the failing tests' names and
# their assertion lines.
for want in "STEP" "FAILURE DIGEST" "## fake_fail: FAIL" "[FAILED] GoldenFile." "nonexistent-ember-test-data" \
            "END OF DIGEST" "cpu_tests" "results in $out1"; do
  grep -qF -- "$want" "$work/tail1.txt" && ok "stdout's last 12,000 characters hold '$want'" \
    || bad "stdout's last 12,000 characters lack '$want'"
done
d0=$(grep -n 'FAILURE DIGEST (' "$work/tail1.txt" | head -1 | cut -d: -f1)
[[ -n $d0 ]] && grep -n '^STEP ' "$work/tail1.txt" | head -1 | grep -q . \
  && ok "table and digest: $(wc -c <"$work/tail1.txt") characters of the tail" || true

# ---- 2: no false PASS: nvidia-smi lists a GPU that ember cannot use ----------------------------------
mkdir -p "$work/fake-bin" "$work/out2"
cat >"$work/fake-bin/nvidia-smi" <<'SH'
#!/bin/sh
# A stand-in for a machine whose nvidia-smi sees a card that ember cannot use (here: no libcuda).
case "$*" in
  *-L*) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-0000-0000-000000000000)" ;;
  *compute_cap*noheader*) echo "9.0" ;;
  *) echo "name, driver_version, memory.total [MiB], compute_cap"; echo "NVIDIA H200, 580.159.03, 143771 MiB, 9.0" ;;
esac
SH
chmod +x "$work/fake-bin/nvidia-smi"
t0=$(date +%s)
PATH=$work/fake-bin:$PATH OUT=$work/out2 CPU_TESTS_FILTER='Doctor.*' EMBER_GPU_CHECK_WORK=$work/check2 \
  "$repo/scripts/gpu-check.sh" --bundle "$bundle" >"$work/stdout2.txt" 2>&1
rc=$?
echo "dry run 2 (a GPU that ember cannot use): exit $rc in $(( $(date +%s) - t0 )) s"
(( rc == 1 )) && ok "exit 1" || bad "exit $rc, expected 1"
python3 - "$work/out2/summary.json" <<'PY' || fail=1
import json, sys
s = json.load(open(sys.argv[1]))
gpu = ("gpu_tests_blocking", "gpu_tests", "sanitizer", "doctor", "doctor_smoke", "bench_matmul", "bench_bandwidth", "bench_train",
       "bench_train_resnet18_224", "train_gpu", "torch_side")
st = {x["step"]: x for x in s["steps"]}
bad = ["{} is {}: {}".format(n, st.get(n, {}).get("status"), st.get(n, {}).get("reason")) for n in gpu
       if st.get(n, {}).get("status") != "FAIL" or "ember cannot use one" not in st[n]["reason"]
       or not any(w in st[n]["reason"] for w in ("no NVIDIA driver found", "no NVIDIA GPU in this machine"))]
for b in bad:
    print("FAIL: no false PASS: " + b)
if not bad:
    print("ok: every GPU step FAILs with ember's reason: " + st["gpu_tests"]["reason"][:160])
sys.exit(1 if bad else 0)
PY
grep -qF "[FAILED]" "$work/stdout2.txt" && bad "dry run 2 digest names failing tests (none should fail)" || true
grep -qE "^## gpu_tests_blocking, gpu_tests, .*: FAIL \(nvidia-smi lists 1 GPU" "$work/stdout2.txt" \
  && ok "dry run 2 digest names the GPU steps once, with the reason" \
  || bad "dry run 2 digest lacks gpu_tests"

(( fail == 0 )) && { echo "PASS: the GPU check's dry run (work folder $work)"; rm -rf "$work/check1/bundle-root" "$work/check2/bundle-root" "$work/unpacked"; }
exit $fail

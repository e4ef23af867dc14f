#!/usr/bin/env bash
# The GPU bundle is self-contained: stage the bundle's payload from this CUDA build tree
# (scripts/gpu-bundle.sh --from-build --root-only: the same library collection and $ORIGIN run
# paths as the real bundle), put it in a root that holds nothing else but glibc's own libraries,
# libstdc++ and libgcc_s, and run `ember --version`, `ember doctor --json` and
# `ember_tests --gtest_list_tests` chrooted there, and the golden/fixture tests that read the bundle's own data (a private mount namespace bind-mounts /proc,
# which ld.so needs to expand $ORIGIN). A library missing from the bundle fails this test.
#   usage: run_bundle_test.sh REPO BUILD_DIR WORK_DIR
#   EMBER_BUNDLE_TEST_DROP=libfmt.so.9 deletes that library from the staged bundle (the test must fail).
# Exit: 0 pass, 1 fail, 77 skipped (no way to make a private mount namespace here).
set -euo pipefail
repo=$1 build=$2 work=$3
rm -rf "$work"
root=$work/root
mkdir -p "$root/proc" "$root/tmp"

"$repo/scripts/gpu-bundle.sh" --from-build "$build" --root-only "$root/bundle" >"$work/stage.log" 2>&1 ||
  { cat "$work/stage.log"; echo "FAIL: staging the bundle failed"; exit 1; }
if [[ -n ${EMBER_BUNDLE_TEST_DROP:-} ]]; then
  rm -v "$root/bundle/lib/$EMBER_BUNDLE_TEST_DROP"
fi

# glibc's own libraries (what the bundle deliberately leaves to the machine), plus the C++ runtime.
glibc='^(libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|ld-linux-x86-64)\.so'
for f in "$build/ember" "$build/tests/ember_tests"; do ldd "$f"; done | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// {print $1, $1}' |
  sort -u | while read -r name path; do
    base=$(basename "$name")
    [[ $base =~ $glibc || $base =~ ^(libstdc\+\+|libgcc_s)\.so ]] || continue
    mkdir -p "$root$(dirname "$path")"
    cp -L "$path" "$root$path"
  done
echo "root: $(cd "$root" && find . -type f | grep -v '^./bundle/' | sort | tr '\n' ' ')"

# in_root CMD...: runs CMD chrooted in $root, in a private mount namespace with /proc bound.
if [[ $(id -u) == 0 ]]; then ns=(unshare -m); else ns=(unshare -rm); fi
if ! "${ns[@]}" true 2>/dev/null; then
  echo "SKIP: cannot create a mount namespace here (${ns[*]} failed)"
  exit 77
fi
in_root() { "${ns[@]}" sh -c 'mount --bind /proc "$0/proc" && exec chroot "$0" "$@"' "$root" "$@"; }

fail=0
check() {  # check NAME EXPECTED_SUBSTRING CMD...
  local name=$1 want=$2; shift 2
  local out rc=0
  out=$(in_root "$@" 2>&1) || rc=$?
  if (( rc != 0 )) || [[ $out != *"$want"* ]]; then
    echo "FAIL: $name (exit $rc)"; echo "$out" | tail -n 20; fail=1
  else
    echo "PASS: $name"
  fi
}
check "ember --version" "ember " /bundle/bin/ember --version
check "ember doctor --json" '"verdict"' /bundle/bin/ember doctor --json
check "ember_tests --gtest_list_tests" "DoctorProbe." /bundle/bin/ember_tests --gtest_list_tests
# The golden data comes from the bundle (golden/ beside bin/, tests/support/test_data.h), not from the
# absolute path the build was configured with: that path does not exist in the root.
check "ember_tests reads the bundle's golden/ and fixtures/" "[  PASSED  ]" /bundle/bin/ember_tests \
  --gtest_filter='GoldenFile.OpsFile*:Ops/Conv2d.Golden:Ops/Matmul.Golden:PthFixtures.*'
exit $fail

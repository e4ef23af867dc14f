#!/usr/bin/env bash
# The wheel on a bare machine: a minimal Debian 12 root (debootstrap --variant=minbase) with only
# python3 and python3-venv added — no compiler, no -dev package, no scripts/setup.sh — gets the
# wheel, `python3 -m venv /v && /v/bin/pip install ember-*.whl` (numpy and pillow from PyPI), and
# runs tests/wheel/bare_root_smoke.py there: import, ember.nn + ember.optim training whose loss falls,
# ember.fit on a synthetic dataset, ember.doctor().
#   usage: scripts/test-wheel-bare-root.sh WHEEL
# Needs root (chroot, mounts). The root is built once and kept as a tarball in
# $EMBER_BARE_ROOT_CACHE (default <repo>/.cache/bare-root) so reruns take seconds. Without root,
# debootstrap, the Debian mirror or PyPI it says SKIP with the reason and exits 0; a failure inside
# the root fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[[ $# -eq 1 && -f $1 ]] || { echo "usage: $0 WHEEL (an ember-*.whl file)" >&2; exit 2; }
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
mirror=${EMBER_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${EMBER_BARE_ROOT_CACHE:-$root/.cache/bare-root}
tarball=$cache/bookworm-minbase-python3.tar
skip() { echo "SKIP: the bare-root wheel test: $*"; exit 0; }

[[ $(id -u) -eq 0 ]] || skip "needs root (chroot and mounts); run it as root, as CI does"
command -v chroot >/dev/null || skip "no chroot command"

dir=$(mktemp -d /tmp/ember-bare-root.XXXXXX)
cleanup() {
  for m in dev/pts dev proc; do mountpoint -q "$dir/$m" 2>/dev/null && umount -l "$dir/$m"; done
  rm -rf --one-file-system "$dir"
}
trap cleanup EXIT

if [[ ! -f $tarball ]]; then
  command -v debootstrap >/dev/null || skip "debootstrap is not installed (apt-get install debootstrap; scripts/setup.sh installs it)"
  echo "== debootstrap --variant=minbase --include=python3,python3-venv bookworm ($mirror)"
  # python3 and python3-venv only, from the mirror, as `apt-get install python3 python3-venv` would.
  if ! debootstrap --variant=minbase --include=python3,python3-venv bookworm "$dir" "$mirror" >"$dir.log" 2>&1; then
    reason=$(tail -n 3 "$dir.log" | tr '\n' ' '); rm -f "$dir.log"
    grep -qiE "fail.*(download|release|connect|resolve)|could not|unable to fetch|couldn't download" <<<"$reason" &&
      skip "the Debian mirror $mirror is unreachable: $reason"
    echo "FAIL: debootstrap: $reason" >&2; exit 1
  fi
  rm -f "$dir.log"
  mkdir -p "$cache"
  tar -C "$dir" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
else
  echo "== the bare root from $tarball"
  tar -C "$dir" -xf "$tarball"
fi

# Bare means bare: the test proves nothing if the root could build or link ember itself.
for tool in g++ gcc c++ cc cmake; do
  if chroot "$dir" /bin/sh -c "command -v $tool" >/dev/null 2>&1; then echo "FAIL: the bare root has $tool" >&2; exit 1; fi
done
dev=$(chroot "$dir" dpkg-query -W -f '${Package}\n' | grep -- '-dev$' || true)
[[ -z $dev ]] || { echo "FAIL: the bare root has -dev packages: $dev" >&2; exit 1; }

mount -t proc proc "$dir/proc"
mount --bind /dev "$dir/dev"
cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
cp "$wheel" "$dir/tmp/"
cp "$root/tests/wheel/bare_root_smoke.py" "$dir/tmp/"
# pip in the root trusts what this machine trusts: a network behind a TLS-inspecting proxy (this
# machine's, CI's) has its CA in the host's bundle only, not in the root's fresh ca-certificates.
host_ca=${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}
[[ -f $host_ca ]] && cp -L "$host_ca" "$dir/tmp/host-ca.crt"
in_root() {
  chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/bin:/bin LANG=C.UTF-8 PIP_DEFAULT_TIMEOUT=180 \
    ${host_ca:+PIP_CERT=/tmp/host-ca.crt} "$@"
}

echo "== python3 -m venv /v; /v/bin/pip install $(basename "$wheel") (in the bare root)"
in_root /usr/bin/python3 -m venv /v
if ! in_root /v/bin/pip install -q --disable-pip-version-check "/tmp/$(basename "$wheel")" >"$dir/pip.log" 2>&1; then
  if grep -qiE "No matching distribution|Could not find a version|Failed to establish|Temporary failure in name resolution|NewConnectionError" "$dir/pip.log"; then
    skip "PyPI (numpy, pillow) is unreachable from the root: $(tail -n 2 "$dir/pip.log" | tr '\n' ' ')"
  fi
  cat "$dir/pip.log" >&2; echo "FAIL: pip install of the wheel in the bare root" >&2; exit 1
fi
in_root /v/bin/pip list --disable-pip-version-check 2>/dev/null | grep -iE '^(ember|numpy|pillow) '
echo "== tests/wheel/bare_root_smoke.py (in the bare root, from /tmp)"
(cd "$dir/tmp" && in_root /bin/sh -c 'cd /tmp && exec /v/bin/python bare_root_smoke.py')
echo "test-wheel-bare-root: PASS ($(basename "$wheel") trains in a minimal Debian 12 root)"

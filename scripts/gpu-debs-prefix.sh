#!/usr/bin/env bash
# Unpacks the .debs fetched by scripts/gpu-debs.sh into a private prefix (never into /) and makes it
# usable there: absolute symlinks and the /usr paths hard-coded in Debian's CMake configs and
# pkg-config files are rewritten to point into the prefix. Used by gpu-check.sh's fallback build.
#   usage: scripts/gpu-debs-prefix.sh DEBS_DIR PREFIX     (PREFIX is emptied first)
# Needs dpkg-deb, or else ar (binutils) and a tar that reads the packages' data.tar.xz.
set -euo pipefail
[[ $# == 2 ]] || { echo "usage: $0 DEBS_DIR PREFIX" >&2; exit 2; }
debs=$(cd "$1" && pwd)
prefix=$2
shopt -s nullglob
files=("$debs"/*.deb)
(( ${#files[@]} )) || { echo "gpu-debs-prefix: no .deb in $debs (make them with scripts/gpu-debs.sh)" >&2; exit 1; }
[[ $prefix == / || -z $prefix ]] && { echo "gpu-debs-prefix: refusing to unpack into '$prefix'" >&2; exit 2; }
rm -rf "$prefix"
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

for f in "${files[@]}"; do
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$f" "$prefix"
  else  # a .deb is an ar archive holding data.tar.{xz,zst,gz}
    tmp=$(mktemp -d "$prefix/.ar.XXXXXX")
    (cd "$tmp" && ar x "$f" && tar -C "$prefix" -xf data.tar.*)
    rm -rf "$tmp"
  fi
  echo "unpacked $(basename "$f")"
done

# Absolute symlinks (zlib1g-dev: libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) point at the
# machine's /; point them at the prefix's copy when it has one.
find "$prefix" -type l | while read -r link; do
  target=$(readlink "$link")
  if [[ $target == /* && -e $prefix$target ]]; then
    ln -sfn "$prefix$target" "$link"
    echo "relinked $link -> $prefix$target"
  fi
done

# Debian's CMake configs and .pc files name /usr (GTest, fmt and dnnl compare their own location
# with "/usr/lib/x86_64-linux-gnu/cmake/..." and then use PACKAGE_PREFIX_DIR "/usr"): rewrite.
find "$prefix" \( -name '*.cmake' -o -name '*.pc' \) -type f -print0 |
  xargs -0 -r sed -i -E "s#(^|[\"' =:;(])/usr(/|\"|'|\$| |\))#\1$prefix/usr\2#g"
left=$(find "$prefix" \( -name '*.cmake' -o -name '*.pc' \) -type f -print0 |
  xargs -0 -r grep -lE "(^|[\"' =:;(])/usr(/|\"|\$)" || true)
[[ -z $left ]] || { echo "gpu-debs-prefix: /usr paths left in: $left" >&2; exit 1; }
echo "gpu-debs-prefix: $prefix ready ($(du -sb "$prefix" | cut -f1) bytes)"

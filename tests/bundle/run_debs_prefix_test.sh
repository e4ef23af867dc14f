#!/usr/bin/env bash
# scripts/gpu-debs-prefix.sh makes a Debian package usable from a private prefix: builds a small
# .deb shaped like Debian's libfmt-dev (a CMake config with the "/usr move" check and
# PACKAGE_PREFIX_DIR "/usr", a .pc with prefix=/usr, an absolute .so symlink), unpacks it with the
# script, and checks that CMake's find_package() and the symlink resolve into the prefix, not /usr.
#   usage: run_debs_prefix_test.sh REPO WORK_DIR        Exit: 0 pass, 1 fail, 77 no dpkg-deb.
set -euo pipefail
repo=$1 work=$2
command -v dpkg-deb >/dev/null || { echo "SKIP: no dpkg-deb"; exit 77; }
rm -rf "$work" && mkdir -p "$work" && work=$(cd "$work" && pwd)
pkg=$work/pkg
mkdir -p "$pkg/DEBIAN" "$pkg/usr/lib/x86_64-linux-gnu/cmake/fakedep" "$pkg/usr/include/fakedep" \
  "$pkg/usr/lib/x86_64-linux-gnu/pkgconfig" "$pkg/lib/x86_64-linux-gnu"
printf 'Package: fakedep-dev\nVersion: 1.0\nArchitecture: amd64\nMaintainer: ember <ember@localhost>\nDescription: test\n' >"$pkg/DEBIAN/control"
echo '#define FAKEDEP 1' >"$pkg/usr/include/fakedep/fakedep.h"
echo 'not a library' >"$pkg/lib/x86_64-linux-gnu/libfakedep.so.1"
ln -s /lib/x86_64-linux-gnu/libfakedep.so.1 "$pkg/usr/lib/x86_64-linux-gnu/libfakedep.so"
cat >"$pkg/usr/lib/x86_64-linux-gnu/cmake/fakedep/fakedep-config.cmake" <<'EOF'
get_filename_component(PACKAGE_PREFIX_DIR "${CMAKE_CURRENT_LIST_DIR}/../../../../" ABSOLUTE)
get_filename_component(_realCurr "${CMAKE_CURRENT_LIST_DIR}" REALPATH)
get_filename_component(_realOrig "/usr/lib/x86_64-linux-gnu/cmake/fakedep" REALPATH)
if(_realCurr STREQUAL _realOrig)
  set(PACKAGE_PREFIX_DIR "/usr")
endif()
set(fakedep_INCLUDE_DIR "/usr/include/fakedep")
EOF
printf 'prefix=/usr\nincludedir=${prefix}/include\nName: fakedep\nDescription: t\nVersion: 1.0\n' \
  >"$pkg/usr/lib/x86_64-linux-gnu/pkgconfig/fakedep.pc"
mkdir -p "$work/debs"
dpkg-deb --root-owner-group -b "$pkg" "$work/debs/fakedep-dev_1.0_amd64.deb" >/dev/null

"$repo/scripts/gpu-debs-prefix.sh" "$work/debs" "$work/prefix"
p=$work/prefix
mkdir -p "$work/proj"
cat >"$work/proj/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(probe NONE)
find_package(fakedep CONFIG REQUIRED)
message(STATUS "PREFIX=${PACKAGE_PREFIX_DIR}")
message(STATUS "INCLUDE=${fakedep_INCLUDE_DIR}")
EOF
log=$(cmake -S "$work/proj" -B "$work/proj/build" "-Dfakedep_DIR=$p/usr/lib/x86_64-linux-gnu/cmake/fakedep" 2>&1)
fail=0
grep -q -- "-- PREFIX=$p/usr\$" <<<"$log" && echo "PASS: PACKAGE_PREFIX_DIR in the prefix" || { echo "FAIL: $log"; fail=1; }
grep -q -- "-- INCLUDE=$p/usr/include/fakedep\$" <<<"$log" && echo "PASS: include dir in the prefix" || { echo "FAIL: include dir"; fail=1; }
[[ $(readlink "$p/usr/lib/x86_64-linux-gnu/libfakedep.so") == "$p/lib/x86_64-linux-gnu/libfakedep.so.1" ]] &&
  echo "PASS: absolute symlink relinked" || { echo "FAIL: symlink -> $(readlink "$p/usr/lib/x86_64-linux-gnu/libfakedep.so")"; fail=1; }
grep -qx "prefix=$p/usr" "$p/usr/lib/x86_64-linux-gnu/pkgconfig/fakedep.pc" && echo "PASS: .pc prefix" || { echo "FAIL: .pc"; fail=1; }
[[ ! -e /usr/include/fakedep ]] || { echo "FAIL: wrote into /usr"; fail=1; }
exit $fail

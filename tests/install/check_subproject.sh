#!/usr/bin/env bash
# usage: check_subproject.sh SOURCE_DIR
# Builds tests/install/consumer, an application that vendors libkernels with
# add_subdirectory and with FetchContent, and runs its programs (shared and
# static libkernels) from the build tree. As a subproject libkernels builds
# the library and the CLI only: no tests, examples or img2gray variants.
set -euo pipefail
src=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-subproject-XXXXXX")
trap 'rm -rf "$work"' EXIT
for how in subdirectory fetchcontent; do
  echo "== $how"
  b=$work/$how
  local_source=()
  [ $how = fetchcontent ] && local_source=(-DFETCHCONTENT_SOURCE_DIR_KERNELS="$src" -DFETCHCONTENT_FULLY_DISCONNECTED=ON)
  cmake -S "$src/tests/install/consumer" -B "$b" -DKERNELS_SOURCE="$src" -DKERNELS_HOW=$how "${local_source[@]}" \
    >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log"; exit 1; }
  cmake --build "$b" -j2 >"$work/build.log" || { cat "$work/build.log"; exit 1; }
  for app in app_shared app_static; do
    out=$(env -u LD_LIBRARY_PATH "$b/$app")
    grep -q "^libkernels " <<<"$out" || { echo "$app printed: $out"; exit 1; }
  done
  kb=$(find "$b" -name libkernels.so.1 -printf '%h\n' | head -1)/..
  test -x "$kb/bindings/cli/libkernels" || { echo "the CLI was not built"; exit 1; }
  for unwanted in tests examples variants; do
    if [ -e "$kb/$unwanted" ]; then echo "a subproject built $unwanted/"; exit 1; fi
  done
done
echo "subproject consumers OK"

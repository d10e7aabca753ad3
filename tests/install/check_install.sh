#!/usr/bin/env bash
# usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libkernels.so.0 2>/dev/null || ls "$prefix"/lib/*/libkernels.so.0)
libdir=$(dirname "$lib")
test -f "$libdir/libkernels.a" || { echo "static libkernels.a not installed"; exit 1; }
test -f "$prefix/include/kernels.h" || { echo "kernels.h not installed"; exit 1; }

echo "== SONAME"
readelf -d "$lib" | grep -q 'SONAME.*libkernels.so.0' || { echo "SONAME is not libkernels.so.0"; exit 1; }

echo "== exported symbols are kernels_* only"
bad=$(nm -D --defined-only "$lib" | awk '{print $3}' | grep -v '^kernels_' || true)
if [ -n "$bad" ]; then echo "symbols exported beyond kernels_*:"; echo "$bad"; exit 1; fi
nm -D --defined-only "$lib" | grep -q ' kernels_version$'

echo "== pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs kernels)
cc -Wall -Wextra -Werror -o "$work/version-pc" "$src/examples/version.c" $flags
LD_LIBRARY_PATH=$libdir "$work/version-pc" | grep -q "libkernels "
echo "== static libkernels.a (its dependencies linked shared, as Requires.private names them)"
deps=$(pkg-config --print-requires-private kernels | awk '{print $1}')
cc -o "$work/version-static" "$src/examples/version.c" $(pkg-config --cflags kernels) \
   "$libdir/libkernels.a" $(pkg-config --libs $deps) -ldl -lpthread
"$work/version-static" | grep -q "libkernels "

echo "== find_package(kernels)"
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples" --target kernels_example_version >/dev/null
LD_LIBRARY_PATH=$libdir "$work/examples/kernels_example_version" | grep -q "libkernels "
echo "install consumers OK"

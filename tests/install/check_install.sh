#!/usr/bin/env bash
# usage: check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
lib=$(ls "$prefix"/lib*/libkernels.so.1 2>/dev/null || ls "$prefix"/lib/*/libkernels.so.1)
libdir=$(dirname "$lib")
test -f "$libdir/libkernels.a" || { echo "static libkernels.a not installed"; exit 1; }
test -f "$prefix/include/kernels.h" || { echo "kernels.h not installed"; exit 1; }

echo "== SONAME"
grep -q 'SONAME.*libkernels.so.1' <<<"$(readelf -d "$lib")" || { echo "SONAME is not libkernels.so.1"; exit 1; }

echo "== exported symbols are kernels_* only"
# No `cmd | grep -q` here: under pipefail it fails by SIGPIPE whenever grep
# stops reading before cmd has written everything.
# Each export carries its version node (kernels_get@@KERNELS_1.0); the
# nodes themselves are absolute symbols (type A), left out.
syms=$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}')
bad=$(grep -v '^kernels_[a-z0-9_]*@@KERNELS_[0-9]*\.[0-9]*$' <<<"$syms" || true)
if [ -n "$bad" ]; then echo "symbols exported beyond kernels_*, or without a version node:"; echo "$bad"; exit 1; fi
grep -qx 'kernels_version@@KERNELS_1.0' <<<"$syms" || { echo "kernels_version is not exported"; exit 1; }

echo "== man kernels_get from the prefix (a page per public function, share/man/man3)"
page=$(MANPATH="$prefix/share/man" MANWIDTH=80 man -P cat kernels_get 2>&1) || { echo "man kernels_get: $page"; exit 1; }
grep -q "int kernels_get(kernels_kernel \*\*out" <<<"$page" || { echo "man kernels_get shows no synopsis: $page"; exit 1; }
pages=$(ls "$prefix/share/man/man3" | wc -l)
exports=$(grep -c '^kernels_' "$src/lib/kernels.exports")
[ "$pages" -eq "$exports" ] || { echo "$pages man pages in man3 for $exports exported functions"; exit 1; }

echo "== pkg-config"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs kernels)
cc -Wall -Wextra -Werror -o "$work/version-pc" "$src/examples/version.c" $flags
grep -q "libkernels " <<<"$(LD_LIBRARY_PATH=$libdir "$work/version-pc")"
echo "== pkg-config with a run path: runs with no LD_LIBRARY_PATH (docs/install.md)"
cc -o "$work/version-rpath" "$src/examples/version.c" $flags -Wl,-rpath,"$libdir"
grep -q "libkernels " <<<"$(env -u LD_LIBRARY_PATH "$work/version-rpath")"
echo "== static libkernels.a (its dependencies linked shared, as Requires.private names them)"
deps=$(pkg-config --print-requires-private kernels | awk '{print $1}')
cc -o "$work/version-static" "$src/examples/version.c" $(pkg-config --cflags kernels) \
   "$libdir/libkernels.a" $(pkg-config --libs $deps) -ldl -lpthread
grep -q "libkernels " <<<"$("$work/version-static")"

echo "== the CLI runs from the prefix (its RUNPATH finds libkernels.so.1), no LD_LIBRARY_PATH"
cli=$prefix/bin/libkernels
test -x "$cli" || { echo "bin/libkernels not installed"; exit 1; }
grep -q 'RUNPATH.*\$ORIGIN/\.\./lib' <<<"$(readelf -d "$cli")" || { echo "bin/libkernels has no \$ORIGIN RUNPATH"; exit 1; }
out=$(env -u LD_LIBRARY_PATH "$cli" --version)
grep -q "^libkernels $(sed -n 's/^Version: //p' "$libdir/pkgconfig/kernels.pc")\$" <<<"$out" || { echo "bin/libkernels --version: $out"; exit 1; }
# Moved elsewhere, the tree still works: nothing in it names the prefix.
mv "$prefix" "$work/moved"
out=$(env -u LD_LIBRARY_PATH "$work/moved/bin/libkernels" --version)
mv "$work/moved" "$prefix"
grep -q "^libkernels " <<<"$out" || { echo "moved bin/libkernels --version: $out"; exit 1; }

echo "== find_package(kernels)"
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/examples" --target kernels_example_version >/dev/null
grep -q "libkernels " <<<"$(LD_LIBRARY_PATH=$libdir "$work/examples/kernels_example_version")"
echo "install consumers OK"

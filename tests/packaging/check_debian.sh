#!/usr/bin/env bash
# usage: check_debian.sh SOURCE_DIR
# Builds the Debian packages of debian/ (libkernels1, libkernels-dev,
# libkernels-tools) with dpkg-buildpackage from a copy of the source tree,
# checks them with lintian (errors and warnings fail; every override says
# why), unpacks them into a scratch root, and builds examples/version.c
# against that root the three ways applications do (pkg-config, CMake's
# find_package, the static library), then runs them and the CLI.
set -euo pipefail
src=$1
for tool in dpkg-buildpackage dh lintian; do
  command -v $tool >/dev/null || { echo "$tool is missing: run scripts/install-deps.sh (debhelper, lintian)"; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/kernels-deb-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir "$work/src" "$work/root"

echo "== a copy of the source tree (what git tracks, and new files it does not ignore)"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -P -t "$work/src" 2>/dev/null || true)
else
  tar -C "$src" --exclude='./build*' --exclude=./.venv --exclude=./.git -cf - . | tar -C "$work/src" -xf -
fi

echo "== dpkg-buildpackage -b"
(cd "$work/src" && dpkg-buildpackage -b -us -uc >"$work/build.log" 2>&1) || { tail -50 "$work/build.log"; exit 1; }
ver=$(cd "$work/src" && dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

echo "== lintian"
for o in "$src"/debian/*.lintian-overrides; do
  [ -e "$o" ] || continue
  # Each override follows a comment saying why.
  awk '/^#/ {why=1; next} /^[^ \t]/ && !why {print FILENAME": no reason for: "$0; bad=1} {why=0} END {exit bad}' "$o"
done
lintian --fail-on error,warning --pedantic "$work/libkernels_${ver}_${arch}.changes" 2>&1 | grep -v "running with root privileges" || true
lintian --fail-on error,warning --pedantic "$work/libkernels_${ver}_${arch}.changes" >/dev/null 2>&1 ||
  { echo "lintian reports errors or warnings"; exit 1; }

echo "== the packages, unpacked into a scratch root"
for p in libkernels1 libkernels-dev libkernels-tools; do
  deb=$work/${p}_${ver}_${arch}.deb
  test -f "$deb" || { echo "$p was not built"; exit 1; }
  dpkg-deb -x "$deb" "$work/root"
done
lib=$work/root/usr/lib/$multiarch
dpkg-deb -c "$work/libkernels1_${ver}_${arch}.deb" | grep -q "usr/lib/$multiarch/libkernels.so.1 " ||
  { echo "libkernels1 lacks libkernels.so.1"; exit 1; }
for f in usr/include/kernels.h usr/lib/$multiarch/libkernels.a usr/lib/$multiarch/libkernels.so \
         usr/lib/$multiarch/pkgconfig/kernels.pc usr/lib/$multiarch/cmake/kernels/kernelsConfig.cmake \
         usr/bin/libkernels usr/share/man/man1/libkernels.1.gz usr/share/man/man3/kernels_get.3.gz usr/share/bash-completion/completions/libkernels \
         usr/share/zsh/site-functions/_libkernels usr/share/fish/vendor_completions.d/libkernels.fish; do
  test -e "$work/root/$f" || { echo "not packaged: /$f"; exit 1; }
done
# The symbols file travels in the package: dpkg-gensymbols compared the
# built library with debian/libkernels1.symbols, and a dependent package
# gets the version that added each symbol it uses.
dpkg-deb -I "$work/libkernels1_${ver}_${arch}.deb" symbols | grep -q "^ kernels_get@KERNELS_1.0 1.0.0" ||
  { echo "libkernels1 ships no symbols file naming kernels_get@KERNELS_1.0"; exit 1; }
deps=$(dpkg-deb -f "$work/libkernels1_${ver}_${arch}.deb" Depends)
for d in libcurl4 libgit2 libjansson4 libarchive13 libssl3; do
  grep -q "$d" <<<"$deps" || { echo "libkernels1 does not depend on $d: $deps"; exit 1; }
done
if readelf -d "$work/root/usr/bin/libkernels" | grep -qE 'RPATH|RUNPATH'; then
  echo "the packaged CLI has a run path"; exit 1
fi

echo "== man kernels_get, from libkernels-dev"
grep -q "usr/share/man/man3/kernels_get.3.gz" <<<"$(dpkg-deb -c "$work/libkernels-dev_${ver}_${arch}.deb")" ||
  { echo "libkernels-dev lacks the man page kernels_get(3)"; exit 1; }
page=$(MANPATH="$work/root/usr/share/man" MANWIDTH=80 man -P cat kernels_get 2>&1) ||
  { echo "man kernels_get: $page"; exit 1; }
grep -q "int kernels_get(kernels_kernel \*\*out" <<<"$page" || { echo "man kernels_get shows no synopsis: $page"; exit 1; }

echo "== an application against the packages"
export LD_LIBRARY_PATH=$lib
grep -q "^libkernels $ver" <<<"$("$work/root/usr/bin/libkernels" --version)" || { echo "the CLI did not run"; exit 1; }
export PKG_CONFIG_PATH=$lib/pkgconfig
cc -Wall -Werror -o "$work/version-pc" "$src/examples/version.c" $(pkg-config --cflags --libs kernels)
grep -q "^libkernels " <<<"$("$work/version-pc")"
cc -o "$work/version-static" "$src/examples/version.c" $(pkg-config --cflags kernels) "$lib/libkernels.a" \
   $(pkg-config --libs $(pkg-config --print-requires-private kernels | awk '{print $1}')) -ldl -lpthread
grep -q "^libkernels " <<<"$(env -u LD_LIBRARY_PATH "$work/version-static")"
cmake -S "$src/examples" -B "$work/examples" -DCMAKE_PREFIX_PATH="$work/root/usr" >/dev/null
cmake --build "$work/examples" --target kernels_example_version >/dev/null
grep -q "^libkernels " <<<"$("$work/examples/kernels_example_version")"
echo "Debian packages OK"

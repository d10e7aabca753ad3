#!/usr/bin/env bash
# What a signature check adds to loading a kernel (see sig_bench.c):
#   bash bench/signature/run.sh BUILD_DIR [runs] [module_kib]
# Makes a variant folder (a C module padded to module_kib KiB, default 4096,
# Python files, metadata.json with its digest) signed by the stand-in
# sigstore of tests/data/sigstore/testsign.py, and the same variant in a Hub
# cache snapshot (where verification receipts are kept), then times
# verification and cold loads against them.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
runs=${2:-51}
kib=${3:-4096}
[ -n "${NO_BUILD:-}" ] || cmake --build "$build" --target kernels >/dev/null
tmp=$(mktemp -d /tmp/bench-sig.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$tmp"' EXIT
cc -std=c11 -O2 -Wall -Wextra -I"$src/include" "$src/bench/signature/sig_bench.c" \
  -L"$build/lib" -lkernels -Wl,-rpath,"$build/lib" -o "$tmp/sig_bench"
v=$tmp/torch211-cxx11-cpu-x86_64-linux
mkdir -p "$v"
# A module with $kib KiB of data, as real modules carry their kernels.
printf '__attribute__((used)) static const volatile char pad[%d] = {1};\nint kernel_answer(void) { return pad[0]; }\n' $((kib * 1024)) > "$tmp/m.c"
cc -shared -fPIC -O2 -o "$v/_bench_1.abi3.so" "$tmp/m.c"
printf 'from ._ops import ops\n' > "$v/__init__.py"
printf 'ops = None\n' > "$v/_ops.py"
python3 "$src/tests/data/variants/make_metadata.py" "$v" --name bench --id _bench_1 --backend cpu
python3 "$src/tests/data/sigstore/testsign.py" init "$tmp/keys"
python3 "$src/tests/data/sigstore/testsign.py" sign "$tmp/keys" "$v/metadata.json" "$v/metadata.json.sigstore"
echo "# bench/signature: libkernels $(git -C "$src" describe --always --dirty 2>/dev/null || echo '?'), $(nproc) CPUs," \
  "$(openssl version 2>/dev/null || echo OpenSSL), module $kib KiB, $(date -u +%Y-%m-%dT%H:%MZ)"
# The same variant in a Hub cache, as a download leaves it (files are links
# into blobs/, named by their sha256).
commit=0123456789abcdef0123456789abcdef01234567
repo=$tmp/cache/kernels--bench--signed
mkdir -p "$repo/blobs" "$repo/refs" "$repo/snapshots/$commit/build/${v##*/}"
printf '%s' "$commit" > "$repo/refs/main"
for f in "$v"/*; do
  sum=$(sha256sum "$f" | cut -d' ' -f1)
  cp "$f" "$repo/blobs/$sum"
  ln -s "../../../../blobs/$sum" "$repo/snapshots/$commit/build/${v##*/}/${f##*/}"
done
"$tmp/sig_bench" "$v" "$tmp/keys/trusted_root.json" "$runs" "$tmp/cache"

#!/usr/bin/env bash
# What a signature check adds to loading a kernel (see sig_bench.c):
#   bash bench/signature/run.sh BUILD_DIR [runs] [module_kib]
# Makes a variant folder (a C module padded to module_kib KiB, default 4096,
# Python files, metadata.json with its digest) signed by the stand-in
# sigstore of tests/data/sigstore/testsign.py, then times verification and
# cold loads against it.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
source "$src/scripts/venv.sh"  # the project's Python (.venv), first on PATH
build=$(cd "${1:?build dir}" && pwd)
runs=${2:-51}
kib=${3:-4096}
[ -n "${NO_BUILD:-}" ] || cmake --build "$build" --target kernels >/dev/null
tmp=$(mktemp -d /tmp/bench-sig.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
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
"$tmp/sig_bench" "$v" "$tmp/keys/trusted_root.json" "$runs"

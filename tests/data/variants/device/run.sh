#!/bin/sh
# Device check of system detection: run from the repo root on a GPU machine.
set -e
out=${OUT:-/tmp}
cc -O1 -Wall -D_GNU_SOURCE -shared -fPIC -Iinclude -Ilib -Ilib/util lib/system.c lib/error.c lib/util/*.c \
   lib/config.c -o "$out/libkernels_system.so" -ldl -lpthread
cc -O1 -Wall -D_GNU_SOURCE -Iinclude -Ilib -Ilib/util tests/data/variants/device/detect_main.c lib/system.c \
   lib/error.c lib/util/*.c lib/config.c -o "$out/detect_main" -ldl -lpthread
nvidia-smi -L || true
"$out/detect_main"
python3 tests/data/variants/device/check_torch.py "$out/libkernels_system.so"

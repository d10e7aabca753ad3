#!/usr/bin/env python3
"""On a GPU machine: the binding loads img2gray from a prepared, offline
huggingface_hub cache (HF_HUB_CACHE; made by prepare_gpu.sh with a local Hub)
with the backend libkernels detects, runs it on CUDA and CPU tensors and
checks the result and torch.ops.<id>; prints one JSON line, plus the get
latencies (cold = first call in this process, warm = later calls)."""
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SRC / "bindings" / "python"))

import torch  # noqa: E402

import libkernels  # noqa: E402

REPO = "kernels-community/img2gray"
assert os.environ.get("HF_HUB_OFFLINE") == "1"
logging.getLogger("libkernels").setLevel(logging.ERROR)  # the offline trust-skip warning, once per call
libkernels.library()
t0 = time.perf_counter()
k = libkernels.get_kernel(REPO, version=1)
cold = (time.perf_counter() - t0) * 1e3
warm = []
for _ in range(50):
    t0 = time.perf_counter()
    assert libkernels.get_kernel(REPO, version=1) is k
    warm.append((time.perf_counter() - t0) * 1e3)
lk = k.__libkernels_kernel__
out = {"variant": lk.variant, "id": lk.metadata.id, "archs": lk.metadata.archs, "system": libkernels.system()["description"],
       "cold_ms": cold, "warm_offline_ms": statistics.median(warm), "devices": {}}
for device in ("cuda", "cpu"):
    rgb = torch.randint(0, 256, (4, 1080, 1920, 3), dtype=torch.uint8, device=device)
    x = rgb.to(torch.float64)
    ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
    gray = k.img2gray(rgb)
    op_out = torch.empty(rgb.shape[:-1], dtype=torch.uint8, device=device)
    getattr(torch.ops, lk.metadata.id).img2gray(rgb, op_out)
    if device == "cuda":
        torch.cuda.synchronize()
    out["devices"][device] = {"ok": bool(torch.equal(gray, ref)), "op_ok": bool(torch.equal(op_out, ref)),
                              "out_device": str(gray.device)}
out["gpu"] = torch.cuda.get_device_name(0)
print(json.dumps(out))

#!/usr/bin/env python3
"""The torch half of the img2gray benchmark, and the combined table.

Times, with the L2 flushed (a 256 MB tensor zeroed) before every launch and
CUDA events around it, the median over many launches of:
  - our op through the torch dispatcher (the built torch CUDA variant),
  - the same formula written as torch tensor ops,
  - a torch device-to-device copy of the same byte volume.
Then merges the rows of bench_img2gray (CSV) into one table: GB/s counted as
3 bytes read + 1 written per pixel, and the share of the cudaMemcpy ceiling.

usage: bench_torch.py VARIANT_DIR CUDA_CSV [iterations]
"""
import csv
import importlib.util
import json
import sys
from pathlib import Path

import torch

SIZES = [("1920x1080", 1, 1080, 1920), ("3840x2160", 1, 2160, 3840), ("7680x4320", 1, 4320, 7680),
         ("32x1920x1080", 32, 1080, 1920)]


def load_variant(path):
    meta = json.loads((path / "metadata.json").read_text())
    spec = importlib.util.spec_from_file_location(meta["id"], path / "__init__.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[meta["id"]] = mod
    spec.loader.exec_module(mod)
    return mod


def torch_formula(rgb):
    x = rgb.to(torch.int32)
    return ((x[..., 0] * 54 + x[..., 1] * 184 + x[..., 2] * 18 + 128) >> 8).to(torch.uint8)


def median_us(fn, iters, flush):
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(iters + 5):
        flush.zero_()
        e0.record()
        fn()
        e1.record()
        e1.synchronize()
        if i >= 5:
            times.append(e0.elapsed_time(e1) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main():
    variant, csv_path = Path(sys.argv[1]), Path(sys.argv[2])
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    mod = load_variant(variant)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = {}
    for r in csv.reader(csv_path.open()):
        rows.setdefault(r[0], []).append((r[1], float(r[2]), float(r[3])))
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, variant {variant.name}")
    print(f"{'size':<14} {'kernel':<28} {'median us':>10} {'GB/s':>8} {'of copy':>8}")
    verdict = []
    for name, b, h, w in SIZES:
        n = b * h * w
        nbytes = 4 * n
        rgb = torch.randint(0, 256, (b, h, w, 3) if b > 1 else (h, w, 3), dtype=torch.uint8, device="cuda")
        out = torch.empty(rgb.shape[:-1], dtype=torch.uint8, device="cuda")
        ours = mod.img2gray(rgb)
        assert torch.equal(ours, torch_formula(rgb)), f"{name}: op and torch formula differ"
        src = torch.empty(2 * n, dtype=torch.uint8, device="cuda").fill_(3)
        dst = torch.empty_like(src)
        cases = [("ours via torch op", lambda: mod.ops.img2gray(rgb, out)),
                 ("torch ops formula", lambda: torch_formula(rgb)),
                 ("torch copy_", lambda: dst.copy_(src))]
        table = [(k, us, nbytes / us / 1e3) for k, us, _ in rows.get(name, [])]
        for k, fn in cases:
            us = median_us(fn, iters, flush)
            table.append((k, us, nbytes / us / 1e3))
        copy = next((g for k, _, g in table if k.startswith("copy D2D")), None) or table[-1][2]
        for k, us, g in table:
            print(f"{name:<14} {k:<28} {us:>10.1f} {g:>8.0f} {100 * g / copy:>7.1f}%")
        g = {k: v for k, _, v in table}
        main_ours = g.get("ours (img2gray_cuda)")
        if main_ours:
            beats = main_ours > g.get("seed 16x16 1px/thread", 0) and main_ours > g["torch ops formula"]
            verdict.append(f"{name}: ours {100 * main_ours / copy:.1f}% of copy; beats seed and torch ops: {beats}")
    print("\n" + "\n".join(verdict))


if __name__ == "__main__":
    main()

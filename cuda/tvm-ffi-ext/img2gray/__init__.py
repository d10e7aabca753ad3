"""img2gray, the tvm-ffi variant: RGB (uint8, [..., H, W, 3] HWC) to gray
(uint8, [..., H, W]).

Luminance 0.21 R + 0.72 G + 0.07 B in 8.8 fixed point, identical on every
device: gray = (54 R + 184 G + 18 B + 128) >> 8.

Any DLPack tensor works (torch, numpy, jax, tvm_ffi.Tensor); the module's
functions are ops.img2gray_cpu(out, input) and, in a CUDA variant,
ops.img2gray_cuda(out, input).
"""
import tvm_ffi

from ._ops import ops

__all__ = ["img2gray", "ops"]


def img2gray(input, out=None):
    """Converts `input` [..., H, W, 3] (uint8, contiguous) into `out`
    [..., H, W] (uint8, contiguous, same device) and returns `out`. Without
    `out`, a torch tensor input gets a new torch tensor; other inputs need
    `out`."""
    if out is None:
        if not hasattr(input, "new_empty"):
            raise TypeError("img2gray: pass `out` (uint8 [..., H, W]) for a non-torch input")
        out = input.new_empty(tuple(input.shape[:-1]))
    device = tvm_ffi.from_dlpack(input).device.type
    if device == "cpu":
        ops.img2gray_cpu(out, input)
    elif device == "cuda":
        fn = getattr(ops, "img2gray_cuda", None)
        if fn is None:
            raise NotImplementedError("img2gray: this variant was built without CUDA; use a tvm-ffi cu* variant")
        fn(out, input)
    else:
        raise NotImplementedError(f"img2gray: unsupported device type {device}")
    return out

"""On a machine with torch and a GPU: libkernels' detection (built from
lib/system.c alone) must agree with what torch itself reports."""
import ctypes
import sys


class System(ctypes.Structure):
    _fields_ = [("torch_version", ctypes.c_int), ("torch_cxx11_abi", ctypes.c_int),
                ("tvm_ffi_version", ctypes.c_int), ("backend", ctypes.c_char_p), ("backend_version", ctypes.c_int),
                ("gpu_count", ctypes.c_int), ("gpu_archs", ctypes.c_int * 16), ("cpu", ctypes.c_char_p),
                ("os", ctypes.c_char_p), ("no_gpu", ctypes.c_int), ("macos_version", ctypes.c_int),
                ("cuda_runtime_version", ctypes.c_int), ("cuda_driver_version", ctypes.c_int),
                ("glibc", ctypes.c_char_p), ("torch_version_string", ctypes.c_char_p),
                ("torch_path", ctypes.c_char_p), ("tvm_ffi_path", ctypes.c_char_p),
                ("backend_source", ctypes.c_char_p)]


lib = ctypes.CDLL(sys.argv[1])
lib.kernels_system_detect.argtypes = [ctypes.POINTER(ctypes.POINTER(System)), ctypes.c_void_p]
lib.kernels_system_format.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(System)]


def detect():
    p = ctypes.POINTER(System)()
    assert lib.kernels_system_detect(ctypes.byref(p), None) == 0
    buf = ctypes.create_string_buffer(1024)
    lib.kernels_system_format(buf, 1024, p)
    return p.contents, buf.value.decode()


s, text = detect()
print("python before torch:", text)
import torch  # noqa: E402

s, text = detect()
print("python with torch:  ", text)
v = torch.__version__.split("+")[0].split(".")
want = {
    "torch_version": int(v[0]) * 100 + int(v[1]),
    "torch_cxx11_abi": int(torch.compiled_with_cxx11_abi()),
    "backend": b"cuda" if torch.version.cuda else b"cpu",
    "backend_version": (lambda c: int(c[0]) * 100 + int(c[1]))(torch.version.cuda.split(".")) if torch.version.cuda else 0,
    "torch_version_string": torch.__version__.encode(),
}
caps = sorted(a * 10 + b for a, b in (torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())))
bad = [(k, getattr(s, k), w) for k, w in want.items() if getattr(s, k) != w]
got_caps = sorted(s.gpu_archs[i] for i in range(s.gpu_count))
if got_caps != caps:
    bad.append(("gpu_archs", got_caps, caps))
print("torch says:", torch.__version__, "cxx11", torch.compiled_with_cxx11_abi(), "cuda", torch.version.cuda, "caps", caps)
print("MISMATCH:" if bad else "ALL AGREE", bad)
sys.exit(1 if bad else 0)

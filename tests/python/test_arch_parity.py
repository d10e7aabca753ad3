"""The checks Python kernels 0.17.2 applies to a chosen variant, and
libkernels' answers for the same inputs:

- the arch check (kernels.archs._check_arch_incompatibility) on the
  current device, with two injected CUDA GPUs and each as the current one,
  and on a ROCm device, over a grid of build archs; check_arch=False;
- kernels-minver (kernels.validate.MinverValidator) over a grid of versions;
- the User-Agent with telemetry on and off, as the local Hub receives it.

For 0.17 the devices come from torch (monkeypatched here: torch.cuda and
torch.version); for libkernels from an injected system description and
kernels_options.device.
"""
import ctypes
import json
import os
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import pytest
import torch
from kernels import archs as karchs
from kernels import validate as kvalidate
from kernels._rust import Metadata

import test_binding as tb
from libkernels import _lib

CU = "torch211-cxx11-cu130-x86_64-linux"
ROCM = "torch211-cxx11-rocm63-x86_64-linux"


class Candidate(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("archs", ctypes.POINTER(ctypes.c_char_p)), ("backend", ctypes.c_char_p)]


def metadata(backend, archs, **extra):
    doc = {"name": "kk", "id": "_kk_1", "version": 1, "license": "MIT", "python-depends": [],
           "backend": {"type": backend, "archs": archs}}
    doc.update(extra)
    return Metadata.from_bytes(json.dumps(doc).encode())


def theirs_arch(monkeypatch, backend, archs, devices, current):
    """0.17.2's verdict: None (fine) or its RuntimeError text."""
    with monkeypatch.context() as m:
        m.setattr(torch.cuda, "is_available", lambda: True)
        m.setattr(torch.cuda, "current_device", lambda: current)
        if backend == "cuda":
            m.setattr(torch.version, "cuda", "13.0")
            m.setattr(torch.version, "hip", None)
            m.setattr(torch.cuda, "get_device_capability", lambda *a: devices[current])
        else:
            m.setattr(torch.version, "cuda", None)
            m.setattr(torch.version, "hip", "6.3.42131-fa1d09cbd")
            m.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(gcnArchName=devices[i]))
        try:
            karchs._check_arch_incompatibility(metadata(backend, archs), "v")
            return None
        except RuntimeError as e:
            return str(e)


def ours_arch(backend, archs, devices, current, skip=False, variant=None):
    """libkernels' verdict: None (accepted) or the rejection reason, and the
    per-device trace."""
    lib = _lib.load(tb.library_path())
    s = _lib.System()
    s.torch_version, s.torch_cxx11_abi, s.tvm_ffi_version = 211, 1, -1
    s.backend = backend.encode()
    s.backend_version = 1300 if backend == "cuda" else 603
    s.cpu, s.os = b"x86_64", b"linux"
    s.gpu_count = len(devices)
    for i, d in enumerate(devices):
        if backend == "cuda":
            s.gpu_archs[i] = d[0] * 10 + d[1]
        else:
            s.gpu_arch_names[i] = d.encode()
    o = _lib.Options()
    lib.options_init(ctypes.byref(o), _lib.KERNELS_OPTIONS_VERSION)
    o.system = ctypes.pointer(s)
    o.device = str(current).encode()
    o.skip_arch_check = 1 if skip else 0
    arr = (ctypes.c_char_p * (len(archs) + 1))(*[a.encode() for a in archs], None)
    cand = Candidate((variant or (CU if backend == "cuda" else ROCM)).encode(), arr, backend.encode())
    detected = _lib.SystemP()
    lib.system_detect(ctypes.byref(detected), ctypes.byref(o))
    fn = lib.cdll.kernels_variant_resolve_candidates
    fn.argtypes = [ctypes.POINTER(_lib.TraceP), ctypes.POINTER(Candidate), ctypes.c_size_t, _lib.SystemP,
                   _lib.OptionsP]
    trace = _lib.TraceP()
    try:
        assert fn(ctypes.byref(trace), ctypes.byref(cand), 1, detected, ctypes.byref(o)) == 0
        reason = lib.variant_trace_reason_at(trace, 0)
        devices_note = lib.variant_trace_devices_at(trace, 0)
        return (reason.decode() if reason else None), (devices_note.decode() if devices_note else None)
    finally:
        lib.variant_trace_free(trace)
        lib.system_free(detected)


CUDA_ARCHS = [["8.0"], ["9.0"], ["8.0", "9.0"], ["9.0a"], ["8.0+PTX"], ["10.0f"], ["8.6"], ["7.5", "8.0+PTX"],
              ["future-format"]]


@pytest.mark.parametrize("archs", CUDA_ARCHS, ids=lambda a: ",".join(a))
@pytest.mark.parametrize("current", [0, 1])
def test_cuda_two_gpus(monkeypatch, archs, current):
    devices = [(9, 0), (8, 0)]  # an H100 and an A100
    theirs = theirs_arch(monkeypatch, "cuda", archs, devices, current)
    reason, note = ours_arch("cuda", archs, devices, current)
    assert (theirs is None) == (reason is None), (theirs, reason)
    if theirs is not None:
        assert reason in theirs  # 0.17 wraps the same sentence
    if archs != ["future-format"]:
        assert f"GPU {current} (" in note and "[the device checked]" in note
        assert note.count("GPU ") == 2  # both devices, whatever was checked
    # check_arch=False: 0.17 skips its validator; libkernels accepts
    assert ours_arch("cuda", archs, devices, current, skip=True)[0] is None


# 0.17.2 checks the chosen build whatever its kind (its metadata's backend
# decides): noarch, stable-ABI and tvm-ffi builds alike.
@pytest.mark.parametrize("archs", [["8.0"], ["9.0"], ["8.0+PTX"], ["future-format"]], ids=lambda a: ",".join(a))
@pytest.mark.parametrize("variant", ["torch-stable-abi29-cu130-x86_64-linux", "torch-cuda", "torch-universal"])
def test_cuda_every_kind(monkeypatch, archs, variant):
    devices = [(9, 0)]
    theirs = theirs_arch(monkeypatch, "cuda", archs, devices, 0)
    reason, _ = ours_arch("cuda", archs, devices, 0, variant=variant)
    assert (theirs is None) == (reason is None), (theirs, reason)
    assert ours_arch("cuda", archs, devices, 0, skip=True, variant=variant)[0] is None


@pytest.mark.parametrize("archs", [["gfx90a"], ["gfx942"], ["gfx90a", "gfx942"], ["gfx1100"]],
                         ids=lambda a: ",".join(a))
@pytest.mark.parametrize("current", [0, 1])
@pytest.mark.parametrize("variant", [ROCM, "torch-rocm"])
def test_rocm(monkeypatch, archs, current, variant):
    devices = ["gfx942:sramecc+:xnack-", "gfx90a:sramecc+:xnack-"]  # MI300X, MI210, as gcnArchName
    theirs = theirs_arch(monkeypatch, "rocm", archs, devices, current)
    reason, note = ours_arch("rocm", archs, devices, current, variant=variant)
    assert (theirs is None) == (reason is None), (theirs, reason)
    if theirs is not None:
        assert reason in theirs


@pytest.mark.parametrize("minver", ["0.16.0", "0.17.0", "0.17.2", "0.17.3", "0.18.0", "1.0.0"])
def test_kernels_minver(tmp_path, monkeypatch, minver):
    import kernels

    assert kernels.__version__ == "0.17.2"  # what libkernels declares compatibility with
    try:
        kvalidate.MinverValidator().validate_metadata(metadata=metadata("cpu", None, **{"kernels-minver": minver}),
                                                      variant="torch-cpu")
        theirs = None
    except RuntimeError as e:
        theirs = str(e)
    folder = tmp_path / "torch-cpu"
    folder.mkdir()
    subprocess.run([sys.executable, str(tb.MAKE_METADATA), str(folder), "--name", "kk", "--set",
                    f'kernels-minver="{minver}"'], check=True)
    lib = _lib.load(tb.library_path())
    k = _lib.KernelP()
    try:
        lib.load_local(ctypes.byref(k), str(folder).encode(), None)
        ours = None
        lib.kernel_close(k)
    except Exception as e:
        ours = str(e)
    assert (theirs is None) == (ours is None), (theirs, ours)
    if ours:
        assert f"requires kernels>={minver}" in ours and f"requires kernels>={minver}" in theirs
        assert "compatible with kernels 0.17.2" in ours


UA = """
    import json, sys
    client = sys.argv[1]
    if client == "libkernels":
        import libkernels as K
    else:
        import kernels as K
    try:
        K.get_kernel("acme/answer", version=1, backend="cpu", user_agent={"myapp": "1.0"})
        print(json.dumps({"error": None}))
    except Exception as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
"""


def user_agents(hub, tmp_path, client, **env):
    cache = tmp_path / f"cache-{client}-{len(env)}-{'-'.join(env)}"
    e = hub.hf_env(cache, KERNELS_LIBRARY=tb.library_path(), PYTHONPATH=str(tb.BINDING_DIR),
                   PYTHONDONTWRITEBYTECODE="1", HF_HUB_DISABLE_TELEMETRY="0")
    e.update(env)
    hub.log_clear()
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(UA), client], env=e, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), {r["user_agent"] for r in hub.log()}


def test_user_agent_telemetry_on_and_off(hub, tmp_path):
    tree = tmp_path / "answer-tree"
    tb.make_variant(tree / "build" / tb.torch_cpu_variant(), answer=42)
    tb.publish_tree(hub, "acme/answer", tree)

    # telemetry on: the caller's part first, then what runs the kernel, as kernels 0.17.2 sends it
    res, theirs = user_agents(hub, tmp_path, "kernels")
    assert res["error"] is None
    res, ours = user_agents(hub, tmp_path, "libkernels")
    assert res["error"] is None
    # (kernels names the backend of its torch, libkernels the one resolved for: cpu was asked)
    # (kernels passes the caller's part to some of its requests, libkernels to every one of the call)
    assert any("myapp/1.0" in ua for ua in theirs), theirs
    for part in ("file_type/kernel", "backend/", "platform/x86_64-linux"):
        assert all(part in ua for ua in theirs if "backend/" in ua), (part, theirs)
        assert any(part in ua for ua in ours), (part, ours)
    # every request of the call says the backend, its first ones too
    assert all("backend/cpu" in ua for ua in ours), ours
    assert all(ua.startswith("myapp/1.0; libkernels/") for ua in ours)

    # telemetry off, each way huggingface_hub reads it: libkernels' name and
    # version only, a valid header (0.17.2 + huggingface_hub 1.10.2 send one
    # ending in "; ", which httpx refuses: that request never leaves)
    for var in ("HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY", "DO_NOT_TRACK"):
        res, ours = user_agents(hub, tmp_path, "libkernels", **{var: "1"})
        assert res["error"] is None and ours == {f"libkernels/{tb.libkernels.__version__}"}, (var, ours)


def test_user_agent_origin(hub, tmp_path):
    # HF_HUB_USER_AGENT_ORIGIN: huggingface_hub ends its User-Agent with
    # "; origin/<it>", telemetry on or off; libkernels ends each of its own so.
    tree = tmp_path / "answer-tree"
    tb.make_variant(tree / "build" / tb.torch_cpu_variant(), answer=42)
    tb.publish_tree(hub, "acme/answer", tree)
    res, theirs = user_agents(hub, tmp_path, "kernels", HF_HUB_USER_AGENT_ORIGIN="acme-ci")
    assert res["error"] is None and any(ua.endswith("; origin/acme-ci") for ua in theirs), theirs
    res, ours = user_agents(hub, tmp_path, "libkernels", HF_HUB_USER_AGENT_ORIGIN="acme-ci")
    assert res["error"] is None and ours and all(ua.endswith("; origin/acme-ci") for ua in ours), ours
    res, ours = user_agents(hub, tmp_path, "libkernels", HF_HUB_USER_AGENT_ORIGIN="acme-ci",
                            HF_HUB_DISABLE_TELEMETRY="1")
    assert ours == {f"libkernels/{tb.libkernels.__version__}; origin/acme-ci"}, ours

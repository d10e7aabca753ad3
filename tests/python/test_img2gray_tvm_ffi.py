"""The img2gray tvm-ffi variants built by cuda/tvm_ffi.cmake, from Python.

The folders are laid out as kernel-builder lays out a tvm-ffi build (module
<id>.so next to __init__.py, _ops.py and metadata.json; the variant name as
generate_build_name writes it), their names are ones the Python `kernels`
package (PyPI, 0.17.2) parses as tvm-ffi variants of the installed tvm-ffi,
and `kernels` fetches the variant from the local Hub, imports it and runs it
with torch tensors, against a reference computed here from the documented
formula. CUDA checks run where torch sees a GPU.
"""
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch  # required: CI installs it (tests/requirements.txt)
import tvm_ffi  # required: CI installs apache-tvm-ffi (tests/requirements.txt)
from testsupport import built_variants, load_variant, run_client, variant_digest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KERNELS_BINARY_DIR", "")) / "variants" / "img2gray" / "build"
REPO = "kernels-community/img2gray"
_v = tvm_ffi.__version__.split(".")
TAG = f"tvm-ffi{_v[0]}{_v[1]}"


VARIANTS = built_variants(BUILD, TAG + "-*", "configure the build with tvm_ffi importable (pip install -r "
                          "tests/requirements.txt) so cuda/tvm_ffi.cmake builds the img2gray tvm-ffi variants",
                          need="metadata.json")
CUDA = torch.cuda.is_available()


def reference(rgb):
    x = rgb.to(torch.int32)
    return ((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2] + 128) >> 8).to(torch.uint8)


@pytest.fixture(params=VARIANTS, ids=lambda p: p.name)
def variant(request):
    return request.param


def test_layout_and_metadata(variant):
    from kernels.variants import TvmFfi, parse_variant

    meta = json.loads((variant / "metadata.json").read_text())
    backend = "cpu" if variant.name.startswith(TAG + "-cpu-") else "cuda"
    assert meta["name"] == "img2gray" and meta["license"] == "Apache-2.0"
    assert meta["id"].startswith(f"_img2gray_{backend}_")
    assert meta["backend"]["type"] == backend
    if backend == "cuda":
        assert meta["backend"]["archs"] == ["8.0", "9.0+PTX"]
        assert variant.name.startswith(TAG + "-cu")
    assert variant.name.endswith(f"-{platform.machine()}-linux")
    parsed = parse_variant(variant.name)
    assert isinstance(parsed.framework, TvmFfi)
    assert str(parsed.framework.version) == f"{_v[0]}.{_v[1]}"
    digest = variant_digest(variant)
    assert meta["digest"] == digest
    files = digest["files"]
    assert set(files) == {"__init__.py", "_ops.py", meta["id"] + ".so"}
    assert f'"{meta["id"]}"' in (variant / "_ops.py").read_text()


def test_functions_cpu(variant):
    mod, meta = load_variant(variant)
    want = {"img2gray_cpu"} | ({"img2gray_cuda"} if "-cu" in variant.name else set())
    assert {n for n in ("img2gray_cpu", "img2gray_cuda") if getattr(mod.ops, n, None) is not None} == want
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    for shape in [(1, 1, 3), (7, 13, 3), (3, 17, 31, 3), (2, 3, 9, 11, 3), (1, 481, 641, 3)]:
        rgb = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
        assert torch.equal(mod.img2gray(rgb), reference(rgb)), shape
        out = torch.full(shape[:-1], 0x5A, dtype=torch.uint8)
        assert mod.img2gray(rgb, out) is out
        assert torch.equal(out, reference(rgb)), shape
    rgb = torch.randint(0, 256, (4, 6, 5, 3), dtype=torch.uint8, generator=gen)
    assert torch.equal(mod.img2gray(rgb[2]), reference(rgb[2]))  # a view with an offset
    with pytest.raises(TypeError, match="input must be uint8"):
        mod.img2gray(rgb.float())
    with pytest.raises(ValueError, match="must be contiguous"):
        mod.img2gray(rgb.transpose(1, 2))
    with pytest.raises(ValueError, match=r"\[\.\.\., H, W, 3\]"):
        mod.img2gray(torch.zeros((4, 6, 4), dtype=torch.uint8))
    with pytest.raises(ValueError, match="output must have the input's shape"):
        mod.ops.img2gray_cpu(torch.empty((6, 5), dtype=torch.uint8), rgb)


def test_python_kernels_from_local_hub(hub, tmp_path):
    """`kernels` resolves, downloads, verifies and imports our tvm-ffi variant."""
    args = [sys.executable, str(ROOT / "scripts" / "publish-img2gray.py"), "--root", str(hub.root), "--build",
            str(BUILD), "--repo", REPO]
    for v in VARIANTS:
        args += ["--variant", v.name]
    subprocess.run(args, check=True, capture_output=True, text=True)
    got = run_client(hub, tmp_path, f"""
        import json, pathlib, torch
        from kernels import get_kernel
        k = get_kernel("{REPO}", version=1, backend="cpu")
        rgb = torch.randint(0, 256, (3, 17, 31, 3), dtype=torch.uint8)
        x = rgb.to(torch.int32)
        ref = ((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2] + 128) >> 8).to(torch.uint8)
        folder = pathlib.Path(k.__file__).parent
        print(json.dumps({{"ok": bool(torch.equal(k.img2gray(rgb), ref)), "variant": folder.name,
                          "cache": str(folder).startswith("{tmp_path / 'cache'}"),
                          "module": k.ops.img2gray_cpu is not None}}))
    """)
    assert got == {"ok": True, "variant": f"{TAG}-cpu-{platform.machine()}-linux", "cache": True, "module": True}


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_cuda_bit_identical(variant):
    if "-cpu-" in variant.name:
        pytest.skip("CPU variant")
    mod, meta = load_variant(variant)
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    for shape in [(1, 1, 3), (7, 13, 3), (3, 17, 31, 3), (2, 1080, 1921, 3), (1, 4321, 7681, 3)]:
        rgb = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
        gpu = mod.img2gray(rgb.cuda())
        assert gpu.device.type == "cuda"
        assert torch.equal(gpu.cpu(), reference(rgb)), shape
    rgb = torch.randint(0, 256, (4, 33, 65, 3), dtype=torch.uint8, device="cuda")
    assert torch.equal(mod.img2gray(rgb[1]).cpu(), reference(rgb[1].cpu()))  # unaligned view
    s = torch.cuda.Stream()  # tvm-ffi passes torch's current stream on
    rgb = torch.randint(0, 256, (8, 720, 1281, 3), dtype=torch.uint8, device="cuda")
    with torch.cuda.stream(s):
        out = mod.img2gray(rgb)
    s.synchronize()
    assert torch.equal(out.cpu(), reference(rgb.cpu()))
    with pytest.raises(ValueError, match="must both be on"):
        mod.ops.img2gray_cuda(torch.empty((8, 720, 1281), dtype=torch.uint8), rgb)

"""The img2gray torch variants built by cuda/CMakeLists.txt, from Python.

Each variant folder under $KERNELS_BINARY_DIR/variants/img2gray/build/ is
imported the way the Python `kernels` package imports one (its __init__.py as
a package named by metadata.json's `id`), the op is called through
torch.ops.<id>.img2gray and through the package's img2gray(), and the result
is compared with a reference computed here in float64 from the documented
formula. metadata.json is checked for the keys and the digest kernel-builder writes, and
the real `kernels` package (PyPI) loads the build tree too. CUDA checks run
where torch sees a GPU and must be bit-identical to the CPU results.
"""
import importlib.util
import json
import os
import platform
from pathlib import Path

import pytest

import torch  # required: CI installs it (tests/requirements.txt); a missing torch is a failure
from testsupport import built_variants, load_variant, variant_digest

REPO = Path(os.environ.get("KERNELS_BINARY_DIR", "")) / "variants" / "img2gray"
TORCH_TAG = "torch{}{}".format(*torch.__version__.split("+")[0].split(".")[:2])


VARIANTS = built_variants(REPO / "build", "torch*", "configure the build with torch importable (pip install -r "
                          "tests/requirements.txt) so cuda/CMakeLists.txt builds the img2gray torch variants")
CUDA = torch.cuda.is_available()


def reference(rgb):
    """round-half-up((54 R + 184 G + 18 B) / 256), from the documentation."""
    x = rgb.to(torch.float64)
    y = (54.0 * x[..., 0] + 184.0 * x[..., 1] + 18.0 * x[..., 2]) / 256.0
    return torch.floor(y + 0.5).to(torch.uint8)


def random_shapes(gen):
    shapes = [(1, 1, 3), (1, 15, 3), (7, 13, 3), (17, 31, 3), (3, 1, 1, 3), (2, 7, 9, 3), (4, 33, 17, 3),
              (481, 641, 3), (2, 121, 257, 3)]
    for _ in range(6):
        b, h, w = (int(v) for v in torch.randint(1, 200, (3,), generator=gen))
        shapes.append((1 + b % 4, 2 * h + 1, 2 * w + 1, 3))
    return shapes


@pytest.fixture(params=VARIANTS, ids=lambda p: p.name)
def variant(request):
    return request.param


def test_metadata_and_digest(variant):
    meta = json.loads((variant / "metadata.json").read_text())
    assert meta["name"] == "img2gray"
    assert isinstance(meta["version"], int) and meta["version"] >= 1
    assert meta["license"] == "Apache-2.0"
    assert meta["id"].startswith("_img2gray_")
    want_backend = "cpu" if "-cpu-" in variant.name else "cuda"
    assert meta["backend"]["type"] == want_backend
    if want_backend == "cuda":
        assert meta["backend"]["archs"] == ["8.0", "9.0+PTX"]
    assert variant.name.startswith(TORCH_TAG + "-cxx11-") and variant.name.endswith(f"-{platform.machine()}-linux")
    digest = variant_digest(variant)
    assert meta["digest"] == digest
    files = digest["files"]
    assert set(files) == {"__init__.py", "_ops.py", "img2gray/__init__.py", meta["id"] + ".abi3.so"}


def test_op_matches_reference_cpu(variant):
    mod, meta = load_variant(variant)
    op = getattr(torch.ops, meta["id"]).img2gray
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    for shape in random_shapes(gen):
        rgb = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
        ref = reference(rgb)
        out = torch.full(shape[:-1], 0x5A, dtype=torch.uint8)
        op(rgb, out)
        assert torch.equal(out, ref), shape
        assert torch.equal(mod.img2gray(rgb), ref), shape
        assert mod.ops.img2gray is op or mod.add_op_namespace_prefix("img2gray") == meta["id"] + "::img2gray"


def test_errors(variant):
    mod, meta = load_variant(variant)
    rgb = torch.randint(0, 256, (4, 6, 3), dtype=torch.uint8)
    with pytest.raises(RuntimeError, match="must be uint8"):
        mod.img2gray(rgb.float())
    with pytest.raises(RuntimeError, match=r"\[H, W, 3\] or \[B, H, W, 3\]"):
        mod.img2gray(torch.zeros((4, 6, 4), dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="must be contiguous"):
        mod.img2gray(torch.zeros((6, 4, 3), dtype=torch.uint8).transpose(0, 1))
    with pytest.raises(RuntimeError, match="output must have shape"):
        getattr(torch.ops, meta["id"]).img2gray(rgb, torch.empty((6, 4), dtype=torch.uint8))


def test_compat_package(variant):
    mod, meta = load_variant(variant)
    spec = importlib.util.spec_from_file_location("img2gray_compat_" + variant.name.replace("-", "_"),
                                                  variant / "img2gray" / "__init__.py")
    compat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compat)
    rgb = torch.randint(0, 256, (3, 5, 7, 3), dtype=torch.uint8)
    assert torch.equal(compat.img2gray(rgb), reference(rgb))
    assert compat.ops is mod.ops or compat.add_op_namespace_prefix("x") == meta["id"] + "::x"


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_cuda_bit_identical(variant):
    if "-cpu-" in variant.name:
        pytest.skip("CPU variant")
    mod, meta = load_variant(variant)
    gen = torch.Generator().manual_seed(int.from_bytes(os.urandom(4), "little"))
    for shape in random_shapes(gen) + [(2, 1080, 1921, 3), (1, 4321, 7681, 3)]:
        rgb = torch.randint(0, 256, shape, dtype=torch.uint8, generator=gen)
        cpu = mod.img2gray(rgb)
        gpu = mod.img2gray(rgb.cuda())
        assert gpu.device.type == "cuda"
        assert torch.equal(gpu.cpu(), cpu), shape
        assert torch.equal(cpu, reference(rgb)), shape
        if len(shape) == 4 and shape[0] > 1:  # a view with a storage offset: unaligned buffers
            view = rgb.cuda()[1]
            assert torch.equal(mod.img2gray(view).cpu(), cpu[1]), shape
    # on a side stream
    s = torch.cuda.Stream()
    rgb = torch.randint(0, 256, (8, 720, 1281, 3), dtype=torch.uint8, device="cuda")
    with torch.cuda.stream(s):
        out = mod.img2gray(rgb)
    s.synchronize()
    assert torch.equal(out.cpu(), reference(rgb.cpu()))
    with pytest.raises(RuntimeError, match="must both be on"):
        getattr(torch.ops, meta["id"]).img2gray(rgb.cpu(), out)


def test_kernels_package_loads_build_tree():
    """The real `kernels` package (PyPI) picks and imports a variant of our tree."""
    kernels = pytest.importorskip("kernels")
    backend = "cuda" if CUDA and any("-cu" in p.name for p in VARIANTS) else "cpu"
    mod = kernels.get_local_kernel(REPO, backend=backend)
    rgb = torch.randint(0, 256, (2, 9, 11, 3), dtype=torch.uint8)
    if backend == "cuda":
        rgb = rgb.cuda()
    assert torch.equal(mod.img2gray(rgb).cpu(), reference(rgb.cpu()))

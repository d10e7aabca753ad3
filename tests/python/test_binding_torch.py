"""The binding with real torch on the CPU: get_kernel of our img2gray,
published to the local Hub by scripts/publish-img2gray.py, returns a module
whose img2gray(t) is the right gray image, with the op registered under
torch.ops.<metadata id>. Each load runs in its own process (a torch op
namespace can be registered once per process)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import test_binding as tb

BUILD = Path(os.environ.get("KERNELS_BINARY_DIR", "")) / "variants" / "img2gray" / "build"
REPO = "kernels-community/img2gray"


def publish_img2gray(hub):
    if not any(BUILD.glob("torch*-cpu-*/metadata.json")):
        pytest.fail(f"no img2gray torch cpu variant under {BUILD}: build the project with torch installed")
    out = subprocess.run([sys.executable, str(tb.SOURCE_DIR / "scripts" / "publish-img2gray.py"), "--root",
                          str(hub.root), "--build", str(BUILD), "--repo", REPO], check=True, capture_output=True,
                         text=True).stdout
    return dict(line.split() for line in out.splitlines())


def run_binding(hub, cache, code):
    env = hub.hf_env(cache, KERNELS_LIBRARY=tb.library_path(), PYTHONPATH=str(tb.BINDING_DIR),
                     PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


CHECK = """
    import json, pathlib, torch, libkernels
    k = libkernels.get_kernel("{repo}", {how})
    meta = json.loads((pathlib.Path(k.__file__).parent / "metadata.json").read_text())
    rgb = torch.randint(0, 256, (2, 37, 53, 3), dtype=torch.uint8)
    x = rgb.to(torch.float64)
    ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
    out = torch.empty(rgb.shape[:-1], dtype=torch.uint8)
    op = getattr(getattr(torch.ops, meta["id"]), "img2gray")
    op(rgb, out)
    lk = k.__libkernels_kernel__
    print(json.dumps({{"ok": bool(torch.equal(k.img2gray(rgb), ref)), "op_ok": bool(torch.equal(out, ref)),
                      "id": meta["id"], "name": k.__name__, "version": meta["version"], "variant": lk.variant,
                      "commit": lk.commit, "library": lk.library, "path": lk.path,
                      "chosen": [d.variant.variant_str for d in libkernels.get_kernel_variants("{repo}", {how})
                                 if isinstance(d, libkernels.VariantAccepted)][0],
                      "qualified": k.add_op_namespace_prefix("img2gray")}}))
"""


def test_get_kernel_img2gray_cpu(hub, tmp_path):
    tags = publish_img2gray(hub)
    got = run_binding(hub, tmp_path / "cache", CHECK.format(repo=REPO, how='version=1, backend="cpu"'))
    assert got["ok"] and got["op_ok"], got
    assert got["name"] == got["id"] and got["id"].startswith("_img2gray_cpu_")
    assert got["qualified"] == f"{got['id']}::img2gray"
    assert got["version"] == 1 and got["commit"] == tags["v1.1.2"]
    assert "-cpu-" in got["variant"] and got["variant"].startswith("torch")
    assert got["library"].endswith(f"{got['id']}.abi3.so")
    assert got["path"].startswith(str(tmp_path / "cache"))
    # A second process, offline: the cached variant, not one request.
    hub.log_clear()
    env_code = "import os; os.environ['HF_HUB_OFFLINE'] = '1'\n" + textwrap.dedent(
        CHECK.format(repo=REPO, how='version=1, backend="cpu"'))
    again = run_binding(hub, tmp_path / "cache", env_code)
    assert again["ok"] and again["path"] == got["path"]
    assert hub.log() == []


def test_get_kernel_img2gray_detected_backend(hub, tmp_path):
    # No backend given: libkernels picks (a CUDA build of torch takes the CUDA
    # variant when one was built, whose op also has the CPU kernel), and the
    # binding imports exactly the variant get_kernel_variants calls preferred.
    tags = publish_img2gray(hub)
    got = run_binding(hub, tmp_path / "cache", CHECK.format(repo=REPO, how="revision=\"v2.0.0\""))
    assert got["ok"] and got["op_ok"], got
    assert got["variant"] == got["chosen"]
    assert got["version"] == 2 and got["commit"] == tags["v2.0.0"]

"""scripts/publish-img2gray.py against the local Hub, checked with the real
Python clients: the refs exist as the clients resolve them (vN branches, vX.Y.Z
tags, main), and the Python
`kernels` package (PyPI) fetches our img2gray by major version from the local
Hub, verifies it and runs it (the Python half of the round trip)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest
from testsupport import run_client

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KERNELS_BINARY_DIR", "")) / "variants" / "img2gray" / "build"
REPO = "kernels-community/img2gray"


def publish(hub):
    if not any(BUILD.glob("torch*/metadata.json")):
        pytest.fail(f"no img2gray torch variant under {BUILD}: build the project with torch installed")
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "publish-img2gray.py"), "--root", str(hub.root),
                          "--build", str(BUILD), "--repo", REPO], check=True, capture_output=True, text=True).stdout
    return dict(line.split() for line in out.splitlines())


def test_publish_refs(hub, tmp_path):
    tags = publish(hub)
    assert list(tags) == ["v1.0.0", "v1.1.0", "v1.1.2", "v2.0.0"]
    refs = run_client(hub, tmp_path, f"""
        import json
        from huggingface_hub import HfApi
        r = HfApi().list_repo_refs("{REPO}", repo_type="kernel")
        print(json.dumps({{"branches": {{b.name: b.target_commit for b in r.branches}},
                          "tags": {{t.name: t.target_commit for t in r.tags}}}}))
    """)
    assert refs["tags"] == tags
    assert refs["branches"] == {"main": tags["v2.0.0"], "v1": tags["v1.1.2"], "v2": tags["v2.0.0"]}


def test_python_kernels_round_trip(hub, tmp_path):
    publish(hub)
    for major in (1, 2):
        got = run_client(hub, tmp_path, f"""
            import json, torch
            from kernels import get_kernel
            k = get_kernel("{REPO}", version={major}, backend="cpu")
            rgb = torch.randint(0, 256, (3, 17, 31, 3), dtype=torch.uint8)
            x = rgb.to(torch.float64)
            ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
            import pathlib
            meta = json.loads((pathlib.Path(k.__file__).parent / "metadata.json").read_text())
            print(json.dumps({{"ok": bool(torch.equal(k.img2gray(rgb), ref)), "version": meta["version"],
                              "variant": pathlib.Path(k.__file__).parent.name}}))
        """)
        assert got["ok"], got
        assert got["version"] == major
        assert got["variant"].startswith("torch") and "-cpu-" in got["variant"]

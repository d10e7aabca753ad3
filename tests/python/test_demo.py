"""scripts/demo.sh, the README's first command, on this build (--no-build:
the building is the test build's): the first invocation downloads img2gray
from the local Hub; a second invocation, with a new Hub process, gets the
same commits and loads everything from the cache it kept under build/;
both say where the output went, and the two hosts' images are identical."""
import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KERNELS_BINARY_DIR", ROOT / "build"))


def run_demo():
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    p = subprocess.run(["bash", str(ROOT / "scripts" / "demo.sh"), "--build-dir", str(BUILD), "--no-build"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_second_invocation_is_from_the_cache():
    out_dir = BUILD / "demo"
    shutil.rmtree(out_dir, ignore_errors=True)
    first = run_demo()
    assert first.count("from      the Hub (downloaded now)") == 1, first
    assert first.count("from      the cache (no download)") == 1, first
    commit = [ln for ln in first.splitlines() if ln.startswith("kernel ")][0]

    second = run_demo()
    assert "downloaded now" not in second, second
    assert second.count("from      the cache (no download)") == 2, second
    assert [ln for ln in second.splitlines() if ln.startswith("kernel ")] == [commit, commit], second

    # Paths inside the repository are shown relative to it (the README's commands run from there).
    shown = out_dir.resolve().relative_to(ROOT) if out_dir.resolve().is_relative_to(ROOT) else out_dir.resolve()
    for out in (first, second):
        assert "== the output" in out and f"image:   {shown / 'testcard-gray.png'}" in out, out
        assert f"cache:   {shown / 'cache'}" in out, out
    assert (out_dir / "testcard-gray.png").is_file()
    if (BUILD / "examples" / "kernels_img2gray_torch").exists():
        assert "both hosts wrote the same image" in second
        assert (out_dir / "testcard-gray.png").read_bytes() == (out_dir / "testcard-gray-torch.png").read_bytes()

"""libkernels and huggingface_hub share one cache, both ways.

libkernels is driven through ctypes (KERNELS_LIBRARY, the built .so) in a
subprocess, so its environment (HF_HUB_CACHE, HF_HUB_OFFLINE, ...) is exactly
what each step sets; huggingface_hub (the pinned PyPI release) runs in its
own subprocess too. The local Hub's request log proves who downloaded what.
"""

import hashlib
import json
import os
import subprocess
import sys

import pytest

from hubclient import random_bytes

V1 = "torch27-cxx11-cu126-x86_64-linux"
V2 = "torch-universal"
BIG = 3 * 1024 * 1024 + 17  # over the 1 MiB LFS threshold: a 302 to the CDN

LIBRARY = os.environ.get("KERNELS_LIBRARY")

# A tiny program: kernels_download (or kernels_variants_list) with opts NULL,
# so everything comes from the environment, like an embedding application.
WAIT_FOR_GO = r"""
import os, time
if os.environ.get("READY_DIR"):
    open(os.path.join(os.environ["READY_DIR"], str(os.getpid())), "w").close()
while os.environ.get("GO_FILE") and not os.path.exists(os.environ["GO_FILE"]):
    time.sleep(0.002)
"""

DRIVER = WAIT_FOR_GO + r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.kernels_error_last.restype = ctypes.c_char_p
lib.kernels_snapshot_path.restype = ctypes.c_char_p
lib.kernels_snapshot_path.argtypes = [ctypes.c_void_p]
lib.kernels_snapshot_free.argtypes = [ctypes.c_void_p]
repo, commit, variants = sys.argv[2].encode(), sys.argv[3].encode(), [v.encode() for v in sys.argv[4:]]
snap = ctypes.c_void_p()
arr = (ctypes.c_char_p * max(1, len(variants)))(*variants)
lib.kernels_download.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_void_p]
rc = lib.kernels_download(ctypes.byref(snap), repo, commit, arr, len(variants), None)
out = {"rc": rc, "error": lib.kernels_error_last().decode()}
if rc == 0:
    out["path"] = lib.kernels_snapshot_path(snap).decode()
    lib.kernels_snapshot_free(snap)
print(json.dumps(out))
"""

HF = WAIT_FOR_GO + r"""
import json, sys
from huggingface_hub import snapshot_download, hf_hub_download
repo, commit, variant, mode = sys.argv[1:5]
if mode == "snapshot":
    p = snapshot_download(repo, repo_type="kernel", revision=commit, allow_patterns=[f"build/{variant}/*"])
else:
    p = hf_hub_download(repo, f"build/{variant}/_k.abi3.so", repo_type="kernel", revision=commit)
print(json.dumps({"path": p}))
"""

pytestmark = pytest.mark.skipif(not LIBRARY, reason="KERNELS_LIBRARY is not set (run through ctest)")


def variant_files():
    init = b"from ._ops import ops\n"
    return {
        f"build/{V1}/__init__.py": init,
        f"build/{V1}/k/__init__.py": init,
        f"build/{V1}/_ops.py": b"ops = None\n",
        f"build/{V1}/metadata.json": b'{"id": "_k_abc", "version": 1}\n',
        f"build/{V1}/_k.abi3.so": random_bytes(BIG, 11),
        f"build/{V1}/deep/er/data.bin": random_bytes(7000, 12),
        f"build/{V2}/__init__.py": b"other\n",
        "README.md": b"# k\n",
    }


def env_for(hub, cache, offline=False):
    env = hub.hf_env(cache, HF_HUB_OFFLINE="1" if offline else "0")
    env.pop("KERNELS_CACHE", None)
    env["HF_HOME"] = str(cache) + "-home"  # no token file, no user settings
    return env


def ours(hub, cache, repo, commit, *variants, offline=False):
    out = subprocess.run(
        [sys.executable, "-c", DRIVER, LIBRARY, repo, commit, *variants],
        env=env_for(hub, cache, offline),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=True,
    )
    return json.loads(out.stdout)


def hf(hub, cache, repo, commit, variant, mode="snapshot", offline=False):
    out = subprocess.run(
        [sys.executable, "-c", HF, repo, commit, variant, mode],
        env=env_for(hub, cache, offline),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert out.returncode == 0, out.stderr.decode()
    return json.loads(out.stdout)["path"]


def layout(cache, repo_folder, commit):
    """{path under the snapshot: link target} and the set of blob names."""
    snap = os.path.join(cache, repo_folder, "snapshots", commit)
    links = {}
    for dirpath, _, names in os.walk(snap):
        for n in names:
            full = os.path.join(dirpath, n)
            links[os.path.relpath(full, snap)] = os.readlink(full)
    blobs = set(os.listdir(os.path.join(cache, repo_folder, "blobs")))
    return links, blobs


def check_files(snapshot, files, variant):
    for path, data in files.items():
        if path.startswith(f"build/{variant}/"):
            with open(os.path.join(snapshot, path), "rb") as f:
                assert f.read() == data, path


@pytest.fixture
def published(hub):
    files = variant_files()
    commit = hub.publish("org/k", files=files, branches=["main"])
    return files, commit


def test_hf_finds_what_libkernels_downloaded(hub, tmp_path, published):
    files, commit = published
    ours_cache, hf_cache = tmp_path / "ours", tmp_path / "hf"

    r = ours(hub, ours_cache, "org/k", commit, V1)
    assert r["rc"] == 0, r["error"]
    check_files(r["path"], files, V1)

    # huggingface_hub, offline, serves the snapshot and single files from our cache.
    hub.log_clear()
    p = hf(hub, ours_cache, "org/k", commit, V1, offline=True)
    assert p == r["path"]
    check_files(p, files, V1)
    p = hf(hub, ours_cache, "org/k", commit, V1, mode="file", offline=True)
    assert open(p, "rb").read() == files[f"build/{V1}/_k.abi3.so"]
    assert hub.log() == []

    # And the layout is exactly the one huggingface_hub writes itself.
    hf(hub, hf_cache, "org/k", commit, V1)
    assert layout(ours_cache, "kernels--org--k", commit) == layout(hf_cache, "kernels--org--k", commit)
    big = hashlib.sha256(files[f"build/{V1}/_k.abi3.so"]).hexdigest()
    assert os.readlink(os.path.join(r["path"], f"build/{V1}/deep/er/data.bin")).startswith("../../../../../../blobs/")
    assert os.path.exists(ours_cache / ".locks" / "kernels--org--k" / f"{big}.lock")


def test_libkernels_reuses_what_hf_downloaded(hub, tmp_path, published):
    files, commit = published
    cache = tmp_path / "shared"
    hf(hub, cache, "org/k", commit, V1)

    hub.log_clear()
    r = ours(hub, cache, "org/k", commit, V1)
    assert r["rc"] == 0, r["error"]
    check_files(r["path"], files, V1)
    # Only the tree was listed: not one blob crossed the wire.
    assert hub.count(path="/resolve/") == 0
    assert hub.count(listener="cdn") == 0
    assert hub.count("GET", "/tree/") >= 1

    # Offline, nothing at all.
    hub.log_clear()
    r = ours(hub, cache, "org/k", commit, V1, offline=True)
    assert r["rc"] == 0, r["error"]
    assert hub.log() == []
    r = ours(hub, cache, "org/k", commit, V2, offline=True)
    assert r["rc"] != 0 and V2 in r["error"] and "download" in r["error"]
    assert hub.log() == []


def test_missing_blob_in_hf_cache_is_fetched_once(hub, tmp_path, published):
    files, commit = published
    cache = tmp_path / "shared"
    hf(hub, cache, "org/k", commit, V1)
    oid = hashlib.sha1(b"blob %d\0" % 7000 + files[f"build/{V1}/deep/er/data.bin"]).hexdigest()
    os.unlink(cache / "kernels--org--k" / "blobs" / oid)

    hub.log_clear()
    r = ours(hub, cache, "org/k", commit, V1)
    assert r["rc"] == 0, r["error"]
    assert [e["path"].rsplit("/", 1)[-1] for e in hub.requests("GET", "/resolve/")] == ["data.bin"]
    check_files(r["path"], files, V1)


def test_libkernels_and_hf_fetching_at_once_share_each_download(hub, tmp_path, published):
    """3 libkernels and 3 huggingface_hub processes fill one empty cache at the
    same moment: the per-blob locks are the same flock locks, so every blob
    crosses the wire once and everyone ends with the complete variant."""
    files, commit = published
    cache = tmp_path / "shared"
    go = tmp_path / "go"
    ready = tmp_path / "ready"
    ready.mkdir()
    procs = []
    for i in range(6):
        env = env_for(hub, cache)
        env["GO_FILE"] = str(go)
        env["READY_DIR"] = str(ready)
        if i % 2 == 0:
            cmd = [sys.executable, "-c", DRIVER, LIBRARY, "org/k", commit, V1]
        else:
            cmd = [sys.executable, "-c", HF, "org/k", commit, V1, "snapshot"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    import time

    # Every interpreter started and waits at the barrier (60 s: a hang guard).
    deadline = time.monotonic() + 60
    while len(list(ready.iterdir())) < 6 and time.monotonic() < deadline and all(p.poll() is None for p in procs):
        time.sleep(0.01)
    assert len(list(ready.iterdir())) == 6, [p.poll() for p in procs]
    hub.log_clear()
    go.write_text("")
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
        if i % 2 == 0:
            r = json.loads(out)
            assert r["rc"] == 0, r["error"]
    snapshot = cache / "kernels--org--k" / "snapshots" / commit
    check_files(snapshot, files, V1)
    # Each plain file was served once (200), the LFS file once by the CDN.
    for path in files:
        if path.startswith(f"build/{V1}/") and path != f"build/{V1}/_k.abi3.so":
            served = hub.requests("GET", f"/resolve/{commit}/{path}", status=200)
            same_blob = [p for p in files if p != path and files[p] == files[path] and p.startswith(f"build/{V1}/")]
            others = sum(len(hub.requests("GET", f"/resolve/{commit}/{p}", status=200)) for p in same_blob)
            assert len(served) + others == 1, path
    assert hub.count("GET", listener="cdn", status=200) + hub.count("GET", listener="cdn", status=206) == 1

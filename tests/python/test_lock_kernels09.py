"""`kernels lock` on a specifier manifest ("org/name" = ">=0.1.0,<0.2")
writes a kernels.lock byte-identical to the one the real seed-era `kernels`
package writes for the same manifest and Hub state.

The reference is kernels 0.9.1 from PyPI with huggingface_hub 0.34.4 (the
pins are in tests/requirements-kernels09.txt). They are installed with
`pip install --no-deps --target` into $KERNELS_BINARY_DIR/kernels09 (once;
later runs reuse it) and run in a subprocess with PYTHONPATH pointing there,
so the kernels 0.17.2 / huggingface_hub 1.10.2 in site-packages that the
other tests use are left alone. Installing needs PyPI: without it the test
fails, it is not skipped.

kernels 0.9 resolves a specifier over the repo's `v*` tags (list_repo_refs),
then asks repo_info(files_metadata=True) for the chosen commit and hashes
every sibling under build/torch*/ (git blob sha1, or the LFS sha256). Its
huggingface_hub knows model repos only, so the repos here are model-type
(libkernels asks for a kernel repo first and falls back to the model form).
"""

import hashlib
import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from test_cli import Cli

SRC = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("KERNELS_BINARY_DIR") or SRC / "build")
REQUIREMENTS = SRC / "tests" / "requirements-kernels09.txt"


def _pins():
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{REQUIREMENTS}: '{line}' is not an exact pin"
            pins[name.strip()] = version.strip()
    return pins


PINS = _pins()


@pytest.fixture(scope="session")
def kernels09():
    """The folder holding the pinned kernels 0.9 and huggingface_hub 0.x."""
    target = BIN / "kernels09"
    stamp = target / ".requirements"
    want = REQUIREMENTS.read_text()
    if not (stamp.exists() and stamp.read_text() == want):
        tmp = BIN / f"kernels09.tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        p = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                            "--no-compile", "--target", str(tmp), "-r", str(REQUIREMENTS)],
                           capture_output=True, text=True, timeout=600)
        assert p.returncode == 0, f"cannot install {REQUIREMENTS} from PyPI:\n{p.stdout}{p.stderr}"
        (tmp / ".requirements").write_text(want)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(tmp, target)
    # The folder's packages shadow site-packages for the subprocess only; the
    # dependencies they share must be installed in site-packages.
    for dep in ("packaging", "pyyaml", "requests", "filelock", "fsspec", "tqdm", "typing_extensions"):
        importlib.metadata.version(dep)
    return target


def run_kernels09(target, hub, cache, *args):
    env = hub.hf_env(cache, PYTHONPATH=str(target), HF_HOME=str(cache) + "-home", PYTHONDONTWRITEBYTECODE="1")
    for k in ("KERNELS_CACHE", "HF_KERNELS_CACHE", "LOCAL_KERNELS"):
        env.pop(k, None)
    # Who answers: the pinned versions, from the private folder.
    probe = subprocess.run([sys.executable, "-c", (
        "import json, importlib.metadata as m, kernels, huggingface_hub\n"
        "print(json.dumps({'kernels': m.version('kernels'), 'huggingface_hub': huggingface_hub.__version__,\n"
        "                  'files': [kernels.__file__, huggingface_hub.__file__]}))")],
        env=env, capture_output=True, text=True, timeout=300)
    assert probe.returncode == 0, probe.stderr
    who = json.loads(probe.stdout)
    assert who["kernels"] == PINS["kernels"] and who["huggingface_hub"] == PINS["huggingface_hub"], who
    assert all(f.startswith(str(target) + os.sep) for f in who["files"]), who
    # Its console script (`kernels = kernels.cli:main`), as pip installed it.
    return subprocess.run([sys.executable, str(target / "bin" / "kernels"), *args], env=env, capture_output=True,
                          text=True, timeout=300)


# ---- the Hub state ----------------------------------------------------------

TORCH_CU = "torch28-cxx11-cu128-x86_64-linux"
TORCH_CPU = "torch27-cxx11-cpu-aarch64-linux"
UNIVERSAL = "torch-universal"
NOT_TORCH = "tvm-ffi01-cpu-x86_64-linux"  # skipped by kernels 0.9: not build/torch*


def variant_files(variant, pkg, version, big_seed):
    d = f"build/{variant}"
    files = {
        f"{d}/{pkg}/__init__.py": f"from ._ops import ops\n__version__ = {version!r}\n".encode(),
        f"{d}/{pkg}/_ops.py": f"import torch\nops = torch.ops._{pkg}_{version.replace('.', '_')}\n".encode(),
        # nested, and names around '/' in byte order ('-' < '.' < '/')
        f"{d}/{pkg}/layers/nested/deep.py": f"DEPTH = 3  # {version}\n".encode(),
        f"{d}/{pkg}/layers-extra.py": b"X = 1\n",
        f"{d}/{pkg}/layers.txt": b"layers\n",
        f"{d}/{pkg}/\u00e9t\u00e9.py": b"# non-ASCII name, hashed as UTF-8 bytes\n",
        f"{d}/{pkg}/_{pkg}.abi3.so": (hashlib.sha256(f"{variant}{version}".encode()).digest() * 8, True),
        f"{d}/metadata.json": json.dumps({"python-depends": [], "version": version}).encode(),
    }
    if big_seed is not None:
        # over the LFS threshold: hashed by its LFS sha256
        files[f"{d}/{pkg}/weights.bin"] = _random(1_200_000, big_seed)
    return files


def _random(size, seed):
    out, block = bytearray(), hashlib.sha256(str(seed).encode()).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:size])


def publish_relu(hub):
    """zoo/relu: v0.1.0, v0.1.2, v0.1.3rc1 (a pre-release), v0.2.0 and tags
    that are no versions; returns {tag: commit}."""
    repo, commits = "zoo/relu", {}
    for i, (tag, seed) in enumerate((("v0.1.0", 1), ("v0.1.2", 2), ("v0.1.3rc1", 3), ("v0.2.0", 4))):
        version = tag[1:]
        files = {"README.md": f"relu {version}\n".encode(), "build/README.md": b"not a variant\n"}
        files.update(variant_files(TORCH_CU, "relu", version, seed))
        files.update(variant_files(TORCH_CPU, "relu", version, None))
        files.update(variant_files(UNIVERSAL, "relu", version, None))
        files.update(variant_files(NOT_TORCH, "relu", version, seed + 10))
        # Small files matched by a filter=lfs rule are LFS too.
        files[".gitattributes"] = b"*.so filter=lfs diff=lfs merge=lfs -text\n"
        commits[tag] = hub.publish(repo, repo_type="model", files=files, tags=[tag], branches=["main"],
                                   annotated=(i == 1), trusted=True)
    hub.publish(repo, repo_type="model", target=commits["v0.2.0"], tags=["vnext", "release-0.1.2"], branches=[])
    return commits


def publish_gelu(hub):
    """acme/gelu: two plain releases, one variant."""
    commits = {}
    for tag in ("v0.1.0", "v0.1.1"):
        files = variant_files(UNIVERSAL, "gelu", tag[1:], None)
        commits[tag] = hub.publish("acme/gelu", repo_type="model", files=files, tags=[tag], trusted=True)
    return commits


def publish_notorch(hub):
    """acme/notorch: variants, but none under build/torch*."""
    return hub.publish("acme/notorch", repo_type="model", files=variant_files(NOT_TORCH, "notorch", "1.0.0", None),
                       tags=["v1.0.0"], trusted=True)


def project(tmp_path, name, deps):
    d = tmp_path / name
    d.mkdir()
    (d / "pyproject.toml").write_text('[project]\nname = "app"\n\n[tool.kernels.dependencies]\n' + deps)
    return d


def lock_both(hub, kernels09, tmp_path, deps):
    """Locks the same manifest with kernels 0.9 and with our CLI; returns
    (their bytes, our bytes)."""
    theirs, ours = project(tmp_path, "theirs", deps), project(tmp_path, "ours", deps)
    p = run_kernels09(kernels09, hub, tmp_path / "cache-theirs", "lock", str(theirs))
    assert p.returncode == 0, p.stdout + p.stderr
    Cli(hub, tmp_path / "cache-ours").run("lock", str(ours), check=0)
    return (theirs / "kernels.lock").read_bytes(), (ours / "kernels.lock").read_bytes()


def first_difference(a, b):
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"first difference at byte {i}:\n theirs {a[max(0, i - 80):i + 80]!r}\n ours   {b[max(0, i - 80):i + 80]!r}"


def test_specifier_lock_byte_identical(hub, kernels09, tmp_path):
    relu = publish_relu(hub)
    gelu = publish_gelu(hub)
    deps = '"zoo/relu" = ">=0.1.0,<0.2"\n"acme/gelu" = "==0.1.0"\n'
    theirs, ours = lock_both(hub, kernels09, tmp_path, deps)

    # What kernels 0.9 wrote is what this Hub state calls for (so that equal
    # bytes mean something): manifest order, the newest final release in the
    # range (not the pre-release, not v0.2.0), every torch variant and no other.
    lock = json.loads(theirs)
    assert [e["repo_id"] for e in lock] == ["zoo/relu", "acme/gelu"]
    assert lock[0]["sha"] == relu["v0.1.2"] and lock[1]["sha"] == gelu["v0.1.0"]
    assert sorted(lock[0]["variants"]) == sorted([TORCH_CU, TORCH_CPU, UNIVERSAL])
    assert list(lock[1]["variants"]) == [UNIVERSAL]
    hashes = {v["hash"] for e in lock for v in e["variants"].values()}
    assert len(hashes) == 4 and all(h.startswith("sha256-") and len(h) == 71 for h in hashes)

    assert ours == theirs, first_difference(theirs, ours)


def test_specifier_lock_without_torch_variants(hub, kernels09, tmp_path):
    # A release with no build/torch* folder: kernels 0.9 locks the commit
    # with no variants.
    commit = publish_notorch(hub)
    theirs, ours = lock_both(hub, kernels09, tmp_path, '"acme/notorch" = ">=1"\n')
    assert json.loads(theirs) == [{"repo_id": "acme/notorch", "sha": commit, "variants": {}}]
    assert ours == theirs, first_difference(theirs, ours)


def test_specifier_lock_with_committed_bytecode(hub, kernels09, tmp_path):
    # Byte-code committed by mistake is part of the variant for every kernels
    # release that locks specifier manifests (0.9 to 0.13 hash all of
    # build/torch*/; only the integer-only 0.16 leaves *.pyc and __pycache__
    # out).
    files = variant_files(UNIVERSAL, "relu", "0.1.0", None)
    files[f"build/{UNIVERSAL}/relu/__pycache__/_ops.cpython-311.pyc"] = b"\x00committed byte-code"
    files[f"build/{UNIVERSAL}/relu/stale.pyc"] = b"\x00stale"
    commit = hub.publish("zoo/relu", repo_type="model", files=files, tags=["v0.1.0"], trusted=True)
    theirs, ours = lock_both(hub, kernels09, tmp_path, '"zoo/relu" = ">=0.1"\n')
    assert json.loads(theirs)[0]["sha"] == commit
    assert ours == theirs, first_difference(theirs, ours)

    # Both clients download it and find the files match that lock.
    p = run_kernels09(kernels09, hub, tmp_path / "cache-theirs", "download", str(tmp_path / "theirs"),
                      "--all-variants")
    assert p.returncode == 0, p.stdout + p.stderr
    cli = Cli(hub, tmp_path / "cache-ours")
    cli.run("download", str(tmp_path / "ours"), "--all-variants", check=0)
    # (the metadata digest check fails here: these metadata.json files are
    # not kernel-builder's; the lock hash is what this test is about)
    j = json.loads(cli.run("verify", str(tmp_path / "ours"), "--json").stdout)
    v = j["kernels"][0]["variants"]
    assert [(x["name"], x["hash_ok"]) for x in v] == [(UNIVERSAL, True)], j
    assert v[0]["hash"] == v[0]["lock_hash"] == json.loads(theirs)[0]["variants"][UNIVERSAL]["hash"]

    # A lock written by kernels 0.16 (hashes without byte-code) is honoured
    # too; a wrong hash is not.
    prefix = f"build/{UNIVERSAL}/"
    pairs = sorted((p[len(prefix):].encode(), hashlib.sha1(b"blob %d\0" % len(d) + d).digest())
                   for p, d in ((p, d[0] if isinstance(d, tuple) else d) for p, d in files.items())
                   if p.startswith(prefix) and not p.endswith(".pyc") and "__pycache__" not in p.split("/"))
    without = "sha256-" + hashlib.sha256(b"".join(a + b for a, b in pairs)).hexdigest()
    assert without != v[0]["hash"]
    for lock_hash, rc in ((without, 0), ("sha256-" + "0" * 64, 1)):
        d = project(tmp_path, f"v016-{rc}", '"zoo/relu" = ">=0.1"\n')
        (d / "kernels.lock").write_text(json.dumps([{"repo_id": "zoo/relu", "sha": commit, "variants": {
            UNIVERSAL: {"hash": lock_hash, "hash_type": "git_lfs_concat"}}}], indent=2))
        p = Cli(hub, tmp_path / f"cache-{rc}").run("download", str(d), "--all-variants", check=rc)
        assert rc == 0 or "does not match the lock file" in p.stderr, p.stderr

"""The committed variant anchor (tests/data/variants/anchor.json) is exactly
what the pinned Python `kernels` resolver answers: re-run the generator and
compare. tests/test_variant.c holds libkernels to the same table."""
import subprocess
import sys
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[1] / "data" / "variants" / "generate.py"


def test_anchor_matches_python_kernels():
    import kernels  # noqa: F401  (pinned in tests/requirements.txt)

    r = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "matches" in r.stdout


def test_anchor_uses_pinned_kernels():
    import json

    import kernels

    doc = json.loads(GENERATOR.with_name("anchor.json").read_text(encoding="utf-8"))
    assert doc["kernels_version"] == kernels.__version__ == "0.17.2"
    assert len(doc["cases"]) >= 40


def _variant_folder(tmp_path):
    d = tmp_path / "torch-cpu"
    (d / "pkg" / "__pycache__").mkdir(parents=True)
    (d / "a.so").write_bytes(b"\x7fELF not really")
    (d / "pkg" / "b.py").write_text("x = 1\n")
    (d / "pkg" / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"pyc")
    (d / "c.pyc").write_bytes(b"pyc")
    (d / "metadata.json.sigstore").write_text("{}")
    (d / "sub").mkdir()
    (d / "sub" / "metadata.json").write_text("{}")  # only the top-level one is excluded
    return d


def test_test_digests_match_kernels(tmp_path):
    """The digest our test fixture writes (make_metadata.py) is the one the
    Python client computes for the same folder."""
    import importlib.util

    from kernels._rust import Digest, DigestAlgorithm

    d = _variant_folder(tmp_path)
    spec = importlib.util.spec_from_file_location("make_metadata", GENERATOR.with_name("make_metadata.py"))
    mm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mm)
    ours = mm.digest_files(str(d))
    theirs = Digest.hash_variant(DigestAlgorithm.SHA256, str(d)).files
    assert ours == dict(theirs)
    assert sorted(ours) == ["a.so", "pkg/b.py", "sub/metadata.json"]


VERIFY_SCRIPT = """
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.kernels_verify_variant.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
lib.kernels_error_last.restype = ctypes.c_char_p
rc = lib.kernels_verify_variant(None, sys.argv[2].encode(), None)
print(rc, lib.kernels_error_last().decode())
"""


def _verify_with_libkernels(folder):
    """kernels_verify_variant through ctypes, in a child: a sanitizer build of
    libkernels needs its runtime preloaded into the interpreter."""
    import os
    import re

    library = os.environ["KERNELS_LIBRARY"]
    env = dict(os.environ)
    ldd = subprocess.run(["ldd", library], capture_output=True, text=True).stdout
    runtimes = re.findall(r"=> (\S*lib(?:asan|ubsan)\.so\S*)", ldd)
    if runtimes:
        env["LD_PRELOAD"] = ":".join(runtimes)
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    r = subprocess.run([sys.executable, "-c", VERIFY_SCRIPT, library, str(folder)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stderr
    rc, _, message = r.stdout.partition(" ")
    return int(rc), message


def test_libkernels_verifies_kernels_digest(tmp_path):
    """libkernels accepts a folder whose digest the Python client computed,
    and rejects it once a file changes."""
    import json

    from kernels._rust import Digest, DigestAlgorithm

    d = _variant_folder(tmp_path)
    files = dict(Digest.hash_variant(DigestAlgorithm.SHA256, str(d)).files)
    meta = {"id": "_k_cpu_1", "name": "kk", "version": 1, "license": "MIT", "python-depends": [],
            "backend": {"type": "cpu"}, "digest": {"algorithm": "sha256", "files": files}}
    (d / "metadata.json").write_text(json.dumps(meta))
    rc, message = _verify_with_libkernels(d)
    assert rc == 0, message
    (d / "pkg" / "b.py").write_text("x = 2\n")
    rc, message = _verify_with_libkernels(d)
    assert rc == -10, message  # KERNELS_EINTEGRITY
    assert "hash mismatch: pkg/b.py" in message

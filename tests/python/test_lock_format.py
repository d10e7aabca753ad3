"""Cross-checks of the pure parsing/formatting stages against reference
implementations:

- the strict TOML reader (lib/util/toml.c) against Python's tomllib on every file
  of tests/data/pyproject/ (same tree for valid files; both refuse invalid);
- kernels.lock writing (lib/lock.c) against the real `kernels` package;
- git_lfs_concat variant hashes against an independent computation.

The C side is reached through the test programs' dump modes
(`test_toml --dump FILE`, `test_lock --...`)."""

import datetime
import math
import os
import pathlib
import subprocess
import tomllib

import pytest

SRC = pathlib.Path(os.environ.get("KERNELS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BIN = pathlib.Path(os.environ.get("KERNELS_BINARY_DIR", SRC / "build"))
PYPROJECT = SRC / "tests" / "data" / "pyproject"


def _program(name):
    path = BIN / "tests" / name
    assert path.exists(), f"{path} is missing: build the C tests first (cmake --build)"
    return str(path)


# ---- TOML ----------------------------------------------------------------


def _tag(value):
    """tomllib's value in the tagged form `test_toml --dump` prints."""
    if isinstance(value, dict):
        return {k: _tag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tag(v) for v in value]
    if isinstance(value, bool):
        return {"type": "bool", "value": "true" if value else "false"}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, int):
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, datetime.datetime):
        return {"type": "datetime" if value.tzinfo else "datetime-local", "value": value}
    if isinstance(value, datetime.date):
        return {"type": "date-local", "value": value}
    if isinstance(value, datetime.time):
        return {"type": "time-local", "value": value}
    raise TypeError(type(value))


def _same(ours, ref, where="$"):
    """Compares our dump with the tagged reference; floats by value, dates
    by what tomllib reads from the text we kept."""
    if isinstance(ref, dict) and set(ref) == {"type", "value"} and not isinstance(ref["value"], (dict, list)) \
            and isinstance(ours, dict) and ours.get("type") == ref["type"]:
        kind = ref["type"]
        if kind == "float":
            a, b = float(ours["value"]), ref["value"]
            assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), where
        elif kind in ("datetime", "datetime-local", "date-local", "time-local"):
            assert tomllib.loads("x = " + ours["value"])["x"] == ref["value"], where
        else:
            assert ours == ref, where
        return
    assert type(ours) is type(ref), f"{where}: {ours!r} vs {ref!r}"
    if isinstance(ref, dict):
        assert set(ours) == set(ref), f"{where}: keys {sorted(set(ours) ^ set(ref))}"
        for k in ref:
            _same(ours[k], ref[k], f"{where}.{k}")
    elif isinstance(ref, list):
        assert len(ours) == len(ref), where
        for i, (a, b) in enumerate(zip(ours, ref)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert ours == ref, where


VALID = sorted((PYPROJECT / "valid").glob("*.toml"))
INVALID = sorted((PYPROJECT / "invalid").glob("*.toml"))


def test_collection_is_there():
    assert len(VALID) >= 20 and len(INVALID) >= 40


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_toml_valid_matches_tomllib(path):
    import json

    with open(path, "rb") as f:
        ref = _tag(tomllib.load(f))
    r = subprocess.run([_program("test_toml"), "--dump", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _same(json.loads(r.stdout), ref)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_toml_invalid_refused_by_both(path):
    r = subprocess.run([_program("test_toml"), "--dump", str(path)], capture_output=True, text=True)
    assert r.returncode == 2, f"our reader accepted {path.name}"
    assert f"{path}:" in r.stderr and "\n" not in r.stderr.strip()
    if path.name.startswith("limit-"):
        return  # beyond TOML 1.0's 64-bit integers or our depth limit; tomllib has neither
    with pytest.raises((tomllib.TOMLDecodeError, UnicodeDecodeError)):
        with open(path, "rb") as f:
            tomllib.load(f)


def _ours_vs_tomllib(data, tmp_path):
    """Returns a description of a disagreement, or None."""
    import json

    f = tmp_path / "doc.toml"
    f.write_bytes(data)
    try:
        ref = _tag(tomllib.loads(data.decode("utf-8")))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError):
        ref = None
    r = subprocess.run([_program("test_toml"), "--dump", str(f)], capture_output=True, text=True)
    if r.returncode not in (0, 2):
        return f"crash {r.returncode}: {r.stderr[-300:]}"
    if ref is None:
        return None if r.returncode == 2 else "accepted what tomllib refuses"
    if r.returncode == 2:
        limits = ("out of range", "nesting deeper")
        return None if any(x in r.stderr for x in limits) else f"refused what tomllib accepts: {r.stderr}"
    try:
        _same(json.loads(r.stdout), ref)
    except AssertionError as e:
        return f"different value: {e}"
    return None


def test_toml_differential_mutants(tmp_path):
    """Random edits of the valid files (fixed seed): both readers accept or
    both refuse, and accepted documents read the same."""
    import random

    rnd = random.Random(20240607)
    pieces = [b'"', b"'", b'"""', b"'''", b"[", b"]", b"[[", b"{", b"}", b",", b"=", b".", b"\n", b"\r\n",
              b"#", b"\\", b"\\u", b"0x", b"_", b"-", b"+", b"1979-05-27", b"T07:32:00", b" ", b"\t", b"\x00",
              b"\xc3\xa9", b"a", b"1", b"e", b"inf", b"true", b"\r"]
    failures = []
    for i in range(300):
        data = bytearray(VALID[rnd.randrange(len(VALID))].read_bytes())
        for _ in range(rnd.randint(1, 3)):
            op, pos = rnd.random(), rnd.randint(0, len(data))
            if op < 0.4:
                data[pos:pos] = rnd.choice(pieces)
            elif op < 0.7:
                del data[pos:pos + rnd.randint(1, 5)]
            elif op < 0.85 and data:
                data[min(pos, len(data) - 1)] = rnd.randint(0, 255)
            else:
                data = data[:pos]
        problem = _ours_vs_tomllib(bytes(data), tmp_path)
        if problem:
            failures.append((i, problem, bytes(data)[:200]))
    assert not failures, failures[:3]


def test_toml_differential_tables(tmp_path):
    """Random mixes of [headers], [[arrays]], dotted keys and inline tables
    over a few names (fixed seed): table definition rules agree with tomllib."""
    import random

    rnd = random.Random(4242)

    def key(n):
        return ".".join(rnd.choice("ab") for _ in range(n))

    failures = []
    for _ in range(500):
        lines = []
        for _ in range(rnd.randint(2, 8)):
            r = rnd.random()
            if r < 0.3:
                lines.append(f"[{key(rnd.randint(1, 3))}]")
            elif r < 0.5:
                lines.append(f"[[{key(rnd.randint(1, 3))}]]")
            elif r < 0.8:
                lines.append(f"{key(rnd.randint(1, 3))} = 1")
            elif r < 0.9:
                lines.append(f"{key(rnd.randint(1, 2))} = {{ {key(rnd.randint(1, 2))} = 1 }}")
            else:
                lines.append(f"{key(1)} = [{{ {key(1)} = 1 }}]")
        doc = ("\n".join(lines) + "\n").encode()
        problem = _ours_vs_tomllib(doc, tmp_path)
        if problem:
            failures.append((problem, doc))
    assert not failures, failures[:3]


# ---- kernels.lock, DEPENDENCY format: the real kernels 0.17.2 ------------

import json
import shutil
import types

from kernels._rust import KernelDependency, KernelLock, KernelLocks, KernelVersion

LOCK_DATA = SRC / "tests" / "data" / "lock"


def _py_locks(items):
    return KernelLocks({
        KernelDependency(repo_id=r, version=KernelVersion.Version(v) if isinstance(v, int) else KernelVersion.Revision(v)):
        KernelLock(commit=c)
        for r, v, c in items
    })


def _ours_build(tmp_path, fmt, entries):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"format": fmt, "entries": entries}))
    r = subprocess.run([_program("test_lock"), "--build", str(spec)], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    return r.stdout


DEPENDENCY_CASES = {
    "empty": [],
    "one-version": [("kernels-community/activation", 1, "4148918a9e1f8b0bd8bcd1ae6b8a5c9d6e2f3a41")],
    "sorting": [
        ("b/x", "main", "1" * 40), ("b/x", 10, "2" * 40), ("b/x", 2, "3" * 40), ("A/b", 1, "4" * 40),
        ("a/B", "v1.2.3", "5" * 40), ("b/x", 0, "6" * 40), ("b/x", "feature/x", "7" * 40),
        ("b/x", 18446744073709551615 >> 1, "8" * 40), ("a-b/c", 3, "9" * 40), ("a_b/c", 3, "9" * 40),
    ],
    "escapes": [("org/k", 'x\x7f\x01\x1f\u00e9\U0001F600/\\"\b\f\t\r\n', "a" * 40)],
    "commit-forms": [("org/upper", 1, "ABCDEF" + "0" * 34), ("org/sha256", "main", "0123456789abcdef" * 4)],
}


@pytest.mark.parametrize("case", sorted(DEPENDENCY_CASES))
def test_dependency_lock_is_byte_identical_to_kernels_017(tmp_path, case):
    items = DEPENDENCY_CASES[case]
    expected = _py_locks(items).to_json().encode()
    entries = [{"repo_id": r, ("version" if isinstance(v, int) else "revision"): v, "commit": c} for r, v, c in items]
    assert _ours_build(tmp_path, "dependency", entries) == expected
    # and back: we read what Python wrote and write the same bytes
    lock = tmp_path / "kernels.lock"
    lock.write_bytes(expected)
    r = subprocess.run([_program("test_lock"), "--roundtrip", str(lock)], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == expected
    # and Python reads ours as the same locks
    assert KernelLocks.from_json(_ours_build(tmp_path, "dependency", entries).decode()) == _py_locks(items)


def _fake_hub(monkeypatch, module, commits):
    """Stands in for the network half of `kernels lock`: every dependency
    resolves to the commit the test chose."""
    def extract(depends, *, api):
        return KernelLocks({d: KernelLock(commit=commits[d.repo_id]) for d in depends})
    monkeypatch.setattr(module, "extract_dependency_locks", extract)
    monkeypatch.setattr(module, "_get_hf_api", lambda: None)


def test_lock_command_integer_form_matches_kernels_017(tmp_path, monkeypatch):
    """The real `kernels lock` code path (cli/lock.py: tomllib reads the
    manifest, KernelLocks.to_json, f.write) against ours (kernels_manifest_load,
    kernels_lock_add_version, kernels_lock_save) for the same manifest."""
    import kernels.cli.lock as cli_lock

    pyproject = (
        '[project]\nname = "app"\n\n'
        "[tool.kernels.dependencies]\n"
        '"kernels-community/flash-attn" = 2\n'
        '"kernels-community/activation" = 1\n'
        "'kernels-community/relu' = 0  # unstable\n"
    )
    commits = {
        "kernels-community/flash-attn": "0d3c2b1a09f8e7d6c5b4a392817263544536271f",
        "kernels-community/activation": "4148918a9e1f8b0bd8bcd1ae6b8a5c9d6e2f3a41",
        "kernels-community/relu": "ABCDEFABCDEFABCDEFABCDEFABCDEFABCDEFABCD",
    }
    py_dir, c_dir = tmp_path / "py", tmp_path / "c"
    for d in (py_dir, c_dir):
        d.mkdir()
        (d / "pyproject.toml").write_text(pyproject)
    _fake_hub(monkeypatch, cli_lock, commits)
    cli_lock.lock_kernels(types.SimpleNamespace(project_dir=py_dir))
    hub = tmp_path / "hub.json"
    hub.write_text(json.dumps({k: {"commit": v} for k, v in commits.items()}))
    r = subprocess.run([_program("test_lock"), "--lock-project", str(c_dir), str(hub)], capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    py_bytes = (py_dir / "kernels.lock").read_bytes()
    assert (c_dir / "kernels.lock").read_bytes() == py_bytes
    assert b"abcdefabcdef" in py_bytes and not py_bytes.endswith(b"\n")


def test_python_refuses_what_we_refuse():
    """kernels 0.17.2 refuses each malformed DEPENDENCY-format file we refuse,
    except where we are stricter on purpose (listed)."""
    stricter = {
        "dep-invalid-repo.lock",  # upstream does not validate repo ids; we use them in paths and URLs
        "nul-in-string.lock",     # serde accepts \u0000 in a revision; we refuse NUL in any name
    }
    names = [l.split()[0] for l in (LOCK_DATA / "invalid" / "expected.txt").read_text().splitlines()
             if l and not l.startswith("#")]
    checked = 0
    for name in names:
        path = LOCK_DATA / "invalid" / name
        r = subprocess.run([_program("test_lock"), "--check", str(path)], capture_output=True, text=True)
        assert r.returncode == 2 and name in r.stderr, name
        if name.startswith("var-") or name in stricter:
            continue
        with pytest.raises((ValueError, UnicodeDecodeError)):
            KernelLocks.from_json(path.read_bytes().decode())
        checked += 1
    assert checked >= 20
    for name in stricter:
        KernelLocks.from_json((LOCK_DATA / "invalid" / name).read_text())  # accepted upstream


def test_python_reads_our_valid_dependency_files():
    for path in sorted((LOCK_DATA / "valid").glob("dependency*.lock")) + [LOCK_DATA / "valid" / "empty.lock"]:
        text = path.read_text()
        assert KernelLocks.from_json(text).to_json() == text


# ---- kernels.lock, VARIANTS format and git_lfs_concat (kernels 0.9) -------

def _git_blob_sha1(path):
    """git's own answer, independent of both implementations."""
    return subprocess.run(["git", "hash-object", "--no-filters", str(path)], capture_output=True, text=True,
                          check=True).stdout.strip()


def _git_lfs_concat(files):
    """kernels 0.9's algorithm (lockfile.py get_kernel_locks), stated anew:
    sort (path bytes, hash) pairs, sha256 over path bytes + raw hash bytes.
    kernels 0.16 and later also leave out __pycache__/ and *.pyc."""
    import hashlib

    kept = [(p.encode("utf-8"), h) for p, h, _ in files
            if not p.endswith(".pyc") and "__pycache__" not in p.split("/")]
    m = hashlib.sha256()
    for path, h in sorted(kept):
        m.update(path)
        m.update(bytes.fromhex(h))
    return "sha256-" + m.hexdigest()


VARIANT_FILES = {
    "__init__.py": b"from ._ops import ops\n",
    "_ops.py": b"import torch\nops = torch.ops._img2gray_7a4e5a7\n",
    "_img2gray_7a4e5a7.abi3.so": bytes(range(256)) * 64,  # stored in LFS on the Hub
    "img2gray/__init__.py": b"",
    "a.b": b"sorts before a/b",
    "a/b": b"bytewise: '.' (0x2e) < '/' (0x2f)",
    "z.txt": b"z",
    "\u00e9t\u00e9.txt": "non-ASCII sorts after ASCII bytewise".encode(),
    "metadata.json": b'{"id": "_img2gray_7a4e5a7", "version": 1}\n',
    "__pycache__/_ops.cpython-311.pyc": b"\x00junk",
    "img2gray/__pycache__/x.txt": b"skipped too",
    "stale.pyc": b"skipped",
}
LFS = {"_img2gray_7a4e5a7.abi3.so"}


def _listing(root):
    out = []
    for rel, data in VARIANT_FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        import hashlib
        h = hashlib.sha256(data).hexdigest() if rel in LFS else _git_blob_sha1(p)
        out.append((rel, h, rel in LFS))
    return out


def test_git_lfs_concat_matches_reference(tmp_path):
    files = _listing(tmp_path / "variant")
    expected = _git_lfs_concat(files)
    listing = tmp_path / "files.json"
    listing.write_text(json.dumps([{"path": p, "hash": h, "is_lfs": l} for p, h, l in reversed(files)]))
    r = subprocess.run([_program("test_lock"), "--hash", str(listing)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected
    # from the folder itself, with the LFS files named
    r = subprocess.run([_program("test_lock"), "--hash-dir", str(tmp_path / "variant"), "--lfs", *LFS],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected
    # a changed byte changes the hash
    (tmp_path / "variant" / "z.txt").write_bytes(b"Z")
    r = subprocess.run([_program("test_lock"), "--hash-dir", str(tmp_path / "variant"), "--lfs", *LFS],
                       capture_output=True, text=True)
    assert r.stdout.strip() != expected


def test_git_lfs_concat_from_cache_snapshot(tmp_path):
    """A huggingface_hub cache snapshot: links into blobs/ named by ETag (git
    sha1 or LFS sha256); the blob names decide the hash kind, as kernels 0.9's
    validate_kernel does."""
    files = _listing(tmp_path / "plain")
    repo = tmp_path / "hub" / "kernels--org--img2gray"
    commit = "e6d2d6b1c8f4a5b3c2d1e0f9a8b7c6d5e4f3a2b1"
    variant = repo / "snapshots" / commit / "build" / "torch27-cxx11-cu126-x86_64-linux"
    (repo / "blobs").mkdir(parents=True)
    for rel, h, _ in files:
        if rel.endswith(".pyc") or "__pycache__" in rel:
            continue  # Python writes these itself, as plain files, next to the links
        shutil.copy(tmp_path / "plain" / rel, repo / "blobs" / h)
        link = variant / rel
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(os.path.relpath(repo / "blobs" / h, link.parent))
    (variant / "__pycache__").mkdir()
    (variant / "__pycache__" / "_ops.cpython-311.pyc").write_bytes(b"junk")
    r = subprocess.run([_program("test_lock"), "--hash-dir", str(variant)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == _git_lfs_concat(files)
    # tampering with one blob shows
    blob = repo / "blobs" / dict((p, h) for p, h, _ in files)["_ops.py"]
    blob.write_bytes(b"tampered")
    r = subprocess.run([_program("test_lock"), "--hash-dir", str(variant)], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() != _git_lfs_concat(files)


def _v09_lock_json(manifest_items, hub):
    """What kernels 0.9's `kernels lock` writes: for each manifest entry in
    order, {repo_id, sha, variants: {name: {hash, hash_type}}} with variants in
    listing order, dumped by json.dump(indent=2) (ensure_ascii, no newline)."""
    out = []
    for repo_id, _spec in manifest_items:
        info = hub[repo_id]
        variants = {}
        for name, files in info["variants"]:
            variants[name] = {"hash": _git_lfs_concat([(f["path"], f["hash"], f["is_lfs"]) for f in files]),
                              "hash_type": "git_lfs_concat"}
        out.append({"repo_id": repo_id, "sha": info["commit"], "variants": variants})
    return json.dumps(out, indent=2)


def test_lock_command_specifier_form_matches_kernels_09(tmp_path):
    files = _listing(tmp_path / "variant")
    listing = [{"path": p, "hash": h, "is_lfs": l} for p, h, l in files]
    hub = {
        "drbh/img2gray": {"commit": "f0e1d2c3b4a5968778695a4b3c2d1e0f1a2b3c4d", "variants": [
            ["torch27-cxx11-cu126-x86_64-linux", listing],
            ["torch26-cxx98-cu124-x86_64-linux", listing[:3]],
            ["torch-universal", listing[5:]],
        ]},
        "kernels-community/activation": {"commit": "95d4d2b5b8a1a3c6c2f8e1d4b7a9c0e3f6a2b5c8", "variants": []},
    }
    pyproject = ('[tool.kernels.dependencies]\n"drbh/img2gray" = ">=0.1.2,<0.2.0"\n'
                 '"kernels-community/activation" = "~=0.0.3"\n')
    (tmp_path / "pyproject.toml").write_text(pyproject)
    items = list(tomllib.loads(pyproject)["tool"]["kernels"]["dependencies"].items())
    expected = _v09_lock_json(items, hub)
    (tmp_path / "hub.json").write_text(json.dumps(hub))
    r = subprocess.run([_program("test_lock"), "--lock-project", str(tmp_path), str(tmp_path / "hub.json")],
                       capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    assert (tmp_path / "kernels.lock").read_text() == expected
    # and the lock we wrote reads back
    r = subprocess.run([_program("test_lock"), "--roundtrip", str(tmp_path / "kernels.lock")], capture_output=True,
                       text=True)
    assert r.returncode == 0 and r.stdout == expected


def test_variants_valid_files_are_json_dump_output():
    """Our VARIANTS-format fixtures are exactly what json.dump(indent=2)
    writes for their content, so the round-trip test in test_lock.c holds
    our writer to Python's."""
    for path in sorted((LOCK_DATA / "valid").glob("variants*.lock")):
        text = path.read_text()
        assert json.dumps(json.loads(text), indent=2) == text

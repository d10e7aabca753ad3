"""Helpers the Python tests share (the C tests' tests/support/ for pytest):
processes they start, free ports, virtualenvs made once, built variants
imported as the Python `kernels` package imports them, and Python clients
run against the local Hub. The `hub` fixture itself is conftest.py's."""

import base64
import ctypes
import fcntl
import hashlib
import importlib.util
import json
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def stop_process(proc, grace=10):
    """Terminates `proc`, kills it if it has not exited after `grace`
    seconds (a hang guard, never a measured time), and reaps it."""
    proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cached_venv(folder, requirements, pip_args=(), after=None):
    """The interpreter of a virtualenv at `folder` with `requirements`
    installed (pip install -r, plus `pip_args`), made once and remade when
    the requirements file changes; under a lock, so two runs at once never
    both build it. `after(venv)` runs once the packages are in, before the
    venv counts as made."""
    folder = Path(folder)
    requirements = Path(requirements)
    stamp = folder / "requirements.txt"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / (folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.exists() or stamp.read_text() != requirements.read_text():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(folder)], check=True)
            subprocess.run([str(folder / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *pip_args,
                            "-r", str(requirements)], check=True)
            if after:
                after(folder)
            stamp.write_text(requirements.read_text())
    return folder / "bin" / "python"


def fetch_api(library):
    """libkernels (the file `library`) through ctypes, with the prototypes
    of what a fetch calls: kernels_error_last, kernels_revision_resolve,
    _commit and _free, kernels_versions_list, kernels_free,
    kernels_download, kernels_snapshot_path and _free."""
    c = ctypes.CDLL(library)
    ptr = ctypes.c_void_p
    c.kernels_error_last.restype = ctypes.c_char_p
    c.kernels_revision_resolve.argtypes = [ctypes.POINTER(ptr), ctypes.c_char_p, ctypes.c_char_p, ptr]
    c.kernels_revision_commit.restype = ctypes.c_char_p
    c.kernels_revision_commit.argtypes = [ptr]
    c.kernels_revision_free.argtypes = [ptr]
    c.kernels_versions_list.argtypes = [ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
                                        ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p, ptr]
    c.kernels_free.argtypes = [ptr]
    c.kernels_download.argtypes = [ctypes.POINTER(ptr), ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ptr]
    c.kernels_snapshot_path.restype = ctypes.c_char_p
    c.kernels_snapshot_path.argtypes = [ptr]
    c.kernels_snapshot_free.argtypes = [ptr]
    return c


def built_variants(build, pattern, hint, need=None):
    """The folders under `build` named like `pattern` (a glob), holding the
    file `need` when given, sorted. None is a failure that says what to
    do (`hint`), never a skip."""
    found = sorted(p for p in build.glob(pattern) if p.is_dir() and (not need or (p / need).is_file())) \
        if build.is_dir() else []
    if not found:
        pytest.fail(f"no {pattern} variant under {build}: {hint}")
    return found


def variant_digest(folder):
    """metadata.json's digest of a variant folder, as kernel-builder writes
    it: every file but metadata.json and Python bytecode, by its path in
    the folder, with its SHA-256 in base64."""
    files = {}
    for f in Path(folder).rglob("*"):
        rel = f.relative_to(folder).as_posix()
        if f.is_file() and rel != "metadata.json" and "__pycache__" not in f.parts and f.suffix != ".pyc":
            files[rel] = base64.b64encode(hashlib.sha256(f.read_bytes()).digest()).decode()
    return {"algorithm": "sha256", "files": files}


def load_variant(path):
    """A built variant folder imported as `kernels` imports one: its
    __init__.py as a package named by metadata.json's id (once per id).
    Returns (module, metadata)."""
    path = Path(path)
    meta = json.loads((path / "metadata.json").read_text())
    name = meta["id"]
    if name in sys.modules:
        return sys.modules[name], meta
    spec = importlib.util.spec_from_file_location(name, path / "__init__.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod, meta


def run_client(hub, tmp_path, code):
    """Runs Python `code` (dedented) against `hub` with tmp_path/cache as
    the Hugging Face cache; it must exit 0 and print JSON on its last line,
    which is returned."""
    # kernels 0.17.2 with telemetry disabled sends a user agent ending in "; ",
    # which httpx refuses (LocalProtocolError): keep telemetry on, it only
    # goes to the local Hub.
    env = hub.hf_env(tmp_path / "cache", PYTHONDONTWRITEBYTECODE="1", HF_HUB_DISABLE_TELEMETRY="0")
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])

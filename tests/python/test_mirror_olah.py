"""libkernels through olah, a real third-party Hub mirror (PyPI `olah`),
in offline-mirror mode (issue 12).

olah serves the REST API (refs, revision, tree, resolve) from local git
repos but no git smart HTTP, so libkernels must resolve every revision form
through `/api/{kernels,models}/{repo}/refs`: tags, `vN` branches, version
specifiers and short commit ids, with the same cache records as through
git, then list and fetch a variant's files from it.

olah needs huggingface_hub 2.x, which conflicts with our pins, so it runs
from its own virtualenv ($KERNELS_BINARY_DIR/olah-venv, made once from
tests/requirements-olah.txt). The mirror's git repo is the local Hub's bare
repo, linked where olah looks for models (olah serves models, datasets and
spaces, not kernel-type repos: through it a kernel repo is a model repo,
which libkernels accepts as it does on the Hub). Its upstream is a closed
port: nothing is fetched from anywhere else.
"""

import ctypes
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import test_binding as tb  # noqa: E402
from testsupport import cached_venv, fetch_api, free_port, stop_process  # noqa: E402

SRC = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("KERNELS_BINARY_DIR", SRC / "build"))
REQUIREMENTS = SRC / "tests" / "requirements-olah.txt"
REPO = "acme/mirrored"


def olah_python():
    """The olah virtualenv's interpreter, made once."""
    return cached_venv(BIN / "olah-venv", REQUIREMENTS)


@pytest.fixture
def olah(hub, tmp_path):
    """start(): an olah server in offline mode mirroring the local Hub's
    repo REPO (published before), returns its URL; stopped afterwards."""
    procs = []

    def start():
        url, proc = start_olah(hub, tmp_path)
        procs.append(proc)
        return url

    try:
        yield start
    finally:
        for proc in procs:
            stop_process(proc)


def start_olah(hub, tmp_path):
    python = olah_python()
    mirrors = tmp_path / "mirrors" / "models" / "acme"
    mirrors.mkdir(parents=True)
    (mirrors / "mirrored").symlink_to(Path(hub.root) / "repos" / "kernels" / "acme" / "mirrored.git")
    port = free_port()
    config = tmp_path / "olah.toml"
    config.write_text(
        f"""[basic]
host = "127.0.0.1"
port = {port}
repos-path = "{tmp_path / 'olah-cache'}"
mirrors-path = ["{tmp_path / 'mirrors'}"]
mirror-netloc = "127.0.0.1:{port}"
mirror-lfs-netloc = "127.0.0.1:{port}"
hf-scheme = "http"
hf-netloc = "127.0.0.1:9"
hf-lfs-netloc = "127.0.0.1:9"

[accessibility]
offline = true
"""
    )
    with open(tmp_path / "olah.log", "w") as log:
        proc = subprocess.Popen(
            [str(python), "-m", "olah.server", "--config", str(config)],
            cwd=tmp_path,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if not k.startswith(("HF_", "KERNELS_", "PYTHON"))},
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(url + "/api/models/" + REPO + "/refs", timeout=2).read()
            return url, proc
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                proc.wait()
                pytest.fail("olah did not start:\n" + (tmp_path / "olah.log").read_text()[-3000:])
            time.sleep(0.2)


class Lib:
    """The few C entry points this test needs, straight through ctypes."""

    def __init__(self):
        c = self.c = fetch_api(tb.library_path())
        from libkernels import _lib

        self.opts = _lib.Options()
        assert c.kernels_options_init(ctypes.byref(self.opts), _lib.KERNELS_OPTIONS_VERSION) == 0
        self._keep = []

    def set(self, **kw):
        for k, v in kw.items():
            if isinstance(v, str):
                v = v.encode()
                self._keep.append(v)
            setattr(self.opts, k, v)

    def error(self):
        return self.c.kernels_error_last().decode()

    def resolve(self, rev):
        r = ctypes.c_void_p()
        rc = self.c.kernels_revision_resolve(ctypes.byref(r), REPO.encode(), rev.encode(), ctypes.byref(self.opts))
        assert rc == 0, f"{rev}: {self.error()}"
        commit = self.c.kernels_revision_commit(r).decode()
        self.c.kernels_revision_free(r)
        return commit

    def versions(self):
        v = ctypes.POINTER(ctypes.c_char_p)()
        n = ctypes.c_size_t()
        rc = self.c.kernels_versions_list(ctypes.byref(v), ctypes.byref(n), REPO.encode(), ctypes.byref(self.opts))
        assert rc == 0, self.error()
        out = [v[i].decode() for i in range(n.value)]
        self.c.kernels_free(v)
        return out

    def download(self, commit, variant):
        s = ctypes.c_void_p()
        names = (ctypes.c_char_p * 1)(variant.encode())
        rc = self.c.kernels_download(ctypes.byref(s), REPO.encode(), commit.encode(), names, 1,
                                     ctypes.byref(self.opts))
        assert rc == 0, self.error()
        path = self.c.kernels_snapshot_path(s).decode()
        self.c.kernels_snapshot_free(s)
        return Path(path)


def olah_requests(tmp_path):
    """The paths olah's access log shows, in order."""
    text = (tmp_path / "olah.log").read_text(errors="replace")
    return re.findall(r'"(?:GET|HEAD) (\S+) HTTP/', text)


def test_every_revision_form_through_olah(hub, olah, tmp_path):
    v100 = hub.publish(REPO, files={"build/torch-cpu/kernel.py": b"V = 100\n", "README.md": b"one"},
                       branches=["main", "v1"], tags=["v1.0.0"])
    v110 = hub.publish(REPO, files={"build/torch-cpu/kernel.py": b"V = 110\n", "README.md": b"two"},
                       branches=["main", "v1"], tags=["v1.1.0"])
    v200 = hub.publish(REPO, files={"build/torch-cpu/kernel.py": b"V = 200\n", "README.md": b"three"},
                       branches=["v2"], tags=["v2.0.0"])
    olah = olah()
    # It really is a mirror without git: info/refs is not served.
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(olah + "/" + REPO + "/info/refs?service=git-upload-pack", timeout=10)
    assert e.value.code == 404

    lib = Lib()
    cache = tmp_path / "cache"
    lib.set(endpoint=olah, cache_dir=str(cache), token="", offline=0, deadline_ms=20000)
    before = len(olah_requests(tmp_path))
    assert lib.resolve("v1.0.0") == v100        # a tag
    # A cold search costs two requests: git's RepoNotFound settles the kernel
    # form, the REST listing the model form (olah's git answer cannot).
    asked = olah_requests(tmp_path)[before:]
    assert [p.split("?")[0] for p in asked] == ["/kernels/" + REPO + "/info/refs", "/api/models/" + REPO + "/refs"]
    assert lib.resolve("1") == v110             # a vN branch
    assert lib.resolve("2") == v200
    assert lib.resolve(">=1.0,<1.1") == v100    # a specifier
    assert lib.resolve(">=1,<2") == v110
    assert lib.resolve("main") == v110
    assert lib.resolve(v100[:7]) == v100        # a short commit id
    assert lib.versions() == ["v1", "v1.0.0", "v1.1.0", "v2", "v2.0.0"]
    # The cache records the refs as through git (as a model repo: olah's type).
    refs = cache / "models--acme--mirrored" / "refs"
    assert (refs / "v1.0.0").read_text() == v100
    assert (refs / "v1").read_text() == v110

    # Files come from the mirror too: tree listing and resolve.
    snap = lib.download(v110, "torch-cpu")
    assert (snap / "build" / "torch-cpu" / "kernel.py").read_bytes() == b"V = 110\n"

    # Offline afterwards, the recorded refs answer.
    lib.set(offline=1)
    assert lib.resolve("1") == v110


def test_mirror_first_hub_second(hub, olah, tmp_path):
    """endpoints: olah first, the local Hub second; a revision olah cannot
    answer (it only mirrors what it was given) comes from the Hub."""
    c1 = hub.publish(REPO, files={"a.txt": b"1"}, branches=["main", "v1"], tags=["v1.0.0"])
    hub.publish("acme/only-on-hub", files={"a.txt": b"2"}, branches=["main"], tags=["v3.0.0"])
    olah = olah()
    lib = Lib()
    lib.set(endpoints=f"{olah},{hub.endpoint}", cache_dir=str(tmp_path / "cache"), token="", offline=0,
            deadline_ms=20000)
    assert lib.resolve("v1.0.0") == c1
    r = ctypes.c_void_p()
    rc = lib.c.kernels_revision_resolve(ctypes.byref(r), b"acme/only-on-hub", b"v3.0.0", ctypes.byref(lib.opts))
    assert rc == 0, lib.error()
    lib.c.kernels_revision_free(r)

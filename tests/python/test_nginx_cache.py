"""examples/nginx/hub-cache.conf in front of the local Hub (issue 12):
a fleet's HTTP cache.

The template is rendered for the fixture (plain http upstream, its own
ports, cache and logs in tmp) and nginx started on it. Then libkernels
(three fetches at once, each with its own empty cache) and huggingface_hub
(two snapshot downloads) fetch the same kernel, LFS files included,
through nginx. From the fixture's request log: every
/resolve/<commit>/... and every CDN object went upstream exactly once,
and every refs / revision request went upstream every time. Every client's
files are the published bytes (libkernels checks their hashes itself; the
test compares huggingface_hub's).
"""

import ctypes
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import test_binding as tb  # noqa: E402
from hubclient import http, random_bytes  # noqa: E402
from testsupport import fetch_api, free_port, stop_process  # noqa: E402

SRC = Path(__file__).resolve().parents[2]
TEMPLATE = SRC / "examples" / "nginx" / "hub-cache.conf"
REPO = "acme/cached"
VARIANT = "torch-cpu"
COMMIT_RESOLVE = re.compile(r"/resolve/[0-9a-f]{40}/")

FILES = {
    f"build/{VARIANT}/__init__.py": b"from ._ops import ops\n",
    f"build/{VARIANT}/_ops.py": b"ops = 'cached'\n",
    f"build/{VARIANT}/_cached.abi3.so": random_bytes(3 * 1024 * 1024 + 17, 1),   # LFS (> 1 MiB)
    f"build/{VARIANT}/weights.bin": random_bytes(1536 * 1024, 2),                 # LFS
    "README.md": b"# cached\n",
}
LFS = {p for p, b in FILES.items() if len(b) > 1024 * 1024}


def nginx_binary():
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found:
        return found
    # As bench/vs_python/bench.py does: nginx is a Debian package.
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "nginx"], check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    return shutil.which("nginx") or "/usr/sbin/nginx"


def render(values):
    text = TEMPLATE.read_text()
    for k, v in values.items():
        text = text.replace("${" + k + "}", v)
    left = sorted(set(re.findall(r"\$\{HUB_[A-Z_]+\}", text)))
    assert not left, f"placeholders of {TEMPLATE} this test does not fill: {left}"
    return text


@pytest.fixture
def nginx(hub, tmp_path):
    """nginx with the rendered template in front of the local Hub; its URL."""
    prefix = tmp_path / "nginx"
    (prefix / "logs").mkdir(parents=True)
    port = free_port()
    conf = prefix / "hub-cache.conf"
    conf.write_text(render({
        "HUB_UPSTREAM": hub.endpoint,
        "HUB_CACHE_LISTEN": f"127.0.0.1:{port}",
        "HUB_CACHE_FETCHER": f"127.0.0.1:{free_port()}",
        "HUB_CACHE_DIR": str(prefix / "cache"),
        "HUB_CACHE_MAX_SIZE": "1g",
        # Never asked: the fixture's upstream and CDN URLs are IP literals.
        "HUB_CACHE_RESOLVER": "127.0.0.1",
    }))
    main = prefix / "nginx.conf"
    # Workers run as the master's user, so they can write tmp_path.
    user = "user root;\n" if os.geteuid() == 0 else ""
    main.write_text(f"""{user}worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
    log_format hubcache '$server_port $request_method $request_uri $status $upstream_cache_status';
    access_log {prefix}/logs/access.log hubcache;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    include {conf};
}}
""")
    proc = subprocess.Popen([nginx_binary(), "-p", str(prefix), "-c", str(main), "-g", "daemon off;"],
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # a hang guard: nginx starts in well under a second
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    errors = (prefix / "logs" / "error.log")
                    pytest.fail("nginx did not start: " + (errors.read_text() if errors.exists() else ""))
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}", prefix / "logs" / "access.log"
    finally:
        stop_process(proc)


class Lib:
    """kernels_revision_resolve and kernels_download through ctypes."""

    def __init__(self):
        from libkernels import _lib

        self.c = fetch_api(tb.library_path())
        self._lib = _lib

    def options(self, endpoint, cache_dir):
        o = self._lib.Options()
        assert self.c.kernels_options_init(ctypes.byref(o), self._lib.KERNELS_OPTIONS_VERSION) == 0
        # ctypes keeps the bytes assigned to c_char_p fields alive.
        o.endpoint, o.cache_dir, o.token = endpoint.encode(), str(cache_dir).encode(), b""
        o.offline = 0
        o.deadline_ms = 20000
        return o

    def fetch(self, endpoint, cache_dir, revision):
        """Resolves `revision` (refs through the endpoint), downloads the
        variant: (commit, snapshot folder)."""
        o = self.options(endpoint, cache_dir)
        r = ctypes.c_void_p()
        rc = self.c.kernels_revision_resolve(ctypes.byref(r), REPO.encode(), revision.encode(), ctypes.byref(o))
        assert rc == 0, self.c.kernels_error_last().decode()
        commit = self.c.kernels_revision_commit(r).decode()
        self.c.kernels_revision_free(r)
        s = ctypes.c_void_p()
        names = (ctypes.c_char_p * 1)(VARIANT.encode())
        rc = self.c.kernels_download(ctypes.byref(s), REPO.encode(), commit.encode(), names, 1, ctypes.byref(o))
        assert rc == 0, self.c.kernels_error_last().decode()
        path = Path(self.c.kernels_snapshot_path(s).decode())
        self.c.kernels_snapshot_free(s)
        return commit, path


def upstream_counts(hub, commit):
    """(requests per /resolve/<commit>/ path on the Hub, per object on the CDN)."""
    log = hub.log()
    resolve = Counter(e["path"] for e in log if e["listener"] == "hub" and COMMIT_RESOLVE.search(e["path"]))
    cdn = Counter(e["path"] for e in log if e["listener"] == "cdn")
    return resolve, cdn


def test_fleet_through_nginx_fetches_each_file_once(hub, nginx, tmp_path, monkeypatch):
    endpoint, access_log = nginx
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    hub.config(page_size=2)  # listings come in pages: their Link must lead back to nginx
    commit = hub.publish(REPO, files=FILES, branches=["main", "v1"], tags=["v1.0.0"])
    build = {p: b for p, b in FILES.items() if p.startswith("build/")}
    sha256 = {p: hashlib.sha256(FILES[p]).hexdigest() for p in LFS}
    hub.log_clear()

    # libkernels: three fetches at once (a fleet starting), each its own cache.
    lib = Lib()
    results, errors = {}, []

    def one(i):
        try:
            results[i] = lib.fetch(endpoint, tmp_path / f"lk{i}", "v1")
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for i in range(3):
        got_commit, snap = results[i]
        assert got_commit == commit
        for p, data in build.items():
            assert (snap / p).read_bytes() == data, p

    # huggingface_hub, twice, each its own cache: a branch name first (the
    # revision API), then the files by commit.
    from huggingface_hub import snapshot_download

    for i in range(2):
        path = Path(snapshot_download(REPO, repo_type="kernel", revision="main", cache_dir=tmp_path / f"hf{i}",
                                      endpoint=endpoint, token=False))
        for p, data in FILES.items():
            assert (path / p).read_bytes() == data, p
        # Blobs are named by the Hub's identity (sha256 for LFS), as without nginx.
        blobs = {b.name for b in (tmp_path / f"hf{i}" / "kernels--acme--cached" / "blobs").iterdir()}
        assert set(sha256.values()) <= blobs

    # Upstream: each file of the commit once, each CDN object once.
    resolve, cdn = upstream_counts(hub, commit)
    wanted = {f"/kernels/{REPO}/resolve/{commit}/{p}" for p in FILES}
    assert set(resolve) == wanted, resolve
    assert all(n == 1 for n in resolve.values()), resolve
    assert cdn == Counter({f"/lfs/{h}": 1 for h in sha256.values()}), cdn
    # ... while every ref lookup went to the Hub: libkernels' git refs
    # advertisement (once per fetch) and huggingface_hub's revision API.
    assert hub.count("GET", f"/{REPO}/info/refs") == 3
    assert hub.count("GET", f"/api/kernels/{REPO}/revision/main") == 2
    # Paged listings were followed through nginx (the Link was rewritten).
    pages = [ln for ln in access_log.read_text().splitlines() if "/tree/" in ln and "cursor=" in ln]
    assert pages and hub.count("GET", "/tree/") == len([ln for ln in access_log.read_text().splitlines()
                                                         if "/tree/" in ln])

    # A moved branch is seen at once: refs are never cached.
    commit2 = hub.publish(REPO, files={**FILES, "README.md": b"# two\n"}, branches=["main", "v1"])
    assert lib.fetch(endpoint, tmp_path / "lk-moved", "v1")[0] == commit2


def test_headers_ranges_and_credentials(hub, nginx, tmp_path):
    endpoint, _ = nginx
    commit = hub.publish(REPO, files=FILES, branches=["main"])
    so = f"build/{VARIANT}/_cached.abi3.so"
    data = FILES[so]
    sha = hashlib.sha256(data).hexdigest()
    url = f"{endpoint}/kernels/{REPO}/resolve/{commit}/{so}"
    hub.log_clear()

    # HEAD of an LFS file: what clients read from the Hub's 302, on a 200.
    status, h, _ = http("HEAD", url)
    assert status == 200
    assert h["X-Linked-Etag"] == h["ETag"] == f'"{sha}"'
    assert h["X-Linked-Size"] == h["Content-Length"] == str(len(data))
    assert h["X-Repo-Commit"] == commit
    assert h["Accept-Ranges"] == "bytes"
    # ... and the same from the cache, body and ranges included.
    status, h, body = http("GET", url)
    assert (status, h["X-Cache-Status"], h["X-Linked-Etag"], h["X-Repo-Commit"]) == (200, "HIT", f'"{sha}"', commit)
    assert body == data
    status, h, body = http("GET", url, headers={"Range": "bytes=1000-1999"})
    assert (status, body) == (206, data[1000:2000])
    assert h["Content-Range"] == f"bytes 1000-1999/{len(data)}"
    status, h, body = http("GET", f"{endpoint}/kernels/{REPO}/resolve/{commit}/README.md")
    assert (status, body, h["X-Repo-Commit"]) == (200, FILES["README.md"], commit)
    assert h["ETag"] == '"%s"' % hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
    # A resumed download of a file not cached yet: its range now, the whole
    # file into the cache for the next client.
    weights = f"build/{VARIANT}/weights.bin"
    wurl = f"{endpoint}/kernels/{REPO}/resolve/{commit}/{weights}"
    status, h, body = http("GET", wurl, headers={"Range": "bytes=100000-"})
    assert (status, body) == (206, FILES[weights][100000:])
    status, h, body = http("GET", wurl)
    assert (status, h["X-Cache-Status"], body) == (200, "HIT", FILES[weights])
    resolve, cdn = upstream_counts(hub, commit)
    assert resolve == Counter({f"/kernels/{REPO}/resolve/{commit}/{so}": 1,
                               f"/kernels/{REPO}/resolve/{commit}/{weights}": 1,
                               f"/kernels/{REPO}/resolve/{commit}/README.md": 1})
    assert cdn == Counter({f"/lfs/{sha}": 1, f"/lfs/{hashlib.sha256(FILES[weights]).hexdigest()}": 1})
    assert all(e["range"] is None for e in hub.log()), "the cache asks for whole files"

    # A request with a token is neither served from nor stored in the cache;
    # nor does the token reach the CDN.
    hub.log_clear()
    for _ in range(2):
        status, h, body = http("GET", url, headers={"Authorization": "Bearer hf_secret"})
        assert (status, body, h["X-Linked-Etag"]) == (200, data, f'"{sha}"')
    log = hub.log()
    assert [e["authorization"] for e in log if e["listener"] == "hub"] == [True, True]
    assert [e["authorization"] for e in log if e["listener"] == "cdn"] == [False, False]

    # A file by branch name goes through (redirect followed here) uncached.
    hub.log_clear()
    for _ in range(2):
        status, h, body = http("GET", f"{endpoint}/kernels/{REPO}/resolve/main/{so}")
        assert (status, body, h["X-Repo-Commit"], h["X-Linked-Etag"]) == (200, data, commit, f'"{sha}"')
    assert hub.count("GET", f"/resolve/main/{so}") == 2
    # The refs API is never cached either.
    for _ in range(2):
        assert http("GET", f"{endpoint}/api/kernels/{REPO}/refs")[0] == 200
    assert hub.count("GET", f"/api/kernels/{REPO}/refs") == 2

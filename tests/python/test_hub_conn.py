"""One call's connections over HTTPS (lib/hub_conn.c, issue 24): nginx
terminates TLS in front of the local Hub and its CDN, offering HTTP/2 by
ALPN as the Hub and its CDN do, with a certificate from a CA this test makes
(given to the library through SSL_CERT_FILE). One kernels_download (the
variant's listing, then every file at once, two LFS files through the CDN's
redirects) must come over exactly one connection to each server, all of it
HTTP/2: the files reuse the connection the listing opened, multiplexed on
it, and the second LFS file waits for the CDN's first connection rather
than opening its own. Counted in nginx's access log
($connection), never timed.
"""

import ctypes
import os
import subprocess
import sys
import time
from collections import defaultdict

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import test_binding as tb  # noqa: E402
from hubclient import random_bytes  # noqa: E402
from test_wheel_manylinux import start_tls_proxy  # noqa: E402

REPO = "acme/conn"
LOG_FORMAT = "$server_port $connection $server_protocol $request_method $request_uri $status"
VARIANT = "torch-cpu"
FILES = {
    f"build/{VARIANT}/__init__.py": b"from ._ops import ops\n",
    f"build/{VARIANT}/_ops.py": b"ops = 'conn'\n",
    f"build/{VARIANT}/metadata.json": b'{"python-depends": []}\n',
    f"build/{VARIANT}/_conn.abi3.so": random_bytes(2 * 1024 * 1024 + 5, 3),   # LFS (> 1 MiB): the CDN
    f"build/{VARIANT}/weights.bin": random_bytes(1536 * 1024, 4),              # LFS
}


@pytest.fixture
def tls(hub, tmp_path):
    """nginx (TLS, HTTP/2 by ALPN) in front of the Hub and its CDN, which the
    fixture names as its endpoint and CDN: (endpoint, ca.pem, access log)."""
    proc, endpoint, ca = start_tls_proxy(hub, tmp_path / "tls", log_format=LOG_FORMAT)
    try:
        yield endpoint, ca, tmp_path / "tls" / "access.log"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def download(endpoint, cache_dir, commit):
    """kernels_download of VARIANT at `commit`, one call: the snapshot's folder."""
    from libkernels import _lib

    c = ctypes.CDLL(tb.library_path())
    c.kernels_error_last.restype = ctypes.c_char_p
    c.kernels_download.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t, ctypes.c_void_p]
    c.kernels_snapshot_path.restype = ctypes.c_char_p
    c.kernels_snapshot_path.argtypes = [ctypes.c_void_p]
    c.kernels_snapshot_free.argtypes = [ctypes.c_void_p]
    o = _lib.Options()
    assert c.kernels_options_init(ctypes.byref(o), _lib.KERNELS_OPTIONS_VERSION) == 0
    o.endpoint, o.cache_dir, o.token = endpoint.encode(), str(cache_dir).encode(), b""
    o.offline = 0
    o.deadline_ms = 60000  # a hang guard
    s = ctypes.c_void_p()
    names = (ctypes.c_char_p * 1)(VARIANT.encode())
    rc = c.kernels_download(ctypes.byref(s), REPO.encode(), commit.encode(), names, 1, ctypes.byref(o))
    assert rc == 0, c.kernels_error_last().decode()
    path = c.kernels_snapshot_path(s).decode()
    c.kernels_snapshot_free(s)
    return path


def test_one_call_one_http2_connection_per_server(hub, tls, tmp_path, monkeypatch):
    endpoint, ca, access_log = tls
    hub_port = int(endpoint.rsplit(":", 1)[1])
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    for var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(var, raising=False)
    commit = hub.publish(REPO, files=FILES, branches=["main"])
    hub.log_clear()

    snapshot = download(endpoint, tmp_path / "cache", commit)
    for path, data in FILES.items():
        with open(os.path.join(snapshot, path), "rb") as f:
            assert f.read() == data, path

    # nginx logs a request once it has ended on its side, which may be just
    # after the client read the last byte: wait for every line (a hang guard).
    deadline = time.monotonic() + 30
    while len(access_log.read_text().splitlines()) < hub.count() and time.monotonic() < deadline:
        time.sleep(0.05)
    conns, lines = defaultdict(set), access_log.read_text().splitlines()
    for line in lines:
        port, conn, proto = line.split()[:3]
        assert proto == "HTTP/2.0", line
        conns[int(port)].add(conn)
    assert hub.count(listener="cdn") == 2, hub.log()
    assert len(lines) == hub.count(), (lines, hub.log())
    assert len(conns) == 2, lines  # the Hub and the CDN
    assert all(len(c) == 1 for c in conns.values()), lines
    assert hub_port in conns, lines


def test_ssl_cert_dir_names_the_ca(hub, tls, tmp_path, monkeypatch):
    """SSL_CERT_DIR (a folder of hashed certificates), read as huggingface_hub's
    httpx reads it when no CA file is named: the download verifies the Hub's
    certificate with the CA found there, as Python's client would."""
    endpoint, ca, _ = tls
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "ca.pem").write_bytes(ca.read_bytes())
    subprocess.run(["openssl", "rehash", str(certs)], check=True)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    for var in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SSL_CERT_DIR", str(certs))
    commit = hub.publish(REPO, files=FILES, branches=["main"])

    snapshot = download(endpoint, tmp_path / "cache", commit)
    with open(os.path.join(snapshot, f"build/{VARIANT}/_ops.py"), "rb") as f:
        assert f.read() == FILES[f"build/{VARIANT}/_ops.py"]

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
from test_nginx_cache import free_port, nginx_binary  # noqa: E402

REPO = "acme/conn"
VARIANT = "torch-cpu"
FILES = {
    f"build/{VARIANT}/__init__.py": b"from ._ops import ops\n",
    f"build/{VARIANT}/_ops.py": b"ops = 'conn'\n",
    f"build/{VARIANT}/metadata.json": b'{"python-depends": []}\n',
    f"build/{VARIANT}/_conn.abi3.so": random_bytes(2 * 1024 * 1024 + 5, 3),   # LFS (> 1 MiB): the CDN
    f"build/{VARIANT}/weights.bin": random_bytes(1536 * 1024, 4),              # LFS
}


def openssl(*args):
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


def make_ca(d):
    """A CA and a certificate for 127.0.0.1 it signed: (ca.pem, cert.pem, cert.key)."""
    ca, ca_key, cert, key, csr, ext = (d / n for n in ("ca.pem", "ca.key", "cert.pem", "cert.key", "cert.csr",
                                                        "ext.cnf"))
    ext.write_text("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1\n")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key,
            "-out", ca, "-days", "2", "-subj", "/CN=test_hub_conn CA")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr,
            "-subj", "/CN=127.0.0.1")
    openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
            "-extfile", ext)
    return ca, cert, key


@pytest.fixture
def tls(hub, tmp_path):
    """nginx (TLS, HTTP/2 by ALPN) in front of the Hub and its CDN, which the
    fixture names as its endpoint and CDN: (endpoint, ca.pem, access log)."""
    prefix = tmp_path / "nginx"
    (prefix / "logs").mkdir(parents=True)
    ca, cert, key = make_ca(tmp_path)
    ports = free_port(), free_port()
    servers = "".join(f"""
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass {upstream};
            proxy_set_header Host $http_host;
            proxy_buffering off;
        }}
    }}""" for port, upstream in zip(ports, (hub.endpoint, hub.cdn)))
    user = "user root;\n" if os.geteuid() == 0 else ""
    (prefix / "nginx.conf").write_text(f"""{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 256; }}
http {{
    log_format conn '$server_port $connection $server_protocol $request_method $request_uri $status';
    access_log {prefix}/logs/access.log conn;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;{servers}
}}
""")
    proc = subprocess.Popen([nginx_binary(), "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g",
                             "daemon off;"], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60  # a hang guard: nginx starts in well under a second
        while not all(_listening(p) for p in ports):
            if proc.poll() is not None or time.monotonic() > deadline:
                errors = prefix / "logs" / "error.log"
                pytest.fail("nginx did not start: " + (errors.read_text() if errors.exists() else ""))
            time.sleep(0.05)
        endpoint, cdn = (f"https://127.0.0.1:{p}" for p in ports)
        hub.config(endpoint=endpoint, cdn=cdn)
        yield endpoint, ports, ca, prefix / "logs" / "access.log"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _listening(port):
    import socket
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


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
    endpoint, (hub_port, cdn_port), ca, access_log = tls
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
    assert len(conns[hub_port]) == 1, lines
    assert len(conns[cdn_port]) == 1, lines

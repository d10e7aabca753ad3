"""The manylinux wheel of scripts/build-wheel.sh, as a Python user on a
machine without our build dependencies gets it (issue 29).

ctest builds the wheel once (the fixture test python_wheel, into
KERNELS_WHEEL_DIR). Here: auditwheel names a manylinux tag; the wheel vendors
libcurl, libgit2, jansson, libarchive and OpenSSL, stripped, each with its
licence. Then, in a private mount namespace (unshare -m: root only) where
this machine's copies of those libraries and of everything else the wheel
vendors are empty files, the wheel goes into a fresh virtual environment
of the system's python3 and fetches and loads a kernel from the local Hub:
over HTTP; over TLS (nginx in front of the Hub and its CDN with a
certificate from a CA this test makes) named by SSL_CERT_FILE, refused with
a message naming SSL_CERT_FILE when it is not, and found without it where
libcurl's built-in bundle path is missing and the CA sits where another
distribution keeps its bundle; with torch, the img2gray torch op.
A namespace that cannot be made fails the test: it never passes untested.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import pytest

from test_cli import CPU211, SYSTEM_ENV, publish_kernel
from test_nginx_cache import free_port, nginx_binary

SOURCE_DIR = Path(__file__).resolve().parents[2]
WHEEL_DIR = os.environ.get("KERNELS_WHEEL_DIR")
# The libraries the issue names; every other library the wheel vendors is hidden too.
NAMED = ("libcurl", "libgit2", "libjansson", "libarchive", "libssl", "libcrypto")


@pytest.fixture(scope="module")
def wheel():
    found = sorted(Path(WHEEL_DIR).glob("libkernels-*-manylinux_*.whl")) if WHEEL_DIR else []
    if len(found) != 1:
        pytest.fail(f"expected one manylinux wheel in KERNELS_WHEEL_DIR ({WHEEL_DIR}), found {found}: run the test "
                    "through ctest (its fixture python_wheel builds it) or run scripts/build-wheel.sh DIR and set "
                    "KERNELS_WHEEL_DIR=DIR")
    return found[0]


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)
    assert p.returncode == 0, f"{cmd}: {p.stdout}{p.stderr}"
    return p.stdout


def test_wheel_is_manylinux_vendored_stripped_licensed(wheel, tmp_path):
    shown = run([str(Path(sys.executable).parent / "auditwheel"), "show", str(wheel)])
    tag = re.search(r'"(manylinux_\d+_\d+_\w+)"', shown)
    assert tag and tag.group(1) in wheel.name, shown
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        z.extractall(tmp_path)
        index = z.read(next(n for n in names if n.endswith(".dist-info/licenses/vendored/README"))).decode()
    libs = [n.split("/", 1)[1] for n in names if n.startswith("libkernels.libs/")]
    for name in NAMED:
        assert any(lib.startswith(name + "-") for lib in libs), (name, libs)
    listed = {line.split("\t")[0]: line.split("\t")[3] for line in index.splitlines() if "\t" in line}
    assert sorted(listed) == sorted(libs), index
    for lib, licence in listed.items():
        assert any(n.endswith(f"licenses/vendored/{licence}") for n in names), (lib, licence)
    (own,) = (tmp_path / "libkernels" / "lib").glob("libkernels.so.*")
    for lib in [own] + [tmp_path / "libkernels.libs" / x for x in libs]:
        sections = run(["readelf", "-S", "-W", str(lib)])
        assert ".symtab" not in sections and ".debug_info" not in sections, f"{lib.name} is not stripped"
    # Its own run path finds them (auditwheel writes DT_RPATH: LD_LIBRARY_PATH cannot put another copy first).
    dynamic = run(["readelf", "-d", str(own)])
    assert "[$ORIGIN/../../libkernels.libs]" in dynamic, dynamic


def test_sdist_names_the_missing_dev_packages(wheel, tmp_path):
    """pip building the sdist where pkg-config finds none of the libraries: CMake's error names the
    packages to install, and pip shows it."""
    sdist = next(wheel.parent.glob("libkernels-*.tar.gz"))
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                        "--disable-pip-version-check", "-w", str(tmp_path), str(sdist)],
                       env=dict(os.environ, PKG_CONFIG_LIBDIR=str(tmp_path / "none"), PKG_CONFIG_PATH="",
                                PIP_NO_CACHE_DIR="1"), capture_output=True, text=True, timeout=600)
    out = re.sub(r"\s+", " ", p.stdout + p.stderr)
    assert p.returncode != 0, out
    assert "apt-get install libcurl4-openssl-dev libgit2-dev libjansson-dev libarchive-dev libssl-dev" in out, out
    assert "dnf install libcurl-devel libgit2-devel jansson-devel libarchive-devel openssl-devel" in out, out


def closure(path):
    """The real files of what `path` links, as this machine's loader finds them."""
    out = run(["ldd", str(path)])
    return {os.path.realpath(m) for m in re.findall(r"=> (/\S+)", out)}


def interpreter_needs():
    """What the python the fresh environment is made from, its own extension modules but OpenSSL's
    (_ssl, _hashlib: Python falls back without them), and the namespace's tools need: a user's machine
    has these, the wheel cannot bring them."""
    base = Path(sys._base_executable)
    dynload = Path(subprocess.run([str(base), "-c", "import sysconfig; print(sysconfig.get_path('platstdlib'))"],
                                  check=True, capture_output=True, text=True).stdout.strip()) / "lib-dynload"
    modules = [m for m in dynload.glob("*.so") if not m.name.startswith(("_ssl.", "_hashlib."))]
    tools = [shutil.which(t) for t in ("bash", "mount", "cp", "unshare")]
    return set().union(*(closure(p) for p in [base, Path(sys.executable), *modules, *tools]))


def hidden_files(wheel):
    """This machine's copies of what the wheel vendors (among the build's libkernels' dependencies: the
    file each libkernels.libs/NAME-HASH.so... was copied from), and every file of the named libraries'
    families (libcurl-gnutls, ...), less what the interpreter needs."""
    library = os.environ.get("KERNELS_LIBRARY")
    assert library and Path(library).is_file(), f"KERNELS_LIBRARY ({library}) is not the build's libkernels.so"
    with zipfile.ZipFile(wheel) as z:
        vendored = {re.sub(r"^([^.]+)-[0-9a-f]{8}\.", r"\1.", n.split("/", 1)[1])
                    for n in z.namelist() if n.startswith("libkernels.libs/")}
    found = {f for f in closure(library) if Path(f).name in vendored}
    assert len(found) == len(vendored), f"not all of {sorted(vendored)} are among {sorted(closure(library))}"
    for line in run(["ldconfig", "-p"]).splitlines():
        m = re.match(r"\s*(\S+) .*=> (/\S+)", line)
        if m and m.group(1).split(".so")[0].split("-")[0] in NAMED:
            found.add(os.path.realpath(m.group(2)))
    needed = interpreter_needs()
    assert not needed & {f for f in found if Path(f).name.split(".so")[0].split("-")[0] in NAMED}, \
        "the interpreter itself links one of the libraries the test must hide"
    return sorted(found - needed)


NAMESPACE = r"""
set -eu
while read -r f; do [ -z "$f" ] || mount --bind "$KERNELS_EMPTY" "$f"; done <<<"$KERNELS_HIDE"
if [ -n "${KERNELS_CA_ONLY:-}" ]; then
  # /etc/ssl as on a distribution whose bundle is elsewhere: libcurl's
  # built-in /etc/ssl/certs/ca-certificates.crt is gone, the CA is in
  # /etc/ssl/cert.pem (a path libkernels probes).
  mount -t tmpfs tmpfs /etc/ssl
  cp "$KERNELS_CA_ONLY" /etc/ssl/cert.pem
fi
exec "$@"
"""


class Bare:
    """Runs commands in a private mount namespace with the libraries hidden."""

    def __init__(self, tmp, wheel):
        if os.geteuid() != 0 or not shutil.which("unshare"):
            pytest.fail("the bare-environment test needs root and unshare(1) for a private mount namespace "
                        "(CI runs as root): it cannot check the wheel here")
        self.empty = tmp / "empty"
        self.empty.write_bytes(b"")
        self.hide = hidden_files(wheel)
        assert self.hide, "nothing to hide: the build's libkernels links none of the libraries"

    def run(self, cmd, env, ca_only=None, check=True):
        env = dict(env, KERNELS_EMPTY=str(self.empty), KERNELS_HIDE="\n".join(self.hide),
                   KERNELS_CA_ONLY=str(ca_only or ""))
        p = subprocess.run(["unshare", "-m", "--propagation", "private", "bash", "-c", NAMESPACE, "bare"] + cmd,
                           env=env, capture_output=True, text=True, timeout=300)
        if "unshare failed" in p.stderr or "unshare:" in p.stderr[:200]:
            pytest.fail(f"cannot make a private mount namespace: {p.stderr.strip()}")
        if check:
            assert p.returncode == 0, p.stdout + p.stderr
        return p


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("KERNELS_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH", "SSL_CERT_FILE", "SSL_CERT_DIR",
                        "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "VIRTUAL_ENV")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def bare(wheel, tmp_path_factory):
    """(Bare, the fresh environment's python): the wheel installed inside the namespace into a venv of the
    system's python3, with nothing else in it."""
    tmp = tmp_path_factory.mktemp("bare")
    ns = Bare(tmp, wheel)
    probe = ns.run([sys._base_executable, "-c", textwrap.dedent(f"""
        import ctypes
        for name in {[Path(f).name for f in ns.hide]!r}:
            try:
                ctypes.CDLL(name)
                print("loads", name)
            except OSError:
                pass
        """)], clean_env())
    assert "loads" not in probe.stdout, f"not hidden in the namespace: {probe.stdout}"
    venv = tmp / "venv"
    ns.run([sys._base_executable, "-m", "venv", "--without-pip", str(venv)], clean_env())
    # The project's pip, run for the new environment: it needs no TLS and no index.
    ns.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-index",
            "--no-deps", "--disable-pip-version-check", "-q", str(wheel)], clean_env())
    return ns, venv / "bin" / "python"


FETCH = """
import json, re, libkernels, libkernels._lib as L
k = libkernels.get("org/k", "v1")
maps = open("/proc/self/maps").read()
print(json.dumps({"library": L.find_library(), "variant": k.variant, "commit": k.commit,
                  "answer": k.function("kernel_answer")(),
                  "mapped": sorted(set(re.findall(r"/\\S*/(lib(?:curl|ssl|crypto|git2|jansson|archive)\\S*)", maps)))}))
"""


def fetch(ns, py, endpoint, cache, ca_only=None, check=True, **env):
    p = ns.run([str(py), "-c", FETCH], clean_env(**SYSTEM_ENV, HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(cache),
                                                 HF_HUB_OFFLINE="", **env), ca_only=ca_only, check=check)
    return json.loads(p.stdout.strip().splitlines()[-1]) if check else p


def make_ca(d):
    """A CA and a certificate it issued for 127.0.0.1 and localhost: (ca.pem, server cert, server key)."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    run(["openssl", "req", "-x509", *ec, "-keyout", str(d / "ca.key"), "-out", str(d / "ca.pem"), "-days", "2",
         "-subj", "/CN=libkernels test CA", "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    run(["openssl", "req", *ec, "-keyout", str(d / "srv.key"), "-out", str(d / "srv.csr"), "-subj", "/CN=127.0.0.1"])
    (d / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n")
    run(["openssl", "x509", "-req", "-in", str(d / "srv.csr"), "-CA", str(d / "ca.pem"), "-CAkey", str(d / "ca.key"),
         "-CAcreateserial", "-out", str(d / "srv.pem"), "-days", "2", "-extfile", str(d / "ext.cnf")])
    return d / "ca.pem", d / "srv.pem", d / "srv.key"


def start_tls_proxy(hub, d, log_format=None):
    """nginx terminating TLS (HTTP/2 offered) for the Hub and its CDN; the fixture hands out their https
    URLs. Returns (the process, the Hub's https endpoint, the CA's file). `log_format`: what each line of
    d/access.log says (nginx's variables), else nginx's combined format."""
    d.mkdir()
    ca, cert, key = make_ca(d)
    ports = {"hub": free_port(), "cdn": free_port()}
    servers = "".join(f"""
    server {{
        listen 127.0.0.1:{ports[name]} ssl http2;
        location / {{ proxy_pass {upstream}; proxy_http_version 1.1; proxy_buffering off; }}
    }}""" for name, upstream in (("hub", hub.endpoint), ("cdn", hub.cdn)))
    user = "user root;\n" if os.geteuid() == 0 else ""
    temps = "".join(f"    {t}_temp_path {d}/{t};\n" for t in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    log = f"    log_format lines '{log_format}';\n" if log_format else ""
    (d / "nginx.conf").write_text(f"""{user}worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 64; }}
http {{
{log}    access_log {d}/access.log{" lines" if log_format else ""};
{temps}    ssl_certificate {cert};
    ssl_certificate_key {key};
{servers}
}}
""")
    proc = subprocess.Popen([nginx_binary(), "-p", str(d), "-c", str(d / "nginx.conf"), "-g", "daemon off;"],
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60  # a hang guard: nginx starts in well under a second
    while not all(_listening(p) for p in ports.values()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            log = d / "error.log"
            pytest.fail("nginx did not start: " + (log.read_text() if log.exists() else ""))
        time.sleep(0.05)
    hub.config(endpoint=f"https://127.0.0.1:{ports['hub']}", cdn=f"https://127.0.0.1:{ports['cdn']}")
    return proc, f"https://127.0.0.1:{ports['hub']}", ca


def _listening(port):
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        return True
    except OSError:
        return False


def test_bare_environment_fetches_over_http_and_tls(bare, hub, tmp_path):
    ns, py = bare
    commit, _ = publish_kernel(hub, tmp_path, variants=(CPU211,))
    site = py.parent.parent / "lib"

    got = fetch(ns, py, hub.endpoint, tmp_path / "c-http")
    assert Path(got["library"]).resolve().is_relative_to(site.resolve()), got
    # publish_kernel's first variant answers 100; the libraries in the process are the wheel's own copies.
    assert (got["variant"], got["commit"], got["answer"]) == (CPU211, commit, 100), got
    assert got["mapped"] and all(re.match(r"lib\w+-[0-9a-f]{8}\.", m) for m in got["mapped"]), got["mapped"]

    proc, https, ca = start_tls_proxy(hub, tmp_path / "tls")
    try:
        # This machine's CA bundle does not hold the test's CA: refused, saying what to set.
        p = fetch(ns, py, https, tmp_path / "c-refused", check=False)
        assert p.returncode != 0 and "SSL_CERT_FILE" in p.stderr and "certificate" in p.stderr, p.stderr
        got = fetch(ns, py, https, tmp_path / "c-tls", SSL_CERT_FILE=str(ca))
        assert (got["variant"], got["commit"], got["answer"]) == (CPU211, commit, 100), got
        # No variable, and libcurl's built-in bundle missing: the CA where another distribution keeps it.
        got = fetch(ns, py, https, tmp_path / "c-probe", ca_only=ca)
        assert (got["variant"], got["commit"], got["answer"]) == (CPU211, commit, 100), got
        served = (tmp_path / "tls" / "access.log").read_text()
        assert served.count(" 200 ") >= 2 and "/api/kernels/org/k" in served, served
    finally:
        proc.terminate()
        proc.wait(10)


TORCH_OP = """
import json, pathlib, re, site, sys
site.addsitedir(sys.argv[1])  # the project's torch, after the fresh environment's own packages
import torch, libkernels
k = libkernels.get_kernel("kernels-community/img2gray", version=1, backend="cpu")
meta = json.loads((pathlib.Path(k.__file__).parent / "metadata.json").read_text())
rgb = torch.randint(0, 256, (2, 37, 53, 3), dtype=torch.uint8)
x = rgb.to(torch.float64)
ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
out = torch.empty(rgb.shape[:-1], dtype=torch.uint8)
getattr(getattr(torch.ops, meta["id"]), "img2gray")(rgb, out)
print(json.dumps({"binding": libkernels.__file__, "op_ok": bool(torch.equal(out, ref)),
                  "ok": bool(torch.equal(k.img2gray(rgb), ref))}))
"""


def test_bare_environment_calls_the_torch_op(bare, hub, tmp_path):
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        pytest.fail("torch is not installed in the project's environment (tests/requirements.txt pins it): "
                    "no torch op to call")
    from test_binding_torch import publish_img2gray

    ns, py = bare
    publish_img2gray(hub)
    purelib = Path(importlib.util.find_spec("torch").origin).parents[1]
    p = ns.run([str(py), "-c", TORCH_OP, str(purelib)],
               clean_env(HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE=""))
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert got["ok"] and got["op_ok"], got
    assert Path(got["binding"]).resolve().is_relative_to(py.parent.parent.resolve()), got

#!/usr/bin/env python3
"""libkernels (C, and the Python binding) vs the Python `kernels` package
(0.17.2, tests/requirements.txt) fetching and loading img2gray from the same
local Hub, through nginx:

    python3 bench/vs_python/bench.py --build BUILD_DIR [--runs 3] [--regets 50] [--backend cpu]
                                     [--big-runs 1] [--no-big]

The local Hub fixture (tests/hub) starts on a fresh root with nginx in front
of both its listeners (the Hub and its "CDN"): the fixture's Python server
stalls about 44 ms on every request of a reused keep-alive connection, nginx
does not, and nginx opens a fresh connection to the fixture per request (a
plain proxy: no upstream keep-alive). nginx is installed with apt-get when
missing. img2gray is published there (scripts/publish-img2gray.py), and
img2gray-512m: its torch CPU variant with the module padded to 512 MiB (an
LFS file; its digest in metadata.json recomputed).

Each phase is one process per tool and run, timed around the get call alone
(torch, the client and libkernels are loaded before the clock starts, and
what kernels and the binding import lazily on their first call too: tvm_ffi,
half a second here, would otherwise be charged to their first get), with the requests it
sent counted in the fixture's log:

  cold                empty cache: resolve, download, verify, load
  warm online         a fresh process, everything cached, the Hub reachable
  offline first load  a fresh process, HF_HUB_OFFLINE=1
  re-get (name)       a process that got the kernel once gets it again by the
                      same revision (median of --regets calls)
  re-get (commit)     libkernels C only: the resolved commit id again

Tools: kernels = kernels.get_kernel(repo, revision=..., backend=...);
binding = libkernels.get_kernel(...) (bindings/python, ctypes); C =
kernels_get() from bench/get/get_bench.c with libtorch loaded. Every tool's
result is checked against the img2gray formula. Runs of the tools are
interleaved; the table shows medians over runs and the ratio ours/theirs
(below 1: libkernels is faster), with issue 14's goals: cold <= 0.33, warm
online <= 0.25, offline first load <= 0.5, and fewer requests in every phase.

Internal: bench.py --worker TOOL REPO REV PHASE REGETS BACKEND LOG_ENDPOINT.
"""
import argparse
import base64
import hashlib
import json
import logging
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
REPO = "kernels-community/img2gray"
BIG = "kernels-community/img2gray-512m"
BIG_SIZE = 512 << 20
REV = "v1"
TOOLS = ["kernels", "binding", "C"]
PHASES = ["cold", "warm", "offline", "reget"]
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def log_count(endpoint):
    with _opener.open(endpoint + "/_fixture/log", timeout=30) as r:
        return len(json.loads(r.read()))


def img2gray_ok(torch, k):
    rgb = torch.randint(0, 256, (2, 31, 47, 3), dtype=torch.uint8)
    x = rgb.to(torch.float64)
    ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
    return torch.equal(k.img2gray(rgb), ref)


# ---- one process of a Python client ----------------------------------------------------

def worker(tool, repo, rev, phase, regets, backend, log_endpoint):
    import torch

    backend = backend or None
    logging.getLogger("kernels").setLevel(logging.ERROR)  # per-call offline warnings: same for both
    logging.getLogger("libkernels").setLevel(logging.ERROR)
    if tool == "kernels":
        import kernels

        try:  # what kernels 0.17.2 imports on its first call (tvm_ffi, for the User-Agent): before the clock
            from kernels.hf_hub import _get_hf_api

            _get_hf_api()
        except ImportError:
            pass

        def get():
            return kernels.get_kernel(repo, revision=rev, backend=backend)
    else:
        sys.path.insert(0, str(SRC / "bindings" / "python"))
        import libkernels

        libkernels.library()  # dlopen libkernels before the clock, as importing `kernels` is
        try:  # what the binding imports on its first call, as kernels (tvm_ffi): before the clock
            import tvm_ffi  # noqa: F401
        except ImportError:
            pass

        def get():
            return libkernels.get_kernel(repo, revision=rev, backend=backend)

    n0 = log_count(log_endpoint)
    c0, t0 = time.process_time(), time.perf_counter()
    k = get()
    ms = (time.perf_counter() - t0) * 1e3
    cpu = (time.process_time() - c0) * 1e3
    n1 = log_count(log_endpoint)
    if not img2gray_ok(torch, k):
        sys.exit(f"{tool}: img2gray gives a wrong image")
    out = {"ms": ms, "cpu_ms": cpu, "requests": n1 - n0, "variant": Path(k.__file__).parent.name}
    if phase == "reget":
        times = []
        for _ in range(regets):
            t0 = time.perf_counter()
            k2 = get()
            times.append((time.perf_counter() - t0) * 1e3)
            assert k2 is k
        out["reget_ms"] = statistics.median(times)
        out["reget_requests"] = (log_count(log_endpoint) - n1) / regets
    print(json.dumps(out))


# ---- nginx in front of the fixture -------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nginx_binary():
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if found:
        return found
    print("bench: installing nginx (apt-get install nginx)", file=sys.stderr)
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "nginx"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return shutil.which("nginx") or "/usr/sbin/nginx"


def start_nginx(tmp, hub, cdn):
    """nginx -> the fixture's two listeners; returns (process, hub URL, CDN URL)."""
    prefix = tmp / "nginx"
    (prefix / "logs").mkdir(parents=True)
    ports = free_port(), free_port()
    servers = "".join(f"""
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass {upstream};
            proxy_set_header Host $http_host;
            proxy_buffering off;
            proxy_request_buffering off;
            proxy_read_timeout 600s;
        }}
    }}""" for port, upstream in zip(ports, (hub, cdn)))
    conf = prefix / "nginx.conf"
    conf.write_text(f"""worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/logs/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    client_max_body_size 0;
    keepalive_requests 100000;{servers}
}}
""")
    proc = subprocess.Popen([nginx_binary(), "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
                            stdin=subprocess.DEVNULL)
    for _ in range(200):
        try:
            for p in ports:
                socket.create_connection(("127.0.0.1", p), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("bench: nginx did not start (see " + str(prefix / "logs" / "error.log") + ")")


def start_hub(root):
    port_file = root / "server.json"
    (root / "hub").mkdir(exist_ok=True)
    proc = subprocess.Popen([sys.executable, str(SRC / "tests" / "hub" / "server.py"), "--root", str(root / "hub"),
                             "--port-file", str(port_file), "--parent-pid", str(os.getpid())],
                            stdin=subprocess.DEVNULL)
    for _ in range(400):
        if port_file.exists():
            info = json.loads(port_file.read_text())
            return proc, info["endpoint"], info["cdn"]
        time.sleep(0.05)
    proc.kill()
    sys.exit("bench: the local Hub did not start")


def fixture_config(endpoint, cfg):
    req = urllib.request.Request(endpoint + "/_fixture/config", data=json.dumps(cfg).encode(), method="POST")
    with _opener.open(req, timeout=30) as r:
        return json.loads(r.read())


# ---- publishing --------------------------------------------------------------------------

def publish_big(tmp, hub_root, build):
    """img2gray-512m: the torch CPU variant, its module padded to 512 MiB."""
    src = build / "variants" / "img2gray" / "build"
    variant = sorted(p.name for p in src.glob("torch*-cpu-*") if (p / "metadata.json").exists())[-1]
    tree = tmp / "big-src"
    dst = tree / "build" / variant
    shutil.copytree(src / variant, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    so = next(p for p in dst.rglob("*.so"))
    with open(so, "ab") as f:
        f.truncate(BIG_SIZE)  # zeros past the ELF image: never mapped
    h = hashlib.sha256()
    with open(so, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    meta_path = dst / "metadata.json"
    meta = json.loads(meta_path.read_text())
    if "digest" in meta:
        meta["digest"]["files"][so.relative_to(dst).as_posix()] = base64.b64encode(h.digest()).decode()
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    subprocess.run([sys.executable, str(SRC / "tests" / "hub" / "publish.py"), "--root", str(hub_root), "--repo", BIG,
                    "--dir", str(tree), "--branch", "main", "--branch", "v1", "--tag", "v1.0.0", "--trusted"],
                   check=True, capture_output=True)
    shutil.rmtree(tree)
    return variant


# ---- running the tools -------------------------------------------------------------------

def build_c(build):
    exe = build / "get_bench"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", f"-I{SRC / 'include'}",
                    str(SRC / "bench" / "get" / "get_bench.c"), f"-L{build / 'lib'}", "-lkernels", "-ldl",
                    f"-Wl,-rpath,{build / 'lib'}", "-o", str(exe)], check=True)
    return exe


def run_phase(tool, phase, repo, env, a, exe, torch_lib, log_endpoint):
    env = dict(env)
    if phase == "offline":
        env["HF_HUB_OFFLINE"] = "1"
    if tool == "C":
        cmd = [str(exe), repo, REV, "--torch-lib", torch_lib, "--json"]
        cmd += ["--warm", str(a.regets)] if phase == "reget" else ["--once"]
        if a.backend:
            cmd += ["--backend", a.backend]
        n0 = log_count(log_endpoint)
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if proc.returncode:
            sys.exit(f"bench: C {phase} failed:\n{proc.stdout}{proc.stderr}")
        n = log_count(log_endpoint) - n0
        d = json.loads(proc.stdout)
        if phase != "reget":
            return {"ms": d["ms"], "cpu_ms": d["cpu_ms"], "requests": n, "variant": d["variant"],
                    "stages": [d["resolve_ms"], d["select_ms"], d["download_ms"], d["load_ms"]]}
        # first get (warm, 1 request) + regets by name (1 each) + offline + by commit (none)
        return {"ms": d["cold"]["median_ms"], "requests": 1, "variant": d["variant"],
                "reget_ms": d["warm"]["median_ms"], "reget_requests": (n - 1) / a.regets,
                "reget_commit_ms": d["reget_commit"]["median_ms"], "reget_commit_min_ms": d["reget_commit"]["min_ms"]}
    cmd = [sys.executable, __file__, "--worker", tool, repo, REV, phase, str(a.regets), a.backend or "", log_endpoint]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"bench: {tool} {phase} failed:\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_repo(repo, runs, a, base_env, exe, torch_lib, log_endpoint, tmp):
    results = {t: {p: [] for p in PHASES} for t in TOOLS}
    for r in range(runs):
        for t in TOOLS:
            cache = tmp / f"cache-{t}"
            shutil.rmtree(cache, ignore_errors=True)
            env = dict(base_env, HF_HUB_CACHE=str(cache))
            for phase in PHASES:
                results[t][phase].append(run_phase(t, phase, repo, env, a, exe, torch_lib, log_endpoint))
            shutil.rmtree(cache, ignore_errors=True)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--regets", type=int, default=50)
    ap.add_argument("--big-runs", type=int, default=1)
    ap.add_argument("--no-big", action="store_true", help="skip the 512 MiB variant")
    ap.add_argument("--backend", default="cpu", help='"cpu" (default) or "" to let each tool detect it')
    ap.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        tool, repo, rev, phase, regets, backend, log_endpoint = a.worker
        return worker(tool, repo, rev, phase, int(regets), backend, log_endpoint)

    if a.build is None:
        ap.error("--build BUILD_DIR is required")
    build = a.build.resolve()
    lib = build / "lib" / "libkernels.so"
    if not lib.exists() or not any((build / "variants" / "img2gray" / "build").glob("torch*/metadata.json")):
        sys.exit(f"bench: build {build} first (libkernels.so and the img2gray torch variants)")
    exe = build_c(build)
    import torch
    import kernels

    torch_lib = str(Path(torch.__file__).parent / "lib")
    tmp = Path(tempfile.mkdtemp(prefix="bench-vs-python-"))
    hub, direct, direct_cdn = start_hub(tmp)
    nginx = None
    try:
        nginx, endpoint, cdn = start_nginx(tmp, direct, direct_cdn)
        fixture_config(direct, {"endpoint": endpoint, "cdn": cdn})
        subprocess.run([sys.executable, str(SRC / "scripts" / "publish-img2gray.py"), "--root", str(tmp / "hub"),
                        "--build", str(build / "variants" / "img2gray" / "build"), "--repo", REPO],
                       check=True, capture_output=True)
        if not a.no_big:
            publish_big(tmp, tmp / "hub", build)
        base_env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_OFFLINE="0", HF_TOKEN="",
                        NO_PROXY="127.0.0.1,localhost", KERNELS_LIBRARY=str(lib), HF_HUB_DISABLE_PROGRESS_BARS="1",
                        PYTHONDONTWRITEBYTECODE="1",
                        # kernels 0.17.2 with telemetry disabled sends a user agent httpx refuses
                        HF_HUB_DISABLE_TELEMETRY="0")
        for k in ("KERNELS_CACHE", "LOCAL_KERNELS", "HF_HUB_CACHE", "HF_HOME"):
            base_env.pop(k, None)
        base_env["HF_HOME"] = str(tmp / "hf_home")  # no user token file, no user cache
        results = {REPO: bench_repo(REPO, a.runs, a, base_env, exe, torch_lib, direct, tmp)}
        if not a.no_big:
            results[BIG] = bench_repo(BIG, a.big_runs, a, base_env, exe, torch_lib, direct, tmp)
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        hub.terminate()
        hub.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, a, kernels.__version__, endpoint)


GOALS = {"cold": 0.33, "warm": 0.25, "offline": 0.5}
NAMES = {"cold": "cold", "warm": "warm online", "offline": "offline first load", "reget": "re-get (name)"}


def report(results, a, kver, endpoint):
    desc = subprocess.run(["git", "-C", str(SRC), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip() or "?"
    print(f"# bench/vs_python: revision {REV}, backend {a.backend or 'detected'}, local Hub fixture (tests/hub) "
          f"behind nginx ({endpoint})")
    print(f"# libkernels {desc}, kernels {kver}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}; one process per phase, tool and run; "
          f"{a.regets} re-gets per re-get phase")
    for repo, res in results.items():
        runs = len(res["C"]["cold"])
        print()
        print(f"## {repo} ({runs} run{'s' if runs > 1 else ''}; variants: "
              + ", ".join(f"{t}={res[t]['cold'][0]['variant']}" for t in TOOLS) + ")")
        print()
        hdr = (f"{'phase':<19} {'kernels (Python)':>16} {'binding':>11} {'ratio':>6} {'C':>11} {'ratio':>6} "
               f"{'goal':>6}   requests kernels/binding/C")
        print(hdr)
        print("-" * len(hdr))
        for p in PHASES:
            key, rkey = ("reget_ms", "reget_requests") if p == "reget" else ("ms", "requests")
            th, py, c = (statistics.median(r[key] for r in res[t][p]) for t in TOOLS)
            rq = [statistics.median(r[rkey] for r in res[t][p]) for t in TOOLS]
            goal = GOALS.get(p)
            verdict = "" if goal is None else (f"<={goal:g} " + ("met" if c / th <= goal and (rq[2] < rq[0] or rq[0] == 0) else
                                                                  "MISSED"))
            print(f"{NAMES[p]:<19} {th:>13.3f} ms {py:>8.3f} ms {py / th:>6.3f} {c:>8.3f} ms {c / th:>6.3f} "
                  f"{verdict:>10}   {rq[0]:g}/{rq[1]:g}/{rq[2]:g}")
        rc = [r["reget_commit_ms"] * 1e3 for r in res["C"]["reget"]]
        print(f"{'re-get (commit)':<19} {'':>16} {'':>11} {'':>6} {statistics.median(rc):>8.2f} us   (C only: "
              "no request, no system call)")
        print()
        print("client CPU, median ms (the process's own user+system time, every thread, during the get; the rest of a")
        print("phase's time is waiting on the Hub fixture and the disk):")
        for p in ("cold", "warm", "offline"):
            th, py, c = (statistics.median(r["cpu_ms"] for r in res[t][p]) for t in TOOLS)
            print(f"  {NAMES[p]:<19} kernels {th:8.3f}  binding {py:8.3f} ({py / th:.3f})  C {c:8.3f} ({c / th:.3f})")
        print()
        print("C stages, median ms (resolve: the refs, then the trust check and the listings side by side; select: "
              "system, variant; download; load: verify, map, dlopen):")
        for p in ("cold", "warm", "offline"):
            st = [statistics.median(r["stages"][i] for r in res["C"][p]) for i in range(4)]
            print(f"  {NAMES[p]:<19} resolve {st[0]:8.3f}  select {st[1]:8.3f}  download {st[2]:8.3f}  load {st[3]:8.3f}")
    print()
    print("ratio = libkernels / kernels (below 1: libkernels is faster); goal: issue 14's ratio for the C host, "
          "met when the ratio")
    print("is at most the goal and C sent fewer requests than kernels (or both none). Times are of the get call alone; imports "
          "(torch, the")
    print("client, libkernels) happen before the clock starts.")


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""libkernels vs the Python `kernels` package (PyPI, tests/requirements.txt)
fetching and loading img2gray from the same local Hub:

    python3 bench/vs_python/bench.py --build BUILD_DIR [--runs 3] [--warm 20] [--backend cpu]

Starts the local Hub fixture (tests/hub) on a fresh root, publishes img2gray
there (scripts/publish-img2gray.py, from BUILD_DIR/variants/img2gray/build)
and then, in one process per tool and run, each with an empty cache:

  kernels      kernels.get_kernel(repo, revision="v1", backend=...)
  binding      libkernels.get_kernel(...) (bindings/python, ctypes)
  C            kernels_get() from bench/get/get_bench.c, libtorch loaded

and times three phases around the get call alone (torch, the client and
libkernels are imported/loaded before the clock starts):
  cold fetch        empty cache: resolve, download, verify, load/import
  warm get          everything cached, Hub reachable (median of --warm calls)
  warm get offline  HF_HUB_OFFLINE (median of --warm calls)
Every tool's first result is checked against the img2gray formula. The
fixture's request log gives the requests per call of each phase. Runs of the
tools are interleaved; the table shows the median over runs and the ratio
ours/theirs (below 1: libkernels is faster).

The revision is the branch name "v1" for every tool: `kernels` resolves
version=1 to a commit and downloads by commit, so huggingface_hub records no
refs/v1 and `kernels` could not answer version=1 offline afterwards.

Internal: bench.py --worker kernels|binding REPO REV WARM BACKEND (one run).
"""
import argparse
import json
import logging
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
REPO = "kernels-community/img2gray"
REV = "v1"
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def log_count(endpoint):
    with _opener.open(endpoint + "/_fixture/log", timeout=30) as r:
        return len(json.loads(r.read()))


# ---- one run of a Python client (in its own process) ------------------------------

def worker(tool, repo, rev, warm, backend):
    import torch

    endpoint = os.environ["HF_ENDPOINT"]
    backend = backend or None
    logging.getLogger("kernels").setLevel(logging.ERROR)  # per-call offline warnings: same for both
    logging.getLogger("libkernels").setLevel(logging.ERROR)
    if tool == "kernels":
        import kernels
        from huggingface_hub import constants

        def get():
            return kernels.get_kernel(repo, revision=rev, backend=backend)

        def go_offline():
            os.environ["HF_HUB_OFFLINE"] = "1"
            constants.HF_HUB_OFFLINE = True  # huggingface_hub read the variable at import
    else:
        sys.path.insert(0, str(SRC / "bindings" / "python"))
        import libkernels

        libkernels.library()  # dlopen libkernels before the clock, as importing `kernels` is

        def get():
            return libkernels.get_kernel(repo, revision=rev, backend=backend)

        def go_offline():
            os.environ["HF_HUB_OFFLINE"] = "1"  # libkernels reads it on every call

    def timed():
        t0 = time.perf_counter()
        k = get()
        return (time.perf_counter() - t0) * 1e3, k

    n0 = log_count(endpoint)
    cold, k = timed()
    n1 = log_count(endpoint)
    rgb = torch.randint(0, 256, (2, 31, 47, 3), dtype=torch.uint8)
    x = rgb.to(torch.float64)
    ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
    if not torch.equal(k.img2gray(rgb), ref):
        sys.exit(f"{tool}: img2gray gives a wrong image")
    variant = Path(k.__file__).parent.name
    n1 = log_count(endpoint)
    w = []
    for _ in range(warm):
        t, k2 = timed()
        assert k2 is k
        w.append(t)
    n2 = log_count(endpoint)
    go_offline()
    off = []
    for _ in range(warm):
        t, k2 = timed()
        assert k2 is k
        off.append(t)
    n3 = log_count(endpoint)
    print(json.dumps({"cold": cold, "warm": statistics.median(w), "warm_offline": statistics.median(off),
                      "variant": variant, "req_cold": n1 - n0, "req_warm": (n2 - n1) / warm,
                      "req_offline": (n3 - n2) / warm}))


# ---- the driver ----------------------------------------------------------------------

def start_hub(root):
    port_file = root / "server.json"
    proc = subprocess.Popen([sys.executable, str(SRC / "tests" / "hub" / "server.py"), "--root", str(root / "hub"),
                             "--port-file", str(port_file), "--parent-pid", str(os.getpid())],
                            stdin=subprocess.DEVNULL)
    (root / "hub").mkdir(exist_ok=True)
    for _ in range(400):
        if port_file.exists():
            return proc, json.loads(port_file.read_text())["endpoint"]
        time.sleep(0.05)
    proc.kill()
    sys.exit("bench: the local Hub did not start")


def build_c(build):
    exe = build / "get_bench"
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", f"-I{SRC / 'include'}",
                    str(SRC / "bench" / "get" / "get_bench.c"), f"-L{build / 'lib'}", "-lkernels", "-ldl",
                    f"-Wl,-rpath,{build / 'lib'}", "-o", str(exe)], check=True)
    return exe


def run_tool(tool, env, warm, backend, exe, torch_lib):
    if tool == "C":
        cmd = [str(exe), REPO, REV, "--warm", str(warm), "--torch-lib", torch_lib, "--json"]
        if backend:
            cmd += ["--backend", backend]
        endpoint = env["HF_ENDPOINT"]
        n0 = log_count(endpoint)
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
        n = log_count(endpoint) - n0
        d = json.loads(out)
        # get_bench reports per phase; the log only the total: split it with
        # the offline phase's zero and the warm calls' share (asserted zero
        # offline by the Python tools and by tests/python/test_binding*.py).
        return {"cold": d["cold"]["median_ms"], "warm": d["warm"]["median_ms"],
                "warm_offline": d["warm_offline"]["median_ms"], "variant": d["variant"], "req_total": n}
    cmd = [sys.executable, __file__, "--worker", tool, REPO, REV, str(warm), backend or ""]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"bench: {tool} failed:\n{proc.stdout}{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warm", type=int, default=20)
    ap.add_argument("--backend", default="cpu", help='"cpu" (default) or "" to let each tool detect it')
    ap.add_argument("--worker", nargs=5, metavar=("TOOL", "REPO", "REV", "WARM", "BACKEND"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        tool, repo, rev, warm, backend = a.worker
        return worker(tool, repo, rev, int(warm), backend)

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
    hub, endpoint = start_hub(tmp)
    try:
        subprocess.run([sys.executable, str(SRC / "scripts" / "publish-img2gray.py"), "--root", str(tmp / "hub"),
                        "--build", str(build / "variants" / "img2gray" / "build"), "--repo", REPO],
                       check=True, capture_output=True)
        tools = ["kernels", "binding", "C"]
        results = {t: [] for t in tools}
        for r in range(a.runs):
            for t in tools:
                cache = tmp / f"cache-{t}-{r}"
                env = dict(os.environ, HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="0",
                           HF_TOKEN="", NO_PROXY="127.0.0.1,localhost", KERNELS_LIBRARY=str(lib),
                           HF_HUB_DISABLE_PROGRESS_BARS="1", PYTHONDONTWRITEBYTECODE="1",
                           # kernels 0.17.2 with telemetry disabled sends a user agent httpx refuses
                           HF_HUB_DISABLE_TELEMETRY="0")
                env.pop("KERNELS_CACHE", None)
                env.pop("LOCAL_KERNELS", None)
                results[t].append(run_tool(t, env, a.warm, a.backend, exe, torch_lib))
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        hub.terminate()
        hub.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    report(results, a, kernels.__version__)


def report(results, a, kver):
    med = {t: {k: statistics.median(r[k] for r in rs) for k in ("cold", "warm", "warm_offline")}
           for t, rs in results.items()}
    desc = subprocess.run(["git", "-C", str(SRC), "describe", "--always", "--dirty"], capture_output=True,
                          text=True).stdout.strip() or "?"
    print(f"# bench/vs_python: img2gray ({REPO}, revision {REV}, backend {a.backend or 'detected'}) from a local Hub "
          "fixture (tests/hub, a Python server on 127.0.0.1)")
    print(f"# libkernels {desc}, kernels {kver}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
          f"{a.runs} runs per tool (one process each, fresh cache), {a.warm} warm calls per phase, "
          f"{time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}")
    print("# variants: " + ", ".join(f"{t}={results[t][0]['variant']}" for t in results))
    print()
    hdr = f"{'phase':<18} {'kernels (Python)':>17} {'libkernels binding':>19} {'ratio':>7} {'libkernels C':>13} {'ratio':>7}"
    print(hdr)
    print("-" * len(hdr))
    names = {"cold": "cold fetch", "warm": "warm get", "warm_offline": "warm get offline"}
    for k, name in names.items():
        th, py, c = med["kernels"][k], med["binding"][k], med["C"][k]
        print(f"{name:<18} {th:>14.3f} ms {py:>16.3f} ms {py / th:>7.3f} {c:>10.3f} ms {c / th:>7.3f}")
    print()
    print("requests to the Hub per call (fixture log; medians over runs):")
    for t in ("kernels", "binding"):
        rs = results[t]
        print(f"  {t:<8} cold {statistics.median(r['req_cold'] for r in rs):g}, "
              f"warm {statistics.median(r['req_warm'] for r in rs):g}, "
              f"warm offline {statistics.median(r['req_offline'] for r in rs):g}")
    print(f"  C        all phases together {statistics.median(r['req_total'] for r in results['C']):g} "
          f"(1 cold + {a.warm} warm + {a.warm} offline calls)")
    print()
    print("ratio = libkernels / kernels (below 1: libkernels is faster). Times are of the get call alone;")
    print("imports (torch, the client, libkernels) happen before the clock starts. Warm calls return the")
    print("already-loaded module (both clients keep a registry of imported variants).")


if __name__ == "__main__":
    sys.exit(main())

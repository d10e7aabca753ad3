#!/usr/bin/env python3
"""libkernels (C) vs the Python `kernels` package (0.17.2) getting img2gray over a
slow network: a latency proxy (this file, asyncio, no dependency) in front of
the local Hub fixture and its CDN, at several round-trip times.

    python3 bench/wan/wan.py --build BUILD_DIR [--rtt 0,40,100] [--runs 3] [--variants DIR] [--tls]
                             [--no-cdn-hint]

The chain: client -> latency proxy -> nginx -> fixture (nginx as in
bench/vs_python, whose set-up this reuses: the fixture stalls on reused
keep-alive connections, nginx does not). The fixture is told to name the
proxy's two ports as its endpoint and CDN, so the Hub's redirects to the CDN
go through the proxy too. The proxy delays every byte by half the RTT each
way and holds a new connection for one RTT before anything passes (the TCP
handshake): a fresh connection's first answer comes 2 RTT after connect().
Plain HTTP, or with --tls HTTPS: nginx then terminates TLS (HTTP/2 offered
by ALPN and TLS 1.3 offered beside 1.2, as the Hub and its CDN do: nginx
1.22's default is TLS 1.2 alone, whose handshake costs a round trip more
for both clients) with a certificate for 127.0.0.1 from a
CA the bench makes (openssl), which both clients are given through the usual
variables (CURL_CA_BUNDLE, SSL_CERT_FILE, REQUESTS_CA_BUNDLE); the proxy
passes the TLS bytes through, so the handshake's round trips are paid too.

Phases, one fresh process each, timed around the get call alone (imports
outside the clock, as bench/vs_python does): cold (empty cache), warm
(everything cached, the Hub reachable) and "cold, used cache": the cache
already holds another kernel fetched from the same endpoint (a second copy
of img2gray under another name, fetched first, untimed), the common case of
a server that fetched a kernel before; libkernels then knows the CDN's host
from that fetch and opens its connection early (lib/hub_warm.c). Python
kernels reuses nothing across processes: its figure there is its cold one.
With --no-cdn-hint the used cache loses that hint before the timed get:
the same phase as it was before lib/hub_warm.c, for the comparison.
Requests are counted in the fixture's log. The report gives medians, the
ratios C/Python, and each tool's slope: the time added per millisecond of RTT (a least-squares line
over the RTTs), i.e. how many round trips its critical path holds.

Internal: wan.py --proxy PORT_FILE HUB_UPSTREAM CDN_UPSTREAM RTT_MS.
"""
import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

SRC = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SRC / "bench" / "vs_python"))
import bench as vsp  # noqa: E402  (bench/vs_python/bench.py: the fixture, nginx and the tools)

TOOLS = ["kernels", "C"]
PHASES = ["cold", "warm", "used"]
LABELS = {"cold": "cold", "warm": "warm", "used": "cold, used cache"}
OTHER = vsp.REPO + "-twin"  # the kernel the used cache fetched before


# ---- the latency proxy ---------------------------------------------------------------------

async def pipe(reader, writer, delay):
    """Copies reader to writer, each chunk delivered `delay` seconds after it was read."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def pump():
        while True:
            try:
                data = await reader.read(1 << 16)
            except (ConnectionError, OSError):
                data = b""
            queue.put_nowait((loop.time() + delay, data))
            if not data:
                return

    async def deliver():
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                if not data:
                    if writer.can_write_eof():
                        writer.write_eof()
                    return
                writer.write(data)
                await writer.drain()
            except (ConnectionError, OSError):
                return

    await asyncio.gather(pump(), deliver())


async def serve(port_file, upstreams, rtt):
    async def handler(host, port, client_r, client_w):
        await asyncio.sleep(rtt)  # the handshake's round trip
        try:
            up_r, up_w = await asyncio.open_connection(host, port)
        except OSError:
            client_w.close()
            return
        await asyncio.gather(pipe(client_r, up_w, rtt / 2), pipe(up_r, client_w, rtt / 2))
        for w in (up_w, client_w):
            w.close()

    ports = []
    servers = []
    for up in upstreams:
        host, port = up.split("//")[1].split(":")
        srv = await asyncio.start_server(lambda r, w, h=host, p=int(port): handler(h, p, r, w), "127.0.0.1", 0)
        servers.append(srv)
        ports.append(srv.sockets[0].getsockname()[1])
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"ports": ports}, f)
    os.rename(tmp, port_file)
    await asyncio.gather(*(s.serve_forever() for s in servers))


def start_proxy(tmp, hub, cdn, rtt_ms):
    port_file = tmp / f"proxy-{rtt_ms}.json"
    proc = subprocess.Popen([sys.executable, __file__, "--proxy", str(port_file), hub, cdn, str(rtt_ms)],
                            stdin=subprocess.DEVNULL)
    for _ in range(200):
        if port_file.exists():
            p = json.loads(port_file.read_text())["ports"]
            return proc, f"http://127.0.0.1:{p[0]}", f"http://127.0.0.1:{p[1]}"
        time.sleep(0.05)
    proc.kill()
    sys.exit("wan: the latency proxy did not start")


# ---- TLS ----------------------------------------------------------------------------------

def make_ca(tmp):
    """A CA and a certificate for 127.0.0.1 it signed; returns (ca.pem, cert.pem, key.pem)."""
    d = tmp / "tls"
    d.mkdir()
    ca, ca_key, cert, key, csr = (d / n for n in ("ca.pem", "ca.key", "cert.pem", "cert.key", "cert.csr"))
    ext = d / "ext.cnf"
    ext.write_text("basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n")

    def ssl(*args):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)
    ssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", ca_key,
        "-out", ca, "-days", "2", "-subj", "/CN=bench-wan CA")
    ssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", csr,
        "-subj", "/CN=127.0.0.1")
    ssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
        "-extfile", ext)
    return ca, cert, key


def start_nginx_tls(tmp, hub, cdn, cert, key):
    """nginx terminating TLS (HTTP/2 by ALPN) -> the fixture's two listeners; (process, hub, CDN) as host:port."""
    prefix = tmp / "nginx-tls"
    (prefix / "logs").mkdir(parents=True)
    ports = vsp.free_port(), vsp.free_port()
    servers = "".join(f"""
    server {{
        listen 127.0.0.1:{port} ssl http2;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols TLSv1.2 TLSv1.3;
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
    proc = subprocess.Popen([vsp.nginx_binary(), "-p", str(prefix), "-c", str(conf), "-g", "daemon off;"],
                            stdin=subprocess.DEVNULL)
    for _ in range(200):
        try:
            for p in ports:
                socket.create_connection(("127.0.0.1", p), timeout=0.2).close()
            return proc, f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit("wan: nginx (TLS) did not start (see " + str(prefix / "logs" / "error.log") + ")")


# ---- the runs ------------------------------------------------------------------------------

def run_rtt(rtt_ms, runs, a, base_env, exe, torch_lib, direct, nginx_hub, nginx_cdn, tmp):
    proxy, endpoint, cdn = start_proxy(tmp, nginx_hub, nginx_cdn, rtt_ms)
    if a.tls:  # the proxy passes TLS through: the clients speak https to it
        endpoint, cdn = (u.replace("http://", "https://") for u in (endpoint, cdn))
    try:
        vsp.fixture_config(direct, {"endpoint": endpoint, "cdn": cdn})
        env0 = dict(base_env, HF_ENDPOINT=endpoint)
        out = {t: {p: [] for p in PHASES} for t in TOOLS}
        out["trace"] = {}
        for _ in range(runs):
            for t in TOOLS:
                cache = tmp / f"cache-{t}"
                shutil.rmtree(cache, ignore_errors=True)
                env = dict(env0, HF_HUB_CACHE=str(cache))
                for phase in PHASES:
                    if phase == "used":  # another kernel from the same endpoint, untimed
                        shutil.rmtree(cache, ignore_errors=True)
                        vsp.run_phase(t, "cold", OTHER, env, a, exe, torch_lib, direct)
                        if a.no_cdn_hint:  # the cache as before lib/hub_warm.c: no hint, no warm-up
                            shutil.rmtree(cache / ".libkernels" / "cdn", ignore_errors=True)
                    n0 = vsp.log_count(direct)
                    r = vsp.run_phase(t, "warm" if phase == "warm" else "cold", vsp.REPO, env, a, exe, torch_lib,
                                      direct)
                    out[t][phase].append((r["ms"], r["requests"]))
                    if phase != "warm" and (t, phase) not in out["trace"]:  # the first run's requests, in order
                        with vsp._opener.open(direct + "/_fixture/log", timeout=30) as f:
                            out["trace"][(t, phase)] = json.loads(f.read())[n0:]
                shutil.rmtree(cache, ignore_errors=True)
        return out
    finally:
        proxy.terminate()
        proxy.wait()


def slope(xs, ys):
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def trace(rtt, entries):
    """When each request of a cold get reached the fixture, in RTTs after the first."""
    if not entries:
        return "(no requests)"
    t0 = entries[0]["time"]
    unit = rtt / 1000 if rtt else 1e-3
    return "; ".join(f"{(e['time'] - t0) / unit:.1f}{'' if rtt else ' ms'} {e['method']} "
                     f"{'CDN ' if e['listener'] != 'hub' else ''}{e['path'].split('/')[-1][:24] or e['path']}"
                     for e in entries)


def report(results, runs, kver, tls, no_hint=False):
    rev = subprocess.run(["git", "-C", str(SRC), "describe", "--always", "--dirty"], capture_output=True,
                         text=True).stdout.strip()
    print(f"# bench/wan: libkernels {rev} (C, kernels_get) vs kernels {kver} (Python), {vsp.REPO}@{vsp.REV} "
          f"(torch CPU variant), {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())}; "
          f"medians of {runs} runs, fresh process per phase, "
          f"{'HTTPS (nginx: TLS, HTTP/2 by ALPN)' if tls else 'plain HTTP'} through the latency proxy"
          f"{'; used cache without its CDN hint (--no-cdn-hint)' if no_hint else ''}")
    print("| RTT | " + " | ".join(f"{LABELS[p]}: C | {LABELS[p]}: Python | ratio" for p in PHASES) + " |")
    print("| --- |" + " --- | --- | --- |" * len(PHASES))
    med = {}
    for rtt, res in results.items():
        cells = []
        for phase in PHASES:
            c = statistics.median(m for m, _ in res["C"][phase])
            p = statistics.median(m for m, _ in res["kernels"][phase])
            rc = statistics.median(n for _, n in res["C"][phase])
            rp = statistics.median(n for _, n in res["kernels"][phase])
            med[(rtt, phase)] = (c, p)
            cells += [f"{c:.0f} ms, {rc:g} req", f"{p:.0f} ms, {rp:g} req", f"{c / p:.2f}"]
        print(f"| {rtt} ms | " + " | ".join(cells) + " |")
    rtts = list(results)
    for phase in PHASES:
        sc = slope(rtts, [med[(r, phase)][0] for r in rtts])
        sp = slope(rtts, [med[(r, phase)][1] for r in rtts])
        print(f"slope {LABELS[phase]}: C {sc:.1f} round trips, Python {sp:.1f} round trips (ms added per ms of RTT)")
    rtt = rtts[-1]
    for phase in ("cold", "used"):
        for t in TOOLS:
            print(f"{LABELS[phase]} requests at {rtt} ms, {'C' if t == 'C' else 'Python'} (arrival at the fixture, "
                  f"in RTTs after the first): {trace(rtt, results[rtt]['trace'].get((t, phase)))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path)
    ap.add_argument("--rtt", default="0,40,100")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--variants", type=Path, help="img2gray's built variants (default BUILD/variants/img2gray/build)")
    ap.add_argument("--tls", action="store_true", help="HTTPS through nginx with a CA the bench makes")
    ap.add_argument("--no-cdn-hint", action="store_true",
                    help="'cold, used cache' without the CDN hint the first fetch left (the figure before it)")
    ap.add_argument("--proxy", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.proxy:
        port_file, hub, cdn, rtt = a.proxy
        return asyncio.run(serve(port_file, [hub, cdn], float(rtt) / 1000))
    if a.build is None:
        ap.error("--build BUILD_DIR is required")
    build = a.build.resolve()
    variants = (a.variants or build / "variants" / "img2gray" / "build").resolve()
    exe = vsp.build_c(build)
    import torch
    import kernels  # noqa: F401
    from importlib.metadata import version

    torch_lib = str(Path(torch.__file__).parent / "lib")
    tmp = Path(tempfile.mkdtemp(prefix="bench-wan-"))
    hub, direct, direct_cdn = vsp.start_hub(tmp)
    nginx = None
    try:
        if a.tls:
            ca, cert, key = make_ca(tmp)
            nginx, nginx_hub, nginx_cdn = start_nginx_tls(tmp, direct, direct_cdn, cert, key)
        else:
            nginx, nginx_hub, nginx_cdn = vsp.start_nginx(tmp, direct, direct_cdn)
        for repo in (vsp.REPO, OTHER):
            subprocess.run([sys.executable, str(SRC / "scripts" / "publish-img2gray.py"), "--root",
                            str(tmp / "hub"), "--build", str(variants), "--repo", repo], check=True,
                           capture_output=True)
        base_env = dict(os.environ, HF_HUB_OFFLINE="0", HF_TOKEN="", NO_PROXY="127.0.0.1,localhost",
                        KERNELS_LIBRARY=str(build / "lib" / "libkernels.so"), HF_HUB_DISABLE_PROGRESS_BARS="1",
                        PYTHONDONTWRITEBYTECODE="1", HF_HUB_DISABLE_TELEMETRY="0", HF_HOME=str(tmp / "hf_home"))
        for k in ("KERNELS_CACHE", "LOCAL_KERNELS", "HF_HUB_CACHE"):
            base_env.pop(k, None)
        if a.tls:
            base_env.update(CURL_CA_BUNDLE=str(ca), SSL_CERT_FILE=str(ca), REQUESTS_CA_BUNDLE=str(ca))
        opts = SimpleNamespace(regets=1, backend="cpu", tls=a.tls, no_cdn_hint=a.no_cdn_hint)
        results = {}
        for rtt in (int(x) for x in a.rtt.split(",")):
            results[rtt] = run_rtt(rtt, a.runs, opts, base_env, exe, torch_lib, direct, nginx_hub, nginx_cdn, tmp)
            print(f"wan: {rtt} ms done", file=sys.stderr)
        report(results, a.runs, version("kernels"), a.tls, a.no_cdn_hint)
    finally:
        if nginx:
            nginx.terminate()
            nginx.wait()
        hub.terminate()
        hub.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Bundle write and import against tar, for one project locking one kernel
with a large variant (default 512 MiB), on this machine. Printed, never
asserted.

    python3 bench/bundle/bench.py BUILD_DIR [--mib 512] [--repeats 3]

The source cache is laid out here as a download leaves it (blobs named by
their hash, snapshot links, refs/v1, a kernels.lock pinning the commit), so
no Hub is needed: `libkernels bundle --offline` reads it as it is. The
module is random bytes (zstd gains nothing on it; it pays its cost). Each
side works on the same bytes:

  write:  libkernels bundle  vs  tar --zstd -c (of the variant folder, links followed)
  import: libkernels bundle import (verify + stage + publish, fsync'ed)
          vs  tar --zstd -x of the same bundle file into a fresh folder

Times are the best of --repeats runs with the page cache warm; peak RSS is
the child's maximum resident set (getrusage)."""
import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "torch211-cxx11-cpu-x86_64-linux"
COMMIT = "b" * 40


def git_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def make_cache(work, mib):
    """{work}/src: a variant folder; {work}/cache: it as a download leaves it."""
    src = work / "src" / VARIANT
    src.mkdir(parents=True)
    with open(src / "_big_1.abi3.so", "wb") as f:
        for _ in range(mib):
            f.write(os.urandom(1 << 20))
    (src / "__init__.py").write_text("from ._ops import ops\n")
    subprocess.run([sys.executable, str(ROOT / "tests/data/variants/make_metadata.py"), str(src), "--name", "big",
                    "--id", "_big_1"], check=True)
    repo = work / "cache" / "kernels--bench--big"
    (repo / "blobs").mkdir(parents=True)
    snap = repo / "snapshots" / COMMIT / "build" / VARIANT
    snap.mkdir(parents=True)
    for p in src.iterdir():
        if p.name.endswith(".so"):
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            etag = h.hexdigest()
        else:
            etag = git_sha1(p.read_bytes())
        shutil.copyfile(p, repo / "blobs" / etag)
        (snap / p.name).symlink_to(f"../../../../blobs/{etag}")
    (repo / "refs").mkdir()
    (repo / "refs" / "v1").write_text(COMMIT)
    proj = work / "app"
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[tool.kernels.dependencies]\n"bench/big" = 1\n')
    lock = [{"dependency": {"repo-id": "bench/big", "version": 1}, "lock": {"commit": COMMIT}}]
    (proj / "kernels.lock").write_text(json.dumps(lock, indent=2))
    return proj, snap


TIME = shutil.which("time", path="/usr/bin:/bin")


def timed(cmd, env=None, prepare=None):
    """Best wall time of the repeats, and the command's own peak RSS in KiB
    (GNU time, which forks it from a small process: a child forked from this
    Python would carry Python's resident set into its maximum; 0 when
    /usr/bin/time is missing)."""
    best, rss = None, 0
    argv = [str(c) for c in cmd]
    for _ in range(ARGS.repeats):
        if prepare:
            prepare()
        t = time.perf_counter()
        p = subprocess.run(([TIME, "-f", "%M"] if TIME else []) + argv, env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        wall = time.perf_counter() - t
        if p.returncode:
            sys.exit(f"{' '.join(argv)} failed: {p.stderr}")
        best = wall if best is None else min(best, wall)
        if TIME:
            rss = max(rss, int(p.stderr.strip().splitlines()[-1]))
    return best, rss


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--tmp", default=None, help="work folder (default: a new one under $TMPDIR)")
    ARGS = ap.parse_args()
    cli = Path(ARGS.build).resolve() / "bindings/cli/libkernels"
    work = Path(tempfile.mkdtemp(prefix="bundle-bench-", dir=ARGS.tmp))
    try:
        proj, snap = make_cache(work, ARGS.mib)
        env = dict(os.environ, HF_HUB_OFFLINE="1", KERNELS_CACHE=str(work / "cache"))
        bundle, tarball = work / "kernels.bundle", work / "variant.tar.zst"
        # one warm-up: the first bundle verifies the variant (hashing it) and leaves a receipt, as a
        # download does; the timed runs then find the cache as a download leaves it
        subprocess.run([cli, "bundle", proj, "-o", bundle, "--offline", "-q"], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        w_ours, w_ours_rss = timed([cli, "bundle", proj, "-o", bundle, "--offline", "-q"], env)
        w_tar, w_tar_rss = timed(["tar", "--zstd", "-chf", tarball, "-C", snap.parent, VARIANT])
        w_tar_plain, _ = timed(["tar", "-chf", work / "variant.tar", "-C", snap.parent, VARIANT])
        dest, out = work / "import-cache", work / "tar-out"

        def fresh(p):
            return lambda: (shutil.rmtree(p, ignore_errors=True), p.mkdir())

        i_ours, i_ours_rss = timed([cli, "bundle", "import", bundle, "--cache-dir", dest, "--offline", "-q"], env,
                                   prepare=fresh(dest))
        i_tar, i_tar_rss = timed(["tar", "--zstd", "-xf", bundle, "-C", out], prepare=fresh(out))
        again, _ = timed([cli, "bundle", "import", bundle, "--cache-dir", dest, "--offline", "-q"], env)
        print(f"bundle bench: {ARGS.mib} MiB variant (random bytes), best of {ARGS.repeats}, "
              f"{os.cpu_count()} CPUs, {os.uname().sysname} {os.uname().release}")
        print(f"  bundle size {bundle.stat().st_size / 2**20:.1f} MiB; tar --zstd {tarball.stat().st_size / 2**20:.1f} MiB")
        print(f"  write : libkernels bundle {w_ours:.3f} s   tar --zstd -c {w_tar:.3f} s   ratio {w_ours / w_tar:.2f}"
              f"   (plain tar -c {w_tar_plain:.3f} s)")
        print(f"  import: libkernels bundle import {i_ours:.3f} s   tar --zstd -x {i_tar:.3f} s   ratio {i_ours / i_tar:.2f}")
        print(f"  re-import (no-op): {again:.3f} s")
        print(f"  peak RSS: bundle {w_ours_rss / 1024:.1f} MiB, import {i_ours_rss / 1024:.1f} MiB, "
              f"tar -x {i_tar_rss / 1024:.1f} MiB, tar -c {w_tar_rss / 1024:.1f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Publishes the built img2gray variants into a local Hub root (tests/hub).

Makes the repo ORG/img2gray with four commits, each holding build/{variant}/
for every variant given plus a README:

  v1.0.0  tag; branches main, v1            metadata "version": 1
  v1.1.0  tag; branches main, v1
  v1.1.2  tag; branches main, v1
  v2.0.0  tag; branches main, v2            metadata "version": 2

so seed-era ranges (">=1.1.2,<2" -> v1.1.2), major branches (1 -> v1, 2 -> v2)
and main all resolve to something real. The native files are the same build
in every version; the metadata "version" is rewritten per major (the digest
does not cover metadata.json, so it stays valid). The org is marked a trusted
publisher unless --untrusted.

usage: publish-img2gray.py --root HUB_ROOT --build VARIANTS_BUILD_DIR
                           [--repo ORG/img2gray] [--variant NAME]... [--untrusted] [--no-digest]
VARIANTS_BUILD_DIR is <build>/variants/img2gray/build (cuda/CMakeLists.txt).
Prints one line per version: "<tag> <commit>".
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PUBLISH = HERE.parent / "tests" / "hub" / "publish.py"

VERSIONS = [("v1.0.0", 1, ["main", "v1"]), ("v1.1.0", 1, ["main", "v1"]), ("v1.1.2", 1, ["main", "v1"]),
            ("v2.0.0", 2, ["main", "v2"])]


def stage(tree, build, variants, tag, major, repo, no_digest=False):
    if tree.exists():
        shutil.rmtree(tree)
    for v in variants:
        dst = tree / "build" / v
        shutil.copytree(build / v, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        meta_path = dst / "metadata.json"
        meta = json.loads(meta_path.read_text())
        meta["version"] = major
        if no_digest:
            meta.pop("digest", None)
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    (tree / "README.md").write_text(
        f"# {repo} {tag}\n\nRGB (uint8 HWC) to gray (uint8): gray = (54 R + 184 G + 18 B + 128) >> 8,\n"
        "i.e. 0.21 R + 0.72 G + 0.07 B rounded in 8.8 fixed point.\n\n"
        "Variants: " + ", ".join(variants) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True, help="the local Hub's root (tests/hub/server.py --root)")
    ap.add_argument("--build", required=True, type=Path, help="<build>/variants/img2gray/build")
    ap.add_argument("--repo", default="kernels-community/img2gray")
    ap.add_argument("--variant", action="append", default=[], help="publish only these (default: all)")
    ap.add_argument("--untrusted", action="store_true", help="leave the org untrusted")
    ap.add_argument("--no-digest", action="store_true",
                    help="publish metadata.json without its digest, as builds from before digests have it")
    a = ap.parse_args()

    build = a.build.resolve()
    found = sorted(p.name for p in build.iterdir() if (p / "metadata.json").is_file()) if build.is_dir() else []
    variants = a.variant or found
    missing = [v for v in variants if v not in found]
    if not variants or missing:
        sys.exit(f"publish-img2gray: no variant {missing or ''} under {build}; build the project first "
                 "(cmake --build BUILD) so cuda/CMakeLists.txt assembles them")
    with tempfile.TemporaryDirectory(prefix="img2gray-publish-") as tmp:
        tree = Path(tmp) / "tree"
        for tag, major, branches in VERSIONS:
            stage(tree, build, variants, tag, major, a.repo, a.no_digest)
            cmd = [sys.executable, str(PUBLISH), "--root", a.root, "--repo", a.repo, "--dir", str(tree),
                   "-m", f"img2gray {tag}", "--tag", tag, "--parent", "main"] if tag != "v1.0.0" else \
                  [sys.executable, str(PUBLISH), "--root", a.root, "--repo", a.repo, "--dir", str(tree),
                   "-m", f"img2gray {tag}", "--tag", tag]
            for b in branches:
                cmd += ["--branch", b]
            for p in (tree / "build").rglob("*.so"):
                cmd += ["--exec", p.relative_to(tree).as_posix()]
            commit = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
            print(f"{tag} {commit}")
    if not a.untrusted:
        org = a.repo.split("/")[0]
        subprocess.run([sys.executable, str(PUBLISH), "--root", a.root, "--org", org, "--trusted"], check=True,
                       capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

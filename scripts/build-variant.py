#!/usr/bin/env python3
"""Assembles a Hub build variant folder (build/{variant}/ with its metadata.json,
as kernel-builder lays it out) for img2gray.

Subcommands:
  suffix    print the id suffix for a source tree: the short commit of the
            last commit touching it, plus "_dirty" when it has uncommitted
            changes; outside git, "src" + 7 hex of a sha256 over its files.
  torch-info print what CMake needs about the importable torch, as
            KEY=VALUE lines (nothing and exit 1 when torch is not importable).
  assemble  write build/{variant}/: native module(s), Python files for torch
            variants (from templates) with the {name}/ compatibility package,
            or a tvm-ffi variant's Python package (--python-package), and
            metadata.json with the sha256 digest of every file.

Only the standard library is used: CMake calls this at build time.
"""
import argparse
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

SKIP_NAMES = {"metadata.json", "metadata.json.sigstore"}


def _git(args, cwd):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def source_suffix(paths):
    """Commit-derived suffix for the given source paths (files or folders)."""
    paths = [Path(p).resolve() for p in paths]
    top = paths[0] if paths[0].is_dir() else paths[0].parent
    try:
        root = _git(["rev-parse", "--show-toplevel"], top)
        rel = [os.path.relpath(p, root) for p in paths]
        commit = _git(["log", "-1", "--format=%h", "--abbrev=7", "--", *rel], root)
        if commit:
            dirty = _git(["status", "--porcelain", "--untracked-files=all", "--", *rel], root)
            return commit[:7] + ("_dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        pass
    h = hashlib.sha256()
    for p in paths:
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            if "__pycache__" in f.parts or f.suffix == ".pyc":
                continue
            h.update(str(f.relative_to(p.parent)).encode() + b"\0" + f.read_bytes())
    return "src" + h.hexdigest()[:7]


def torch_info():
    try:
        import torch
        import torch.utils.cpp_extension as ext
    except Exception as e:  # noqa: BLE001 - any import failure means "no torch"
        print(f"torch not importable: {e}", file=sys.stderr)
        return 1
    import platform
    import sysconfig

    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    cuda = torch.version.cuda or ""
    abi = "cxx11" if torch._C._GLIBCXX_USE_CXX11_ABI else "cxx98"
    info = {
        "TORCH_VERSION": torch.__version__,
        "TORCH_MAJOR": major,
        "TORCH_MINOR": minor,
        "TORCH_CUDA": cuda,
        "TORCH_CXX11_ABI": "1" if abi == "cxx11" else "0",
        "TORCH_ABI_TAG": abi,
        "TORCH_INCLUDE_DIRS": ";".join(ext.include_paths()),
        "TORCH_LIBRARY_DIR": os.path.join(os.path.dirname(torch.__file__), "lib"),
        "TORCH_PYTHON_INCLUDE": sysconfig.get_paths()["include"],
        "TORCH_CPU_ARCH": platform.machine(),
    }
    for k, v in info.items():
        print(f"{k}={v}")
    return 0


def file_digest(path):
    return base64.b64encode(hashlib.sha256(Path(path).read_bytes()).digest()).decode("ascii")


def variant_digest(variant_dir):
    """metadata.json's digest covers every regular file except metadata.json(.sigstore), __pycache__/, *.pyc."""
    files = {}
    root = Path(variant_dir)
    for f in sorted(root.rglob("*")):
        rel = f.relative_to(root).as_posix()
        if not f.is_file() or f.is_symlink():
            continue
        if rel in SKIP_NAMES or "__pycache__" in f.parts or f.suffix == ".pyc":
            continue
        files[rel] = file_digest(f)
    return {"algorithm": "sha256", "files": files}


def render(template, out, values):
    text = Path(template).read_text()
    for k, v in values.items():
        text = text.replace(f"@{k}@", v)
    Path(out).write_text(text)


def copy_package(pkg, out, values):
    """A tvm-ffi variant's Python files, as kernel-builder installs
    tvm-ffi-ext/{name}/: every *.py of `pkg` (subfolders kept) into the variant
    folder's top level, and every *.py.in rendered to *.py."""
    for f in sorted(pkg.rglob("*")):
        if not f.is_file() or "__pycache__" in f.parts:
            continue
        rel = f.relative_to(pkg)
        if f.name.endswith(".py.in"):
            dest = out / rel.parent / f.name[: -len(".in")]
        elif f.suffix == ".py":
            dest = out / rel
        else:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        if f.name.endswith(".in"):
            render(f, dest, values)
        else:
            shutil.copyfile(f, dest)


def assemble(a):
    out = Path(a.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    pyname = a.name.replace("-", "_")
    for spec in a.native:
        src, _, dest = spec.partition(":")
        shutil.copyfile(src, out / (dest or Path(src).name))
        os.chmod(out / (dest or Path(src).name), 0o755)
    if a.python_templates:
        t = Path(a.python_templates)
        values = {"ID": a.id, "PYNAME": pyname}
        render(t / "__init__.py.in", out / "__init__.py", values)
        render(t / "_ops.py.in", out / "_ops.py", values)
        (out / pyname).mkdir()
        render(t / "compat__init__.py.in", out / pyname / "__init__.py", values)
    if a.python_package:
        copy_package(Path(a.python_package), out, {"OPS_NAME": a.id, "ID": a.id, "PYNAME": pyname})
    # kernel-builder's field order (serde, kebab-case): digest last; a build
    # from before digests existed has none.
    meta = {"name": a.name, "id": a.id, "version": a.major, "license": a.license}
    if a.upstream:
        meta["upstream"] = a.upstream
    meta["python-depends"] = []
    meta["kernel-depends"] = []
    meta["backend"] = {"type": a.backend}
    if a.archs:
        meta["backend"]["archs"] = a.archs.split(",")
    if not a.no_digest:
        meta["digest"] = variant_digest(out)
    (out / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=False) + "\n")
    print(f"assembled {out} (id {a.id}, {'no digest' if a.no_digest else len(meta['digest']['files'])} files)")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("suffix", help="print the commit-derived id suffix")
    s.add_argument("paths", nargs="+")
    sub.add_parser("torch-info", help="print torch facts for CMake")
    s = sub.add_parser("assemble", help="write a variant folder")
    s.add_argument("--out", required=True, help="the variant folder, build/{variant}")
    s.add_argument("--name", required=True)
    s.add_argument("--id", required=True, help="unique module/op namespace, e.g. _img2gray_cpu_1a2b3c4")
    s.add_argument("--major", type=int, required=True, help="metadata version (integer major)")
    s.add_argument("--license", default="Apache-2.0")
    s.add_argument("--backend", required=True, choices=["cpu", "cuda"])
    s.add_argument("--archs", default="", help="comma-separated, e.g. 8.0,9.0+PTX")
    s.add_argument("--upstream", default="")
    s.add_argument("--no-digest", action="store_true", help="no digest in metadata.json, like builds before digests")
    s.add_argument("--native", action="append", default=[], help="SRC[:DESTNAME], repeatable")
    s.add_argument("--python-templates", default="", help="folder with __init__.py.in etc. (torch variants)")
    s.add_argument("--python-package", default="",
                   help="folder whose *.py are copied and *.py.in rendered (@OPS_NAME@) into the variant (tvm-ffi)")
    a = p.parse_args()
    if a.cmd == "suffix":
        print(source_suffix(a.paths))
        return 0
    if a.cmd == "torch-info":
        return torch_info()
    return assemble(a)


if __name__ == "__main__":
    sys.exit(main())

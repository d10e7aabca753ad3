#!/usr/bin/env python3
"""Writes metadata.json for a test variant folder, with the digest computed
here (hashlib, independent of libkernels): every regular file under the
folder (links followed) except metadata.json / metadata.json.sigstore at the
top, __pycache__/ and *.pyc; standard base64 with padding.

usage: make_metadata.py FOLDER --name N [--id ID] [--backend cuda] [--archs 8.0,9.0+PTX]
       [--version 1] [--license MIT] [--algorithm sha256] [--dirty] [--omit KEY] [--set KEY=JSON]
"""
import argparse
import base64
import hashlib
import json
import os
import sys


def digest_files(folder, algorithm="sha256"):
    files = {}
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), folder).replace(os.sep, "/")
            if rel in ("metadata.json", "metadata.json.sigstore") or n.endswith(".pyc"):
                continue
            with open(os.path.join(root, n), "rb") as f:
                files[rel] = base64.b64encode(hashlib.new(algorithm, f.read()).digest()).decode()
    return files


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--name", required=True)
    p.add_argument("--id")
    p.add_argument("--backend", default="cpu")
    p.add_argument("--archs", default=None)
    p.add_argument("--version", type=int, default=1)
    p.add_argument("--license", default="Apache-2.0")
    p.add_argument("--algorithm", default="sha256")
    p.add_argument("--dirty", action="store_true")
    p.add_argument("--omit", action="append", default=[])
    p.add_argument("--set", action="append", default=[])
    a = p.parse_args(argv)
    backend = {"type": a.backend}
    if a.archs is not None:
        backend["archs"] = [x for x in a.archs.split(",") if x]
    meta = {
        "id": a.id or f"_{a.name.replace('-', '_')}_{a.backend}_0000000",
        "name": a.name,
        "version": a.version,
        "license": a.license,
        "backend": backend,
        "digest": {"algorithm": a.algorithm, "files": digest_files(a.folder, a.algorithm)},
        "python-depends": [],
    }
    if a.dirty:
        meta["provenance"] = {"kernel-builder": {"version": "0.12.0", "commit": "a" * 40, "dirty": True},
                              "kernel": {"commit": "b" * 40, "dirty": False}}
    for kv in a.set:
        key, value = kv.split("=", 1)
        parts = key.split(".")
        target = meta
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        target[parts[-1]] = json.loads(value)
    for key in a.omit:
        obj, *path = key.split(".")
        (meta[obj] if path else meta).pop(path[0] if path else obj, None)
    with open(os.path.join(a.folder, "metadata.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])

"""The 1.0 contract, checked on the built library:

- abidiff of libkernels.so against the committed baseline (abi/libkernels.abi,
  made by scripts/abi-baseline.sh) finds no change but added functions: an
  incompatible change fails here unless the baseline and the SONAME are
  changed on purpose in the same commit, and so does a compatible one
  (a field appended to a versioned struct) until the baseline is made
  again with it (docs/api-stability.md); the opaque handles' own layout
  (abi/opaque-types.suppr) is not compared, and that list is checked to hold
  exactly the structs the public headers only forward-declare;
- a host written against the headers before 1.0 (tests/abi/v0, frozen),
  options at version 1, builds with them and runs against this library."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import test_binding as tb

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ["KERNELS_LIBRARY"])
BASELINE = ROOT / "abi" / "libkernels.abi"
OPAQUE = ROOT / "abi" / "opaque-types.suppr"
# abidiff's exit status is a bit set: 1 error, 2 usage, 4 an ABI change,
# 8 an incompatible ABI change.
ABIDIFF_ERROR, ABIDIFF_USAGE = 1, 2


def abidiff(library):
    if not shutil.which("abidiff"):
        pytest.fail("abidiff is missing: run scripts/install-deps.sh (abigail-tools)")
    return subprocess.run(["abidiff", "--no-added-syms", "--fail-no-debug-info", "--suppressions", str(OPAQUE), "--headers-dir2", str(ROOT / "include" / "kernels"),
                           "--header-file2", str(ROOT / "include" / "kernels.h"), str(BASELINE), str(library)],
                          capture_output=True, text=True)


def test_the_library_keeps_the_baseline_abi():
    p = abidiff(SHARED)
    assert not p.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE), p.stdout + p.stderr
    assert p.returncode == 0, ("libkernels.so changed the 1.0 ABI (abi/libkernels.abi). An incompatible "
                               "change needs a new SONAME; an intended compatible one a new baseline "
                               "(scripts/abi-baseline.sh) in the same commit:\n" + p.stdout)


def test_only_the_opaque_handles_are_left_out_of_the_comparison():
    headers = "\n".join(h.read_text() for h in (ROOT / "include").rglob("*.h"))
    declared = set(re.findall(r"typedef struct (kernels_\w+) \1;", headers))
    opaque = {t for t in declared if not re.search(rf"struct {t}\s*{{", headers)}
    suppressed = set(re.findall(r"^\s*name = (\S+)$", OPAQUE.read_text(), re.M))
    assert opaque and suppressed == opaque, (
        f"abi/opaque-types.suppr must list the structs the public headers only forward-declare: "
        f"missing {sorted(opaque - suppressed)}, not opaque {sorted(suppressed - opaque)}")


def test_a_host_built_against_the_headers_before_1_0_runs(hub, tmp_path):
    tree = tmp_path / "tree"
    tb.make_variant(tree / "build" / "torch211-cxx11-cpu-x86_64-linux", name="answer", python=False)
    tb.publish_tree(hub, "acme/answer", tree)
    exe = tmp_path / "host_v0"
    subprocess.run(["cc", "-std=c11", "-D_DEFAULT_SOURCE", "-Wall", "-Werror", "-I", str(ROOT / "tests" / "abi" / "v0"),
                    "-o", str(exe), str(ROOT / "tests" / "abi" / "host_v0.c"), str(SHARED),
                    f"-Wl,-rpath,{SHARED.parent}"], check=True)
    env = dict(os.environ, HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="0",
               HF_TOKEN="", KERNELS_TORCH_VERSION="2.11", KERNELS_CXX11_ABI="1", KERNELS_BACKEND="cpu",
               NO_PROXY="127.0.0.1,localhost")
    env.pop("LOCAL_KERNELS", None)
    env.pop("KERNELS_CACHE", None)
    ran = subprocess.run([str(exe), "acme/answer", "v1"], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout == "torch211-cxx11-cpu-x86_64-linux 42\n"

"""One process in which both the Python `kernels` package (what
transformers calls) and libkernels' binding load kernels, with torch
imported, as an inference server that uses both does:

- the same repo and revision through one then the other, both orders: the
  second load works, its torch ops give the right answer, and the native
  module is mapped once (libkernels' loader and Python's import of the same
  snapshot are one object: one inode mapped);
- two revisions of one kernel (v1, v2: the same build) through either,
  and a later build (an id of its own) beside the first; in a cache
  without symlinks (v2's module another file with v1's namespace) the
  binding refuses v2 and says why;
- a copy of the module in another cache, already loaded by `kernels`: the
  binding refuses it with a LoadError naming the namespace and the file
  loaded, where mapping it would have made torch abort the process;
- a kernel whose Python registers torch definitions when imported (an ops
  namespace of its own, as Triton kernels define): loaded by `kernels`
  first, the binding returns that module instead of importing it again;
  loaded by the binding first with `kernels` imported, kernels.get_kernel
  returns the binding's module (listed in kernels.get_loaded_kernels()),
  also through a cache reached by a link;
- libkernels first from one cache, `kernels` from another: `kernels`
  finds the extension in sys.modules and maps no second copy;
- a kernel with only a tvm-ffi variant, through either first: the binding
  imports tvm_ffi as `kernels` does, so the order does not decide whether
  a variant fits.

Each case runs in a process of its own (a torch ops namespace is
registered once per process).
"""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import test_binding as tb
from test_binding_torch import BUILD, REPO, publish_img2gray
from test_interop_kernels import run

# What every case's process has: both packages, torch, and a report of
# the kernel modules it has loaded.
PRELUDE = """
    import ctypes, json, os, pathlib, sys, torch, kernels, libkernels

    def works(k):
        rgb = torch.randint(0, 256, (2, 11, 13, 3), dtype=torch.uint8)
        x = rgb.to(torch.float64)
        ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
        out = torch.empty(rgb.shape[:-1], dtype=torch.uint8)
        getattr(torch.ops, k.__name__).img2gray(rgb, out)
        return bool(torch.equal(k.img2gray(rgb), ref)) and bool(torch.equal(out, ref))

    def so(k):
        return next(pathlib.Path(k.__file__).parent.glob("*.so"))

    def inode(k):
        return os.stat(so(k)).st_ino

    def mapped(under):
        # the inodes of the files under `under` this process maps
        return sorted({int(line.split()[4]) for line in open("/proc/self/maps")
                       if len(line.split()) > 5 and line.split()[5].startswith(under)})
"""


def both(hub, cache, body, **extra):
    return run(hub, cache, textwrap.dedent(PRELUDE) + textwrap.dedent(body), **extra)


def load(package, how):
    return f'{package}.get_kernel("{REPO}", {how}, backend="cpu")'


def test_same_revision_both_orders(hub, tmp_path):
    publish_img2gray(hub)
    for first, second in (("kernels", "libkernels"), ("libkernels", "kernels")):
        cache = tmp_path / f"cache-{first}"
        got = both(hub, cache, f"""
            a = {load(first, "version=1")}
            b = {load(second, "version=1")}
            # the entry point as libkernels' loader has it and as Python's
            # import of the snapshot's file has it (one object: one address)
            init = "PyInit_" + a.__name__
            ours = libkernels.loaded_kernels()[0].symbol(init)
            python = ctypes.cast(getattr(ctypes.CDLL(str(so(a))), init), ctypes.c_void_p).value
            print(json.dumps({{"works": [works(a), works(b)], "names": [a.__name__, b.__name__],
                              "inodes": [inode(a), inode(b)], "mapped": mapped({str(cache)!r}),
                              "first_still": works(a), "entry": [ours, python]}}))
        """)
        assert got["works"] == [True, True] and got["first_still"], (first, got)
        assert got["names"][0] == got["names"][1] and got["names"][0].startswith("_img2gray_cpu_")
        # one snapshot, one file, mapped once: not two copies of its code
        assert got["inodes"][0] == got["inodes"][1] and got["mapped"] == [got["inodes"][0]], (first, got)
        assert got["entry"][0] == got["entry"][1] != 0, (first, got)


def test_two_revisions_through_either(hub, tmp_path):
    tags = publish_img2gray(hub)
    cache = tmp_path / "cache"
    got = both(hub, cache, f"""
        loads = [{load("libkernels", "version=1")}, {load("kernels", "version=2")},
                 {load("libkernels", "version=2")}, {load("kernels", "version=1")}]
        print(json.dumps({{"works": [works(k) for k in loads], "mapped": mapped({str(cache)!r}),
                          "inodes": [inode(k) for k in loads],
                          "commits": [pathlib.Path(k.__file__).parts[-4] for k in loads]}}))
    """)
    assert got["works"] == [True] * 4, got
    assert got["commits"] == [tags["v1.1.2"], tags["v2.0.0"], tags["v2.0.0"], tags["v1.1.2"]]
    # v1 and v2 hold the same build: one blob, mapped once
    assert len(set(got["inodes"])) == 1 and got["mapped"] == got["inodes"][:1], got


def test_two_revisions_in_a_cache_without_symlinks(hub, tmp_path):
    # Without symlinks each snapshot holds its own copy of the build: v2's
    # module is another file with v1's namespace. The binding refuses it
    # (torch would abort) and says why the same build is two files here.
    publish_img2gray(hub)
    got = both(hub, tmp_path / "cache", f"""
        a = {load("libkernels", "version=1")}
        try:
            {load("libkernels", "version=2")}
            error = None
        except libkernels.LoadError as e:
            error = str(e)
        so = str(next(pathlib.Path(a.__file__).parent.glob("*.so")))
        print(json.dumps({{"error": error, "works": works(a), "so": so, "name": a.__name__}}))
    """, HF_HUB_DISABLE_SYMLINKS="1")
    assert got["works"] and got["error"], got
    assert f"namespace '{got['name']}' is already registered by {got['so']}" in got["error"]
    assert "one revision of this kernel per process" in got["error"] and "HF_HUB_DISABLE_SYMLINKS" in got["error"]


def test_copy_in_another_cache_refused_not_aborted(hub, tmp_path):
    publish_img2gray(hub)
    cache, other = tmp_path / "cache", tmp_path / "other"
    # libkernels reads HF_HUB_CACHE on every call: a server that changes it
    # after `kernels` loaded the kernel gets it from another folder.
    got = both(hub, cache, f"""
        a = {load("kernels", "version=1")}
        os.environ["HF_HUB_CACHE"] = {str(other)!r}
        try:
            {load("libkernels", "version=1")}
            error = None
        except libkernels.LoadError as e:
            error = str(e)
        print(json.dumps({{"error": error, "works": works(a), "file": a.__file__, "name": a.__name__,
                          "other": mapped({str(other)!r})}}))
    """)
    assert got["works"], got  # the process lives on, `kernels`' module works
    so = str(next(Path(got["file"]).parent.glob("*.so")))
    assert got["error"] and f"namespace '{got['name']}' is already registered" in got["error"], got
    assert so in got["error"] and "a new process" in got["error"]
    assert got["other"] == []  # refused before any mapping


def test_other_order_from_another_cache(hub, tmp_path):
    # libkernels first from one cache, `kernels` from another: `kernels`'
    # import finds the extension already in sys.modules and maps no copy.
    publish_img2gray(hub)
    cache, other = tmp_path / "cache", tmp_path / "other"
    got = both(hub, cache, f"""
        os.environ["HF_HUB_CACHE"] = {str(other)!r}
        b = {load("libkernels", "version=1")}
        a = {load("kernels", "version=1")}
        print(json.dumps({{"works": [works(b), works(a)], "mapped": mapped({str(cache)!r}),
                          "files": [b.__file__, a.__file__]}}))
    """)
    assert got["works"] == [True, True], got
    assert got["files"][0].startswith(str(other)) and got["files"][1].startswith(str(cache))
    assert got["mapped"] == []


# A kernel defining its ops namespace from Python when imported (as Triton
# kernels do): torch refuses a second definition of the namespace, so the
# variant's __init__.py must run once per process.
PY_OPS = """\
import ctypes
import json
from pathlib import Path

import torch

_here = Path(__file__).parent
_lib = ctypes.CDLL(str(next(_here.glob("*.so"))))
_ns = json.loads((_here / "metadata.json").read_text())["id"]
_def = torch.library.Library(_ns, "DEF")
_def.define("scale(Tensor x) -> Tensor")
_def.impl("scale", lambda x: x * _lib.answer(), "CPU")


def scale(x):
    return getattr(torch.ops, _ns).scale(x)
"""


def publish_py_ops(hub, tmp_path, answer=42, tag="v1.0.0"):
    tree = tmp_path / f"tree-{answer}"
    variant = tree / "build" / tb.torch_cpu_variant()
    kid = tb.make_variant(variant, name="answer", answer=answer)
    (variant / "__init__.py").write_text(PY_OPS)
    # the digest covers __init__.py: made again over the new one
    subprocess.run([sys.executable, str(tb.MAKE_METADATA), str(variant), "--name", "answer", "--id", kid,
                    "--backend", "cpu", "--version", "1"], check=True)
    return tb.publish_tree(hub, "acme/answer", tree, tags=[tag])


def test_kernels_module_reused_by_binding(hub, tmp_path):
    publish_py_ops(hub, tmp_path)
    got = both(hub, tmp_path / "cache", """
        a = kernels.get_kernel("acme/answer", version=1, backend="cpu")
        b = libkernels.get_kernel("acme/answer", version=1, backend="cpu")
        k = b.__libkernels_kernel__
        print(json.dumps({"same": a is b, "scale": b.scale(torch.ones(2)).tolist(), "open": not k.closed,
                          "loaded": [x.path for x in libkernels.loaded_kernels()], "path": k.path,
                          "again": libkernels.get_kernel("acme/answer", version=1, backend="cpu") is a}))
    """)
    assert got["same"] and got["again"], got
    assert got["scale"] == [42.0, 42.0] and got["open"]
    assert got["loaded"] == [got["path"]]


@pytest.mark.parametrize("linked", [False, True], ids=["cache", "cache-through-a-link"])
def test_binding_module_reused_by_kernels(hub, tmp_path, linked):
    # The other order, with `kernels` imported (as a server importing
    # transformers has it): kernels.get_kernel returns the binding's module,
    # also where the cache is reached through a link (the binding's path is
    # resolved, `kernels`' is not).
    publish_py_ops(hub, tmp_path)
    cache = tmp_path / "cache"
    if linked:
        (tmp_path / "real").mkdir()
        cache.symlink_to(tmp_path / "real")
    got = both(hub, cache, """
        b = libkernels.get_kernel("acme/answer", version=1, backend="cpu")
        a = kernels.get_kernel("acme/answer", version=1, backend="cpu")
        listed = [(x.module is b, x.repo_info.repo_id, x.repo_info.revision) for x in kernels.get_loaded_kernels()]
        print(json.dumps({"same": a is b, "scale": a.scale(torch.ones(2)).tolist(), "listed": listed,
                          "commit": b.__libkernels_kernel__.commit}))
    """)
    assert got["same"] and got["scale"] == [42.0, 42.0], got
    assert got["listed"] == [[True, "acme/answer", got["commit"]]]


def test_later_build_beside_the_first(hub, tmp_path):
    # v1.0.0 and a later build on v1 (its own id, so its own namespace),
    # each through either package: all four modules work side by side.
    publish_py_ops(hub, tmp_path, 42, "v1.0.0")
    publish_py_ops(hub, tmp_path, 43, "v1.1.0")
    got = both(hub, tmp_path / "cache", """
        one = lambda m, rev: m.get_kernel("acme/answer", revision=rev, backend="cpu")
        loads = [one(kernels, "v1.0.0"), one(libkernels, "v1.1.0"), one(libkernels, "v1.0.0"),
                 one(kernels, "v1.1.0")]
        print(json.dumps({"scale": [m.scale(torch.ones(1)).item() for m in loads],
                          "same": [loads[0] is loads[2], loads[1] is loads[3]],
                          "names": [m.__name__ for m in loads]}))
    """)
    assert got["scale"] == [42.0, 43.0, 42.0, 43.0], got
    assert got["same"] == [True, True] and got["names"][0] != got["names"][1]


def test_tvm_ffi_variant_either_order(hub, tmp_path):
    # A kernel with only a tvm-ffi variant: `kernels` imports tvm_ffi when
    # it is installed and takes the variant; the binding first in a process
    # must too (libkernels sees tvm-ffi by its library loaded), not only
    # once `kernels` has imported tvm_ffi.
    built = sorted(p.name for p in BUILD.glob("tvm-ffi*-cpu-*") if (p / "metadata.json").is_file())
    assert built, f"no img2gray tvm-ffi cpu variant under {BUILD}: build the project with tvm_ffi importable"
    subprocess.run([sys.executable, str(tb.SOURCE_DIR / "scripts" / "publish-img2gray.py"), "--root", str(hub.root),
                    "--build", str(BUILD), "--repo", REPO, "--variant", built[0]], check=True, capture_output=True)
    for first, second in (("libkernels", "kernels"), ("kernels", "libkernels")):
        got = both(hub, tmp_path / f"cache-{first}", f"""
            had = "tvm_ffi" in sys.modules
            a = {load(first, "version=1")}
            b = {load(second, "version=1")}
            rgb = torch.randint(0, 256, (2, 5, 7, 3), dtype=torch.uint8)
            x = rgb.to(torch.float64)
            ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
            print(json.dumps({{"had": had, "same": a is b, "ok": bool(torch.equal(a.img2gray(rgb), ref)),
                              "variant": pathlib.Path(a.__file__).parent.name}}))
        """)
        assert not got["had"] and got["ok"] and got["same"], (first, got)
        assert got["variant"] == built[0]

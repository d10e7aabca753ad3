"""Kernel-to-kernel dependencies (metadata.json `kernel-depends`) through
libkernels' Python binding and through the real Python `kernels` 0.17.2 on
one local Hub: a kernel with one dependency and a diamond resolve to the
same commits and load in the same order in both; a dependent whose native
module uses a dependency's symbols without naming it binds (the dependency
made global), and one linking it by SONAME binds with it left local;
`kernels lock` and libkernels' lock write the transitive set byte for byte;
an offline locked load of the whole set sends no request, whichever client
downloaded it. The C-level view (handles, conflicts, cycles): tests/test_deps.c.

Each client runs in its own process (kernels reads HF_HUB_OFFLINE at
import; native modules stay mapped).
"""
import json
import subprocess
import sys
import textwrap

import test_binding as tb

DRIVER = """
import json, os, pathlib, sys, torch
client = sys.argv[1]
if client == "libkernels":
    import libkernels as K
else:
    import kernels as K

def describe(m, seen=None):
    seen = {} if seen is None else seen
    path = pathlib.Path(m.__file__).parent
    seen[m.NAME] = {"commit": path.parts[-3], "variant": path.name, "value": m.value()}
    for d in m.DEPS.values():
        describe(d, seen)
    return seen
"""

# The Python side of every test kernel: its dependencies through
# kernels.get_kernel_dep (libkernels provides it too), then its module.
INIT = """\
import ctypes
import os
from pathlib import Path

from kernels import get_kernel_dep

NAME = {name!r}
DEPS = {{r: get_kernel_dep(r) for r in {deps!r}}}
_lib = ctypes.CDLL(str(Path(__file__).parent / {so!r}), mode={mode})
_lib.{name}_value.restype = ctypes.c_int
with open(os.environ["LOAD_LOG"], "a") as f:
    f.write("py:" + NAME + "\\n")


def value():
    return _lib.{name}_value()
"""

CTOR = """
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void loaded(void) {
    const char *p = getenv("LOAD_LOG");
    FILE *f = p ? fopen(p, "a") : NULL;
    if (f) { fputs("so:%s\\n", f); fclose(f); }
}
"""


def kernel(hub, tmp_path, name, code, deps=(), cflags=(), exported=False, status=None):
    """acme/{name} at main, v1 and v1.0.0: {name}_value() from `code`;
    kernel-depends on acme/{deps} version 1. `exported`: its module is
    loaded RTLD_GLOBAL by its Python package (as a kernel whose symbols
    others use must be, under Python kernels). `status`: the text of its
    kernel-status.toml."""
    tree = tmp_path / f"src-{name}"
    folder = tree / "build" / tb.torch_cpu_variant()
    folder.mkdir(parents=True)
    if status:
        (tree / "kernel-status.toml").write_text(status)
    so = f"_{name}_cpu_0000001.so"
    src = tmp_path / f"{name}.c"
    src.write_text(code + CTOR % name)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(folder / so), str(src), *cflags], check=True)
    repos = [f"acme/{d}" for d in deps]
    (folder / "__init__.py").write_text(INIT.format(name=name, deps=repos, so=so,
                                                    mode="ctypes.RTLD_GLOBAL" if exported else "0"))
    meta = json.dumps([{"repo-id": r, "version": 1} for r in repos])
    subprocess.run([sys.executable, str(tb.MAKE_METADATA), str(folder), "--name", name, "--id",
                    f"_{name}_cpu_0000001", "--backend", "cpu", "--set", f"kernel-depends={meta}"], check=True)
    return tb.publish_tree(hub, f"acme/{name}", tree)


def run(hub, cache, client, code, offline=False, log=None):
    log = log or cache.parent / f"load-{client}.log"
    if log.exists():
        log.unlink()
    env = hub.hf_env(cache, KERNELS_LIBRARY=tb.library_path(), PYTHONPATH=str(tb.BINDING_DIR),
                     PYTHONDONTWRITEBYTECODE="1", HF_HUB_DISABLE_TELEMETRY="0", LOAD_LOG=str(log),
                     HF_HUB_OFFLINE="1" if offline else "0")
    proc = subprocess.run([sys.executable, "-c", DRIVER + textwrap.dedent(code), client], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = log.read_text().split() if log.exists() else []
    out["so"] = [x[3:] for x in lines if x.startswith("so:")]
    out["py"] = [x[3:] for x in lines if x.startswith("py:")]
    out["stderr"] = proc.stderr
    return out


GET = """
    k = K.get_kernel(sys.argv[2], version=1, backend="cpu")
    print(json.dumps({"tree": describe(k)}))
"""


def both(hub, tmp_path, repo):
    got = {}
    for client in ("kernels", "libkernels"):
        code = GET.replace("sys.argv[2]", repr(repo))
        got[client] = run(hub, tmp_path / f"cache-{client}", client, code)
    return got["kernels"], got["libkernels"]


def test_one_dependency_symbols_global(hub, tmp_path):
    base = kernel(hub, tmp_path, "base", "int base_value(void) { return 7; }", exported=True)
    # top's module calls base_value with no DT_NEEDED on base's module
    top = kernel(hub, tmp_path, "top", "extern int base_value(void);\nint top_value(void) { return base_value() * 6; }",
                 deps=["base"])
    theirs, ours = both(hub, tmp_path, "acme/top")
    assert theirs["tree"] == ours["tree"]
    assert ours["tree"]["top"] == {"commit": top, "variant": tb.torch_cpu_variant(), "value": 42}
    assert ours["tree"]["base"]["commit"] == base
    # dependencies first, in both (libkernels maps every module first, then
    # Python imports their packages; kernels imports each package, which maps its module)
    assert theirs["py"] == ours["py"] == ["base", "top"]
    assert theirs["so"] == ours["so"] == ["base", "top"]


def test_dependency_kernel_closes_with_its_dependent(hub, tmp_path):
    """Kernel.dependencies borrow the dependent's references: once it is
    closed (and with it the last reference to the dependency), they are
    closed too, not handles to freed memory."""
    kernel(hub, tmp_path, "dbase", "int dbase_value(void) { return 7; }")
    kernel(hub, tmp_path, "dtop", "int dtop_value(void) { return 8; }", deps=["dbase"])
    out = run(hub, tmp_path / "cache", "libkernels", """
        k = K.get("acme/dtop", "1", backend="cpu")
        dep = k.dependencies[0]
        before = [dep.repo_id, dep.refcount, dep.closed]
        k.close()
        try:
            dep.symbol("dbase_value")
            after = "open"
        except ValueError as e:
            after = str(e)
        print(json.dumps({"before": before, "closed": dep.closed, "after": after}))
    """)
    assert out["before"] == ["acme/dbase", 1, False]
    assert out["closed"] is True and "closed" in out["after"], out


def test_dependency_linked_by_soname(hub, tmp_path):
    src = tmp_path / "src-lbase" / "build" / tb.torch_cpu_variant()
    kernel(hub, tmp_path, "lbase", "int lbase_value(void) { return 5; }", cflags=["-Wl,-soname,_lbase_cpu_0000001.so"])
    # ltop links lbase's module by its SONAME (DT_NEEDED), no run path
    kernel(hub, tmp_path, "ltop", "extern int lbase_value(void);\nint ltop_value(void) { return lbase_value() + 1; }",
           deps=["lbase"], cflags=[f"-L{src}", "-l:_lbase_cpu_0000001.so"])
    code = GET.replace("sys.argv[2]", "'acme/ltop'") + """
    import ctypes
    print(json.dumps({"tree": describe(k), "global": hasattr(ctypes.CDLL(None), "lbase_value")}))
    """
    theirs = run(hub, tmp_path / "cache-kernels", "kernels", code)
    ours = run(hub, tmp_path / "cache-libkernels", "libkernels", code)
    assert theirs["tree"] == ours["tree"] and ours["tree"]["ltop"]["value"] == 6
    assert theirs["global"] is ours["global"] is False  # lbase stayed local in both
    assert theirs["py"] == ours["py"] == ["lbase", "ltop"]


def diamond(hub, tmp_path, p):
    commits = {"base": kernel(hub, tmp_path, f"{p}base", f"int {p}base_value(void) {{ return 10; }}", exported=True)}
    for side, n in (("left", 1), ("right", 2)):
        commits[side] = kernel(hub, tmp_path, f"{p}{side}",
                               f"extern int {p}base_value(void);\n"
                               f"int {p}{side}_value(void) {{ return {p}base_value() + {n}; }}",
                               deps=[f"{p}base"], exported=True)
    commits["top"] = kernel(hub, tmp_path, f"{p}top",
                            f"extern int {p}left_value(void);\nextern int {p}right_value(void);\n"
                            f"int {p}top_value(void) {{ return {p}left_value() * 100 + {p}right_value(); }}",
                            deps=[f"{p}left", f"{p}right"])
    return commits


def test_diamond(hub, tmp_path):
    commits = diamond(hub, tmp_path, "d")
    theirs, ours = both(hub, tmp_path, "acme/dtop")
    assert theirs["tree"] == ours["tree"]
    assert {n: v["commit"] for n, v in ours["tree"].items()} == {f"d{k}": c for k, c in commits.items()}
    assert ours["tree"]["dtop"]["value"] == 1112
    # the base once, before both sides; the sides in metadata order
    assert theirs["py"] == ours["py"] == ["dbase", "dleft", "dright", "dtop"]
    assert theirs["so"] == ours["so"] == ["dbase", "dleft", "dright", "dtop"]


LOCK_KERNELS = """
    import types
    import kernels.cli.lock as cli_lock
    cli_lock.lock_kernels(types.SimpleNamespace(project_dir=pathlib.Path(sys.argv[2])))
    print(json.dumps({}))
"""


def lock_both_ways(hub, tmp_path, manifest):
    """Two app folders with `manifest` as their pyproject.toml: "theirs",
    locked by kernels 0.17.2 now, and "ours", for libkernels to lock."""
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    for d in (ours_dir, theirs_dir):
        d.mkdir()
        (d / "pyproject.toml").write_text(manifest)
    run(hub, tmp_path / "cache-lock-kernels", "kernels", LOCK_KERNELS.replace("sys.argv[2]", repr(str(theirs_dir))))
    return ours_dir, theirs_dir


def test_transitive_lock_and_offline_locked_load(hub, tmp_path):
    commits = diamond(hub, tmp_path, "k")
    manifest = '[project]\nname = "app"\n\n[tool.kernels.dependencies]\n"acme/ktop" = 1\n'
    ours_dir, theirs_dir = lock_both_ways(hub, tmp_path, manifest)
    cache = tmp_path / "cache"
    run(hub, cache, "libkernels", f"""
        K.lock_project({str(ours_dir)!r})
        K.download_project({str(ours_dir)!r}, backend="cpu")
        print(json.dumps({{}}))
    """)
    lock = (theirs_dir / "kernels.lock").read_bytes()
    assert (ours_dir / "kernels.lock").read_bytes() == lock  # byte for byte
    entries = json.loads(lock)
    assert [(e["dependency"]["repo-id"], e["lock"]["commit"]) for e in entries] == [
        (f"acme/k{n}", commits[n]) for n in ("base", "left", "right", "top")]

    # The whole set from the cache, no request, by each client.
    load = """
        k = K.load_kernel('acme/ktop', lockfile=pathlib.Path(%r), backend='cpu')
        print(json.dumps({"tree": describe(k)}))
    """
    hub.log_clear()
    ours = run(hub, cache, "libkernels", load % str(ours_dir / "kernels.lock"), offline=True)
    assert hub.log() == []
    theirs = run(hub, cache, "kernels", load % str(theirs_dir / "kernels.lock"), offline=True)
    assert hub.log() == []
    assert ours["tree"] == theirs["tree"] and ours["tree"]["ktop"]["value"] == 1112
    assert ours["py"] == theirs["py"] == ["kbase", "kleft", "kright", "ktop"]


def test_moved_repo_locks_and_loads_like_kernels_017(hub, tmp_path):
    """A repo whose kernel-status.toml redirects (it moved) but still holds
    its builds: kernels 0.17.2 never reads that file, so it locks the repo
    itself; libkernels locks it the same, byte for byte, and warns naming
    the destination. 0.17.2's lock of it then loads offline, the pinned
    commit (not the destination's), with no request."""
    kernel(hub, tmp_path, "mdest", "int mdest_value(void) { return 99; }")
    moved = kernel(hub, tmp_path, "mold", "int mold_value(void) { return 3; }",
                   status='kind = "redirect"\ndestination = "acme/mdest"\nrevision = "v1"\n')
    manifest = '[project]\nname = "app"\n\n[tool.kernels.dependencies]\n"acme/mold" = 1\n'
    ours_dir, theirs_dir = lock_both_ways(hub, tmp_path, manifest)
    cache = tmp_path / "cache"
    locked = run(hub, cache, "libkernels", f"""
        K.lock_project({str(ours_dir)!r})
        K.download_project({str(theirs_dir)!r}, backend="cpu")
        print(json.dumps({{}}))
    """)
    lock = (theirs_dir / "kernels.lock").read_bytes()
    assert (ours_dir / "kernels.lock").read_bytes() == lock  # byte for byte
    assert [e["lock"]["commit"] for e in json.loads(lock)] == [moved]
    assert "acme/mold" in locked["stderr"] and "moved to 'acme/mdest'" in locked["stderr"], locked["stderr"]

    hub.log_clear()
    ours = run(hub, cache, "libkernels", """
        k = K.load_kernel('acme/mold', lockfile=pathlib.Path(%r), backend='cpu')
        print(json.dumps({"tree": describe(k)}))
    """ % str(theirs_dir / "kernels.lock"), offline=True)
    assert hub.log() == []
    assert ours["tree"] == {"mold": {"commit": moved, "variant": tb.torch_cpu_variant(), "value": 3}}

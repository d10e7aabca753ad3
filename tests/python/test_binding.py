"""The Python binding (bindings/python, package `libkernels`) against the
local Hub: finding the library, the exception per KERNELS_E* code with the
library's message, and get_kernel / has_kernel / get_kernel_variants /
get_local_kernel on small variants compiled here (a C .so plus a Python
package that calls it through ctypes). The torch half is in
test_binding_torch.py, the `kernels` interop in test_interop_kernels.py.

Other test files import the helpers of this one (`import test_binding`).
"""
import ctypes
import ctypes.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("KERNELS_SOURCE_DIR") or Path(__file__).resolve().parents[2])
BINDING_DIR = SOURCE_DIR / "bindings" / "python"
MAKE_METADATA = SOURCE_DIR / "tests" / "data" / "variants" / "make_metadata.py"
if str(BINDING_DIR) not in sys.path:
    sys.path.insert(0, str(BINDING_DIR))

import libkernels  # noqa: E402
from libkernels import errors as E  # noqa: E402


def library_path():
    lib = os.environ.get("KERNELS_LIBRARY")
    if not lib or not os.path.exists(lib):
        pytest.fail("KERNELS_LIBRARY must name the built libkernels.so (ctest sets it); got %r" % lib)
    return lib


def torch_cpu_variant():
    """The torch arch variant name this process accepts for backend cpu."""
    s = libkernels.system(backend="cpu")
    if s["torch_version"] <= 0:
        pytest.fail("libkernels sees no torch in this process: install torch (tests/requirements.txt)")
    abi = {1: "-cxx11", 0: "-cxx98"}.get(s["torch_cxx11_abi"], "")
    tv = s["torch_version"]
    return f"torch{tv // 100}{tv % 100}{abi}-cpu-{s['cpu']}-{s['os']}"


def make_variant(folder, name="answer", kid=None, answer=42, python=True, version=1, backend="cpu", ldflags=()):
    """A variant folder: {kid}.so exporting `int answer(void)` (returns
    `answer`), an __init__.py calling it through ctypes, metadata.json.
    `ldflags`: more options for linking the .so."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    kid = kid or f"_{name}_{backend}_{answer:07d}"
    src = folder.parent / f"{kid}.c"
    src.write_text(f"int answer(void) {{ return {answer}; }}\nint twice(int x) {{ return 2 * x; }}\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(folder / f"{kid}.so"), str(src), *ldflags], check=True)
    src.unlink()
    if python:
        (folder / "__init__.py").write_text(textwrap.dedent("""\
            import ctypes
            from pathlib import Path

            _lib = ctypes.CDLL(str(next(Path(__file__).parent.glob("*.so"))))
            _lib.answer.restype = ctypes.c_int


            def answer():
                return _lib.answer()
            """))
    subprocess.run([sys.executable, str(MAKE_METADATA), str(folder), "--name", name, "--id", kid, "--backend",
                    backend, "--version", str(version)], check=True)
    return kid


def publish_tree(hub, repo, tree, version=1, trusted=True, tags=None):
    tree = Path(tree)
    execs = [p.relative_to(tree).as_posix() for p in tree.rglob("*.so")]
    files = {p.relative_to(tree).as_posix(): (p.read_bytes(), p.relative_to(tree).as_posix() in execs)
             for p in tree.rglob("*") if p.is_file()}
    return hub.publish(repo, files=files, branches=["main", f"v{version}"], tags=tags or [f"v{version}.0.0"],
                       trusted=trusted)


@pytest.fixture
def env(hub, tmp_path, monkeypatch):
    """The binding talks to this test's Hub and cache (libkernels reads the
    environment on every call)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HF_TOKEN", "")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("KERNELS_CACHE", raising=False)
    monkeypatch.delenv("LOCAL_KERNELS", raising=False)
    libkernels.set_library(library_path())
    return cache


@pytest.fixture
def answer_repo(hub, tmp_path):
    """acme/answer: one variant this process accepts (answer() == 42), one
    it rejects (an old torch CUDA build); acme is a trusted publisher."""
    tree = tmp_path / "answer-tree"
    good = torch_cpu_variant()
    kid = make_variant(tree / "build" / good, answer=42)
    make_variant(tree / "build" / "torch27-cxx11-cu118-x86_64-linux", kid="_answer_cuda_0000118", answer=118,
                 backend="cuda")
    commit = publish_tree(hub, "acme/answer", tree)
    return {"repo": "acme/answer", "variant": good, "id": kid, "commit": commit, "tree": tree}


# ---- the library ----------------------------------------------------------------

def test_find_library_order(tmp_path, monkeypatch):
    lib = library_path()
    from libkernels import _lib

    assert _lib.find_library("/explicit/libkernels.so") == "/explicit/libkernels.so"
    monkeypatch.setenv("KERNELS_LIBRARY", "/from/env/libkernels.so")
    assert _lib.find_library() == "/from/env/libkernels.so"
    assert _lib.find_library(lib) == lib  # the argument wins over the environment
    monkeypatch.delenv("KERNELS_LIBRARY")
    assert _lib.find_library() in (ctypes.util.find_library("kernels"), "libkernels.so.1")

    loaded = _lib.load(lib)
    assert loaded.version().decode() == f"{libkernels.__version__}"
    assert loaded.version_number() == 10000  # 1.0.0
    missing = tmp_path / "nope.so"
    with pytest.raises(OSError, match="KERNELS_LIBRARY"):
        _lib.load(str(missing))


# `pip install bindings/python` (a wheel that builds and bundles libkernels):
# tests/python/test_wheel.py.


def test_system_description_is_whole(monkeypatch):
    # A long description (a torch deep in a long path, many GPUs) is given
    # whole: the library says how long it is. A long cpu name stands in.
    libkernels.set_library(library_path())
    monkeypatch.setenv("KERNELS_CPU", "x" * 600)
    s = libkernels.system()
    assert s["cpu"] == "x" * 600
    assert f"{'x' * 600}-{s['os']}" in s["description"], len(s["description"])


def test_every_error_code_has_its_class():
    lib = libkernels._lib.load(library_path())
    classes = set()
    for code in range(-17, 0):
        cls = E.error_class(code)
        assert cls.code == code
        assert issubclass(cls, libkernels.KernelsError)
        classes.add(cls)
        # The C library knows every code the binding maps.
        assert lib.strerror(code).decode() != "unknown error"
    assert len(classes) == 17
    assert E.error_class(-999) is libkernels.KernelsError
    assert issubclass(libkernels.InvalidArgumentError, ValueError)
    assert issubclass(libkernels.NotFoundError, FileNotFoundError)
    assert issubclass(libkernels.LoadError, ImportError)
    assert issubclass(libkernels.NetworkError, ConnectionError)


def test_errors_carry_the_library_message(env, hub):
    with pytest.raises(libkernels.InvalidArgumentError) as ei:
        libkernels.get("not a repo", "main")
    e = ei.value
    assert e.code == -2 and e.function == "kernels_get_ext"
    assert "not a repo" in str(e) and "org/name" in str(e)  # what failed, what to do

    with pytest.raises(libkernels.NotFoundError) as ei:
        libkernels.get("acme/missing", "main", trust_remote_code=True)
    assert "acme/missing" in str(ei.value)

    # The message of a failure on another thread does not leak into this one.
    import threading

    box = {}

    def other():
        try:
            libkernels.get("other/missing", "main", trust_remote_code=True)
        except libkernels.KernelsError as err:
            box["e"] = err

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert "other/missing" in str(box["e"])


def test_unreachable_hub_is_a_network_error(env, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(libkernels.NetworkError) as ei:
        libkernels.get("acme/answer", "main", trust_remote_code=True)
    assert "127.0.0.1:9" in str(ei.value) or "reach" in str(ei.value)


def test_offline_and_not_cached(env, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(libkernels.OfflineError) as ei:
        libkernels.get_kernel("acme/answer", version=1)
    assert "offline" in str(ei.value).lower()


# ---- the `kernels` functions -------------------------------------------------------

def test_revision_and_version_arguments(env):
    with pytest.raises(ValueError, match="Only one of"):
        libkernels.get_kernel("acme/answer", revision="main", version=1)
    with pytest.raises(ValueError, match="must be specified"):
        libkernels.get_kernel("acme/answer")
    with pytest.raises(TypeError):
        libkernels.get_kernel("acme/answer", version="1")
    with pytest.raises(TypeError):
        libkernels.get_kernel("acme/answer", version=True)
    with pytest.raises(ValueError, match="Invalid backend 'nonsense'"):
        libkernels.get_kernel("acme/answer", version=1, backend="nonsense")


def test_get_kernel_imports_the_variant(env, hub, answer_repo):
    hub.log_clear()
    mod = libkernels.get_kernel("acme/answer", version=1, backend="cpu")
    assert mod.answer() == 42
    assert sys.modules[answer_repo["id"]] is mod
    assert mod.__name__ == answer_repo["id"]
    k = mod.__libkernels_kernel__
    assert k.repo_id == "acme/answer" and k.commit == answer_repo["commit"]
    assert k.variant == answer_repo["variant"]
    assert Path(k.path).name == answer_repo["variant"]
    assert str(env) in k.path  # in the cache this test pointed libkernels at
    assert k.library and k.library.endswith(f"{answer_repo['id']}.so")
    assert k.metadata.id == answer_repo["id"] and k.metadata.name == "answer" and k.metadata.version == 1
    # libkernels dlopen'ed the module itself: the symbol is reachable through it.
    assert k.function("answer")() == 42
    assert k.function("twice", ctypes.c_int, [ctypes.c_int])(21) == 42
    with pytest.raises(libkernels.LoadError, match="no_such_symbol"):
        k.symbol("no_such_symbol")
    assert hub.count("GET", "/resolve/") > 0

    # Again: the same module, and nothing downloaded.
    hub.log_clear()
    assert libkernels.get_kernel("acme/answer", revision="v1", backend="cpu") is mod
    assert hub.count(path="/resolve/") == 0 and hub.count(listener="cdn") == 0

    # Offline: resolved from refs/ and the snapshot, not a single request.
    hub.log_clear()
    k2, stats = libkernels.get("acme/answer", "1", backend="cpu", offline=True, stats=True)
    try:
        assert k2.path == k.path and stats["from_cache"] == 1 and stats["commit"] == answer_repo["commit"]
    finally:
        k2.close()
    assert hub.log() == []
    assert libkernels.loaded_kernels()[-1] is k


def test_has_kernel_and_variants(env, hub, answer_repo):
    assert libkernels.has_kernel("acme/answer", version=1, backend="cpu") is True
    assert libkernels.has_kernel("acme/missing", version=1) is False

    decisions = libkernels.get_kernel_variants("acme/answer", version=1, backend="cpu")
    assert [type(d).__name__ for d in decisions] == ["VariantAccepted", "VariantRejected"]
    assert decisions[0].variant.variant_str == answer_repo["variant"] and decisions[0].rank == 0
    assert decisions[1].variant.variant_str == "torch27-cxx11-cu118-x86_64-linux"
    assert "torch" in decisions[1].reason.lower() or "cuda" in decisions[1].reason.lower()

    # A repo with only a variant this process rejects.
    tree = answer_repo["tree"].parent / "cudaonly"
    make_variant(tree / "build" / "torch27-cxx11-cu118-x86_64-linux", name="cudaonly", answer=7, backend="cuda")
    publish_tree(hub, "acme/cudaonly", tree)
    assert libkernels.has_kernel("acme/cudaonly", version=1, backend="cpu") is False
    with pytest.raises(libkernels.NoMatchError) as ei:
        libkernels.get_kernel("acme/cudaonly", version=1, backend="cpu")
    assert "torch27-cxx11-cu118-x86_64-linux" in str(ei.value)  # the whole trace
    assert "_cudaonly_cuda_0000007" not in sys.modules


def test_paths_that_are_not_utf8(env, hub, answer_repo, tmp_path, monkeypatch):
    # A path is bytes: one that is not UTF-8 goes to the library and comes
    # back as os.fsencode/os.fsdecode have it, so it still names the file.
    odd = tmp_path / os.fsdecode(b"c\xff")
    with libkernels.get("acme/answer", "1", backend="cpu", cache_dir=odd) as k:
        assert k.path.startswith(os.path.realpath(odd)) and os.path.isfile(k.library), k.path
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / os.fsdecode(b"e\xff")))
    assert libkernels.get_kernel("acme/answer", version=1, backend="cpu").answer() == 42


def test_device_argument(env, hub, answer_repo):
    import torch

    for device in (0, "1", "cuda:0", torch.device("cuda", 1), torch.device("cuda"), None):
        # torch.device("cuda") has no index: the current device, as None
        assert libkernels.has_kernel("acme/answer", version=1, backend="cpu", device=device) is True, device
    with pytest.raises(TypeError, match="device must be"):
        libkernels.has_kernel("acme/answer", version=1, backend="cpu", device=1.5)


def test_trust_remote_code(env, hub, tmp_path):
    tree = tmp_path / "shady"
    kid = make_variant(tree / "build" / torch_cpu_variant(), name="shady", answer=13)
    publish_tree(hub, "shadyorg/shady", tree, trusted=False)
    with pytest.raises(libkernels.UntrustedError) as ei:
        libkernels.get_kernel("shadyorg/shady", version=1, backend="cpu")
    assert "trust_remote_code" in str(ei.value)
    assert isinstance(ei.value, ValueError)  # what `kernels` raises
    with pytest.raises(libkernels.UntrustedError):
        libkernels.get_kernel("shadyorg/shady", version=1, backend="cpu", trust_remote_code=["shadyorg/other"])
    assert kid not in sys.modules
    assert hub.count(path="/resolve/") == 0  # nothing fetched before the trust check
    with pytest.raises(ValueError, match="repository ids"):
        libkernels.get_kernel("shadyorg/shady", version=1, trust_remote_code=["shadyorg"])
    mod = libkernels.get_kernel("shadyorg/shady", version=1, backend="cpu", trust_remote_code=["shadyorg/shady"])
    assert mod.answer() == 13
    assert libkernels.get_kernel("shadyorg/shady", revision="main", trust_remote_code=True,
                                 backend="cpu") is mod


def test_tampered_variant_is_never_imported(env, hub, tmp_path):
    tree = tmp_path / "bad"
    variant = tree / "build" / torch_cpu_variant()
    kid = make_variant(variant, name="bad", answer=5)
    (variant / "__init__.py").write_text("raise SystemExit('the tampered module ran')\n")
    publish_tree(hub, "acme/bad", tree)
    with pytest.raises(libkernels.IntegrityError) as ei:
        libkernels.get_kernel("acme/bad", version=1, backend="cpu")
    assert "__init__.py" in str(ei.value)
    assert kid not in sys.modules


def test_plain_c_variant_has_no_module(env, hub, tmp_path):
    tree = tmp_path / "plain"
    make_variant(tree / "build" / torch_cpu_variant(), name="plain", answer=9, python=False)
    publish_tree(hub, "acme/plain", tree)
    with pytest.raises(libkernels.NoPythonModuleError, match="libkernels.get"):
        libkernels.get_kernel("acme/plain", version=1, backend="cpu")
    with libkernels.get("acme/plain", "1", backend="cpu") as k:
        assert k.function("answer")() == 9
        assert k.refcount >= 1
    assert k.closed


def test_get_local_kernel(env, hub, tmp_path):
    tree = tmp_path / "localrepo"
    kid = make_variant(tree / "build" / torch_cpu_variant(), name="localk", answer=77)
    hub.log_clear()
    mod = libkernels.get_local_kernel(tree, backend="cpu")
    assert mod.answer() == 77 and mod.__name__ == kid
    assert mod.__libkernels_kernel__.commit is None and mod.__libkernels_kernel__.repo_id is None
    assert hub.log() == []
    # A variant folder works too and gives the same (already imported) module.
    assert libkernels.get_local_kernel(tree / "build" / torch_cpu_variant()) is mod
    with pytest.raises(libkernels.KernelsError):
        libkernels.get_local_kernel(tmp_path / "does-not-exist")


def test_symbol_at_address_zero_is_its_own_error(env, tmp_path):
    # dlsym finds an absolute symbol of value 0 and says nothing: NULL is
    # still kernels_symbol's failure, with its own message, never the one an
    # earlier failure left on this thread.
    folder = tmp_path / "zero" / torch_cpu_variant()
    make_variant(folder, name="zero", answer=5, python=False, ldflags=["-Wl,--defsym,at_zero=0"])
    with libkernels.load_local(folder, backend="cpu") as k:
        with pytest.raises(libkernels.InvalidArgumentError):
            libkernels.get("not a repo", "main")  # leaves its message on this thread
        with pytest.raises(libkernels.LoadError, match="at_zero"):
            k.symbol("at_zero")


def test_both_package_layouts(env, tmp_path):
    """kernel-builder's newest layout (the variant folder is the package:
    build/<variant>/__init__.py) and the older nested compat package
    (build/<variant>/<python_name>/__init__.py) both import, as 0.17.2's."""
    flat = tmp_path / "flat" / "build" / torch_cpu_variant()
    make_variant(flat, name="flatk", answer=5)
    assert libkernels.get_local_kernel(flat).answer() == 5
    nested = tmp_path / "nested" / "build" / torch_cpu_variant()
    kid = make_variant(nested, name="nested-k", answer=6, python=False)
    (nested / "nested_k").mkdir()
    (nested / "nested_k" / "__init__.py").write_text(
        "import ctypes\nfrom pathlib import Path\n"
        f"_lib = ctypes.CDLL(str(Path(__file__).parent.parent / '{kid}.so'))\n"
        "def answer():\n    return _lib.answer()\n")
    subprocess.run([sys.executable, str(MAKE_METADATA), str(nested), "--name", "nested-k", "--id", kid, "--backend",
                    "cpu", "--version", "1"], check=True)
    assert libkernels.get_local_kernel(nested).answer() == 6


def test_locked_workflow(env, hub, answer_repo, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "app"\n\n[tool.kernels.dependencies]\n'
                                            '"acme/answer" = 1\n')
    lockfile = libkernels.lock_project(project)
    assert lockfile == project / "kernels.lock"
    assert answer_repo["commit"] in lockfile.read_text()

    # Nothing cached: load_kernel never touches the network and says what to run.
    hub.log_clear()
    with pytest.raises(libkernels.OfflineError, match="download"):
        libkernels.load_kernel("acme/answer", lockfile=lockfile, backend="cpu")
    assert hub.log() == []
    with pytest.raises(libkernels.NotFoundError, match="acme/other"):
        libkernels.get_locked_kernel("acme/other", lockfile=lockfile)
    with pytest.raises(ValueError, match="kernels.lock. file in the caller's package metadata"):
        libkernels.get_locked_kernel("acme/answer")

    libkernels.download_project(project, backend="cpu")
    hub.log_clear()
    mod = libkernels.load_kernel("acme/answer", lockfile=lockfile, backend="cpu")
    assert mod.answer() == 42 and mod.__libkernels_kernel__.commit == answer_repo["commit"]
    assert hub.log() == []
    # get_locked_kernel has no backend argument (as in `kernels`): the low-level call has.
    with libkernels.get_locked("acme/answer", lockfile, backend="cpu") as k:
        assert k.path == mod.__libkernels_kernel__.path and k.commit == answer_repo["commit"]
    assert hub.log() == [] or hub.count(path="/resolve/") == 0


def test_threads_share_one_import(env, hub, answer_repo):
    # 8 threads ask at once: libkernels downloads once (its cache locks), the
    # binding imports the variant once, every thread gets that module.
    import threading

    hub.log_clear()
    got, errors = [], []
    barrier = threading.Barrier(8)

    def worker():
        try:
            barrier.wait()
            got.append(libkernels.get_kernel("acme/answer", version=1, backend="cpu"))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(got) == 8 and all(m is got[0] for m in got) and got[0].answer() == 42
    assert got[0].__libkernels_kernel__.refcount == 1  # the 7 extra handles were closed
    files = [e["path"] for e in hub.requests("GET", "/resolve/")]
    assert len(files) == len(set(files)), files  # each file fetched once

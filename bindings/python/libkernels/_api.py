"""The functions of the Python `kernels` package (0.17), run by libkernels.

libkernels resolves the revision, checks the publisher, picks the variant,
downloads it into the huggingface_hub cache, verifies its digest and
dlopens its native module; this module then imports the variant's Python
package under its metadata id, so that its torch ops register under
torch.ops.<id>, exactly as the `kernels` package names them.
"""
import contextlib
import contextvars
import ctypes
import importlib.util
import logging
import os
import sys
import threading
from pathlib import Path

from . import _lib
from ._kernel import Kernel, decisions_from_trace

logger = logging.getLogger("libkernels")

_LOG_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING}


def _log_to_logging(level, message, _payload):
    # libkernels' warnings ("a newer major version exists") go to the
    # `libkernels` logger; with no handler configured Python prints warnings
    # to stderr, as the C library's default would.
    try:
        logger.log(_LOG_LEVELS.get(level, logging.WARNING), "%s", message.decode("utf-8", "replace"))
    except Exception:  # never let an exception cross the C boundary
        pass


_LOG_CB = _lib.LOG_CB(_log_to_logging)
_library_path = None


def set_library(path):
    """Use the libkernels at `path` for every later call (None: back to the
    default search: $KERNELS_LIBRARY, then the system's library search)."""
    global _library_path
    if path is not None:
        _lib.load(path)  # fail now, not at the first call
    _library_path = os.fspath(path) if path is not None else None


def library(path=None):
    """The loaded libkernels (a _lib.Library): `path`, else set_library()'s,
    else $KERNELS_LIBRARY, else the system's library search."""
    return _lib.load(path or _library_path)


def _enc(s):
    # as the file system has it: a path that is not UTF-8 is bytes os.fsdecode() made a str of
    return None if s is None else os.fsencode(s)


class _Call:
    """A kernels_options for one call, with the Python objects it borrows
    kept alive for as long as the call runs."""

    def __init__(self, lib, *, backend=None, trust_remote_code=False, repo_id=None, endpoint=None,
                 cache_dir=None, token=None, offline=None, check_arch=True, device=None, user_agent=None):
        self.lib = lib
        self.opts = _lib.Options()
        lib.options_init(ctypes.byref(self.opts), _lib.KERNELS_OPTIONS_VERSION)
        self._keep = []
        self.opts.endpoint = self._str(endpoint)
        self.opts.cache_dir = self._str(cache_dir)
        self.opts.token = self._str(token)
        if offline is not None:
            self.opts.offline = 1 if offline else 0
        # 0.17's check_arch=False: the build's archs are not compared with the device
        self.opts.skip_arch_check = 0 if check_arch else 1
        self.opts.device = self._str(_device(device))
        self.opts.user_agent = self._str(_user_agent(user_agent))
        self.opts.log_cb = _LOG_CB
        self._trust(trust_remote_code)
        self._backend(backend)

    def _str(self, s):
        b = _enc(s)
        if b is not None:
            self._keep.append(b)
        return b

    def _trust(self, trust):
        # `kernels` semantics: True trusts every repo; a list is an allowlist
        # of repo ids (on top of the Hub's trusted publishers).
        if trust is True:
            self.opts.trust_remote_code = 1
        elif isinstance(trust, (list, tuple)):
            bad = [r for r in trust if not isinstance(r, str) or "/" not in r or "," in r]
            if bad:
                raise ValueError(f"trust_remote_code entries must be repository ids ('org/name'), not {bad!r}")
            if trust:
                self.opts.trusted_orgs = self._str(",".join(trust))
        elif trust is not False and trust is not None:
            raise TypeError(f"trust_remote_code must be a bool or a list of repository ids, not {trust!r}")

    def _backend(self, backend):
        # `kernels` accepts "cpu" or the backend torch is built for; anything
        # else is an error naming the supported ones.
        if backend is None:
            return
        if not isinstance(backend, str):
            raise TypeError(f"backend must be a string such as 'cpu' or 'cuda', not {backend!r}")
        if backend == "cpu":
            self.system = _lib.System()
            self.system.backend = self._str("cpu")
            self.system.no_gpu = 1
            self.opts.system = ctypes.pointer(self.system)
            return
        detected = system(library_path=self.lib.path)["backend"]
        if backend != detected:
            raise ValueError(f"Invalid backend '{backend}', system supported backends: "
                             f"{', '.join(sorted({'cpu', detected}))}")

    def ref(self):
        return ctypes.byref(self.opts)


def _device(device):
    """The device the kernel will run on, for the arch check: an index, a
    torch.device or "cuda:1"; None: the process's current device (torch's,
    when torch has initialised CUDA)."""
    if device is None:
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                return str(torch.cuda.current_device())
        except Exception:
            pass
        return None
    # a str's .index is a method: only a torch.device's is read
    index = device if isinstance(device, (int, str)) else getattr(device, "index", device)
    if index is None:  # torch.device("cuda"): torch's current device
        return _device(None)
    if isinstance(index, bool) or not isinstance(index, (int, str)):
        raise TypeError(f"device must be an index, 'cuda:N' or a torch.device, not {device!r}")
    return str(index)


def _user_agent(user_agent):
    """Python kernels' user_agent: a string, or a dict joined as k/v pairs."""
    if user_agent is None or user_agent == "":
        return None
    if isinstance(user_agent, dict):
        return "; ".join(f"{k}/{v}" for k, v in user_agent.items())
    if isinstance(user_agent, str):
        return user_agent
    raise TypeError(f"user_agent must be a str or a dict, not {user_agent!r}")


def _revision(revision, version):
    """The revision string libkernels takes: the revision as given, or the
    major version N as "N" (the branch vN)."""
    if revision is not None and version is not None:
        raise ValueError("Only one of `revision` or `version` must be specified.")
    if revision is not None:
        if not isinstance(revision, str):
            raise TypeError(f"revision must be a string (branch, tag or commit), not {revision!r}")
        return revision
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int) or version < 0:
            raise TypeError(f"version must be a non-negative int (the kernel's major version), not {version!r}")
        return str(version)
    raise ValueError(
        "A kernel version or revision must be specified. "
        "Use `version=<major>` for a stable kernel API version or `revision=<branch/tag/commit>` "
        "for an explicit Hub revision. See: https://huggingface.co/docs/kernels/migration")


def _prepare_torch():
    # The `kernels` package imports torch first, and tvm_ffi when it picks a
    # variant; libkernels detects each from its library loaded in the process
    # (a variant's native module needs it loaded to dlopen). Import them when
    # installed, so that the variant chosen does not depend on whether
    # `kernels` ran first.
    for name in ("torch", "tvm_ffi"):
        if name not in sys.modules and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def system(library_path=None, backend=None):
    """What libkernels detects about this process (torch, backend, GPUs, ...) as a dict."""
    _prepare_torch()
    lib = library(library_path)
    call = _Call(lib, backend=backend) if backend == "cpu" else _Call(lib)
    out = ctypes.POINTER(_lib.System)()
    lib.system_detect(ctypes.byref(out), call.ref())
    try:
        s = out.contents
        d = {name: getattr(s, name) for name, _ in _lib.System._fields_}
        d["gpu_archs"] = list(s.gpu_archs[:max(0, s.gpu_count)])
        d["gpu_arch_names"] = [n.decode() for n in s.gpu_arch_names[:max(0, s.gpu_count)]]
        for k, v in d.items():
            if isinstance(v, bytes):
                d[k] = v.decode("utf-8", "replace")
        # as long as the library says the text is (a torch path alone may be long)
        buf = ctypes.create_string_buffer(lib.system_format(None, 0, out) + 1)
        lib.system_format(buf, len(buf), out)
        d["description"] = buf.value.decode("utf-8", "replace")
        return d
    finally:
        lib.system_free(out)


# ---- low level: Kernel handles ------------------------------------------------

def get(repo_id, revision, *, backend=None, trust_remote_code=False, stats=False, library_path=None, **options):
    """kernels_get(): the loaded variant as a Kernel (no Python import).
    `revision` is anything libkernels takes ("main", "v1.1.2", a commit, a
    PEP 440 spec, "N" for a major version). `options`: endpoint, cache_dir,
    token, offline. With stats=True returns (Kernel, dict of timings)."""
    _prepare_torch()
    lib = library(library_path)
    call = _Call(lib, backend=backend, trust_remote_code=trust_remote_code, **options)
    out = _lib.KernelP()
    st = _lib.GetStats()
    lib.get_ext(ctypes.byref(out), ctypes.byref(st), _enc(repo_id), _enc(revision), call.ref())
    k = Kernel(lib, out)
    if not stats:
        return k
    d = {name: getattr(st, name) for name in ("resolve_ms", "select_ms", "download_ms", "load_ms", "from_cache",
                                               "local")}
    d["commit"] = st.commit.decode()
    d["repo_id"] = st.repo_id.decode()
    d["download"] = {name: getattr(st.download, name) for name, _ in _lib.DownloadStats._fields_}
    return k, d


def load_local(path, *, backend=None, library_path=None, **options):
    """kernels_load_local(): a repo checkout, build/ folder or variant folder."""
    _prepare_torch()
    lib = library(library_path)
    call = _Call(lib, backend=backend, **options)
    out = _lib.KernelP()
    lib.load_local(ctypes.byref(out), _enc(path), call.ref())
    return Kernel(lib, out)


def get_locked(repo_id, lockfile, *, trust_remote_code=False, offline_only=False, backend=None,
               library_path=None, **options):
    """kernels_get_locked() (or kernels_load_locked() with offline_only)."""
    _prepare_torch()
    lib = library(library_path)
    call = _Call(lib, backend=backend, trust_remote_code=trust_remote_code, **options)
    out = _lib.KernelP()
    fn = lib.load_locked if offline_only else lib.get_locked
    fn(ctypes.byref(out), _enc(repo_id), _enc(lockfile), call.ref())
    return Kernel(lib, out)


def lock_project(project_dir, *, library_path=None, **options):
    """kernels_project_lock(): resolves project_dir/pyproject.toml's
    [tool.kernels.dependencies] and writes project_dir/kernels.lock (what
    `kernels lock` writes)."""
    lib = library(library_path)
    call = _Call(lib, **options)
    lib.project_lock(_enc(project_dir), call.ref())
    return Path(project_dir) / "kernels.lock"


def download_project(project_dir, *, all_variants=False, backend=None, library_path=None, **options):
    """kernels_project_download(): fetches the locked commit of every
    dependency (the variant for this system, or all) into the cache (what
    `kernels download` does)."""
    _prepare_torch()
    lib = library(library_path)
    call = _Call(lib, backend=backend, **options)
    lib.project_download(_enc(project_dir), 1 if all_variants else 0, call.ref())


def variants(repo_id, revision, *, backend=None, library_path=None, **options):
    """kernels_get_variants(): the decisions, accepted (best first) then rejected."""
    _prepare_torch()
    lib = library(library_path)
    call = _Call(lib, backend=backend, **options)
    trace = _lib.TraceP()
    lib.get_variants(ctypes.byref(trace), _enc(repo_id), _enc(revision), call.ref())
    try:
        return decisions_from_trace(lib, trace)
    finally:
        lib.variant_trace_free(trace)


# ---- importing a variant's Python package ----------------------------------------

_import_lock = threading.RLock()
_loaded = {}  # variant folder -> module (the `kernels` package keeps the same registry)

# The imported modules of the kernel-depends of the kernel being imported;
# None outside an import (Python kernels 0.17's deps.py has the same).
_KERNEL_DEPS = contextvars.ContextVar("_LIBKERNELS_KERNEL_DEPS", default=None)


class NoPythonModuleError(ImportError):
    """The variant has no Python package (a plain C kernel): use libkernels.get()."""


def get_kernel_dep(repo_id):
    """A dependency of the kernel being imported (one of its metadata's
    kernel-depends), as a module; for a kernel's own __init__.py, as Python
    kernels 0.17's get_kernel_dep. `kernels.get_kernel_dep` works too when
    the `kernels` package is installed."""
    deps = _KERNEL_DEPS.get()
    if deps is None:
        raise RuntimeError("`get_kernel_dep` only works during kernel loading.")
    module = deps.get(repo_id)
    if module is None:
        raise RuntimeError(
            f"Dependency '{repo_id}' not found in kernel dependencies. Ensure the dependency is added to "
            "`kernel-deps` in build.toml.")
    return module


@contextlib.contextmanager
def _kernel_deps(deps):
    token = _KERNEL_DEPS.set(deps)
    try:
        # Kernels written for Python kernels call kernels.get_kernel_dep. Only a
        # kernel with dependencies has any to give (without, both raise), and
        # importing `kernels` (huggingface_hub with it) costs ~130 ms in a fresh
        # process: imported for those, or when the host has it already.
        use_kernel_deps = None
        if deps or "kernels" in sys.modules:
            try:
                from kernels.deps import use_kernel_deps
            except Exception:
                pass
        with (use_kernel_deps(deps) if use_kernel_deps else contextlib.nullcontext()):
            yield
    finally:
        _KERNEL_DEPS.reset(token)


def _check_python_depends(kernel):
    from . import _python_deps

    meta = kernel.metadata
    if meta.python_depends:
        backend = system(library_path=kernel._lib.path)["backend"] or "cpu"
        _python_deps.validate(meta.python_name, meta.python_depends, backend)


def _imported_elsewhere(path, meta):
    """The module another importer (the `kernels` package) made of the variant
    folder `path`, under the same name, or None. Running its __init__.py a
    second time would register its Python-side torch definitions again
    (torch.library.Library(ns, "DEF"), register_fake), which torch refuses."""
    module = sys.modules.get(meta.id)
    init = getattr(module, "__file__", None)
    if not init:
        return None
    # the folder, not the file: a cached file is a link into blobs/
    folder = Path(os.path.realpath(os.path.dirname(init)))
    real = Path(os.path.realpath(path))
    return module if folder in (real, real / meta.python_name) else None


def _share_with_kernels(path, kernel, module):
    """Lists the module in the `kernels` package's registry of imported
    variant folders when that package is loaded, so that its get_kernel of
    the same folder returns this module instead of running __init__.py a
    second time (which torch refuses for Python-side definitions). Kernels
    0.17's layout (importer._loaded_kernels); any other is left alone."""
    importer = sys.modules.get("kernels.importer")
    registry = getattr(importer, "_loaded_kernels", None)
    if not isinstance(registry, dict):
        return
    try:
        from kernels._rust import Metadata
        from kernels.hf_hub import RepoInfo

        origin = RepoInfo(repo_id=kernel.repo_id, revision=kernel.commit) if kernel.commit else None
        entry = importer.LoadedKernel(metadata=Metadata.read_from_file(path / "metadata.json"), module=module,
                                      repo_info=origin)
        # one key, as `kernels` would spell it: get_loaded_kernels() lists each once
        registry.setdefault(_kernels_spelling(kernel, path) or path, entry)
    except Exception:  # another kernels: it imports the folder itself, as before
        logger.debug("the kernels package's registry was left alone", exc_info=True)


def _kernels_spelling(kernel, path):
    """The folder as `kernels` names it in its registry: below its cache as
    configured (KERNELS_CACHE, else huggingface_hub's), where the binding's
    path is resolved (a cache reached through a link is spelled two ways)."""
    if not kernel.repo_id or not kernel.commit:
        return None
    from huggingface_hub import constants
    from huggingface_hub.file_download import repo_folder_name
    from kernels.hf_hub import CACHE_DIR

    snapshot = os.path.join(CACHE_DIR or constants.HF_HUB_CACHE, repo_folder_name(repo_id=kernel.repo_id,
                            repo_type="kernel"), "snapshots", kernel.commit)
    spelled = Path(snapshot) / "build" / kernel.variant
    return spelled if os.path.realpath(spelled) == os.path.realpath(path) else None


def import_kernel(kernel):
    """Imports the Python package of a loaded variant under its metadata id
    (sys.modules[id]), so its torch ops register under torch.ops.<id>.
    Takes ownership of `kernel` (kept open for the module's lifetime). The
    same variant folder is imported once; later calls return that module,
    as they return the one the `kernels` package imported of it.
    Its kernel-depends (loaded first by libkernels) are imported first, and
    reach it through get_kernel_dep while it imports. Its python-depends are
    checked first with Python kernels 0.17's rules (ValueError, ImportError)."""
    path = Path(kernel.path)
    with _import_lock:
        module = _loaded.get(path)
        if module is not None:
            kernel.close()  # the module already holds a reference
            return module
        module = _imported_elsewhere(path, kernel.metadata)
        if module is not None:
            module.__libkernels_kernel__ = kernel  # keeps the variant loaded with the module
            _loaded[path] = module
            return module
        deps = {}
        try:
            _check_python_depends(kernel)
            for dep in kernel.dependencies:
                # its own reference (the same handle), for its module's lifetime
                own = load_local(dep.path, library_path=kernel._lib.path)
                try:
                    deps[dep.repo_id or dep.path] = import_kernel(own)
                except NoPythonModuleError:  # a plain native kernel: its handle stands for it
                    deps[dep.repo_id or dep.path] = load_local(dep.path, library_path=kernel._lib.path)
        except BaseException:
            kernel.close()
            raise
        meta = kernel.metadata
        init = path / "__init__.py"
        if not init.exists():
            init = path / meta.python_name / "__init__.py"
        if not init.exists():
            kernel.close()
            raise NoPythonModuleError(
                f"variant '{path.name}' of {kernel.repo_id or path} has no Python package ({path}/__init__.py "
                f"or {meta.python_name}/__init__.py); it is a plain native kernel: use libkernels.get() and "
                "Kernel.symbol()/function()")
        spec = importlib.util.spec_from_file_location(meta.id, init)
        if spec is None or spec.loader is None:
            kernel.close()
            raise ImportError(f"cannot make an import spec for kernel {meta.id} from {init}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[meta.id] = module
        try:
            with _kernel_deps(deps):
                spec.loader.exec_module(module)
        except Exception as e:
            sys.modules.pop(meta.id, None)  # a retry imports from scratch
            kernel.close()
            origin = f" ({kernel.repo_id}, revision: {kernel.commit})" if kernel.repo_id else ""
            if hasattr(e, "add_note"):
                e.add_note(f"while importing kernel '{meta.name}', variant '{path.name}'{origin}")
            raise
        module.__libkernels_kernel__ = kernel
        _loaded[path] = module
        _share_with_kernels(path, kernel, module)
        return module


def loaded_kernels():
    """The Kernel of every variant module imported so far."""
    with _import_lock:
        return [m.__libkernels_kernel__ for m in _loaded.values()]


# ---- the `kernels` package's functions --------------------------------------------

@contextlib.contextmanager
def _version_errors(version):
    """Python kernels raises ValueError for a version with no branch v{N}."""
    from .errors import NotFoundError, VersionNotFoundError

    try:
        yield
    except NotFoundError as e:
        if version is not None and str(e).startswith(f"version {version} of "):
            raise VersionNotFoundError(str(e), e.code, e.function) from None
        raise


def get_kernel(repo_id, revision=None, version=None, backend=None, trust_remote_code=False, *, user_agent=None,
               check_arch=True, device=None):
    """Loads a kernel from the Hub (downloading it into the shared cache once)
    and returns its imported module. `revision` (branch, tag, commit) and
    `version` (int major: branch v{N}; a missing one raises a ValueError) are
    exclusive and one is required. `backend`: "cpu" or the backend torch is
    built for (default: detected). `trust_remote_code`: True, or a list of
    repo ids allowed in addition to repos of trusted publishers.
    `user_agent`: a str or a dict of name: version, sent first in the
    User-Agent (telemetry on). `check_arch=False` skips the check of the
    build's archs against `device` (default: the current device)."""
    rev = _revision(revision, version)
    with _version_errors(version):
        return import_kernel(get(repo_id, rev, backend=backend, trust_remote_code=trust_remote_code,
                                 check_arch=check_arch, device=device, user_agent=user_agent))


def has_kernel(repo_id, revision=None, version=None, backend=None, trust_remote_code=False, *, check_arch=True,
               device=None):
    """True when the kernel has a variant for this system (False when none
    fits, the arch check rejects them, or the repo/revision does not exist)."""
    from .errors import NoMatchError, NotFoundError

    rev = _revision(revision, version)
    _prepare_torch()
    lib = library()
    call = _Call(lib, backend=backend, trust_remote_code=trust_remote_code, check_arch=check_arch, device=device)
    try:
        return lib.has_kernel(_enc(repo_id), _enc(rev), call.ref()) == 1
    except (NotFoundError, NoMatchError):
        return False


def get_kernel_variants(repo_id, revision=None, version=None, backend=None):
    """The variant decisions for this system: VariantAccepted (preferred
    first) then VariantRejected with the reason."""
    with _version_errors(version):
        return variants(repo_id, _revision(revision, version), backend=backend)


def get_local_kernel(repo_path, backend=None, trust_remote_code=False, user_agent=None):
    """Imports a kernel from a local tree (a repo checkout, its build/ folder
    or one variant folder), verified like a Hub kernel; its dependencies
    come from LOCAL_KERNELS or the Hub."""
    return import_kernel(load_local(repo_path, backend=backend, trust_remote_code=trust_remote_code,
                                   user_agent=user_agent))


def _caller_lockfile():
    """The kernels.lock the calling package ships in its metadata (what
    `kernels lock` wrote and its setuptools hook put in the dist-info), as
    Python kernels 0.17 finds it: the first frame outside libkernels, its
    top-level package, the distributions providing it."""
    import importlib.metadata
    import inspect
    import tempfile

    module = None
    for frame in inspect.stack()[1:]:
        m = inspect.getmodule(frame[0])
        if m is not None and not m.__name__.startswith("libkernels"):
            module = m
            break
    names = []
    if module is not None:
        names = importlib.metadata.packages_distributions().get(module.__name__.split(".")[0]) or []
    for name in names:
        text = importlib.metadata.distribution(name).read_text("kernels.lock")
        if text is None:
            continue
        f = tempfile.NamedTemporaryFile("w", suffix="-kernels.lock", delete=False)
        with f:
            f.write(text)
        return f.name
    raise ValueError(
        "Could not find a `kernels.lock` file in the caller's package metadata. Please lock kernels with "
        "`kernels lock <project>` and then reinstall the project.")


def _locked(repo_id, lockfile, **kwargs):
    path = lockfile if lockfile is not None else _caller_lockfile()
    try:
        return import_kernel(get_locked(repo_id, path, **kwargs))
    finally:
        if lockfile is None:
            os.unlink(path)


def get_locked_kernel(repo_id, lockfile=None, trust_remote_code=False, user_agent=None):
    """Loads the commit of `repo_id` that `lockfile` (kernels.lock) pins,
    downloading it if needed and checking its files against the lock hash;
    its kernel dependencies at the commits the lock pins. lockfile=None: the
    lock file of the calling package's metadata, as Python kernels."""
    return _locked(repo_id, lockfile, trust_remote_code=trust_remote_code, user_agent=user_agent)


def load_kernel(repo_id, lockfile=None, backend=None):
    """Like get_locked_kernel, from the cache only: never a network call;
    OfflineError naming `libkernels download` when the variant is not cached."""
    return _locked(repo_id, lockfile, offline_only=True, backend=backend)

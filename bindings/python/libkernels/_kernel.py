"""Python objects around libkernels' handles: Kernel (a loaded variant),
Metadata (its metadata.json) and the variant decisions of a resolution."""
import ctypes
import os
import threading
from dataclasses import dataclass, field


def _s(b):
    return None if b is None else b.decode("utf-8", "replace")


def _path(b):
    """A path from the library, as os.fsdecode() has it (so that one that is
    not UTF-8 still names its file)."""
    return None if b is None else os.fsdecode(b)


@dataclass(frozen=True)
class KernelDependency:
    """One `kernel-depends` entry: `version` (the branch v{N}) or `revision`."""

    repo_id: str
    version: "int | None" = None
    revision: "str | None" = None


@dataclass(frozen=True)
class Metadata:
    """A variant's metadata.json, as libkernels parsed and verified it (the
    fields of Python kernels 0.17's Metadata)."""

    id: str
    name: str
    version: int
    license: str
    backend: str
    archs: tuple = ()
    dirty: bool = False
    upstream: "str | None" = None
    source: "str | None" = None
    kernels_minver: "str | None" = None
    python_depends: tuple = ()
    kernel_depends: tuple = ()
    provenance: "dict | None" = None

    @property
    def python_name(self):
        """The name as a Python identifier (as the `kernels` package spells it)."""
        return self.name.replace("-", "_")

    @classmethod
    def _from_handle(cls, lib, m):
        from . import _lib

        archs = tuple(_s(lib.metadata_arch_at(m, i)) for i in range(lib.metadata_arch_count(m)))
        deps = []
        for i in range(lib.metadata_kernel_depend_count(m)):
            d = _lib.KernelDependency()
            lib.metadata_kernel_depend_at(ctypes.byref(d), m, i)
            deps.append(KernelDependency(_s(d.repo_id), d.version if d.version >= 0 else None, _s(d.revision)))
        p = _lib.Provenance()
        provenance = None
        if lib.metadata_provenance(ctypes.byref(p), m) == 1:
            tri = {1: True, 0: False}
            provenance = {"kernel_builder_version": _s(p.builder_version),
                          "kernel_builder_commit": _s(p.builder_commit),
                          "kernel_builder_dirty": tri.get(p.builder_dirty), "kernel_commit": _s(p.kernel_commit),
                          "kernel_dirty": tri.get(p.kernel_dirty)}
        return cls(id=_s(lib.metadata_id(m)), name=_s(lib.metadata_name(m)), version=lib.metadata_version(m),
                   license=_s(lib.metadata_license(m)), backend=_s(lib.metadata_backend(m)), archs=archs,
                   dirty=bool(lib.metadata_dirty(m)), upstream=_s(lib.metadata_upstream(m)),
                   source=_s(lib.metadata_source(m)), kernels_minver=_s(lib.metadata_kernels_minver(m)),
                   python_depends=tuple(_s(lib.metadata_python_depend_at(m, i))
                                        for i in range(lib.metadata_python_depend_count(m))),
                   kernel_depends=tuple(deps), provenance=provenance)


class Kernel:
    """A variant loaded by libkernels (verified, its native module dlopen'ed).

    Holds one reference on the C handle; close() (or garbage collection)
    drops it. Attributes: repo_id, commit (None for local loads), variant,
    path (the variant folder), library (the .so loaded, None for noarch),
    metadata (Metadata).
    """

    def __init__(self, lib, handle, owner=None):
        self._lib = lib
        self._handle = handle
        # A dependency's Kernel borrows the reference its dependent holds.
        self._owner = owner
        self._lock = threading.Lock()
        self.repo_id = _s(lib.kernel_repo(handle))
        self.commit = _s(lib.kernel_commit(handle))
        self.variant = _s(lib.kernel_variant(handle))
        self.path = _path(lib.kernel_path(handle))
        self.library = _path(lib.kernel_library(handle))
        self.metadata = Metadata._from_handle(lib, lib.kernel_metadata(handle))

    @property
    def dependencies(self):
        """The kernels its kernel-depends named, loaded before it (Kernel
        objects that live as long as this one, and are closed with it)."""
        self._check_open()
        return [Kernel(self._lib, self._lib.kernel_dependency_at(self._handle, i), owner=self)
                for i in range(self._lib.kernel_dependency_count(self._handle))]

    @property
    def closed(self):
        # A dependency's handle is its dependent's reference: closing that
        # may free it.
        return self._handle is None or (self._owner is not None and self._owner.closed)

    @property
    def refcount(self):
        """References libkernels holds on this variant (all handles together)."""
        self._check_open()
        return self._lib.kernel_refcount(self._handle)

    def symbol(self, name):
        """The address (int) of `name` in the native module; raises LoadError
        when it is not exported or the variant is noarch."""
        self._check_open()
        addr = self._lib.symbol(self._handle, name.encode())
        if not addr:
            from .errors import make_error

            raise make_error(self._lib.error_last_code() or -13, _s(self._lib.error_last()), "kernels_symbol")
        return addr

    def function(self, name, restype=ctypes.c_int, argtypes=()):
        """symbol(name) as a ctypes function with the given prototype. The
        Kernel must stay open while the function is used."""
        fn = ctypes.CFUNCTYPE(restype, *argtypes)(self.symbol(name))
        fn._kernel = self  # keeps the module loaded while the function lives
        return fn

    def close(self):
        with self._lock:
            handle, self._handle = self._handle, None
        if handle is not None and self._owner is None:
            self._lib.kernel_close(handle)

    def _check_open(self):
        if self.closed:
            raise ValueError(f"kernel {self.repo_id or self.path} is closed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        where = f"{self.repo_id}@{self.commit[:7]}" if self.repo_id and self.commit else self.path
        return f"<libkernels.Kernel {self.metadata.id} {where} {self.variant}>"


@dataclass(frozen=True)
class Variant:
    """A build variant by name (the `kernels` package's Variant has the same
    `variant_str`)."""

    variant_str: str

    def __str__(self):
        return self.variant_str


@dataclass(frozen=True)
class VariantAccepted:
    """A variant compatible with this system; rank 0 is the preferred one."""

    variant: Variant
    rank: int = field(default=0, compare=False)


@dataclass(frozen=True)
class VariantRejected:
    """A variant that does not fit, with libkernels' reason."""

    variant: Variant
    reason: str
    valid: bool = field(default=True, compare=False)


def decisions_from_trace(lib, trace):
    out = []
    for i in range(lib.variant_trace_count(trace)):
        v = Variant(_s(lib.variant_trace_name_at(trace, i)))
        if lib.variant_trace_accepted_at(trace, i) == 1:
            out.append(VariantAccepted(v, lib.variant_trace_rank_at(trace, i)))
        else:
            out.append(VariantRejected(v, _s(lib.variant_trace_reason_at(trace, i)) or "",
                                       bool(lib.variant_trace_valid_at(trace, i))))
    return out

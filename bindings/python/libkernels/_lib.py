"""ctypes view of libkernels: finding the shared library, the C structs
(mirrored field by field from include/kernels/*.h) and the prototype of every
function the binding calls.

The structs must match the C layout exactly; tests/python/test_binding_abi.py
compiles a C program against the headers and compares sizes and offsets.
"""
import ctypes
import ctypes.util
import os
import threading

from .errors import raise_for

KERNELS_OPTIONS_VERSION = 2
KERNELS_GET_STATS_VERSION = 1
KERNELS_PROVENANCE_VERSION = 1
KERNELS_FROM_ENV = -1
KERNELS_MAX_GPUS = 16
KERNELS_SYSTEM_VERSION = 2

_c_char_p = ctypes.c_char_p
_c_int = ctypes.c_int
_c_size_t = ctypes.c_size_t
_c_void_p = ctypes.c_void_p


class System(ctypes.Structure):
    """struct kernels_system (include/kernels/system.h)."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("torch_version", _c_int),
        ("torch_cxx11_abi", _c_int),
        ("tvm_ffi_version", _c_int),
        ("backend", _c_char_p),
        ("backend_version", _c_int),
        ("gpu_count", _c_int),
        ("gpu_archs", _c_int * KERNELS_MAX_GPUS),
        ("cpu", _c_char_p),
        ("os", _c_char_p),
        ("no_gpu", _c_int),
        ("macos_version", _c_int),
        ("cuda_runtime_version", _c_int),
        ("cuda_driver_version", _c_int),
        ("glibc", _c_char_p),
        ("torch_version_string", _c_char_p),
        ("torch_path", _c_char_p),
        ("tvm_ffi_path", _c_char_p),
        ("backend_source", _c_char_p),
        ("torch_source", _c_char_p),
        ("gpu_arch_names", _c_char_p * KERNELS_MAX_GPUS),
        ("current_device", _c_int),
    ]


LOG_CB = ctypes.CFUNCTYPE(None, _c_int, _c_char_p, _c_void_p)
PROGRESS_CB = ctypes.CFUNCTYPE(_c_int, _c_char_p, _c_size_t, _c_size_t, _c_size_t, _c_size_t, _c_void_p)


class Options(ctypes.Structure):
    """struct kernels_options (include/kernels/options.h), version 2."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("endpoint", _c_char_p),
        ("cache_dir", _c_char_p),
        ("token", _c_char_p),
        ("offline", _c_int),
        ("timeout_ms", ctypes.c_long),
        ("max_retries", _c_int),
        ("max_parallel", _c_int),
        ("trust_remote_code", _c_int),
        ("trusted_orgs", _c_char_p),
        ("system", ctypes.POINTER(System)),
        ("log_cb", LOG_CB),
        ("log_payload", _c_void_p),
        ("progress_cb", PROGRESS_CB),
        ("progress_payload", _c_void_p),
        ("torch_dir", _c_char_p),
        ("find_torch", _c_int),
        ("deadline_ms", ctypes.c_long),
        ("endpoints", _c_char_p),
        ("log_level", _c_char_p),
        ("signature", _c_int),
        ("sigstore_trusted_root", _c_char_p),
        ("signature_policies", _c_void_p),
        ("signature_policy_count", _c_size_t),
        ("revision_ttl_s", ctypes.c_long),
        ("skip_arch_check", _c_int),
        ("device", _c_char_p),
        ("user_agent", _c_char_p),
        ("stall_budget_ms", ctypes.c_long),
    ]


class DownloadStats(ctypes.Structure):
    """struct kernels_download_stats (include/kernels/download.h)."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("files", _c_size_t),
        ("files_cached", _c_size_t),
        ("blobs_downloaded", _c_size_t),
        ("blobs_waited", _c_size_t),
        ("bytes_downloaded", ctypes.c_ulonglong),
        ("bytes_total", ctypes.c_ulonglong),
        ("max_parallel", ctypes.c_uint),
        ("retries", ctypes.c_uint),
    ]


class GetStats(ctypes.Structure):
    """struct kernels_get_stats (include/kernels/get.h); made with its
    version set, as KERNELS_GET_STATS_INIT makes it."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("resolve_ms", ctypes.c_double),
        ("select_ms", ctypes.c_double),
        ("download_ms", ctypes.c_double),
        ("load_ms", ctypes.c_double),
        ("from_cache", _c_int),
        ("local", _c_int),
        ("commit", ctypes.c_char * 41),
        ("repo_id", ctypes.c_char * 128),
        ("download", DownloadStats),
    ]

    def __init__(self):
        super().__init__(version=KERNELS_GET_STATS_VERSION)


class KernelDependency(ctypes.Structure):
    """struct kernels_kernel_dependency (include/kernels/metadata.h)."""

    _fields_ = [
        ("repo_id", _c_char_p),
        ("version", ctypes.c_longlong),
        ("revision", _c_char_p),
    ]


class Provenance(ctypes.Structure):
    """struct kernels_provenance (include/kernels/metadata.h); made with its
    version set, as KERNELS_PROVENANCE_INIT makes it."""

    _fields_ = [
        ("version", ctypes.c_uint),
        ("builder_version", _c_char_p),
        ("builder_commit", _c_char_p),
        ("builder_dirty", _c_int),
        ("kernel_commit", _c_char_p),
        ("kernel_dirty", _c_int),
    ]

    def __init__(self):
        super().__init__(version=KERNELS_PROVENANCE_VERSION)


# Opaque handles: typed pointers so that one kind cannot be passed for another.
class _Kernel(ctypes.Structure):
    pass


class _Metadata(ctypes.Structure):
    pass


class _Trace(ctypes.Structure):
    pass


KernelP = ctypes.POINTER(_Kernel)
MetadataP = ctypes.POINTER(_Metadata)
TraceP = ctypes.POINTER(_Trace)
OptionsP = ctypes.POINTER(Options)
SystemP = ctypes.POINTER(System)

# name: (restype, argtypes). Functions returning an int error code get
# `errcheck` below so that a negative value raises.
_INT_STATUS = object()
_PROTOTYPES = {
    "kernels_error_last": (_c_char_p, []),
    "kernels_error_last_code": (_c_int, []),
    "kernels_error_clear": (None, []),
    "kernels_strerror": (_c_char_p, [_c_int]),
    "kernels_version": (_c_char_p, []),
    "kernels_version_number": (_c_int, []),
    "kernels_options_init": (_INT_STATUS, [OptionsP, ctypes.c_uint]),
    "kernels_system_detect": (_INT_STATUS, [ctypes.POINTER(SystemP), OptionsP]),
    "kernels_system_free": (None, [SystemP]),
    "kernels_system_format": (_c_size_t, [ctypes.c_char_p, _c_size_t, SystemP]),
    "kernels_get": (_INT_STATUS, [ctypes.POINTER(KernelP), _c_char_p, _c_char_p, OptionsP]),
    "kernels_get_ext": (_INT_STATUS, [ctypes.POINTER(KernelP), ctypes.POINTER(GetStats), _c_char_p, _c_char_p, OptionsP]),
    "kernels_get_variants": (_INT_STATUS, [ctypes.POINTER(TraceP), _c_char_p, _c_char_p, OptionsP]),
    "kernels_has_kernel": (_INT_STATUS, [_c_char_p, _c_char_p, OptionsP]),
    "kernels_load_local": (_INT_STATUS, [ctypes.POINTER(KernelP), _c_char_p, OptionsP]),
    "kernels_get_locked": (_INT_STATUS, [ctypes.POINTER(KernelP), _c_char_p, _c_char_p, OptionsP]),
    "kernels_load_locked": (_INT_STATUS, [ctypes.POINTER(KernelP), _c_char_p, _c_char_p, OptionsP]),
    "kernels_project_lock": (_INT_STATUS, [_c_char_p, OptionsP]),
    "kernels_project_download": (_INT_STATUS, [_c_char_p, _c_int, OptionsP]),
    "kernels_kernel_close": (None, [KernelP]),
    "kernels_kernel_repo": (_c_char_p, [KernelP]),
    "kernels_kernel_commit": (_c_char_p, [KernelP]),
    "kernels_kernel_variant": (_c_char_p, [KernelP]),
    "kernels_kernel_path": (_c_char_p, [KernelP]),
    "kernels_kernel_library": (_c_char_p, [KernelP]),
    "kernels_kernel_metadata": (MetadataP, [KernelP]),
    "kernels_kernel_refcount": (_c_int, [KernelP]),
    "kernels_symbol": (_c_void_p, [KernelP, _c_char_p]),
    "kernels_metadata_id": (_c_char_p, [MetadataP]),
    "kernels_metadata_name": (_c_char_p, [MetadataP]),
    "kernels_metadata_version": (_c_int, [MetadataP]),
    "kernels_metadata_license": (_c_char_p, [MetadataP]),
    "kernels_metadata_backend": (_c_char_p, [MetadataP]),
    "kernels_metadata_arch_count": (_c_size_t, [MetadataP]),
    "kernels_metadata_arch_at": (_c_char_p, [MetadataP, _c_size_t]),
    "kernels_metadata_dirty": (_c_int, [MetadataP]),
    "kernels_metadata_read": (_INT_STATUS, [ctypes.POINTER(MetadataP), _c_char_p]),
    "kernels_metadata_free": (None, [MetadataP]),
    "kernels_metadata_upstream": (_c_char_p, [MetadataP]),
    "kernels_metadata_source": (_c_char_p, [MetadataP]),
    "kernels_metadata_kernels_minver": (_c_char_p, [MetadataP]),
    "kernels_metadata_python_depend_count": (_c_size_t, [MetadataP]),
    "kernels_metadata_python_depend_at": (_c_char_p, [MetadataP, _c_size_t]),
    "kernels_metadata_kernel_depend_count": (_c_size_t, [MetadataP]),
    "kernels_metadata_kernel_depend_at": (_INT_STATUS, [ctypes.POINTER(KernelDependency), MetadataP, _c_size_t]),
    "kernels_metadata_provenance": (_INT_STATUS, [ctypes.POINTER(Provenance), MetadataP]),
    "kernels_kernel_dependency_count": (_c_size_t, [KernelP]),
    "kernels_kernel_dependency_at": (KernelP, [KernelP, _c_size_t]),
    "kernels_variant_trace_count": (_c_size_t, [TraceP]),
    "kernels_variant_trace_name_at": (_c_char_p, [TraceP, _c_size_t]),
    "kernels_variant_trace_accepted_at": (_c_int, [TraceP, _c_size_t]),
    "kernels_variant_trace_valid_at": (_c_int, [TraceP, _c_size_t]),
    "kernels_variant_trace_reason_at": (_c_char_p, [TraceP, _c_size_t]),
    "kernels_variant_trace_devices_at": (_c_char_p, [TraceP, _c_size_t]),
    "kernels_variant_trace_rank_at": (_c_int, [TraceP, _c_size_t]),
    "kernels_variant_trace_chosen": (_c_char_p, [TraceP]),
    "kernels_variant_trace_string": (_c_char_p, [TraceP]),
    "kernels_variant_trace_free": (None, [TraceP]),
}


class Library:
    """A loaded libkernels with every prototype declared. Functions that
    return a status raise the matching KernelsError for a negative value,
    with kernels_error_last()'s message read on the same thread."""

    def __init__(self, path):
        self.path = path
        self.cdll = ctypes.CDLL(path)
        self.missing = []
        for name, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(self.cdll, name)
            except AttributeError:
                # An older library (or one still being written): the
                # functions that need the symbol raise when called.
                self.missing.append(name)
                continue
            fn.argtypes = argtypes
            if restype is _INT_STATUS:
                fn.restype = _c_int
                fn.errcheck = self._check
            else:
                fn.restype = restype
            setattr(self, name[len("kernels_"):], fn)

    def _check(self, result, func, args):
        if result < 0:
            message = self.cdll.kernels_error_last()
            raise_for(result, message.decode("utf-8", "replace") if message else "", func.__name__)
        return result

    def __getattr__(self, name):
        if "kernels_" + name in getattr(self, "missing", ()):
            raise AttributeError(
                f"{self.path} does not export kernels_{name}: this libkernels is older than the binding; "
                "rebuild or point KERNELS_LIBRARY at a newer libkernels.so")
        raise AttributeError(name)


_lock = threading.Lock()
_by_path = {}  # what load() resolved -> Library (one CDLL and one set of prototypes per library)


# Where a wheel built from bindings/python puts the library it bundles.
BUNDLED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libkernels.so.1")


def find_library(path=None):
    """The path of libkernels to load: `path` when given, else
    $KERNELS_LIBRARY, else the library bundled in the wheel (BUNDLED), else
    what ctypes.util.find_library("kernels") finds, else the plain soname
    for the dynamic loader's own search."""
    if path:
        return os.fspath(path)
    env = os.environ.get("KERNELS_LIBRARY")
    if env:
        return env
    if os.path.isfile(BUNDLED):
        return BUNDLED
    found = ctypes.util.find_library("kernels")
    return found or "libkernels.so.1"


def load(path=None):
    """Loads libkernels (once per path); see find_library for the search."""
    target = find_library(path)
    with _lock:
        lib = _by_path.get(target)
        if lib is None:
            try:
                lib = Library(target)
            except OSError as e:
                raise OSError(
                    f"cannot load libkernels from '{target}': {e}. Call libkernels.set_library(PATH), set KERNELS_LIBRARY to the "
                    "path of libkernels.so, or install libkernels where the dynamic loader finds it") from e
            _by_path[target] = lib
        return lib

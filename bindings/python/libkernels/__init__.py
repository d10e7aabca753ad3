"""libkernels for Python: the functions of the `kernels` package, run by the
C library libkernels through ctypes.

    import libkernels
    img2gray = libkernels.get_kernel("kernels-community/img2gray", version=1)
    gray = img2gray.img2gray(rgb)          # torch.ops.<metadata id>.img2gray

libkernels is found at: set_library(path), else $KERNELS_LIBRARY, else the
one a wheel of this package bundles (lib/libkernels.so.1), else the system's
library search (ctypes.util.find_library("kernels")).
"""
from ._api import (
    download_project,
    lock_project,
    NoPythonModuleError,
    get,
    get_kernel,
    get_kernel_dep,
    get_kernel_variants,
    get_local_kernel,
    get_locked,
    get_locked_kernel,
    has_kernel,
    import_kernel,
    library,
    load_kernel,
    load_local,
    loaded_kernels,
    set_library,
    system,
    variants,
)
from ._kernel import Kernel, KernelDependency, Metadata, Variant, VariantAccepted, VariantRejected
from .errors import (
    AmbiguousRevisionError,
    AuthError,
    BusyError,
    HTTPError,
    IntegrityError,
    InvalidArgumentError,
    KernelsError,
    KernelsIOError,
    KernelsMemoryError,
    LoadError,
    NetworkError,
    NoMatchError,
    NotFoundError,
    OfflineError,
    ParseError,
    SignatureError,
    UnsafePathError,
    UntrustedError,
    VersionNotFoundError,
    error_class,
)

__version__ = "1.0.0"


def library_version():
    """The loaded libkernels' version string (kernels_version())."""
    return library().version().decode()


__all__ = [
    "AmbiguousRevisionError", "AuthError", "BusyError", "HTTPError", "IntegrityError", "InvalidArgumentError", "Kernel",
    "KernelDependency", "KernelsError", "KernelsIOError", "KernelsMemoryError", "LoadError", "Metadata", "NetworkError",
    "NoMatchError", "NoPythonModuleError", "NotFoundError", "OfflineError", "ParseError", "SignatureError",
    "UnsafePathError", "UntrustedError", "VersionNotFoundError", "Variant", "VariantAccepted", "VariantRejected", "error_class", "get",
    "get_kernel", "get_kernel_dep",
    "get_kernel_variants", "get_local_kernel", "get_locked", "get_locked_kernel", "has_kernel",
    "import_kernel", "library", "lock_project", "download_project", "library_version", "load_kernel", "load_local",
    "loaded_kernels", "set_library", "system",
    "variants",
]

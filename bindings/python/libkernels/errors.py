"""Exceptions for libkernels' KERNELS_E* error codes.

Every negative status from the C library becomes an instance of the class
mapped from its code; `str(e)` and `e.message` carry kernels_error_last()
(what failed and what to do), `e.code` the negative code and `e.function`
the C function that failed. Each class also derives from the built-in
exception a Python caller would expect (ValueError for a bad argument,
FileNotFoundError for something missing, ImportError for a load failure,
...), so code written against the Python `kernels` package keeps working.
"""

KERNELS_ERROR = -1
KERNELS_EINVAL = -2
KERNELS_ENOTFOUND = -3
KERNELS_EAMBIGUOUS = -4
KERNELS_ENOMATCH = -5
KERNELS_EAUTH = -6
KERNELS_ENETWORK = -7
KERNELS_EHTTP = -8
KERNELS_EOFFLINE = -9
KERNELS_EINTEGRITY = -10
KERNELS_EIO = -11
KERNELS_ENOMEM = -12
KERNELS_ELOAD = -13
KERNELS_EUNTRUSTED = -14
KERNELS_EPARSE = -15
KERNELS_EUNSAFE = -16
KERNELS_ESIGNATURE = -17
KERNELS_EBUSY = -18


class KernelsError(Exception):
    """Base class: a libkernels call failed (KERNELS_ERROR and any unknown code)."""

    code = KERNELS_ERROR

    def __init__(self, message, code=None, function=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.function = function

    def __str__(self):
        return self.message

    def __reduce__(self):
        return (_rebuild, (type(self), self.message, self.code, self.function))


class InvalidArgumentError(KernelsError, ValueError):
    """KERNELS_EINVAL: a malformed argument (repo id, revision, path)."""

    code = KERNELS_EINVAL


class NotFoundError(KernelsError, FileNotFoundError):
    """KERNELS_ENOTFOUND: the repo, revision, file or variant does not exist."""

    code = KERNELS_ENOTFOUND


class AmbiguousRevisionError(KernelsError, ValueError):
    """KERNELS_EAMBIGUOUS: a short commit id matches several commits."""

    code = KERNELS_EAMBIGUOUS


class NoMatchError(KernelsError, FileNotFoundError):
    """KERNELS_ENOMATCH: no version satisfies the spec, or no variant fits
    this system (the message carries the whole decision trace)."""

    code = KERNELS_ENOMATCH


class AuthError(KernelsError, PermissionError):
    """KERNELS_EAUTH: a private or gated repo, token missing or refused."""

    code = KERNELS_EAUTH


class NetworkError(KernelsError, ConnectionError):
    """KERNELS_ENETWORK: the Hub could not be reached."""

    code = KERNELS_ENETWORK


class HTTPError(KernelsError):
    """KERNELS_EHTTP: the Hub answered with an unexpected status."""

    code = KERNELS_EHTTP


class OfflineError(KernelsError, FileNotFoundError):
    """KERNELS_EOFFLINE: offline, and what is needed is not cached."""

    code = KERNELS_EOFFLINE


class IntegrityError(KernelsError):
    """KERNELS_EINTEGRITY: a hash or digest does not match."""

    code = KERNELS_EINTEGRITY


class KernelsIOError(KernelsError, OSError):
    """KERNELS_EIO: a file system operation failed."""

    code = KERNELS_EIO


class KernelsMemoryError(KernelsError, MemoryError):
    """KERNELS_ENOMEM: out of memory."""

    code = KERNELS_ENOMEM


class LoadError(KernelsError, ImportError):
    """KERNELS_ELOAD: dlopen or symbol lookup failed (the message has dlerror())."""

    code = KERNELS_ELOAD

    def __init__(self, message, code=None, function=None):
        KernelsError.__init__(self, message, code, function)
        self.msg = message  # ImportError's own attribute


class UntrustedError(KernelsError, ValueError):
    """KERNELS_EUNTRUSTED: the publisher is not trusted and the caller did not opt in."""

    code = KERNELS_EUNTRUSTED


class ParseError(KernelsError, ValueError):
    """KERNELS_EPARSE: malformed JSON, TOML, lock file or version spec."""

    code = KERNELS_EPARSE


class UnsafePathError(KernelsError):
    """KERNELS_EUNSAFE: a path or link escapes its folder."""

    code = KERNELS_EUNSAFE


class BusyError(KernelsError):
    """KERNELS_EBUSY: the cache folder is in use: a download is writing it."""

    code = KERNELS_EBUSY


class SignatureError(KernelsError, ImportError):
    """KERNELS_ESIGNATURE: a sigstore signature is missing where required, or present and invalid."""

    code = KERNELS_ESIGNATURE

    def __init__(self, message, code=None, function=None):
        KernelsError.__init__(self, message, code, function)
        self.msg = message  # ImportError's own attribute


class VersionNotFoundError(NotFoundError, ValueError):
    """No branch v{N} for get_kernel(version=N): Python kernels raises
    ValueError there; this one is both, with libkernels' message (the
    versions that exist)."""


ERRORS = {
    cls.code: cls
    for cls in (KernelsError, InvalidArgumentError, NotFoundError, AmbiguousRevisionError, NoMatchError, AuthError,
                NetworkError, HTTPError, OfflineError, IntegrityError, KernelsIOError, KernelsMemoryError, LoadError,
                UntrustedError, ParseError, UnsafePathError, SignatureError, BusyError)
}


def error_class(code):
    """The exception class of a KERNELS_E* code (KernelsError when unknown)."""
    return ERRORS.get(code, KernelsError)


def make_error(code, message, function=None):
    """The exception for `code` with `message` (OSError-derived classes
    get the message as their only constructor argument, so that OSError does
    not read it as an errno)."""
    cls = error_class(code)
    if not message or message == "no error":
        message = f"{function or 'libkernels'} failed with code {code} and left no message"
    return _rebuild(cls, message, code, function)


def _rebuild(cls, message, code, function):
    e = cls(message)
    e.code = code
    e.function = function
    return e


def raise_for(code, message, function=None):
    raise make_error(code, message, function)

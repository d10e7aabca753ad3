"""Both verifiers on the same inputs: libkernels' (through ctypes) and
sigstore-python's, the one behind Python kernels 0.17's verify-signature.

`c_verify(artifact, bundle, root, policies)` and `py_verify(...)` return
(ok, reason). A policy is a dict with issuer and identity, or the string
"default" (libkernels' built-in default policy, and kernels 0.17's
DEFAULT_POLICIES for sigstore-python). `run_testsign(...)` runs
tests/data/sigstore/testsign.py, the stand-in sigstore.
"""

import ctypes
import os
import subprocess
import sys
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SOURCE_DIR / "bindings" / "python"))

from libkernels._lib import Options  # noqa: E402

TESTSIGN = SOURCE_DIR / "tests" / "data" / "sigstore" / "testsign.py"


class Policy(ctypes.Structure):
    """struct kernels_signature_policy (include/kernels/signature.h)."""

    _fields_ = [
        ("version", ctypes.c_uint),  # KERNELS_SIGNATURE_POLICY_VERSION
        ("issuer", ctypes.c_char_p),
        ("identity", ctypes.c_char_p),
        ("repository", ctypes.c_char_p),
        ("signer_uris", ctypes.POINTER(ctypes.c_char_p)),
        ("signer_uri_count", ctypes.c_size_t),
    ]


_lib = None


def library():
    global _lib
    if _lib is None:
        path = os.environ.get("KERNELS_LIBRARY")
        if not path or not os.path.exists(path):
            raise RuntimeError("KERNELS_LIBRARY must name the built libkernels.so (ctest sets it); got %r" % path)
        _lib = ctypes.CDLL(path)
        _lib.kernels_error_last.restype = ctypes.c_char_p
        _lib.kernels_signature_verify_bundle.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                                         ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                                         ctypes.c_void_p]
    return _lib


def c_verify(artifact, bundle, root, policy="default"):
    lib = library()
    opts = Options()
    lib.kernels_options_init(ctypes.byref(opts), 1)
    if root:
        opts.sigstore_trusted_root = str(root).encode()
    pol = None
    if policy != "default":
        pol = Policy(1, policy["issuer"].encode(), policy["identity"].encode(), None, None, 0)
    rc = lib.kernels_signature_verify_bundle(artifact, len(artifact), bundle, len(bundle),
                                             ctypes.byref(pol) if pol else None, 1 if pol else 0,
                                             ctypes.byref(opts))
    return rc == 0, "" if rc == 0 else lib.kernels_error_last().decode()


def py_verify(artifact, bundle, root, policy="default"):
    """sigstore-python, offline: the same trusted root file, no TUF."""
    from sigstore.models import Bundle, TrustedRoot
    from sigstore.verify import Verifier
    from sigstore.verify import policy as sp

    try:
        verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root)))
        if policy == "default":
            from kernels.verify import DEFAULT_POLICIES
            pol = sp.AnyOf(DEFAULT_POLICIES)
        else:
            pol = sp.Identity(identity=policy["identity"], issuer=policy["issuer"])
        verifier.verify_artifact(artifact, Bundle.from_json(bundle), pol)
    except Exception as e:  # any refusal, whatever its class
        return False, "%s: %s" % (type(e).__name__, e)
    return True, ""


def run_testsign(*args):
    subprocess.run([sys.executable, str(TESTSIGN), *map(str, args)], check=True)

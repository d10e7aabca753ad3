"""One sigstore verification, libkernels against sigstore-python, side by side
in one process (the verifier behind Python kernels 0.17's verify-signature).

    python3 bench/signature/vs_python.py LIBKERNELS_SO [runs]
    python3 bench/signature/vs_python.py LIBKERNELS_SO --calls N {c,py}

The second form makes N untimed verifications of happy-path-v0.3 (root file)
on one side only, for callgrind: instructions per verification are the
difference between two N over the difference of the Ns (see
bench/results/signature.txt).

Cases: the public conformance suite's happy-path-v0.2 bundle against the
public-good root (libkernels' built-in one; the same file for
sigstore-python), and happy-path-v0.3 with the root passed as a file to both. Each
verification is timed whole, as a caller pays it: libkernels'
kernels_signature_verify_bundle (reads the root file when one is named, parses
the bundle, verifies); sigstore-python's Bundle.from_json + verify_artifact
with a Verifier made once outside the timing (its trusted root parsed once,
the cheapest way to call it). The two run interleaved, call by call. Prints
the median and minimum of each and the ratios of medians and of minimums,
then the least CPU time of the calling thread per call (CLOCK_THREAD_CPUTIME_ID)
and its ratio: on a loaded machine a call is often preempted, which its wall
time counts and its CPU time does not.
"""

import ctypes
import statistics
import sys
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[2]
SUITE = SRC / "tests" / "data" / "sigstore" / "conformance" / "bundle-verify"
PUBLIC_GOOD = SRC / "lib" / "sigstore" / "trusted_root.json"
IDENTITY = ("https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/"
            "extremely-dangerous-oidc-beacon.yml@refs/heads/main")
ISSUER = "https://token.actions.githubusercontent.com"

sys.path.insert(0, str(SRC / "tests" / "python"))
from signature_support import Policy  # noqa: E402
sys.path.insert(0, str(SRC / "bindings" / "python"))
from libkernels._lib import Options  # noqa: E402


def c_verifier(lib, root):
    lib.kernels_error_last.restype = ctypes.c_char_p
    lib.kernels_signature_verify_bundle.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                                                    ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                                                    ctypes.c_void_p]
    opts = Options()
    lib.kernels_options_init(ctypes.byref(opts), 1)
    if root:
        opts.sigstore_trusted_root = str(root).encode()
    pol = Policy(1, ISSUER.encode(), IDENTITY.encode(), None, None, 0)  # version 1

    def verify(artifact, bundle):
        rc = lib.kernels_signature_verify_bundle(artifact, len(artifact), bundle, len(bundle), ctypes.byref(pol), 1,
                                                 ctypes.byref(opts))
        if rc != 0:
            raise RuntimeError(lib.kernels_error_last().decode())
    return verify


def py_verifier(root):
    from sigstore.models import Bundle, TrustedRoot
    from sigstore.verify import Verifier
    from sigstore.verify import policy as sp

    verifier = Verifier(trusted_root=TrustedRoot.from_file(str(root)))
    pol = sp.Identity(identity=IDENTITY, issuer=ISSUER)

    def verify(artifact, bundle):
        verifier.verify_artifact(artifact, Bundle.from_json(bundle), pol)
    return verify


def timed(c, py, artifact, bundle, runs):
    """Both, interleaved run by run, so that a busy machine slows both alike."""
    c(artifact, bundle)  # the first calls outside: imports, lazy set-up
    py(artifact, bundle)
    tc, tp, uc, up = [], [], [], []
    for _ in range(runs):
        for fn, t, u in ((c, tc, uc), (py, tp, up)):
            c0 = time.thread_time_ns()
            t0 = time.perf_counter()
            fn(artifact, bundle)
            t.append((time.perf_counter() - t0) * 1e3)
            u.append((time.thread_time_ns() - c0) / 1e6)
    return statistics.median(tc), min(tc), statistics.median(tp), min(tp), min(uc), min(up)


def calls(lib, n, side):
    """n verifications by one side, untimed: what callgrind counts."""
    bundle = (SUITE / "happy-path-v0.3" / "bundle.sigstore.json").read_bytes()
    verify = c_verifier(lib, PUBLIC_GOOD) if side == "c" else py_verifier(PUBLIC_GOOD)
    artifact = (SUITE / "a.txt").read_bytes()
    for _ in range(n):
        verify(artifact, bundle)


def main():
    lib = ctypes.CDLL(sys.argv[1])
    if len(sys.argv) > 2 and sys.argv[2] == "--calls":
        return calls(lib, int(sys.argv[3]), sys.argv[4])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 201
    artifact = (SUITE / "a.txt").read_bytes()
    print("%-34s %10s %10s %10s %10s %5s %5s %10s %10s %5s" % ("case", "C median", "C min", "Py median", "Py min",
                                                              "C/Py", "(min)", "C cpu min", "Py cpu min", "(cpu)"))
    for case, c_root in (("happy-path-v0.2", None), ("happy-path-v0.3", PUBLIC_GOOD)):
        name = "%s (%s)" % (case, "root file" if c_root else "built-in root")
        bundle = (SUITE / case / "bundle.sigstore.json").read_bytes()
        cm, cmin, pm, pmin, ccpu, pcpu = timed(c_verifier(lib, c_root), py_verifier(PUBLIC_GOOD), artifact, bundle,
                                                runs)
        print("%-34s %8.3f ms %7.3f ms %7.3f ms %7.3f ms %5.2f %5.2f %7.3f ms %7.3f ms %5.2f" % (
            name, cm, cmin, pm, pmin, cm / pm, cmin / pmin, ccpu, pcpu, ccpu / pcpu))


if __name__ == "__main__":
    main()

"""One environment, one cache folder: libkernels' kernels_cache_path (opts
NULL, so all of it from the environment) against huggingface_hub's
HF_HUB_CACHE, each in a subprocess given exactly that environment: "~" and
"~user", $VAR and ${VAR}, unset and empty HOME, trailing slashes, the legacy
name, and values that expand to nothing (the working folder, never "/")."""

import os
import pwd
import subprocess
import sys

import pytest

LIBRARY = os.environ.get("KERNELS_LIBRARY")

LIBKERNELS = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.kernels_error_last.restype = ctypes.c_char_p
p = ctypes.c_char_p()
rc = lib.kernels_cache_path(ctypes.byref(p), None, None)
print(p.value.decode() if rc == 0 else "error: " + lib.kernels_error_last().decode(), end="")
"""

HUB = "from huggingface_hub import constants; print(constants.HF_HUB_CACHE, end='')"

ROOT = pwd.getpwuid(0).pw_name

CASES = [
    {"HOME": "/home/u"},
    {},
    {"HOME": ""},
    {"HOME": "/"},
    {"HOME": "/home/u/", "HF_HOME": "~/hf"},
    {"HOME": "/home/u", "HF_HOME": "/hf/"},
    {"HOME": "/home/u", "HF_HUB_CACHE": "~"},
    {"HOME": "/home/u", "HF_HUB_CACHE": "~/"},
    {"HOME": "/home/u", "HF_HUB_CACHE": f"~{ROOT}/c"},
    {"HOME": "/home/u", "HF_HUB_CACHE": "~no-such-user-here/c"},
    {"HOME": "/home/u", "HF_HUB_CACHE": "$HOME/c/${A}/$A_/$NOPE/${}/$"},
    {"HOME": "/home/u", "HF_HUB_CACHE": "rel/x"},
    {"HOME": "/home/u", "HUGGINGFACE_HUB_CACHE": "~/legacy"},
    {"HOME": "/home/u", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HUB_CACHE": "/new"},
    {"HOME": "/home/u", "XDG_CACHE_HOME": "~/xdg/"},
    {"HOME": "/home/u", "XDG_CACHE_HOME": "$E", "E": ""},
    {"HOME": "/home/u", "HF_HOME": "${E}", "E": ""},
    {"HOME": "/home/u", "XDG_CACHE_HOME": "/x", "HF_HOME": "/h"},
    # staging mode moves huggingface_hub's legacy constant only, after HF_HUB_CACHE is read: not the cache
    {"HOME": "/home/u", "HUGGINGFACE_CO_STAGING": "1"},
]


def run(code, env, *args):
    base = {"PATH": os.environ["PATH"], "A": "1"}
    out = subprocess.run([sys.executable, "-c", code, *args], env={**base, **env}, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.skipif(not LIBRARY, reason="KERNELS_LIBRARY not set")
@pytest.mark.parametrize("env", CASES, ids=[" ".join(f"{k}={v}" for k, v in c.items()) or "none" for c in CASES])
def test_cache_folder_is_huggingface_hubs(env, tmp_path):
    hub = run(HUB, env)
    ours = run(LIBKERNELS, env, LIBRARY)
    # An empty result is the working folder to huggingface_hub ("" joined); "." to libkernels.
    assert ours == (hub or "."), env

"""`pip install bindings/python` as a Python user gets it: scikit-build-core
runs the project's CMake and the wheel bundles libkernels.so.1 in the
package. Installed into a fresh virtualenv, with no libkernels anywhere else
the process could find (no KERNELS_LIBRARY, no LD_LIBRARY_PATH, none in the
loader's search), it imports and fetches a kernel from the local Hub. The
wheel's metadata is what a package index wants. Under ctest the wheel is
the one scripts/build-wheel.sh built from the sdist (the same pyproject.toml
with the source folder moved), shared with test_wheel_manylinux.py."""
import ctypes.util
import email.parser
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path

from test_cli import CPU211, SYSTEM_ENV, publish_kernel

ROOT = Path(__file__).resolve().parents[2]
BINDING = ROOT / "bindings" / "python"


def build_wheel(out, build_dir):
    # Under ctest the fixture python_wheel has built it once for every wheel test (scripts/build-wheel.sh:
    # from the sdist, which holds bindings/python's pyproject.toml with the source folder moved).
    shared = os.environ.get("KERNELS_WHEEL_DIR")
    if shared:
        wheels = list((Path(shared) / "plain").glob("*.whl"))
        assert len(wheels) == 1, f"{shared}/plain: {wheels}; did the fixture test python_wheel_build pass?"
        return wheels[0]
    # No index, no isolation: scikit-build-core comes from tests/requirements.txt, CMake from the system.
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
                        "--config-settings", f"build-dir={build_dir}", "-w", str(out), str(BINDING)],
                       capture_output=True, text=True, timeout=900, env=dict(os.environ, PIP_NO_CACHE_DIR="1"))
    assert p.returncode == 0, p.stdout + p.stderr
    wheels = list(out.glob("*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def test_wheel_bundles_libkernels_and_fetches(hub, tmp_path):
    assert ctypes.util.find_library("kernels") is None, "a libkernels is installed on this machine: the test needs none"
    wheel = build_wheel(tmp_path / "dist", tmp_path / "build")
    assert wheel.name == f"libkernels-1.0.0-py3-none-linux_{platform.machine()}.whl"
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        meta = email.parser.Parser().parsestr(z.read("libkernels-1.0.0.dist-info/METADATA").decode())
    assert "libkernels/lib/libkernels.so.1" in names and "libkernels/_lib.py" in names, sorted(names)
    assert not [n for n in names if n.endswith(".so") or "include/" in n or "cmake/" in n], sorted(names)
    assert meta["Name"] == "libkernels" and meta["Version"] == "1.0.0" and meta["Requires-Python"] == ">=3.9"
    assert meta["License-Expression"] == "Apache-2.0" and "libkernels-1.0.0.dist-info/licenses/LICENSE" in names
    assert meta["Summary"] and meta["Description-Content-Type"] == "text/markdown" and meta.get_payload().strip()
    assert any(c.startswith("Operating System :: POSIX :: Linux") for c in meta.get_all("Classifier"))

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
    py = venv / "bin" / "python"
    p = subprocess.run([str(py), "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
                        str(wheel)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr

    commit, _ = publish_kernel(hub, tmp_path, variants=(CPU211,))
    env = {k: v for k, v in os.environ.items() if k not in ("KERNELS_LIBRARY", "LD_LIBRARY_PATH", "PYTHONPATH")}
    env.update(SYSTEM_ENV, HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(tmp_path / "cache"), HF_HUB_OFFLINE="")
    code = ("import libkernels, libkernels._lib as L\n"
            "print(L.find_library())\n"
            "k = libkernels.get('org/k', 'v1')\n"
            "print(k.variant, k.commit, k.function('kernel_answer')())\n")
    p = subprocess.run([str(py), "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    where, fetched = p.stdout.splitlines()
    assert Path(where).resolve().is_relative_to(venv.resolve()) and where.endswith("libkernels/lib/libkernels.so.1")
    # publish_kernel's first variant answers 100 (answer 1 * 100 + its index 0).
    assert fetched.split() == [CPU211, commit, "100"], fetched

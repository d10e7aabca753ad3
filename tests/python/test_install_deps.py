"""scripts/install-deps.sh: Python packages go into a virtual environment of
its own, never the interpreter that runs it; two runs at once on one machine
both succeed (the second waits for the first, then finds nothing to do); a
run with nothing new to install is quick and says so. The pins here are a
tiny local wheel, so no index is asked; the Debian packages are left alone
(KERNELS_NO_APT=1)."""
import base64
import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-deps.sh"


def tiny_wheel(folder, name="kernels_tiny_dep", version="1.0"):
    """A pure-Python wheel written by hand (a zip with METADATA, WHEEL, RECORD)."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": b"ANSWER = 42\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = Path(folder) / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for p, data in files.items():
            z.writestr(p, data)
    return path


def env_for(tmp_path):
    req = tmp_path / "requirements.txt"
    if not req.exists():
        req.write_text(f"kernels_tiny_dep @ {tiny_wheel(tmp_path).as_uri()}\n")
    return dict(os.environ, KERNELS_VENV=str(tmp_path / "venv"), KERNELS_REQUIREMENTS=str(req), KERNELS_NO_APT="1",
                PIP_NO_INDEX="1", PIP_NO_INPUT="1")


def test_two_runs_at_once(tmp_path):
    env = env_for(tmp_path)
    runs = [subprocess.Popen(["bash", str(SCRIPT)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0] for p in runs]
    assert [p.returncode for p in runs] == [0, 0], outs
    installed = [o for o in outs if "pip install" in o]
    waited = [o for o in outs if "another install-deps.sh is installing" in o]
    assert len(installed) == 1 and len(waited) == 1, outs
    assert "up to date" in waited[0], waited[0]
    # The package is in the environment, not in the interpreter that ran the script.
    venv_python = tmp_path / "venv" / "bin" / "python3"
    out = subprocess.run([str(venv_python), "-c", "import kernels_tiny_dep, sys; print(kernels_tiny_dep.ANSWER, sys.prefix)"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["42", str(tmp_path / "venv")]
    assert subprocess.run([sys.executable, "-c", "import kernels_tiny_dep"], capture_output=True).returncode != 0


def test_nothing_to_do_is_quick_and_new_pins_install(tmp_path):
    env = env_for(tmp_path)
    subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True, timeout=600)
    out = subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True, text=True).stdout
    assert "up to date" in out and "pip install" not in out, out
    # Changed pins run pip again.
    req = Path(env["KERNELS_REQUIREMENTS"])
    req.write_text(req.read_text() + "# changed\n")
    out = subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True, text=True).stdout
    assert "pip install" in out, out
    # A broken environment (its interpreter gone) is made again.
    (tmp_path / "venv" / "bin" / "python3").unlink()
    out = subprocess.run(["bash", str(SCRIPT)], env=env, check=True, capture_output=True, text=True).stdout
    assert "creating the virtual environment" in out and "pip install" in out, out

"""`kernels to-wheel`: one wheel per variant that pip installs and Python
imports, with RECORD hashes checked here with hashlib."""

import base64
import csv
import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile

from test_cli import ARCH, CPU29, CPU211, CU130, UNIVERSAL, Cli, closed_port_endpoint, publish_kernel


def expected_name(pkg, version, variant):
    if variant == UNIVERSAL:
        return f"{pkg}-{version}-py39-none-any.whl"
    torch, abi, backend = variant.split("-")[:3]
    backend = backend[2:] if backend.startswith("cu") else backend
    return f"{pkg}-{version}+{torch}cu{backend}{abi}-cp39-abi3-manylinux_2_28_{ARCH}.whl"


def check_record(path):
    """Every file of the wheel is in RECORD with its sha256 and size, and nothing else."""
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        names = z.namelist()
        record_name = [n for n in names if n.endswith(".dist-info/RECORD")]
        assert len(record_name) == 1
        rows = list(csv.reader(io.StringIO(z.read(record_name[0]).decode())))
        listed = {r[0]: r for r in rows}
        assert set(listed) == set(names) and len(rows) == len(names)
        for name in names:
            if name == record_name[0]:
                assert listed[name][1:] == ["", ""]
                continue
            data = z.read(name)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert listed[name][1] == f"sha256={digest}", name
            assert listed[name][2] == str(len(data)), name
        return names, z


def wheel_text(path, suffix):
    with zipfile.ZipFile(path) as z:
        (n,) = [n for n in z.namelist() if n.endswith(suffix)]
        return z.read(n).decode()


def pip_install_and_import(path, target, pkg):
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                    str(path)], check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(target)!r}); import {pkg}; "
                          f"print({pkg}.__file__); print({pkg}.answer())"],
                         check=True, capture_output=True, text=True).stdout.split()
    assert out[0].startswith(str(target))
    return int(out[1])


def test_to_wheel_installs_and_imports(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path, universal=True, tags=("v1.0.0",))
    cli = Cli(hub, tmp_path / "cache")
    out = tmp_path / "wheels"
    j = cli.json("to-wheel", "org/k", "1.0.0", "--out", str(out))
    assert j["commit"] == commit and j["version"] == "1.0.0"
    by = {w["variant"]: w for w in j["wheels"]}
    assert set(by) == {CPU211, CPU29, CU130, UNIVERSAL}
    for v, w in by.items():
        assert w["filename"] == expected_name("k", "1.0.0", v)
        assert os.path.isfile(w["path"]) and os.path.dirname(w["path"]) == str(out)
        names, _ = check_record(w["path"])
        assert "k/__init__.py" in names and not any(n.startswith("k/k/") for n in names)
        assert not any(n.endswith(".pyc") or "__pycache__" in n for n in names)
    assert sorted(os.listdir(out)) == sorted(w["filename"] for w in by.values())

    arch = by[CPU211]["path"]
    dist = "k-1.0.0+torch211cucpucxx11.dist-info"
    wheel = wheel_text(arch, f"{dist}/WHEEL")
    assert "Wheel-Version: 1.0\n" in wheel and "Root-Is-Purelib: false\n" in wheel
    assert f"Tag: cp39-abi3-manylinux_2_28_{ARCH}\n" in wheel
    meta = wheel_text(arch, f"{dist}/METADATA")
    for line in ("Metadata-Version: 2.1", "Name: k", "Version: 1.0.0+torch211cucpucxx11", "Requires-Python: >=3.9",
                 "Requires-Dist: torch==2.11.*"):
        assert line + "\n" in meta
    assert "Requires-Dist: torch\n" in wheel_text(by[UNIVERSAL]["path"], "k-1.0.0.dist-info/METADATA")
    assert "Root-Is-Purelib: true\n" in wheel_text(by[UNIVERSAL]["path"], "k-1.0.0.dist-info/WHEEL")

    # The native wheel's package loads its own shared object; the noarch one is pure Python.
    assert pip_install_and_import(arch, tmp_path / "site-arch", "k") == 100
    assert pip_install_and_import(by[UNIVERSAL]["path"], tmp_path / "site-any", "k") == 199

    # Same variant, same bytes.
    first = open(arch, "rb").read()
    cli.run("to-wheel", "org/k", "v1.0.0", "-o", str(out), "--variant", CPU211, check=0)
    assert open(arch, "rb").read() == first
    # --variant given twice: both (as bundle's), not the last alone.
    j = cli.json("to-wheel", "org/k", "1.0.0", "-o", str(tmp_path / "two"), "--variant", CPU211, "--variant",
                 f"{CPU29},{UNIVERSAL}")
    assert sorted(w["variant"] for w in j["wheels"]) == sorted([CPU211, CPU29, UNIVERSAL])


def test_to_wheel_seed_layout_and_tags(hub, tmp_path):
    publish_kernel(hub, tmp_path, repo="org/my-kernel", variants=(CPU211,), layout="seed", tags=("v0.2.0",))
    cli = Cli(hub, tmp_path / "cache")
    p = cli.run("to-wheel", "org/my-kernel", "0.2.0", "--out", str(tmp_path / "w"), "--python-version", "3.10",
                "--manylinux-version", "2.34", check=0)
    (path,) = p.stdout.split()
    assert os.path.basename(path) == f"my_kernel-0.2.0+torch211cucpucxx11-cp310-abi3-manylinux_2_34_{ARCH}.whl"
    names, _ = check_record(path)
    assert "my_kernel/__init__.py" in names and "my_kernel/_ops.py" in names
    assert "Requires-Python: >=3.10\n" in wheel_text(path, "/METADATA")
    assert pip_install_and_import(path, tmp_path / "site", "my_kernel") == 100


def test_to_wheel_bad_arguments(hub, tmp_path):
    publish_kernel(hub, tmp_path, tags=("v1.0.0",))
    cli = Cli(hub, tmp_path / "cache")
    out = str(tmp_path / "w")
    assert cli.run("to-wheel", "org/k", check=2).returncode == 2
    assert "version" in cli.run("to-wheel", "org/k", "1.0-beta", "-o", out, check=2).stderr
    assert cli.run("to-wheel", "org/k", "1.0.0", "--python-version", "three", "-o", out, check=2).returncode == 2
    assert cli.run("to-wheel", "org/k", "1.0.0", "--manylinux-version", "2", "-o", out, check=2).returncode == 2
    assert cli.run("to-wheel", "org/k", "9.9.9", "-o", out, check=1).returncode == 1
    p = cli.run("to-wheel", "org/k", "1.0.0", "--variant", "torch-nope", "-o", out, "--json", check=1)
    assert "no variant" in p.stderr and "torch-nope" in json.loads(p.stdout)["error"]["message"]
    # one name of the list that names no variant (a typo) is refused too, not left out
    p = cli.run("to-wheel", "org/k", "1.0.0", "--variant", f"{CPU211},torch-nope", "-o", out, check=1)
    assert "torch-nope" in p.stderr
    assert not os.path.exists(out) or os.listdir(out) == []


def test_to_wheel_hub_down(tmp_path):
    cli = Cli(None, tmp_path / "cache", endpoint=closed_port_endpoint())
    p = cli.run("to-wheel", "org/k", "1.0.0", "-o", str(tmp_path / "w"), "--retries", "0", "--json", check=1)
    assert "cannot be reached" in p.stderr and json.loads(p.stdout)["error"]["code"] < 0

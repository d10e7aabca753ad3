"""The PEP 440 table agrees with `packaging`, and the C code agrees with the table.

1. Re-running tests/data/pep440/generate.py with the installed (pinned)
   packaging reproduces the committed cases.tsv byte for byte: every expected
   answer in it is packaging's.
2. The C test program (tests/test_specifier.c) run over that regenerated
   table reports no disagreement, so lib/util/specifier.c answers like packaging
   on every case.
3. The same over tables built with other random seeds: thousands of fresh
   near-valid versions and specifiers the committed table does not hold.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("KERNELS_SOURCE_DIR", Path(__file__).resolve().parents[2]))
GENERATOR = SOURCE / "tests" / "data" / "pep440" / "generate.py"
TABLE = SOURCE / "tests" / "data" / "pep440" / "cases.tsv"


def pinned_packaging():
    text = (SOURCE / "tests" / "requirements.txt").read_text()
    m = re.search(r"^\s*packaging\s*==\s*([^\s#;]+)", text, re.M)
    assert m, "tests/requirements.txt must pin packaging==X"
    return m.group(1)


def generate(out, seed=None):
    cmd = [sys.executable, str(GENERATOR), "-o", str(out)]
    if seed is not None:
        cmd += ["--seed", str(seed)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    m = re.search(r"wrote (\d+) cases", run.stdout)
    assert m, run.stdout
    return int(m.group(1))


def run_c_side(table):
    binary_dir = os.environ.get("KERNELS_BINARY_DIR")
    assert binary_dir, "KERNELS_BINARY_DIR is not set: run this through ctest"
    binary = Path(binary_dir) / "tests" / "test_specifier"
    assert binary.exists(), f"{binary} is missing: build the test_specifier target first"
    env = dict(os.environ, KERNELS_PEP440_TABLE=str(table))
    run = subprocess.run([str(binary)], capture_output=True, text=True, env=env, timeout=300)
    output = run.stdout + run.stderr
    m = re.search(r"PEP 440 table .*?: (\d+) cases .*?, (\d+) disagree with packaging", output)
    assert m, output
    return run.returncode, int(m.group(1)), int(m.group(2)), output


def test_installed_packaging_is_the_pinned_one():
    import packaging

    assert packaging.__version__ == pinned_packaging(), (
        f"packaging {packaging.__version__} installed, {pinned_packaging()} pinned: "
        "python3 -m pip install -r tests/requirements.txt"
    )


def test_committed_table_is_what_packaging_answers(tmp_path):
    fresh = tmp_path / "cases.tsv"
    count = generate(fresh)
    assert count > 1000
    committed = TABLE.read_bytes()
    regenerated = fresh.read_bytes()
    if committed != regenerated:
        old = committed.decode().splitlines()
        new = regenerated.decode().splitlines()
        diff = [f"-{a}\n+{b}" for a, b in zip(old, new) if a != b][:10]
        pytest.fail(
            "tests/data/pep440/cases.tsv differs from what packaging answers now "
            f"({len(old)} vs {len(new)} lines); re-run generate.py. First differences:\n" + "\n".join(diff)
        )


def test_c_side_agrees_on_every_case(tmp_path):
    fresh = tmp_path / "cases.tsv"
    count = generate(fresh)
    rc, cases, disagree, output = run_c_side(fresh)
    assert cases == count, output
    assert disagree == 0, output
    assert rc == 0, output


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_c_side_agrees_on_other_random_cases(tmp_path, seed):
    table = tmp_path / f"cases-{seed}.tsv"
    count = generate(table, seed)
    rc, cases, disagree, output = run_c_side(table)
    assert cases == count, output
    assert disagree == 0, output
    assert rc == 0, output

"""scripts/test.sh: the sanitizer stage runs even when the main stage fails,
and the script's exit status says whether either failed. Run on a copy of
the script with cmake and ctest replaced by stubs that log their calls (no
build), so the test costs a fraction of a second."""

import os
import shutil
import stat
import subprocess

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

STUB = """#!/bin/sh
call="$(basename "$0") $*"
echo "$(basename "$0") $*" >> "$STUB_LOG"
while [ $# -gt 0 ]; do [ "$1" = -B ] && mkdir -p "$2"; shift; done
case "$call" in
  "ctest "*"-L"*) exit "${ASAN_CTEST_RC:-0}" ;;
  "ctest "*) exit "${MAIN_CTEST_RC:-0}" ;;
esac
exit 0
"""


def make_tree(tmp_path):
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(os.path.join(SOURCE_DIR, "scripts", "test.sh"), root / "scripts" / "test.sh")
    (root / "scripts" / "install-deps.sh").write_text("true\n")
    (root / "scripts" / "venv.sh").write_text("kernels_python=/usr/bin/python3\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("cmake", "ctest"):
        p = bin_dir / name
        p.write_text(STUB)
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    return root, bin_dir


def run(tmp_path, main_rc, asan_rc):
    root, bin_dir = make_tree(tmp_path)
    log = tmp_path / "calls.log"
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", STUB_LOG=str(log), MAIN_CTEST_RC=str(main_rc),
               ASAN_CTEST_RC=str(asan_rc))
    p = subprocess.run(["bash", str(root / "scripts" / "test.sh")], env=env, capture_output=True, text=True,
                       timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return p, calls


def ctest_calls(calls):
    main = [c for c in calls if c.startswith("ctest") and "-L" not in c]
    asan = [c for c in calls if c.startswith("ctest") and "-L" in c]
    return main, asan


def test_sanitizer_stage_runs_after_a_failed_main_stage(tmp_path):
    p, calls = run(tmp_path, main_rc=8, asan_rc=0)
    main, asan = ctest_calls(calls)
    assert len(main) == 1 and len(asan) == 1, calls
    assert any("build-asan" in c and "KERNELS_SANITIZE=ON" in c for c in calls), calls
    assert p.returncode != 0
    assert "main stage: FAILED" in p.stdout and "sanitizer stage: passed" in p.stdout


def test_a_failed_sanitizer_stage_fails_the_script(tmp_path):
    p, calls = run(tmp_path, main_rc=0, asan_rc=1)
    assert p.returncode != 0
    assert "main stage: passed" in p.stdout and "sanitizer stage: FAILED" in p.stdout


def test_both_passing_exits_0(tmp_path):
    p, calls = run(tmp_path, main_rc=0, asan_rc=0)
    main, asan = ctest_calls(calls)
    assert p.returncode == 0 and len(main) == 1 and len(asan) == 1, p.stdout + p.stderr

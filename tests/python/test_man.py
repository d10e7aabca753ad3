"""The man pages (scripts/gen-man.py): one per exported function, each
with the doc comment its header gives it, rendered by man(1) without a
warning; the header says since when and how it behaves across threads.
(That `man kernels_get` works from an install prefix and from the Debian
package is checked by tests/install/check_install.sh and
tests/packaging/check_debian.sh.)"""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = ROOT / "scripts" / "gen-man.py"


def exports():
    """{exported name: the release of its version node ("KERNELS_1.1": "1.1")}."""
    names, release = {}, None
    for ln in (ROOT / "lib" / "kernels.exports").read_text().splitlines():
        m = re.match(r"\[KERNELS_(\d+\.\d+)\]", ln)
        release = m.group(1) if m else release
        if ln.startswith("kernels_"):
            names[ln.strip()] = release
    return names


def test_every_public_function_is_documented():
    p = subprocess.run([sys.executable, str(GEN), "--check", str(ROOT / "include")], capture_output=True, text=True)
    assert p.returncode == 0, "functions without a doc comment in their header:\n" + p.stdout + p.stderr


def test_every_header_says_since_when_and_threads():
    for header in sorted((ROOT / "include" / "kernels").glob("*.h")):
        top = re.match(r"\s*/\*(.*?)\*/", header.read_text(), re.S)
        assert top and "since 1.0" in top.group(1) and "thread" in top.group(1), \
            f"{header.name}: its top comment must say its functions' release (since 1.0) and thread-safety"


def test_a_page_per_export_that_man_renders_cleanly(tmp_path):
    out = tmp_path / "man3"
    subprocess.run([sys.executable, str(GEN), str(ROOT / "include"), str(out), "1.0.0"], check=True)
    pages = sorted(p.stem for p in out.glob("*.3"))
    released = exports()
    assert pages == sorted(released)
    for name in pages:
        r = subprocess.run(["man", "--warnings", "-P", "cat", "-l", str(out / f"{name}.3")], capture_output=True,
                           text=True, env={"MANWIDTH": "100", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"})
        assert r.returncode == 0 and not r.stderr, f"{name}.3: {r.stderr}"
        # the header's @since (1.0 unless it says) agrees with the export's version node
        since = f"Since libkernels {released[name]}."
        assert f"{name}(" in r.stdout and "DESCRIPTION" in r.stdout and since in r.stdout, (name, since)

"""The committed variant anchor (tests/data/variants/anchor.json) is exactly
what the pinned Python `kernels` resolver answers: re-run the generator and
compare. tests/test_variant.c holds libkernels to the same table."""
import subprocess
import sys
from pathlib import Path

GENERATOR = Path(__file__).resolve().parents[1] / "data" / "variants" / "generate.py"


def test_anchor_matches_python_kernels():
    import kernels  # noqa: F401  (pinned in tests/requirements.txt)

    r = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "matches" in r.stdout


def test_anchor_uses_pinned_kernels():
    import json

    import kernels

    doc = json.loads(GENERATOR.with_name("anchor.json").read_text(encoding="utf-8"))
    assert doc["kernels_version"] == kernels.__version__ == "0.17.2"
    assert len(doc["cases"]) >= 40

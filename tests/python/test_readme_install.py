"""The README's install and uninstall commands, as written (only the build
folder and the prefix moved into a scratch folder): a release build of the
library and the CLI, installed; the CLI runs from the prefix and prints what
the README shows; every path of the "where things go" table is there; the
uninstall command leaves no file behind."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def installing_section():
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Installing\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    table = re.findall(r"^\| (`[^|]*) \| [^|]* \|$", section, re.M)
    assert len(blocks) == 2 and table, "README: the Installing section changed; update this test"
    return blocks[0], blocks[1], [p.strip("`") for cell in table for p in cell.split("`, `")]


def run(block, build, prefix):
    env = dict(os.environ)
    env.pop("LD_LIBRARY_PATH", None)
    outputs = []
    for line in block.replace("\\\n", " ").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        line = line.replace("build-release", str(build)).replace("$HOME/.local", str(prefix))
        p = subprocess.run(["bash", "-c", line], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
        assert p.returncode == 0, f"{line}\n{p.stdout}\n{p.stderr}"
        outputs.append(p.stdout)
    return outputs


def test_install_and_uninstall_as_written(tmp_path):
    install, uninstall, paths = installing_section()
    build, prefix = tmp_path / "build-release", tmp_path / "prefix"
    outputs = run(install, build, prefix)
    shown = [ln[2:] for ln in install.splitlines() if ln.startswith("# ")]
    assert outputs[-1].strip() == shown[-1], (outputs[-1], shown)
    for p in paths:
        assert (prefix / p.rstrip("/")).exists(), p
    # Nothing else was built: no tests, examples or img2gray variants.
    assert not (build / "tests").exists() and not (build / "examples").exists() and not (build / "variants").exists()
    run(uninstall, build, prefix)
    left = [str(p) for p in prefix.rglob("*") if not p.is_dir()]
    assert not left, left

"""The README's plain C program, as written: its `app.c` block compiled with
its `cc` line (with the build folder of this test run for `build/`) and run
as it says, against a cache that libkernels filled from the local Hub with
the img2gray variants this build made. Its printed line must be the one the
README shows."""
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KERNELS_BINARY_DIR", ROOT / "build"))


def readme_blocks():
    text = (ROOT / "README.md").read_text()
    c = re.search(r"This is a whole program, `app.c`:\n\n```c\n(.*?)```", text, re.S)
    sh = re.search(r"build and run it from the\nrepository's root:\n\n```sh\n(.*?)```", text, re.S)
    assert c and sh, "README: the plain C program or its build-and-run block moved; update this test"
    return c.group(1), sh.group(1)


def test_readme_c_program(hub, tmp_path):
    program, commands = readme_blocks()
    lines = [ln for ln in commands.replace("\\\n", " ").splitlines() if ln.strip()]
    build_cmd, run_cmd, expected = lines[0], lines[1], lines[2]
    assert build_cmd.startswith("cc app.c") and run_cmd.endswith("./app") and expected.startswith("# ")

    subprocess.run([sys.executable, str(ROOT / "scripts" / "publish-img2gray.py"), "--root", str(hub.root),
                    "--build", str(BUILD / "variants" / "img2gray" / "build")], check=True, capture_output=True)
    cache = tmp_path / "cache"
    env = dict(os.environ, HF_ENDPOINT=hub.endpoint, HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="")
    # Fill the cache the way the first command does: a tvm-ffi host fetching it.
    fill = subprocess.run([str(BUILD / "examples" / "kernels_img2gray_tvm_ffi"), str(ROOT / "examples/data/testcard.png"),
                           str(tmp_path / "gray.png")], env=env, capture_output=True, text=True)
    assert fill.returncode == 0, fill.stdout + fill.stderr

    (tmp_path / "app.c").write_text(program)
    build_cmd = (build_cmd.replace("-Iinclude", f"-I{ROOT / 'include'}").replace("$PWD/build/lib", f"{BUILD}/lib")
                 .replace("-Lbuild/lib", f"-L{BUILD}/lib").replace(".venv/bin/python3", sys.executable))
    built = subprocess.run(["bash", "-c", build_cmd], cwd=tmp_path, capture_output=True, text=True)
    assert built.returncode == 0, build_cmd + "\n" + built.stderr
    run_cmd = run_cmd.replace("build/demo/cache", str(cache))
    ran = subprocess.run(["bash", "-c", run_cmd], cwd=tmp_path, capture_output=True, text=True,
                         env=dict(os.environ, HF_HUB_OFFLINE="", HF_ENDPOINT="http://127.0.0.1:9"))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert ran.stdout.strip() == expected[2:].strip()


def test_readme_stage_table_names_every_file():
    """The table of stages in docs/architecture.md (where the README links
    for it), and its paragraph on lib/util/, name each source file of lib/
    once, and no file that is gone."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("Data flows one way")
    table = text[start:text.index("\n\n", text.index("|", start))]
    util = re.search(r"Every stage stands on `lib/util/`.*?\n\n", text, re.S)
    assert util, "docs/architecture.md: the paragraph on lib/util/ moved; update this test"
    file_column = [row.split("|")[2] for row in table.splitlines() if row.startswith("| ")]
    staged = [f for cell in file_column for f in re.findall(r"`([\w/]+\.c)`", cell)]
    assert len(staged) == len(set(staged)), "a file is named by two stages"
    named = staged + ["util/" + f for f in re.findall(r"`(\w+\.c)`", util.group(0)) if f != "error.c"]
    lib = ROOT / "lib"
    files = sorted(str(p.relative_to(lib)) for p in list(lib.glob("*.c")) + list(lib.glob("util/*.c")))
    assert sorted(set(named)) == files, (sorted(set(files) - set(named)), sorted(set(named) - set(files)))
    assert "`sigstore/`" in table and (lib / "sigstore").is_dir()


def test_readme_is_short_and_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move reference text into docs/"
    first = next(i for i, ln in enumerate(lines) if ln.startswith("bash scripts/demo.sh"))
    assert first < 30 and lines[first + 1].startswith("bash scripts/test.sh"), "the two commands moved down"
    links = re.findall(r"\]\(((?:docs/)[^)#]+|CHANGELOG\.md)\)", text)
    assert links and all((ROOT / link).is_file() for link in links), [l for l in links if not (ROOT / l).is_file()]


def test_every_relative_link_in_docs_exists():
    """A link in docs/*.md to a file of the project points at one that is
    there, taken from the page's own folder as a Markdown reader takes it."""
    broken = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.name}: {target}")
    assert broken == []

"""The bash, zsh and fish completions (bindings/cli/completions) offer what
the tool itself says it takes: every command of `libkernels --help`, the
cache subcommands, and for each command every long option its --help lists
(its own and the global ones), each shell asked the way it completes
interactively. Installed where each shell looks for them."""
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from test_cli import BINARY_DIR, CLI, COMMANDS

ROOT = Path(__file__).resolve().parents[2]
COMPLETIONS = ROOT / "bindings" / "cli" / "completions"
ZSH_DRIVER = Path(__file__).resolve().parent / "complete_zsh.zsh"


def help_options(*command):
    """(command options, global options) that `libkernels COMMAND --help` lists: long names."""
    text = subprocess.run([CLI, *command, "--help"], capture_output=True, text=True, check=True).stdout
    own, rest = text.split("\nglobal options:\n", 1) if "\nglobal options:\n" in text else ("", text)
    own = own.split("\noptions:\n", 1)[1] if "\noptions:\n" in own else ""
    longs = lambda t: set(re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z0-9-]*)", t, re.M))
    return longs(own), longs(rest.split("\nexample", 1)[0].split("\nexit status", 1)[0])


def top_commands():
    text = subprocess.run([CLI, "--help"], capture_output=True, text=True, check=True).stdout
    block = text.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return {ln.split()[0] for ln in block.splitlines() if ln.strip()}


def expected_contexts():
    """(words typed, what must be offered) for each place a completion is asked."""
    cases = [(["libkernels", ""], top_commands()), (["libkernels", "cache", ""], {"ls", "rm"}),
             (["libkernels", "--backend", ""], {"cpu", "cuda", "rocm"})]
    for c in COMMANDS:
        own, glob = help_options(*c.split())
        cases.append((["libkernels", *c.split(), "--"], own | glob | {"--help"}))
    return cases


def bash_offers(words):
    quoted = " ".join(shlex.quote(w) for w in words)
    script = (f"source {COMPLETIONS / 'libkernels.bash'}\n"
              f"COMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}\n"
              "_libkernels; printf '%s\\n' \"${COMPREPLY[@]}\"\n")
    out = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def zsh_offers(words, fpath):
    out = subprocess.run(["zsh", "-f", str(ZSH_DRIVER), str(fpath), " ".join(words)], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return set(out.split())


def fish_offers(words):
    out = subprocess.run(["fish", "--no-config", "-c",
                          f"source {COMPLETIONS / 'libkernels.fish'}; complete -C {shlex.quote(' '.join(words))}"],
                         capture_output=True, text=True, check=True).stdout
    return {ln.split("\t")[0] for ln in out.splitlines()}


def check(offers):
    wrong = []
    for words, want in expected_contexts():
        got = offers(words)
        if not want <= got:
            wrong.append((" ".join(words), sorted(want - got)))
    assert not wrong, wrong


def test_bash():
    check(bash_offers)
    # Folders for a project DIR, files for load's lock file; a value, not options, after --cache-dir.
    assert bash_offers(["libkernels", "--cache-dir", "/tm"]) == {"/tmp"}


def test_zsh(tmp_path):
    assert shutil.which("zsh"), "zsh is needed for its completion test (scripts/install-deps.sh installs it)"
    shutil.copy(COMPLETIONS / "_libkernels", tmp_path / "_libkernels")
    check(lambda words: zsh_offers(words, tmp_path))


def test_fish():
    assert shutil.which("fish"), "fish is needed for its completion test (scripts/install-deps.sh installs it)"
    check(fish_offers)


def test_installed_where_shells_look(tmp_path):
    subprocess.run(["cmake", "--install", BINARY_DIR, "--prefix", str(tmp_path), "--component", "Unspecified"],
                   check=True, capture_output=True)
    share = tmp_path / "share"
    for path, source in ((share / "bash-completion" / "completions" / "libkernels", "libkernels.bash"),
                         (share / "zsh" / "site-functions" / "_libkernels", "_libkernels"),
                         (share / "fish" / "vendor_completions.d" / "libkernels.fish", "libkernels.fish")):
        assert path.read_bytes() == (COMPLETIONS / source).read_bytes(), path

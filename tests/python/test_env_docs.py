"""Every environment variable the library and its bindings read is
documented: a row of docs/environment.md, and for what the command-line tool
reads (lib/ and bindings/cli), its man page's ENVIRONMENT section, which
--help points at. The names are found in the source, so a new variable
fails here until it is documented."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CLI = Path(os.environ.get("KERNELS_BINARY_DIR") or ROOT / "build") / "bindings" / "cli" / "libkernels"

# Upper-case string literals of lib/ that name no variable (a backend, a
# CPU, an HTTP method, memo.c's first letters, ...). A new literal that is
# no variable goes here.
NOT_VARIABLES = {"CUDA", "TPU", "XPU", "NPU", "CPU", "CANN", "AMD64", "HEAD", "GET", "NULL", "CHKLPTVX", "SHA256"}


def header_names():
    """The KERNELS_* names the public headers define (struct versions,
    defaults): no variables. A name only a comment mentions is not theirs."""
    names = set()
    for header in (ROOT / "include").rglob("*.h"):
        code = re.sub(r"/\*.*?\*/|//[^\n]*", " ", header.read_text(), flags=re.S)
        names |= set(re.findall(r"\b(KERNELS_[A-Z0-9_]+)\b", code))
    return names


def variables(bindings):
    """The variables lib/ names (each upper-case string literal outside a
    comment, sigstore's algorithm names aside, and each getenv() of a
    lower-case one) and those the bindings under `bindings` read."""
    found = set()
    for path in (ROOT / "lib").rglob("*.c"):
        if "sigstore" in path.parts:
            continue
        code = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
        found |= set(re.findall(r'"([A-Z][A-Z0-9_]*[A-Z0-9])"', code))
        found |= set(re.findall(r'getenv\("([A-Za-z_][A-Za-z0-9_]*)"\)', code))
    for path in (ROOT / "bindings" / bindings).rglob("*"):
        if path.suffix in (".py", ".c"):
            found |= set(re.findall(r'(?:getenv\(|environ\.get\(|environ\[)"([A-Z][A-Z0-9_]*)"', path.read_text()))
    return found - header_names() - NOT_VARIABLES


def test_the_source_is_read_as_expected():
    """The scan finds what config.c and hub.c read through their helpers
    and tables, with and without an underscore."""
    names = variables("cli")
    for n in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_IMPLICIT_TOKEN", "SSL_CERT_DIR", "HOME",
              "PATH", "PYTHONUSERBASE", "http_proxy", "KERNELS_LOG"):
        assert n in names, n
    assert not names & {"KERNELS_OPTIONS_VERSION", "PKIX_ED25519", "HEAD"}


def test_environment_md_lists_every_variable():
    doc = (ROOT / "docs" / "environment.md").read_text()
    missing = sorted(n for n in variables("") if f"`{n}`" not in doc)
    assert missing == [], f"variables libkernels reads that docs/environment.md does not list: {missing}"


def test_the_man_page_lists_every_variable_the_tool_reads():
    man = (ROOT / "bindings" / "cli" / "libkernels.1").read_text()
    section = man[man.index(".SH ENVIRONMENT"):man.index(".SH", man.index(".SH ENVIRONMENT") + 3)]
    missing = sorted(n for n in variables("cli") if not re.search(r"(?<![A-Za-z0-9_])%s(?![A-Za-z0-9_])" % n, section))
    assert missing == [], f"variables the tool reads that libkernels.1's ENVIRONMENT does not name: {missing}"


def test_help_points_at_the_variables():
    text = subprocess.run([str(CLI), "--help"], capture_output=True, text=True, check=True).stdout
    assert "ENVIRONMENT in 'man libkernels'" in text.replace("\n", " ")

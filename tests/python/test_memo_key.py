"""The memo's key follows kernels_options by construction: lib/memo.c's
OPTION_FIELDS lists every field of the struct, in the header's order, each
keyed or skipped with its reason. The build's static assertions catch a
field added and not listed, unless it fits in padding; this catches that
one too, and a skip without a reason."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def _option_members():
    header = (ROOT / "include" / "kernels" / "options.h").read_text()
    body = re.search(r"typedef struct kernels_options \{(.*?)\} kernels_options;", header, re.S)
    assert body, "include/kernels/options.h: the kernels_options struct moved; update this test"
    members = []
    for decl in _strip_comments(body.group(1)).split(";"):
        names = re.findall(r"[*\s](\w+)\s*(?:\[[^]]*\])?\s*$", decl)
        if names:
            members.append(names[-1])
    return members


def _listed():
    memo = (ROOT / "lib" / "memo.c").read_text()
    table = re.search(r"#define OPTION_FIELDS\(KEY_INT, KEY_STR, SKIP\)(.*?)\n\n", memo, re.S)
    assert table, "lib/memo.c: OPTION_FIELDS moved; update this test"
    rows = re.findall(r"\b(KEY_INT|KEY_STR|SKIP)\((\w+)[^)]*\)([^\\\n]*)", table.group(1))
    return rows


def test_every_option_is_keyed_or_skipped_in_order():
    members = _option_members()
    assert "version" in members and "endpoint" in members and len(members) > 20, members
    assert [name for _, name, _ in _listed()] == members


def test_every_skip_says_why():
    for kind, name, rest in _listed():
        if kind == "SKIP":
            assert re.search(r"/\*\s*\S", rest), f"OPTION_FIELDS skips {name} without saying why"

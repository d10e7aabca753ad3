#!/usr/bin/env python3
"""Builds the PEP 440 case table (cases.tsv) that tests/test_specifier.c checks.

Every expected answer is computed here by the `packaging` library, at the
version pinned in tests/requirements.txt; nothing is written by hand except
the inputs. The inputs are the examples of PEP 440 itself, edge cases of
packaging's grammar and range rules, and a seeded random set of near-valid
strings, so the table is the same on every run.

Usage: generate.py [-o OUT] [--seed N]   (default: cases.tsv next to this script, seed 440)

Format: one case per line, fields separated by tabs, '#' lines are comments.
Fields are escaped: backslash as \\\\, tab \\t, newline \\n, carriage return
\\r, other control and non-ASCII bytes (UTF-8) and a space at either end of a
field as \\xHH.

  version   TEXT NORMALIZED IS_PRERELEASE     TEXT parses
  badversion TEXT                             TEXT is not a version
  compare   A B RESULT                        sign of A - B (-1, 0, 1)
  spec      SPEC COUNT PRERELEASES            SPEC parses into COUNT specifiers;
                                              PRERELEASES 1 when it names a pre-release
  badspec   SPEC                              SPEC is malformed
  contains  SPEC VERSION MODE RESULT          SpecifierSet(SPEC).contains(VERSION, prereleases=MODE)
  filter    SPEC MODE N ITEM1..ITEMN MATCHES BEST
            MATCHES: comma-separated indices of the items filter() keeps that
            are versions ('-' for none); BEST: index of the highest of them
            (first of equals), '-' for none
  tags      SPEC N TAG1..TAGN BEST            the seed-era Python `kernels` client's pick among git
                                              tags: names starting with 'v', keyed by Version(name[1:]),
                                              highest that SpecifierSet(SPEC).filter() keeps ('-': none)
  MODE is default (None), true or false.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys

import packaging
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

HERE = os.path.dirname(os.path.abspath(__file__))
REQUIREMENTS = os.path.join(HERE, "..", "..", "requirements.txt")
MODES = {"default": None, "true": True, "false": False}


def pinned_packaging() -> str:
    with open(REQUIREMENTS, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"\s*packaging\s*==\s*([^\s#;]+)", line)
            if m:
                return m.group(1)
    sys.exit(f"generate.py: no 'packaging==X' pin in {REQUIREMENTS}")


def escape(field: str) -> str:
    out = []
    data = field.encode("utf-8")
    for i, b in enumerate(data):
        c = chr(b)
        if c == "\\":
            out.append("\\\\")
        elif c == "\t":
            out.append("\\t")
        elif c == "\n":
            out.append("\\n")
        elif c == "\r":
            out.append("\\r")
        elif b < 0x20 or b >= 0x7F or (c == " " and (i == 0 or i == len(data) - 1)):
            out.append(f"\\x{b:02x}")
        else:
            out.append(c)
    return "".join(out)


def parse_version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def parse_spec(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def sign(a: Version, b: Version) -> int:
    return (a > b) - (a < b)


# ---- inputs -------------------------------------------------------------

# PEP 440's own ordering example (section "Summary of permitted suffixes and
# relative ordering"), in ascending order.
PEP_ORDER = [
    "1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456", "1.0a12",
    "1.0b1.dev456", "1.0b2", "1.0b2.post345.dev456", "1.0b2.post345",
    "1.0rc1.dev456", "1.0rc1", "1.0", "1.0+abc.5", "1.0+abc.7", "1.0+5",
    "1.0.post456.dev34", "1.0.post456", "1.0.15", "1.1.dev1",
]

# PEP 440's normalization section and packaging's grammar edges.
VERSIONS = PEP_ORDER + [
    # case, leading v, whitespace
    "1.0", "1.0.0", "1", "v1.0", "V1.0", "v1.1.2", "1.1RC1", "1.0A1", "1.0ALPHA1", " 1.0 ", "\t1.0\n",
    "\x1f1.0\x0b", "v 1.0", "vv1.0", "v", "",
    # pre-release spellings and separators
    "1.0a1", "1.0alpha1", "1.0b1", "1.0beta1", "1.0c1", "1.0pre1", "1.0preview1", "1.0rc1",
    "1.1.a1", "1.1-a1", "1.1_a1", "1.0a.1", "1.0a-1", "1.0a_1", "1.0a", "1.0-a", "1.0.a", "1.0a.",
    "1.0rc", "1.0c", "1.0pre", "1.0preview", "1.0prev1", "1.0alpha-1", "1.0a1a2", "1.0a1.b2",
    # post-release spellings, implicit post
    "1.2.post2", "1.2-post2", "1.2_post2", "1.2post2", "1.2.post-2", "1.2.post.2", "1.2.post_2",
    "1.2.rev2", "1.2.r2", "1.2-r2", "1.2rev", "1.2r", "1.0-1", "1.0-01", "1.0.post", "1.0--1",
    "1.0-1-1", "1.0_1", "1.0.1-1", "1.0a1-1", "1.0a-post1", "1.0a.post1", "1.0.post1.post2",
    # dev releases
    "1.2.dev2", "1.2-dev2", "1.2_dev2", "1.2dev2", "1.2.dev-2", "1.2.dev", "1.0-dev", "1.0..dev",
    "1.0.post.dev", "1.0.dev1.dev2", "1.0.dev1.a1", "1.0.dev-", "1.0.dev1+abc",
    # local labels
    "1.0+ubuntu-1", "1.0+ubuntu_1", "1.0+ubuntu.1", "1.0+Ubuntu.1", "1.0+01", "1.0+1.0", "1.0+0",
    "1.0+00.0a", "1.0+abc+def", "1.0+Ab_c-D.e", "1.0+", "1.0+abc.", "1.0+.abc", "1.0+abc..1", "1.0+a b",
    # epochs, leading zeros, long and big
    "00!01.002", "1!1.0", "0!1.0", "2012.10", "0.9", "1!", "!1", "1!-1", "1!v1.0", "v1!1.0",
    "1.0.0.0.0.0.0", "123456789012345678901234567890.1", "1.0.post99999999999999999999999",
    "1!99999999999999999999.0a99999999999999999999",
    # not versions
    "1..0", ".1", "1.", "a1.0", "1.0 a1", "1.0.*", "1.*", "1.0a1.*", "main", "latest", "1.0;", "1.0)",
    "\u0661.0", "1.0\u00e9", "1,0", "1.0-", "1.0_", "1.0.", "+1.0", "-1.0", "1-0",
]

COMPARE_EXTRA = [
    ("1", "1.0"), ("1.0", "1.0.0"), ("v1.0", "1.0.0.0"), ("V1.0.0", "1"), ("1.0+abc", "1.0+ABC"),
    ("1.0+1", "1.0+01"), ("1.0+a.1", "1.0+a.01"), ("1.0+a", "1.0+1"), ("1.0+a", "1.0+a.b"),
    ("1.0+a.b", "1.0+a.1"), ("1.0+abc", "1.0+abd"), ("1.0+ab", "1.0+abc"), ("1.0+9", "1.0+10"),
    ("1!0.1", "2.0"), ("0!1.0", "1.0"), ("1.0a1", "1.0alpha1"), ("1.0.post0", "1.0"),
    ("1.0.dev0", "1.0a0"), ("1.0a0", "1.0a"), ("1.0-1", "1.0.post1"), ("1.0rc1", "1.0c1"),
    ("1.0.post1.dev1", "1.0.post1"), ("1.0.post1.dev1", "1.0"), ("1.0a1.post1", "1.0a2.dev0"),
    ("1.0a1.post1.dev1", "1.0a1.post1"), ("1.0.dev1", "1.0.dev1+x"), ("0.dev0", "0"),
    ("0", "0.0.0.0"), ("1.0.1", "1.0.0.1"), ("1.10", "1.9"), ("1.01", "1.1"),
    ("123456789012345678901234567890.1", "123456789012345678901234567891"),
    ("1.0.post99999999999999999999999", "1.0.post100000000000000000000000"),
]

SPECS = [
    "", ",", " , ", ">=1.0", ">1.0", "<1.0", "<=1.0", "==1.0", "!=1.0", "~=1.0", "~=1.4.5", "~=2.2.post3",
    "~=1.4.5a4", "~=1!1.0", "~=1.0.dev1", "==1.*", "==1.0.*", "==1.0.0.*", "==0.*", "==1!1.*", "!=1.*",
    "!=1.0.*", "==1.0+abc", "!=1.0+abc", "==1.0+abc.1", "==1.0+ABC", "===1.0", "===v1.0", "===foo",
    "===1.0a1", "===", ">=1.0a1", ">1.0a1", "<1.0a1", "<=1.0a1", "==1.0a1", "!=1.0a1", ">1.0.post1",
    ">=1.0.post1", "<1.0.post1", "<=1.0.post1", ">1.0.dev1", "<1.0.dev1", ">=1.0.dev0", "<1.0.post1.dev1",
    ">1.0.post1.dev1", "<=1.0a1.post1", ">1.0rc1.post1", ">1.0a1.post1", "<2", ">=1.0,<2.0",
    ">=1.0, !=1.5.*, <2.0", ">=1.1.2,<2", "~=1.1", "!=1.1.0", "<0", "<0.dev0", "<=0", ">=1!0", "<1!0",
    ">=0.1.2,<0.2.0", "  >= 1.0 ,  < 2 ", ">=1.0,,<2", ">=1.0,<1.0", "==1.0,!=1.0", "==1.0.0", "==1",
    "==v1.0", "== 1.0", ">= 1.0a1", "~= 1.0", "===1.0+abc", "==1.0.post0", ">1", ">1.0.0", "<1.0.0",
    ">=1.0a1,<1.0", ">1.0,<1.0.post2", "!=1.0a1,>=1.0a1", "===1.0,>=1.0", "===1.0,<1.0", "==1.*,!=1.0.*",
    "<=1.0+abc", ">=V1.0", "==1.0\t", "\t>=1.0\n", ">=1.0rc1,<=1.0", ">=1.0.dev1,<1.0", "==2.0.dev0",
    "==1.0a1+abc", ">=1!1.0,<1!2", "~=0.1", ">=1.0-1", "~=1.0-1", "==1.0-1",
]

BAD_SPECS = [
    "1.0", "=1.0", "=>1.0", "~1.0", "~=1", "~=1.*", ">=1.0.*", "<1.*", ">=1.0+abc", "<1.0+abc", "~=1.0+abc",
    "==1.0.*.*", "==1.0a1.*", "==1.*+abc", "== 1.0 .*", "==1 .*", ">=", "==", "===a b", "===a;b", "===a)",
    ">=1.0 <2", ">=1.0;<2", ">=1.0,<2.x", ">=1.0,2", "! =1.0", "<<1", ">==1", "==v", ">=1!", "==1.0-",
    "==1.0+", ">=1..0", "> =1.0", "=< 1.0", "=!1.0", "==1.0,>", "latest", "v1", ">=v", ">=1.0)",
    "(>=1.0)", ">= 1.0 a1", "==1.0 +abc", "==*", "==.*", "== 1.*.0", ">1.0.dev1.*", "!=1.0+abc.*",
    ">=1.0 and <2", ">=1.0||<2", "~=1!1", "~= 1", "==1.0.", ">=1.0_", ">=\u0661", "==1.0\u00a0x",
]

# The versions specs are checked against.
POOL = [
    "0.dev0", "0", "0.1", "0.1.2", "0.1.9", "0.2.0", "0.9", "1.0.dev0", "1.0.dev1", "1.0.dev1+x", "1.0a1",
    "1.0a1+local", "1.0a1.post1", "1.0a1.post1.dev1", "1.0a2", "1.0a2.dev0", "1.0b1", "1.0rc1",
    "1.0rc1.post1", "1.0", "v1.0", "1.0.0", "1.0+local", "1.0+abc", "1.0+ABC", "1.0+abc.1", "1.0.post0",
    "1.0.post1", "1.0.post1+l", "1.0.post1.dev1", "1.0.post2.dev0", "1.0.post2", "1.0.1", "1.0.1a1",
    "1.1.dev0", "1.1", "1.1.2", "1.4.5", "1.4.5a4", "1.4.6", "1.5", "1.5.dev0", "1.5.3", "1.9.9",
    "2.0.dev0", "2.0a1", "2.0", "2.0+x", "2.2.post3", "2.2.post4", "2.3", "3", "1!0", "1!1.0",
    "1!1.5", "1!2.0", "foo",
]

LISTS = [
    ["1.0", "1.1", "1.5a1", "2.0.dev1", "2.0", "0.9"],
    ["1.0a1", "1.0b2", "1.0rc1"],
    ["v0.1.0", "v0.1.1", "v0.1.2", "v0.2.0", "v1.0.0", "v1.1.2", "v2.0.0", "main", "v1.1.2-rc1", "vfoo"],
    ["1.0", "1.0.0", "v1.0", "1"],
    [],
    ["1.0+local", "1.0", "1.0.post1", "1.0.post1+x", "1.0+abc"],
    ["2.0a1", "1.0", "2.0b1", "1.5"],
    ["foo", "1.0a1", "FOO", "1.0"],
]

# Git tag lists for the client's rule (only 'v' names; later equal tags win).
TAG_LISTS = [
    LISTS[2],
    ["v1.0", "v1.0.0", "1.1", "V1.2", "vv1.1", "v1.0a1", "v2.0rc1", "v1!0.1"],
    ["v1.0a1", "v1.0b1", "release-1"],
    ["v0.1.2", "v0.2.0.dev1", "v0.1.10", "v0.1.9"],
    ["v1.0", "v1.0+local", "v1.0.post1", "v1.0.0+x", "v1.0.0"],
]


def client_pick(spec: str, tags: list[str]):
    """What kernels' resolve_version_spec_as_ref picks (seed era), as an index."""
    versions = {}
    for i, name in enumerate(tags):
        if not name.startswith("v"):
            continue
        try:
            versions[Version(name[1:])] = i
        except InvalidVersion:
            continue
    accepted = sorted(SpecifierSet(spec).filter(versions.keys()))
    return versions[accepted[-1]] if accepted else "-"


def random_version(rng: random.Random) -> str:
    """A string near the version grammar: usually valid, sometimes mangled."""
    parts = []
    if rng.random() < 0.1:
        parts.append(rng.choice([" ", "\t", "\n"]))
    if rng.random() < 0.3:
        parts.append(rng.choice(["v", "V"]))
    if rng.random() < 0.15:
        parts.append(f"{rng.randint(0, 3)}!")
    nums = [str(rng.choice([0, 0, 1, 2, 3, 10, 99])) for _ in range(rng.randint(1, 4))]
    if rng.random() < 0.1:
        nums[0] = "0" + nums[0]
    parts.append(".".join(nums))
    seps = ["", "", ".", "-", "_"]
    if rng.random() < 0.35:
        word = rng.choice(["a", "b", "rc", "c", "alpha", "beta", "pre", "preview", "A", "RC", "Beta"])
        parts.append(rng.choice(seps) + word + rng.choice(seps) + rng.choice(["", "0", "1", "2", "10"]))
    if rng.random() < 0.3:
        if rng.random() < 0.3:
            parts.append("-" + str(rng.randint(0, 12)))
        else:
            word = rng.choice(["post", "rev", "r", "POST"])
            parts.append(rng.choice(seps) + word + rng.choice(seps) + rng.choice(["", "0", "1", "5"]))
    if rng.random() < 0.3:
        parts.append(rng.choice(seps) + rng.choice(["dev", "DEV"]) + rng.choice(seps) + rng.choice(["", "0", "3"]))
    if rng.random() < 0.25:
        segs = [rng.choice(["abc", "1", "01", "ubuntu", "Z9", "0", "x"]) for _ in range(rng.randint(1, 3))]
        label = segs[0]
        for seg in segs[1:]:
            label += rng.choice([".", "-", "_"]) + seg
        parts.append("+" + label)
    text = "".join(parts)
    if rng.random() < 0.25:
        # one random edit: the near misses are where parsers disagree
        alphabet = "0123456789.-_+!*vVabcdeoprstuvw "
        pos = rng.randint(0, len(text))
        edit = rng.random()
        if edit < 0.4:
            text = text[:pos] + rng.choice(alphabet) + text[pos:]
        elif edit < 0.7 and text:
            text = text[:pos] + text[pos + 1:]
        elif text:
            text = text[:pos] + rng.choice(alphabet) + text[pos + 1:]
    return text


def random_spec(rng: random.Random) -> str:
    items = []
    for _ in range(rng.randint(1, 3)):
        op = rng.choice(["==", "!=", "<=", ">=", "<", ">", "~=", "===", "=", "=>", "~", ""])
        version = random_version(rng)
        if rng.random() < 0.15:
            version += rng.choice([".*", "*", ".*.*"])
        items.append(rng.choice(["", " "]) + op + rng.choice(["", "", " "]) + version)
    return rng.choice([",", ", ", " ,"]).join(items)


# ---- case building ------------------------------------------------------


def build(out, seed: int = 440) -> int:
    rng = random.Random(seed)
    lines = 0

    def emit(*fields):
        nonlocal lines
        out.write("\t".join(escape(str(f)) for f in fields) + "\n")
        lines += 1

    out.write(f"# PEP 440 cases; expected answers computed by packaging {packaging.__version__}.\n")
    out.write("# Generated by tests/data/pep440/generate.py: do not edit, re-run it.\n")

    versions = list(dict.fromkeys(VERSIONS + [random_version(rng) for _ in range(500)]))
    valid = []
    out.write("# versions: parse, normalised form, pre-release\n")
    for text in versions:
        v = parse_version(text)
        if v is None:
            emit("badversion", text)
        else:
            emit("version", text, str(v), int(v.is_prerelease))
            valid.append(text)

    out.write("# ordering: PEP 440's example pairwise, equivalences, random pairs\n")
    pairs = [(a, b) for a in PEP_ORDER for b in PEP_ORDER] + COMPARE_EXTRA
    pairs += [(rng.choice(valid), rng.choice(valid)) for _ in range(300)]
    for a, b in dict.fromkeys(pairs):
        emit("compare", a, b, sign(Version(a), Version(b)))

    specs = list(dict.fromkeys(SPECS + BAD_SPECS + [random_spec(rng) for _ in range(300)]))
    good_specs = []
    out.write("# specifier sets: valid or malformed\n")
    for text in specs:
        s = parse_spec(text)
        if s is None:
            emit("badspec", text)
        else:
            emit("spec", text, len(s), int(s.prereleases is True))
            good_specs.append(text)

    out.write("# membership, for each pre-release mode\n")
    pool = [v for v in POOL if parse_version(v) is not None]
    for text in good_specs:
        s = SpecifierSet(text)
        # every spec against the pool; random ones against a sample to keep the table small
        targets = pool if text in SPECS else rng.sample(pool, 5) + rng.sample(valid, 5)
        for v in targets:
            for mode, pre in MODES.items():
                emit("contains", text, v, mode, int(s.contains(v, prereleases=pre)))

    out.write("# filter and select over version lists\n")
    for text in good_specs:
        s = SpecifierSet(text)
        lists = [rng.sample(POOL, 4) + rng.sample(valid, 4)]
        if text in SPECS:
            lists = LISTS + lists
        for items in lists:
            for mode, pre in MODES.items():
                kept = list(s.filter(range(len(items)), prereleases=pre, key=lambda i, items=items: items[i]))
                kept = [i for i in kept if parse_version(items[i]) is not None]
                best = max(kept, key=lambda i: Version(items[i])) if kept else "-"
                emit("filter", text, mode, len(items), *items, ",".join(map(str, kept)) or "-", best)

    out.write("# the Python client's pick among git tags\n")
    for text in good_specs:
        tag_lists = TAG_LISTS if text in SPECS else [["v" + t for t in rng.sample(valid, 4)] + rng.sample(POOL, 2)]
        for tags in tag_lists:
            emit("tags", text, len(tags), *tags, client_pick(text, tags))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default=os.path.join(HERE, "cases.tsv"))
    parser.add_argument("--seed", type=int, default=440, help="seed of the random cases (the committed table uses 440)")
    args = parser.parse_args()
    want = pinned_packaging()
    if packaging.__version__ != want:
        sys.exit(
            f"generate.py: packaging {packaging.__version__} is installed but tests/requirements.txt pins {want}; "
            "run: python3 -m pip install -r tests/requirements.txt"
        )
    with open(args.output, "w", encoding="ascii", newline="\n") as out:
        n = build(out, args.seed)
    print(f"wrote {n} cases to {args.output}")


if __name__ == "__main__":
    main()

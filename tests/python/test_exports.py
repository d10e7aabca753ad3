"""The exact public surface of libkernels.so.

lib/kernels.exports lists the exported symbols; it must agree three ways:
with the functions include/ declares KERNELS_EXTERN (every declared one
exported, nothing exported undeclared), and with `nm -D --defined-only`
of the built library. And the release libraries (shared and static) hold
none of the test build's parts: no name declared under #ifdef
KERNELS_TESTING in lib/, not even as a local symbol."""
import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXPORTS = ROOT / "lib" / "kernels.exports"
SHARED = Path(os.environ["KERNELS_LIBRARY"])
STATIC = Path(os.environ["KERNELS_STATIC_LIBRARY"])
TESTING = Path(os.environ["KERNELS_TESTING_LIBRARY"])
IDENT = re.compile(r"^[A-Za-z_]\w*$")


NODE = re.compile(r"^\[(KERNELS_\d+\.\d+)\]$")


def _nodes():
    """{version node: [names listed under it]}, in the file's order."""
    nodes, node = {}, None
    for line in EXPORTS.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = NODE.match(line)
        if m:
            node = m.group(1)
            assert node not in nodes, f"lib/kernels.exports opens {node} twice"
            nodes[node] = []
        else:
            assert node, f"lib/kernels.exports: {line} comes before any [KERNELS_x.y] line"
            nodes[node].append(line)
    return nodes


def _exports():
    return [n for names in _nodes().values() for n in names]


def _strip_c(text):
    """Comments, string literals and preprocessor lines out of C text."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\])*"', '""', text)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    return text


def _declared():
    """Names of every KERNELS_EXTERN function in include/ (C headers)."""
    names = []
    for header in sorted((ROOT / "include").rglob("*.h")):
        code = _strip_c(header.read_text())
        names += re.findall(r"\bKERNELS_EXTERN\s*\([^()]*\)\s*([A-Za-z_]\w*)\s*\(", code)
    return names


def _nm(*args):
    p = subprocess.run(["nm", *args], capture_output=True, text=True, check=True)
    return p.stdout


def _versioned():
    """{name: version node} of the shared library's defined dynamic symbols,
    less the nodes' own definitions (absolute symbols named after them)."""
    out = _nm("-D", "--defined-only", "--with-symbol-versions", str(SHARED))
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[1] == "A":
            continue
        name, _, node = parts[2].partition("@@")
        found[name] = node
    return found


def _exported():
    """Defined dynamic symbols of the shared library (version tags dropped)."""
    return list(_versioned())


def _testing_names():
    """Functions declared or defined at top level inside #ifdef KERNELS_TESTING
    blocks of lib/ (headers and sources; nested #if blocks counted)."""
    names = set()
    for path in sorted((ROOT / "lib").rglob("*.[ch]")):
        depth = 0
        for line in path.read_text().splitlines():
            if depth == 0:
                if re.match(r"\s*#\s*ifdef\s+KERNELS_TESTING\b", line):
                    depth = 1
                continue
            if re.match(r"\s*#\s*if", line):
                depth += 1
            elif re.match(r"\s*#\s*endif", line):
                depth -= 1
            else:
                m = re.match(r"^[A-Za-z_][\w \t*]*?\b(kernels_\w+)\s*\(", line)
                if m:
                    names.add(m.group(1))
    return names


def test_exports_file_is_a_sorted_list_of_names():
    nodes = _nodes()
    assert list(nodes)[:1] == ["KERNELS_1.0"], "the first version node is KERNELS_1.0"
    names = _exports()
    assert names, "lib/kernels.exports lists nothing"
    assert all(IDENT.match(n) and n.startswith("kernels_") for n in names), \
        [n for n in names if not (IDENT.match(n) and n.startswith("kernels_"))]
    assert len(names) == len(set(names)), "lib/kernels.exports lists a name twice"
    for node, listed in nodes.items():
        assert listed == sorted(listed), f"the names under [{node}] must be sorted"


def test_every_export_carries_its_version_node():
    """name@@KERNELS_1.0, as the version script made from the list says:
    no export is unversioned, none in a node other than its list's."""
    want = {name: node for node, names in _nodes().items() for name in names}
    got = _versioned()
    wrong = {n: got[n] for n in got if got[n] != want.get(n)}
    assert wrong == {}, f"exports whose version node is not their list's: {wrong}"
    out = subprocess.run(["readelf", "-d", str(SHARED)], capture_output=True, text=True, check=True).stdout
    assert "Library soname: [libkernels.so.1]" in out, out


def test_every_declared_function_is_listed_and_nothing_else():
    declared = _declared()
    assert len(declared) > 100, "the header scan found too little; is the KERNELS_EXTERN pattern still right?"
    assert len(declared) == len(set(declared)), "a function is declared KERNELS_EXTERN twice"
    listed = set(_exports())
    assert set(declared) - listed == set(), "declared in include/ but missing from lib/kernels.exports"
    assert listed - set(declared) == set(), "listed in lib/kernels.exports but declared nowhere in include/"


def test_the_built_library_exports_exactly_the_list():
    exported = _exported()
    listed = set(_exports())
    assert set(exported) - listed == set(), "exported by libkernels.so but not listed"
    assert listed - set(exported) == set(), "listed but not exported by libkernels.so (not defined?)"
    assert all(n.startswith("kernels_") for n in exported)


def test_the_release_libraries_have_no_test_build_parts():
    testing = _testing_names()
    # What the test build adds today; the scan must find at least these.
    known = {"kernels__lock_add_tree_variants", "kernels__toml_get_path",
             "kernels__toml_type_name", "kernels__version_text", "kernels__version_parse",
             "kernels__specifier_contains", "kernels__specifier_filter", "kernels__specifier_select_tags",
             "kernels__hub_set_backoff_base_ms", "kernels__hub_set_down_ttl_ms",
             "kernels__hub_down_forget_all", "kernels__test_before_open", "kernels__memo_clear",
             "kernels__backends"}
    assert known <= testing, f"the KERNELS_TESTING scan missed {sorted(known - testing)}"
    for lib in (SHARED, STATIC):
        # Every symbol, local ones and undefined (weak) references included.
        symbols = {line.split()[-1] for line in _nm(str(lib)).splitlines()
                   if line.strip() and not line.endswith(":")}
        leaked = sorted(testing & symbols)
        assert leaked == [], f"{lib.name} holds test-build parts: {leaked}"
        assert "kernels_free" in symbols, f"nm of {lib.name} saw nothing; is it stripped?"


def test_the_test_build_has_them():
    """The other side: the library the C tests link does hold them (so the
    scan above names real symbols, not stale ones)."""
    symbols = {line.split()[-1] for line in _nm("--defined-only", str(TESTING)).splitlines()
               if len(line.split()) == 3}
    # kernels__test_* are hooks a test program defines (weak references here).
    missing = sorted(n for n in _testing_names() - symbols if not n.startswith("kernels__test_"))
    assert missing == [], f"declared under KERNELS_TESTING but not in the test build: {missing}"


def test_debian_symbols_file_follows_the_exports():
    """debian/libkernels1.symbols names every export at its version node,
    with the release that added it, and nothing else: dpkg-gensymbols then
    fails the package build when a symbol disappears."""
    lines = (ROOT / "debian" / "libkernels1.symbols").read_text().splitlines()
    assert lines[0] == "libkernels.so.1 libkernels1 #MINVER#"
    listed = {l.split()[0]: l.split()[1] for l in lines[1:] if l.startswith(" ")}
    expected = {}
    for node, names in _nodes().items():
        release = node.split("_")[1] + ".0"
        expected[f"{node}@{node}"] = release
        expected.update({f"{n}@{node}": release for n in names})
    assert listed == expected, ("debian/libkernels1.symbols differs from lib/kernels.exports: give each "
                                "export a line ' name@NODE x.y.0' under the release that added it")

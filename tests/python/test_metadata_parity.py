"""metadata.json read by libkernels and by Python kernels 0.17.2's own parser
(kernels._rust.Metadata, kernels-data's serde structs): for every document
below both accept or both refuse, and what they read agrees field by field
(name, id, version, license, kernels-minver, python-depends, kernel-depends,
upstream, source, provenance). The documented differences are listed in
DIVERGENT and checked to stay what they are.
"""
import copy
import ctypes
import json

import pytest
from kernels._rust import KernelVersion, Metadata

import test_binding as tb
from libkernels import _lib

BASE = {"name": "relu", "id": "_relu_cpu_abc", "version": 1, "license": "MIT", "python-depends": [],
        "backend": {"type": "cpu"}}


def case(**changes):
    d = copy.deepcopy(BASE)
    for k, v in changes.items():
        k = k.replace("_", "-")
        if v is DROP:
            d.pop(k, None)
        else:
            d[k] = v
    return d


DROP = object()
OID = "a" * 40
CASES = {
    "base": case(),
    "no python-depends": case(python_depends=DROP),
    "no license": case(license=DROP),
    "no id": case(id=DROP),
    "no name": case(name=DROP),
    "no version": case(version=DROP),
    "no backend": case(backend=DROP),
    "negative version": case(version=-1),
    "string version": case(version="1"),
    "float version": case(version=1.5),
    "name upper": case(name="Relu"),
    "name underscore": case(name="re_lu"),
    "name dash end": case(name="relu-"),
    "name one char": case(name="r"),
    "name two chars": case(name="a1"),
    "name digit first": case(name="1a"),
    "name dashes": case(name="flash-attention-2"),
    "name null": case(name=None),
    "license int": case(license=7),
    "id int": case(id=1),
    "minver": case(kernels_minver="0.17.0"),
    "minver spaces": case(kernels_minver=" 0.17.1 "),
    "minver zeros": case(kernels_minver="00.017.00"),
    "minver plus": case(kernels_minver="0.+17.0"),
    "minver two parts": case(kernels_minver="0.17"),
    "minver four parts": case(kernels_minver="0.17.0.0"),
    "minver dev": case(kernels_minver="0.17.0.dev0"),
    "minver negative": case(kernels_minver="0.-1.0"),
    "minver empty": case(kernels_minver=""),
    "minver int": case(kernels_minver=17),
    "minver null": case(kernels_minver=None),
    "deps version": case(kernel_depends=[{"repo-id": "a/b", "version": 1}]),
    "deps revision": case(kernel_depends=[{"repo-id": "a/b", "revision": "main"}]),
    "deps two": case(kernel_depends=[{"repo-id": "a/b", "version": 2}, {"repo-id": "c/d", "revision": OID}]),
    "deps both": case(kernel_depends=[{"repo-id": "a/b", "revision": "main", "version": 1}]),
    "deps neither": case(kernel_depends=[{"repo-id": "a/b"}]),
    "deps unknown key": case(kernel_depends=[{"repo-id": "a/b", "version": 1, "x": 1}]),
    "deps no repo": case(kernel_depends=[{"version": 1}]),
    "deps repo int": case(kernel_depends=[{"repo-id": 1, "version": 1}]),
    "deps negative": case(kernel_depends=[{"repo-id": "a/b", "version": -1}]),
    "deps revision int": case(kernel_depends=[{"repo-id": "a/b", "revision": 3}]),
    "deps null": case(kernel_depends=None),
    "deps not list": case(kernel_depends={"repo-id": "a/b", "version": 1}),
    "deps entry string": case(kernel_depends=["a/b"]),
    "pydeps": case(python_depends=["einops", "tvm-ffi"]),
    "pydeps unknown name": case(python_depends=["no-such-thing"]),
    "pydeps int": case(python_depends=[1]),
    "pydeps null": case(python_depends=None),
    "upstream https": case(upstream="https://github.com/org/repo"),
    "upstream scp": case(upstream="git@github.com:org/repo.git"),
    "upstream user scp": case(upstream="user@gitlab.com:group/project.git"),
    "upstream git+ssh": case(upstream="git+ssh://git@github.com/org/repo.git"),
    "upstream ssh": case(upstream="ssh://git@github.com/org/repo.git"),
    "upstream git": case(upstream="git://github.com/org/repo.git"),
    "upstream http": case(upstream="http://github.com/org/repo"),
    "upstream ftp": case(upstream="ftp://x/y"),
    "upstream file": case(upstream="file:///x"),
    "upstream mailto": case(upstream="mailto:x@y"),
    "upstream no scheme": case(upstream="github.com/org/repo"),
    "upstream scp absolute": case(upstream="git@github.com:/org"),
    "upstream int": case(upstream=1),
    "upstream null": case(upstream=None),
    "source https": case(source="https://github.com/org/repo"),
    "source bad": case(source="not a url"),
    "prov flat": case(provenance={"kernel-builder": {"version": "0.17.0", "commit": OID, "dirty": True},
                                  "kernel": {"commit": "b" * 40, "dirty": False}}),
    "prov sha alias": case(provenance={"kernel-builder": {"version": "0.17.0", "sha": OID, "dirty": False}}),
    "prov nested git ignored": case(provenance={"kernel-builder": {"version": "0.17.0",
                                                                   "git": {"commit": OID, "dirty": True}}}),
    "prov version only": case(provenance={"kernel-builder": {"version": "0.17.0"}}),
    "prov commit without dirty": case(provenance={"kernel-builder": {"version": "0.17.0", "commit": OID}}),
    "prov dirty without commit": case(provenance={"kernel-builder": {"version": "0.17.0", "dirty": True}}),
    "prov kernel null": case(provenance={"kernel-builder": {"version": "0.17.0"}, "kernel": None}),
    "prov null": case(provenance=None),
    "prov short commit": case(provenance={"kernel-builder": {"version": "0.17.0"},
                                          "kernel": {"commit": "abc", "dirty": False}}),
    "prov upper commit": case(provenance={"kernel-builder": {"version": "0.17.0"},
                                          "kernel": {"commit": "A" * 40, "dirty": True}}),
    "prov sha256 commit": case(provenance={"kernel-builder": {"version": "0.17.0"},
                                           "kernel": {"commit": "c" * 64, "dirty": False}}),
    "prov kernel no dirty": case(provenance={"kernel-builder": {"version": "0.17.0"}, "kernel": {"commit": OID}}),
    "prov dirty string": case(provenance={"kernel-builder": {"version": "0.17.0"},
                                          "kernel": {"commit": OID, "dirty": "yes"}}),
    "prov no builder": case(provenance={"kernel": {"commit": OID, "dirty": False}}),
    "prov builder no version": case(provenance={"kernel-builder": {}}),
    "prov not object": case(provenance=42),
    "prov unknown keys": case(provenance={"kernel-builder": {"version": "1", "x": 1}, "future": [1]}),
    "backend cuda archs": case(backend={"type": "cuda", "archs": ["8.0", "9.0+PTX"]}),
    "backend rocm archs": case(backend={"type": "rocm", "archs": ["gfx90a", "gfx942"]}),
    "backend archs null": case(backend={"type": "cpu", "archs": None}),
    "backend upper": case(backend={"type": "CUDA"}),
    "backend unknown": case(backend={"type": "vulkan"}),
    "unknown top-level key": case(future_field={"x": 1}),
}

# Git URLs as 0.17.2 normalises them (upstream and source alike).
URLS = ["SSH://Git@GitHub.com/Foo/Bar.git", "ssh://host", "ssh://host:22/x", "git://Host.COM:9418/a/./b/../c",
        "git+https://GitHub.com", "GIT+SSH://x.org/a", "Git@GitHub.com:Foo/Bar", "host:path", "user@host:22/x",
        "https://x.org/\u00e4", "https://x.org/%7e", "https://x.org:8080", "https://[::1]/x", "https://x.org/a\tb",
        "https://x.org/a//b", "https://x.org/.", "https://x.org/a/..", "https://x.org/a?b c", "https://x.org/#a b",
        "http://X.org:0080/", "https://ex%41mple.org/", "ssh://Host/A/../B", "ssh://h/a b", "git@h:a b",
        "git@h:a/../b", "https:x.org/a", "https:///x.org", "HTTPS://x.org", "\thttps://x.org/\n", "git:foo",
        "ssh:/x", "https://", "https://user@/x", "ssh://", "git@h:", "@h:x", "git@:x", "a b@h:x", "git@h:x?y#z",
        "https://x.org/a\"b<c>d`e{f}g|h^i", "https://x.org/?a'b", "ssh://h/a?b'c", "https://x.org:/a",
        "ssh://H:0022/a", "https://x.org:65536/", "https://u:p@X.org/", "https://x.org\\a\\b",
        "https://x.org/a/%2e%2E/b", "ssh://h/~u/./x", "https://x.org/a/b/../../..", "ssh://h/a/../..",
        "https://github.com", "https://github.com:443/a/../b", "http://x.org:80/", "https://x.org/?q=1#f",
        "  https://x.org/  ", "", "git@github.com:foo/bar.git/", "https://x.org:x/", "https://u:@x.org/"]
for i, u in enumerate(URLS):
    CASES[f"url {i:02d} {u!r}"] = case(upstream=u, source=u)

# Where libkernels reads differently from 0.17.2, on purpose (kernel.h says so).
DIVERGENT = {
    # the loader names modules after the id, and the fuzz invariants promise both
    "empty id": (case(id=""), "refused by libkernels only"),
    "empty license": (case(license=""), "refused by libkernels only"),
}


def ours(tmp_path, doc):
    lib = _lib.load(tb.library_path())
    d = tmp_path / "v"
    d.mkdir(exist_ok=True)
    (d / "metadata.json").write_text(json.dumps(doc))
    m = _lib.MetadataP()
    try:
        lib.metadata_read(ctypes.byref(m), str(d).encode())
    except Exception as e:  # libkernels' ParseError
        return None, str(e)
    try:
        from libkernels._kernel import Metadata as M

        return M._from_handle(lib, m), None
    finally:
        lib.metadata_free(m)


def theirs(doc):
    try:
        return Metadata.from_bytes(json.dumps(doc).encode()), None
    except Exception as e:
        return None, str(e)


def summary_theirs(m):
    deps = []
    for d in m.kernel_depends:
        v = d.version
        deps.append((d.repo_id, v.version if isinstance(v, KernelVersion.Version) else None,
                     v.revision if isinstance(v, KernelVersion.Revision) else None))
    p = m.provenance
    prov = None
    if p is not None:
        g, k = p.kernel_builder.git, p.kernel
        prov = {"kernel_builder_version": p.kernel_builder.version,
                "kernel_builder_commit": g.commit if g else None, "kernel_builder_dirty": g.dirty if g else None,
                "kernel_commit": k.commit if k else None, "kernel_dirty": k.dirty if k else None}
    return {"name": str(m.name), "id": m.id, "version": m.version, "license": m.license,
            "minver": str(m.kernels_minver) if m.kernels_minver is not None else None,
            "python_depends": list(m.python_depends), "kernel_depends": deps, "provenance": prov,
            "archs": list(m.backend.archs or [])}


def summary_ours(m):
    return {"name": m.name, "id": m.id, "version": m.version, "license": m.license, "minver": m.kernels_minver,
            "python_depends": list(m.python_depends),
            "kernel_depends": [(d.repo_id, d.version, d.revision) for d in m.kernel_depends],
            "provenance": m.provenance, "archs": list(m.archs)}


@pytest.mark.parametrize("label", sorted(CASES))
def test_same_verdict_and_fields(tmp_path, label):
    doc = CASES[label]
    t, terr = theirs(doc)
    o, oerr = ours(tmp_path, doc)
    assert (t is None) == (o is None), f"{label}: kernels 0.17.2: {terr or 'accepted'}; libkernels: {oerr or 'accepted'}"
    if t is None:
        assert "metadata.json" in oerr  # names the file, and (below) the key
        return
    assert summary_ours(o) == summary_theirs(t)
    # URLs: normalised as 0.17.2 returns them
    for key in ("upstream", "source"):
        assert getattr(o, key) == getattr(t, key), (key, doc.get(key))


@pytest.mark.parametrize("label", sorted(DIVERGENT))
def test_documented_divergences(tmp_path, label):
    doc, _ = DIVERGENT[label]
    assert theirs(doc)[0] is not None
    assert ours(tmp_path, doc)[0] is None


def test_refusals_name_the_key(tmp_path):
    for label, key in (("no python-depends", "python-depends"), ("deps both", "kernel-depends[0]"),
                       ("minver two parts", "kernels-minver"), ("upstream ftp", "upstream"),
                       ("prov commit without dirty", "provenance.kernel-builder"), ("name underscore", "re_lu")):
        err = ours(tmp_path, CASES[label])[1]
        assert key in err, (label, err)

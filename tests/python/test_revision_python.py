"""Revision resolution agrees with the Python ecosystem, on the wire and in the cache.

libkernels runs through ctypes (KERNELS_LIBRARY) in a subprocess whose
environment is all it sees (opts NULL, like an embedding application); the
Python `kernels` client, `huggingface_hub` and `packaging` (pinned in
tests/requirements.txt) run in their own subprocesses against the same local
Hub and cache. The Hub's request log proves which steps were offline.
"""

import json
import os
import subprocess
import sys

import pytest

LIBRARY = os.environ.get("KERNELS_LIBRARY")
pytestmark = pytest.mark.skipif(not LIBRARY, reason="KERNELS_LIBRARY is not set (run through ctest)")

# kernels_revision_resolve for each revision in argv[3:], opts NULL.
DRIVER = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.kernels_error_last.restype = ctypes.c_char_p
for f in ("kernels_revision_commit", "kernels_revision_ref"):
    getattr(lib, f).restype = ctypes.c_char_p
    getattr(lib, f).argtypes = [ctypes.c_void_p]
for f in ("kernels_revision_kind", "kernels_revision_is_model_repo", "kernels_revision_free"):
    getattr(lib, f).argtypes = [ctypes.c_void_p]
lib.kernels_revision_resolve.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p, ctypes.c_char_p,
                                         ctypes.c_void_p]
out = []
for rev in sys.argv[3:]:
    r = ctypes.c_void_p()
    rc = lib.kernels_revision_resolve(ctypes.byref(r), sys.argv[2].encode(), rev.encode(), None)
    e = {"rev": rev, "rc": rc, "error": lib.kernels_error_last().decode()}
    if rc == 0:
        e["commit"] = lib.kernels_revision_commit(r).decode()
        ref = lib.kernels_revision_ref(r)
        e["ref"] = ref.decode() if ref else None
        e["kind"] = lib.kernels_revision_kind(r)
        e["model"] = lib.kernels_revision_is_model_repo(r)
        lib.kernels_revision_free(r)
    out.append(e)
print(json.dumps(out))
"""

# The Python kernels client's major-version resolution (online or cache-only).
PY_KERNELS = r"""
import json, sys
from kernels._versions import resolve_version_spec_as_ref
repo, offline = sys.argv[1], sys.argv[2] == "1"
out = {}
for n in sys.argv[3:]:
    try:
        out[n] = resolve_version_spec_as_ref(repo, int(n), local_files_only=offline).target_commit
    except ValueError:
        out[n] = None
print(json.dumps(out))
"""

# huggingface_hub resolving (and recording under refs/) some revisions.
HF_SNAPSHOT = r"""
import sys
from huggingface_hub import snapshot_download
for rev in sys.argv[2:]:
    snapshot_download(sys.argv[1], repo_type="kernel", revision=rev)
"""

# The seed-era Python client's rule: highest v-tag version in the spec's filter.
PACKAGING = r"""
import json, sys
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version
tags, specs = json.loads(sys.argv[1]), json.loads(sys.argv[2])
versions = {}
for t in tags:
    if t.startswith("v"):
        try:
            versions[Version(t[1:])] = t
        except InvalidVersion:
            pass
out = {}
for s in specs:
    ok = sorted(SpecifierSet(s).filter(versions.keys()))
    out[s] = versions[ok[-1]] if ok else None
print(json.dumps(out))
"""

KIND_BRANCH, KIND_TAG, KIND_SPEC, KIND_MAJOR = 1, 2, 4, 5


def env_for(hub, cache, offline=False, **extra):
    env = hub.hf_env(cache, HF_HUB_OFFLINE="1" if offline else "0", **extra)
    env.pop("KERNELS_CACHE", None)
    env["HF_HOME"] = str(cache) + "-home"  # no token file, no user settings
    return env


def run(hub, cache, args, offline=False, **extra):
    out = subprocess.run(
        [sys.executable, "-c", *args],
        env=env_for(hub, cache, offline, **extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert out.returncode == 0, out.stderr.decode()
    return out


def ours(hub, cache, repo, *revs, offline=False):
    out = run(hub, cache, [DRIVER, LIBRARY, repo, *revs], offline)
    return {e["rev"]: e for e in json.loads(out.stdout)}, out.stderr.decode()


def python_client(hub, cache, repo, *majors, offline=False):
    # kernels 0.17.2 sends an invalid User-Agent ("...; ") when telemetry is
    # disabled, which httpx refuses; telemetry to the local Hub is harmless.
    args = [PY_KERNELS, repo, "1" if offline else "0", *map(str, majors)]
    return json.loads(run(hub, cache, args, offline, HF_HUB_DISABLE_TELEMETRY="0").stdout)


@pytest.fixture
def kern(hub):
    """org/kern with both eras' refs; returns {name: commit}."""
    c = {}
    c["v1.0.0"] = hub.publish("org/kern", files={"a": b"1"}, branches=["main", "v1"], tags=["v1.0.0"])
    c["v1.1.2"] = hub.publish("org/kern", files={"a": b"2"}, branches=["main", "v1"], tags=["v1.1.2"])
    c["v2"] = hub.publish("org/kern", files={"a": b"3"}, branches=["v2"], tags=["v2.0.0"])
    c["v1"] = c["main"] = c["v1.1.2"]
    c["v2.0.0"] = c["v2"]
    return c


def test_python_client_reads_refs_we_recorded(hub, tmp_path, kern):
    cache = tmp_path / "cache"
    res, err = ours(hub, cache, "org/kern", "1", "2")
    assert res["1"]["rc"] == 0, res["1"]["error"]
    assert (res["1"]["commit"], res["1"]["kind"], res["1"]["ref"]) == (kern["v1"], KIND_MAJOR, "v1")
    assert (res["2"]["commit"], res["2"]["ref"]) == (kern["v2"], "v2")
    assert "newer major version v2" in err  # the warning, to stderr with no log callback

    # The Python client, cache only, finds the same commits in our refs/.
    hub.log_clear()
    assert python_client(hub, cache, "org/kern", 1, 2, offline=True) == {"1": kern["v1"], "2": kern["v2"]}
    assert hub.count() == 0


def test_majors_agree_with_python_client_online(hub, tmp_path, kern):
    py = python_client(hub, tmp_path / "py", "org/kern", 1, 2, 3)
    res, _ = ours(hub, tmp_path / "ours", "org/kern", "1", "2", "3")
    assert py == {"1": kern["v1"], "2": kern["v2"], "3": None}
    for n in ("1", "2"):
        assert res[n]["rc"] == 0 and res[n]["commit"] == py[n]
    assert res["3"]["rc"] != 0 and "available versions: 1, 2" in res["3"]["error"]


def test_we_read_refs_huggingface_hub_recorded(hub, tmp_path, kern):
    cache = tmp_path / "cache"
    run(hub, cache, [HF_SNAPSHOT, "org/kern", "main", "v1.1.2", "v2"])
    for name in ("main", "v1.1.2", "v2"):
        with open(cache / "kernels--org--kern" / "refs" / name) as f:
            assert f.read() == kern[name]

    hub.log_clear()
    res, _ = ours(hub, cache, "org/kern", "main", "v1.1.2", ">=1.1,<2", "2", "v1.0.0", offline=True)
    assert hub.count() == 0
    assert (res["main"]["commit"], res["main"]["kind"]) == (kern["main"], KIND_BRANCH)
    assert (res["v1.1.2"]["commit"], res["v1.1.2"]["kind"]) == (kern["v1.1.2"], KIND_TAG)
    assert (res[">=1.1,<2"]["commit"], res[">=1.1,<2"]["ref"]) == (kern["v1.1.2"], "v1.1.2")
    assert (res["2"]["commit"], res["2"]["kind"]) == (kern["v2"], KIND_MAJOR)
    # Never recorded: offline says so and names what to do.
    assert res["v1.0.0"]["rc"] != 0
    assert "offline" in res["v1.0.0"]["error"] and "online" in res["v1.0.0"]["error"]

    # Our online answer lands next to huggingface_hub's refs, which it still
    # reads offline afterwards.
    res, _ = ours(hub, cache, "org/kern", "v1.0.0")
    assert res["v1.0.0"]["commit"] == kern["v1.0.0"]
    with open(cache / "kernels--org--kern" / "refs" / "v1.0.0") as f:
        assert f.read() == kern["v1.0.0"]
    hub.log_clear()
    run(hub, cache, [HF_SNAPSHOT, "org/kern", "main", "v1.1.2"], offline=True)
    assert hub.count() == 0


def test_specs_agree_with_packaging(hub, tmp_path):
    tags = ["v0.9.0", "v1.0.0", "v1.1.2", "v1.2.0rc1", "v2.0.0", "v2.0.0.post1", "v2.1.0.dev3", "v3.0.0b2",
            "v1!0.1", "vjunk", "v4.0.0+local", "not-a-version"]
    commits = {}
    for i, t in enumerate(tags):
        commits[t] = hub.publish("org/specs", files={"f": str(i).encode()}, branches=["main"], tags=[t])
    specs = [">=1.1.2,<2", "~=1.1", "==1.*", "!=1.1.2,<2", "<1", ">=2", ">2", ">=1.2.0rc1,<2", "<3", ">=3",
             "==2.0.0", "===2.0.0", ">=2.1.0.dev1", "~=2.0", ">=0", "==4.0.0", "<=2.0.0", ">5", ">=1!0",
             "!=2.*", "==1.1.*,!=1.1.2"]
    expected = json.loads(run(hub, tmp_path / "p", [PACKAGING, json.dumps(tags), json.dumps(specs)]).stdout)
    res, _ = ours(hub, tmp_path / "ours", "org/specs", *specs)
    for s in specs:
        want = expected[s]
        got = res[s]
        if want is None:
            assert got["rc"] == -5, (s, got)   # KERNELS_ENOMATCH
            assert s in got["error"] and "v1.1.2" in got["error"]
        else:
            assert got["rc"] == 0, (s, got["error"])
            assert (got["ref"], got["commit"], got["kind"]) == (want, commits[want], KIND_SPEC), s

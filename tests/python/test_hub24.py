"""The local Hub and the cache interop against what users install today:
kernels 0.17.2 with huggingface_hub 2.4 (the other tests pin 1.10.2, which
tests/requirements.txt keeps; 2.x conflicts with that pin, so it lives in
its own virtualenv, $KERNELS_BINARY_DIR/hub24-venv, made once from
tests/requirements-hub24.txt, with the project's environment behind it for
torch and pytest).

- huggingface_hub 2.4 against the fixture: every request it sends is
  answered as the Hub answers it (its agent-harnesses registry included),
  a kernel snapshot comes back byte-identical, refs and revisions resolve,
  and the cache gets 2.4's layout (trees/{commit}.json, CACHEDIR.TAG);
- the interop suites (test_cache_interop, test_interop_kernels,
  test_deps_kernels) run again under that interpreter: libkernels and
  kernels 0.17.2 + huggingface_hub 2.4 share one cache both ways, offline
  with no request, locks byte-identical, dependencies alike.
"""
import json
import os
import subprocess
import sysconfig
import textwrap
from pathlib import Path

import test_binding as tb
from hubclient import random_bytes
from testsupport import cached_venv

SRC = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("KERNELS_BINARY_DIR", SRC / "build"))
REQUIREMENTS = SRC / "tests" / "requirements-hub24.txt"


def project_env_behind(venv):
    """A .pth that puts this interpreter's site-packages (torch, pytest,
    ...) behind the venv's own packages."""
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; "
                           "print(sysconfig.get_paths()['purelib'])"], check=True, capture_output=True,
                          text=True).stdout.strip()
    Path(site, "zz-project-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def hub24_python():
    """The virtualenv's interpreter, made once. Its own packages come
    first, the project's environment behind them."""
    return cached_venv(BIN / "hub24-venv", REQUIREMENTS, ["--no-deps"], project_env_behind)


PROBE = """
import hashlib, json, os, sys
import huggingface_hub as hh
import kernels
from huggingface_hub import HfApi, hf_hub_download, snapshot_download

repo, rev = sys.argv[1], sys.argv[2]
api = HfApi()
out = {"hf_hub": hh.__version__, "kernels": kernels.__version__}
out["sha"] = api.kernel_info(repo, revision=rev).sha
refs = api.list_repo_refs(repo, repo_type="kernel")
out["branches"] = sorted(b.name for b in refs.branches)
out["tags"] = sorted(t.name for t in refs.tags)
path = snapshot_download(repo, repo_type="kernel", revision=rev)
files = {}
for root, _, names in os.walk(path):
    for n in names:
        p = os.path.join(root, n)
        files[os.path.relpath(p, path)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
out["files"] = files
out["one"] = open(hf_hub_download(repo, "README.md", repo_type="kernel", revision=rev), "rb").read().decode()
cache = os.environ["HF_HUB_CACHE"]
out["cache"] = sorted(os.path.relpath(os.path.join(r, n), cache) for r, _, ns in os.walk(cache) for n in ns)
print(json.dumps(out))
"""


def test_fixture_answers_huggingface_hub_24(hub, tmp_path):
    python = hub24_python()
    files = {"README.md": b"hi\n", "build/torch-cpu/__init__.py": b"x = 1\n",
             "build/torch-cpu/weights.bin": random_bytes(3 << 20, 5)}  # LFS: through the CDN
    commit = hub.publish("org/kern", files=files, branches=["main", "v1"], tags=["v1.0.0"], trusted=True)
    cache = tmp_path / "cache"
    env = hub.hf_env(cache, HF_HOME=str(tmp_path / "hf_home"), HF_HUB_DISABLE_TELEMETRY="0")
    p = subprocess.run([str(python), "-c", PROBE, "org/kern", "v1"], env=env, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["hf_hub"] == "2.4.0" and out["kernels"] == "0.17.2"
    assert out["sha"] == commit
    assert out["branches"] == ["main", "v1"] and out["tags"] == ["v1.0.0"]
    import hashlib
    assert out["files"] == {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}
    assert out["one"] == "hi\n"
    # 2.4's cache layout: its tree listing record and the cache tag beside the usual folders
    assert f"kernels--org--kern/trees/{commit}.json" in out["cache"] and "CACHEDIR.TAG" in out["cache"]
    assert f"kernels--org--kern/refs/v1" in out["cache"]
    # every request answered as the Hub answers it (no 404 for what exists, no 5xx)
    log = hub.log()
    assert log and all(e["status"] in (200, 206, 302) for e in log), [(e["path"], e["status"]) for e in log]
    assert any(e["path"] == "/api/agent-harnesses" for e in log)
    assert all("hf_hub/2.4.0" in (e["user_agent"] or "") for e in log if e["path"] != "/api/agent-harnesses")

    # libkernels reads the cache 2.4 wrote (trees/, CACHEDIR.TAG) offline, without a request
    hub.log_clear()
    lib_env = dict(env, KERNELS_LIBRARY=tb.library_path(), PYTHONPATH=str(tb.BINDING_DIR), HF_HUB_OFFLINE="1")
    code = textwrap.dedent("""
        import json, libkernels
        d = libkernels.variants("org/kern", "v1", backend="cpu", offline=True, trust_remote_code=True)
        print(json.dumps([x.variant.variant_str for x in d]))
    """)
    q = subprocess.run([str(python), "-c", code], env=lib_env, capture_output=True, text=True, timeout=120)
    assert q.returncode == 0, q.stderr
    assert json.loads(q.stdout.strip().splitlines()[-1]) == ["torch-cpu"]
    cli = subprocess.run([str(BIN / "bindings" / "cli" / "libkernels"), "cache", "ls", "--json"], env=lib_env,
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    listed = json.loads(cli.stdout)
    assert "org/kern" in json.dumps(listed) and commit in json.dumps(listed)
    assert hub.log() == []


def test_interop_suites_under_huggingface_hub_24(tmp_path):
    """The interop suites, as they are, run by kernels 0.17.2 + huggingface_hub 2.4."""
    python = hub24_python()
    suites = ["test_cache_interop.py", "test_interop_kernels.py", "test_deps_kernels.py"]
    p = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", *suites],
                       cwd=Path(__file__).parent, capture_output=True, text=True, timeout=3000,
                       env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    tail = p.stdout[-4000:] + p.stderr[-2000:]
    assert p.returncode == 0, tail
    assert " passed" in tail and "failed" not in tail
    # they really ran under 2.4
    v = subprocess.run([str(python), "-c", "import huggingface_hub, kernels; print(huggingface_hub.__version__, "
                        "kernels.__version__)"], capture_output=True, text=True, check=True).stdout.split()
    assert v == ["2.4.0", "0.17.2"]


PY_MODULE = """
typedef struct _object PyObject;
extern PyObject *PyModule_Create2(void *, int);
PyObject *PyInit_{kid}(void) {{ static char d[128]; return PyModule_Create2(d, 3); }}
int answer(void) {{ return {answer}; }}
"""


def test_copies_go_with_revisions_huggingface_hub_24_deletes(hub, tmp_path):
    """huggingface_hub 2.4 cleans kernel repos too (scan_cache_dir, then
    delete_revisions: what `hf cache rm` runs). It deletes a revision's
    blobs and knows nothing of .libkernels/: the Python-free copy
    libkernels made of a deleted module (a host without libpython, here the
    CLI) must not keep its size for good. The next load drops it; the copy
    of the module still cached stays and is reused."""
    python = hub24_python()
    variant = tb.torch_cpu_variant()
    commits = {}
    for answer in (1, 2):
        tree = tmp_path / f"tree{answer}"
        folder = tree / "build" / variant
        folder.mkdir(parents=True)
        kid = f"_pyk_{answer}"
        src = tmp_path / f"{kid}.c"
        src.write_text(PY_MODULE.format(kid=kid, answer=answer))
        subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-Wl,-z,now", "-o", str(folder / f"{kid}.abi3.so"),
                        str(src)], check=True)
        subprocess.run([os.environ.get("KERNELS_PYTHON", "python3"), str(tb.MAKE_METADATA), str(folder),
                        "--name", "pyk", "--id", kid, "--backend", "cpu"], check=True)
        commits[answer] = hub.publish("acme/pyk", files={p.relative_to(tree).as_posix(): (p.read_bytes(), True)
                                                         for p in tree.rglob("*") if p.is_file()},
                                      branches=["main"], tags=[f"v{answer}.0.0"], trusted=True)
    cache = tmp_path / "cache"
    env = hub.hf_env(cache, HF_HOME=str(tmp_path / "hf_home"))
    patched = cache / "kernels--acme--pyk" / ".libkernels" / "patched"

    def get(tag):
        r = subprocess.run([str(BIN / "bindings" / "cli" / "libkernels"), "get", "acme/pyk", tag, "--backend", "cpu",
                            "--json"], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return sorted(p.name for p in patched.iterdir())

    def blob_of(answer):
        so = next((cache / "kernels--acme--pyk" / "snapshots" / commits[answer]).rglob("*.so"))
        return so.resolve().name

    assert get("v1.0.0") == sorted([blob_of(1) + ".json", blob_of(1) + ".so"])
    both = get("v2.0.0")
    assert len(both) == 4
    gone = blob_of(1)
    delete = textwrap.dedent("""
        import sys
        from huggingface_hub import scan_cache_dir
        info = scan_cache_dir(sys.argv[1])
        assert not info.warnings, info.warnings
        strategy = info.delete_revisions(sys.argv[2])
        assert strategy.blobs, strategy
        strategy.execute()
    """)
    d = subprocess.run([str(python), "-c", delete, str(cache), commits[1]], env=env, capture_output=True,
                       text=True, timeout=120)
    assert d.returncode == 0, d.stderr
    assert not (cache / "kernels--acme--pyk" / "blobs" / gone).exists()
    assert get("v2.0.0") == sorted([blob_of(2) + ".json", blob_of(2) + ".so"])

"""libkernels (through the binding) and the Python `kernels` package from
PyPI (kernels==0.17.2, tests/requirements.txt) are interchangeable on one
local Hub and one shared cache:

- a kernel fetched by libkernels is loaded by `kernels` with
  HF_HUB_OFFLINE=1, and the fixture's log shows no request;
- a kernel fetched by `kernels` is loaded by libkernels with no request;
- `kernels` loads our published img2gray variant and runs it;
- a kernels.lock written by `kernels lock` is honoured by the binding's
  get_locked_kernel / load_kernel, and `kernels`' load_kernel reads what
  libkernels downloaded for a lock.

Each client runs in its own process: `kernels` and huggingface_hub read
HF_HUB_OFFLINE and friends at import time, and a torch op namespace can be
registered once per process.
"""
import json
import subprocess
import sys
import textwrap

import test_binding as tb
from test_cli import CLI
from test_binding_torch import REPO, publish_img2gray

CHECK_RESULT = """
    rgb = torch.randint(0, 256, (3, 19, 23, 3), dtype=torch.uint8)
    x = rgb.to(torch.float64)
    ref = torch.floor((54 * x[..., 0] + 184 * x[..., 1] + 18 * x[..., 2]) / 256 + 0.5).to(torch.uint8)
    path = pathlib.Path(k.__file__).parent
    meta = json.loads((path / "metadata.json").read_text())
    print(json.dumps({"ok": bool(torch.equal(k.img2gray(rgb), ref)), "variant": path.name, "path": str(path),
                      "version": meta["version"], "id": meta["id"], "name": k.__name__,
                      "op": hasattr(getattr(torch.ops, meta["id"]), "img2gray")}))
"""


def run(hub, cache, code, offline=False, **extra):
    # kernels 0.17.2 with telemetry disabled sends a user agent ending in
    # "; ", which httpx refuses: keep telemetry on (it only reaches the local Hub).
    env = hub.hf_env(cache, KERNELS_LIBRARY=tb.library_path(), PYTHONPATH=str(tb.BINDING_DIR),
                     PYTHONDONTWRITEBYTECODE="1", HF_HUB_DISABLE_TELEMETRY="0",
                     HF_HUB_OFFLINE="1" if offline else "0", **extra)
    proc = subprocess.run([sys.executable, "-c", "import json, pathlib, torch\n" + textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def ours(how):
    return f"import libkernels\nk = libkernels.get_kernel({REPO!r}, {how})\n" + textwrap.dedent(CHECK_RESULT)


def theirs(how):
    return f"import kernels\nk = kernels.get_kernel({REPO!r}, {how})\n" + textwrap.dedent(CHECK_RESULT)


def blobs(cache):
    return sorted(p.name for p in cache.glob("kernels--*/blobs/*"))


def test_fetched_by_libkernels_loaded_by_kernels_offline(hub, tmp_path):
    publish_img2gray(hub)
    cache = tmp_path / "cache"
    a = run(hub, cache, ours('version=1, backend="cpu"'))
    assert a["ok"] and a["op"]
    assert hub.count(path="/resolve/") > 0
    before = blobs(cache)

    hub.log_clear()
    b = run(hub, cache, theirs('version=1, backend="cpu"'), offline=True)
    assert b["ok"] and b["op"], b
    assert hub.log() == []  # not one request: refs/, snapshot and blobs came from libkernels
    assert b["path"] == a["path"] and b["variant"] == a["variant"] and b["id"] == a["id"] == b["name"]
    assert blobs(cache) == before


def test_fetched_by_kernels_loaded_by_libkernels(hub, tmp_path):
    tags = publish_img2gray(hub)
    v1 = tags["v1.1.2"]  # what the branch v1 points at
    cache = tmp_path / "cache"
    # `kernels` loads our published img2gray variant and runs it.
    a = run(hub, cache, theirs('version=1, backend="cpu"'))
    assert a["ok"] and a["op"], a
    assert a["version"] == 1 and "-cpu-" in a["variant"] and f"/snapshots/{v1}/" in a["path"]
    before = blobs(cache)

    # `kernels` resolves version=1 to a commit through the refs API and
    # downloads by commit, so huggingface_hub records no refs/v1: offline,
    # neither `kernels` itself nor libkernels can name the version; both load
    # the commit.
    hub.log_clear()
    # `kernels` records no publisher verdict: offline, libkernels needs the
    # caller's opt-in for what another tool fetched.
    refused = run(hub, cache, """
        import libkernels
        try:
            libkernels.get_kernel("%s", revision="%s", backend="cpu")
            print(json.dumps({"error": None}))
        except libkernels.UntrustedError as e:
            print(json.dumps({"error": str(e)}))
    """ % (REPO, v1), offline=True)
    # the message names the one step: `libkernels trust REPO`, once online
    assert "no record of a publisher check" in refused["error"], refused
    assert f"Run 'libkernels trust {REPO}' once while online" in refused["error"], refused
    assert hub.log() == []
    trust = subprocess.run([CLI, "trust", REPO], env=hub.hf_env(cache, HF_HUB_OFFLINE="0"), capture_output=True,
                           text=True, timeout=300)
    assert trust.returncode == 0, trust.stdout + trust.stderr
    assert [r["path"] for r in hub.log()] == [f"/api/organizations/{REPO.split('/')[0]}/overview"]
    hub.log_clear()
    b = run(hub, cache, ours(f'revision="{v1}", backend="cpu"'), offline=True)
    assert b["ok"] and b["op"], b
    assert hub.log() == []  # loaded offline: not one request
    assert b["path"] == a["path"] and b["id"] == a["id"]
    assert blobs(cache) == before
    assert not (cache / "kernels--kernels-community--img2gray" / "refs" / "v1").exists()
    same = run(hub, cache, """
        import kernels
        try:
            kernels.get_kernel("%s", version=1, backend="cpu")
            print(json.dumps({"error": None}))
        except ValueError as e:
            print(json.dumps({"error": str(e)}))
    """ % REPO, offline=True)
    assert "not available in the local cache" in same["error"]
    assert hub.log() == []

    # Online, libkernels downloads nothing that `kernels` already has (it
    # asks the Hub what v1 points at, never for a file).
    hub.log_clear()
    c = run(hub, cache, ours('version=1, backend="cpu"'))
    assert c["ok"] and c["path"] == a["path"]
    # (the redirect check reads kernel-status.toml's absence from the top
    # folder's listing, an API request: nothing under /resolve/ at all)
    assert hub.requests(path="/resolve/") == [] and hub.count(listener="cdn") == 0
    assert hub.count("GET", "/tree/") == 2
    assert blobs(cache) == before


def test_small_variant_both_ways(hub, tmp_path):
    # Not only img2gray: a plain test variant (a C library and a Python
    # package calling it through ctypes) fetched by one client, imported by
    # the other offline.
    tree = tmp_path / "tree"
    tb.make_variant(tree / "build" / tb.torch_cpu_variant(), name="answer", answer=42)
    tb.publish_tree(hub, "acme/answer", tree)
    code = ("import {m}\nk = {m}.get_kernel('acme/answer', revision={rev!r}, backend='cpu')\n"
            "print(json.dumps({{'answer': k.answer(), 'path': str(pathlib.Path(k.__file__).parent)}}))")
    code_ours, code_theirs = code.format(m="libkernels", rev="v1"), code.format(m="kernels", rev="v1")
    # Offline after `kernels` fetched it, libkernels needs the opt-in (no
    # publisher verdict was recorded).
    code_ours_opted_in = code_ours.replace("backend='cpu'", "backend='cpu', trust_remote_code=True")
    for first, second, name in ((code_ours, code_theirs, "a"), (code_theirs, code_ours_opted_in, "b")):
        cache = tmp_path / f"cache-{name}"
        x = run(hub, cache, first)
        hub.log_clear()
        # A branch name given as the revision is recorded in refs/ by both.
        y = run(hub, cache, second, offline=True)
        assert x == y and x["answer"] == 42
        assert hub.log() == []


LOCK = """
    import types
    import kernels.cli.lock as cli_lock
    d = pathlib.Path({dir!r})
    cli_lock.lock_kernels(types.SimpleNamespace(project_dir=d))
    print(json.dumps(json.loads((d / "kernels.lock").read_text())))
"""


def test_lock_written_by_kernels_used_by_binding(hub, tmp_path):
    tags = publish_img2gray(hub)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        f'[project]\nname = "app"\n\n[tool.kernels.dependencies]\n"{REPO}" = 1\n')
    cache = tmp_path / "cache"
    lock = run(hub, cache, LOCK.format(dir=str(project)))
    # kernels 0.17's format: the dependency as written and the commit of its major.
    assert lock == [{"dependency": {"repo-id": REPO, "version": 1}, "lock": {"commit": tags["v1.1.2"]}}]
    lockfile = project / "kernels.lock"

    # Nothing cached yet: load_kernel (cache only) refuses and names the command to run.
    fresh = tmp_path / "fresh"
    hub.log_clear()
    out = run(hub, fresh, f"""
        import libkernels
        try:
            libkernels.load_kernel({REPO!r}, lockfile=pathlib.Path({str(lockfile)!r}))
            print(json.dumps({{"error": None}}))
        except libkernels.OfflineError as e:
            print(json.dumps({{"error": str(e)}}))
    """)
    assert out["error"] and "download" in out["error"]
    assert hub.count(path="/resolve/") == 0

    got = run(hub, fresh, f"import libkernels\nk = libkernels.get_locked_kernel({REPO!r}, "
                          f"lockfile=pathlib.Path({str(lockfile)!r}))\n" + textwrap.dedent(CHECK_RESULT))
    assert got["ok"] and got["version"] == 1

    # Now cached: `kernels`' load_kernel reads what libkernels downloaded, offline.
    hub.log_clear()
    again = run(hub, fresh, f"import kernels\nk = kernels.load_kernel({REPO!r}, "
                            f"lockfile=pathlib.Path({str(lockfile)!r}))\n" + textwrap.dedent(CHECK_RESULT),
                offline=True)
    assert again["ok"] and again["path"] == got["path"]
    assert hub.log() == []


def test_lock_and_download_by_libkernels_loaded_by_kernels(hub, tmp_path):
    publish_img2gray(hub)
    manifest = f'[project]\nname = "app"\n\n[tool.kernels.dependencies]\n"{REPO}" = 1\n'
    ours_dir, theirs_dir = tmp_path / "ours", tmp_path / "theirs"
    for d in (ours_dir, theirs_dir):
        d.mkdir()
        (d / "pyproject.toml").write_text(manifest)
    cache = tmp_path / "cache"
    run(hub, tmp_path / "cache-theirs", LOCK.format(dir=str(theirs_dir)))
    # `libkernels lock` + `libkernels download` (the binding's lock_project /
    # download_project), then `kernels`' load_kernel offline.
    run(hub, cache, f"""
        import libkernels
        p = libkernels.lock_project({str(ours_dir)!r})
        libkernels.download_project({str(ours_dir)!r}, backend="cpu")
        print(json.dumps({{"lock": str(p)}}))
    """)
    assert (ours_dir / "kernels.lock").read_bytes() == (theirs_dir / "kernels.lock").read_bytes()
    hub.log_clear()
    got = run(hub, cache, f"import kernels\nk = kernels.load_kernel({REPO!r}, "
                          f"lockfile=pathlib.Path({str(ours_dir / 'kernels.lock')!r}), backend='cpu')\n"
              + textwrap.dedent(CHECK_RESULT), offline=True)
    assert got["ok"] and got["op"] and "-cpu-" in got["variant"]
    assert hub.log() == []

"""Bundles from the command line (`libkernels bundle`, `bundle ls`, `bundle
import`), and what matters most to a fleet: a cache filled only by an
import, with no Hub at all, is one Python kernels 0.17.2 loads offline with
no request. tests/test_bundle.c covers the library (hostile archives,
kills, partial caches) in depth."""
import hashlib
import io
import json
import pathlib
import tarfile

import test_binding as tb
from test_cli import Cli
from test_interop_kernels import run

# By major version, tag and branch, in one process (one torch import).
THEIRS = ("import kernels\n"
          "ks = [kernels.get_kernel('acme/answer', backend='cpu', **how) for how in "
          "({'version': 1}, {'revision': 'v1'}, {'revision': 'v1.0.0'})]\n"
          "print(json.dumps({'answers': [k.answer() for k in ks]}))")


def make_bundle(hub, tmp_path):
    tree = tmp_path / "tree"
    tb.make_variant(tree / "build" / tb.torch_cpu_variant(), name="answer", answer=42)
    tb.publish_tree(hub, "acme/answer", tree)
    proj = tmp_path / "app"
    proj.mkdir()
    (proj / "pyproject.toml").write_text('[tool.kernels.dependencies]\n"acme/answer" = 1\n')
    src = Cli(hub, tmp_path / "src-cache")
    src.run("lock", str(proj), check=0)
    bundle = tmp_path / "kernels.bundle"
    src.run("bundle", str(proj), "-o", str(bundle), check=0)
    return src, bundle


def test_bundle_import_then_python_kernels_loads_offline(hub, tmp_path):
    src, bundle = make_bundle(hub, tmp_path)
    listing = src.json("bundle", "ls", str(bundle))
    assert {"metadata.json", "__init__.py"} <= {f["path"] for f in listing["files"]}
    assert {"v1", "v1.0.0"} <= {r["name"] for r in listing["refs"]}
    assert "acme/answer@" in src.run("bundle", "ls", str(bundle), check=0).stdout
    # --system: only what the described system resolves to (test_cli's: torch 2.11, cpu)
    one = tmp_path / "system.bundle"
    src.run("bundle", str(tmp_path / "app"), "-o", str(one), "--system", check=0)
    assert {f["variant"] for f in src.json("bundle", "ls", str(one))["files"]} == {tb.torch_cpu_variant()}
    p = src.run("bundle", str(tmp_path / "app"), "-o", str(one), "--system", "--backend", "rocm", check=1)
    assert "no variant for this system" in p.stderr

    cache = tmp_path / "fleet-cache"
    fleet = Cli(None, cache)  # no Hub: a closed port
    hub.log_clear()
    first = fleet.json("bundle", "import", str(bundle), "--offline")
    assert first["variants_added"] == 1 and first["blobs_added"] >= 3
    again = fleet.json("bundle", "import", str(bundle), "--offline")
    assert again["variants_added"] == 0 and again["blobs_added"] == 0 and again["refs_written"] == 0
    assert run(hub, cache, THEIRS, offline=True)["answers"] == [42, 42, 42]
    assert hub.log() == []


def test_older_bundle_keeps_the_newer_refs(hub, tmp_path):
    """An older bundle imported after a newer one leaves the branches where they are, says so on stderr
    with the way to take the bundle's, and does it when asked that way."""
    src, old = make_bundle(hub, tmp_path)
    tree = tmp_path / "tree-new"
    tb.make_variant(tree / "build" / tb.torch_cpu_variant(), name="answer", answer=43)
    newer_commit = tb.publish_tree(hub, "acme/answer", tree, tags=["v1.1.0"])
    src.run("lock", str(tmp_path / "app"), check=0)
    new = tmp_path / "new.bundle"
    src.run("bundle", str(tmp_path / "app"), "-o", str(new), check=0)

    fleet = Cli(None, tmp_path / "fleet-cache")
    fleet.run("bundle", "import", str(new), "--offline", check=0)
    p = fleet.run("bundle", "import", str(old), "--offline", check=0)
    main = pathlib.Path(fleet.cache) / "kernels--acme--answer" / "refs" / "main"
    assert main.read_text().strip() == newer_commit
    assert "refs/main kept at" in p.stderr and f"remove {main}" in p.stderr, p.stderr
    main.unlink()
    fleet.run("bundle", "import", str(old), "--offline", check=0)
    assert main.read_text().strip() != newer_commit


def build_bundle(out, src, bundle, proj, extra=()):
    """A bundle made here, by Python's tarfile (plain tar, no zstd), from the
    manifest format alone: what another tool, or an attacker, would write."""
    listing = src.json("bundle", "ls", str(bundle))
    lock = (proj / "kernels.lock").read_bytes()
    repos = {}
    for f in listing["files"]:
        r = repos.setdefault(f["commit"], {"repo_id": f["repo_id"], "type": "kernel", "commit": f["commit"],
                                            "refs": {}, "variants": {}})
        r["variants"].setdefault(f["variant"], []).append({k: f[k] for k in ("path", "size", "sha256", "etag")})
    for ref in listing["refs"]:
        repos[ref["commit"]]["refs"][ref["name"]] = ref["commit"]
    manifest = {"format": "libkernels-bundle", "version": 1,
                "lock": {"size": len(lock), "sha256": hashlib.sha256(lock).hexdigest()},
                "repos": [dict(r, variants=[{"name": n, "files": fs} for n, fs in r["variants"].items()])
                          for r in repos.values()]}

    def add(t, name, data):
        info = tarfile.TarInfo(name)
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))

    with tarfile.open(out, "w") as t:
        add(t, "manifest.json", json.dumps(manifest).encode())
        add(t, "kernels.lock", lock)
        for f in listing["files"]:
            snap = pathlib.Path(src.cache) / "kernels--acme--answer" / "snapshots" / f["commit"] / "build"
            add(t, f"kernels--acme--answer/{f['commit']}/build/{f['variant']}/{f['path']}",
                (snap / f["variant"] / f["path"]).read_bytes())
        for name, data in extra:
            add(t, name, data)


def test_hostile_bundle_refused_with_nothing_imported(hub, tmp_path):
    src, bundle = make_bundle(hub, tmp_path)
    proj, cache = tmp_path / "app", tmp_path / "fleet-cache"
    fleet = Cli(None, cache)
    hostile = tmp_path / "hostile.tar"
    build_bundle(hostile, src, bundle, proj, extra=[("kernels--acme--answer/../../escape", b"x")])
    p = fleet.run("bundle", "import", str(hostile), "--offline", check=1)
    assert "'..'" in p.stderr and "nothing was imported" in p.stderr
    assert not (tmp_path / "escape").exists()
    assert not list(cache.glob("*/snapshots/*")) and not list(cache.glob("*/refs/*"))
    assert not list(cache.glob("*/blobs/*"))
    # the same, honest, imports
    honest = tmp_path / "honest.tar"
    build_bundle(honest, src, bundle, proj)
    assert fleet.json("bundle", "import", str(honest), "--offline")["variants_added"] == 1

    p = fleet.run("bundle", "import", str(proj / "kernels.lock"), check=1)
    assert "not a bundle" in p.stderr
    p = fleet.run("bundle", str(proj), check=2)
    assert "-o FILE" in p.stderr

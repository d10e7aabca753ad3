"""A cache huggingface_hub wrote without symlinks (HF_HUB_DISABLE_SYMLINKS=1,
or a filesystem that has none): each file is a regular file in
snapshots/<commit>/, its blob moved there (blobs/ stays empty).

libkernels loads such a cache offline, gets and downloads from it online
with no file fetched again and nothing rewritten (huggingface_hub reads it
the same afterwards), lists, verifies and bundles it; every file is still
verified: against metadata.json's digest, or, for a variant built before
digests, against the Hub's listing of the commit the cache recorded.
"""

import json
import os
import subprocess
import sys

from test_cache_interop import V1, check_files, ours
from test_cache_interop import variant_files as interop_files
from test_cli import CPU29, CPU211, Cli, build_variant, lfs_concat_hash, publish_kernel, tree_files

HF = r"""
import sys
from huggingface_hub import snapshot_download
print(snapshot_download(sys.argv[1], repo_type="kernel", revision=sys.argv[2], allow_patterns=[f"build/{sys.argv[3]}/*"]))
"""


def hf_fill(hub, cache, revision, variant, offline=False):
    """huggingface_hub's snapshot_download of one variant, without symlinks."""
    env = hub.hf_env(cache, HF_HUB_DISABLE_SYMLINKS="1", HF_HUB_DISABLE_SYMLINKS_WARNING="1",
                     HF_HUB_OFFLINE="1" if offline else "0")
    env["HF_HOME"] = str(cache) + "-home"
    p = subprocess.run([sys.executable, "-c", HF, "org/k", revision, variant], env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip()


def layout(cache, commit):
    """{path under the snapshot: 'file' or the link's target}, and the blobs."""
    repo = os.path.join(cache, "kernels--org--k")
    snap = os.path.join(repo, "snapshots", commit)
    out = {}
    for d, _, names in os.walk(snap):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, snap)] = os.readlink(p) if os.path.islink(p) else "file"
    blobs = os.path.join(repo, "blobs")
    return out, sorted(os.listdir(blobs)) if os.path.isdir(blobs) else []


def resolves(hub):
    return hub.count(path="/resolve/") + hub.count(listener="cdn")


def project(tmp_path):
    d = tmp_path / "app"
    d.mkdir()
    (d / "pyproject.toml").write_text('[project]\nname = "app"\n[tool.kernels.dependencies]\n"org/k" = 1\n')
    return d


def publish_without_digest(hub, tmp_path):
    """A variant built before kernel-builder wrote digests."""
    folder = build_variant(str(tmp_path / "src" / CPU211), "k", 7)
    meta = os.path.join(folder, "metadata.json")
    with open(meta) as f:
        m = json.load(f)
    del m["digest"]
    with open(meta, "w") as f:
        json.dump(m, f)
    commit = hub.publish("org/k", files=tree_files(folder, f"build/{CPU211}"), tags=["v1.0.0"], branches=["main"])
    hub.publish(None, org="org", trusted=True)
    return commit


def test_loads_offline_and_online_without_fetching_again(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path)
    cache = tmp_path / "cache"
    hf_fill(hub, cache, "v1.0.0", CPU211)
    before = layout(cache, commit)
    assert set(before[0].values()) == {"file"} and before[1] == []

    cli = Cli(hub, cache)
    hub.log_clear()
    for rev in ("v1.0.0", commit, commit[:8]):
        j = cli.json("get", "org/k", rev, "--offline", "--trusted-orgs", "org")
        assert j["commit"] == commit and j["from_cache"] is True
    assert hub.log() == []

    # Online: get, and the download API (which lists the commit and
    # fetches what the cache lacks), find every file there.
    j = cli.json("get", "org/k", "v1.0.0")
    assert j["download"]["blobs_downloaded"] == 0
    r = ours(hub, cache, "org/k", commit, CPU211)
    assert r["rc"] == 0, r["error"]
    assert resolves(hub) == 0
    assert layout(cache, commit) == before
    assert hf_fill(hub, cache, "v1.0.0", CPU211, offline=True).endswith(commit)

    # The commit's other variant comes down as usual, beside the plain files.
    r = ours(hub, cache, "org/k", commit, CPU29)
    assert r["rc"] == 0, r["error"]
    assert layout(cache, commit)[0][f"build/{CPU29}/metadata.json"].startswith("../../../../blobs/")


def test_cache_ls_verify_and_rm(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path)
    cache = tmp_path / "cache"
    hf_fill(hub, cache, "v1.0.0", CPU211)
    cli = Cli(hub, cache)
    (repo,) = cli.json("cache", "ls")["repos"]
    (snap,) = repo["snapshots"]
    assert [(v["name"], v["files"]) for v in snap["variants"]] == [(CPU211, 5)]
    assert repo["refs"] == {"v1.0.0": commit}

    d = project(tmp_path)
    cli.run("lock", str(d), check=0)
    hub.log_clear()
    assert cli.json("verify", str(d), "--offline")["ok"]
    assert hub.log() == []

    j = cli.json("cache", "rm", "org/k", "--revision", commit)
    assert j["commit"] == commit and j["freed_bytes"] > 0
    assert not os.path.exists(cache / "kernels--org--k" / "snapshots" / commit)


def test_bundle_from_plain_files(hub, tmp_path):
    """A bundle names each file's blob: for a plain file, the hash the
    Hub's listing gives its path (recorded by the lock, which lists the
    commit); the bytes come from the snapshot. Offline and online (where
    the transfer engine looks first) it holds the same files (the refs
    differ: online the Hub's come too); a fresh cache imports it and loads
    offline."""
    commit, files = publish_kernel(hub, tmp_path)
    cache = tmp_path / "cache"
    hf_fill(hub, cache, "v1.0.0", CPU211)
    cli = Cli(hub, cache)
    d = project(tmp_path)
    cli.run("lock", str(d), check=0)
    on, off = tmp_path / "on.bundle", tmp_path / "off.bundle"
    cli.run("bundle", str(d), "-o", str(off), "--variant", CPU211, "--offline", check=0)
    hub.log_clear()
    cli.run("bundle", str(d), "-o", str(on), "--variant", CPU211, check=0)
    assert resolves(hub) == 0
    listed = cli.json("bundle", "ls", str(off))["files"]
    assert listed == cli.json("bundle", "ls", str(on))["files"]
    assert {f["path"] for f in listed} == {p.split("/", 2)[2] for p in files if p.startswith(f"build/{CPU211}/")}
    fleet = Cli(None, tmp_path / "fleet")
    fleet.run("bundle", "import", str(off), check=0)
    assert fleet.json("get", "org/k", commit, "--offline", "--trusted-orgs", "org")["commit"] == commit

    # With no listing recorded, the blob names are unknown: said so.
    lost = tmp_path / "lost"
    hf_fill(hub, lost, "v1.0.0", CPU211)
    p = Cli(hub, lost).run("bundle", str(d), "-o", str(tmp_path / "x.bundle"), "--variant", CPU211, "--offline",
                           check=1)
    assert "no record of the Hub's listing" in p.stderr and "once online" in p.stderr


def test_variant_without_digest_is_checked_against_the_listing(hub, tmp_path):
    commit = publish_without_digest(hub, tmp_path)
    cache = tmp_path / "cache"
    hf_fill(hub, cache, "v1.0.0", CPU211)
    before = layout(cache, commit)
    cli = Cli(hub, cache)

    # Offline, with no listing recorded, nothing can vouch for the files.
    p = cli.run("get", "org/k", commit, "--offline", "--trusted-orgs", "org", check=1)
    assert "without symlinks" in p.stderr and "once online" in p.stderr

    # Online the listing comes (and is recorded): no file fetched again, none rewritten.
    hub.log_clear()
    assert cli.json("get", "org/k", "v1.0.0")["commit"] == commit
    assert resolves(hub) == 0
    assert layout(cache, commit) == before
    hub.log_clear()
    assert cli.json("get", "org/k", "v1.0.0", "--offline")["commit"] == commit
    assert hub.log() == []

    # A plain file changed in place is refused offline, and fetched again online.
    so = [p for p in before[0] if p.endswith(".so")][0]
    victim = cache / "kernels--org--k" / "snapshots" / commit / so
    data = bytearray(victim.read_bytes())
    data[-1] ^= 1
    victim.write_bytes(bytes(data))
    p = cli.run("get", "org/k", "v1.0.0", "--offline", check=1)
    assert "does not match the hash" in p.stderr
    hub.log_clear()
    assert cli.json("get", "org/k", "v1.0.0")["download"]["blobs_downloaded"] == 1
    assert layout(cache, commit)[0][so].startswith("../../../../blobs/")


def test_libkernels_writes_plain_files_when_symlinks_are_disabled(hub, tmp_path, monkeypatch):
    """HF_HUB_DISABLE_SYMLINKS=1: libkernels lays the snapshot out as
    huggingface_hub does with it (new blobs moved in, blobs/ left empty),
    files sharing a blob and an LFS file (through the CDN) included."""
    files = interop_files()
    commit = hub.publish("org/k", files=files, branches=["main"])
    ours_cache, hf_cache = tmp_path / "ours", tmp_path / "hf"
    monkeypatch.setenv("HF_HUB_DISABLE_SYMLINKS", "1")
    r = ours(hub, ours_cache, "org/k", commit, V1)
    assert r["rc"] == 0, r["error"]
    hf_fill(hub, hf_cache, commit, V1)
    mine = layout(ours_cache, commit)
    assert mine == layout(hf_cache, commit)
    assert set(mine[0].values()) == {"file"} and mine[1] == []
    check_files(r["path"], files, V1)
    assert hf_fill(hub, ours_cache, commit, V1, offline=True) == r["path"]

    # Fetched again: nothing comes, nothing changes; offline it loads too.
    hub.log_clear()
    assert ours(hub, ours_cache, "org/k", commit, V1)["rc"] == 0
    assert resolves(hub) == 0 and layout(ours_cache, commit) == mine
    assert ours(hub, ours_cache, "org/k", commit, V1, offline=True)["rc"] == 0


def test_kernels09_lock_hash_over_plain_files(hub, tmp_path):
    """A kernels 0.9 lock's variant hash (git_lfs_concat) over a snapshot of
    plain files: which files are the commit's, and which LFS files, the
    recorded listing says (kernels 0.9 itself hashes links only, so its
    check always fails there); each file is hashed as it is."""
    commit, files = publish_kernel(hub, tmp_path)
    cache = tmp_path / "cache"
    hf_fill(hub, cache, "v1.0.0", CPU211)
    d = project(tmp_path)
    lock = [{"repo_id": "org/k", "sha": commit,
             "variants": {CPU211: {"hash": lfs_concat_hash(files, CPU211), "hash_type": "git_lfs_concat"}}}]
    (d / "kernels.lock").write_text(json.dumps(lock))
    cli = Cli(hub, cache)
    p = cli.run("verify", str(d), "--offline", check=1)
    assert "without symlinks" in p.stdout and "once online" in p.stdout

    hub.log_clear()
    cli.run("load", "org/k", str(d), "--fetch", check=0)
    assert resolves(hub) == 0
    assert cli.json("verify", str(d), "--offline")["ok"]
    cli.run("load", "org/k", str(d), "--offline", check=0)

    ops = cache / "kernels--org--k" / "snapshots" / commit / "build" / CPU211 / "_ops.py"
    ops.write_bytes(ops.read_bytes() + b"#")
    (v,) = cli.json("verify", str(d), "--offline", check=1)["kernels"][0]["variants"]
    assert v["hash_ok"] is False

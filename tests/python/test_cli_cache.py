"""`libkernels cache ls` and `libkernels cache rm`: what the cache holds, and safe removal."""

import json
import os
import subprocess

from test_cli import CLI, CPU29, CPU211, Cli, closed_port_endpoint, publish_kernel


def fill(hub, tmp_path):
    c1, _ = publish_kernel(hub, tmp_path, answer=1, tags=("v1.0.0",))
    c2, _ = publish_kernel(hub, tmp_path, answer=2, tags=("v1.1.0",))
    cli = Cli(hub, tmp_path / "cache")
    cli.run("get", "org/k", "v1.0.0", check=0)
    cli.run("get", "org/k", "v1.1.0", check=0)
    cli.run("get", "org/k", "v1.1.0", "--torch", "2.9", check=0)
    return cli, c1, c2


def test_cache_ls(hub, tmp_path):
    cli, c1, c2 = fill(hub, tmp_path)
    j = cli.json("cache", "ls")
    assert j["cache_dir"] == cli.cache
    (repo,) = j["repos"]
    assert repo["repo_id"] == "org/k" and repo["type"] == "kernel" and repo["size"] > 0
    assert repo["refs"]["v1.0.0"] == c1 and repo["refs"]["v1.1.0"] == c2
    snaps = {s["commit"]: s for s in repo["snapshots"]}
    assert set(snaps) == {c1, c2}
    assert [v["name"] for v in snaps[c1]["variants"]] == [CPU211]
    assert sorted(v["name"] for v in snaps[c2]["variants"]) == sorted([CPU211, CPU29])
    assert all(v["files"] >= 4 and v["size"] > 0 for v in snaps[c2]["variants"])
    assert "v1.1.0" in snaps[c2]["refs"]
    text = cli.run("cache", "ls", check=0).stdout
    assert "org/k (kernel)" in text and c1 in text and CPU29 in text
    assert cli.json("cache", "ls", "org/other")["repos"] == []


def test_cache_ls_json_keeps_names_that_are_not_utf8(tmp_path):
    # Folder names are bytes: one that is not UTF-8 is listed (U+FFFD), as
    # the text listing shows it, not left out of the JSON.
    cli = Cli(None, tmp_path / "cache")
    commit = b"0" * 40
    for repo in (b"kernels--org--good", b"kernels--org--k\xff"):
        variant = os.path.join(os.fsencode(cli.cache), repo, b"snapshots", commit, b"build", b"v\xff")
        os.makedirs(variant)
        with open(os.path.join(variant, b"f"), "w") as f:
            f.write("a")
    p = subprocess.run([CLI, "cache", "ls", "--json"], env=cli.env, capture_output=True, timeout=60)
    repos = json.loads(p.stdout)["repos"]
    assert sorted(r["repo_id"] for r in repos) == ["org/good", "org/k\ufffd"], p
    assert [v["name"] for r in repos for v in r["snapshots"][0]["variants"]] == ["v\ufffd", "v\ufffd"]


def test_cache_rm_revision_then_repo(hub, tmp_path):
    cli, c1, c2 = fill(hub, tmp_path)
    repo_dir = os.path.join(cli.cache, "kernels--org--k")
    blobs_before = set(os.listdir(os.path.join(repo_dir, "blobs")))
    j = cli.json("cache", "rm", "org/k", "--revision", "v1.0.0", "--dry-run")
    assert j["dry_run"] and j["commit"] == c1 and os.path.isdir(os.path.join(repo_dir, "snapshots", c1))
    j = cli.json("cache", "rm", "org/k", "--revision", c1[:8])
    assert j["commit"] == c1 and j["freed_bytes"] > 0
    assert sorted(os.listdir(os.path.join(repo_dir, "snapshots"))) == [c2]
    assert not os.path.exists(os.path.join(repo_dir, "refs", "v1.0.0"))
    assert os.path.exists(os.path.join(repo_dir, "refs", "v1.1.0"))
    # Blobs only the removed snapshot used are gone; the other snapshot still loads offline.
    assert set(os.listdir(os.path.join(repo_dir, "blobs"))) < blobs_before
    assert cli.json("get", "org/k", "v1.1.0", "--offline")["from_cache"] is True
    p = cli.run("cache", "rm", "org/k", check=0)
    assert f"removed {repo_dir}" in p.stdout
    assert not os.path.exists(repo_dir)
    assert cli.json("cache", "ls")["repos"] == []


def test_cache_rm_never_follows_links(hub, tmp_path):
    cli, c1, _ = fill(hub, tmp_path)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    snap = os.path.join(cli.cache, "kernels--org--k", "snapshots", c1)
    os.symlink(str(outside), os.path.join(snap, "escape"))
    os.symlink(str(outside / "keep.txt"), os.path.join(snap, "escape-file"))
    cli.run("cache", "rm", "org/k", "--revision", c1, check=0)
    assert (outside / "keep.txt").read_text() == "keep"
    # A repo folder that is itself a link out of the cache is not touched.
    os.symlink(str(outside), os.path.join(cli.cache, "kernels--org--linked"))
    p = cli.run("cache", "rm", "org/linked", check=1)
    assert "not in the cache" in p.stderr and (outside / "keep.txt").exists()
    cli.run("cache", "rm", "org/k", check=0)
    assert (outside / "keep.txt").read_text() == "keep"


def test_cache_bad_arguments(hub, tmp_path):
    cli, c1, _ = fill(hub, tmp_path)
    assert cli.run("cache", "rm", check=2).returncode == 2
    for bad in ("../x", "org/../x", "org", "org/a/b", "org--x/k", "/etc"):
        assert cli.run("cache", "rm", bad, check=2).returncode == 2, bad
    assert cli.run("cache", "ls", "noslash", check=2).returncode == 2
    assert cli.run("cache", "rm", "org/k", "--revision", "", check=2).returncode == 2
    for rev in ("nope", "../../..", "deadbeef"):
        assert cli.run("cache", "rm", "org/k", "--revision", rev, check=1).returncode == 1
    p = cli.run("cache", "rm", "org/missing", "--json", check=1)
    assert json.loads(p.stdout)["error"]["name"] == "not found" and "org/missing" in p.stderr
    assert os.path.isdir(os.path.join(cli.cache, "kernels--org--k", "snapshots", c1))


def test_cache_hub_down(hub, tmp_path):
    """The cache commands never need the Hub."""
    cli, c1, _ = fill(hub, tmp_path)
    down = Cli(None, tmp_path / "cache", endpoint=closed_port_endpoint())
    assert down.json("cache", "ls")["repos"][0]["repo_id"] == "org/k"
    assert down.json("cache", "rm", "org/k", "--revision", c1)["commit"] == c1
    assert json.loads(down.run("cache", "ls", "--json", check=0).stdout)["repos"][0]["snapshots"]


def test_trust_json_tells_untrusted_from_unverified(hub, tmp_path):
    """`trust --json` says "untrusted" only when the Hub said so (recorded), and "unverified" when no
    endpoint gave a verdict (a mirror without the organization API: nothing recorded); both exit 1."""
    publish_kernel(hub, tmp_path)
    publish_kernel(hub, tmp_path, repo="stranger/k", trusted=False)
    hub.publish(None, org="stranger", trusted=False)
    cli = Cli(hub, tmp_path / "cache")
    cli.run("get", "org/k", "v1", check=0)
    cli.run("get", "stranger/k", "v1", "--trust-remote-code", check=0)
    verdicts = {r["repo_id"]: r["verdict"] for r in cli.json("trust", check=1)["repos"]}
    assert verdicts == {"org/k": "trusted", "stranger/k": "untrusted"}

    mirror = Cli(hub, tmp_path / "cache-mirror")
    mirror.run("get", "stranger/k", "v1", "--trust-remote-code", check=0)
    hub.config(org_overview=False)
    assert mirror.json("trust", check=1)["repos"] == [{"repo_id": "stranger/k", "verdict": "unverified"}]
    p = mirror.run("trust", "stranger/k", check=1)
    assert "got no verdict, so nothing was recorded" in p.stdout, p.stdout + p.stderr
    assert not os.path.exists(os.path.join(mirror.cache, "kernels--stranger--k", ".libkernels", "trust.json"))


def test_trust_hub_down_names_the_repo(tmp_path):
    """A Hub that cannot be asked fails `trust`, naming the repo it asked about."""
    cli = Cli(None, tmp_path / "cache", endpoint=closed_port_endpoint())
    os.makedirs(os.path.join(cli.cache, "kernels--org--k", "snapshots", "0" * 40))
    p = cli.run("trust", "--retries", "0", "--json", check=1)
    assert "libkernels: error: org/k: " in p.stderr, p.stderr
    assert json.loads(p.stdout)["error"]["code"] < 0

"""`libkernels lock`, `download`, `verify` and `load` against the local Hub."""

import json
import os

from test_cli import CPU29, CPU211, CU130, Cli, closed_port_endpoint, lfs_concat_hash, publish_kernel


def project(tmp_path, deps='"org/k" = 1\n'):
    d = tmp_path / "proj"
    d.mkdir(exist_ok=True)
    (d / "pyproject.toml").write_text('[project]\nname = "app"\n\n[tool.kernels.dependencies]\n' + deps)
    return d


def test_lock_download_verify(hub, tmp_path):
    commit, files = publish_kernel(hub, tmp_path)
    d = project(tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    j = cli.json("lock", str(d))
    assert j["format"] == "dependency"
    assert j["kernels"] == [{"repo_id": "org/k", "commit": commit, "version": 1}]
    lock = json.loads((d / "kernels.lock").read_text())
    assert lock == [{"dependency": {"repo-id": "org/k", "version": 1}, "lock": {"commit": commit}}]
    assert cli.run("lock", str(d), check=0).stdout.startswith(f"org/k {commit} (version 1)")

    # Nothing cached yet: verify fails and names the download command.
    p = cli.run("verify", str(d), check=1)
    assert f"libkernels download {d}" in p.stdout
    # -q leaves the error (errors only), as every failing command does.
    assert "verification of" in cli.run("verify", str(d), "-q", check=1).stderr
    # A cache the options cannot name is the library's refusal, not every kernel uncached.
    p = cli.run("verify", str(d), "--cache-dir", "", check=1)
    assert "--cache-dir" in p.stderr and "not in the cache" not in p.stdout, p.stdout + p.stderr

    j = cli.json("download", str(d))
    assert j["kernels"][0]["commit"] == commit and j["kernels"][0]["variants"] == [CPU211]
    j = cli.json("verify", str(d))
    assert j["ok"] is True
    v = j["kernels"][0]["variants"]
    assert [x["name"] for x in v] == [CPU211] and v[0]["digest_ok"] and v[0]["hash_ok"] is None
    assert v[0]["hash"] == lfs_concat_hash(files, CPU211)

    j = cli.json("download", str(d), "--all-variants")
    assert j["all_variants"] is True and sorted(j["kernels"][0]["variants"]) == sorted([CPU211, CPU29, CU130])
    assert cli.run("verify", str(d), check=0).stdout.count("ok   org/k") == 3

    # A tampered blob: verify fails and names the file.
    snap = j["kernels"][0]["snapshot"]
    target = os.path.realpath(os.path.join(snap, "build", CPU29, "_ops.py"))
    os.chmod(target, 0o644)
    with open(target, "a") as f:
        f.write("# tampered\n")
    p = cli.run("verify", str(d), "--json", check=1)
    out = json.loads(p.stdout)
    bad = [x for x in out["kernels"][0]["variants"] if not x["ok"]]
    assert [x["name"] for x in bad] == [CPU29] and "_ops.py" in bad[0]["digest_error"]
    assert out["ok"] is False


def test_verify_variants_lock_hashes(hub, tmp_path):
    """A kernels 0.9 lock (variant hashes): verify checks the git_lfs_concat hash."""
    commit, files = publish_kernel(hub, tmp_path)
    d = project(tmp_path)
    lock = [{"repo_id": "org/k", "sha": commit, "variants": {
        v: {"hash": lfs_concat_hash(files, v), "hash_type": "git_lfs_concat"} for v in (CPU211, CPU29, CU130)}}]
    (d / "kernels.lock").write_text(json.dumps(lock, indent=2))
    cli = Cli(hub, tmp_path / "cache")
    cli.run("download", str(d), "--all-variants", check=0)
    j = cli.json("verify", str(d))
    assert j["format"] == "variants" and j["ok"]
    assert all(v["hash_ok"] and v["hash"] == v["lock_hash"] for v in j["kernels"][0]["variants"])
    # A lock hash that differs from the cached files.
    lock[0]["variants"][CPU29]["hash"] = "sha256-" + "0" * 64
    (d / "kernels.lock").write_text(json.dumps(lock, indent=2))
    p = cli.run("verify", str(d), check=1)
    assert f"FAIL org/k {commit} {CPU29}: lock hash" in p.stdout


def test_project_bad_arguments(hub, tmp_path):
    cli = Cli(hub, tmp_path / "cache")
    for c in ("lock", "download", "verify"):
        assert cli.run(c, "a", "b", check=2).returncode == 2
    # DIR defaults to the current folder for each of them.
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    assert "'./pyproject.toml'" in cli.run("lock", check=1, cwd=cwd).stderr
    for c in ("download", "verify"):
        assert "./kernels.lock" in cli.run(c, check=1, cwd=cwd).stderr
    assert cli.run("download", str(tmp_path), "--all-variants=1", check=2).returncode == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "pyproject.toml" in cli.run("lock", str(empty), check=1).stderr
    assert "kernels.lock" in cli.run("download", str(empty), check=1).stderr
    assert "kernels.lock" in cli.run("verify", str(empty), check=1).stderr
    d = project(tmp_path, deps='"org/k" = [1\n')
    assert cli.run("lock", str(d), check=1).returncode == 1
    (d / "kernels.lock").write_text("[{")
    p = cli.run("verify", str(d), "--json", check=1)
    assert json.loads(p.stdout)["error"]["message"]


def test_project_hub_down(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path)
    d = project(tmp_path)
    Cli(hub, tmp_path / "cache").run("lock", str(d), check=0)
    before = (d / "kernels.lock").read_bytes()
    down_fresh = Cli(None, tmp_path / "cache-down", endpoint=closed_port_endpoint())
    p = down_fresh.run("lock", str(d), "--retries", "0", "--trust-remote-code", check=1)
    assert "cannot be reached" in p.stderr
    assert (d / "kernels.lock").read_bytes() == before
    down = Cli(None, tmp_path / "cache", endpoint=closed_port_endpoint())
    p = down.run("download", str(d), "--retries", "0", "--trust-remote-code", check=1)
    assert "libkernels: error:" in p.stderr
    # verify needs no Hub at all.
    Cli(hub, tmp_path / "cache").run("download", str(d), check=0)
    assert down.run("verify", str(d), check=0).returncode == 0


def test_lock_specifier_and_global_options_first(hub, tmp_path):
    c1, _ = publish_kernel(hub, tmp_path, answer=1, tags=("v1.0.0",))
    c2, files2 = publish_kernel(hub, tmp_path, answer=2, tags=("v1.1.0",))
    publish_kernel(hub, tmp_path, answer=3, tags=("v2.0.0",), branches=("main", "v2"))
    d = project(tmp_path, deps='"org/k" = ">=1.0,<2"\n')
    # Global options may come before the command; the endpoint option wins over HF_ENDPOINT.
    cli = Cli(None, tmp_path / "cache", endpoint=closed_port_endpoint())
    j = cli.json("--endpoint", hub.endpoint, "-q", "lock", str(d))
    # A specifier manifest is locked in the kernels 0.9 format: commit + variant hashes.
    assert j["format"] == "variants"
    assert j["kernels"] == [{"repo_id": "org/k", "commit": c2, "variants": {
        v: lfs_concat_hash(files2, v) for v in (CPU211, CPU29, CU130)}}]
    lock = json.loads((d / "kernels.lock").read_text())
    assert lock[0]["sha"] == c2 and lock[0]["variants"][CPU211]["hash"] == j["kernels"][0]["variants"][CPU211]
    assert c1 != c2
    # verify then checks the lock hashes of what download fetched.
    cli.run("--endpoint", hub.endpoint, "download", str(d), check=0)
    j = cli.json("verify", str(d))
    assert j["ok"] and [v["hash_ok"] for v in j["kernels"][0]["variants"]] == [True]


def test_load_locked_offline_and_tampered(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path)
    d = project(tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    cli.run("lock", str(d), check=0)
    # Not cached: the message names the download command, and nothing was requested.
    hub.log_clear()
    p = cli.run("load", "org/k", str(d), check=1)
    assert "libkernels download" in p.stderr
    assert hub.log() == []
    cli.run("download", str(d), check=0)
    hub.log_clear()
    j = cli.json("load", "org/k", str(d))
    assert j["commit"] == commit and j["variant"] == CPU211 and j["lock_file"] == str(d / "kernels.lock")
    assert j["metadata"]["id"] == "_k_100"
    assert hub.log() == []  # a locked load makes no request at all
    # The same from inside the project folder, and with the lock file named directly.
    assert cli.json("load", "org/k", str(d / "kernels.lock"))["commit"] == commit
    # A tampered cached file: the load fails and names the file.
    target = os.path.realpath(os.path.join(j["path"], "_ops.py"))
    os.chmod(target, 0o644)
    with open(target, "a") as f:
        f.write("# tampered\n")
    p = cli.run("load", "org/k", str(d), check=1)
    assert "_ops.py" in p.stderr
    assert cli.run("load", "org/other", str(d), check=1).returncode == 1


def test_load_fetch(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path)
    d = project(tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    cli.run("lock", str(d), check=0)
    assert cli.json("load", "org/k", str(d), "--fetch")["commit"] == commit
    assert cli.run("load", check=2).returncode == 2
    assert cli.run("load", "org/k", str(d), "extra", check=2).returncode == 2
    down = Cli(None, tmp_path / "cache-down", endpoint=closed_port_endpoint())
    p = down.run("load", "org/k", str(d), "--fetch", "--retries", "0", "--trust-remote-code", check=1)
    assert "cannot reach the Hub" in p.stderr or "cannot be reached" in p.stderr


def test_project_commands_from_the_project_folder(hub, tmp_path):
    """lock, download, verify and load without DIR: the current folder, as Python `kernels` does."""
    commit, _ = publish_kernel(hub, tmp_path)
    d = project(tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    assert cli.run("lock", check=0, cwd=d).stdout.startswith(f"org/k {commit} (version 1)")
    assert (d / "kernels.lock").is_file()
    assert cli.run("download", check=0, cwd=d).stdout.split() == ["org/k", commit, CPU211]
    assert cli.run("verify", check=0, cwd=d).stdout.startswith(f"ok   org/k {commit} {CPU211}")
    p = cli.run("load", "org/k", check=0, cwd=d)
    assert f"commit:    {commit}" in p.stdout and "lock:      ./kernels.lock" in p.stdout
    # A cache-only load says nothing on stderr: no network, nothing to warn about.
    assert p.stderr == "", p.stderr

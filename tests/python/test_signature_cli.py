"""`libkernels verify-signature` and --require-signature, against the local
Hub, with variants signed by the stand-in sigstore of
tests/data/sigstore/testsign.py (its trusted root through
KERNELS_SIGSTORE_TRUSTED_ROOT). The lines and exit codes are those of
Python kernels 0.17's `kernels verify-signature` (kernels/cli/verify_signature.py)."""
import json
import os

import pytest

from signature_support import run_testsign
from test_cli import CPU29, CPU211, SYSTEM_ENV, Cli, build_variant, tree_files

SIGNER_OTHER = "https://github.com/evil/kernels/.github/workflows/build.yaml@refs/heads/main"


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("sigkeys")
    run_testsign("init", d)
    return d


def signed_repo(hub, tmp, keys, repo, how):
    """Publishes `repo` with one variant per entry of `how` {variant: sign args, or None: unsigned,
    or "tamper": signed, then the module changed}."""
    pkg = repo.split("/")[1].replace("-", "_")
    files = {}
    for i, (variant, sign) in enumerate(how.items()):
        d = build_variant(os.path.join(tmp, repo, variant), pkg, 100 + i)
        if sign is not None:
            run_testsign("sign", keys, os.path.join(d, "metadata.json"), os.path.join(d, "metadata.json.sigstore"),
                         *([] if sign == "tamper" else sign))
        if sign == "tamper":
            with open(os.path.join(d, f"_{pkg}_{100 + i}.abi3.so"), "ab") as f:
                f.write(b"\0")
        files.update(tree_files(d, f"build/{variant}"))
    hub.publish(repo, files=files, tags=["v1.0.0"], branches=["main", "v1"])
    hub.publish(None, org=repo.split("/")[0], trusted=True)


def cli(hub, tmp_path, keys):
    return Cli(hub, tmp_path / "cache", extra_env=dict(SYSTEM_ENV, KERNELS_SIGSTORE_TRUSTED_ROOT=str(
        keys / "trusted_root.json")))


def test_valid_signature(hub, tmp_path, keys):
    signed_repo(hub, str(tmp_path), keys, "acme/good", {CPU211: [], CPU29: []})
    c = cli(hub, tmp_path, keys)
    p = c.run("verify-signature", "acme/good", "--revision", "1")
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"\u2705 {CPU211}: kernel metadata is correctly signed\n"
    p = c.run("verify-signature", "acme/good", "--revision", "v1.0.0", "--all-variants")
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [f"\u2705 {v}: kernel metadata is correctly signed" for v in sorted([CPU211, CPU29])]
    p = c.run("verify-signature", "acme/good", "--revision", "1", "--all-variants", "--json")
    out = json.loads(p.stdout)
    assert out["ok"] and {v["status"] for v in out["variants"]} == {"valid"}


def test_each_failure_is_worded_as_kernels_0_17(hub, tmp_path, keys):
    signed_repo(hub, str(tmp_path), keys, "acme/mixed", {
        CPU211: ["--signer", SIGNER_OTHER],
        CPU29: None,
        "torch210-cxx11-cpu-x86_64-linux": "tamper",
        "torch28-cxx11-cpu-x86_64-linux": ["--case", "bad-proof"],
    })
    c = cli(hub, tmp_path, keys)
    p = c.run("verify-signature", "acme/mixed", "--revision", "1", "--all-variants")
    assert p.returncode == 1
    out = p.stdout
    assert f"\u274c {CPU29}: cannot verify kernel integrity, signature not found\n" in out
    assert f"\u274c {CPU211}: metadata signature verification failed:\n" in out
    assert "not one a policy accepts" in out
    assert "\u274c torch210-cxx11-cpu-x86_64-linux: kernel integrity check failed\n  hash mismatch: _mixed_102.abi3.so" \
        in out
    assert "\u274c torch28-cxx11-cpu-x86_64-linux: metadata signature verification failed:\n" in out
    assert "inclusion proof" in out
    # --filter-unsigned drops the unsigned one, not the others.
    p = c.run("verify-signature", "acme/mixed", "--revision", "1", "--all-variants", "--filter-unsigned")
    assert p.returncode == 1 and CPU29 not in p.stdout and CPU211 in p.stdout


def test_filter_unsigned_alone_passes(hub, tmp_path, keys):
    signed_repo(hub, str(tmp_path), keys, "acme/unsigned", {CPU211: None})
    c = cli(hub, tmp_path, keys)
    assert c.run("verify-signature", "acme/unsigned", "--revision", "1").returncode == 1
    p = c.run("verify-signature", "acme/unsigned", "--revision", "1", "--filter-unsigned")
    assert p.returncode == 0 and p.stdout == ""


def test_require_signature_on_get_and_download(hub, tmp_path, keys):
    signed_repo(hub, str(tmp_path), keys, "acme/plain", {CPU211: None})
    signed_repo(hub, str(tmp_path), keys, "acme/signed", {CPU211: []})
    c = cli(hub, tmp_path, keys)
    assert c.run("get", "acme/plain", "1").returncode == 0
    p = c.run("get", "acme/plain", "1", "--require-signature")
    assert p.returncode == 1 and "has no signature" in p.stderr, p.stderr
    assert c.run("get", "acme/signed", "1", "--require-signature").returncode == 0
    # download of a lock file's kernels: each downloaded variant checked.
    for repo, want in (("acme/signed", 0), ("acme/plain", 1)):
        proj = tmp_path / repo.replace("/", "-")
        proj.mkdir()
        (proj / "pyproject.toml").write_text(f'[tool.kernels.dependencies]\n"{repo}" = 1\n')
        assert c.run("lock", str(proj)).returncode == 0
        p = c.run("download", str(proj), "--require-signature")
        assert p.returncode == want, p.stderr
        if want:
            assert "signature not found" in p.stderr

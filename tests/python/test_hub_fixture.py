"""The local Hub fixture is faithful: the real huggingface_hub (pinned in
tests/requirements.txt), git and plain HTTP clients see what they would see
on the Hub, and every fault mode is visible to a client."""

import hashlib
import os
import subprocess
import sys
import time

import httpx
import pytest

import huggingface_hub
from huggingface_hub import HfApi, hf_hub_download, snapshot_download
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.file_download import get_hf_file_metadata, hf_hub_url

from hubclient import http, random_bytes

BIG = 3 * 1024 * 1024 + 17  # over the default 1 MiB LFS threshold


def kernel_files(version=b"1"):
    files = {
        ".gitattributes": b"*.lfs filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": b"# test kernel " + version + b"\n",
        "build/torch-cpu/__init__.py": b"VERSION = " + version + b"\n",
        "build/torch-cpu/small.lfs": random_bytes(100, 1),  # LFS by .gitattributes rule
        "build/torch-cuda/weights.bin": random_bytes(BIG, 2),  # LFS by size
        "build/torch-cuda/exec.sh": (b"#!/bin/sh\n", True),
    }
    for i in range(60):  # enough entries for several tree pages
        files[f"build/torch-universal/mod_{i:02}.py"] = f"X = {i}\n".encode()
    return files


def content(data):
    return data[0] if isinstance(data, tuple) else data


def publish_history(hub, repo="org/kern", repo_type="kernel"):
    """Commit 1 tagged v1.0.0, commit 2 tagged v1.1.0 (branches main, v1), commit 3 tagged v2.0.0 (v2)."""
    c1 = hub.publish(repo, repo_type=repo_type, files=kernel_files(b"1"), tags=["v1.0.0"], branches=["main", "v1"])
    c2 = hub.publish(repo, repo_type=repo_type, files=kernel_files(b"2"), tags=["v1.1.0"], branches=["main", "v1"])
    c3 = hub.publish(repo, repo_type=repo_type, files=kernel_files(b"3"), tags=["v2.0.0"], branches=["v2"])
    return c1, c2, c3


def assert_same_tree(local_dir, files):
    seen = set()
    for dirpath, _, filenames in os.walk(local_dir):
        for fn in filenames:
            rel = os.path.relpath(os.path.join(dirpath, fn), local_dir)
            seen.add(rel)
            with open(os.path.join(dirpath, fn), "rb") as f:
                assert f.read() == content(files[rel]), rel
    assert seen == set(files)


def test_snapshot_download_kernel_repo_is_byte_identical(hub, tmp_path):
    c1, c2, _ = publish_history(hub)
    api = HfApi(endpoint=hub.endpoint)
    assert api.kernel_info("org/kern", revision="v1").sha == c2

    path = snapshot_download(
        "org/kern", repo_type="kernel", revision="v1.1.0", cache_dir=tmp_path, endpoint=hub.endpoint
    )
    assert os.path.basename(path) == c2
    assert_same_tree(path, kernel_files(b"2"))

    # The cache is the Hub's layout: blobs named by ETag (sha256 for LFS files).
    repo_dir = tmp_path / "kernels--org--kern"
    assert (repo_dir / "refs" / "v1.1.0").read_text() == c2
    big_sha = hashlib.sha256(kernel_files(b"2")["build/torch-cuda/weights.bin"]).hexdigest()
    assert (repo_dir / "blobs" / big_sha).stat().st_size == BIG
    assert os.path.islink(os.path.join(path, "build/torch-cuda/weights.bin"))

    # LFS bytes came from the CDN after a redirect, the tree was paged.
    assert hub.count("GET", "/lfs/" + big_sha, listener="cdn", status=200) == 1
    assert hub.count("HEAD", f"/resolve/{c2}/build/torch-cuda/weights.bin", status=302) == 1
    tree_pages = hub.requests("GET", "/api/kernels/org/kern/tree/v1.1.0")
    assert len(tree_pages) >= 2 and any("cursor=" in e["query"] for e in tree_pages)
    assert not any(e["authorization"] for e in hub.requests(listener="cdn"))

    # A second snapshot of the same revision downloads nothing again.
    hub.log_clear()
    snapshot_download("org/kern", repo_type="kernel", revision="v1.1.0", cache_dir=tmp_path, endpoint=hub.endpoint)
    assert hub.count("GET", listener="cdn") == 0
    assert hub.count("GET", "/resolve/") == 0


def test_snapshot_download_model_repo_by_short_commit(hub, tmp_path):
    c1, _, _ = publish_history(hub, repo="org/modl", repo_type="model")
    info = HfApi(endpoint=hub.endpoint).model_info("org/modl", revision=c1[:7], files_metadata=True)
    assert info.sha == c1
    assert {s.rfilename for s in info.siblings} == set(kernel_files())
    big = next(s for s in info.siblings if s.rfilename == "build/torch-cuda/weights.bin")
    assert big.lfs.size == BIG and big.size == BIG
    path = snapshot_download("org/modl", revision=c1[:7], cache_dir=tmp_path, endpoint=hub.endpoint)
    assert os.path.basename(path) == c1
    assert_same_tree(path, kernel_files(b"1"))


def test_hf_endpoint_environment_variable(hub, tmp_path):
    """The plain way: only HF_ENDPOINT / HF_HUB_CACHE point at the fixture."""
    _, c2, _ = publish_history(hub)
    script = (
        "import sys; from huggingface_hub import snapshot_download;"
        "print(snapshot_download('org/kern', repo_type='kernel', revision='v1'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=hub.hf_env(tmp_path), check=True, stdout=subprocess.PIPE
    ).stdout.decode()
    path = out.strip().splitlines()[-1]
    assert path.startswith(str(tmp_path)) and path.endswith(c2)
    assert_same_tree(path, kernel_files(b"2"))


def test_list_repo_refs_sees_tags_and_branches(hub):
    c1, c2, c3 = publish_history(hub)
    hub.publish("org/kern", target="v1.0.0", tags=["v0.9.0"], annotated=True)
    refs = HfApi(endpoint=hub.endpoint).list_repo_refs("org/kern", repo_type="kernel")
    assert {b.name: b.target_commit for b in refs.branches} == {"main": c2, "v1": c2, "v2": c3}
    assert {t.name: t.target_commit for t in refs.tags} == {"v0.9.0": c1, "v1.0.0": c1, "v1.1.0": c2, "v2.0.0": c3}
    assert all(t.ref == "refs/tags/" + t.name for t in refs.tags)


def test_git_ls_remote_and_clone(hub, tmp_path):
    c1, c2, c3 = publish_history(hub)
    out = subprocess.run(
        ["git", "ls-remote", hub.url("/kernels/org/kern")], check=True, stdout=subprocess.PIPE
    ).stdout.decode()
    refs = {line.split("\t")[1]: line.split("\t")[0] for line in out.splitlines()}
    assert refs["refs/heads/main"] == c2 and refs["refs/heads/v2"] == c3
    assert refs["refs/tags/v1.0.0"] == c1 and refs["refs/tags/v2.0.0"] == c3
    assert refs["HEAD"] == c2

    dest = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--branch", "v2", hub.url("/kernels/org/kern.git"), str(dest)], check=True)
    assert (dest / "build/torch-cpu/__init__.py").read_bytes() == b"VERSION = 3\n"
    # LFS files are real pointers in git.
    pointer = (dest / "build/torch-cuda/weights.bin").read_text()
    assert pointer.startswith("version https://git-lfs.github.com/spec/v1\noid sha256:")
    assert f"size {BIG}" in pointer

    # The model URL form does not find a kernel repo.
    proc = subprocess.run(["git", "ls-remote", hub.url("/org/kern")], capture_output=True)
    assert proc.returncode != 0


def test_tree_paging_and_paths(hub):
    publish_history(hub)
    api = HfApi(endpoint=hub.endpoint)
    hub.config(page_size=7)
    hub.log_clear()
    entries = list(api.list_repo_tree("org/kern", repo_type="kernel", revision="v2", recursive=True))
    files = {e.path for e in entries if type(e).__name__ == "RepoFile"}
    dirs = {e.path for e in entries if type(e).__name__ == "RepoFolder"}
    assert files == set(kernel_files())
    assert dirs == {"build", "build/torch-cpu", "build/torch-cuda", "build/torch-universal"}
    assert hub.count("GET", "/tree/v2") == -(-len(entries) // 7)

    variants = list(api.list_repo_tree("org/kern", path_in_repo="build", repo_type="kernel", revision="v2"))
    assert sorted(e.path for e in variants) == ["build/torch-cpu", "build/torch-cuda", "build/torch-universal"]
    small = next(
        e
        for e in api.list_repo_tree("org/kern", path_in_repo="build/torch-cpu", repo_type="kernel", revision="v2")
        if e.path.endswith("small.lfs")
    )
    assert small.lfs.sha256 == hashlib.sha256(random_bytes(100, 1)).hexdigest()
    assert small.lfs.size == 100 and small.size == 100 and small.lfs.pointer_size > 100

    with pytest.raises(EntryNotFoundError):
        list(api.list_repo_tree("org/kern", path_in_repo="nope", repo_type="kernel", revision="v2"))


def test_resolve_headers_and_ranges(hub):
    _, c2, _ = publish_history(hub)
    status, headers, body = http("GET", hub.url("/kernels/org/kern/resolve/v1/README.md"))
    assert status == 200 and body == b"# test kernel 2\n"
    blob = hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest()
    assert headers["ETag"] == f'"{blob}"' and headers["X-Repo-Commit"] == c2

    status, headers, body = http("GET", hub.url("/kernels/org/kern/resolve/v1/README.md"), {"Range": "bytes=2-5"})
    assert status == 206 and body == b"test" and headers["Content-Range"] == "bytes 2-5/16"

    url = hf_hub_url("org/kern", "build/torch-cuda/weights.bin", repo_type="kernel", revision="v1", endpoint=hub.endpoint)
    meta = get_hf_file_metadata(url)
    sha = hashlib.sha256(kernel_files(b"2")["build/torch-cuda/weights.bin"]).hexdigest()
    assert meta.etag == sha and meta.size == BIG and meta.commit_hash == c2
    assert meta.location.startswith(hub.cdn + "/")
    status, headers, body = http("GET", meta.location, {"Range": f"bytes={BIG - 10}-"})
    assert status == 206 and body == kernel_files(b"2")["build/torch-cuda/weights.bin"][-10:]
    assert headers["Content-Range"] == f"bytes {BIG - 10}-{BIG - 1}/{BIG}"


def test_errors_match_the_hub(hub, tmp_path):
    publish_history(hub)
    api = HfApi(endpoint=hub.endpoint)
    with pytest.raises(RepositoryNotFoundError):
        api.list_repo_refs("org/missing", repo_type="kernel")
    with pytest.raises(RepositoryNotFoundError):  # a kernel repo is not a model repo
        api.model_info("org/kern")
    with pytest.raises(RevisionNotFoundError):
        api.kernel_info("org/kern", revision="v9")
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(
            "org/kern", "nope.txt", repo_type="kernel", revision="v1", cache_dir=tmp_path, endpoint=hub.endpoint
        )


def test_private_and_gated_repos(hub, tmp_path):
    hub.publish("org/priv", files={"a.txt": b"secret"}, private_tokens=["tok-read"])
    hub.publish("org/gate", files={"a.txt": b"gated"}, gated="manual", granted_tokens=["tok-granted"])
    api = HfApi(endpoint=hub.endpoint)

    with pytest.raises(RepositoryNotFoundError):
        api.kernel_info("org/priv")
    with pytest.raises(RepositoryNotFoundError):
        api.kernel_info("org/priv", token="wrong")
    assert api.kernel_info("org/priv", token="tok-read").private is True
    path = hf_hub_download(
        "org/priv", "a.txt", repo_type="kernel", cache_dir=tmp_path, endpoint=hub.endpoint, token="tok-read"
    )
    assert open(path, "rb").read() == b"secret"

    assert api.kernel_info("org/gate").gated == "manual"  # info is public
    for token in (None, "other"):
        with pytest.raises(GatedRepoError):
            hf_hub_download(
                "org/gate", "a.txt", repo_type="kernel", cache_dir=tmp_path / "g", endpoint=hub.endpoint, token=token
            )
    path = hf_hub_download(
        "org/gate", "a.txt", repo_type="kernel", cache_dir=tmp_path / "g", endpoint=hub.endpoint, token="tok-granted"
    )
    assert open(path, "rb").read() == b"gated"

    # git: 401 asking for credentials, then a Bearer header works.
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    assert subprocess.run(["git", "ls-remote", hub.url("/kernels/org/priv")], env=env, capture_output=True).returncode
    status, headers, _ = http("GET", hub.url("/kernels/org/priv/info/refs?service=git-upload-pack"))
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic")
    out = subprocess.run(
        ["git", "-c", "http.extraHeader=Authorization: Bearer tok-read", "ls-remote", hub.url("/kernels/org/priv")],
        env=env,
        check=True,
        stdout=subprocess.PIPE,
    ).stdout.decode()
    assert "refs/heads/main" in out
    assert hub.count("GET", "/kernels/org/priv/info/refs", status=200) == 1


def test_org_overview_trust(hub, monkeypatch):
    hub.publish("good/k", files={"a": b"1"}, trusted=True)
    hub.publish("bad/k", files={"a": b"1"})
    # get_organization_overview reads the module-level endpoint.
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.endpoint)
    api = HfApi(endpoint=hub.endpoint)
    assert api.get_organization_overview("good").trustedKernelPublisher is True
    assert api.get_organization_overview("bad").trustedKernelPublisher is False
    hub.publish(org="bad", trusted=True)
    assert api.get_organization_overview("bad").trustedKernelPublisher is True
    with pytest.raises(HfHubHTTPError):
        api.get_organization_overview("nobody")


# -- fault injection: each mode is visible to a client --------------------------

WEIGHTS = "build/torch-cuda/weights.bin"


def download_weights(hub, cache_dir, **kwargs):
    return hf_hub_download(
        "org/kern", WEIGHTS, repo_type="kernel", revision="v1", cache_dir=cache_dir, endpoint=hub.endpoint, **kwargs
    )


def expected_weights():
    return kernel_files(b"2")["build/torch-cuda/weights.bin"]


@pytest.mark.parametrize("code", ["500", "503"])
def test_fault_server_error_raises(hub, tmp_path, code):
    publish_history(hub)
    hub.fault(path="/lfs/", mode=code, count=1)
    with pytest.raises(HfHubHTTPError) as err:
        download_weights(hub, tmp_path)
    assert err.value.response.status_code == int(code)
    assert hub.count("GET", "/lfs/", listener="cdn", status=int(code)) == 1
    # Count exhausted: the next try works.
    assert open(download_weights(hub, tmp_path), "rb").read() == expected_weights()


def test_fault_server_error_retried_by_backoff(hub):
    publish_history(hub)
    hub.config(page_size=10)
    # Later tree pages go through huggingface_hub's backoff, which retries 503.
    hub.fault(path="/tree/", query="cursor=", mode="503", count=1)
    api = HfApi(endpoint=hub.endpoint)
    entries = list(api.list_repo_tree("org/kern", repo_type="kernel", revision="v1", recursive=True))
    assert len([e for e in entries if type(e).__name__ == "RepoFile"]) == len(kernel_files())
    assert hub.count("GET", "/tree/", status=503) == 1


def test_fault_429_then_retried(hub, tmp_path):
    publish_history(hub)
    hub.fault(path="/lfs/", mode="429", retry_after=1, count=1)
    path = download_weights(hub, tmp_path)
    assert open(path, "rb").read() == expected_weights()
    statuses = [e["status"] for e in hub.requests("GET", "/lfs/", listener="cdn")]
    assert statuses == [429, 200]
    hub.fault(path="/refs", mode="429", retry_after=7)
    status, headers, _ = http("GET", hub.url("/api/kernels/org/kern/refs"))
    assert status == 429 and headers["Retry-After"] == "7"


@pytest.mark.parametrize("mode", ["reset", "truncate"])
def test_fault_broken_body_detected(hub, tmp_path, mode):
    publish_history(hub)
    hub.fault(path="/lfs/", mode=mode, after_bytes=1024 * 1024, count=1)
    with pytest.raises(httpx.HTTPError) as err:
        download_weights(hub, tmp_path)
    expected = httpx.ReadError if mode == "reset" else httpx.RemoteProtocolError
    assert isinstance(err.value, expected)
    if mode == "reset":
        assert "reset" in str(err.value).lower()
    # Nothing incomplete is exposed as the file; the next try gets it whole.
    snapshots = tmp_path / "kernels--org--kern" / "snapshots"
    assert not snapshots.exists() or not any(p.name == "weights.bin" for p in snapshots.rglob("*"))
    assert open(download_weights(hub, tmp_path), "rb").read() == expected_weights()
    assert [e["fault"] for e in hub.requests("GET", "/lfs/", listener="cdn")] == [mode, None]


def test_fault_truncate_raw_http_short_body(hub):
    publish_history(hub)
    hub.fault(path="/resolve/v1/README.md", mode="truncate", after_bytes=5)
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.get(hub.url("/kernels/org/kern/resolve/v1/README.md"))


def test_fault_wrong_bytes_visible_as_hash_mismatch(hub, tmp_path):
    publish_history(hub)
    hub.fault(path="/lfs/", mode="wrong_bytes", after_bytes=4096)
    path = download_weights(hub, tmp_path)
    data = open(path, "rb").read()
    assert len(data) == BIG and data != expected_weights()
    etag = os.path.basename(os.path.realpath(path))  # the blob is named by the expected sha256
    assert hashlib.sha256(data).hexdigest() != etag
    assert hashlib.sha256(expected_weights()).hexdigest() == etag


def test_fault_slow_response_hits_timeout(hub):
    publish_history(hub)
    url = hf_hub_url("org/kern", "README.md", repo_type="kernel", revision="v1", endpoint=hub.endpoint)
    hub.fault(path="/resolve/v1/README.md", mode="slow", delay=2)
    with pytest.raises(httpx.TimeoutException):
        get_hf_file_metadata(url, timeout=0.5)
    # The slow reply finishes, then is logged; waited for, not slept on
    # (the 60 s only guard against a hang).
    deadline = time.monotonic() + 60
    while not hub.requests("HEAD", "/resolve/v1/README.md") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert hub.requests("HEAD", "/resolve/v1/README.md")[0]["fault"] == "slow"
    assert get_hf_file_metadata(url, timeout=5).commit_hash


def test_fault_on_git_endpoint(hub):
    publish_history(hub)
    hub.fault(path="/info/refs", mode="503")
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    proc = subprocess.run(["git", "ls-remote", hub.url("/kernels/org/kern")], env=env, capture_output=True)
    assert proc.returncode != 0
    assert subprocess.run(["git", "ls-remote", hub.url("/kernels/org/kern")], env=env, capture_output=True).returncode == 0


def test_publish_cli_and_control_validation(hub):
    sha = hub.publish_cli("--repo", "org/cli", "--text", "a.txt=hello", "--random", "b.bin=2000000:5", "--tag", "v1.0.0")
    assert len(sha) == 40
    refs = HfApi(endpoint=hub.endpoint).list_repo_refs("org/cli", repo_type="kernel")
    assert [t.name for t in refs.tags] == ["v1.0.0"] and refs.tags[0].target_commit == sha
    c1, c2, none = hub.publish_spec(
        [
            {"repo": "org/spec", "files": {"run.sh": {"text": "#!/bin/sh", "exec": True}, "b": {"base64": "AAE="}}},
            {"repo": "org/spec", "files": {"c": "3"}, "overlay": True, "tags": ["v1"], "type": "kernel"},
            {"org": "org", "trusted": True},
        ]
    )
    assert none is None
    tree = {e.path: e for e in HfApi(endpoint=hub.endpoint).list_repo_tree("org/spec", repo_type="kernel", revision="v1")}
    assert set(tree) == {"run.sh", "b", "c"}
    status, _, body = http("GET", hub.url("/kernels/org/spec/resolve/main/b"))
    assert body == b"\x00\x01"
    ls = subprocess.run(
        ["git", "--git-dir", os.path.join(hub.root, "repos/kernels/org/spec.git"), "ls-tree", c2, "run.sh"],
        check=True,
        stdout=subprocess.PIPE,
    ).stdout.decode()
    assert ls.startswith("100755 ")
    status, _, _ = http(
        "POST", hub.url("/_fixture/faults"), {"Content-Type": "application/json"}, b'{"mode": "bogus"}'
    )
    assert status == 400
    assert hub.faults() == []


def test_fault_reset_before_headers_and_mid_body_stall(hub):
    publish_history(hub)
    hub.fault(path="/resolve/v1/README.md", mode="reset")
    with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
        httpx.get(hub.url("/kernels/org/kern/resolve/v1/README.md"))
    # A stall after the first bytes trips a read timeout mid-body.
    hub.fault(path="/lfs/", mode="slow", after_bytes=1000, delay=2)
    loc = httpx.head(hub.url(f"/kernels/org/kern/resolve/v1/{WEIGHTS}")).headers["location"]
    got = 0
    with pytest.raises(httpx.ReadTimeout):
        with httpx.stream("GET", loc, timeout=0.5) as r:
            assert r.status_code == 200
            for chunk in r.iter_bytes():
                got += len(chunk)
    assert got == 1000


def test_server_goes_away_with_its_parent(tmp_path):
    """A test process that dies without stopping its hub leaves nothing behind."""
    script = (
        "import os, sys; sys.path.insert(0, %r); from hubclient import Hub;"
        "h = Hub.start(); print(h.proc.pid, h.root, flush=True); os._exit(0)" % os.path.dirname(__file__)
    )
    out = subprocess.run([sys.executable, "-c", script], check=True, stdout=subprocess.PIPE).stdout.decode()
    pid, root = out.split()
    deadline = time.monotonic() + 60  # a hang guard: it is gone within a second
    while time.monotonic() < deadline and (os.path.exists(f"/proc/{pid}") or os.path.exists(root)):
        time.sleep(0.1)
    assert not os.path.exists(root)
    # The server is a zombie of the dead child at most (reaped by init), never still serving.
    if os.path.exists(f"/proc/{pid}/stat"):
        assert open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] == "Z"

"""Helpers for the `libkernels` command-line tool tests: the binary, test
variants compiled at test time (a tiny C shared object + Python files +
metadata.json from tests/data/variants/make_metadata.py), publishing them to
the local Hub, and running the tool against it."""

import hashlib
import json
import os
import platform
import socket
import subprocess
import sys

SOURCE_DIR = os.environ.get("KERNELS_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
)
BINARY_DIR = os.environ.get("KERNELS_BINARY_DIR") or os.path.join(SOURCE_DIR, "build")
CLI = os.path.join(BINARY_DIR, "bindings", "cli", "libkernels")
MAKE_METADATA = os.path.join(SOURCE_DIR, "tests", "data", "variants", "make_metadata.py")

ARCH = platform.machine()
CPU211 = f"torch211-cxx11-cpu-{ARCH}-linux"
CPU29 = f"torch29-cxx11-cpu-{ARCH}-linux"
CU130 = f"torch211-cxx11-cu130-{ARCH}-linux"
UNIVERSAL = "torch-universal"

# The system the tool resolves for: torch 2.11 (cxx11), cpu, no GPU.
SYSTEM_ENV = {
    "KERNELS_TORCH_VERSION": "2.11",
    "KERNELS_CXX11_ABI": "1",
    "KERNELS_BACKEND": "cpu",
    "KERNELS_GPU_ARCHS": "none",
}


def closed_port_endpoint():
    """An endpoint on a port nobody listens on: the Hub is down."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def build_variant(folder, pkg, answer, native=True, layout="current"):
    """A variant folder. layout "current": the package is the folder itself
    (__init__.py at the top) plus a {pkg}/ compatibility shim; "seed": the
    package is {pkg}/ only. With native, a C module answering `answer`."""
    os.makedirs(folder, exist_ok=True)
    pkgdir = folder if layout == "current" else os.path.join(folder, pkg)
    os.makedirs(pkgdir, exist_ok=True)
    so_name = f"_{pkg}_{answer}.abi3.so"
    if native:
        src = os.path.join(folder, "k.c.src")
        with open(src, "w") as f:
            f.write(f"int kernel_answer(void) {{ return {answer}; }}\n")
        subprocess.run(["cc", "-shared", "-fPIC", "-x", "c", "-o", os.path.join(pkgdir, so_name), src], check=True)
        os.remove(src)
        init = (
            "import ctypes, os\n"
            f"_lib = ctypes.CDLL(os.path.join(os.path.dirname(os.path.abspath(__file__)), {so_name!r}))\n"
            "def answer():\n    return _lib.kernel_answer()\n"
        )
    else:
        init = f"def answer():\n    return {answer}\n"
    with open(os.path.join(pkgdir, "__init__.py"), "w") as f:
        f.write(init)
    with open(os.path.join(pkgdir, "_ops.py"), "w") as f:
        f.write(f"ops = {answer!r}\n")
    if layout == "current":
        os.makedirs(os.path.join(folder, pkg), exist_ok=True)
        with open(os.path.join(folder, pkg, "__init__.py"), "w") as f:
            f.write("# compatibility shim: loads the package one folder up\nfrom .. import *\n")
    # kernels 0.17's metadata name: ^[a-z][-a-z0-9]*[a-z0-9]$ ("my-kernel" for the package my_kernel)
    name = pkg.replace("_", "-") if len(pkg) > 1 else pkg * 2
    subprocess.run(
        [sys.executable, MAKE_METADATA, folder, "--name", name, "--id", f"_{pkg}_{answer}", "--backend", "cpu"],
        check=True,
    )
    return folder


def tree_files(folder, prefix):
    """{repo path: bytes} of every file under folder."""
    out = {}
    for root, _, names in os.walk(folder):
        for n in names:
            p = os.path.join(root, n)
            rel = os.path.relpath(p, folder).replace(os.sep, "/")
            with open(p, "rb") as f:
                out[f"{prefix}/{rel}"] = (f.read(), os.access(p, os.X_OK))
    return out


def publish_kernel(hub, tmp, repo="org/k", variants=(CPU211, CPU29, CU130), answer=1, tags=("v1.0.0",),
                   branches=("main", "v1"), layout="current", universal=False, trusted=True):
    """Publishes one commit of `repo` with the given variants; returns (commit, files)."""
    pkg = repo.split("/")[1].replace("-", "_")
    files = {}
    for i, v in enumerate(variants):
        d = build_variant(os.path.join(tmp, f"src-{answer}", v), pkg, answer * 100 + i, layout=layout)
        files.update(tree_files(d, f"build/{v}"))
    if universal:
        d = build_variant(os.path.join(tmp, f"src-{answer}", UNIVERSAL), pkg, answer * 100 + 99, native=False,
                          layout=layout)
        files.update(tree_files(d, f"build/{UNIVERSAL}"))
    files["README.md"] = (b"test kernel\n", False)
    commit = hub.publish(repo, files=files, tags=list(tags), branches=list(branches))
    if trusted:
        hub.publish(None, org=repo.split("/")[0], trusted=True)
    return commit, files


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_concat_hash(files, variant):
    """git_lfs_concat (the lock hash of Python kernels' lockfile.py) of build/{variant} from published bytes
    (no LFS files here)."""
    prefix = f"build/{variant}/"
    pairs = sorted(
        (p[len(prefix):].encode(), bytes.fromhex(git_blob_sha1(data)))
        for p, (data, _) in files.items()
        if p.startswith(prefix) and not p.endswith(".pyc") and "__pycache__" not in p
    )
    h = hashlib.sha256()
    for path, digest in pairs:
        h.update(path)
        h.update(digest)
    return "sha256-" + h.hexdigest()


class Cli:
    """Runs the tool with a fresh cache against a hub (or a dead endpoint)."""

    def __init__(self, hub, cache, endpoint=None, extra_env=None):
        self.cache = str(cache)
        env = dict(os.environ)
        env.update(
            {
                "HF_ENDPOINT": endpoint or (hub.endpoint if hub else closed_port_endpoint()),
                "HF_HUB_CACHE": self.cache,
                "HF_HUB_OFFLINE": "",
                "HF_TOKEN": "",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
        )
        for k in ("KERNELS_CACHE", "LOCAL_KERNELS"):
            env.pop(k, None)
        env.update(SYSTEM_ENV)
        env.update(extra_env or {})
        self.env = env

    def run(self, *args, check=None, timeout=120, input=None, cwd=None):
        p = subprocess.run([CLI, *args], env=self.env, capture_output=True, text=True, timeout=timeout, input=input,
                           cwd=cwd)
        if check is not None:
            assert p.returncode == check, f"libkernels {' '.join(args)}: rc {p.returncode}\n{p.stdout}\n{p.stderr}"
        return p

    def json(self, *args, check=0, **kw):
        p = self.run(*args, "--json", check=check, **kw)
        return json.loads(p.stdout)


# ---- the tool itself --------------------------------------------------------

import pytest  # noqa: E402

COMMANDS = ["lock", "download", "info", "versions", "variants", "get", "load", "verify", "verify-signature", "to-wheel", "cache ls",
            "cache rm", "bundle", "bundle import", "bundle ls", "trust", "version"]


def test_help_lists_every_command(tmp_path):
    cli = Cli(None, tmp_path)
    p = cli.run("--help", check=0)
    for c in COMMANDS:
        assert f"\n  {c}" in p.stdout, c
    assert "exit status" in p.stdout.lower()
    for c in COMMANDS:
        p = cli.run(*c.split(), "--help", check=0)
        assert p.stdout.startswith(f"usage: libkernels {c}"), p.stdout
        assert "--json" in p.stdout and "exit status" in p.stdout


def test_usage_errors_exit_2(tmp_path):
    cli = Cli(None, tmp_path)
    assert cli.run().returncode == 2
    assert "unknown command" in cli.run("frobnicate", check=2).stderr
    assert "unknown option" in cli.run("versions", "org/k", "--frobnicate", check=2).stderr
    assert "missing argument" in cli.run("get", "org/k", check=2).stderr
    assert "unexpected argument" in cli.run("versions", "org/k", "extra", check=2).stderr
    assert "needs a value" in cli.run("versions", "org/k", "--endpoint", check=2).stderr
    assert "--timeout" in cli.run("versions", "org/k", "--timeout", "soon", check=2).stderr
    assert cli.run("cache", check=2).returncode == 2
    assert "cache frob" in cli.run("cache", "frob", check=2).stderr
    assert "takes no value" in cli.run("versions", "org/k", "--json=yes", check=2).stderr


def test_version(tmp_path):
    cli = Cli(None, tmp_path)
    out = cli.run("version", check=0).stdout
    assert out.startswith("libkernels ") and out.split()[1].count(".") == 2
    j = cli.json("version")
    assert j["version"] == out.split()[1]
    assert cli.run("--version", check=0).stdout == out
    assert cli.run("version", "extra", check=2).returncode == 2


def test_json_of_names_that_are_not_utf8(tmp_path):
    # A path is bytes; JSON is UTF-8: a byte that is not UTF-8 is U+FFFD in
    # --json, not a result (or error object) silently left out.
    cli = Cli(None, tmp_path / "cache")
    bad = tmp_path / os.fsdecode(b"p\xff")
    shown = str(bad).replace("\udcff", "\ufffd")

    def run(*args):
        return subprocess.run([CLI, *args, "--json"], env=cli.env, capture_output=True, timeout=60)

    p = run("cache", "ls", "--cache-dir", str(bad))
    assert p.returncode == 0 and json.loads(p.stdout)["cache_dir"] == shown, p
    p = run("verify", str(bad))
    assert p.returncode == 1 and shown in json.loads(p.stdout)["error"]["message"], p
    bad.mkdir()
    (bad / "kernels.lock").write_text("[]")
    p = run("verify", str(bad))
    assert p.returncode == 0 and json.loads(p.stdout)["lock_file"] == f"{shown}/kernels.lock", p


# ---- versions -----------------------------------------------------------------


def test_versions(hub, tmp_path):
    publish_kernel(hub, tmp_path, tags=("v1.0.0", "v1.1.0", "not-a-version"), branches=("main", "v1", "v2"))
    cli = Cli(hub, tmp_path / "cache")
    out = cli.run("versions", "org/k", check=0).stdout.split()
    assert out == ["v1", "v1.0.0", "v1.1.0", "v2"]
    j = cli.json("versions", "org/k")
    assert j == {"repo_id": "org/k", "versions": out}


def test_versions_bad_arguments(hub, tmp_path):
    cli = Cli(hub, tmp_path / "cache")
    assert cli.run("versions", check=2).returncode == 2
    p = cli.run("versions", "not a repo", check=1)
    assert "libkernels: error:" in p.stderr
    p = cli.run("versions", "org/missing", "--json", check=1)
    err = json.loads(p.stdout)["error"]
    assert err["code"] < 0 and "org/missing" in err["message"]


def test_versions_hub_down(tmp_path):
    cli = Cli(None, tmp_path / "cache")
    p = cli.run("versions", "org/k", "--retries", "0", check=1)
    assert "cannot be reached" in p.stderr


# ---- variants -----------------------------------------------------------------


def test_variants_trace(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path, universal=True)
    cli = Cli(hub, tmp_path / "cache")
    j = cli.json("variants", "org/k", "--revision", "v1")
    assert j["commit"] == commit and j["chosen"] == CPU211
    by = {v["name"]: v for v in j["variants"]}
    assert set(by) == {CPU211, CPU29, CU130, UNIVERSAL}
    assert by[CPU211]["accepted"] and by[CPU211]["chosen"] and by[CPU211]["rank"] == 0
    assert by[UNIVERSAL]["accepted"] and by[UNIVERSAL]["rank"] > 0 and not by[UNIVERSAL]["chosen"]
    for v in (CPU29, CU130):
        assert not by[v]["accepted"] and by[v]["reason"] and by[v]["rank"] is None
    text = cli.run("variants", "org/k", "--revision", "v1", check=0).stdout
    assert f"* {CPU211}" in text and "rejected:" in text and f"chosen:   {CPU211}" in text
    # Another system, another choice: the overrides reach the library.
    j = cli.json("variants", "org/k", "--revision", "main", "--torch", "2.9")
    assert j["chosen"] == CPU29


def test_variants_none_fits_exit_1(hub, tmp_path):
    publish_kernel(hub, tmp_path, variants=(CU130,))
    cli = Cli(hub, tmp_path / "cache")
    p = cli.run("variants", "org/k", "--revision", "main", "--json", check=1)
    j = json.loads(p.stdout)
    assert j["chosen"] is None and j["variants"][0]["accepted"] is False
    assert "fits" in p.stderr
    # -q: errors only, this one too.
    assert "fits" in cli.run("variants", "org/k", "--revision", "main", "-q", check=1).stderr


def test_variants_json_keeps_names_that_are_not_utf8(tmp_path):
    # Offline, the variants are the cache's build/ folders: a name that is
    # not UTF-8 is listed (U+FFFD) and rejected, as in the text, not dropped.
    cli = Cli(None, tmp_path / "cache")
    repo, commit = os.path.join(os.fsencode(cli.cache), b"kernels--org--k"), b"0" * 40
    for v in (CPU211.encode(), b"v\xff"):
        os.makedirs(os.path.join(repo, b"snapshots", commit, b"build", v))
    os.makedirs(os.path.join(repo, b"refs"))
    with open(os.path.join(repo, b"refs", b"main"), "wb") as f:
        f.write(commit)
    p = subprocess.run([CLI, "variants", "org/k", "--revision", "main", "--offline", "--trust-remote-code", "--json"],
                       env=cli.env, capture_output=True, timeout=60)
    names = [v["name"] for v in json.loads(p.stdout)["variants"]]
    assert sorted(names) == sorted([CPU211, "v\ufffd"]), p


def test_variants_bad_arguments(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    assert "--revision is required" in cli.run("variants", "org/k", check=2).stderr
    assert cli.run("variants", "org/k", "--revision", "nope", check=1).returncode == 1
    # a bad flag value is the command line's fault, named as the flag
    assert "--torch 'banana'" in cli.run("variants", "org/k", "--revision", "main", "--torch", "banana", check=2).stderr


def test_variants_hub_down(tmp_path):
    cli = Cli(None, tmp_path / "cache")
    p = cli.run("variants", "org/k", "--revision", "main", "--retries", "0", check=1)
    assert "cannot be reached" in p.stderr


# ---- get ------------------------------------------------------------------------


def test_get(hub, tmp_path):
    commit, _ = publish_kernel(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    j = cli.json("get", "org/k", "v1")
    assert j["repo_id"] == "org/k" and j["commit"] == commit and j["variant"] == CPU211
    assert j["path"].endswith(f"/snapshots/{commit}/build/{CPU211}") or os.path.isdir(j["path"])
    assert j["library"] and j["library"].endswith(".so")
    assert j["metadata"]["id"] == "_k_100" and j["metadata"]["name"] == "kk" and j["metadata"]["version"] == 1
    assert j["from_cache"] is False and j["download"]["bytes_downloaded"] > 0
    assert set(j["timings_ms"]) == {"resolve", "select", "download", "load"}
    hub.log_clear()
    j2 = cli.json("get", "org/k", commit[:7])
    assert j2["from_cache"] is True and j2["commit"] == commit
    assert hub.count(path="/resolve/") == 0
    text = cli.run("get", "org/k", "v1", check=0).stdout
    assert f"variant:   {CPU211}" in text and "timings:" in text and f"commit:    {commit}" in text
    # Offline from the cache, and plain progress lines when stderr is not a terminal.
    assert cli.json("get", "org/k", "v1", "--offline")["commit"] == commit
    p = Cli(hub, tmp_path / "cache2").run("get", "org/k", "v1", check=0)
    assert "libkernels: downloaded build/" in p.stderr and "\r" not in p.stderr


def test_get_untrusted_needs_flag(hub, tmp_path):
    publish_kernel(hub, tmp_path, repo="stranger/k", trusted=False)
    hub.publish(None, org="stranger", trusted=False)
    cli = Cli(hub, tmp_path / "cache")
    assert cli.run("get", "stranger/k", "v1", check=1).returncode == 1
    assert cli.json("get", "stranger/k", "v1", "--trust-remote-code")["variant"] == CPU211


def test_get_bad_arguments(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    assert cli.run("get", "org/k", check=2).returncode == 2
    p = cli.run("get", "org/k", "v9.9.9", check=1)
    assert "v9.9.9" in p.stderr
    assert cli.run("get", "org/k", "", check=1).returncode == 1


def test_get_hub_down(tmp_path):
    cli = Cli(None, tmp_path / "cache")
    p = cli.run("get", "org/k", "v1", "--retries", "0", check=1)
    # The revision is resolved (the repo must exist) before its publisher is asked.
    # Said once: the Hub is down and the cache lacks it; not "offline" (nobody asked for that).
    assert "cannot be reached" in p.stderr and "not in the cache" in p.stderr
    assert "HF_HUB_OFFLINE" not in p.stderr
    p = cli.run("get", "org/k", "v1", "--retries", "0", "--trust-remote-code", "--json", check=1)
    assert "cannot be reached" in p.stderr
    assert json.loads(p.stdout)["error"]["name"]


# ---- the backend flag, and the torch found outside the process ----------------


def test_backend_flag_is_reported_as_an_option(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    j = cli.json("variants", "org/k", "--revision", "v1", "--backend", "cuda", "--backend-version", "13.0")
    assert "backend cuda 13.0 (from options)" in j["system"], j["system"]
    assert j["chosen"] == CU130
    # The flag wins over KERNELS_BACKEND=cpu (SYSTEM_ENV); order does not matter.
    p = cli.run("--backend-version", "12.9", "variants", "org/k", "--revision", "v1", "--backend", "cuda", "--json",
                check=1)
    j = json.loads(p.stdout)
    assert "backend cuda 12.9 (from options)" in j["system"] and j["chosen"] is None
    # A version only the environment gives still belongs to the flag's backend.
    env_cli = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_CUDA_VERSION": "13.0"})
    j = env_cli.json("variants", "org/k", "--revision", "v1", "--backend", "cuda")
    assert "backend cuda 13.0 (from options)" in j["system"]
    # The environment alone is the environment.
    j = cli.json("variants", "org/k", "--revision", "v1")
    assert "backend cpu (from environment)" in j["system"]
    assert "--backend-version" in cli.run("variants", "org/k", "--revision", "v1", "--backend", "cuda",
                                          "--backend-version", "13.x", check=2).stderr
    # without --backend too (the detected backend's version): not ignored, not worded as the variable
    p = cli.run("variants", "org/k", "--revision", "v1", "--backend-version", "13.x", check=2)
    assert "--backend-version" in p.stderr and "KERNELS_BACKEND_VERSION" not in p.stderr
    cuda_env = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_BACKEND": "cuda"})
    p = cuda_env.run("variants", "org/k", "--revision", "v1", "--backend-version", "13.x", check=2)
    assert "--backend-version" in p.stderr and "KERNELS_BACKEND_VERSION" not in p.stderr
    assert "--backend" in cli.run("variants", "org/k", "--revision", "v1", "--backend=", check=2).stderr


# What `no flags` means on this machine: no system overrides at all, so the
# tool resolves for the torch python3 has installed (tests/requirements.txt).
NO_OVERRIDES = {k: "" for k in ("KERNELS_TORCH_VERSION", "KERNELS_CXX11_ABI", "KERNELS_BACKEND", "KERNELS_GPU_ARCHS",
                                "KERNELS_TORCH_DIR", "KERNELS_FIND_TORCH", "VIRTUAL_ENV")}
IMG2GRAY = "kernels-community/img2gray"
IMG2GRAY_BUILD = os.path.join(BINARY_DIR, "variants", "img2gray", "build")


def installed_torch():
    """python3's torch package folder and version.py, read without importing torch."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    assert spec is not None, "torch is not installed for python3 (tests/requirements.txt)"
    root = os.path.realpath(spec.submodule_search_locations[0])
    vspec = importlib.util.spec_from_file_location("_torch_version", os.path.join(root, "version.py"))
    version = importlib.util.module_from_spec(vspec)
    vspec.loader.exec_module(version)
    return root, version


def python_kernels_choice(variants):
    """The variant Python kernels 0.17.2 prefers among `variants` in a python3
    that imports the installed torch (its own detection: torch.version.cuda)."""
    code = ("import json, sys\nfrom kernels.variants import parse_variant, resolve_variant\n"
            "best, _ = resolve_variant([parse_variant(v) for v in json.loads(sys.argv[1])])\n"
            "print(best.variant_str if best else '')\n")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(variants)], check=True, capture_output=True,
                         text=True, timeout=300).stdout
    return out.strip().splitlines()[-1] if out.strip() else None


def publish_img2gray(hub):
    torch_variants = sorted(v for v in os.listdir(IMG2GRAY_BUILD) if v.startswith("torch")) \
        if os.path.isdir(IMG2GRAY_BUILD) else []
    if not torch_variants:
        pytest.fail(f"no img2gray torch variant under {IMG2GRAY_BUILD}: build the project with torch installed")
    out = subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "publish-img2gray.py"), "--root",
                          str(hub.root), "--build", IMG2GRAY_BUILD, "--repo", IMG2GRAY], check=True,
                         capture_output=True, text=True).stdout
    return dict(line.split() for line in out.splitlines()), sorted(os.listdir(IMG2GRAY_BUILD))


def test_variants_shows_the_torch_found(hub, tmp_path):
    publish_kernel(hub, tmp_path, universal=True)
    root, version = installed_torch()
    cli = Cli(hub, tmp_path / "cache", extra_env=NO_OVERRIDES)
    j = cli.json("variants", "org/k", "--revision", "v1")
    assert j["torch"] == {"version": "2.11", "version_string": version.__version__, "path": os.path.join(root, "lib"),
                          "source": "python3"}, j["torch"]
    assert f"torch 2.11 (cxx11 ABI) from python3 at {root}/lib" in j["system"]
    text = cli.run("variants", "org/k", "--revision", "v1", check=0).stdout
    assert f"torch:    {version.__version__}, found by python3 at {root}/lib\n" in text
    # Named by hand, or not looked for.
    j = cli.json("variants", "org/k", "--revision", "v1", "--torch-dir", root)
    assert j["torch"]["source"] == "option" and j["torch"]["path"] == os.path.join(root, "lib")
    j = cli.json("variants", "org/k", "--revision", "v1", "--no-find-torch")
    assert j["torch"] is None and "no torch" in j["system"]
    assert "torch:    none" in cli.run("variants", "org/k", "--revision", "v1", "--no-find-torch", check=0).stdout
    # A version given is not a torch found.
    j = cli.json("variants", "org/k", "--revision", "v1", "--torch", "2.9")
    assert j["torch"] == {"version": "2.9", "version_string": None, "path": None, "source": None}
    p = cli.run("variants", "org/k", "--revision", "v1", "--torch-dir", str(tmp_path), check=1)
    assert "holds no torch" in p.stderr


def test_get_and_load_torch_variant_with_no_flags(hub, tmp_path):
    # img2gray's torch variants link libtorch; with no flags the tool finds
    # python3's torch, picks the variant Python kernels would pick for it
    # (cu130 for a CUDA build of torch, GPU or not; torch211-cxx11-cpu for a
    # CPU one), loads that torch and then the variant.
    tags, variants = publish_img2gray(hub)
    root, version = installed_torch()
    want = python_kernels_choice(variants)
    assert want in (f"torch211-cxx11-cu{version.cuda.replace('.', '')}-{ARCH}-linux" if version.cuda else CPU211,), \
        (want, variants)
    cli = Cli(hub, tmp_path / "cache", extra_env=NO_OVERRIDES)
    j = cli.json("variants", IMG2GRAY, "--revision", "1")
    assert j["chosen"] == want and j["torch"]["source"] == "python3"
    p = cli.run("get", IMG2GRAY, "1", "--json", "--verbose", check=None)
    assert p.returncode == 0, p.stdout + p.stderr
    j = json.loads(p.stdout)
    assert j["variant"] == want and j["commit"] == tags["v1.1.2"]
    assert j["library"] and os.path.isfile(j["library"]) and j["metadata"]["name"] == "img2gray"
    assert f"loaded torch {version.__version__} from {root}/lib (found by python3)" in p.stderr
    # The locked workflow: lock, download, load from the cache with no flags.
    d = tmp_path / "proj"
    d.mkdir()
    (d / "pyproject.toml").write_text(f'[project]\nname = "app"\n\n[tool.kernels.dependencies]\n"{IMG2GRAY}" = 1\n')
    cli.run("lock", str(d), check=0)
    cli.run("download", str(d), check=0)
    hub.log_clear()
    p = cli.run("load", IMG2GRAY, str(d), "--json", check=None)
    assert p.returncode == 0, p.stdout + p.stderr
    j = json.loads(p.stdout)
    assert j["variant"] == want and j["library"] and hub.log() == []
    # Without the torch search the process has no torch: the torch variants do not fit.
    assert cli.run("get", IMG2GRAY, "1", "--no-find-torch", check=1).returncode == 1


# ---- the man page -------------------------------------------------------------

import re  # noqa: E402
import shutil  # noqa: E402

MAN_PAGE = os.path.join(SOURCE_DIR, "bindings", "cli", "libkernels.1")


def test_man_page_renders_and_documents_everything(tmp_path):
    assert os.path.isfile(MAN_PAGE)
    groff = shutil.which("groff")
    if groff:
        p = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", MAN_PAGE], capture_output=True, text=True)
        assert p.returncode == 0 and p.stderr == "", p.stderr
        text = subprocess.run([groff, "-man", "-Tascii", "-rLL=300n", "-rHY=0", "-P-cbou", MAN_PAGE], capture_output=True, text=True,
                              check=True).stdout
    else:
        text = open(MAN_PAGE).read().replace("\\-", "-")
    for c in COMMANDS:
        assert f"libkernels {c}" in text, c
    for section in ("EXIT STATUS", "JSON OUTPUT", "GLOBAL OPTIONS", "ENVIRONMENT"):
        assert section in text
    # Every option the tool knows is documented.
    cli = Cli(None, tmp_path)
    helps = cli.run("--help", check=0).stdout
    for c in COMMANDS:
        helps += cli.run(*c.split(), "--help", check=0).stdout
    options = set(re.findall(r"(--[a-z][a-z0-9-]+)", helps)) - {"--help"}
    missing = sorted(o for o in options if o not in text)
    assert not missing, missing


def test_man_page_installed(tmp_path):
    cmake = shutil.which("cmake")
    assert cmake, "cmake is needed to install the build tree"
    subprocess.run([cmake, "--install", BINARY_DIR, "--prefix", str(tmp_path), "--component", "Unspecified"],
                   check=True, capture_output=True)
    assert os.path.isfile(tmp_path / "share" / "man" / "man1" / "libkernels.1")
    assert os.access(tmp_path / "bin" / "libkernels", os.X_OK)


def test_progress_bar_quiet_and_verbose(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    # --progress draws the bar even without a terminal; the bar ends at 100 %.
    p = Cli(hub, tmp_path / "c1").run("get", "org/k", "v1", "--progress", check=0)
    assert "\033[K" in p.stderr and "100%" in p.stderr and "libkernels: downloaded" not in p.stderr
    # --quiet: nothing on stderr, the data still on stdout.
    p = Cli(hub, tmp_path / "c2").run("get", "org/k", "v1", "-q", check=0)
    assert p.stderr == "" and "variant:" in p.stdout
    # --no-progress: plain lines, one per downloaded file.
    p = Cli(hub, tmp_path / "c3").run("get", "org/k", "v1", "--no-progress", check=0)
    lines = [l for l in p.stderr.splitlines() if l.startswith("libkernels: downloaded build/")]
    assert len(lines) >= 4 and len(lines) == len(set(lines)) and all(CPU211 in l for l in lines)


# ---- the newcomer's polish: names, help, version, sizes, messages -------------


def test_version_flags(tmp_path):
    cli = Cli(None, tmp_path)
    want = cli.run("version", check=0).stdout
    assert want.startswith("libkernels ")
    for flag in ("-V", "--version"):
        assert cli.run(flag, check=0).stdout == want
    assert json.loads(cli.run("-V", "--json", check=0).stdout)["version"] == want.split()[1]


def test_every_help_is_whole(tmp_path):
    """Each command's help: usage, what it does, its options, the global ones, an example, exit status;
    `cache --help` (and a bare `cache`) both cache commands in full."""
    cli = Cli(None, tmp_path)
    for c in COMMANDS:
        text = cli.run(*c.split(), "--help", check=0).stdout
        assert text.startswith(f"usage: libkernels {c}") and "global options:" in text and "exit status" in text, c
        if c != "version":
            assert f"\nexample:\n  libkernels {c}" in text, c
        assert all(len(line) <= 130 for line in text.splitlines()), c
    text = cli.run("cache", "--help", check=0).stdout
    for sub in ("ls", "rm"):
        assert f"\nlibkernels cache {sub} " in text and f"example: libkernels cache {sub}" in text
    assert "--dry-run" in text and "--revision" in text and "global options:" in text
    p = cli.run("cache", check=2)
    assert "needs a subcommand" in p.stderr and "libkernels cache rm REPO" in p.stderr


def test_sizes_human_and_bytes(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    got = cli.run("get", "org/k", "v1", "--no-progress", check=0)
    assert re.search(r"^cache:     downloaded \d+ of \d+ files, [\d.]+ (B|KiB|MiB) of [\d.]+ (B|KiB|MiB)$", got.stdout, re.M), got.stdout
    lines = [l for l in got.stderr.splitlines() if l.startswith("libkernels: downloaded build/")]
    assert lines and all(re.search(r" \([\d.]+ (B|KiB|MiB)\)$", l) for l in lines), got.stderr
    # A cache hit says so, with no "downloaded: 0 of 0 files".
    hit = cli.run("get", "org/k", "v1", check=0).stdout
    assert "cache:     hit (nothing downloaded)" in hit and "0 of 0" not in hit and "downloaded" not in hit.replace("nothing downloaded", "")
    ls = cli.run("cache", "ls", check=0).stdout
    assert re.search(r"^org/k \(kernel\)  [\d.]+ (B|KiB|MiB) in \d+ blobs?$", ls, re.M), ls
    assert re.search(r"^total: [\d.]+ (B|KiB|MiB)$", ls, re.M) and " bytes" not in ls, ls
    # --bytes: byte counts for scripts, everywhere.
    size = cli.json("cache", "ls")["size"]
    ls = cli.run("cache", "ls", "--bytes", check=0).stdout
    assert f"total: {size} bytes\n" in ls and f"  {size} bytes in " in ls, ls
    other = Cli(hub, tmp_path / "cache2")
    p = other.run("get", "org/k", "v1", "--bytes", "--no-progress", check=0)
    assert re.search(r"^cache:     downloaded \d+ of \d+ files, \d+ bytes of \d+ bytes$", p.stdout, re.M), p.stdout
    assert all(re.search(r" \(\d+ bytes\)$", l) for l in p.stderr.splitlines() if "downloaded build/" in l), p.stderr
    p = cli.run("cache", "rm", "org/k", "-n", "--bytes", check=0)
    assert re.search(r"^libkernels: would free \d+ bytes$", p.stderr, re.M), p.stderr


def test_progress_bar_rate_and_eta(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    p = Cli(hub, tmp_path / "c").run("get", "org/k", "v1", "--progress", check=0)
    last = p.stderr.split("\r")[-1]
    assert re.search(r"100% [\d.]+ (B|KiB|MiB) / [\d.]+ (B|KiB|MiB)  [\d.]+ (B|KiB|MiB)/s  ETA 0:00", last), repr(last)


def publish_two_majors(hub, tmp_path):
    publish_kernel(hub, tmp_path)
    publish_kernel(hub, tmp_path, answer=2, tags=("v2.0.0",), branches=("main", "v2"))


def test_log_levels_and_each_warning_once(hub, tmp_path):
    publish_two_majors(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache")
    newer = "libkernels: warning: org/k: a newer major version v2 exists"
    # `variants` asks the library twice (the revision, then the variants): the warning shows once.
    for args in (("variants", "org/k", "--revision", "1"), ("get", "org/k", "1")):
        p = cli.run(*args, check=0)
        assert p.stderr.count(newer) == 1, p.stderr
    # -q and KERNELS_LOG=error: errors only.
    assert newer not in cli.run("get", "org/k", "1", "-q", check=0).stderr
    quiet = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_LOG": "error"})
    assert quiet.run("get", "org/k", "1", check=0).stderr == ""
    # -vv: the library's debug messages, labelled as such; -v: not those.
    dbg = Cli(hub, tmp_path / "c2").run("get", "org/k", "1", "-vv", "--no-progress", check=0).stderr
    assert "libkernels: debug: " in dbg and dbg.count(newer) == 1, dbg
    info = Cli(hub, tmp_path / "c3").run("get", "org/k", "1", "-v", "--no-progress", check=0).stderr
    assert "libkernels: debug: " not in info, info
    assert Cli(hub, tmp_path / "c4", extra_env={"KERNELS_LOG": "debug"}).run(
        "get", "org/k", "1", "--no-progress", check=0).stderr.count("libkernels: debug: ") >= 1
    # A level that is not one: said once, then the default.
    p = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_LOG": "loud"}).run("versions", "org/k", check=0)
    assert "KERNELS_LOG=loud is not error, warn, info or debug" in p.stderr

"""`libkernels info` (bindings/cli/cmd_info.c, kernels_info_get) against
Python kernels 0.17.2's `kernels info` on one local Hub: the same JSON and
the same text for a Hub repo (default revision: the highest vN branch;
--version N; --revision), for a local kernel folder, and the same refusal
of --revision with a path."""
import json
import subprocess
import sys

import test_binding as tb
from test_cli import Cli

THEIRS = """
import sys
from kernels.cli.info import print_kernel_info
args = sys.argv[1:]
kernel = args[0]
revision = version = None
json_output = "--json" in args
if "--revision" in args:
    revision = args[args.index("--revision") + 1]
if "--version" in args:
    version = int(args[args.index("--version") + 1])
print_kernel_info(kernel, revision=revision, version=version, json_output=json_output)
"""


def theirs(hub, cache, *args, check=0):
    env = hub.hf_env(cache, HF_HUB_DISABLE_TELEMETRY="0")
    p = subprocess.run([sys.executable, "-c", THEIRS, *args], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == check, p.stdout + p.stderr
    return p


def publish(hub, tmp_path):
    """acme/info: v1 with a cpu arch variant, a cuda one and a noarch one
    (kernels-minver, upstream, python-depends set); v2 with cpu only."""
    commits = {}
    for major, variants in ((1, (tb.torch_cpu_variant(), "torch211-cxx11-cu130-x86_64-linux", "torch-universal")),
                            (2, (tb.torch_cpu_variant(),))):
        tree = tmp_path / f"info-v{major}"
        for v in variants:
            folder = tree / "build" / v
            folder.mkdir(parents=True)
            (folder / "__init__.py").write_text("x = 1\n")
            subprocess.run([sys.executable, str(tb.MAKE_METADATA), str(folder), "--name", "info-kernel",
                            "--backend", "cuda" if "cu130" in v else "cpu", "--version", str(major),
                            "--license", "MIT", "--set", 'kernels-minver="0.16.0"',
                            "--set", 'upstream="https://github.com/acme/info-kernel"',
                            "--set", 'python-depends=["einops"]'], check=True)
        commits[major] = hub.publish("acme/info", files={p.relative_to(tree).as_posix(): p.read_bytes()
                                                         for p in tree.rglob("*") if p.is_file()},
                                     branches=["main", f"v{major}"], tags=[f"v{major}.0.0"], trusted=True)
    return commits


def test_info_hub_repo_and_local_path(hub, tmp_path):
    publish(hub, tmp_path)
    cli = Cli(hub, tmp_path / "cache-ours")
    cases = [("acme/info",), ("acme/info", "--version", "1"), ("acme/info", "--revision", "main"),
             ("acme/info", "--revision", "v1.0.0")]
    for case in cases:
        ours = json.loads(cli.run("info", *case, "--json", check=0).stdout)
        want = json.loads(theirs(hub, tmp_path / "cache-theirs", *case, "--json").stdout)
        assert ours == want, case
        # and the text, line for line
        assert cli.run("info", *case, check=0).stdout == theirs(hub, tmp_path / "cache-theirs", *case).stdout, case
    v1 = json.loads(cli.run("info", "acme/info", "--version", "1", "--json").stdout)
    assert v1["revision"] == "v1" and v1["backends"] == ["cpu", "cuda", "universal"]
    assert v1["kernels_minver"] == "0.16.0" and v1["python_depends"] == ["einops"]
    assert json.loads(cli.run("info", "acme/info", "--json").stdout)["revision"] == "v2"

    # a local kernel folder
    local = tmp_path / "info-v1"
    ours = json.loads(cli.run("info", str(local), "--json").stdout)
    assert ours == json.loads(theirs(hub, tmp_path / "cache-theirs", str(local), "--json").stdout)
    assert ours["path"] == str(local) and ours["name"] == "info-kernel"
    p = cli.run("info", str(local), "--revision", "main", check=1)
    assert "cannot be used with a local path" in p.stderr
    theirs(hub, tmp_path / "cache-theirs", str(local), "--revision", "main", check=1)

    # only metadata.json was fetched: no module, no other file
    fetched = {e["path"].rsplit("/", 1)[-1] for e in hub.requests(path="/resolve/")}
    assert fetched <= {"metadata.json"}, fetched

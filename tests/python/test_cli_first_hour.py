"""The newcomer's first hour (issue 27), and the CLI's inputs: when no
variant fits, the message names the nearest fix (C message, CLI, JSON,
Python exception); bad settings and flags are named with what is accepted;
help texts show the library's real defaults; `cache ls` counts what `cache
rm` frees; the local Hub starts by itself; the example project locks."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys

from test_cli import ARCH, BINARY_DIR, CLI, CPU211, CU130, SOURCE_DIR, Cli, publish_kernel

TVM01 = f"tvm-ffi01-cpu-{ARCH}-linux"
# A machine without a GPU whose torch is a CUDA build (the commonest laptop):
# torch 2.11 for CUDA 12.8, so neither the cu130 build nor (without being
# told) the cpu one fits.
CUDA_TORCH_NO_GPU = {"KERNELS_BACKEND": "cuda", "KERNELS_BACKEND_VERSION": "12.8", "KERNELS_GPU_ARCHS": "none"}
# A plain C program: no torch, no tvm-ffi, nothing looked for.
PLAIN_C = {"KERNELS_TORCH_VERSION": "", "KERNELS_CXX11_ABI": "", "KERNELS_TVM_FFI_VERSION": "none",
           "KERNELS_TORCH_DIR": "", "VIRTUAL_ENV": ""}


def header_default(name):
    text = open(os.path.join(SOURCE_DIR, "include", "kernels", "options.h")).read()
    return int(re.search(rf"#define {name} (\d+)", text).group(1))


# ---- 1. no variant fits: the nearest fix -------------------------------------


def test_no_gpu_cuda_torch_names_the_cpu_backend(hub, tmp_path):
    publish_kernel(hub, tmp_path, variants=(CPU211, CU130))
    cli = Cli(hub, tmp_path / "cache", extra_env=CUDA_TORCH_NO_GPU)
    p = cli.run("get", "org/k", "v1", check=1)
    for fix in ("no GPU", CPU211, "--backend cpu", "KERNELS_BACKEND=cpu", 'backend="cpu"'):
        assert fix in p.stderr, (fix, p.stderr)
    # JSON: the same words in the error object's message.
    j = json.loads(cli.run("get", "org/k", "v1", "--json", check=1).stdout)
    assert "--backend cpu" in j["error"]["message"] and CPU211 in j["error"]["message"]
    # `variants`: the hint on its own, and on stderr.
    p = cli.run("variants", "org/k", "--revision", "v1", "--json", check=1)
    j = json.loads(p.stdout)
    assert j["chosen"] is None and "KERNELS_BACKEND=cpu" in j["hint"] and CPU211 in j["hint"]
    assert "--backend cpu" in p.stderr
    # ... and the fix it names works.
    assert cli.json("variants", "org/k", "--revision", "v1", "--backend", "cpu")["chosen"] == CPU211
    assert "variant:" in cli.run("get", "org/k", "v1", "--backend", "cpu", check=0).stdout


def test_a_variant_that_fits_has_no_hint(hub, tmp_path):
    publish_kernel(hub, tmp_path, variants=(CPU211, CU130))
    j = Cli(hub, tmp_path / "cache").json("variants", "org/k", "--revision", "v1")
    assert j["chosen"] == CPU211 and j["hint"] is None


def test_plain_c_program_is_told_about_torch_and_tvm_ffi(hub, tmp_path):
    """A program linking only libkernels: the tvm-ffi variant needs libtvm_ffi
    linked, the torch ones a torch found (find_torch is off in C)."""
    publish_kernel(hub, tmp_path, variants=(CPU211, TVM01))
    cli = Cli(hub, tmp_path / "cache", extra_env=PLAIN_C)
    p = cli.run("get", "org/k", "v1", "--no-find-torch", check=1)
    assert "libtvm_ffi" in p.stderr and TVM01 in p.stderr and "docs/getting-started.md" in p.stderr
    assert "KERNELS_FIND_TORCH=1" in p.stderr and "--torch-dir" in p.stderr and CPU211 in p.stderr
    # told "no torch" explicitly: the hint says so instead
    p = cli.run("get", "org/k", "v1", "--torch", "none", check=1)
    assert "--torch none" in p.stderr and "give the torch version" in p.stderr


def test_cli_outside_the_venv_hints_at_the_venv_and_torch_dir(hub, tmp_path):
    """The CLI looks for torch through python3 on PATH: one without torch
    (the system's, outside the venv) gets a hint naming it, the venv and
    --torch-dir."""
    bare = tmp_path / "bin"
    bare.mkdir()
    os.symlink("/usr/bin/python3", bare / "python3")
    publish_kernel(hub, tmp_path, variants=(CPU211,))
    env = dict(PLAIN_C, PATH=f"{bare}:/usr/bin:/bin", PYENV_VERSION="", PYTHONUSERBASE=str(tmp_path / "nouser"))
    cli = Cli(hub, tmp_path / "cache", extra_env=env)
    j = cli.json("variants", "org/k", "--revision", "v1", check=1)
    if "no torch" not in j["system"]:
        import pytest
        pytest.fail(f"/usr/bin/python3 imports a torch here; this test needs one that does not: {j['system']}")
    assert "activate the virtual environment" in j["hint"] and "--torch-dir" in j["hint"]
    assert str(bare / "python3") in j["hint"]


def test_python_exception_carries_the_fix(hub, tmp_path):
    publish_kernel(hub, tmp_path, variants=(CPU211, CU130))
    env = dict(Cli(hub, tmp_path / "cache", extra_env=CUDA_TORCH_NO_GPU).env,
               KERNELS_LIBRARY=os.path.join(BINARY_DIR, "lib", "libkernels.so"),
               PYTHONPATH=os.path.join(SOURCE_DIR, "bindings", "python"))
    code = ("import libkernels\ntry:\n    libkernels.get('org/k', 'v1')\nexcept Exception as e:\n"
            "    print(type(e).__name__); print(e)\n")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert 'backend="cpu"' in p.stdout and CPU211 in p.stdout, p.stdout + p.stderr


# ---- 2. settings and flags named, with what is accepted ------------------------


def test_bad_environment_values_are_named(hub, tmp_path):
    publish_kernel(hub, tmp_path, variants=(CPU211,))
    cli = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_DEADLINE_MS": "abc"})
    p = cli.run("variants", "org/k", "--revision", "v1", check=0)
    assert "KERNELS_DEADLINE_MS='abc' is not a whole number of milliseconds" in p.stderr
    cli = Cli(hub, tmp_path / "cache", extra_env={"HF_HUB_OFFLINE": "ture"})
    p = cli.run("variants", "org/k", "--revision", "v1", check=0)
    assert "HF_HUB_OFFLINE='ture' is not 1/0, true/false, yes/no or on/off" in p.stderr
    # An unknown backend would resolve for builds nobody makes: an error, with the nearest one.
    cli = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_BACKEND": "cup"})
    p = cli.run("variants", "org/k", "--revision", "v1", check=1)
    assert "KERNELS_BACKEND is 'cup', not a backend: did you mean 'cpu'?" in p.stderr
    lib_list = re.search(r"\(backends: ([a-z, ]+)\)", p.stderr).group(1)
    # The CLI's own list of backends is the library's.
    p = Cli(hub, tmp_path / "cache").run("variants", "org/k", "--revision", "v1", "--backend", "cup", check=2)
    assert re.search(r"\(backends: ([a-z, ]+)\)", p.stderr).group(1) == lib_list


def test_bad_flag_values_are_named_as_flags(tmp_path):
    cli = Cli(None, tmp_path / "cache")
    for args, flag in ((("--gpu-archs", "9.0,gfx942"), "--gpu-archs"), (("--torch", "two"), "--torch"),
                       (("--cxx11-abi", "2"), "--cxx11-abi"), (("--tvm-ffi", "x"), "--tvm-ffi")):
        p = cli.run("variants", "org/k", "--revision", "v1", *args, check=2)
        assert flag in p.stderr and "KERNELS_" not in p.stderr, p.stderr
    for bad, near in (("foo", None), ("CUDA", "cuda"), ("mps", None), ("cup", "cpu")):
        p = cli.run("variants", "org/k", "--revision", "v1", "--backend", bad, check=2)
        assert f"--backend '{bad}' is not a backend" in p.stderr
        assert (f"did you mean '{near}'" in p.stderr) if near else "did you mean" not in p.stderr


def test_a_malformed_endpoint_flag_is_a_usage_error(tmp_path):
    # A bad --endpoint is a bad command line (exit 2), as a bad --timeout is,
    # before or after the command; a bad HF_ENDPOINT is the library's refusal (1).
    cli = Cli(None, tmp_path / "cache")
    for args in (("--endpoint", "foo", "versions", "org/k"), ("versions", "org/k", "--endpoint=ftp://h"),
                 ("versions", "org/k", "--endpoint", "https://"), ("versions", "org/k", "--endpoint", "http://a b")):
        p = cli.run(*args, check=2)
        assert "--endpoint wants an http:// or https:// URL" in p.stderr and "usage:" in p.stderr, p.stderr
    p = Cli(None, tmp_path / "cache", endpoint="foo").run("versions", "org/k", check=1)
    assert "HF_ENDPOINT" in p.stderr


def test_options_before_the_command(hub, tmp_path):
    # docs/cli.md: options may come before the command, global ones and the
    # command's own, those with a value too: the value is not the command.
    publish_kernel(hub, tmp_path, variants=(CPU211,))
    cli = Cli(hub, tmp_path / "cache")
    assert cli.run("--revision", "v1", "variants", "org/k", check=0).stdout == \
        cli.run("variants", "org/k", "--revision", "v1", check=0).stdout
    assert json.loads(cli.run("--json", "-q", "get", "org/k", "v1", check=0).stdout)["variant"] == CPU211
    assert json.loads(cli.run("--json", "--revision=v1", "variants", "org/k", check=0).stdout)["chosen"] == CPU211
    out = tmp_path / "k.bundle"
    (tmp_path / "proj").mkdir()
    p = cli.run("-o", str(out), "bundle", str(tmp_path / "proj"), check=1)
    assert "kernels.lock" in p.stderr and "unknown command" not in p.stderr, p.stderr
    # An option of another command is still refused, as the command's usage error.
    p = cli.run("--all-variants", "versions", "org/k", check=2)
    assert "--all-variants" in p.stderr and "usage: libkernels versions" in p.stderr


def test_a_missing_device_is_a_usage_error(tmp_path):
    cli = Cli(None, tmp_path / "cache", extra_env={"KERNELS_BACKEND": "cuda", "KERNELS_BACKEND_VERSION": "13.0",
                                                   "KERNELS_GPU_ARCHS": "9.0"})
    p = cli.run("variants", "org/k", "--revision", "v1", "--device", "3", check=2)
    assert "--device 3: this machine has 1 GPU; give an index from 0 to 0" in p.stderr
    assert "is not a GPU index" in cli.run("variants", "org/k", "--revision", "v1", "--device", "x", check=2).stderr


def test_one_command_detects_the_system_once(hub, tmp_path):
    # The flags judged, the --device checked, the system and torch shown, the
    # torch prepared for a load: all from the tool's one detection (the
    # library's own, inside its calls, are not counted: they are not calls of
    # kernels_system_detect).
    publish_kernel(hub, tmp_path, variants=(CPU211,))
    log = tmp_path / "detect.log"
    cli = Cli(hub, tmp_path / "cache", extra_env={"LD_PRELOAD": os.environ["KERNELS_TEST_COUNT_DETECT"],
                                                   "KERNELS_TEST_DETECT_LOG": str(log)})
    flags = ("--backend", "cpu", "--torch", "2.11", "--device", "0")
    for args in (("variants", "org/k", "--revision", "v1", *flags), ("get", "org/k", "v1", *flags)):
        log.unlink(missing_ok=True)
        p = cli.run(*args, check=0)
        assert log.read_text().count("kernels_system_detect") == 1, (args, p.stderr)
    assert "chosen:   " + CPU211 in cli.run("variants", "org/k", "--revision", "v1", *flags, check=0).stdout


def test_misspelled_flags_and_commands_get_the_nearest(tmp_path):
    cli = Cli(None, tmp_path / "cache")
    p = cli.run("variants", "org/k", "--revision", "v1", "--bakend", "cpu", check=2)
    assert "unknown option '--bakend': did you mean --backend?" in p.stderr
    p = cli.run("--bakend", "cpu", "variants", "org/k", "--revision", "v1", check=2)
    assert "did you mean --backend?" in p.stderr
    p = cli.run("variants", "org/k", "--revison", "v1", check=2)
    assert "did you mean --revision?" in p.stderr
    p = cli.run("varaints", "org/k", check=2)
    assert "did you mean 'variants'?" in p.stderr
    assert "did you mean" not in cli.run("variants", "org/k", "--zzzzzz", check=2).stderr


# ---- 3. the truth about defaults and disk use ------------------------------------


def test_help_shows_the_library_defaults(tmp_path):
    text = Cli(None, tmp_path).run("get", "--help", check=0).stdout
    line = next(l for l in text.splitlines() if "--timeout" in l)
    assert f"else {header_default('KERNELS_DEFAULT_TIMEOUT_MS')})" in line and "30000" not in text
    assert f"(default {header_default('KERNELS_DEFAULT_MAX_RETRIES')})" in next(
        l for l in text.splitlines() if "--retries" in l)
    assert f"(default {header_default('KERNELS_DEFAULT_MAX_PARALLEL')})" in next(
        l for l in text.splitlines() if "--max-parallel" in l)
    man = open(os.path.join(SOURCE_DIR, "bindings", "cli", "libkernels.1")).read()
    assert f"else {header_default('KERNELS_DEFAULT_TIMEOUT_MS')}." in man


def test_cache_ls_counts_what_cache_rm_frees(hub, tmp_path):
    publish_kernel(hub, tmp_path, variants=(CPU211,))
    cli = Cli(hub, tmp_path / "cache")
    cli.run("get", "org/k", "v1", check=0)
    folder = tmp_path / "cache" / "kernels--org--k"
    # What libkernels writes beside the blobs (the Python-free copies and
    # their receipts) is disk use too.
    (folder / ".libkernels" / "patched").mkdir(parents=True, exist_ok=True)
    (folder / ".libkernels" / "patched" / "x.so").write_bytes(b"\0" * 4096)
    on_disk = sum(os.lstat(os.path.join(r, n)).st_size for r, _, ns in os.walk(folder) for n in ns
                  if not os.path.islink(os.path.join(r, n)))
    repo = cli.json("cache", "ls", "--bytes")["repos"][0]
    assert repo["size"] == on_disk
    freed = cli.json("cache", "rm", "org/k")["freed_bytes"]
    assert freed == on_disk


# ---- 5. the local Hub by itself; the example project ----------------------------


def test_local_hub_script_serves_by_itself(tmp_path):
    root = tmp_path / "hub"
    p = subprocess.run(["bash", os.path.join(SOURCE_DIR, "scripts", "local-hub.sh"), "--root", str(root),
                        "--no-img2gray", "--background"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    endpoint = re.search(r"local Hub: (http://127\.0\.0\.1:\d+) \(pid (\d+)\)", p.stdout)
    assert endpoint and "export HF_ENDPOINT=" in p.stdout
    pid = int(endpoint.group(2))
    try:
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "tests", "hub", "publish.py"), "--root", str(root),
                        "--repo", "me/k", "--text", "README.md=hi", "--tag", "v1.0.0", "--branch", "main"],
                       check=True, capture_output=True)
        cli = Cli(None, tmp_path / "cache", endpoint=endpoint.group(1))
        assert "v1.0.0" in cli.run("versions", "me/k", check=0).stdout
    finally:
        os.kill(pid, signal.SIGTERM)


def test_example_pyproject_locks_and_downloads(hub, tmp_path):
    variants = os.path.join(BINARY_DIR, "variants", "img2gray", "build")
    subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "scripts", "publish-img2gray.py"), "--root",
                    str(hub.root), "--build", variants], check=True, capture_output=True)
    proj = tmp_path / "project"
    shutil.copytree(os.path.join(SOURCE_DIR, "examples", "project"), proj)
    cli = Cli(hub, tmp_path / "cache", extra_env={"KERNELS_TORCH_VERSION": "", "KERNELS_CXX11_ABI": ""})
    j = cli.json("lock", str(proj))
    assert [k["repo_id"] for k in j["kernels"]] == ["kernels-community/img2gray"]
    assert (proj / "kernels.lock").exists()
    cli.json("download", str(proj), "--all-variants")
    assert cli.json("verify", str(proj))["ok"] is True

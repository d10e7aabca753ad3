#!/usr/bin/env python3
"""Writes anchor.json: variant resolution cases answered by the Python
`kernels` package (pinned in tests/requirements.txt), which libkernels must
reproduce exactly (tests/test_variant.c).

Each case gives a system description and a list of variant names (some with
the `backend.archs` of their metadata.json). The expected trace comes from
`kernels.variants._resolve_variant_for_system` (the pure resolver behind
`get_kernel`), invalid names from `parse_variant`'s ValueError, and the GPU
arch check from `kernels.archs._supports_cuda_capability` (applied to every
accepted CUDA variant, then re-sorted with the client's own sort).

Usage: generate.py [--check]   (--check: compare with the committed file)
"""
import json
import sys
from pathlib import Path

from packaging.version import Version

import kernels
from kernels import archs as karchs
from kernels import backends as kb
from kernels import variants as kv

OUT = Path(__file__).with_name("anchor.json")

# ---- systems -------------------------------------------------------------

def system(torch=None, abi=None, tvm=None, backend="cpu", bver=None, cpu="x86_64", os="linux",
           macos=None, gpus=()):
    return {"torch": torch, "cxx11_abi": abi, "tvm_ffi": tvm, "backend": backend,
            "backend_version": bver, "cpu": cpu, "os": os, "macos": macos, "gpus": list(gpus)}


CUDA128 = system(torch="2.11", abi=True, backend="cuda", bver="12.8", gpus=["9.0"])
CUDA130 = system(torch="2.11", abi=True, backend="cuda", bver="13.0", gpus=["9.0"])
CUDA126_T27 = system(torch="2.7", abi=True, backend="cuda", bver="12.6", gpus=["8.0"])
CUDA118_T27_98 = system(torch="2.7", abi=False, backend="cuda", bver="11.8")
CPU_T211 = system(torch="2.11", abi=True)
CPU_NOTORCH = system()
CPU_FORCED = system(torch="2.11", abi=True, backend="cpu")  # a CUDA torch with backend="cpu"
TVM_CUDA = system(tvm="0.1", backend="cuda", bver="12.8", gpus=["9.0"])
TVM_CPU = system(tvm="0.1")
ROCM = system(torch="2.9", abi=True, backend="rocm", bver="6.3")
XPU = system(torch="2.9", abi=True, backend="xpu", bver="2025.1")
CANN = system(torch="2.9", abi=True, backend="cann", bver="8.1")
METAL_NEW = system(torch="2.9", backend="metal", cpu="aarch64", os="darwin", macos="26.0")
METAL_OLD = system(torch="2.9", backend="metal", cpu="aarch64", os="darwin", macos="15.3")
ARM = system(torch="2.11", abi=True, backend="cuda", bver="13.0", cpu="aarch64", gpus=["12.0"])
NEURON = system(torch="2.8", abi=True, backend="neuron")
TPU = system(torch="2.9", abi=True, backend="tpu")
SM86 = system(torch="2.11", abi=True, backend="cuda", bver="12.8", gpus=["8.6"])
SM75_90 = system(torch="2.11", abi=True, backend="cuda", bver="12.8", gpus=["7.5", "9.0"])
SM100 = system(torch="2.11", abi=True, backend="cuda", bver="13.0", gpus=["10.3"])
NO_GPU_CUDA = system(torch="2.11", abi=True, backend="cuda", bver="12.8")

IMG2GRAY = ["torch27-cxx11-cu118-x86_64-linux", "torch27-cxx11-cu126-x86_64-linux",
            "torch27-cxx11-cu128-x86_64-linux", "torch27-cxx98-cu118-x86_64-linux",
            "torch28-cxx11-cu126-x86_64-linux", "torch27-cxx11-rocm63-x86_64-linux",
            "torch-universal"]
CURRENT = ["torch211-cu126-x86_64-linux", "torch211-cu128-x86_64-linux", "torch211-cu130-x86_64-linux",
           "torch211-cpu-x86_64-linux", "torch210-cu128-x86_64-linux", "torch211-cu128-aarch64-linux",
           "torch211-cu130-aarch64-linux", "torch211-rocm63-x86_64-linux", "torch211-xpu20251-x86_64-linux",
           "torch-cuda", "torch-cpu", "torch-universal"]
STABLE = ["torch-stable-abi28-cu128-x86_64-linux", "torch-stable-abi29-cu128-x86_64-linux",
          "torch-stable-abi212-cu128-x86_64-linux", "torch-stable-abi29-cu126-x86_64-linux",
          "torch-stable-abi29-cpu-x86_64-linux", "torch211-cu128-x86_64-linux",
          "torch211-cxx11-cu128-x86_64-linux", "torch-cuda"]
TVM = ["tvm-ffi01-cu128-x86_64-linux", "tvm-ffi01-cu126-x86_64-linux", "tvm-ffi02-cu128-x86_64-linux",
       "tvm-ffi01-cpu-x86_64-linux", "tvm-ffi01-cu130-x86_64-linux", "torch-cuda", "torch-universal",
       "torch211-cu128-x86_64-linux"]
INVALID = ["torch27-cxx11-cu126-x86_64", "torchx-cu126-x86_64-linux", "torch2-cu126-x86_64-linux",
           "torch211-cuda-x86_64-linux", "torch211-foo12-x86_64-linux", "jax04-cu126-x86_64-linux",
           "torch-stable-abi2-cu126-x86_64-linux", "tvm-ffi1-cu126-x86_64-linux", "build",
           "torch211-cu126-x86_64-linux-extra", "torch211-cu8-x86_64-linux", "torch211-cu128-x86_64-linux"]
BACKENDS = ["torch29-cxx11-rocm63-x86_64-linux", "torch29-cxx11-rocm64-x86_64-linux",
            "torch29-cxx11-rocm62-x86_64-linux", "torch29-cxx11-xpu20251-x86_64-linux",
            "torch29-cxx11-xpu20252-x86_64-linux", "torch29-cxx11-cann81-x86_64-linux",
            "torch29-cxx11-cu128-x86_64-linux", "torch29-cxx11-cpu-x86_64-linux", "torch29-metal-aarch64-darwin",
            "torch29-cxx11-tpu-x86_64-linux", "torch28-cxx11-neuron-x86_64-linux", "torch-rocm", "torch-xpu",
            "torch-npu", "torch-cann", "torch-metal", "torch-neuron", "torch-tpu", "torch-cpu", "torch-universal"]
ARCHS = [("torch211-cu128-x86_64-linux", ["8.0", "9.0"]), ("torch211-cu126-x86_64-linux", ["8.0"]),
         ("torch211-cu124-x86_64-linux", ["9.0+PTX"]), ("torch211-cu122-x86_64-linux", ["9.0a"]),
         ("torch211-cu121-x86_64-linux", ["10.0f"]), ("torch211-cu120-x86_64-linux", ["sm_90", "gfx942"]),
         ("torch211-cu127-x86_64-linux", None), ("torch211-cu125-x86_64-linux", ["7.0", "7.5+PTX"]),
         ("torch-cuda", ["9.0"]), ("torch211-cpu-x86_64-linux", ["9.0"])]

CASES = [
    ("img2gray seed variants on torch 2.7 cu12.6", CUDA126_T27, IMG2GRAY),
    ("img2gray seed variants on torch 2.7 cxx98 cu11.8", CUDA118_T27_98, IMG2GRAY),
    ("img2gray seed variants on torch 2.11 cu12.8 (torch mismatch)", CUDA128, IMG2GRAY),
    ("img2gray seed variants on cpu without torch", CPU_NOTORCH, IMG2GRAY),
    ("current variants on cu12.8 (cu126 ok, cu130 too new)", CUDA128, CURRENT),
    ("current variants on cu13.0 (cross-major rejected)", CUDA130, CURRENT),
    ("current variants on cpu torch", CPU_T211, CURRENT),
    ("current variants with cpu forced", CPU_FORCED, CURRENT),
    ("current variants on cpu without torch", CPU_NOTORCH, CURRENT),
    ("current variants on aarch64 cu13.0", ARM, CURRENT),
    ("current variants on rocm", ROCM, CURRENT),
    ("current variants on xpu", XPU, CURRENT),
    ("current variants in reverse order", CUDA128, list(reversed(CURRENT))),
    ("stable abi on torch 2.11 cu12.8", CUDA128, STABLE),
    ("stable abi on torch 2.9 (2.12 too new)", system(torch="2.9", abi=True, backend="cuda", bver="12.8"), STABLE),
    ("stable abi on torch 2.8", system(torch="2.8", abi=False, backend="cuda", bver="12.6"), STABLE),
    ("stable abi without torch", TVM_CUDA, STABLE),
    ("stable abi on cpu", CPU_T211, STABLE),
    ("tvm-ffi 0.1 with cuda 12.8", TVM_CUDA, TVM),
    ("tvm-ffi 0.1 on cpu", TVM_CPU, TVM),
    ("tvm-ffi variants with torch but no tvm-ffi", CUDA128, TVM),
    ("tvm-ffi and torch both present", system(torch="2.11", abi=True, tvm="0.1", backend="cuda", bver="12.8"),
     TVM + STABLE),
    ("unknown names are skipped", CUDA128, INVALID),
    ("backends on rocm 6.3", ROCM, BACKENDS),
    ("backends on xpu 2025.1", XPU, BACKENDS),
    ("backends on cann 8.1 (noarch npu)", CANN, BACKENDS),
    ("backends on metal, macOS 26", METAL_NEW, BACKENDS),
    ("backends on metal, macOS 15", METAL_OLD, BACKENDS),
    ("backends on neuron", NEURON, BACKENDS),
    ("backends on tpu", TPU, BACKENDS),
    ("backends on cu12.8", system(torch="2.9", abi=True, backend="cuda", bver="12.8"), BACKENDS),
    ("backends on cpu", system(torch="2.9", abi=True), BACKENDS),
    ("gpu archs on sm_86", SM86, ARCHS),
    ("gpu archs on sm_90", CUDA128, ARCHS),
    ("gpu archs on sm_75 + sm_90", SM75_90, ARCHS),
    ("gpu archs on sm_103 cu13.0", SM100, ARCHS),
    ("gpu archs without a known GPU", NO_GPU_CUDA, ARCHS),
    ("metadata backend, not the name, says whose archs (noarch, stable ABI)", SM86,
     [("torch-universal", ["9.0"], "cuda"), ("torch-cuda", ["8.0"], "rocm"), ("torch-cpu", ["9.0"], "cuda"),
      ("torch-stable-abi29-cu128-x86_64-linux", ["9.0"]), ("tvm-ffi01-cu128-x86_64-linux", ["9.0a"])]),
    ("gpu archs on sm_75 only", system(torch="2.11", abi=True, backend="cuda", bver="12.8", gpus=["7.5"]), ARCHS),
    ("gpu archs on sm_120 (PTX covers newer majors)",
     system(torch="2.11", abi=True, backend="cuda", bver="12.8", gpus=["12.0"]), ARCHS),
    ("cpu/os mismatch only", CPU_T211, ["torch211-cpu-aarch64-linux", "torch211-cpu-x86_64-darwin",
                                        "torch211-cpu-x86_64-windows", "torch211-cpu-x86_64-linux"]),
    ("nothing fits", CPU_NOTORCH, ["torch211-cu128-x86_64-linux", "torch-cuda"]),
    ("empty list", CUDA128, []),
    ("torch minor with several digits", system(torch="2.10", abi=True, backend="cuda", bver="12.8"),
     ["torch21-cu128-x86_64-linux", "torch210-cu128-x86_64-linux", "torch2010-cu128-x86_64-linux"]),
    ("cuda minor ordering ties keep input order", CUDA128,
     ["torch211-cu128-x86_64-linux", "torch211-cxx11-cu128-x86_64-linux", "torch211-cu118-x86_64-linux",
      "torch211-cu126-x86_64-linux", "torch211-cxx11-cu126-x86_64-linux", "torch211-cu120-x86_64-linux"]),
    ("noarch and tvm-ffi cpu tie", TVM_CPU, ["torch-cpu", "tvm-ffi01-cpu-x86_64-linux", "torch-universal"]),
    ("abi tag with unknown torch abi", system(torch="2.11", abi=None, backend="cuda", bver="12.8"),
     ["torch211-cxx11-cu128-x86_64-linux", "torch211-cxx98-cu128-x86_64-linux", "torch211-cu128-x86_64-linux"]),
]

# ---- running the Python resolver ------------------------------------------

def v(s):
    return Version(s) if s is not None else None


def selected_backend(sysd):
    name, ver = sysd["backend"], sysd["backend_version"]
    cls = {"cuda": kb.CUDA, "rocm": kb.ROCm, "xpu": kb.XPU, "cann": kb.CANN}.get(name)
    if cls is not None:
        return cls(version=Version(ver))
    return {"cpu": kb.CPU, "metal": kb.Metal, "neuron": kb.Neuron, "tpu": kb.TPU}[name]()


def gpu_reason(sysd, archs):
    # archs.py's ArchValidator text, for the current device (the first GPU here)
    return (f"CUDA capability {sysd['gpus'][0]} of the current device is not supported by the architectures "
            f"of the build: {', '.join(archs)}")


def gpu_supported(sysd, archs):
    major, minor = (int(x) for x in sysd["gpus"][0].split("."))
    return karchs._supports_cuda_capability(archs, (major, minor))


def metadata_backend(variant, given):
    """The backend.type of the build's metadata.json: as the case gives
    it, else the one its name says (torch-universal: none)."""
    if given is not None:
        return given
    if isinstance(variant, kv.NoarchVariant):
        name = variant.arch.backend_name
        return None if name == "universal" else {"npu": "cann"}.get(name, name)
    return variant.arch.backend.name


def run_case(title, sysd, entries):
    names, archs_of, backend_of = [], {}, {}
    for e in entries:
        name, archs, backend = (e, None, None) if isinstance(e, str) else (tuple(e) + (None,))[:3]
        names.append(name)
        archs_of[name] = archs
        backend_of[name] = backend
    parsed, names_of, invalid = [], {}, []
    for name in names:
        try:
            var = kv.parse_variant(name)
        except ValueError as err:
            invalid.append({"name": name, "error": str(err)})
            continue
        parsed.append(var)
        names_of[id(var)] = name
    _, trace = kv._resolve_variant_for_system(
        variants=parsed, selected_backend=selected_backend(sysd), cpu=sysd["cpu"], os=sysd["os"],
        torch_version=v(sysd["torch"]), torch_cxx11_abi=sysd["cxx11_abi"], tvm_ffi_version=v(sysd["tvm_ffi"]),
        macos_version=v(sysd["macos"]))
    # 0.17's arch check (ArchValidator, archs._check_arch_incompatibility)
    # on the current device, which libkernels applies while choosing rather
    # than after: any kind of build (noarch and stable-ABI too) whose
    # metadata's backend is CUDA, on a CUDA system with a GPU.
    checked = []
    for d in trace:
        name = names_of[id(d.variant)]
        archs = archs_of[name]
        if (isinstance(d, kv.VariantAccepted) and metadata_backend(d.variant, backend_of[name]) == "cuda"
                and sysd["backend"] == "cuda" and archs and sysd["gpus"] and not gpu_supported(sysd, archs)):
            d = kv.VariantRejected(variant=d.variant, reason=gpu_reason(sysd, archs))
        checked.append(d)
    # 0.17 leaves a tvm-ffi variant without a backend minor and a noarch one
    # equal (its input is a set); libkernels puts tvm-ffi first, as 0.17's
    # docstring orders them: noarch after arch variants, before the stable sort.
    checked.sort(key=lambda d: isinstance(d.variant, kv.NoarchVariant))
    trace = kv._sort_variants(checked)
    out = [{"name": names_of[id(d.variant)], "accepted": isinstance(d, kv.VariantAccepted),
            "reason": None if isinstance(d, kv.VariantAccepted) else d.reason} for d in trace]
    chosen = out[0]["name"] if out and out[0]["accepted"] else None
    return {"title": title, "system": sysd,
            "variants": [dict({"name": n, "archs": archs_of[n]}, **({"backend": backend_of[n]} if backend_of[n] else {}))
                         for n in names],
            "expected": {"chosen": chosen, "trace": out, "invalid": invalid}}


# ---- the corpus: names as kernel-builder generates them today -------------
#
# Every torch x backend x cpu x os it emits (torch 2.12-2.14; CUDA 12.6-13.2,
# ROCm 7.1/7.2/7.14, XPU per torch, CPU; Linux x86_64/aarch64, macOS Metal
# and CPU, Windows), the stable-ABI and tvm-ffi kinds, noarch, and malformed
# look-alikes; resolved on systems of each backend, with the arch check on
# and off (corpus.json).

CORPUS_OUT = OUT.with_name("corpus.json")
TORCHES = ["212", "213", "214"]
CUDA = ["cu126", "cu128", "cu130", "cu132"]
ROCM = ["rocm71", "rocm72", "rocm714"]
XPU_OF = {"212": "xpu20253", "213": "xpu20260", "214": "xpu20260"}
CUDA13_ARCHS = ["7.5", "8.0", "8.6", "8.9", "9.0", "10.0", "12.0", "12.1+PTX"]
CUDA12_ARCHS = ["7.0", "7.5", "8.0", "8.6", "8.9", "9.0+PTX"]


def corpus_names():
    """(name, archs) in kernel-builder's spelling, then look-alikes."""
    out = []
    for t in TORCHES:
        for cpu in ("x86_64", "aarch64"):
            for b in CUDA + ROCM + [XPU_OF[t], "cpu"]:
                if cpu == "aarch64" and (b.startswith("rocm") or b.startswith("xpu")):
                    continue
                archs = (CUDA13_ARCHS if b >= "cu13" else CUDA12_ARCHS) if b.startswith("cu") else \
                    ["gfx942", "gfx950"] if b.startswith("rocm") else None
                out.append((f"torch{t}-cxx11-{b}-{cpu}-linux", archs))
        out += [(f"torch{t}-metal-aarch64-darwin", None), (f"torch{t}-cpu-aarch64-darwin", None),
                (f"torch{t}-cu130-x86_64-windows", CUDA13_ARCHS), (f"torch{t}-cpu-x86_64-windows", None),
                (f"torch{t}-{XPU_OF[t]}-x86_64-windows", None)]
    for t in ("29", "210", "212"):
        for b in ("cu128", "cu130", "rocm71", "cpu", "xpu20253"):
            archs = ["10.0", "12.0"] if b == "cu130" else ["9.0"] if b == "cu128" else None
            out.append((f"torch-stable-abi{t}-{b}-x86_64-linux", archs))
    for b in ("cu128", "cu130", "cpu", "rocm71"):
        out.append((f"tvm-ffi01-{b}-x86_64-linux", ["9.0a"] if b == "cu130" else None))
    out += [("torch-cuda", ["9.0"]), ("torch-rocm", ["gfx942"]), ("torch-cpu", None), ("torch-metal", None),
            ("torch-xpu", None), ("torch-npu", None), ("torch-tpu", None), ("torch-universal", None)]
    out += [(n, None) for n in ("torch212-cxx11-cu13-x86_64-linux", "torch212-cxx11-cu130-x86_64",
                                "torch212-cxx17-cu130-x86_64-linux", "torch2-cxx11-cu130-x86_64-linux",
                                "torch212-cxx11-cuda130-x86_64-linux", "torch-stable-abi2-cu130-x86_64-linux",
                                "tvm-ffi1-cu130-x86_64-linux", "torch212-cxx11-cu1300000000-x86_64-linux",
                                "torch212-cxx11-rocm-x86_64-linux", "torch212-cxx11-xpu-x86_64-linux",
                                "jax05-cu130-x86_64-linux", "torch212-cxx11-cu130-x86_64-linux-extra", "build")]
    return out


CORPUS_SYSTEMS = [
    ("cuda 13.0 torch 2.13 on sm_90", system(torch="2.13", abi=True, backend="cuda", bver="13.0", gpus=["9.0"])),
    ("cuda 13.2 torch 2.14 on sm_120", system(torch="2.14", abi=True, backend="cuda", bver="13.2", gpus=["12.0"])),
    ("cuda 12.8 torch 2.12 on sm_86", system(torch="2.12", abi=True, backend="cuda", bver="12.8", gpus=["8.6"])),
    ("cuda 13.0 torch 2.12 on aarch64 sm_100", system(torch="2.12", abi=True, backend="cuda", bver="13.0",
                                                      cpu="aarch64", gpus=["10.0"])),
    ("cuda 13.0 without torch, tvm-ffi 0.1", system(tvm="0.1", backend="cuda", bver="13.0", gpus=["9.0"])),
    ("rocm 7.1 torch 2.12", system(torch="2.12", abi=True, backend="rocm", bver="7.1")),
    ("xpu 2025.3 torch 2.12", system(torch="2.12", abi=True, backend="xpu", bver="2025.3")),
    ("cpu torch 2.14", system(torch="2.14", abi=True)),
    ("metal macOS 26 torch 2.13", system(torch="2.13", backend="metal", cpu="aarch64", os="darwin", macos="26.0")),
    ("windows cuda 13.0 torch 2.13", system(torch="2.13", abi=True, backend="cuda", bver="13.0", os="windows",
                                            gpus=["8.9"])),
]


def corpus_case(title, sysd, entries, check_arch):
    full = run_case(title, sysd, entries) if check_arch else run_case(title, sysd, [(n, None) for n, _ in entries])
    exp = full["expected"]
    return {"title": title, "system": sysd, "skip_arch_check": not check_arch,
            "expected": {"chosen": exp["chosen"], "accepted": [e["name"] for e in exp["trace"] if e["accepted"]],
                         "invalid": [e["name"] for e in exp["invalid"]]}}


def generate_corpus():
    entries = corpus_names()
    cases = [corpus_case(f"{title}, arch check {'on' if on else 'off'}", sysd, entries, on)
             for title, sysd in CORPUS_SYSTEMS for on in (True, False)]
    # A deliberate divergence (README's parity section): 0.17.2 takes any
    # number of digits, libkernels refuses a version number of 10 or more.
    ours_only = ["torch212-cxx11-cu1300000000-x86_64-linux"]
    assert all(n not in c["expected"]["invalid"] for c in cases for n in ours_only)
    doc = {"generator": "tests/data/variants/generate.py", "kernels_version": kernels.__version__,
           "variants": [{"name": n, "archs": a} for n, a in entries], "cases": cases,
           "refused_by_libkernels_only": ours_only}
    return json.dumps(doc, indent=None, sort_keys=True, ensure_ascii=False).replace('}, {"', '},\n{"') + "\n"


def generate():
    cases = [run_case(*c) for c in CASES]
    doc = {"generator": "tests/data/variants/generate.py",
           "kernels_version": kernels.__version__, "cases": cases}
    return json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main():
    for out, text in ((OUT, generate()), (CORPUS_OUT, generate_corpus())):
        count = len(json.loads(text)["cases"])
        if "--check" in sys.argv[1:]:
            if out.read_text(encoding="utf-8") != text:
                sys.exit(f"{out} differs from what the Python kernels resolver answers now; run {__file__}")
            print(f"{out.name} matches ({count} cases)")
            continue
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out} ({count} cases)")


if __name__ == "__main__":
    main()

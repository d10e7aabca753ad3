/* Internal: the sigstore bundle verifier (OpenSSL libcrypto + jansson).
 *
 * The steps and their order follow what sigstore-python 4.5 (the verifier
 * behind Python kernels 0.17) accepts, so that both answer alike on the
 * same inputs (tests/python/test_signature_conformance.py checks it):
 * bundle.c reads the bundle strictly (unknown fields, wrong types and bad
 * base64 are refused before anything is verified), trustroot.c the trusted
 * root, x509.c the certificate chain, SCT and policy, tlog.c the Rekor
 * entry, tsa.c RFC 3161 timestamps, verify.c puts them in order. Every
 * refusal is KERNELS_ESIGNATURE with a message naming the step. */
#ifndef KERNELS_LIB_SIGSTORE_H
#define KERNELS_LIB_SIGSTORE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

#include "kernels/signature.h"

typedef struct {
	unsigned char *p;
	size_t n;
} ks_bytes;

void ks_bytes_free(ks_bytes *b);

/* ---- bundle.c --------------------------------------------------------- */

typedef struct {
	int version;                 /* 1, 2 or 3 (media type) */
	X509 *leaf;                  /* the signing certificate */
	/* the one transparency log entry */
	uint64_t log_index;
	ks_bytes log_id;
	char *kind, *kind_version;   /* kindVersion */
	int has_integrated_time;
	uint64_t integrated_time;
	int has_promise;
	ks_bytes set;                /* inclusionPromise.signedEntryTimestamp */
	uint64_t proof_index, tree_size;
	ks_bytes root_hash;
	ks_bytes *hashes;
	size_t nhashes;
	char *checkpoint;            /* NULL when the proof has none */
	ks_bytes body;               /* canonicalizedBody */
	/* content */
	int dsse;                    /* a DSSE envelope instead of a message signature */
	int has_digest;
	ks_bytes digest;             /* messageSignature.messageDigest.digest */
	ks_bytes signature;          /* messageSignature.signature */
	/* RFC 3161 timestamps, DER */
	ks_bytes *timestamps;
	size_t ntimestamps;
} ks_bundle;

/* Parses and checks the bundle's form. KERNELS_ESIGNATURE naming what is
 * wrong ("bundle: ..."). Free with ks_bundle_free. */
int ks_bundle_parse(ks_bundle *b, const void *json, size_t size);
void ks_bundle_free(ks_bundle *b);

/* ---- util.c ----------------------------------------------------------- */

/* Standard base64 with padding, as protobuf's JSON writes bytes. */
int ks_b64_decode(const char *s, ks_bytes *out);
char *ks_b64_encode(const unsigned char *p, size_t n);
/* RFC 3339 ("2021-03-07T03:20:29Z", fractions and offsets allowed) to
 * microseconds since the epoch (every time here is in microseconds: trust
 * root periods end on ".999Z" and timestamps carry fractions). 0 on
 * success. */
int ks_time_parse(const char *s, int64_t *out);
/* SHA-256 of the DER SubjectPublicKeyInfo: sigstore's key id. */
int ks_key_id(EVP_PKEY *key, unsigned char out[32]);
/* Verifies `sig` over `data` (ECDSA with `md`, RSA PKCS#1 v1.5 with `md`,
 * or Ed25519 when md is NULL). 1 valid, 0 not. */
int ks_verify_sig(EVP_PKEY *key, const EVP_MD *md, const unsigned char *sig, size_t sig_len,
		  const unsigned char *data, size_t data_len);
/* The certificate's notBefore/notAfter in microseconds. */
int ks_cert_times(const X509 *x, int64_t *not_before, int64_t *not_after);

/* ---- trustroot.c ------------------------------------------------------ */

typedef struct {
	EVP_PKEY *key;
	const EVP_MD *md;            /* NULL: Ed25519 */
	unsigned char key_id[32];
} ks_key;

typedef struct {
	ks_key *keys;
	size_t n;
} ks_keyring;

typedef struct {
	X509 **certs;                /* leaf first, root last */
	size_t n;
	int64_t start, end;          /* microseconds; end only when has_end */
	int has_end;
} ks_authority;

typedef struct {
	ks_keyring rekor, ct;
	X509 **fulcio;               /* every CA certificate, intermediates included */
	size_t nfulcio;
	unsigned char (*fulcio_ids)[32]; /* their keys' ids (ks_key_id), as SCTs name issuers */
	X509_STORE *fulcio_store;    /* the anchors of the chain check, made once */
	ks_authority *tsas;
	size_t ntsas;
	int64_t next_start;          /* the earliest start after `now` of what was left out
				      * (INT64_MAX: none): the parse holds until then */
} ks_trustroot;

/* Parses a trusted_root.json. `now` decides which keys have started. The
 * result is only read by verification (ks_verify and below), so threads
 * may share one. */
int ks_trustroot_parse(ks_trustroot *t, const void *json, size_t size, const char *what, int64_t now);
void ks_trustroot_free(ks_trustroot *t);
/* The built-in public-good trusted_root.json (lib/sigstore/trusted_root.json). */
extern const char ks_public_good_root[];
extern const size_t ks_public_good_root_size;

/* Verifies `sig` over `data` with the key whose id is `key_id` or, when
 * none has it, with any key (sigstore-python's keyring). 1 valid. */
int ks_keyring_verify(const ks_keyring *r, const unsigned char *key_id, size_t key_id_len, const unsigned char *sig,
		      size_t sig_len, const unsigned char *data, size_t data_len);

/* ---- x509.c ----------------------------------------------------------- */

/* Chains `leaf` to the root's Fulcio certificates at time `t`; *issuer
 * (may be NULL) gets the certificate that issued it (a new reference). */
int ks_chain_verify(const ks_trustroot *t, X509 *leaf, int64_t when, X509 **issuer);
/* The embedded SCT of `leaf` (issued by `issuer`) against the CT logs. */
int ks_sct_verify(const ks_trustroot *t, X509 *leaf, X509 *issuer);
/* digitalSignature key usage and codeSigning extended key usage. */
int ks_leaf_usage(X509 *leaf);
/* 1: a CA certificate (basic constraints critical, CA true); 0: not. */
int ks_cert_is_ca(X509 *x);
/* The first policy that accepts `leaf`: 0; else KERNELS_ESIGNATURE
 * saying why each refused. */
int ks_policy_check(X509 *leaf, const kernels_signature_policy *p, size_t n);
/* The sigstore key details name of the leaf's key ("PKIX_ECDSA_P256_SHA_256"). */
const char *ks_key_details(X509 *leaf);

/* ---- tlog.c ----------------------------------------------------------- */

/* Inclusion proof, checkpoint and (when present) the signed entry
 * timestamp of the bundle's entry. */
int ks_tlog_verify(const ks_trustroot *t, const ks_bundle *b);
/* The entry's body against the signature, certificate and artifact digest. */
int ks_body_verify(const ks_bundle *b, const unsigned char digest[32]);

/* ---- tsa.c ------------------------------------------------------------ */

/* The bundle's RFC 3161 timestamps over its signature: each verified one
 * adds its time to times[] (room for b->ntimestamps). */
int ks_tsa_verify(const ks_trustroot *t, const ks_bundle *b, int64_t *times, size_t *ntimes);

/* ---- verify.c --------------------------------------------------------- */

/* The whole verification of `b` over `artifact`. */
int ks_verify(const ks_trustroot *t, const ks_bundle *b, const void *artifact, size_t size,
	      const kernels_signature_policy *policies, size_t npolicies);

#endif

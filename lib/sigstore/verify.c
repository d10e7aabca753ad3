/* The verification of a parsed bundle over an artifact, step by step:
 *  0. when was it signed: the log's integrated time (bound to the entry by
 *     the inclusion promise) and/or the verified RFC 3161 timestamps;
 *  1. the certificate chains to the trusted root's Fulcio CA at each time;
 *  2. its SCT is signed by a CT log of the root;
 *  3. it is a code-signing certificate and a policy accepts its identity;
 *  4. the log entry is in the log (inclusion proof, signed checkpoint) and
 *     its signed entry timestamp, when present, is the log's;
 *  5. each time lies in the certificate's validity;
 *  6. the signature is the certificate key's over the artifact's SHA-256;
 *  7. the log entry records this digest, signature and certificate. */
#include "sigstore.h"
#include "error.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#define BAD(...) kernels__error(KERNELS_ESIGNATURE, __VA_ARGS__)

static int signing_times(const ks_trustroot *t, const ks_bundle *b, int64_t **times, size_t *n)
{
	int rc;

	*n = 0;
	if (!(*times = calloc(b->ntimestamps + 1, sizeof(**times))))
		return kernels__error_oom();
	if ((rc = ks_tsa_verify(t, b, *times, n)) < 0)
		return rc;
	if (b->has_integrated_time && b->integrated_time && b->has_promise) {
		if ((strcmp(b->kind, "hashedrekord") && strcmp(b->kind, "dsse")) || strcmp(b->kind_version, "0.0.1"))
			return BAD("log entry: an integrated time on a %.32s %.32s entry, where only hashedrekord and dsse "
				   "0.0.1 entries have one", b->kind, b->kind_version);
		if (b->integrated_time > (uint64_t)INT64_MAX / 1000000)
			return BAD("log entry: its integrated time is out of range");
		(*times)[(*n)++] = (int64_t)b->integrated_time * 1000000;
	}
	if (!*n)
		return BAD("no verified signing time: %s",
			   b->ntimestamps ? "no timestamp authority of the trusted root vouches for the signed timestamps"
					  : "the entry has no integrated time with an inclusion promise");
	return 0;
}

static int message_verify(const ks_bundle *b, const void *artifact, size_t size, unsigned char digest[32])
{
	EVP_PKEY *key = X509_get0_pubkey(b->leaf);
	EVP_PKEY_CTX *ctx;
	unsigned int n = 0;
	int ok;

	if (!EVP_Digest(artifact, size, digest, &n, EVP_sha256(), NULL))
		return kernels__error_oom();
	if (b->has_digest && (b->digest.n != 32 || memcmp(b->digest.p, digest, 32)))
		return BAD("signature: the bundle's message digest is not the SHA-256 of this file (a bundle for "
			   "another file, or the file was changed)");
	if (!key || EVP_PKEY_base_id(key) != EVP_PKEY_EC)
		return BAD("signature: the certificate's key is not an ECDSA key");
	if (!(ctx = EVP_PKEY_CTX_new(key, NULL)))
		return kernels__error_oom();
	/* ECDSA over the SHA-256 digest: a "prehashed" signature. */
	ok = EVP_PKEY_verify_init(ctx) == 1 && EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) == 1 &&
	     EVP_PKEY_verify(ctx, b->signature.p, b->signature.n, digest, 32) == 1;
	EVP_PKEY_CTX_free(ctx);
	return ok ? 0 : BAD("signature: not valid for this file under the certificate's key (the file was changed "
			    "after signing, or the signature is another's)");
}

int ks_verify(const ks_trustroot *t, const ks_bundle *b, const void *artifact, size_t size,
	      const kernels_signature_policy *policies, size_t npolicies)
{
	unsigned char digest[32];
	int64_t *times = NULL, nb, na;
	size_t n = 0, i;
	X509 *issuer = NULL;
	int rc;

	/* A DSSE envelope signs a statement about the file, not the file: the
	 * kernel's own signature is a message signature over metadata.json. */
	if (b->dsse)
		return BAD("signature: the bundle holds a DSSE envelope, not a signature over the file itself");
	if ((rc = signing_times(t, b, &times, &n)) < 0)
		goto out;
	for (i = 0; i < n && rc == 0; i++) {
		X509_free(issuer);
		issuer = NULL;
		rc = ks_chain_verify(t, b->leaf, times[i], &issuer);
	}
	if (rc < 0 || (rc = ks_sct_verify(t, b->leaf, issuer)) < 0 || (rc = ks_leaf_usage(b->leaf)) < 0 ||
	    (rc = ks_policy_check(b->leaf, policies, npolicies)) < 0 || (rc = ks_tlog_verify(t, b)) < 0)
		goto out;
	if (ks_cert_times(b->leaf, &nb, &na)) {
		rc = BAD("certificate: its validity period does not read");
		goto out;
	}
	for (i = 0; i < n; i++)
		if (times[i] < nb || times[i] > na) {
			rc = BAD("certificate: expired or not yet valid when it signed");
			goto out;
		}
	if ((rc = message_verify(b, artifact, size, digest)) < 0)
		goto out;
	rc = ks_body_verify(b, digest);
out:
	X509_free(issuer);
	free(times);
	ERR_clear_error();
	return rc;
}

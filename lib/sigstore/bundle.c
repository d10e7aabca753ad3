/* Reading a sigstore bundle (protobuf-specs' Bundle as JSON), strictly:
 * a field of the wrong type, one the format does not have, bytes that are
 * not base64 or a number that is not a uint64 string make the bundle
 * invalid before any of it is used. The checks after the form are
 * sigstore-python's: one certificate, the signing one (a leaf), one log
 * entry with an inclusion proof and its checkpoint, an inclusion promise in
 * v0.1 bundles and in later ones that have no signed timestamp. */
#include "sigstore.h"
#include "error.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509v3.h>

#define BUNDLE_MAX (16 << 20)
#define HASHES_MAX 64
#define TIMESTAMPS_MAX 1024

static const char *const media_types[] = {
	"application/vnd.dev.sigstore.bundle+json;version=0.1",
	"application/vnd.dev.sigstore.bundle+json;version=0.2",
	"application/vnd.dev.sigstore.bundle+json;version=0.3",
	"application/vnd.dev.sigstore.bundle.v0.3+json",
};

#define BAD(...) kernels__error(KERNELS_ESIGNATURE, __VA_ARGS__)

/* `o` is an object whose keys are all in `keys` (NULL-terminated). */
static int fields(json_t *o, const char *where, const char *const *keys)
{
	const char *k;
	json_t *v;
	size_t i;

	if (!json_is_object(o))
		return BAD("bundle: %s is not a JSON object", where);
	json_object_foreach(o, k, v) {
		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i])
			return kernels__error(KERNELS_ESIGNATURE, "bundle: %s has the unknown field '%.64s'", where, k);
	}
	return 0;
}

/* An optional member: NULL when absent or null. */
static json_t *member(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

static int string(json_t *o, const char *where, const char *key, int required, const char **out)
{
	json_t *v = member(o, key);

	*out = NULL;
	if (!v)
		return required ? kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s is missing", where, key) : 0;
	if (!json_is_string(v))
		return kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s is not a string", where, key);
	*out = json_string_value(v);
	return 0;
}

static int bytes(json_t *o, const char *where, const char *key, int required, ks_bytes *out)
{
	const char *s;
	int rc = string(o, where, key, required, &s);

	out->p = NULL;
	out->n = 0;
	if (rc < 0 || !s)
		return rc;
	if (ks_b64_decode(s, out))
		return kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s is not valid base64", where, key);
	return 0;
}

/* protobuf's JSON writes uint64 as a decimal string. */
static int u64(json_t *o, const char *where, const char *key, int required, int *present, uint64_t *out)
{
	const char *s, *p;
	uint64_t v = 0;
	int rc = string(o, where, key, required, &s);

	if (present)
		*present = 0;
	*out = 0;
	if (rc < 0 || !s)
		return rc;
	if (!*s)
		return kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s is empty", where, key);
	for (p = s; *p; p++) {
		if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s '%.32s' is not an unsigned 64-bit number",
					      where, key, s);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (present)
		*present = 1;
	*out = v;
	return 0;
}

static int array(json_t *o, const char *where, const char *key, int required, json_t **out)
{
	json_t *v = member(o, key);

	*out = v;
	if (!v)
		return required ? kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s is missing", where, key) : 0;
	if (!json_is_array(v))
		return kernels__error(KERNELS_ESIGNATURE, "bundle: %s.%s is not a list", where, key);
	return 0;
}

static int certificate(json_t *o, const char *where, X509 **out)
{
	static const char *const keys[] = { "rawBytes", NULL };
	const unsigned char *p;
	ks_bytes der;
	int rc;

	*out = NULL;
	if ((rc = fields(o, where, keys)) < 0 || (rc = bytes(o, where, "rawBytes", 1, &der)) < 0)
		return rc;
	p = der.p;
	*out = d2i_X509(NULL, &p, (long)der.n);
	if (*out && p != der.p + der.n) {
		X509_free(*out);
		*out = NULL;
	}
	ks_bytes_free(&der);
	return *out ? 0 : kernels__error(KERNELS_ESIGNATURE, "bundle: %s is not a DER X.509 certificate", where);
}

/* The first certificate of a v0.1/v0.2 chain must be the signing one:
 * not a CA, digitalSignature and codeSigning. */
static int check_leaf(X509 *x)
{
	uint32_t ku;

	if (X509_get_version(x) != 2)
		return BAD("bundle: the signing certificate is not X.509 v3");
	if (ks_cert_is_ca(x))
		return BAD("bundle: the first certificate of the chain is a CA, not the signing certificate");
	ku = X509_get_key_usage(x);
	if (ku == UINT32_MAX || !(ku & KU_DIGITAL_SIGNATURE))
		return BAD("bundle: the signing certificate lacks the digitalSignature key usage");
	if (!(X509_get_extension_flags(x) & EXFLAG_XKUSAGE) || !(X509_get_extended_key_usage(x) & XKU_CODE_SIGN))
		return BAD("bundle: the signing certificate lacks the codeSigning extended key usage");
	return 0;
}

static int material_cert(ks_bundle *b, json_t *vm)
{
	static const char *const chain_keys[] = { "certificates", NULL };
	json_t *key = member(vm, "publicKey"), *chain = member(vm, "x509CertificateChain"),
	       *cert = member(vm, "certificate"), *certs;
	int rc;

	if (!!key + !!chain + !!cert != 1)
		return BAD("bundle: verificationMaterial must hold exactly one of publicKey, x509CertificateChain and "
			   "certificate");
	if (b->version == 3) {
		if (!cert)
			return BAD("bundle: a v0.3 bundle must carry its signing certificate in "
				   "verificationMaterial.certificate%s (kernels are signed keyless, with Fulcio)",
				   key ? " (this one names a public key)" : "");
		return certificate(cert, "verificationMaterial.certificate", &b->leaf);
	}
	if (!chain)
		return BAD("bundle: a v0.1/v0.2 bundle must carry verificationMaterial.x509CertificateChain%s",
			   key ? " (this one names a public key; kernels are signed keyless, with Fulcio)" : "");
	if ((rc = fields(chain, "verificationMaterial.x509CertificateChain", chain_keys)) < 0 ||
	    (rc = array(chain, "verificationMaterial.x509CertificateChain", "certificates", 1, &certs)) < 0)
		return rc;
	if (json_array_size(certs) == 0)
		return BAD("bundle: the certificate chain is empty");
	/* Later certificates are not used: the chain is built from the
	 * trusted root alone, as sigstore-python does. They must still parse. */
	{
		size_t i;
		for (i = 0; i < json_array_size(certs); i++) {
			X509 *x = NULL;
			if ((rc = certificate(json_array_get(certs, i), "a certificate of the chain", &x)) < 0)
				return rc;
			if (i == 0)
				b->leaf = x;
			else
				X509_free(x);
		}
	}
	return check_leaf(b->leaf);
}

static int proof(ks_bundle *b, json_t *p)
{
	static const char *const keys[] = { "logIndex", "rootHash", "treeSize", "hashes", "checkpoint", NULL };
	static const char *const cp_keys[] = { "envelope", NULL };
	const char *w = "tlogEntries[0].inclusionProof", *env;
	json_t *hashes, *cp;
	size_t i;
	int rc;

	if ((rc = fields(p, w, keys)) < 0 || (rc = u64(p, w, "logIndex", 1, NULL, &b->proof_index)) < 0 ||
	    (rc = bytes(p, w, "rootHash", 1, &b->root_hash)) < 0 ||
	    (rc = u64(p, w, "treeSize", 1, NULL, &b->tree_size)) < 0 || (rc = array(p, w, "hashes", 1, &hashes)) < 0)
		return rc;
	if (b->tree_size <= b->proof_index)
		return BAD("bundle: the inclusion proof's logIndex is not below its treeSize");
	if (json_array_size(hashes) > HASHES_MAX)
		return BAD("bundle: the inclusion proof has more than 64 hashes");
	if (json_array_size(hashes) && !(b->hashes = calloc(json_array_size(hashes), sizeof(*b->hashes))))
		return kernels__error_oom();
	for (i = 0; i < json_array_size(hashes); i++) {
		json_t *h = json_array_get(hashes, i);
		if (!json_is_string(h) || ks_b64_decode(json_string_value(h), &b->hashes[i]))
			return BAD("bundle: a hash of the inclusion proof is not a base64 string");
		b->nhashes++;
	}
	if ((cp = member(p, "checkpoint"))) {
		if ((rc = fields(cp, "tlogEntries[0].inclusionProof.checkpoint", cp_keys)) < 0 ||
		    (rc = string(cp, "tlogEntries[0].inclusionProof.checkpoint", "envelope", 1, &env)) < 0)
			return rc;
		if (!(b->checkpoint = strdup(env)))
			return kernels__error_oom();
	}
	return 0;
}

static int entry(ks_bundle *b, json_t *e)
{
	static const char *const keys[] = { "logIndex", "logId", "kindVersion", "integratedTime", "inclusionPromise",
					     "inclusionProof", "canonicalizedBody", NULL };
	static const char *const id_keys[] = { "keyId", NULL }, *const kv_keys[] = { "kind", "version", NULL },
				 *const promise_keys[] = { "signedEntryTimestamp", NULL };
	const char *w = "tlogEntries[0]", *kind, *version;
	json_t *id, *kv, *promise, *p;
	int rc;

	if ((rc = fields(e, w, keys)) < 0 || (rc = u64(e, w, "logIndex", 1, NULL, &b->log_index)) < 0)
		return rc;
	if (!(id = member(e, "logId")))
		return BAD("bundle: %s.logId is missing", w);
	if ((rc = fields(id, "tlogEntries[0].logId", id_keys)) < 0 ||
	    (rc = bytes(id, "tlogEntries[0].logId", "keyId", 1, &b->log_id)) < 0)
		return rc;
	if (!(kv = member(e, "kindVersion")))
		return BAD("bundle: %s.kindVersion is missing", w);
	if ((rc = fields(kv, "tlogEntries[0].kindVersion", kv_keys)) < 0 ||
	    (rc = string(kv, "tlogEntries[0].kindVersion", "kind", 1, &kind)) < 0 ||
	    (rc = string(kv, "tlogEntries[0].kindVersion", "version", 1, &version)) < 0)
		return rc;
	if (!(b->kind = strdup(kind)) || !(b->kind_version = strdup(version)))
		return kernels__error_oom();
	if ((rc = u64(e, w, "integratedTime", 0, &b->has_integrated_time, &b->integrated_time)) < 0)
		return rc;
	if ((promise = member(e, "inclusionPromise"))) {
		if ((rc = fields(promise, "tlogEntries[0].inclusionPromise", promise_keys)) < 0 ||
		    (rc = bytes(promise, "tlogEntries[0].inclusionPromise", "signedEntryTimestamp", 1, &b->set)) < 0)
			return rc;
		b->has_promise = 1;
	}
	if (!(p = member(e, "inclusionProof")))
		return BAD("bundle: %s has no inclusionProof; an entry must come with its proof and checkpoint", w);
	if ((rc = proof(b, p)) < 0)
		return rc;
	return bytes(e, w, "canonicalizedBody", 1, &b->body);
}

static int timestamps(ks_bundle *b, json_t *vm)
{
	static const char *const keys[] = { "rfc3161Timestamps", NULL }, *const ts_keys[] = { "signedTimestamp", NULL };
	json_t *t = member(vm, "timestampVerificationData"), *list;
	size_t i;
	int rc;

	if (!t)
		return 0;
	if ((rc = fields(t, "verificationMaterial.timestampVerificationData", keys)) < 0 ||
	    (rc = array(t, "verificationMaterial.timestampVerificationData", "rfc3161Timestamps", 0, &list)) < 0 ||
	    !list)
		return rc;
	if (json_array_size(list) > TIMESTAMPS_MAX)
		return BAD("bundle: more than 1024 timestamps");
	if (json_array_size(list) && !(b->timestamps = calloc(json_array_size(list), sizeof(*b->timestamps))))
		return kernels__error_oom();
	for (i = 0; i < json_array_size(list); i++) {
		json_t *ts = json_array_get(list, i);
		if ((rc = fields(ts, "an RFC 3161 timestamp", ts_keys)) < 0 ||
		    (rc = bytes(ts, "an RFC 3161 timestamp", "signedTimestamp", 1, &b->timestamps[i])) < 0)
			return rc;
		b->ntimestamps++;
	}
	return 0;
}

static int message(ks_bundle *b, json_t *m)
{
	static const char *const keys[] = { "messageDigest", "signature", NULL },
				 *const d_keys[] = { "algorithm", "digest", NULL };
	static const char *const algorithms[] = { "SHA2_256", "SHA2_384", "SHA2_512", "SHA3_256", "SHA3_384", NULL };
	json_t *d;
	const char *alg;
	size_t i;
	int rc;

	if ((rc = fields(m, "messageSignature", keys)) < 0)
		return rc;
	if ((d = member(m, "messageDigest"))) {
		if ((rc = fields(d, "messageSignature.messageDigest", d_keys)) < 0 ||
		    (rc = string(d, "messageSignature.messageDigest", "algorithm", 1, &alg)) < 0 ||
		    (rc = bytes(d, "messageSignature.messageDigest", "digest", 1, &b->digest)) < 0)
			return rc;
		for (i = 0; algorithms[i] && strcmp(algorithms[i], alg); i++)
			;
		if (!algorithms[i])
			return BAD("bundle: messageSignature.messageDigest.algorithm '%.32s' is unknown", alg);
		b->has_digest = 1;
	}
	return bytes(m, "messageSignature", "signature", 1, &b->signature);
}

static int dsse(json_t *d)
{
	static const char *const keys[] = { "payload", "payloadType", "signatures", NULL },
				 *const s_keys[] = { "sig", "keyid", NULL };
	const char *s;
	ks_bytes payload, sig;
	json_t *sigs;
	size_t i;
	int rc;

	if ((rc = fields(d, "dsseEnvelope", keys)) < 0 || (rc = bytes(d, "dsseEnvelope", "payload", 1, &payload)) < 0)
		return rc;
	ks_bytes_free(&payload);
	if ((rc = string(d, "dsseEnvelope", "payloadType", 1, &s)) < 0 ||
	    (rc = array(d, "dsseEnvelope", "signatures", 1, &sigs)) < 0)
		return rc;
	for (i = 0; i < json_array_size(sigs); i++) {
		json_t *one = json_array_get(sigs, i);
		if ((rc = fields(one, "a DSSE signature", s_keys)) < 0 ||
		    (rc = bytes(one, "a DSSE signature", "sig", 1, &sig)) < 0 ||
		    (rc = string(one, "a DSSE signature", "keyid", 0, &s)) < 0)
			return rc;
		ks_bytes_free(&sig);
	}
	return 0;
}

static int parse(ks_bundle *b, json_t *root)
{
	static const char *const keys[] = { "mediaType", "verificationMaterial", "messageSignature", "dsseEnvelope",
					    NULL };
	static const char *const vm_keys[] = { "publicKey", "x509CertificateChain", "certificate", "tlogEntries",
					       "timestampVerificationData", NULL };
	json_t *vm, *entries, *m, *d;
	const char *media;
	size_t i;
	int rc;

	if ((rc = fields(root, "the bundle", keys)) < 0 || (rc = string(root, "bundle", "mediaType", 1, &media)) < 0)
		return rc;
	for (i = 0; i < sizeof(media_types) / sizeof(*media_types) && strcmp(media, media_types[i]); i++)
		;
	if (i == sizeof(media_types) / sizeof(*media_types))
		return BAD("bundle: unsupported media type '%.80s'; this verifier reads bundles v0.1 to v0.3", media);
	b->version = i < 3 ? (int)i + 1 : 3;
	if (!(vm = member(root, "verificationMaterial")))
		return BAD("bundle: verificationMaterial is missing");
	if ((rc = fields(vm, "verificationMaterial", vm_keys)) < 0 ||
	    (rc = array(vm, "verificationMaterial", "tlogEntries", 1, &entries)) < 0 || (rc = timestamps(b, vm)) < 0)
		return rc;
	m = member(root, "messageSignature");
	d = member(root, "dsseEnvelope");
	if (!!m + !!d != 1)
		return BAD("bundle: it must hold exactly one of messageSignature and dsseEnvelope");
	if ((rc = m ? message(b, m) : dsse(d)) < 0)
		return rc;
	b->dsse = !!d;
	for (i = 0; i < json_array_size(entries); i++)
		if (!json_is_object(json_array_get(entries, i)))
			return BAD("bundle: a transparency log entry is not an object");
	if (json_array_size(entries) == 1 && (rc = entry(b, json_array_get(entries, 0))) < 0)
		return rc;
	/* The form is right; now what sigstore-python requires of it. */
	if ((rc = material_cert(b, vm)) < 0)
		return rc;
	if (json_array_size(entries) != 1)
		return BAD("bundle: it must hold exactly one transparency log entry, not %s",
			   json_array_size(entries) ? "several" : "none");
	if (strcmp(b->kind_version, "0.0.1") && strcmp(b->kind_version, "0.0.2"))
		return BAD("bundle: log entry version '%.32s' is not 0.0.1 or 0.0.2", b->kind_version);
	if (!b->checkpoint)
		return BAD("bundle: the inclusion proof has no checkpoint; the entry cannot be tied to a signed log "
			   "state");
	if (b->version == 1 && !b->has_promise)
		return BAD("bundle: a v0.1 bundle must carry an inclusion promise (signed entry timestamp)");
	if (b->version > 1 && !b->has_promise && !b->ntimestamps)
		return BAD("bundle: it has neither an inclusion promise nor a signed timestamp, so nothing says when it "
			   "was signed");
	return 0;
}

int ks_bundle_parse(ks_bundle *b, const void *data, size_t size)
{
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(b, 0, sizeof(*b));
	if (size > BUNDLE_MAX)
		return kernels__error(KERNELS_ESIGNATURE, "bundle: %zu bytes, more than the %d a bundle may have", size,
				      BUNDLE_MAX);
	if (!(root = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr)))
		return kernels__error(KERNELS_ESIGNATURE, "bundle: not valid JSON (line %d: %s)", jerr.line, jerr.text);
	rc = parse(b, root);
	json_decref(root);
	if (rc < 0)
		ks_bundle_free(b);
	return rc;
}

void ks_bundle_free(ks_bundle *b)
{
	size_t i;

	X509_free(b->leaf);
	ks_bytes_free(&b->log_id);
	free(b->kind);
	free(b->kind_version);
	ks_bytes_free(&b->set);
	ks_bytes_free(&b->root_hash);
	for (i = 0; i < b->nhashes; i++)
		ks_bytes_free(&b->hashes[i]);
	free(b->hashes);
	free(b->checkpoint);
	ks_bytes_free(&b->body);
	ks_bytes_free(&b->digest);
	ks_bytes_free(&b->signature);
	for (i = 0; i < b->ntimestamps; i++)
		ks_bytes_free(&b->timestamps[i]);
	free(b->timestamps);
	memset(b, 0, sizeof(*b));
}

/* A sigstore trusted root (protobuf-specs' TrustedRoot as JSON): the
 * Rekor and CT log keys, the Fulcio CA certificates and the timestamp
 * authorities, read as strictly as a bundle. A key whose validity has not
 * started yet is left out; an expired one stays (what it signed while valid
 * still verifies), as sigstore-python keeps them for verification. */
#include "sigstore.h"
#include "error.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define ROOT_MAX (16 << 20)

typedef struct {
	const char *what;  /* the file, for messages */
	int64_t now;
	int64_t *next_start; /* the root's next_start */
} ctx;

/* Left out because it starts after `now`: the parse holds until then. */
static void starts_later(const ctx *c, int64_t start)
{
	if (start < *c->next_start)
		*c->next_start = start;
}

static int bad(const ctx *c, const char *fmt, const char *a)
{
	return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: %s%s", c->what, a ? a : "", fmt);
}

static int fields(const ctx *c, json_t *o, const char *where, const char *const *keys)
{
	const char *k;
	json_t *v;
	size_t i;

	if (!json_is_object(o))
		return bad(c, " is not a JSON object", where);
	json_object_foreach(o, k, v) {
		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i])
			return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: %s has the unknown field '%.64s'",
					      c->what, where, k);
	}
	return 0;
}

static json_t *member(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_null(v) ? NULL : v;
}

static int need_string(const ctx *c, json_t *o, const char *where, const char *key, int required, const char **out)
{
	json_t *v = member(o, key);
	*out = NULL;
	if (!v) {
		if (required)
			return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: %s.%s is missing", c->what, where, key);
		return 0;
	}
	if (!json_is_string(v))
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: %s.%s is not a string", c->what, where, key);
	*out = json_string_value(v);
	return 0;
}

static int need_bytes(const ctx *c, json_t *o, const char *where, const char *key, int required, ks_bytes *out)
{
	const char *s;
	int rc = need_string(c, o, where, key, required, &s);
	out->p = NULL;
	out->n = 0;
	if (rc < 0 || !s)
		return rc;
	if (ks_b64_decode(s, out))
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: %s.%s is not valid base64", c->what, where, key);
	return 0;
}

/* validFor {start, end?}: the start is required (an open start would make
 * the bound meaningless). */
static int time_range(const ctx *c, json_t *o, const char *where, int64_t *start, int64_t *end, int *has_end)
{
	static const char *const keys[] = { "start", "end", NULL };
	const char *s, *e;
	int rc;

	if ((rc = fields(c, o, where, keys)) < 0 || (rc = need_string(c, o, where, "start", 1, &s)) < 0 ||
	    (rc = need_string(c, o, where, "end", 0, &e)) < 0)
		return rc;
	if (ks_time_parse(s, start) || (e && ks_time_parse(e, end)))
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: %s holds a time that is not RFC 3339", c->what,
				      where);
	*has_end = !!e;
	return 0;
}

static const char *const hash_algorithms[] = { "SHA2_256", "SHA2_384", "SHA2_512", "SHA3_256", "SHA3_384", NULL };
static const char *const key_details[] = {
	"PKCS1_RSA_PKCS1V5", "PKCS1_RSA_PSS", "PKIX_RSA_PKCS1V5", "PKIX_RSA_PSS", "PKIX_RSA_PKCS1V15_2048_SHA256",
	"PKIX_RSA_PKCS1V15_3072_SHA256", "PKIX_RSA_PKCS1V15_4096_SHA256", "PKIX_RSA_PSS_2048_SHA256",
	"PKIX_RSA_PSS_3072_SHA256", "PKIX_RSA_PSS_4096_SHA256", "PKIX_ECDSA_P256_HMAC_SHA_256",
	"PKIX_ECDSA_P256_SHA_256", "PKIX_ECDSA_P384_SHA_384", "PKIX_ECDSA_P521_SHA_512", "PKIX_ED25519",
	"PKIX_ED25519_PH", "PKIX_ECDSA_P384_SHA_256", "PKIX_ECDSA_P521_SHA_256", "LMS_SHA256", "LMOTS_SHA256",
	"ML_DSA_65", "ML_DSA_87", NULL
};

static int one_of(const char *s, const char *const *list)
{
	size_t i;
	for (i = 0; list[i]; i++)
		if (!strcmp(s, list[i]))
			return 1;
	return 0;
}

/* The key a trusted root names, if this verifier uses its kind:
 * 1 added, 0 left out (kind not used, not started, unreadable). */
static int add_key(ks_keyring *r, const ks_bytes *raw, const char *details, int64_t start, int64_t now)
{
	const unsigned char *p = raw->p;
	const EVP_MD *md = NULL;
	int want;
	EVP_PKEY *key;
	ks_key *keys;

	if (!raw->n || now < start)
		return 0;
	if (!strcmp(details, "PKCS1_RSA_PKCS1V5") || !strncmp(details, "PKIX_RSA_PKCS1V15_", 18)) {
		want = EVP_PKEY_RSA;
		md = EVP_sha256();
	} else if (!strcmp(details, "PKIX_ECDSA_P256_SHA_256")) {
		want = EVP_PKEY_EC;
		md = EVP_sha256();
	} else if (!strcmp(details, "PKIX_ECDSA_P384_SHA_384")) {
		want = EVP_PKEY_EC;
		md = EVP_sha384();
	} else if (!strcmp(details, "PKIX_ECDSA_P521_SHA_512")) {
		want = EVP_PKEY_EC;
		md = EVP_sha512();
	} else if (!strcmp(details, "PKIX_ED25519")) {
		want = EVP_PKEY_ED25519;
	} else {
		return 0;
	}
	if (!(key = d2i_PUBKEY(NULL, &p, (long)raw->n)))
		return 0;
	if (EVP_PKEY_base_id(key) != want || !(keys = realloc(r->keys, (r->n + 1) * sizeof(*keys)))) {
		EVP_PKEY_free(key);
		return 0;
	}
	r->keys = keys;
	keys[r->n].key = key;
	keys[r->n].md = md;
	if (ks_key_id(key, keys[r->n].key_id)) {
		EVP_PKEY_free(key);
		return 0;
	}
	r->n++;
	return 1;
}

static int logs(const ctx *c, json_t *list, const char *name, ks_keyring *r)
{
	static const char *const keys[] = { "baseUrl", "hashAlgorithm", "publicKey", "logId", "checkpointKeyId",
					    "operator", NULL };
	static const char *const pk_keys[] = { "rawBytes", "keyDetails", "validFor", NULL };
	static const char *const id_keys[] = { "keyId", NULL };
	size_t i;
	int rc;

	if (!json_is_array(list))
		return bad(c, " is missing or not a list", name);
	for (i = 0; i < json_array_size(list); i++) {
		json_t *l = json_array_get(list, i), *pk, *vf, *id;
		const char *s, *details;
		ks_bytes raw = { 0 }, logid = { 0 };
		int64_t start = 0, end = 0;
		int has_end = 0;

		if ((rc = fields(c, l, name, keys)) < 0 || (rc = need_string(c, l, name, "baseUrl", 1, &s)) < 0 ||
		    (rc = need_string(c, l, name, "hashAlgorithm", 1, &s)) < 0 ||
		    (rc = need_string(c, l, name, "operator", 0, &s)) < 0)
			return rc;
		if (!one_of(json_string_value(member(l, "hashAlgorithm")), hash_algorithms))
			return bad(c, " has an unknown hashAlgorithm", name);
		if (!(pk = member(l, "publicKey")) || !(id = member(l, "logId")))
			return bad(c, " lacks publicKey or logId", name);
		if ((rc = fields(c, id, "logId", id_keys)) < 0 || (rc = need_bytes(c, id, "logId", "keyId", 1, &logid)) < 0)
			return rc;
		ks_bytes_free(&logid);
		if ((id = member(l, "checkpointKeyId")) &&
		    ((rc = fields(c, id, "checkpointKeyId", id_keys)) < 0 ||
		     (rc = need_bytes(c, id, "checkpointKeyId", "keyId", 1, &logid)) < 0))
			return rc;
		ks_bytes_free(&logid);
		if ((rc = fields(c, pk, "publicKey", pk_keys)) < 0 ||
		    (rc = need_string(c, pk, "publicKey", "keyDetails", 1, &details)) < 0)
			return rc;
		if (!one_of(details, key_details))
			return bad(c, ".publicKey has unknown keyDetails", name);
		if ((vf = member(pk, "validFor")) && (rc = time_range(c, vf, "publicKey.validFor", &start, &end, &has_end)) < 0)
			return rc;
		if ((rc = need_bytes(c, pk, "publicKey", "rawBytes", 0, &raw)) < 0)
			return rc;
		if (raw.n && vf && c->now < start)
			starts_later(c, start);
		add_key(r, &raw, details, vf ? start : INT64_MIN, c->now);
		ks_bytes_free(&raw);
	}
	return 0;
}

static int certs_of(const ctx *c, json_t *chain, const char *where, X509 ***out, size_t *n)
{
	static const char *const keys[] = { "certificates", NULL }, *const c_keys[] = { "rawBytes", NULL };
	json_t *list;
	size_t i;
	int rc;

	if ((rc = fields(c, chain, where, keys)) < 0)
		return rc;
	if (!json_is_array(list = member(chain, "certificates")))
		return bad(c, ".certificates is missing", where);
	if (!json_array_size(list))
		return bad(c, " has no certificate", where);
	if (!(*out = calloc(json_array_size(list), sizeof(**out))))
		return kernels__error_oom();
	for (i = 0; i < json_array_size(list); i++) {
		json_t *o = json_array_get(list, i);
		const unsigned char *p;
		ks_bytes der;

		if ((rc = fields(c, o, where, c_keys)) < 0 || (rc = need_bytes(c, o, where, "rawBytes", 1, &der)) < 0)
			return rc;
		p = der.p;
		(*out)[i] = d2i_X509(NULL, &p, (long)der.n);
		ks_bytes_free(&der);
		if (!(*out)[i])
			return bad(c, " holds something that is not a DER certificate", where);
		(*n)++;
	}
	return 0;
}

static int authorities(const ctx *c, json_t *list, const char *name, int required, ks_authority **out, size_t *n)
{
	static const char *const keys[] = { "subject", "uri", "certChain", "validFor", "operator", NULL };
	static const char *const dn_keys[] = { "organization", "commonName", NULL };
	size_t i;
	int rc;

	if (!list && !required)
		return 0;
	if (!json_is_array(list))
		return bad(c, " is missing or not a list", name);
	if (json_array_size(list) && !(*out = calloc(json_array_size(list), sizeof(**out))))
		return kernels__error_oom();
	for (i = 0; i < json_array_size(list); i++) {
		json_t *a = json_array_get(list, i), *dn, *vf, *chain;
		ks_authority *au = &(*out)[i];
		const char *s;

		(*n)++;
		if ((rc = fields(c, a, name, keys)) < 0 || (rc = need_string(c, a, name, "uri", 0, &s)) < 0 ||
		    (rc = need_string(c, a, name, "operator", 0, &s)) < 0)
			return rc;
		if (!(dn = member(a, "subject")) || !(vf = member(a, "validFor")) || !(chain = member(a, "certChain")))
			return bad(c, " lacks subject, validFor or certChain", name);
		if ((rc = fields(c, dn, "subject", dn_keys)) < 0 ||
		    (rc = need_string(c, dn, "subject", "organization", 1, &s)) < 0 ||
		    (rc = need_string(c, dn, "subject", "commonName", 1, &s)) < 0 ||
		    (rc = time_range(c, vf, "validFor", &au->start, &au->end, &au->has_end)) < 0 ||
		    (rc = certs_of(c, chain, "certChain", &au->certs, &au->n)) < 0)
			return rc;
	}
	return 0;
}

static int parse(ks_trustroot *t, const ctx *c, json_t *root)
{
	static const char *const keys[] = { "mediaType", "tlogs", "certificateAuthorities", "ctlogs",
					    "timestampAuthorities", NULL };
	ks_authority *cas = NULL;
	size_t ncas = 0, i, j;
	const char *media;
	int rc;

	if ((rc = fields(c, root, "the root", keys)) < 0 ||
	    (rc = need_string(c, root, "the root", "mediaType", 1, &media)) < 0)
		return rc;
	if (strcmp(media, "application/vnd.dev.sigstore.trustedroot+json;version=0.1") &&
	    strcmp(media, "application/vnd.dev.sigstore.trustedroot.v0.2+json"))
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: unsupported media type '%.80s'", c->what,
				      media);
	if ((rc = logs(c, member(root, "tlogs"), "tlogs", &t->rekor)) < 0 ||
	    (rc = logs(c, member(root, "ctlogs"), "ctlogs", &t->ct)) < 0 ||
	    (rc = authorities(c, member(root, "timestampAuthorities"), "timestampAuthorities", 0, &t->tsas,
			      &t->ntsas)) < 0)
		return rc;
	rc = authorities(c, member(root, "certificateAuthorities"), "certificateAuthorities", 1, &cas, &ncas);
	/* Every CA certificate of an authority that has started is a trust
	 * anchor: intermediates too (the chain is built from these alone). */
	for (i = 0; rc == 0 && i < ncas; i++) {
		X509 **more;
		if (c->now < cas[i].start) {
			starts_later(c, cas[i].start);
			continue;
		}
		if (!(more = realloc(t->fulcio, (t->nfulcio + cas[i].n) * sizeof(*more)))) {
			rc = kernels__error_oom();
			break;
		}
		t->fulcio = more;
		for (j = 0; j < cas[i].n; j++) {
			t->fulcio[t->nfulcio++] = cas[i].certs[j];
			cas[i].certs[j] = NULL;
		}
	}
	for (i = 0; i < ncas; i++) {
		for (j = 0; j < cas[i].n; j++)
			X509_free(cas[i].certs[j]);
		free(cas[i].certs);
	}
	free(cas);
	return rc;
}

/* What every verification would otherwise derive again from the Fulcio
 * certificates: their key ids and the store of anchors. */
static int derived(ks_trustroot *t)
{
	size_t i;

	if (!(t->fulcio_ids = calloc(t->nfulcio ? t->nfulcio : 1, sizeof(*t->fulcio_ids))) ||
	    !(t->fulcio_store = X509_STORE_new()))
		return kernels__error_oom();
	for (i = 0; i < t->nfulcio; i++)
		if (ks_key_id(X509_get0_pubkey(t->fulcio[i]), t->fulcio_ids[i]) ||
		    !X509_STORE_add_cert(t->fulcio_store, t->fulcio[i]))
			return kernels__error(KERNELS_ESIGNATURE, "trusted root: Fulcio CA certificate %zu has an unusable key", i);
	return 0;
}

int ks_trustroot_parse(ks_trustroot *t, const void *data, size_t size, const char *what, int64_t now)
{
	ctx c = { what ? what : "(given)", now, &t->next_start };
	json_error_t jerr;
	json_t *root;
	int rc;

	memset(t, 0, sizeof(*t));
	t->next_start = INT64_MAX;
	if (size > ROOT_MAX)
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: larger than %d bytes", c.what, ROOT_MAX);
	if (!(root = json_loadb(data, size, JSON_REJECT_DUPLICATES, &jerr)))
		return kernels__error(KERNELS_ESIGNATURE, "trusted root %s: not valid JSON (line %d: %s)", c.what,
				      jerr.line, jerr.text);
	rc = parse(t, &c, root);
	json_decref(root);
	if (rc == 0)
		rc = derived(t);
	if (rc < 0)
		ks_trustroot_free(t);
	return rc;
}

static void keyring_free(ks_keyring *r)
{
	size_t i;
	for (i = 0; i < r->n; i++)
		EVP_PKEY_free(r->keys[i].key);
	free(r->keys);
}

void ks_trustroot_free(ks_trustroot *t)
{
	size_t i, j;

	keyring_free(&t->rekor);
	keyring_free(&t->ct);
	for (i = 0; i < t->nfulcio; i++)
		X509_free(t->fulcio[i]);
	free(t->fulcio);
	free(t->fulcio_ids);
	X509_STORE_free(t->fulcio_store);
	for (i = 0; i < t->ntsas; i++) {
		for (j = 0; j < t->tsas[i].n; j++)
			X509_free(t->tsas[i].certs[j]);
		free(t->tsas[i].certs);
	}
	free(t->tsas);
	memset(t, 0, sizeof(*t));
}

int ks_keyring_verify(const ks_keyring *r, const unsigned char *key_id, size_t key_id_len, const unsigned char *sig,
		      size_t sig_len, const unsigned char *data, size_t data_len)
{
	size_t i;

	if (key_id_len == 32)
		for (i = 0; i < r->n; i++)
			if (!memcmp(r->keys[i].key_id, key_id, 32))
				return ks_verify_sig(r->keys[i].key, r->keys[i].md, sig, sig_len, data, data_len);
	/* The id is only a hint: with no key of that id, any key may do. */
	for (i = 0; i < r->n; i++)
		if (ks_verify_sig(r->keys[i].key, r->keys[i].md, sig, sig_len, data, data_len))
			return 1;
	return 0;
}

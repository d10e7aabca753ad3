/* The Rekor entry: its body says what was logged (the artifact's digest,
 * the signature, the certificate) and must say exactly what the bundle
 * says; its RFC 6962 inclusion proof must lead from the body to the root
 * hash of a checkpoint the log signed; its signed entry timestamp, when
 * the bundle has one, must be the log's signature over the entry. */
#include "sigstore.h"
#include "error.h"
#include "util.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/pem.h>

#define BAD(...) kernels__error(KERNELS_ESIGNATURE, __VA_ARGS__)

/* ---- RFC 6962 inclusion proof ------------------------------------------- */

/* A proof's hash: SHA-256 over a prefix byte and up to two parts. One
 * context and one fetched digest serve the whole proof: EVP_sha256()
 * makes libcrypto 3 look the digest up again on every init. 0, or -1
 * when libcrypto fails. */
static int hash(EVP_MD_CTX *c, const EVP_MD *md, unsigned char prefix, const unsigned char *l, size_t ln,
		const unsigned char *r, size_t rn, unsigned char out[32])
{
	unsigned int n = 0;

	return EVP_DigestInit_ex(c, md, NULL) && EVP_DigestUpdate(c, &prefix, 1) && EVP_DigestUpdate(c, l, ln) &&
			       EVP_DigestUpdate(c, r, rn) && EVP_DigestFinal_ex(c, out, &n)
		       ? 0
		       : -1;
}

static int bit_length(uint64_t v)
{
	int n = 0;
	for (; v; v >>= 1)
		n++;
	return n;
}

static int popcount(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

/* The RFC 6962 hashes from the body's leaf up the proof into `seed`. */
static int merkle_root(EVP_MD_CTX *c, const EVP_MD *md, const ks_bundle *b, int inner, unsigned char seed[32])
{
	size_t i;

	if (hash(c, md, 0, b->body.p, b->body.n, NULL, 0, seed))
		return -1;
	for (i = 0; i < b->nhashes; i++) {
		const ks_bytes *h = &b->hashes[i];
		int left = i < (size_t)inner && ((b->proof_index >> i) & 1) == 0;
		if (left ? hash(c, md, 1, seed, 32, h->p, h->n, seed) : hash(c, md, 1, h->p, h->n, seed, 32, seed))
			return -1;
	}
	return 0;
}

static int merkle_verify(const ks_bundle *b)
{
	uint64_t index = b->proof_index, size = b->tree_size;
	int inner = bit_length(index ^ (size - 1)), border = popcount(inner < 64 ? index >> inner : 0), failed;
	unsigned char seed[32];
	EVP_MD_CTX *c;
	EVP_MD *md;

	if (b->nhashes != (size_t)(inner + border))
		return BAD("log entry: the inclusion proof has %zu hashes where a leaf at %llu of a tree of %llu needs %d",
			   b->nhashes, (unsigned long long)index, (unsigned long long)size, inner + border);
	c = EVP_MD_CTX_new();
	md = EVP_MD_fetch(NULL, "SHA256", NULL);
	failed = !c || !md || merkle_root(c, md, b, inner, seed);
	EVP_MD_CTX_free(c);
	EVP_MD_free(md);
	if (failed)
		return BAD("log entry: libcrypto could not hash the inclusion proof (out of memory, or no SHA-256 in "
			   "its configured providers: check OPENSSL_CONF)");
	if (b->root_hash.n != 32 || memcmp(seed, b->root_hash.p, 32))
		return BAD("log entry: the inclusion proof does not lead to its root hash (a proof for another entry, "
			   "or a tampered one)");
	return 0;
}

/* ---- checkpoint (a signed note) ----------------------------------------- */

static int space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

static int parse_int(const char *s, size_t n)
{
	size_t i = 0;
	while (i < n && space((unsigned char)s[i]))
		i++;
	while (n > i && space((unsigned char)s[n - 1]))
		n--;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i == n)
		return -1;
	for (; i < n; i++)
		if (!isdigit((unsigned char)s[i]))
			return -1;
	return 0;
}

static int checkpoint_verify(const ks_trustroot *t, const ks_bundle *b)
{
	const char *text = b->checkpoint, *sep = strstr(text, "\n\n"), *data, *end, *lines[3], *h, *he;
	size_t header_len, k;
	int nlines = 0, rc = 0, found = 0;
	char *root_b64 = NULL;
	ks_bytes root = { 0 };

	if (!sep || strstr(sep + 2, "\n\n"))
		return BAD("log entry: the checkpoint must have exactly one blank line between its text and signatures");
	header_len = (size_t)(sep - text) + 1;
	data = sep + 2;
	end = data + strlen(data);
	if (data == end)
		return BAD("log entry: the checkpoint carries no signature");
	if (end[-1] != '\n')
		return BAD("log entry: the checkpoint's signatures do not end with a newline");
	/* Text: origin, tree size, root hash (then anything). */
	h = text;
	he = text + header_len;
	while (h < he && space((unsigned char)*h))
		h++;
	while (he > h && space((unsigned char)he[-1]))
		he--;
	while (nlines < 3 && h <= he) {
		const char *nl = memchr(h, '\n', (size_t)(he - h));
		lines[nlines++] = h;
		if (!nl)
			break;
		h = nl + 1;
	}
	if (nlines < 3)
		return BAD("log entry: the checkpoint's text lacks an origin, a tree size or a root hash");
	if (lines[1] - lines[0] <= 1)
		return BAD("log entry: the checkpoint's origin is empty");
	if (parse_int(lines[1], (size_t)(lines[2] - lines[1] - 1)))
		return BAD("log entry: the checkpoint's tree size is not a number");
	{
		const char *nl = memchr(lines[2], '\n', (size_t)(he - lines[2]));
		size_t n = nl ? (size_t)(nl - lines[2]) : (size_t)(he - lines[2]);
		if (!(root_b64 = strndup(lines[2], n)))
			return kernels__error_oom();
		if (ks_b64_decode(root_b64, &root)) {
			free(root_b64);
			return BAD("log entry: the checkpoint's root hash is not base64");
		}
		free(root_b64);
	}
	/* Signatures: "\u2014 NAME BASE64\n"; the one whose key hint is the
	 * log's id decides. */
	for (k = 0; data + k < end && !found && rc == 0;) {
		const char *p = data + k, *name, *sig;
		size_t nn, sn;
		ks_bytes raw;

		if ((size_t)(end - p) < 4 || memcmp(p, "\xe2\x80\x94 ", 4)) {
			k++;
			continue;
		}
		name = p + 4;
		for (nn = 0; name + nn < end && !space((unsigned char)name[nn]); nn++)
			;
		sig = name + nn + 1;
		if (!nn || name + nn >= end || name[nn] != ' ') {
			k++;
			continue;
		}
		for (sn = 0; sig + sn < end && !space((unsigned char)sig[sn]); sn++)
			;
		if (!sn || sig + sn >= end || sig[sn] != '\n') {
			k++;
			continue;
		}
		k = (size_t)(sig + sn + 1 - data);
		{
			char *s = strndup(sig, sn);
			int dec = s ? ks_b64_decode(s, &raw) : -1;
			free(s);
			if (dec) {
				rc = BAD("log entry: a checkpoint signature is not base64");
				break;
			}
		}
		if (raw.n < 5) {
			ks_bytes_free(&raw);
			rc = BAD("log entry: a checkpoint signature is too short");
			break;
		}
		if (b->log_id.n >= 4 && !memcmp(raw.p, b->log_id.p, 4)) {
			found = 1;
			if (!ks_keyring_verify(&t->rekor, b->log_id.p, b->log_id.n, raw.p + 4, raw.n - 4,
					       (const unsigned char *)text, header_len))
				rc = BAD("log entry: the checkpoint's signature is not the log's (no key of the trusted "
					 "root verifies it)");
		}
		ks_bytes_free(&raw);
	}
	if (rc == 0 && !found)
		rc = BAD("log entry: the checkpoint has no signature by the log the entry names");
	if (rc == 0 && (root.n != b->root_hash.n || memcmp(root.p, b->root_hash.p, root.n)))
		rc = BAD("log entry: the checkpoint's root hash is not the inclusion proof's");
	ks_bytes_free(&root);
	return rc;
}

/* ---- signed entry timestamp --------------------------------------------- */

static int set_verify(const ks_trustroot *t, const ks_bundle *b)
{
	char *body = ks_b64_encode(b->body.p, b->body.n), *hex = malloc(2 * b->log_id.n + 1), *payload = NULL;
	int rc = 0;

	if (!body || !hex) {
		rc = kernels__error_oom();
		goto out;
	}
	kernels__hex(b->log_id.p, b->log_id.n, hex);
	/* RFC 8785 canonical JSON: keys sorted, integers as such. */
	payload = kernels__sprintf("{\"body\":\"%s\",\"integratedTime\":%llu,\"logID\":\"%s\",\"logIndex\":%llu}", body,
				   (unsigned long long)b->integrated_time, hex, (unsigned long long)b->log_index);
	if (!payload) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	if (!ks_keyring_verify(&t->rekor, b->log_id.p, b->log_id.n, b->set.p, b->set.n, (unsigned char *)payload,
			       strlen(payload)))
		rc = BAD("log entry: the signed entry timestamp (inclusion promise) is not the log's signature over "
			 "this entry");
out:
	free(body);
	free(hex);
	free(payload);
	return rc;
}

int ks_tlog_verify(const ks_trustroot *t, const ks_bundle *b)
{
	int rc;

	if (!t->rekor.n)
		return BAD("log entry: the trusted root has no transparency log key in force");
	if ((rc = merkle_verify(b)) < 0 || (rc = checkpoint_verify(t, b)) < 0)
		return rc;
	if (b->has_promise && b->has_integrated_time && b->integrated_time)
		return set_verify(t, b);
	return 0;
}

/* ---- the entry's body ----------------------------------------------------- */

static const char *str_at(json_t *o, const char *const *path)
{
	for (; *path && o; path++)
		o = json_object_get(o, *path);
	return json_string_value(o);
}

static char *pem_b64(X509 *leaf)
{
	BIO *bio = BIO_new(BIO_s_mem());
	char *data, *out = NULL;
	long n;

	if (bio && PEM_write_bio_X509(bio, leaf) && (n = BIO_get_mem_data(bio, &data)) > 0)
		out = ks_b64_encode((unsigned char *)data, (size_t)n);
	BIO_free(bio);
	return out;
}

/* Whether the body is, byte for byte, the RFC 8785 canonical JSON that
 * Rekor writes for this digest, signature and certificate: then it says
 * what the bundle says, and parsing it (a third of the entry's check)
 * would only find so. Any other form of it is parsed and compared. */
static int body_v001_canonical(const ks_bundle *b, const char *sig, const char *pem, const char *hex)
{
	char *want = kernels__sprintf("{\"apiVersion\":\"0.0.1\",\"kind\":\"hashedrekord\",\"spec\":{\"data\":{\"hash\":"
				      "{\"algorithm\":\"sha256\",\"value\":\"%s\"}},\"signature\":{\"content\":\"%s\","
				      "\"publicKey\":{\"content\":\"%s\"}}}}", hex, sig, pem);
	int same = want && strlen(want) == b->body.n && !memcmp(want, b->body.p, b->body.n);

	free(want);
	return same;
}

static int body_v001(const ks_bundle *b, const unsigned char digest[32])
{
	static const char *const kind[] = { "kind", NULL }, *const api[] = { "apiVersion", NULL },
				 *const content[] = { "spec", "signature", "content", NULL },
				 *const key[] = { "spec", "signature", "publicKey", "content", NULL },
				 *const alg[] = { "spec", "data", "hash", "algorithm", NULL },
				 *const value[] = { "spec", "data", "hash", "value", NULL };
	char *sig = ks_b64_encode(b->signature.p, b->signature.n), *pem = pem_b64(b->leaf), hex[65];
	json_t *body = NULL;
	const char *v;
	int same, rc = 0;

	kernels__hex(digest, 32, hex);
	if (sig && pem && body_v001_canonical(b, sig, pem, hex))
		goto out;
	if (!(body = json_loadb((const char *)b->body.p, b->body.n, JSON_REJECT_DUPLICATES, NULL))) {
		rc = BAD("log entry: its body is not JSON");
		goto out;
	}
	same = sig && pem && (v = str_at(body, kind)) && !strcmp(v, "hashedrekord") &&
	       (!json_object_get(body, "apiVersion") || ((v = str_at(body, api)) && !strcmp(v, "0.0.1"))) &&
	       (v = str_at(body, content)) && !strcmp(v, sig) && (v = str_at(body, key)) && !strcmp(v, pem) &&
	       (v = str_at(body, alg)) && !strcmp(v, "sha256") && (v = str_at(body, value)) && !strcmp(v, hex);
	if (!same)
		rc = BAD("log entry: what the log recorded (digest, signature, certificate) is not what the bundle "
			 "and the artifact say");
out:
	json_decref(body);
	free(sig);
	free(pem);
	return rc;
}

/* Rekor v2's hashedrekord 0.0.2: protobuf JSON, strictly these fields. */
static int only(json_t *o, const char *const *keys)
{
	const char *k;
	json_t *v;
	size_t i;

	if (!json_is_object(o))
		return 0;
	json_object_foreach(o, k, v) {
		for (i = 0; keys[i] && strcmp(keys[i], k); i++)
			;
		if (!keys[i])
			return 0;
	}
	return 1;
}

static int bytes_equal(json_t *s, const unsigned char *p, size_t n)
{
	ks_bytes d;
	int same;

	if (!json_is_string(s) || ks_b64_decode(json_string_value(s), &d))
		return 0;
	same = d.n == n && !memcmp(d.p, p, n);
	ks_bytes_free(&d);
	return same;
}

static int body_v002(const ks_bundle *b, json_t *body, const unsigned char digest[32])
{
	static const char *const top[] = { "kind", "apiVersion", "spec", NULL },
				 *const spec_k[] = { "hashedRekordV002", "dsseV002", NULL },
				 *const hr_k[] = { "data", "signature", NULL }, *const data_k[] = { "algorithm", "digest", NULL },
				 *const sig_k[] = { "content", "verifier", NULL },
				 *const ver_k[] = { "publicKey", "x509Certificate", "keyDetails", NULL },
				 *const cert_k[] = { "rawBytes", NULL };
	json_t *spec = json_object_get(body, "spec"), *hr = json_object_get(spec, "hashedRekordV002"),
	       *data = json_object_get(hr, "data"), *sig = json_object_get(hr, "signature"),
	       *ver = json_object_get(sig, "verifier"), *cert = json_object_get(ver, "x509Certificate");
	unsigned char *der = NULL;
	const char *details = ks_key_details(b->leaf), *v;
	int n = i2d_X509(b->leaf, &der), same;

	same = n > 0 && details && only(body, top) && only(spec, spec_k) && !json_object_get(spec, "dsseV002") &&
	       only(hr, hr_k) && only(data, data_k) && only(sig, sig_k) && only(ver, ver_k) && only(cert, cert_k) &&
	       (v = json_string_value(json_object_get(body, "kind"))) && !strcmp(v, b->kind) &&
	       (v = json_string_value(json_object_get(body, "apiVersion"))) && !strcmp(v, b->kind_version) &&
	       (v = json_string_value(json_object_get(data, "algorithm"))) && !strcmp(v, "SHA2_256") &&
	       bytes_equal(json_object_get(data, "digest"), digest, 32) &&
	       bytes_equal(json_object_get(sig, "content"), b->signature.p, b->signature.n) &&
	       !json_object_get(ver, "publicKey") && bytes_equal(json_object_get(cert, "rawBytes"), der, (size_t)n) &&
	       (v = json_string_value(json_object_get(ver, "keyDetails"))) && !strcmp(v, details);
	OPENSSL_free(der);
	return same ? 0 : BAD("log entry: what the log recorded (digest, signature, certificate) is not what the bundle "
			      "and the artifact say");
}

int ks_body_verify(const ks_bundle *b, const unsigned char digest[32])
{
	json_t *body;
	int rc;

	if (strcmp(b->kind, "hashedrekord"))
		return BAD("log entry: of kind '%.32s', where a signed file is logged as 'hashedrekord'", b->kind);
	if (strcmp(b->kind_version, "0.0.2"))
		return body_v001(b, digest);
	if (!(body = json_loadb((const char *)b->body.p, b->body.n, JSON_REJECT_DUPLICATES, NULL)))
		return BAD("log entry: its body is not JSON");
	rc = body_v002(b, body, digest);
	json_decref(body);
	return rc;
}

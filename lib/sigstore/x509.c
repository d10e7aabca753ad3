/* The signing certificate: its chain to the trusted root's Fulcio CA at
 * the signing time, its embedded SCT (RFC 6962: the CT log saw the
 * precertificate), its key usages, and whether a policy accepts the
 * identity Fulcio wrote into it. */
#include "sigstore.h"
#include "error.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/ct.h>
#include <openssl/ec.h>
#include <openssl/x509v3.h>

#define BAD(...) kernels__error(KERNELS_ESIGNATURE, __VA_ARGS__)

int ks_chain_verify(const ks_trustroot *t, X509 *leaf, int64_t when, X509 **issuer)
{
	X509_STORE *store = t->fulcio_store;
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *param;
	STACK_OF(X509) *chain;
	int rc = 0, err;

	if (issuer)
		*issuer = NULL;
	if (!ctx) {
		rc = kernels__error_oom();
		goto out;
	}
	if (!t->nfulcio) {
		rc = BAD("certificate: the trusted root has no Fulcio CA certificate in force");
		goto out;
	}
	/* Bundles carry no usable intermediates: every CA certificate of the
	 * root is an anchor (the root's store, shared: verification only reads
	 * it), and the chain is checked at the signing time. */
	if (!X509_STORE_CTX_init(ctx, store, leaf, NULL)) {
		rc = kernels__error_oom();
		goto out;
	}
	param = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_PARTIAL_CHAIN);
	X509_VERIFY_PARAM_set_time(param, (time_t)(when / 1000000));
	if (X509_verify_cert(ctx) != 1) {
		err = X509_STORE_CTX_get_error(ctx);
		rc = BAD("certificate: does not chain to the trusted root's Fulcio CA at the signing time (%s)",
			 X509_verify_cert_error_string(err));
		goto out;
	}
	chain = X509_STORE_CTX_get0_chain(ctx);
	if (issuer && sk_X509_num(chain) > 1) {
		*issuer = sk_X509_value(chain, 1);
		X509_up_ref(*issuer);
	}
out:
	X509_STORE_CTX_free(ctx);
	return rc;
}

/* sigstore-python's rule: v3; basic constraints, when present, critical;
 * key usage present; CA and keyCertSign together or neither. -1 for an
 * inconsistent certificate. */
static int ca_state(X509 *x)
{
	int crit = -1, ca;
	BASIC_CONSTRAINTS *bc;
	uint32_t ku;

	if (X509_get_version(x) != 2)
		return -1;
	bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	if (!bc)
		return crit == -1 ? 0 : -1;
	ca = bc->ca != 0;
	BASIC_CONSTRAINTS_free(bc);
	if (!crit)
		return -1;
	ku = X509_get_key_usage(x);
	if (ku == UINT32_MAX || !(X509_get_extension_flags(x) & EXFLAG_KUSAGE))
		return -1;
	if (ca && (ku & KU_KEY_CERT_SIGN))
		return 1;
	if (!ca && !(ku & KU_KEY_CERT_SIGN))
		return 0;
	return -1;
}

int ks_cert_is_ca(X509 *x)
{
	return ca_state(x) == 1;
}

int ks_leaf_usage(X509 *leaf)
{
	uint32_t ku = X509_get_key_usage(leaf);

	if (!(X509_get_extension_flags(leaf) & EXFLAG_KUSAGE) || !(ku & KU_DIGITAL_SIGNATURE))
		return BAD("certificate: its key usage is not digitalSignature");
	if (!(X509_get_extension_flags(leaf) & EXFLAG_XKUSAGE) || !(X509_get_extended_key_usage(leaf) & XKU_CODE_SIGN))
		return BAD("certificate: its extended key usage does not include codeSigning");
	return 0;
}

/* ---- the precertificate, from the certificate's DER ------------------------ */

/* One DER element at p (< end): its tag, where its content starts and how
 * long it is. 0, or -1 when it does not fit. */
static int der_next(const unsigned char *p, const unsigned char *end, int *tag, const unsigned char **content,
		    size_t *len)
{
	size_t n = 0, k;

	if (end - p < 2)
		return -1;
	*tag = p[0];
	if (p[1] < 0x80) {
		n = p[1];
		p += 2;
	} else {
		k = p[1] & 0x7f;
		if (k < 1 || k > 3 || (size_t)(end - p) < 2 + k)
			return -1;
		for (p += 2; k--; p++)
			n = n << 8 | *p;
	}
	if ((size_t)(end - p) < n)
		return -1;
	*content = p;
	*len = n;
	return 0;
}

/* 0, or KERNELS_ENOMEM (the buffer then lacks the header). */
static int der_header(kernels__buf *b, int tag, size_t len)
{
	unsigned char h[5] = { (unsigned char)tag };
	size_t n = 1;

	if (len < 0x80) {
		h[n++] = (unsigned char)len;
	} else if (len < 0x100) {
		h[n++] = 0x81;
		h[n++] = (unsigned char)len;
	} else if (len < 0x10000) {
		h[n++] = 0x82;
		h[n++] = (unsigned char)(len >> 8);
		h[n++] = (unsigned char)len;
	} else {
		h[n++] = 0x83;
		h[n++] = (unsigned char)(len >> 16);
		h[n++] = (unsigned char)(len >> 8);
		h[n++] = (unsigned char)len;
	}
	return kernels__buf_put(b, h, n);
}

/* The OIDs of the SCT list and the precertificate poison (RFC 6962), DER. */
static const unsigned char oid_scts[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x02 };
static const unsigned char oid_poison[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xd6, 0x79, 0x02, 0x04, 0x03 };

/* The extensions of [3] (content at p, n bytes) less the SCT list and
 * poison, appended to `out`. -1 on malformed DER. */
static int kept_extensions(const unsigned char *p, size_t n, kernels__buf *out)
{
	const unsigned char *end = p + n, *c, *e, *ext;
	size_t len, elen;
	int tag;

	if (der_next(p, end, &tag, &c, &len) || tag != 0x30 || c + len != end)
		return -1;
	for (e = c; e < end; e = ext + elen) {
		if (der_next(e, end, &tag, &ext, &elen) || tag != 0x30)
			return -1;
		if (elen >= sizeof(oid_scts) && (!memcmp(ext, oid_scts, sizeof(oid_scts)) ||
						 !memcmp(ext, oid_poison, sizeof(oid_poison))))
			continue;
		if (kernels__buf_put(out, e, (size_t)(ext + elen - e)) < 0)
			return -1;
	}
	return 0;
}

/* The TBSCertificate of `der` (a Certificate) re-encoded without the SCT
 * list and poison extensions: what RFC 6962 has the log sign. Its other
 * bytes are the certificate's own, as the CA encoded them. -1 when the DER
 * does not walk. */
static int precert_tbs_der(const unsigned char *der, size_t der_len, kernels__buf *tbs)
{
	const unsigned char *end = der + der_len, *c, *t, *e, *x;
	kernels__buf fields = { 0 }, exts = { 0 };
	size_t len, tlen, elen, xlen;
	int tag, rc = -1;

	if (der_next(der, end, &tag, &c, &len) || tag != 0x30 || der_next(c, c + len, &tag, &t, &tlen) || tag != 0x30)
		return -1;
	for (e = t; e < t + tlen; e = x + xlen) {
		if (der_next(e, t + tlen, &tag, &x, &xlen))
			goto out;
		if (tag != 0xa3) {
			if (kernels__buf_put(&fields, e, (size_t)(x + xlen - e)) < 0)
				goto out;
			continue;
		}
		if (kept_extensions(x, xlen, &exts))
			goto out;
	}
	if ((elen = exts.len)) { /* [3] { SEQUENCE { the extensions kept } } */
		size_t seq = elen + (elen < 0x80 ? 2 : elen < 0x100 ? 3 : elen < 0x10000 ? 4 : 5);
		if (der_header(&fields, 0xa3, seq) < 0 || der_header(&fields, 0x30, elen) < 0 ||
		    kernels__buf_put(&fields, exts.ptr, elen) < 0)
			goto out;
	}
	if (der_header(tbs, 0x30, fields.len) == 0 && kernels__buf_put(tbs, fields.ptr, fields.len) == 0)
		rc = 0;
out:
	kernels__buf_free(&fields);
	kernels__buf_free(&exts);
	return rc;
}

/* The TBSCertificate the CT log signed: the certificate's own, less the
 * SCT list (and a poison extension, were there one), cut from its DER
 * (OpenSSL's way, X509_dup and re-encode, took 0.3 ms); *out is
 * OPENSSL_malloc'd. */
static int precert_tbs(X509 *leaf, unsigned char **out, int *len)
{
	unsigned char *der = NULL;
	kernels__buf tbs = { 0 };
	int n = i2d_X509(leaf, &der);

	*out = NULL;
	if (n <= 0 || precert_tbs_der(der, (size_t)n, &tbs) || tbs.len > INT32_MAX ||
	    !(*out = OPENSSL_memdup(tbs.ptr, tbs.len))) {
		OPENSSL_free(der);
		kernels__buf_free(&tbs);
		return -1;
	}
	*len = (int)tbs.len;
	OPENSSL_free(der);
	kernels__buf_free(&tbs);
	return 0;
}

static void put(kernels__buf *b, uint64_t v, int n)
{
	unsigned char c[8];
	int i;
	for (i = 0; i < n; i++)
		c[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
	kernels__buf_put(b, c, (size_t)n);
}

/* The issuer's key id: the root's, computed once, when the issuer is one
 * of its certificates (ks_chain_verify's issuer always is). */
static int issuer_key_id(const ks_trustroot *t, X509 *issuer, unsigned char out[32])
{
	size_t i;

	for (i = 0; i < t->nfulcio; i++)
		if (t->fulcio[i] == issuer) {
			memcpy(out, t->fulcio_ids[i], 32);
			return 0;
		}
	return ks_key_id(X509_get0_pubkey(issuer), out);
}

int ks_sct_verify(const ks_trustroot *t, X509 *leaf, X509 *issuer)
{
	STACK_OF(SCT) *scts;
	SCT *sct;
	unsigned char *tbs = NULL, *logid, *ext, *sig, issuer_id[32];
	size_t logid_len, ext_len, sig_len;
	kernels__buf msg = { 0 };
	int tbs_len, rc = 0, nid;

	scts = X509_get_ext_d2i(leaf, NID_ct_precert_scts, NULL, NULL);
	if (!scts)
		return BAD("certificate: it has no signed certificate timestamp (SCT) extension");
	if (sk_SCT_num(scts) != 1) {
		rc = BAD("certificate: %d signed certificate timestamps, where sigstore certificates have exactly one",
			 sk_SCT_num(scts));
		goto out;
	}
	sct = sk_SCT_value(scts, 0);
	if (SCT_get_version(sct) != SCT_VERSION_V1) {
		rc = BAD("certificate: its SCT is not version 1");
		goto out;
	}
	nid = SCT_get_signature_nid(sct);
	if (nid != NID_ecdsa_with_SHA256 && nid != NID_sha256WithRSAEncryption) {
		rc = BAD("certificate: its SCT is not signed with SHA-256");
		goto out;
	}
	if (!issuer || !ks_cert_is_ca(issuer)) {
		rc = BAD("certificate: the issuer its SCT names is not a CA");
		goto out;
	}
	if (issuer_key_id(t, issuer, issuer_id) || precert_tbs(leaf, &tbs, &tbs_len)) {
		rc = BAD("certificate: its precertificate could not be rebuilt for the SCT check");
		goto out;
	}
	logid_len = SCT_get0_log_id(sct, &logid);
	ext_len = SCT_get0_extensions(sct, &ext);
	sig_len = SCT_get0_signature(sct, &sig);
	/* RFC 6962 3.2: the digitally-signed struct of a precert entry. */
	put(&msg, 0, 1);                                 /* sct_version v1 */
	put(&msg, 0, 1);                                 /* certificate_timestamp */
	put(&msg, SCT_get_timestamp(sct), 8);
	put(&msg, 1, 2);                                 /* precert_entry */
	kernels__buf_put(&msg, issuer_id, 32);
	put(&msg, (uint64_t)tbs_len, 3);
	kernels__buf_put(&msg, tbs, (size_t)tbs_len);
	put(&msg, ext_len, 2);
	kernels__buf_put(&msg, ext, ext_len);
	if (!msg.ptr || msg.len != 1 + 1 + 8 + 2 + 32 + 3 + (size_t)tbs_len + 2 + ext_len) {
		rc = kernels__error_oom();
		goto out;
	}
	if (!ks_keyring_verify(&t->ct, logid, logid_len, sig, sig_len, (unsigned char *)msg.ptr, msg.len))
		rc = BAD("certificate: its SCT is not signed by a CT log of the trusted root");
out:
	OPENSSL_free(tbs);
	kernels__buf_free(&msg);
	SCT_LIST_free(scts);
	return rc;
}

/* ---- policy --------------------------------------------------------------- */

static ASN1_OCTET_STRING *ext_value(X509 *x, const char *oid)
{
	ASN1_OBJECT *obj = OBJ_txt2obj(oid, 1);
	int i = obj ? X509_get_ext_by_OBJ(x, obj, -1) : -1;
	ASN1_OBJECT_free(obj);
	return i < 0 ? NULL : X509_EXTENSION_get_data(X509_get_ext(x, i));
}

/* The v1 extensions hold the raw string; the later ones a DER UTF8String. */
static char *ext_string(X509 *x, const char *oid, int der)
{
	ASN1_OCTET_STRING *v = ext_value(x, oid);
	const unsigned char *p;
	ASN1_UTF8STRING *s;
	char *out;

	if (!v)
		return NULL;
	p = ASN1_STRING_get0_data(v);
	if (!der) {
		if (!(out = malloc((size_t)ASN1_STRING_length(v) + 1)))
			return NULL;
		memcpy(out, p, (size_t)ASN1_STRING_length(v));
		out[ASN1_STRING_length(v)] = 0;
		return out;
	}
	if (!(s = d2i_ASN1_UTF8STRING(NULL, &p, ASN1_STRING_length(v))))
		return NULL;
	out = malloc((size_t)ASN1_STRING_length(s) + 1);
	if (out) {
		memcpy(out, ASN1_STRING_get0_data(s), (size_t)ASN1_STRING_length(s));
		out[ASN1_STRING_length(s)] = 0;
	}
	ASN1_UTF8STRING_free(s);
	return out;
}

static int san_has(X509 *x, const char *identity)
{
	GENERAL_NAMES *names = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	ASN1_OBJECT *other = OBJ_txt2obj("1.3.6.1.4.1.57264.1.7", 1);
	int found = 0, i;

	for (i = 0; names && !found && i < sk_GENERAL_NAME_num(names); i++) {
		GENERAL_NAME *g = sk_GENERAL_NAME_value(names, i);
		const ASN1_STRING *s = NULL;
		if (g->type == GEN_URI || g->type == GEN_EMAIL)
			s = g->d.ia5;
		else if (g->type == GEN_OTHERNAME && other && !OBJ_cmp(g->d.otherName->type_id, other) &&
			 g->d.otherName->value->type == V_ASN1_UTF8STRING)
			s = g->d.otherName->value->value.utf8string;
		found = s && (size_t)ASN1_STRING_length(s) == strlen(identity) &&
			!memcmp(ASN1_STRING_get0_data(s), identity, strlen(identity));
	}
	GENERAL_NAMES_free(names);
	ASN1_OBJECT_free(other);
	return found;
}

#define OID_ISSUER "1.3.6.1.4.1.57264.1.1"
#define OID_ISSUER_V2 "1.3.6.1.4.1.57264.1.8"
#define OID_SIGNER_URI "1.3.6.1.4.1.57264.1.9"
#define OID_SOURCE_REPO "1.3.6.1.4.1.57264.1.12"

/* NULL when `p` accepts `leaf`, else why not (static or in *why). */
static const char *policy_refuses(X509 *leaf, const kernels_signature_policy *p, char **why)
{
	char *issuer = ext_string(leaf, OID_ISSUER, 0), *issuer2 = ext_string(leaf, OID_ISSUER_V2, 1);
	char *repo = NULL, *signer = NULL;
	const char *r = NULL;
	size_t i;

	*why = NULL;
	if (!issuer || strcmp(issuer, p->issuer)) {
		*why = kernels__sprintf("OIDC issuer is %s, not %s", issuer ? issuer : "absent", p->issuer);
	} else if (issuer2 ? strcmp(issuer2, p->issuer) != 0 : (p->repository || p->signer_uri_count)) {
		*why = kernels__sprintf("OIDC issuer (v2 extension) is %s, not %s", issuer2 ? issuer2 : "absent", p->issuer);
	} else if (p->identity && !san_has(leaf, p->identity)) {
		*why = kernels__sprintf("no subject alternative name is %s", p->identity);
	} else if (p->repository && (!(repo = ext_string(leaf, OID_SOURCE_REPO, 1)) || strcmp(repo, p->repository))) {
		*why = kernels__sprintf("source repository is %s, not %s", repo ? repo : "absent", p->repository);
	} else if (p->signer_uri_count) {
		signer = ext_string(leaf, OID_SIGNER_URI, 1);
		for (i = 0; signer && i < p->signer_uri_count; i++)
			if (p->signer_uris[i] && !strcmp(signer, p->signer_uris[i]))
				break;
		if (!signer || i == p->signer_uri_count)
			*why = kernels__sprintf("build signer URI %s is not one the policy lists (%s%s)",
						signer ? signer : "(absent)", p->signer_uris[0] ? p->signer_uris[0] : "",
						p->signer_uri_count > 1 ? ", ..." : "");
	}
	if (*why)
		r = *why;
	free(issuer);
	free(issuer2);
	free(repo);
	free(signer);
	return r;
}

int ks_policy_check(X509 *leaf, const kernels_signature_policy *p, size_t n)
{
	kernels__buf msg = { 0 };
	size_t i;
	int rc;

	if (!n)
		return BAD("certificate: no policy to check the signer against");
	for (i = 0; i < n; i++) {
		char *why;
		if (!policy_refuses(leaf, &p[i], &why))
			break;
		kernels__buf_printf(&msg, "%s%s", i ? "; " : "", why ? why : "out of memory");
		free(why);
	}
	if (i < n) {
		kernels__buf_free(&msg);
		return 0;
	}
	rc = BAD("certificate: the signer is not one a policy accepts (%s)", msg.ptr ? msg.ptr : "");
	kernels__buf_free(&msg);
	return rc;
}

const char *ks_key_details(X509 *leaf)
{
	EVP_PKEY *k = X509_get0_pubkey(leaf);
	int bits = k ? EVP_PKEY_bits(k) : 0;

	if (!k)
		return NULL;
	switch (EVP_PKEY_base_id(k)) {
	case EVP_PKEY_EC:
		return bits == 256 ? "PKIX_ECDSA_P256_SHA_256" : bits == 384 ? "PKIX_ECDSA_P384_SHA_384"
		       : bits == 521 ? "PKIX_ECDSA_P521_SHA_512" : NULL;
	case EVP_PKEY_RSA:
		return bits == 2048 ? "PKIX_RSA_PKCS1V15_2048_SHA256" : bits == 3072 ? "PKIX_RSA_PKCS1V15_3072_SHA256"
		       : bits == 4096 ? "PKIX_RSA_PKCS1V15_4096_SHA256" : NULL;
	case EVP_PKEY_ED25519:
		return "PKIX_ED25519";
	default:
		return NULL;
	}
}

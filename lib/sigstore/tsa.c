/* RFC 3161 timestamps over the bundle's signature: another witness, beside
 * the log's integrated time (and the only one for Rekor v2 entries), of
 * when the signature existed. A timestamp counts when one timestamp
 * authority of the trusted root signed it (its chain checked at the
 * timestamp's own time: the authority's certificate may have expired
 * since) within that authority's validity period. */
#include "sigstore.h"
#include "error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pkcs7.h>
#include <openssl/ts.h>
#include <openssl/x509v3.h>

#define BAD(...) kernels__error(KERNELS_ESIGNATURE, __VA_ARGS__)
#define MAX_TIMESTAMPS 32

/* GeneralizedTime "YYYYMMDDHHMMSS[.f*]Z" in microseconds. */
static int gen_time(const ASN1_GENERALIZEDTIME *g, int64_t *out)
{
	const char *s = (const char *)ASN1_STRING_get0_data(g);
	int n = ASN1_STRING_length(g), i, us = 0, scale = 100000;
	struct tm tm = { 0 };
	int v[6], w[6] = { 4, 2, 2, 2, 2, 2 }, pos = 0;

	for (i = 0; i < 6; i++) {
		int k;
		v[i] = 0;
		for (k = 0; k < w[i]; k++, pos++) {
			if (pos >= n || !isdigit((unsigned char)s[pos]))
				return -1;
			v[i] = v[i] * 10 + (s[pos] - '0');
		}
	}
	if (pos < n && s[pos] == '.') {
		for (pos++; pos < n && isdigit((unsigned char)s[pos]); pos++) {
			us += scale * (s[pos] - '0');
			scale /= 10;
		}
	}
	if (pos != n - 1 || s[pos] != 'Z')
		return -1;
	tm.tm_year = v[0] - 1900;
	tm.tm_mon = v[1] - 1;
	tm.tm_mday = v[2];
	tm.tm_hour = v[3];
	tm.tm_min = v[4];
	tm.tm_sec = v[5];
	*out = (int64_t)timegm(&tm) * 1000000 + us;
	return 0;
}

/* The embedded certificate the one signer names, if the token has any:
 * it must be the authority's own. */
static int embedded_signer_ok(PKCS7 *token, X509 *tsa)
{
	STACK_OF(X509) *certs = token->d.sign ? token->d.sign->cert : NULL;
	STACK_OF(PKCS7_SIGNER_INFO) *sis = PKCS7_get_signer_info(token);
	PKCS7_ISSUER_AND_SERIAL *ias;
	X509 *signer = NULL;
	int i;

	if (!sis || sk_PKCS7_SIGNER_INFO_num(sis) != 1)
		return 0;
	if (!certs || sk_X509_num(certs) == 0)
		return 1;
	ias = sk_PKCS7_SIGNER_INFO_value(sis, 0)->issuer_and_serial;
	for (i = 0; ias && i < sk_X509_num(certs) && !signer; i++) {
		X509 *c = sk_X509_value(certs, i);
		if (!X509_NAME_cmp(X509_get_issuer_name(c), ias->issuer) &&
		    !ASN1_INTEGER_cmp(X509_get0_serialNumber(c), ias->serial))
			signer = c;
	}
	return signer && !X509_cmp(signer, tsa);
}

/* id-kp-timeStamping in a critical extended key usage. */
static int tsa_usage_ok(X509 *tsa)
{
	int i = X509_get_ext_by_NID(tsa, NID_ext_key_usage, -1);
	return i >= 0 && X509_EXTENSION_get_critical(X509_get_ext(tsa, i)) &&
	       (X509_get_extension_flags(tsa) & EXFLAG_XKUSAGE) && (X509_get_extended_key_usage(tsa) & XKU_TIMESTAMP);
}

static int verify_with(TS_RESP *resp, const ks_authority *au, const ks_bytes *message, int64_t when)
{
	TS_VERIFY_CTX *ctx = TS_VERIFY_CTX_new();
	X509_STORE *store = X509_STORE_new();
	STACK_OF(X509) *untrusted = sk_X509_new_null();
	BIO *data = BIO_new_mem_buf(message->p, (int)message->n);
	size_t i;
	int ok = 0;

	if (!ctx || !store || !untrusted || !data)
		goto out;
	for (i = 0; i < au->n; i++) {
		X509_STORE_add_cert(store, au->certs[i]);
		if (i + 1 < au->n && X509_up_ref(au->certs[i]) && !sk_X509_push(untrusted, au->certs[i]))
			X509_free(au->certs[i]);
	}
	X509_VERIFY_PARAM_set_flags(X509_STORE_get0_param(store), X509_V_FLAG_PARTIAL_CHAIN);
	X509_VERIFY_PARAM_set_time(X509_STORE_get0_param(store), (time_t)(when / 1000000));
	TS_VERIFY_CTX_set_flags(ctx, TS_VFY_VERSION | TS_VFY_SIGNATURE | TS_VFY_DATA);
	/* The context owns what it is given from here on. */
	TS_VERIFY_CTX_set_store(ctx, store);
	store = NULL;
	TS_VERIFY_CTS_set_certs(ctx, untrusted);
	untrusted = NULL;
	TS_VERIFY_CTX_set_data(ctx, data);
	data = NULL;
	ok = TS_RESP_verify_response(ctx, resp) == 1;
out:
	TS_VERIFY_CTX_free(ctx);
	X509_STORE_free(store);
	sk_X509_pop_free(untrusted, X509_free);
	BIO_free(data);
	return ok;
}

/* 1 when `resp` is a granted timestamp over `message` by `au`, at a time
 * (*when) inside the authority's validity. */
static int verified_by(TS_RESP *resp, const ks_authority *au, const ks_bytes *message, int64_t now, int64_t *when)
{
	TS_TST_INFO *tst = TS_RESP_get_tst_info(resp);
	PKCS7 *token = TS_RESP_get_token(resp);
	const ASN1_INTEGER *status = TS_STATUS_INFO_get0_status(TS_RESP_get_status_info(resp));
	int nid;

	if (now < au->start || au->n < 2 || !tst || !token || !status || ASN1_INTEGER_get(status) != 0)
		return 0;
	nid = OBJ_obj2nid(TS_MSG_IMPRINT_get_algo(TS_TST_INFO_get_msg_imprint(tst))->algorithm);
	if (nid != NID_sha256 && nid != NID_sha384 && nid != NID_sha512)
		return 0;
	if (gen_time(TS_TST_INFO_get_time(tst), when) || !embedded_signer_ok(token, au->certs[0]) ||
	    !tsa_usage_ok(au->certs[0]) || !verify_with(resp, au, message, *when))
		return 0;
	return *when >= au->start && (!au->has_end || *when < au->end);
}

int ks_tsa_verify(const ks_trustroot *t, const ks_bundle *b, int64_t *times, size_t *ntimes)
{
	int64_t now = (int64_t)time(NULL) * 1000000;
	TS_RESP **resp;
	size_t i, j;
	int rc = 0;

	*ntimes = 0;
	if (!b->ntimestamps)
		return 0;
	if (!t->ntsas)
		return BAD("timestamp: the bundle has signed timestamps but the trusted root names no timestamp authority");
	if (b->ntimestamps > MAX_TIMESTAMPS)
		return BAD("timestamp: %zu signed timestamps, more than %d", b->ntimestamps, MAX_TIMESTAMPS);
	for (i = 0; i < b->ntimestamps; i++)
		for (j = 0; j < i; j++)
			if (b->timestamps[i].n == b->timestamps[j].n &&
			    !memcmp(b->timestamps[i].p, b->timestamps[j].p, b->timestamps[i].n))
				return BAD("timestamp: the same signed timestamp twice");
	if (!(resp = calloc(b->ntimestamps, sizeof(*resp))))
		return kernels__error_oom();
	for (i = 0; i < b->ntimestamps && rc == 0; i++) {
		const unsigned char *p = b->timestamps[i].p;
		if (!(resp[i] = d2i_TS_RESP(NULL, &p, (long)b->timestamps[i].n)) ||
		    p != b->timestamps[i].p + b->timestamps[i].n)
			rc = BAD("timestamp: a signed timestamp is not a DER RFC 3161 response");
	}
	for (i = 0; i < b->ntimestamps && rc == 0; i++)
		for (j = 0; j < t->ntsas; j++)
			if (verified_by(resp[i], &t->tsas[j], &b->signature, now, &times[*ntimes])) {
				(*ntimes)++;
				break;
			}
	for (i = 0; i < b->ntimestamps; i++)
		TS_RESP_free(resp[i]);
	free(resp);
	ERR_clear_error();
	return rc;
}

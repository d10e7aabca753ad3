/* Small pieces the sigstore verifier shares: base64, times, keys. */
#include "sigstore.h"
#include "error.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/asn1.h>
#include <openssl/rsa.h>

void ks_bytes_free(ks_bytes *b)
{
	if (!b)
		return;
	free(b->p);
	b->p = NULL;
	b->n = 0;
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* Strict but for line breaks (base64(1) wraps its output, and such
 * bundles exist): whole quads, '=' only as the last one or two characters,
 * and the bits padding leaves over must be zero (one encoding per value). */
int ks_b64_decode(const char *in, ks_bytes *out)
{
	size_t len = 0, i, o = 0;
	unsigned char *p;
	char *s;

	out->p = NULL;
	out->n = 0;
	if (!(s = malloc(strlen(in) + 1)))
		return -1;
	for (i = 0; in[i]; i++)
		if (in[i] != '\n' && in[i] != '\r')
			s[len++] = in[i];
	s[len] = 0;
	if (len % 4 || !(p = malloc(len / 4 * 3 + 1))) {
		free(s);
		return -1;
	}
	for (i = 0; i < len; i += 4) {
		int v[4], k, pad = 0;
		for (k = 0; k < 4; k++) {
			unsigned char c = (unsigned char)s[i + k];
			if (c == '=' && i + 4 == len && k >= 2 && (k == 3 || s[i + 3] == '=')) {
				v[k] = 0;
				pad++;
			} else if ((v[k] = b64_value(c)) < 0 || pad) {
				free(p);
				free(s);
				return -1;
			}
		}
		if ((pad == 2 && (v[1] & 15)) || (pad == 1 && (v[2] & 3))) {
			free(p);
			free(s);
			return -1;
		}
		p[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (pad < 2)
			p[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		if (pad < 1)
			p[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	free(s);
	out->p = p;
	out->n = o;
	return 0;
}

char *ks_b64_encode(const unsigned char *p, size_t n)
{
	char *s = malloc(4 * ((n + 2) / 3) + 1);
	if (!s)
		return NULL;
	EVP_EncodeBlock((unsigned char *)s, p, (int)n);
	return s;
}

static int digits(const char **s, int n, int *out)
{
	int v = 0, i;
	for (i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*s)[i]))
			return -1;
		v = v * 10 + ((*s)[i] - '0');
	}
	*s += n;
	*out = v;
	return 0;
}

int ks_time_parse(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, sec, us = 0, scale = 100000, oh = 0, om = 0, sign = 0;
	time_t t;

	if (digits(&s, 4, &y) || *s++ != '-' || digits(&s, 2, &mo) || *s++ != '-' || digits(&s, 2, &d) ||
	    (*s != 'T' && *s != 't') || (s++, digits(&s, 2, &h)) || *s++ != ':' || digits(&s, 2, &mi) ||
	    *s++ != ':' || digits(&s, 2, &sec))
		return -1;
	if (*s == '.') {
		s++;
		if (!isdigit((unsigned char)*s))
			return -1;
		for (; isdigit((unsigned char)*s); s++) {
			us += scale * (*s - '0');
			scale /= 10;
		}
	}
	if (*s == 'Z' || *s == 'z') {
		s++;
	} else if (*s == '+' || *s == '-') {
		sign = *s++ == '+' ? 1 : -1;
		if (digits(&s, 2, &oh) || *s++ != ':' || digits(&s, 2, &om))
			return -1;
	} else {
		return -1;
	}
	if (*s || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || oh > 23 || om > 59)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
	t = timegm(&tm);
	*out = ((int64_t)t - sign * (oh * 3600 + om * 60)) * 1000000 + us;
	return 0;
}

int ks_key_id(EVP_PKEY *key, unsigned char out[32])
{
	unsigned char *der = NULL;
	int n = i2d_PUBKEY(key, &der);
	unsigned int len = 0;
	int ok = n > 0 && EVP_Digest(der, (size_t)n, out, &len, EVP_sha256(), NULL);

	OPENSSL_free(der);
	return ok ? 0 : -1;
}

int ks_verify_sig(EVP_PKEY *key, const EVP_MD *md, const unsigned char *sig, size_t sig_len,
		  const unsigned char *data, size_t data_len)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	EVP_PKEY_CTX *pctx = NULL;
	int ok;

	if (!ctx)
		return 0;
	ok = EVP_DigestVerifyInit(ctx, &pctx, md, NULL, key) == 1;
	if (ok && EVP_PKEY_base_id(key) == EVP_PKEY_RSA)
		ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PADDING) > 0;
	ok = ok && EVP_DigestVerify(ctx, sig, sig_len, data, data_len) == 1;
	EVP_MD_CTX_free(ctx);
	return ok;
}

static int asn1_us(const ASN1_TIME *t, int64_t *out)
{
	struct tm tm;
	if (!t || !ASN1_TIME_to_tm(t, &tm))
		return -1;
	*out = (int64_t)timegm(&tm) * 1000000;
	return 0;
}

int ks_cert_times(const X509 *x, int64_t *not_before, int64_t *not_after)
{
	return asn1_us(X509_get0_notBefore(x), not_before) || asn1_us(X509_get0_notAfter(x), not_after) ? -1 : 0;
}

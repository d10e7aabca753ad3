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

/* The value of each base64 digit; -1 for what is not one. */
#define B64_ROW(a) a, a, a, a, a, a, a, a, a, a, a, a, a, a, a, a
static const signed char b64_values[256] = {
	B64_ROW(-1), B64_ROW(-1),
	-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 62, -1, -1, -1, 63,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, -1, -1, -1, -1, -1, -1,
	-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, -1, -1, -1, -1, -1,
	-1, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, -1, -1, -1, -1, -1,
	B64_ROW(-1), B64_ROW(-1), B64_ROW(-1), B64_ROW(-1),
	B64_ROW(-1), B64_ROW(-1), B64_ROW(-1), B64_ROW(-1),
};

/* Where a decoding stands: the next output byte, the bits of a quad not
 * yet whole, the digits and the '=' read so far. */
typedef struct {
	unsigned char *p;
	unsigned int acc;
	size_t k, pad;
} b64_state;

static void b64_put3(b64_state *st, unsigned int bits)
{
	st->p[0] = (unsigned char)(bits >> 16);
	st->p[1] = (unsigned char)(bits >> 8);
	st->p[2] = (unsigned char)bits;
	st->p += 3;
}

/* The 24 bits of the four characters at s, or -1 when one is not a digit. */
static long b64_quad(const unsigned char *s)
{
	int a = b64_values[s[0]], b = b64_values[s[1]], c = b64_values[s[2]], d = b64_values[s[3]];

	return (a | b | c | d) < 0 ? -1 : (long)a << 18 | (long)b << 12 | (long)c << 6 | (long)d;
}

/* One character: -1 when it is neither a digit, a line break nor padding,
 * or a digit after padding. */
static int b64_char(b64_state *st, unsigned char c)
{
	int v = b64_values[c];

	if (v < 0) {
		st->pad += c == '=';
		return c == '=' || c == '\n' || c == '\r' ? 0 : -1;
	}
	if (st->pad)
		return -1;
	st->acc = st->acc << 6 | (unsigned int)v;
	if (++st->k % 4 == 0) {
		b64_put3(st, st->acc);
		st->acc = 0;
	}
	return 0;
}

/* The bytes of a last quad of two or three digits: -1 when the bits the
 * padding leaves over are not zero (one encoding per value). */
static int b64_tail(b64_state *st)
{
	if (st->k % 4 == 2 && !(st->acc & 15)) {
		*st->p++ = (unsigned char)(st->acc >> 4);
		return 0;
	}
	if (st->k % 4 == 3 && !(st->acc & 3)) {
		*st->p++ = (unsigned char)(st->acc >> 10);
		*st->p++ = (unsigned char)(st->acc >> 2);
		return 0;
	}
	return st->k % 4 == 0 ? 0 : -1;
}

/* Strict but for line breaks (base64(1) wraps its output, and such
 * bundles exist): whole quads, '=' only as the last one or two characters,
 * and the bits padding leaves over must be zero (one encoding per value).
 * Where a whole quad of digits lies in step, its four characters are
 * taken at once: bundles carry kilobytes of base64, and a character at a
 * time cost 37 instructions each. */
int ks_b64_decode(const char *in, ks_bytes *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t n = strlen(in), i = 0;
	b64_state st = { 0 };
	unsigned char *buf;
	int bad = 0;
	long q;

	out->p = NULL;
	out->n = 0;
	if (!(buf = malloc(n / 4 * 3 + 3)))
		return -1;
	st.p = buf;
	while (i < n && !bad) {
		if (st.k % 4 == 0 && !st.pad && n - i >= 4 && (q = b64_quad(s + i)) >= 0) {
			b64_put3(&st, (unsigned int)q);
			st.k += 4;
			i += 4;
		} else {
			bad = b64_char(&st, s[i++]);
		}
	}
	if (bad || st.pad > 2 || (st.k + st.pad) % 4 || b64_tail(&st)) {
		free(buf);
		return -1;
	}
	out->p = buf;
	out->n = (size_t)(st.p - buf);
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

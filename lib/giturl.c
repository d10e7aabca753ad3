/* metadata.json's git URLs, normalised as Python kernels 0.17.2 returns
 * them: its GitUrl parses them with the url crate (the WHATWG URL rules),
 * after turning the SCP-like user@host:path into an ssh:// URL. This is
 * the part of those rules git URLs meet; not done: international host
 * names (0.17.2 writes them in punycode; here they stay as written) and
 * IPv4 host normalisation. */
#include "giturl.h"
#include "error.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { SET_C0, SET_FRAGMENT, SET_QUERY, SET_SPECIAL_QUERY, SET_PATH, SET_USERINFO };

/* The WHATWG percent-encode sets, by name. */
static int encoded_in(unsigned char c, int set)
{
	static const char *const extra[] = { "", "\"<>`", "\"#<>", "\"#<>'", "\"#<>?`{}",
					     "\"#<>?`{}/:;=@[\\]^|" };

	if (c < 0x20 || c >= 0x7f)
		return 1;
	return set != SET_C0 && (c == ' ' || strchr(extra[set], c));
}

static void put_encoded(kernels__buf *b, const char *s, size_t n, int set)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (encoded_in(c, set))
			kernels__buf_printf(b, "%%%02X", c);
		else
			kernels__buf_printf(b, "%c", c);
	}
}

/* "." and ".." also spelled %2e, as the URL rules take them. */
static int dots(const char *s, size_t n)
{
	if ((n == 1 && s[0] == '.') || (n == 3 && !strncasecmp(s, "%2e", 3)))
		return 1;
	if (n == 2 && !strncmp(s, "..", 2))
		return 2;
	if ((n == 4 && (!strncasecmp(s, ".%2e", 4) || !strncasecmp(s, "%2e.", 4))) ||
	    (n == 6 && !strncasecmp(s, "%2e%2e", 6)))
		return 2;
	return 0;
}

/* An absolute path ("/a/./b/../c"), its dot segments resolved. */
static void put_path(kernels__buf *b, const char *s, size_t n, int special)
{
	size_t start = b->len, seg_start[256], depth = 0;

	while (n > 0 && (s[0] == '/' || (special && s[0] == '\\'))) {
		const char *p = s + 1;
		size_t len = 0;
		int d;
		while (len < n - 1 && p[len] != '/' && !(special && p[len] == '\\'))
			len++;
		d = dots(p, len);
		if (d == 2 && depth > 0)
			b->len = seg_start[--depth];
		b->ptr[b->len] = '\0';
		if (d && len + 1 == n) { /* a trailing "." or ".." leaves the path ending in '/' */
			kernels__buf_puts(b, "/");
		} else if (!d) {
			if (depth < sizeof(seg_start) / sizeof(seg_start[0]))
				seg_start[depth++] = b->len;
			kernels__buf_puts(b, "/");
			put_encoded(b, p, len, SET_PATH);
		}
		s += len + 1;
		n -= len + 1;
	}
	if (b->len == start && special)
		kernels__buf_puts(b, "/");
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* host[:port]; http(s) hosts decoded and lower-cased, their default port
 * dropped; others kept as written. */
static int put_host(kernels__buf *b, const char *s, size_t n, int special, const char *scheme, const char **why)
{
	const char *colon = NULL, *p;
	unsigned long port = 0;
	size_t hn = n, i;

	if (n && s[0] == '[') { /* an IPv6 literal */
		const char *close = memchr(s, ']', n);
		if (!close)
			return *why = "an IPv6 host without its ']'", -1;
		colon = close + 1 < s + n && close[1] == ':' ? close + 1 : NULL;
		hn = (size_t)(close + 1 - s);
	} else if ((colon = memchr(s, ':', n))) {
		hn = (size_t)(colon - s);
	}
	if (special && hn == 0)
		return *why = "no host", -1;
	for (i = 0; i < hn; i++) {
		int c = (unsigned char)s[i], h1, h2;
		if (strchr(" #/<>?@\\^|", c) || c < 0x20 || c == 0x7f)
			return *why = "a character a host cannot hold", -1;
		if (special && c == '%' && i + 2 < hn && (h1 = hexval(s[i + 1])) >= 0 && (h2 = hexval(s[i + 2])) >= 0) {
			c = h1 * 16 + h2;
			i += 2;
		}
		if (special)
			kernels__buf_printf(b, "%c", c < 0x80 ? tolower(c) : c);
		else
			put_encoded(b, (const char *)&s[i], 1, SET_C0);
	}
	if (!colon || colon + 1 == s + n)
		return 0;
	for (p = colon + 1; p < s + n; p++) {
		if (!isdigit((unsigned char)*p))
			return *why = "a port that is not a number", -1;
		if ((port = port * 10 + (unsigned long)(*p - '0')) > 65535)
			return *why = "a port above 65535", -1;
	}
	if (!(special && port == (strcmp(scheme, "https") ? 80u : 443u)))
		kernels__buf_printf(b, ":%lu", port);
	return 0;
}

/* user[:password]@, each part encoded; nothing when both are empty. */
static void put_userinfo(kernels__buf *b, const char *s, size_t n)
{
	const char *colon = memchr(s, ':', n);
	size_t un = colon ? (size_t)(colon - s) : n;

	if (n == 0 || (un == 0 && colon && colon + 1 == s + n))
		return;
	put_encoded(b, s, un, SET_USERINFO);
	if (colon && colon + 1 < s + n) {
		kernels__buf_puts(b, ":");
		put_encoded(b, colon + 1, n - un - 1, SET_USERINFO);
	}
	kernels__buf_puts(b, "@");
}

/* Everything after "scheme:". */
static int put_rest(kernels__buf *b, const char *scheme, const char *s, const char **why)
{
	int special = !strcmp(scheme, "http") || !strcmp(scheme, "https");
	size_t end = strcspn(s, "?#"), n;

	if (special || !strncmp(s, "//", 2)) {
		const char *auth, *at = NULL, *p;
		size_t an;
		while (*s == '/' || (special && *s == '\\'))
			s++;
		auth = s;
		an = strcspn(auth, special ? "/\\?#" : "/?#");
		for (p = auth; p < auth + an; p++)
			at = *p == '@' ? p : at;
		kernels__buf_puts(b, "//");
		if (at)
			put_userinfo(b, auth, (size_t)(at - auth));
		if (at && at + 1 == auth + an && special)
			return *why = "no host", -1;
		if (put_host(b, at ? at + 1 : auth, at ? (size_t)(auth + an - at - 1) : an, special, scheme, why) < 0)
			return -1;
		s = auth + an;
		end = strcspn(s, "?#");
	}
	if (s[0] == '/' || (special && (s[0] == '\\' || end == 0)))
		put_path(b, s, end, special);
	else
		put_encoded(b, s, end, SET_C0); /* an opaque path: git:org/repo */
	s += end;
	if (*s == '?') {
		n = strcspn(++s, "#");
		kernels__buf_puts(b, "?");
		put_encoded(b, s, n, special ? SET_SPECIAL_QUERY : SET_QUERY);
		s += n;
	}
	if (*s == '#') {
		kernels__buf_puts(b, "#");
		put_encoded(b, s + 1, strlen(s + 1), SET_FRAGMENT);
	}
	return 0;
}

/* The scheme, lower-cased into `scheme`: 1 when `s` starts with one
 * (letters, digits, + - . then ':'), 0 when not. */
static int scheme_of(const char *s, char *scheme, size_t size)
{
	size_t i;

	if (!isalpha((unsigned char)s[0]))
		return 0;
	for (i = 0; s[i] && s[i] != ':'; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("+-.", s[i]))
			return 0;
	if (s[i] != ':' || i >= size)
		return 0;
	for (i = 0; s[i] != ':'; i++)
		scheme[i] = (char)tolower((unsigned char)s[i]);
	scheme[i] = '\0';
	return 1;
}

static int allowed(const char *scheme)
{
	static const char *const ok[] = { "https", "http", "git", "ssh", "git+ssh", "git+https", "git+http" };
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(scheme, ok[i]))
			return 1;
	return 0;
}

/* user@host:path (a relative path) -> ssh://user@host/path. */
static char *from_scp(const char *s, const char **why)
{
	const char *colon = strchr(s, ':'), *at = NULL, *p;

	for (p = s; colon && p < colon; p++)
		at = *p == '@' ? p : at;
	if (!colon || !at || at + 1 == colon || !colon[1] || colon[1] == '/') {
		*why = "neither a URL nor user@host:path";
		return NULL;
	}
	return kernels__sprintf("ssh://%.*s%s%.*s/%s", (int)(at - s), s, at > s ? "@" : "", (int)(colon - at - 1),
				at + 1, colon + 1);
}

int kernels__git_url_normalize(const char *in, char **out, const char **why)
{
	kernels__buf b = { 0 };
	char scheme[16], *clean, *scp = NULL, *w;
	const char *s;
	size_t n = strlen(in);
	int rc;

	*out = NULL;
	*why = NULL;
	while (n && (unsigned char)in[n - 1] <= 0x20)
		n--;
	while (n && (unsigned char)*in <= 0x20)
		in++, n--;
	if (!(clean = strndup(in, n)))
		return kernels__error_oom();
	for (s = w = clean; *s; s++) /* tabs and newlines are dropped anywhere */
		if (*s != '\t' && *s != '\n' && *s != '\r')
			*w++ = *s;
	*w = '\0';
	s = clean;
	if (!scheme_of(s, scheme, sizeof(scheme))) {
		if (!(scp = from_scp(s, why))) {
			free(clean);
			return *why ? -1 : kernels__error_oom();
		}
		s = scp;
		snprintf(scheme, sizeof(scheme), "ssh");
	} else if (!allowed(scheme)) {
		free(clean);
		*why = "unsupported scheme, expected one of: https, http, git, ssh, git+ssh, git+https, git+http";
		return -1;
	}
	kernels__buf_printf(&b, "%s:", scheme);
	rc = put_rest(&b, scheme, s + strlen(scheme) + 1, why);
	free(scp);
	free(clean);
	if (rc == 0 && !(*out = kernels__buf_detach(&b)))
		rc = kernels__error_oom();
	kernels__buf_free(&b);
	return rc;
}

#include "util.h"
#include "error.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kernels__buf_grow(kernels__buf *b, size_t extra)
{
	size_t need = b->len + extra + 1, cap;
	char *p;

	if (need <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap *= 2;
	p = realloc(b->ptr, cap);
	if (!p)
		return kernels__error_oom();
	b->ptr = p;
	b->cap = cap;
	return 0;
}

int kernels__buf_put(kernels__buf *b, const void *data, size_t len)
{
	if (kernels__buf_grow(b, len) < 0)
		return KERNELS_ENOMEM;
	if (len)
		memcpy(b->ptr + b->len, data, len);
	b->len += len;
	b->ptr[b->len] = '\0';
	return 0;
}

int kernels__buf_puts(kernels__buf *b, const char *s)
{
	return kernels__buf_put(b, s, strlen(s));
}

int kernels__buf_printf(kernels__buf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	int n;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || kernels__buf_grow(b, (size_t)n) < 0) {
		va_end(ap2);
		return n < 0 ? kernels__error(KERNELS_ERROR, "formatting failed") : KERNELS_ENOMEM;
	}
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	b->len += (size_t)n;
	return 0;
}

char *kernels__buf_detach(kernels__buf *b)
{
	char *p = b->ptr;

	if (!p && !(p = kernels__strdup("")))
		return NULL;
	b->ptr = NULL;
	b->len = b->cap = 0;
	return p;
}

void kernels__buf_free(kernels__buf *b)
{
	free(b->ptr);
	b->ptr = NULL;
	b->len = b->cap = 0;
}

char *kernels__sprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		kernels__error_oom();
		return NULL;
	}
	return s;
}

char *kernels__strdup(const char *s)
{
	char *p = strdup(s ? s : "");
	if (!p)
		kernels__error_oom();
	return p;
}

int kernels__is_digits(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return n > 0;
}

size_t kernels__utf8_valid_prefix(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t need, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			need = 1, cp = c & 0x1F;
		else if (c >= 0xE0 && c <= 0xEF)
			need = 2, cp = c & 0x0F;
		else if (c >= 0xF0 && c <= 0xF4)
			need = 3, cp = c & 0x07;
		else
			return i;
		if (len - i <= need)
			return i;
		for (k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return i;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
		    (cp >= 0xD800 && cp <= 0xDFFF))
			return i;
		i += need + 1;
	}
	return len;
}

void kernels__strings_free(char **v, size_t n)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int kernels__strings_pack(char ***v, size_t n)
{
	size_t i, bytes = (n + 1) * sizeof(char *);
	char **packed, *at;

	if (!*v)
		return 0;
	for (i = 0; i < n; i++)
		bytes += strlen((*v)[i]) + 1;
	if (!(packed = malloc(bytes))) {
		kernels__strings_free(*v, n);
		*v = NULL;
		return kernels__error_oom();
	}
	at = (char *)(packed + n + 1);
	for (i = 0; i < n; i++) {
		size_t len = strlen((*v)[i]) + 1;

		packed[i] = memcpy(at, (*v)[i], len);
		at += len;
	}
	packed[n] = NULL;
	kernels__strings_free(*v, n);
	*v = packed;
	return 0;
}

int kernels__version_major_minor(const char *s)
{
	long major, minor = 0;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	major = strtol(s, &end, 10);
	if (*end == '.') {
		if (!isdigit((unsigned char)end[1]))
			return -1;
		minor = strtol(end + 1, &end, 10);
	}
	if (major > 100000 || minor > 99)
		return -1;
	/* Only a patch level, a local tag or a pre-release may follow. */
	if (*end && *end != '.' && *end != '+' && *end != '-' && !isalpha((unsigned char)*end))
		return -1;
	return (int)(major * 100 + minor);
}

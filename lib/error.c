/* Thread-local error slot: each thread sees only its own last failure, so
 * there is no shared state for threads to race on. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define MESSAGE_MAX 4096

static _Thread_local struct {
	int code;
	long unserved;    /* kernels__error_mark_unserved's status */
	char message[MESSAGE_MAX];
} last;

/* Formats into a scratch buffer first: an argument may be the current
 * message itself (a wrapping error quoting kernels_error_last()). */
static int set_message(int code, const char *fmt, va_list ap)
{
	char fresh[MESSAGE_MAX];

	vsnprintf(fresh, sizeof(fresh), fmt, ap);
	memcpy(last.message, fresh, sizeof(fresh));
	last.code = code;
	last.unserved = 0;
	return code;
}

int kernels__error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	set_message(code, fmt, ap);
	va_end(ap);
	return code;
}

int kernels__error_prefix(const char *fmt, ...)
{
	char prefix[1024], old[MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	/* A stage that failed without raising still fails: the caller gets a
	 * code and a message that says so, never "no error". */
	if (!last.code) {
		last.code = KERNELS_ERROR;
		snprintf(old, sizeof(old), "failed without a reason recorded (a libkernels bug; please report it)");
	} else {
		memcpy(old, last.message, sizeof(old));
	}
	snprintf(last.message, sizeof(last.message), "%.1000s: %.3000s", prefix, old);
	return last.code;
}

/* Appends n bytes of s to out (MESSAGE_MAX), as many as fit. */
static void put(char *out, size_t *at, const char *s, size_t n)
{
	if (n > MESSAGE_MAX - 1 - *at)
		n = MESSAGE_MAX - 1 - *at;
	memcpy(out + *at, s, n);
	*at += n;
}

static int continues_name(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '.' || c == '-' ||
	       c == '_';
}

void kernels__error_path_rename(const char *from, const char *to)
{
	char out[MESSAGE_MAX];
	const char *p = last.message, *hit;
	size_t n = strlen(from), at = 0;

	if (!last.code || !n)
		return;
	while ((hit = strstr(p, from))) {
		int whole = !continues_name(hit[n]);
		put(out, &at, p, (size_t)(hit - p) + (whole ? 0 : n));
		if (whole)
			put(out, &at, to, strlen(to));
		p = hit + n;
	}
	put(out, &at, p, strlen(p));
	out[at] = '\0';
	memcpy(last.message, out, at + 1);
}

void kernels__error_mark_unserved(long status)
{
	last.unserved = status;
}

long kernels__error_unserved(void)
{
	return last.code == KERNELS_EHTTP ? last.unserved : 0;
}

int kernels__error_oom(void)
{
	snprintf(last.message, sizeof(last.message), "out of memory");
	last.code = KERNELS_ENOMEM;
	last.unserved = 0;
	return KERNELS_ENOMEM;
}

const char *kernels_error_last(void)
{
	return last.code ? last.message : "no error";
}

int kernels_error_last_code(void)
{
	return last.code;
}

void kernels_error_clear(void)
{
	last.code = KERNELS_OK;
	last.message[0] = '\0';
}

const char *kernels_strerror(int code)
{
	switch (code) {
	case KERNELS_OK: return "success";
	case KERNELS_ERROR: return "unexpected error";
	case KERNELS_EINVAL: return "invalid argument";
	case KERNELS_ENOTFOUND: return "not found";
	case KERNELS_EAMBIGUOUS: return "ambiguous short commit id";
	case KERNELS_ENOMATCH: return "no matching version or variant";
	case KERNELS_EAUTH: return "authentication required or refused";
	case KERNELS_ENETWORK: return "Hub unreachable";
	case KERNELS_EHTTP: return "unexpected HTTP response";
	case KERNELS_EOFFLINE: return "not available offline";
	case KERNELS_EINTEGRITY: return "integrity check failed";
	case KERNELS_EIO: return "file system error";
	case KERNELS_ENOMEM: return "out of memory";
	case KERNELS_ELOAD: return "loading failed";
	case KERNELS_EUNTRUSTED: return "untrusted publisher";
	case KERNELS_EPARSE: return "malformed input";
	case KERNELS_EUNSAFE: return "unsafe path";
	case KERNELS_ESIGNATURE: return "signature missing or invalid";
	case KERNELS_EBUSY: return "in use by a download";
	default: return "unknown error";
	}
}

/* The wrappers behind alloc_fail.h. They are only linked into programs
 * that call alloc_fail_nth (a static library member is pulled in by use),
 * and those are linked with --wrap for every allocator below. */
#include "alloc_fail.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
int __real_vasprintf(char **out, const char *fmt, va_list ap);

static _Thread_local long fail_at, seen;
static _Thread_local int fired;

void alloc_fail_nth(long n)
{
	fail_at = n;
	seen = 0;
	fired = 0;
}

long alloc_fail_count(void)
{
	return seen;
}

int alloc_fail_fired(void)
{
	return fired;
}

/* 1 when this allocation is the one to fail. */
static int fail_now(void)
{
	if (++seen != fail_at)
		return 0;
	fired = 1;
	errno = ENOMEM;
	return 1;
}

void *__wrap_malloc(size_t size)
{
	return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now() ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return fail_now() ? NULL : __real_strndup(s, n);
}

int __wrap_vasprintf(char **out, const char *fmt, va_list ap)
{
	if (fail_now()) {
		*out = NULL;
		return -1;
	}
	return __real_vasprintf(out, fmt, ap);
}

/* The floor every stage stands on: a growable string, formatting, UTF-8;
 * and, through this header, growable arrays (array.h), files (fs.h), hex
 * digits and commit ids (hex.h) and clocks (clock.h). */
#ifndef KERNELS_LIB_UTIL_H
#define KERNELS_LIB_UTIL_H

#include <stdarg.h>
#include <stddef.h>

#include "array.h"
#include "clock.h"
#include "fs.h"
#include "hex.h"

/* Frees `n` malloc'ed strings and their array; NULL is fine. */
void kernels__strings_free(char **v, size_t n);

/* Repacks the `n` malloc'ed strings of `*v` into one allocation (the
 * pointers, a NULL, then the bytes), as the public API hands string
 * arrays out: one kernels_free() releases it. The old array is freed
 * either way; 0, or KERNELS_ENOMEM with `*v` NULL. */
int kernels__strings_pack(char ***v, size_t n);

/* A growable NUL-terminated byte buffer. A zeroed struct is an empty buffer. */
typedef struct {
	char *ptr;
	size_t len;
	size_t cap;
} kernels__buf;

int kernels__buf_grow(kernels__buf *b, size_t extra);
int kernels__buf_put(kernels__buf *b, const void *data, size_t len);
int kernels__buf_puts(kernels__buf *b, const char *s);
int kernels__buf_printf(kernels__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hands the contents to the caller (never NULL on success; "" for empty). */
char *kernels__buf_detach(kernels__buf *b);
void kernels__buf_free(kernels__buf *b);

/* malloc'ed printf; NULL (with the error set) when out of memory. */
char *kernels__sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *kernels__strdup(const char *s);

/* Whether s[0..n) is n > 0 decimal digits. */
int kernels__is_digits(const char *s, size_t n);

/* Parses "2.11", "2.11.0+cu130", "12.8" into major*100+minor; -1 if
 * malformed. Torch, CUDA and ROCm versions alike. */
int kernels__version_major_minor(const char *s);

/* Length of the longest well-formed UTF-8 prefix of s[0..len): no overlong
 * forms, no surrogates, nothing above U+10FFFF. Equal to len when all of it
 * is valid; otherwise the offset of the first bad sequence. */
size_t kernels__utf8_valid_prefix(const char *s, size_t len);

/* The accessors of an opaque handle, one line each: `fn` returns
 * h->member, or `none` for a NULL handle; the _AT form h->array[i], or
 * NULL for a NULL handle or past h->count. So every accessor of the API
 * treats NULL and a bound alike. */
#define KERNELS__GETTER(ret, fn, handle, member, none) \
	ret fn(const handle *h)                        \
	{                                              \
		return h ? h->member : none;           \
	}
#define KERNELS__GETTER_AT(ret, fn, handle, array, count)      \
	ret fn(const handle *h, size_t i)                      \
	{                                                      \
		return h && i < h->count ? h->array[i] : NULL; \
	}

#endif

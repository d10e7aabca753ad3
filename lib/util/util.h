/* Internal helpers every stage uses: a growable string, formatting, paths. */
#ifndef KERNELS_LIB_UTIL_H
#define KERNELS_LIB_UTIL_H

#include <stdarg.h>
#include <stddef.h>

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

/* Creates `path` and its parents with `mode` (umask applies); existing
 * folders are fine. Sets the error and returns KERNELS_EIO on failure. */
int kernels__mkdir_p(const char *path, unsigned int mode);

/* Length of the longest well-formed UTF-8 prefix of s[0..len): no overlong
 * forms, no surrogates, nothing above U+10FFFF. Equal to len when all of it
 * is valid; otherwise the offset of the first bad sequence. */
size_t kernels__utf8_valid_prefix(const char *s, size_t len);

/* Lower-case hex of `len` bytes into `out` (2*len+1 bytes). */
void kernels__hex(const unsigned char *bytes, size_t len, char *out);

#endif

/* Hex digits, as git and the Hub handle them: either case is read (git
 * rev-parse and the Hub's revision API take an upper-case commit id), only
 * lower case is written, and the cache's names are lower case (a snapshot
 * folder or blob name in upper case is not huggingface_hub's). So check what
 * a caller, a file or an answer gives with KERNELS__HEX_ANY_CASE and keep it
 * lower-cased; check what names a cache path with KERNELS__HEX_LOWER. */
#ifndef KERNELS_LIB_UTIL_HEX_H
#define KERNELS_LIB_UTIL_HEX_H

#include <stddef.h>

typedef enum { KERNELS__HEX_ANY_CASE, KERNELS__HEX_LOWER } kernels__hex_case;

/* Whether `s` (may be NULL) is exactly `n` hex digits; n == 0: one or more. */
int kernels__is_hex(const char *s, size_t n, kernels__hex_case c);

/* Whether `s` (may be NULL) is a full commit id: 40 hex digits. */
int kernels__is_commit(const char *s, kernels__hex_case c);

/* Lower-case copy of the `n` characters of s into out (n + 1 bytes). */
void kernels__hex_lower(const char *s, size_t n, char *out);

/* Lower-case hex of `len` bytes into `out` (2*len+1 bytes). */
void kernels__hex(const unsigned char *bytes, size_t len, char *out);

#endif

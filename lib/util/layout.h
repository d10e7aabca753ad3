/* Versioned structs: a struct the caller allocates starts with its
 * layout's version (unsigned int version), and each version's fields end
 * where that version's layout says. A caller built against an older header
 * is read, or written, only as far as its version reaches, so a field
 * appended in a later release never reads or writes past the caller's
 * struct (docs/api-stability.md). */
#ifndef KERNELS_LIB_UTIL_LAYOUT_H
#define KERNELS_LIB_UTIL_LAYOUT_H

#include <stddef.h>

/* Where `field` of `type` ends: a version's size is where its last field ends. */
#define KERNELS__END(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

typedef struct {
	const char *name;     /* the struct, for messages: "kernels_options" */
	const char *macro;    /* its version macro: "KERNELS_OPTIONS_VERSION" */
	const size_t *sizes;  /* sizes[v] for every v in 1..current; sizes[0] unused */
	unsigned int current; /* the version this library was built with */
} kernels__layout;

/* The size of `version`'s layout, or 0 with KERNELS_EINVAL set (naming the
 * struct, the version given and those this library knows) when `version`
 * is 0 or newer than the library. */
size_t kernels__layout_size(const kernels__layout *l, unsigned int version);

/* Copies the fields the caller's `src` has (by its version) over `dst`, a
 * struct of the current layout that already holds the defaults; `dst`'s
 * version becomes the current one. 0, or KERNELS_EINVAL as above. */
int kernels__layout_read(const kernels__layout *l, void *dst, const void *src);

/* Writes to the caller's `dst` the fields of `src` (current layout) that
 * `dst`'s version has; `dst`'s version is kept. 0, or KERNELS_EINVAL. */
int kernels__layout_write(const kernels__layout *l, void *dst, const void *src);

/* Checks the caller's `dst` before any work is done on its behalf. */
int kernels__layout_check(const kernels__layout *l, const void *dst);

#endif

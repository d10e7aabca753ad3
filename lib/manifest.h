/* Internal: the TOML documents a kernels client reads besides lock files:
 * the project manifest (public API in kernels/manifest.h) and the
 * kernel-status.toml a Hub repo may hold at its root (Python kernels reads it
 * to redirect a repo or mark it deprecated). */
#ifndef KERNELS_LIB_MANIFEST_H
#define KERNELS_LIB_MANIFEST_H

#include <stddef.h>

#include "kernels/manifest.h"

typedef enum {
	KERNELS__STATUS_REDIRECT = 1  /* the only kind the Python client knows */
} kernels__status_kind;

/* A parsed kernel-status.toml. Strings are malloc'ed; release with
 * kernels__kernel_status_clear. */
typedef struct {
	kernels__status_kind kind;
	char *destination;   /* REDIRECT: "org/other", a valid repo id */
	char *revision;      /* REDIRECT: "revision" key, "main" when absent */
} kernels__kernel_status;

/* Parses kernel-status.toml content as the Python client does: `kind` must
 * be present; "redirect" needs a non-empty `destination`, `revision`
 * defaults to "main"; any other kind is an error (the Python client raises
 * too), as is invalid TOML. Other keys are ignored. `name` names the file
 * in messages ("kernel-status.toml of org/x"). Errors: KERNELS_EPARSE,
 * KERNELS_EINVAL (over the size limit), KERNELS_ENOMEM. */
int kernels__kernel_status_parse(const char *data, size_t len, const char *name, kernels__kernel_status *out);
void kernels__kernel_status_clear(kernels__kernel_status *status);

#endif

/* Internal: repo ids and the two repo types (kernel, then model fallback). */
#ifndef KERNELS_LIB_REPO_H
#define KERNELS_LIB_REPO_H

typedef enum {
	KERNELS__REPO_KERNEL = 0,  /* URL prefix "kernels/", cache "kernels--" */
	KERNELS__REPO_MODEL = 1    /* no URL prefix, cache "models--" */
} kernels__repo_type;

/* Checks that `repo_id` is "org/name" as the Hub accepts it: each part of
 * letters, digits, '-', '_', '.', not starting or ending with '-' or '.',
 * no "--" or "..", 96 bytes at most. Sets a message saying what is wrong. */
int kernels__repo_id_check(const char *repo_id);

/* "kernels/" or "" : the prefix of git and resolve URLs. */
const char *kernels__repo_url_prefix(kernels__repo_type type);
/* "kernels" or "models": the /api/{t}/ segment. */
const char *kernels__repo_api_name(kernels__repo_type type);
/* "kernels--org--name" or "models--org--name" (malloc'ed). */
char *kernels__repo_cache_name(kernels__repo_type type, const char *repo_id);

#endif

/* Internal: repo ids and the two repo types (kernel, then model fallback). */
#ifndef KERNELS_LIB_REPO_H
#define KERNELS_LIB_REPO_H

typedef enum {
	KERNELS__REPO_KERNEL = 0,  /* URL prefix "kernels/", cache "kernels--" */
	KERNELS__REPO_MODEL = 1    /* no URL prefix, cache "models--" */
} kernels__repo_type;

/* The longest repo id the Hub accepts ("org/name"). */
#define KERNELS__REPO_ID_MAX 96

/* Checks that `repo_id` is "org/name" as the Hub accepts it: each part of
 * letters, digits, '-', '_', '.', not starting or ending with '-' or '.',
 * no "--" or "..", KERNELS__REPO_ID_MAX bytes at most. Sets a message
 * saying what is wrong. */
int kernels__repo_id_check(const char *repo_id);

/* A repo id as the public calls take it in: checked once, at the door,
 * before anything (the memo, LOCAL_KERNELS, the cache, the Hub) looks it
 * up, and split into what the stages derive from it. The type is the
 * kernel form until the Hub says otherwise (kernels__repo_set_type), and
 * cache_name follows it. A value: no pointers, copied freely. */
typedef struct {
	char id[KERNELS__REPO_ID_MAX + 1];    /* "org/name", checked */
	char org[KERNELS__REPO_ID_MAX + 1];   /* "org" */
	char name[KERNELS__REPO_ID_MAX + 1];  /* "name" */
	kernels__repo_type type;
	char cache_name[2 * KERNELS__REPO_ID_MAX + 16]; /* "kernels--org--name" or "models--org--name" */
} kernels__repo;

/* Checks `repo_id` (kernels__repo_id_check) and fills *r, of the kernel
 * type. 0, or KERNELS_EINVAL with the message the check sets. */
int kernels__repo_parse(kernels__repo *r, const char *repo_id);
/* Sets the repo's type, and the cache folder name with it. */
void kernels__repo_set_type(kernels__repo *r, kernels__repo_type type);

/* "kernels/" or "" : the prefix of git and resolve URLs. */
const char *kernels__repo_url_prefix(kernels__repo_type type);
/* "kernels" or "models": the /api/{t}/ segment. */
const char *kernels__repo_api_name(kernels__repo_type type);
/* "kernels--org--name" or "models--org--name" (malloc'ed). */
char *kernels__repo_cache_name(kernels__repo_type type, const char *repo_id);

#endif

/* Internal: the Hub client (libcurl). One process-wide connection pool
 * (curl share handle, mutex-protected), requests with retries/backoff, the
 * Hub's error vocabulary mapped to KERNELS_E* codes with clear messages.
 * Owned by the hub-client stage; other stages only call these. */
#ifndef KERNELS_LIB_HUB_H
#define KERNELS_LIB_HUB_H

#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "repo.h"

/* One HTTP answer. Every string is malloc'ed or NULL; free with
 * kernels__hub_response_free. */
typedef struct {
	long status;            /* HTTP status of the final answer */
	char *error_code;       /* X-Error-Code (RepoNotFound, ...) */
	char *error_message;    /* X-Error-Message, when the Hub sends one */
	char *etag;             /* ETag without quotes (or X-Linked-Etag when redirected) */
	char *repo_commit;      /* X-Repo-Commit */
	char *location;         /* Location of a redirect not followed */
	char *link_next;        /* URL of Link: <...>; rel="next" */
	long long size;         /* X-Linked-Size or Content-Length; -1 unknown */
	char *body;             /* NUL-terminated body (GET), NULL for HEAD */
	size_t body_len;
} kernels__hub_response;

void kernels__hub_response_free(kernels__hub_response *r);

/* GET (or HEAD when `head`) of `url_or_path`: a path starting with '/' is
 * appended to cfg->endpoint, anything else is a full URL. Sends the token
 * only to the endpoint's host, the User-Agent, and retries connection
 * errors, 5xx and 429 (Retry-After) up to cfg->max_retries. Returns 0 when
 * an HTTP answer of any status arrived (check r->status), KERNELS_ENETWORK
 * when the Hub could not be reached, KERNELS_EOFFLINE when cfg->offline. */
int kernels__hub_request(const kernels__config *cfg, const char *url_or_path, int head,
			 kernels__hub_response *r);

/* GET {endpoint}/api/{kernels|models}/{repo_id}{suffix} and parse the JSON
 * body. With *type == KERNELS__REPO_KERNEL, a 404 RepoNotFound retries as a
 * model repo and updates *type. A non-2xx answer becomes an error through
 * kernels__hub_status_error. `*out` is owned by the caller (json_decref). */
int kernels__hub_api_json(const kernels__config *cfg, kernels__repo_type *type, const char *repo_id,
			  const char *suffix, json_t **out);

/* Maps a non-2xx answer to a KERNELS_E* code and a message naming `what`
 * (e.g. "revision 'v9' of org/x") and what to do (log in, check the name). */
int kernels__hub_status_error(const kernels__hub_response *r, const char *what);

/* Percent-encodes a revision or path segment for a URL ('/' kept when
 * keep_slash). malloc'ed. */
char *kernels__url_escape(const char *s, int keep_slash);

#endif

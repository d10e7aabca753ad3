/* Internal: a git remote's refs advertisement, read by libgit2 over the Hub
 * client. libgit2 keeps speaking the git protocol (it parses the smart-HTTP
 * advertisement); every byte travels through kernels__hub_request, so ref
 * listing has the same timeouts, deadline, retries, proxy, token-to-the-
 * endpoint-only rule, User-Agent and "did not answer" memory as every other
 * request, in the calling thread: no thread is started, none is left. */
#ifndef KERNELS_LIB_GITLS_H
#define KERNELS_LIB_GITLS_H

#include <stddef.h>

#include "config.h"
#include "refs.h"

typedef struct {
	kernels__ref *heads;   /* full ref names (refs/heads/main, refs/tags/v1^{}), malloc'ed */
	size_t count;
	long status;           /* the HTTP status of info/refs when it was not 200, else 0 */
	int no_smart;          /* 200, but not a smart-HTTP advertisement (a mirror, a web page) */
	int repo_not_found;    /* the answer said X-Error-Code: RepoNotFound (the Hub itself, not a bare 404) */
} kernels__git_refs;

/* Lists the refs of the git repo at `url` (".../kernels/org/name"): one GET
 * of {url}/info/refs?service=git-upload-pack. Returns 0 with out->heads;
 * KERNELS_EHTTP with out->status (404, 401, 5xx, ...) or out->no_smart;
 * KERNELS_ENETWORK (unreachable, deadline); KERNELS_EPARSE (libgit2 could
 * not read the advertisement). Each sets a message. Free with
 * kernels__git_refs_free. */
int kernels__git_ls(const kernels__config *cfg, const char *url, kernels__git_refs *out);
void kernels__git_refs_free(kernels__git_refs *r);

#endif

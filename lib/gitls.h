/* Internal: a git remote's refs advertisement (smart HTTP, protocol v0/v1
 * pkt-lines, read in lib/gitls.c); every byte travels through
 * kernels__hub_request, so ref
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
} kernels__git_refs;

/* Lists the refs of the git repo at `url` (".../kernels/org/name"): one GET
 * of {url}/info/refs?service=git-upload-pack. Returns 0 with out->heads;
 * KERNELS_EHTTP with out->status (404, 401, 5xx, ...) or out->no_smart;
 * KERNELS_ENETWORK (unreachable, deadline); KERNELS_EPARSE (not a
 * readable advertisement). Each sets a message. Free with
 * kernels__git_refs_free. */
int kernels__git_ls(const kernels__config *cfg, const char *url, kernels__git_refs *out);

/* Reads the `size` bytes of a smart-HTTP refs advertisement (`url` names
 * it in messages) into out->heads: every "<oid> <name>" line, peeled tags
 * ("refs/tags/v1^{}") included. 0, or KERNELS_EPARSE (anything that is not
 * protocol v0/v1 pkt-lines ending in a flush-pkt, a line without a 40-hex
 * id and a name, more than 1,000,000 refs) or KERNELS_ENOMEM with nothing
 * in out. */
int kernels__git_advertisement_parse(const char *body, size_t size, const char *url, kernels__git_refs *out);
void kernels__git_refs_free(kernels__git_refs *r);

#endif

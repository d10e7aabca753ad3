/* The refs advertisement of a git remote over smart HTTP: one GET of
 * {url}/info/refs?service=git-upload-pack through the Hub client, and its
 * pkt-lines read here (git's protocol-v0/v1 reference discovery): the
 * service line and its flush, an optional "version 1", then one
 * "<oid> <name>" line per ref (capabilities after a NUL on the first),
 * ended by a flush. libgit2 used to read it; its initialisation alone
 * (loading the system's CA bundle, with mbedTLS) cost 8-16 ms per
 * process, more than the request. */
#include "gitls.h"
#include "error.h"
#include "hub.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ADVERTISEMENT "application/x-git-upload-pack-advertisement"
#define REFS_MAX 1000000   /* the advertisement is a Hub answer: bounded like a listing */

static int content_is_advertisement(const char *ct)
{
	return ct && !strncasecmp(ct, ADVERTISEMENT, strlen(ADVERTISEMENT));
}

static int bad(const char *url, const char *why)
{
	return kernels__error(KERNELS_EPARSE, "cannot read the git refs advertisement of %s: %s; check HF_ENDPOINT "
			      "points at a Hugging Face Hub", url, why);
}

/* The next pkt-line at *pos: its payload in *line and *len, or *len 0 and
 * *flush 1 for a flush-pkt. */
static int next_pkt(const char *body, size_t size, size_t *pos, const char **line, size_t *len, int *flush,
		    const char *url)
{
	unsigned int n = 0;
	size_t i;

	*flush = 0;
	if (size - *pos < 4)
		return bad(url, "it ends in the middle of a line (no flush-pkt)");
	for (i = 0; i < 4; i++) {
		char c = body[*pos + i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return bad(url, "a pkt-line length is not 4 hex digits");
		n = n * 16 + (unsigned int)v;
	}
	if (n == 0) {
		*pos += 4;
		*flush = 1;
		*len = 0;
		return 0;
	}
	if (n < 4 || n - 4 > size - *pos - 4)
		return bad(url, n < 4 ? "a pkt-line has a reserved length (not protocol v0/v1)"
				      : "a pkt-line runs past the end of the answer");
	*line = body + *pos + 4;
	*len = n - 4;
	if (*len && (*line)[*len - 1] == '\n')
		(*len)--;
	*pos += n;
	return 0;
}

static int is_oid(const char *s)
{
	return strspn(s, "0123456789abcdef") >= 40;
}

/* One "<oid> <name>[\0caps]" line into out (the empty repo's
 * "capabilities^{}" line names no ref). */
static int add_ref(kernels__git_refs *out, size_t *cap, const char *line, size_t len, const char *url)
{
	size_t name_len;
	const char *name, *nul;

	if (len < 42 || line[40] != ' ' || !is_oid(line))
		return bad(url, "a ref line is not '<40-hex id> <name>'");
	name = line + 41;
	nul = memchr(name, '\0', len - 41);
	name_len = nul ? (size_t)(nul - name) : len - 41;
	if (!name_len || memchr(name, '\0', name_len) || memchr(name, '\n', name_len))
		return bad(url, "a ref line has no name");
	if (name_len == 15 && !strncmp(name, "capabilities^{}", 15))
		return 0;
	if (out->count >= REFS_MAX)
		return bad(url, "it lists more than 1,000,000 refs");
	if (out->count == *cap) {
		size_t grown = *cap ? *cap * 2 : 16;
		kernels__ref *v = realloc(out->heads, grown * sizeof(*v));
		if (!v)
			return kernels__error_oom();
		out->heads = v;
		*cap = grown;
	}
	memset(&out->heads[out->count], 0, sizeof(out->heads[out->count]));
	if (!(out->heads[out->count].name = strndup(name, name_len)))
		return kernels__error_oom();
	memcpy(out->heads[out->count].commit, line, 40);
	out->heads[out->count].commit[40] = '\0';
	out->count++;
	return 0;
}

int kernels__git_advertisement_parse(const char *body, size_t size, const char *url, kernels__git_refs *out)
{
	const char *line = NULL;
	size_t pos = 0, len = 0, cap = 0;
	int flush, rc, first = 1;

	memset(out, 0, sizeof(*out));
	if ((rc = next_pkt(body, size, &pos, &line, &len, &flush, url)) < 0)
		goto fail;
	if (flush || len < 10 || strncmp(line, "# service=", 10)) {
		rc = bad(url, "it does not start with '# service=git-upload-pack'");
		goto fail;
	}
	if ((rc = next_pkt(body, size, &pos, &line, &len, &flush, url)) < 0)
		goto fail;
	if (!flush) {
		rc = bad(url, "no flush-pkt after the service line");
		goto fail;
	}
	for (;;) {
		if ((rc = next_pkt(body, size, &pos, &line, &len, &flush, url)) < 0)
			goto fail;
		if (flush)
			break;
		if (first && len == 9 && !strncmp(line, "version 1", 9)) {
			first = 0;
			continue;
		}
		if (first && len >= 9 && !strncmp(line, "version ", 8)) {
			rc = bad(url, "it speaks a protocol version other than 0 and 1");
			goto fail;
		}
		first = 0;
		if ((rc = add_ref(out, &cap, line, len, url)) < 0)
			goto fail;
	}
	return 0;
fail:
	kernels__git_refs_free(out);
	return rc;
}

/* ---- listing ---- */

void kernels__git_refs_free(kernels__git_refs *r)
{
	if (!r)
		return;
	kernels__refs_free(r->heads, r->count);
	memset(r, 0, sizeof(*r));
}

int kernels__git_ls(const kernels__config *cfg, const char *url, kernels__git_refs *out)
{
	kernels__hub_response r;
	char *get;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&r, 0, sizeof(r));
	if (!(get = kernels__sprintf("%s/info/refs?service=git-upload-pack", url)))
		return KERNELS_ENOMEM;
	if ((rc = kernels__hub_request(cfg, get, 0, &r)) < 0) {
		/* the request's message stands */
	} else if (r.status != 200) {
		rc = kernels__error(KERNELS_EHTTP, "GET %s answered HTTP %ld", get, r.status);
		out->status = r.status;
	} else if (!content_is_advertisement(r.content_type)) {
		rc = kernels__error(KERNELS_EHTTP, "GET %s answered with '%s', not a git smart-HTTP advertisement", get,
				    r.content_type ? r.content_type : "no type");
		out->no_smart = 1;
	} else {
		rc = kernels__git_advertisement_parse(r.body ? r.body : "", r.body_len, url, out);
	}
	kernels__hub_response_free(&r);
	free(get);
	return rc;
}

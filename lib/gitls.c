/* libgit2's smart protocol over our own HTTP client.
 *
 * The transport is handed to libgit2 per remote (git_remote_callbacks.
 * transport) rather than registered for "http://" process-wide with
 * git_transport_register: a host application that uses libgit2 itself
 * keeps its own HTTP transport untouched. The smart transport asks its
 * subtransport for one stream (GIT_SERVICE_UPLOADPACK_LS); the stream's
 * first read hands out piecewise the body of the one request
 * (kernels__hub_request) that kernels__git_ls made before asking libgit2.
 * Nothing but ref listing is offered: no pack is ever fetched.
 *
 * The request comes first so that libgit2's initialisation, which parses
 * the system's CA bundle (8-16 ms with mbedTLS, though every byte travels
 * through our client), runs beside it in a short-lived thread, joined
 * before the call goes on, the first time a process lists refs. */
#include "gitls.h"
#include "error.h"
#include "hash.h"
#include "hub.h"
#include "util.h"

#include <git2.h>
#include <git2/sys/transport.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ADVERTISEMENT "application/x-git-upload-pack-advertisement"

/* ---- libgit2, initialised once per process and never shut down, so a
 * host application's own use of libgit2 is never pulled from under it. */

static pthread_once_t git_once = PTHREAD_ONCE_INIT;
static int git_init_rc;
static _Atomic int git_inited; /* set once git_init has run: no thread needed any more */

static void git_init(void)
{
	git_init_rc = git_libgit2_init();
	git_inited = 1;
}

static int git_init_done(void)
{
	return git_inited;
}

static void *git_init_thread(void *unused)
{
	(void)unused;
	pthread_once(&git_once, git_init);
	return NULL;
}

static void *hash_warm_thread(void *unused)
{
	(void)unused;
	kernels__hash_warm();
	return NULL;
}

static int git_ready(void)
{
	pthread_once(&git_once, git_init);
	if (git_init_rc < 0) {
		const git_error *e = git_error_last();
		return kernels__error(KERNELS_ERROR, "cannot initialise libgit2: %s; check the libgit2 installation",
				      e ? e->message : "unknown error");
	}
	return 0;
}

/* ---- one listing's state, shared by the transport pieces ---- */

typedef struct {
	const kernels__config *cfg;
	git_smart_subtransport_definition def;
	kernels__hub_response r; /* the advertisement, fetched before libgit2 reads it */
	long status;
	int no_smart;
	int repo_not_found;
} ls_ctx;

typedef struct {
	git_smart_subtransport_stream parent;
	ls_ctx *ctx;
	size_t pos;
} ls_stream;

typedef struct {
	git_smart_subtransport parent;
	ls_ctx *ctx;
} ls_sub;

static int content_is_advertisement(const char *ct)
{
	return ct && !strncasecmp(ct, ADVERTISEMENT, strlen(ADVERTISEMENT));
}

/* The one request of a listing: {url}/info/refs?service=git-upload-pack. */
static int fetch(ls_ctx *c, const char *url)
{
	char *u = kernels__sprintf("%s/info/refs?service=git-upload-pack", url);
	int rc;

	if (!u)
		return kernels__error_oom();
	rc = kernels__hub_request(c->cfg, u, 0, &c->r);
	if (rc == 0 && c->r.status != 200) {
		c->status = c->r.status;
		c->repo_not_found = c->r.error_code && !strcmp(c->r.error_code, "RepoNotFound");
		rc = kernels__error(KERNELS_EHTTP, "GET %s answered HTTP %ld", u, c->r.status);
	} else if (rc == 0 && !content_is_advertisement(c->r.content_type)) {
		c->no_smart = 1;
		rc = kernels__error(KERNELS_EHTTP, "GET %s answered with '%s', not a git smart-HTTP advertisement", u,
				    c->r.content_type ? c->r.content_type : "no type");
	}
	free(u);
	return rc;
}

static int stream_read(git_smart_subtransport_stream *stream, char *buffer, size_t size, size_t *n)
{
	ls_stream *s = (ls_stream *)stream;
	const kernels__hub_response *r = &s->ctx->r;
	size_t left = r->body_len - s->pos;

	*n = left < size ? left : size;
	memcpy(buffer, r->body + s->pos, *n);
	s->pos += *n;
	return 0;
}

static int stream_write(git_smart_subtransport_stream *stream, const char *buffer, size_t len)
{
	(void)stream, (void)buffer, (void)len;
	git_error_set_str(GIT_ERROR_NET, "libkernels only lists refs; it sends nothing to a git remote");
	return -1;
}

static void stream_free(git_smart_subtransport_stream *stream)
{
	free(stream);
}

static int sub_action(git_smart_subtransport_stream **out, git_smart_subtransport *transport, const char *url,
		      git_smart_service_t action)
{
	(void)url; /* the listing's own, already fetched */
	ls_sub *sub = (ls_sub *)transport;
	ls_stream *s;

	*out = NULL;
	if (action != GIT_SERVICE_UPLOADPACK_LS) {
		git_error_set_str(GIT_ERROR_NET, "libkernels only lists refs; fetching or pushing is not offered");
		return -1;
	}
	if (!(s = calloc(1, sizeof(*s)))) {
		git_error_set_oom();
		return -1;
	}
	s->parent.subtransport = transport;
	s->parent.read = stream_read;
	s->parent.write = stream_write;
	s->parent.free = stream_free;
	s->ctx = sub->ctx;
	*out = &s->parent;
	return 0;
}

static int sub_close(git_smart_subtransport *transport)
{
	(void)transport;
	return 0;
}

static void sub_free(git_smart_subtransport *transport)
{
	free(transport);
}

static int sub_new(git_smart_subtransport **out, git_transport *owner, void *param)
{
	ls_sub *sub = calloc(1, sizeof(*sub));

	(void)owner;
	/* git_transport_smart frees whatever *out holds when this fails. */
	*out = NULL;
	if (!sub) {
		git_error_set_oom();
		return -1;
	}
	sub->parent.action = sub_action;
	sub->parent.close = sub_close;
	sub->parent.free = sub_free;
	sub->ctx = param;
	*out = &sub->parent;
	return 0;
}

static int transport_new(git_transport **out, git_remote *owner, void *param)
{
	return git_transport_smart(out, owner, &((ls_ctx *)param)->def);
}

/* ---- listing ---- */

void kernels__git_refs_free(kernels__git_refs *r)
{
	if (!r)
		return;
	kernels__refs_free(r->heads, r->count);
	memset(r, 0, sizeof(*r));
}

static int copy_heads(kernels__git_refs *out, const git_remote_head **heads, size_t n)
{
	size_t i;

	if (n && !(out->heads = calloc(n, sizeof(*out->heads))))
		return kernels__error_oom();
	for (i = 0; i < n; i++) {
		if (!(out->heads[i].name = kernels__strdup(heads[i]->name)))
			return KERNELS_ENOMEM;
		git_oid_tostr(out->heads[i].commit, sizeof(out->heads[i].commit), &heads[i]->oid);
		out->count++;
	}
	return 0;
}

/* The request, with the process's first setup of libgit2 beside it, and
 * on a second thread OpenSSL's digests readied (about a millisecond, well
 * within the request's time): the call's next steps (the CDN hint's name,
 * the first download's hash) would otherwise pay for it in line. */
static int fetch_while_git_starts(ls_ctx *c, const char *url)
{
	pthread_t git, hash;
	int git_started = 0, hash_started = 0, rc;

	if (!git_init_done()) {
		git_started = pthread_create(&git, NULL, git_init_thread, NULL) == 0;
		hash_started = pthread_create(&hash, NULL, hash_warm_thread, NULL) == 0;
	}
	rc = fetch(c, url);
	if (git_started)
		pthread_join(git, NULL);
	if (hash_started)
		pthread_join(hash, NULL);
	return rc;
}

static void no_refs(kernels__git_refs *out, const ls_ctx *c)
{
	kernels__refs_free(out->heads, out->count);
	out->heads = NULL;
	out->count = 0;
	out->status = c->status;
	out->no_smart = c->no_smart;
	out->repo_not_found = c->repo_not_found;
}

int kernels__git_ls(const kernels__config *cfg, const char *url, kernels__git_refs *out)
{
	ls_ctx ctx;
	git_remote *remote = NULL;
	git_remote_connect_options co;
	const git_remote_head **heads;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&ctx, 0, sizeof(ctx));
	ctx.cfg = cfg;
	if ((rc = fetch_while_git_starts(&ctx, url)) < 0 || (rc = git_ready()) < 0)
		goto done;
	ctx.def.callback = sub_new;
	ctx.def.rpc = 1;         /* stateless, as smart HTTP is */
	ctx.def.param = &ctx;
	git_remote_connect_options_init(&co, GIT_REMOTE_CONNECT_OPTIONS_VERSION);
	co.callbacks.transport = transport_new;
	co.callbacks.payload = &ctx;

	rc = git_remote_create_detached(&remote, url);
	if (rc == 0)
		rc = git_remote_connect_ext(remote, GIT_DIRECTION_FETCH, &co);
	if (rc == 0)
		rc = git_remote_ls(&heads, &n, remote);
	if (rc == 0) {
		rc = copy_heads(out, heads, n);
	} else {
		const git_error *e = git_error_last();
		rc = kernels__error(KERNELS_EPARSE,
				    "cannot read the git refs advertisement of %s: %s; check HF_ENDPOINT "
				    "points at a Hugging Face Hub", url, e &&
				    e->message ? e->message : "unknown libgit2 error");
	}
	git_remote_free(remote);
done:
	if (rc < 0)
		no_refs(out, &ctx);
	kernels__hub_response_free(&ctx.r);
	return rc;
}

/* The connections of one call: one curl multi handle per call (made on its
 * first request, closed when the call ends), carrying every request of
 * every stage, so that a later stage finds the connection an earlier one
 * opened, and the requests a stage sends together share one HTTP/2
 * connection where the server offers it (ALPN) instead of each paying TCP
 * and TLS again.
 *
 * Why a multi handle and not a share handle with CURL_LOCK_DATA_CONNECT:
 * libcurl does not support one connection used by several threads, and the
 * prefetch threads (prefetch.h) send their requests while the calling
 * thread sends the trust check. Here a connection is only ever touched by
 * the one thread that drives the multi at that moment:
 *
 * - a blocking request (kernels__hub_conn_perform) queues its easy handle
 *   and waits; whichever thread finds nobody driving drives the multi for
 *   everyone (adds the queued handles, performs, marks finished transfers
 *   done) until its own transfer is done, then hands over to a waiter;
 * - the file-transfer engine (hub_fetch.c), which runs its own loop on the
 *   multi, holds it alone (kernels__hub_conn_hold) once no other transfer
 *   is in it; requests sent meanwhile wait for it to let go.
 *
 * Callbacks of a transfer may run in the driving thread: the Hub client's
 * write only the transfer's own buffers. Nothing here is process-wide: two
 * calls never share a connection, and none outlives its call. */
#include "hub.h"
#include "error.h"
#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DRIVE_POLL_MS 100
#define CONN_CACHE_MAX 32   /* idle connections a call keeps: hosts x parallel transfers, with room */

typedef struct xfer {
	CURL *h;
	int done;
	CURLcode rc;
	struct xfer *next;
} xfer;

struct kernels__hub_conn {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	CURLM *multi;          /* NULL until the call's first request */
	int driving;           /* a thread is inside the multi (blocking requests' driver or a holder) */
	int held;              /* the driver is a holder (hub_fetch.c) */
	pthread_t driver;
	xfer *queue;           /* blocking requests not yet in the multi */
	unsigned int inside;   /* blocking requests in the multi, not yet done */
	unsigned long requests, connects; /* what the call sent and the connections it opened */
};

kernels__hub_conn *kernels__hub_conn_new(void)
{
	kernels__hub_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		kernels__error_oom();
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	return c;
}

void kernels__hub_conn_free(kernels__hub_conn *c)
{
	if (!c)
		return;
	/* Every transfer of the call is over (each caller waited for its own):
	 * this closes the call's connections. */
	if (c->multi)
		curl_multi_cleanup(c->multi);
	pthread_cond_destroy(&c->cond);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void kernels__hub_conn_counts(kernels__hub_conn *c, unsigned long *requests, unsigned long *connects)
{
	pthread_mutex_lock(&c->lock);
	*requests = c->requests;
	*connects = c->connects;
	pthread_mutex_unlock(&c->lock);
}

void kernels__hub_conn_done(kernels__hub_conn *c, CURL *h)
{
	long n = 0;

	if (!c)
		return;
	curl_easy_getinfo(h, CURLINFO_NUM_CONNECTS, &n);
	pthread_mutex_lock(&c->lock);
	c->requests++;
	c->connects += n > 0 ? (unsigned long)n : 0;
	pthread_mutex_unlock(&c->lock);
}

/* Under c->lock. */
static int multi_ready(kernels__hub_conn *c)
{
	if (c->multi)
		return 0;
	if (!(c->multi = curl_multi_init()))
		return -1;
	curl_multi_setopt(c->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, (long)CONN_CACHE_MAX);
	return 0;
}

/* Under c->lock, as the driver: the queued handles join the multi. */
static void add_queued(kernels__hub_conn *c)
{
	xfer *x;

	while ((x = c->queue)) {
		c->queue = x->next;
		if (curl_multi_add_handle(c->multi, x->h) != CURLM_OK) {
			x->rc = CURLE_FAILED_INIT;
			x->done = 1;
			continue;
		}
		c->inside++;
	}
}

/* Under c->lock, as the driver: finished transfers are marked done. */
static int collect(kernels__hub_conn *c)
{
	CURLMsg *m;
	int left, any = 0;

	while ((m = curl_multi_info_read(c->multi, &left))) {
		xfer *x = NULL;
		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&x);
		x->rc = m->data.result;
		curl_multi_remove_handle(c->multi, m->easy_handle);
		x->done = 1;
		c->inside--;
		any = 1;
	}
	return any;
}

/* Drives the multi until `mine` is done; entered and left under c->lock. */
static void drive(kernels__hub_conn *c, xfer *mine)
{
	int running;

	c->driving = 1;
	c->driver = pthread_self();
	while (!mine->done) {
		add_queued(c);
		if (mine->done)
			break;
		pthread_mutex_unlock(&c->lock);
		curl_multi_perform(c->multi, &running);
		pthread_mutex_lock(&c->lock);
		if (collect(c))
			pthread_cond_broadcast(&c->cond);
		if (mine->done || c->queue)
			continue;
		pthread_mutex_unlock(&c->lock);
		/* Woken early by a request queued meanwhile (curl_multi_wakeup). */
		curl_multi_poll(c->multi, NULL, 0, DRIVE_POLL_MS, NULL);
		pthread_mutex_lock(&c->lock);
	}
	c->driving = 0;
	pthread_cond_broadcast(&c->cond); /* a waiter takes over the others' transfers */
}

/* 1 when this thread already drives or holds the multi: a request it sends
 * now (from a callback, say) cannot wait for itself. Under c->lock. */
static int driven_here(const kernels__hub_conn *c)
{
	return c->driving && pthread_equal(c->driver, pthread_self());
}

CURLcode kernels__hub_conn_perform(kernels__hub_conn *c, CURL *h)
{
	xfer x = { h, 0, CURLE_OK, NULL };

	pthread_mutex_lock(&c->lock);
	if (driven_here(c) || multi_ready(c) < 0) {
		pthread_mutex_unlock(&c->lock);
		return curl_easy_perform(h); /* on a connection of its own, as before */
	}
	curl_easy_setopt(h, CURLOPT_PRIVATE, &x);
	x.next = c->queue;
	c->queue = &x;
	if (c->driving && !c->held)
		curl_multi_wakeup(c->multi);
	while (!x.done) {
		if (!c->driving)
			drive(c, &x);
		else
			pthread_cond_wait(&c->cond, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return x.rc;
}

CURLM *kernels__hub_conn_hold(kernels__hub_conn *c)
{
	CURLM *m = NULL;

	pthread_mutex_lock(&c->lock);
	if (!driven_here(c) && multi_ready(c) == 0) {
		/* Alone in the multi: the holder reads every message it gives, so
		 * the blocking requests in it or queued finish first (their
		 * threads drive them: one is woken whenever a driver leaves). */
		while (c->driving || c->inside || c->queue)
			pthread_cond_wait(&c->cond, &c->lock);
		c->driving = c->held = 1;
		c->driver = pthread_self();
		m = c->multi;
	}
	pthread_mutex_unlock(&c->lock);
	return m;
}

void kernels__hub_conn_release(kernels__hub_conn *c)
{
	pthread_mutex_lock(&c->lock);
	c->driving = c->held = 0;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
}

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
 * calls never share a connection, and none outlives its call.
 *
 * A warm-up (kernels__hub_conn_warm: the CDN's connection opened early,
 * hub_warm.c) is a transfer nobody waits for: it joins the multi like the
 * others and moves on whenever a thread drives it or the holder runs its
 * loop, its connection staying in the pool for the transfer that follows;
 * the holder does not wait for it (kernels__hub_conn_warm_done takes its
 * end from the holder's loop), and one still running when the call ends is
 * dropped. */
#include "hub.h"
#include "error.h"
#include "util.h"

#include <pthread.h>
#include <stdio.h>
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

typedef struct warm {
	CURL *h;
	struct curl_slist *hdrs;
	char origin[300];
	int inside;            /* in the multi (else queued) */
	CURLcode rc;
	long status;
	struct warm *next;
} warm;

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
	warm *warms;           /* warm-ups not yet over, queued or in the multi */
	warm *over;            /* warm-ups over (their handles gone), for kernels__hub_conn_warm_over */
};

static void warm_free(warm *w)
{
	curl_easy_cleanup(w->h);
	curl_slist_free_all(w->hdrs);
	free(w);
}

static void warms_free(warm *w)
{
	while (w) {
		warm *next = w->next;
		warm_free(w);
		w = next;
	}
}

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
	/* Every transfer of the call is over (each caller waited for its own)
	 * but warm-ups, which nobody waits for: dropped. This closes the call's
	 * connections. */
	while (c->warms) {
		warm *w = c->warms;
		c->warms = w->next;
		if (w->inside)
			curl_multi_remove_handle(c->multi, w->h);
		warm_free(w);
	}
	warms_free(c->over);
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

/* Under c->lock, as the driver or the holder: queued warm-ups join the multi. */
static void add_warms(kernels__hub_conn *c)
{
	warm *w;

	for (w = c->warms; w; w = w->next)
		if (!w->inside && curl_multi_add_handle(c->multi, w->h) == CURLM_OK)
			w->inside = 1;
}

/* Under c->lock, as the driver or the holder: when `m` ends a warm-up, it
 * is counted and moved to c->over (1), else 0. */
static int warm_over(kernels__hub_conn *c, CURLMsg *m)
{
	warm **pw, *w;
	long n = 0;

	for (pw = &c->warms; (w = *pw); pw = &w->next)
		if (w->h == m->easy_handle)
			break;
	if (!w)
		return 0;
	*pw = w->next;
	w->rc = m->data.result;
	curl_multi_remove_handle(c->multi, w->h);
	curl_easy_getinfo(w->h, CURLINFO_RESPONSE_CODE, &w->status);
	curl_easy_getinfo(w->h, CURLINFO_NUM_CONNECTS, &n);
	c->requests++;
	c->connects += n > 0 ? (unsigned long)n : 0;
	/* Its connection stays in the multi's pool; the handle is not needed. */
	curl_easy_cleanup(w->h);
	w->h = NULL;
	w->next = c->over;
	c->over = w;
	return 1;
}

/* Under c->lock, as the driver: the queued handles join the multi. */
static void add_queued(kernels__hub_conn *c)
{
	xfer *x;

	add_warms(c);
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
		if (m->msg != CURLMSG_DONE || warm_over(c, m))
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
		add_warms(c);
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

int kernels__hub_conn_warm_done(kernels__hub_conn *c, CURLMsg *m)
{
	int over;

	pthread_mutex_lock(&c->lock);
	over = warm_over(c, m);
	pthread_mutex_unlock(&c->lock);
	return over;
}

/* Under c->lock: the warm-up not yet over whose origin is `origin`. */
static warm *warm_find(kernels__hub_conn *c, const char *origin)
{
	warm *w;

	for (w = c->warms; w && strcmp(w->origin, origin); w = w->next)
		;
	return w;
}

int kernels__hub_conn_warm(kernels__hub_conn *c, CURL *h, struct curl_slist *hdrs, const char *origin)
{
	warm *w = calloc(1, sizeof(*w));

	if (!w) {
		curl_easy_cleanup(h);
		curl_slist_free_all(hdrs);
		return kernels__error_oom();
	}
	w->h = h;
	w->hdrs = hdrs;
	snprintf(w->origin, sizeof(w->origin), "%s", origin);
	pthread_mutex_lock(&c->lock);
	if (warm_find(c, origin) || driven_here(c) || multi_ready(c) < 0) {
		pthread_mutex_unlock(&c->lock);
		warm_free(w);
		return 0;
	}
	w->next = c->warms;
	c->warms = w;
	/* Nobody in the multi: it joins now, and moves on with the next
	 * request; else the driver adds it (woken for it), or the holder's
	 * successor. */
	if (!c->driving)
		add_warms(c);
	else if (!c->held)
		curl_multi_wakeup(c->multi);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int kernels__hub_conn_warming(kernels__hub_conn *c, const char *url)
{
	char origin[300];
	int found;

	if (!c || kernels__hub_origin(url, origin, sizeof(origin)) < 0)
		return 0;
	pthread_mutex_lock(&c->lock);
	found = warm_find(c, origin) != NULL;
	pthread_mutex_unlock(&c->lock);
	return found;
}

int kernels__hub_conn_warm_over(kernels__hub_conn *c, char *origin, size_t size, long *status,
				const char **failure)
{
	warm *w;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	if ((w = c->over))
		c->over = w->next;
	pthread_mutex_unlock(&c->lock);
	if (!w)
		return 0;
	snprintf(origin, size, "%s", w->origin);
	*status = w->status;
	*failure = w->rc == CURLE_OK ? NULL : curl_easy_strerror(w->rc);
	w->next = NULL;
	warms_free(w);
	return 1;
}

/* Origins (scheme, host, port): what a URL's is, whether it is the
 * endpoint's (the token goes only there), and which origins did not answer
 * lately, remembered process-wide so that the calls that follow fall back
 * to the cache at once (see origin.h). */
#include "origin.h"
#include "error.h"
#include "fork.h"
#include "util.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DOWN_SLOTS 16
#define DOWN_TTL_MS 30000          /* documented: docs/fleets-and-mirrors.md */

/* Origins that did not answer lately: the next call falls back at once
 * instead of waiting for the same silence again. Process-wide on purpose
 * (the network is the process's), behind down_lock, forgotten after
 * down_ttl_ms (tests shorten it). */
static pthread_mutex_t down_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char origin[300];
	long long since, until;
	long status;      /* not serving: the 5xx or 429; 0: not answering */
	char why[256];
} down[DOWN_SLOTS];
static _Atomic long down_ttl_ms = DOWN_TTL_MS;

void kernels__origin_fork(kernels__fork_phase phase)
{
	kernels__fork_mutex(&down_lock, phase);
}

int kernels__hub_origin(const char *url, char *buf, size_t n)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	int rc = -1;

	if (!u)
		return -1;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
		char *c;
		for (c = host; *c; c++)
			*c = (char)tolower((unsigned char)*c);
		snprintf(buf, n, "%s://%s:%s", scheme, host, port);
		rc = 0;
	}
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	curl_url_cleanup(u);
	return rc;
}

int kernels__hub_same_origin(const kernels__config *cfg, const char *url)
{
	char a[700], b[700];

	return kernels__hub_origin(cfg->endpoint, a, sizeof(a)) == 0 && kernels__hub_origin(url, b, sizeof(b)) == 0 &&
	       !strcmp(a, b);
}

/* ---- "the Hub did not answer" memory ------------------------------------------ */

#ifdef KERNELS_TESTING
void kernels__hub_set_down_ttl_ms(long ms)
{
	down_ttl_ms = ms;
}

void kernels__hub_down_forget_all(void)
{
	pthread_mutex_lock(&down_lock);
	memset(down, 0, sizeof(down));
	pthread_mutex_unlock(&down_lock);
}

void kernels__hub_down_age_all(long ms)
{
	int i;

	pthread_mutex_lock(&down_lock);
	for (i = 0; i < DOWN_SLOTS; i++) {
		down[i].since -= ms;
		down[i].until -= ms;
	}
	pthread_mutex_unlock(&down_lock);
}
#endif

/* The memory's key: the origin, and the proxy settings curl reads for it
 * (a dead proxy is not a dead Hub; new settings deserve a new try). */
static int down_key(const char *url, char *key, size_t n)
{
	static const char *const vars[] = { "http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy",
					     "ALL_PROXY", "no_proxy", "NO_PROXY", "REQUEST_METHOD" };
	unsigned long hash = 5381;
	size_t i;
	const char *v;

	if (kernels__hub_origin(url, key, n) < 0)
		return -1;
	/* set or not counts too: an empty http_proxy, or REQUEST_METHOD,
	 * turns HTTP_PROXY off (hub.c) */
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		for (v = getenv(vars[i]), hash = hash * 33 + !!v; v && *v; v++)
			hash = hash * 33 + (unsigned char)*v + i;
	snprintf(key + strlen(key), n - strlen(key), " %lx", hash);
	return 0;
}

void kernels__hub_down_mark(const char *url, const char *why, long status)
{
	char o[300];
	long long now = kernels__now_ms();
	int i, slot = 0;

	if ((status && status != 502 && status != 503 && status != 504) || down_key(url, o, sizeof(o)) < 0 ||
	    down_ttl_ms <= 0)
		return;
	pthread_mutex_lock(&down_lock);
	for (i = 0; i < DOWN_SLOTS; i++) {
		if (!strcmp(down[i].origin, o) || down[i].until < now) {
			slot = i;
			if (!strcmp(down[i].origin, o))
				break;
		} else if (down[i].until < down[slot].until) {
			slot = i;
		}
	}
	snprintf(down[slot].origin, sizeof(down[slot].origin), "%s", o);
	snprintf(down[slot].why, sizeof(down[slot].why), "%s", why);
	down[slot].status = status;
	down[slot].since = now;
	down[slot].until = now + down_ttl_ms;
	pthread_mutex_unlock(&down_lock);
}

void kernels__hub_down_forget(const char *url)
{
	char o[300];
	int i;

	if (down_key(url, o, sizeof(o)) < 0)
		return;
	pthread_mutex_lock(&down_lock);
	for (i = 0; i < DOWN_SLOTS; i++)
		if (!strcmp(down[i].origin, o))
			memset(&down[i], 0, sizeof(down[i]));
	pthread_mutex_unlock(&down_lock);
}

/* The Hub not serving, remembered: the same code and mark as the answer
 * that taught it (hub.c's kernels__hub_status_error), so that the cache's
 * fallback and its error read alike on the first call and the next. */
static int down_unserved(const char *o, long status, const char *why, long long ago, long long left)
{
	kernels__error(KERNELS_EHTTP, "the Hub at %s is not serving: it answered HTTP %ld %.1f s ago (%s); not asking "
		       "again for %.1f s; try again later", o, status, (double)ago / 1000, why, (double)left / 1000);
	kernels__error_mark_unserved(status);
	return KERNELS_EHTTP;
}

int kernels__hub_down_check(const char *url)
{
	char o[300], why[256] = "";
	long long now = kernels__now_ms(), since = 0, until = 0;
	long status = 0;
	int i, hit = 0;

	if (down_key(url, o, sizeof(o)) < 0)
		return 0;
	pthread_mutex_lock(&down_lock);
	for (i = 0; i < DOWN_SLOTS && !hit; i++) {
		if (strcmp(down[i].origin, o) || down[i].until <= now)
			continue;
		hit = 1;
		since = down[i].since;
		until = down[i].until;
		status = down[i].status;
		memcpy(why, down[i].why, sizeof(why));
	}
	pthread_mutex_unlock(&down_lock);
	if (!hit)
		return 0;
	*strchr(o, ' ') = '\0';    /* the origin without the proxy hash */
	if (status)
		return down_unserved(o, status, why, now - since, until - now);
	/* Worded like the first failure ("cannot reach the Hub"): which of a
	 * call's concurrent requests met the failure first is chance. */
	return kernels__error(KERNELS_ENETWORK, "cannot reach the Hub at %s: it did not answer %.1f s ago (%s); not "
			      "asking again for %.1f s", o, (double)(now - since) / 1000, why,
			      (double)(until - now) / 1000);
}

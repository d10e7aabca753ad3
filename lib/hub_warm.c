/* The CDN's connection opened early (see hub.h). Over a WAN a cold get's
 * last hop is the CDN: the Hub's answer for an LFS file names it, and only
 * then can its connection open (TCP and TLS: two round trips) before the
 * file is asked for. The CDN a Hub endpoint sends its files to does not
 * change from one kernel to the next, so a cache remembers it once seen,
 * and the next get that has files to fetch sends a cheap request there as
 * soon as it knows its commit: the connection is open by the time the
 * redirect comes, and the file's request goes over it (the call's
 * connections, hub_conn.c). Only a hint: nothing here can fail a call, and
 * the redirect is followed wherever it points, as before. */
#include "hub.h"
#include "cache.h"
#include "error.h"
#include "util.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HINT_MAX 4096
#define ORIGIN_MAX 300

/* {cache}/{HINT_DIR}/{16 hex of sha256(endpoint)}: one file per endpoint,
 * so that calls to two endpoints never overwrite each other. Under .locks/
 * because huggingface_hub's cache scan skips that folder and reports any
 * other folder of the cache root that is not a repo. */
#define HINT_DIR ".locks/.libkernels/cdn"

static char *hint_path(const kernels__config *cfg)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;
	char hex[2 * EVP_MAX_MD_SIZE + 1];

	if (!cfg->cache_dir || !cfg->endpoint ||
	    !EVP_Digest(cfg->endpoint, strlen(cfg->endpoint), md, &len, EVP_sha256(), NULL))
		return NULL;
	kernels__hex(md, 8, hex);
	return kernels__sprintf("%s/" HINT_DIR "/%s", cfg->cache_dir, hex);
}

/* `s` is an origin as kernels__hub_origin writes it, of http or https. */
static int origin_valid(const char *s)
{
	char again[ORIGIN_MAX];

	return (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) && strlen(s) < ORIGIN_MAX &&
	       kernels__hub_origin(s, again, sizeof(again)) == 0 && !strcmp(again, s);
}

int kernels__hub_cdn_hint(const kernels__config *cfg, char *buf, size_t n)
{
	char *path = hint_path(cfg), *data = NULL, *tab, *nl;
	size_t len = 0, elen = cfg->endpoint ? strlen(cfg->endpoint) : 0;
	struct stat st;
	int rc = -1;

	/* Another user of a shared cache could name any host here, and this
	 * user's get would then call on it: only our own or root's hint. */
	if (path && kernels__read_file(path, HINT_MAX, KERNELS__READ_NOFOLLOW, &data, &len, &st) == 0 &&
	    (st.st_uid == geteuid() || st.st_uid == 0) && strlen(data) == len && (tab = strchr(data, '\t')) && (size_t)(tab - data) == elen &&
	    !strncmp(data, cfg->endpoint, elen) && (nl = strchr(tab + 1, '\n')) && !nl[1]) {
		*nl = '\0';
		if (origin_valid(tab + 1) && strlen(tab + 1) < n) {
			memcpy(buf, tab + 1, strlen(tab + 1) + 1);
			rc = 0;
		}
	}
	free(data);
	free(path);
	return rc;
}

void kernels__hub_cdn_seen(const kernels__config *cfg, const char *url)
{
	char origin[ORIGIN_MAX], had[ORIGIN_MAX], *path, *line;
	int dfd, rc;

	if (kernels__hub_same_origin(cfg, url) || kernels__hub_origin(url, origin, sizeof(origin)) < 0 ||
	    !origin_valid(origin) || (kernels__hub_cdn_hint(cfg, had, sizeof(had)) == 0 && !strcmp(had, origin)))
		return;
	path = hint_path(cfg);
	line = kernels__sprintf("%s\t%s\n", cfg->endpoint, origin);
	/* Its folder walked from the cache root as every write of the cache
	 * is: nothing is written through a link planted at .locks/ or below.
	 * No flush: a hint lost in a crash costs two round trips, once. A
	 * cache we may not write keeps what it has. */
	if (path && line) {
		if ((rc = dfd = kernels__cache_dir_open(cfg->cache_dir, HINT_DIR, 1)) >= 0) {
			rc = kernels__write_atomic_at(dfd, strrchr(path, '/') + 1, path, line, strlen(line), -1, 0);
			close(dfd);
		}
		if (rc == 0)
			kernels__log(cfg, KERNELS_LOG_DEBUG, "%s sends its files to the CDN at %s: recorded",
				     cfg->endpoint, origin);
		else
			kernels__log(cfg, KERNELS_LOG_DEBUG, "the CDN hint for %s not recorded: %s", cfg->endpoint,
				     kernels_error_last());
	}
	kernels_error_clear();
	free(line);
	free(path);
}

void kernels__hub_cdn_warm(const kernels__config *cfg)
{
	char origin[ORIGIN_MAX], *url = NULL;
	struct curl_slist *hdrs = NULL;
	CURL *h = NULL;

	if (cfg->offline || !cfg->conn || kernels__hub_cdn_hint(cfg, origin, sizeof(origin)) < 0)
		return;
	/* An origin this process saw refuse or stay silent is left alone: the
	 * file's request will find that out itself, as without the hint. */
	if (kernels__hub_down_check(origin) == 0 && (url = kernels__sprintf("%s/", origin)) &&
	    (h = kernels__hub_easy(cfg, url, NULL, &hdrs))) {
		long left = kernels__deadline_left_ms(cfg), whole = cfg->timeout_ms * 4;

		/* A HEAD: the cheapest request; what it answers does not matter. */
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, left < whole ? (left > 0 ? left : 1L) : whole);
		kernels__log(cfg, KERNELS_LOG_DEBUG, "opening the connection to the CDN at %s early (this cache's "
			     "hint for %s)", origin, cfg->endpoint);
		kernels__hub_conn_warm(cfg->conn, h, hdrs, origin);
	}
	kernels_error_clear();
	free(url);
}

/* The Hub client on libcurl. Every request of the process shares DNS
 * answers and TLS sessions (a curl share handle guarded by mutexes), so a
 * new connection resumes TLS cheaply; connections themselves belong to the
 * call (hub_conn.c: one multi handle carries every request of a call, from
 * all its threads, HTTP/2 where offered), as libcurl cannot share one
 * connection between threads. Redirects are
 * followed here, not by curl, because the token travels in a custom header
 * that curl would happily forward to whatever host a redirect names. */
#include "hub.h"
#include "error.h"
#include "fork.h"
#include "system.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#define RETRY_AFTER_CAP_S 60
#define BACKOFF_CAP_MS 10000
#define TREE_MAX_PAGES 10000
#define TREE_MAX_ENTRIES 1000000
#define TREE_PAGE_MAX (8u << 20)   /* one page of a listing: the Hub's are ~250 KiB (1,000 entries) */
#define DOWN_AFTER_SILENT_MS 1000  /* a silence shorter than this proves nothing */

/* ---- process-wide state --------------------------------------------------- */

/* Nothing here is a setting a call could change for another: what a call
 * sets (endpoint, token, timeouts, User-Agent) lives in its kernels__config.
 * These are written once (libcurl, the share, uname's answers), caches
 * behind a lock (the share's DNS and TLS sessions; the "did not answer"
 * memory is origin.c's), or knobs only the test build's hooks turn (KERNELS_TESTING:
 * the release library has no function that writes them). */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;
static CURLSH *share;
/* Statically initialised, not in global_init: fork's handlers may take
 * them before libcurl is ever initialised. */
static pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST] = { [0 ... CURL_LOCK_DATA_LAST - 1] =
								     PTHREAD_MUTEX_INITIALIZER };
static char ua_os[64], ua_cpu[64];
static _Atomic long backoff_base_ms = 250; /* tests shorten it (kernels__hub_set_backoff_base_ms) */

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *payload)
{
	(void)h, (void)access, (void)payload;
	pthread_mutex_lock(&share_locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *payload)
{
	(void)h, (void)payload;
	pthread_mutex_unlock(&share_locks[data]);
}

/* fork() (fork.h): libcurl's shared DNS answers and TLS sessions, taken
 * in one order; libcurl holds one at a time. */
void kernels__hub_fork_share(kernels__fork_phase phase)
{
	int i;

	for (i = 0; i < CURL_LOCK_DATA_LAST; i++)
		kernels__fork_mutex(&share_locks[phase == KERNELS__FORK_PREPARE ? i : CURL_LOCK_DATA_LAST - 1 - i],
				    phase);
}

static void lower_copy(char *dst, size_t n, const char *src)
{
	size_t i;
	for (i = 0; i + 1 < n && src[i]; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

/* curl_global_init is thread-safe only where libcurl says so
 * (CURL_VERSION_THREADSAFE: 7.84 and later, built with atomics). Before
 * that (we accept 7.68) it must not run while any other thread of the
 * process uses libcurl. Ours runs once (pthread_once) and is never undone
 * (no curl_global_cleanup, so a host's own libcurl use is never pulled from
 * under it); kernels.h tells such hosts what else to do. */
#ifndef CURL_VERSION_THREADSAFE
#define CURL_VERSION_THREADSAFE (1 << 30)
#endif

static int curl_init_threadsafe(void)
{
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	return v && (v->features & CURL_VERSION_THREADSAFE);
}

static void global_init(void)
{
	struct utsname u;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		init_rc = KERNELS_ERROR;
		return;
	}
	share = curl_share_init();
	if (!share) {
		init_rc = KERNELS_ENOMEM;
		return;
	}
	curl_share_setopt(share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	/* Not CURL_LOCK_DATA_CONNECT: libcurl does not support sharing
	 * connections between threads (valgrind caught 16 concurrent
	 * kernels_get writing to a connection another thread freed). Each
	 * call keeps its own (hub_conn.c); DNS and TLS sessions are still
	 * shared, so a call's new connection resumes TLS cheaply. */
	if (uname(&u) == 0) {
		lower_copy(ua_os, sizeof(ua_os), u.sysname);
		lower_copy(ua_cpu, sizeof(ua_cpu), u.machine);
	} else {
		strcpy(ua_os, "unknown");
		strcpy(ua_cpu, "unknown");
	}
}

int kernels__hub_global_init(void)
{
	pthread_once(&init_once, global_init);
	if (init_rc)
		return kernels__error(init_rc, "cannot initialise libcurl; check that the process is not out of "
				      "memory");
	return 0;
}

/* With a libcurl whose global init is not thread-safe, initialise while the
 * library loads: for a host linked to libkernels that is before main(), so
 * before any thread exists. A thread-safe libcurl is initialised lazily, on
 * the first request, and a process that never goes online never pays. */
__attribute__((constructor)) static void global_init_at_load(void)
{
	if (!curl_init_threadsafe())
		pthread_once(&init_once, global_init);
}

#ifdef KERNELS_TESTING
void kernels__hub_set_backoff_base_ms(long ms)
{
	backoff_base_ms = ms;
}
#endif

/* Guards every call's ua_system buffer: written once per call (here or
 * by the variant selection), read by transfers that may run together. */
static pthread_mutex_t ua_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork() (fork.h): outermost, as it was when the system detection ran
 * under it; now it guards a copy alone, so a fork never waits on one. */
void kernels__hub_fork_ua(kernels__fork_phase phase)
{
	kernels__fork_mutex(&ua_lock, phase);
}

void kernels__hub_ua_system_set(const kernels__config *cfg, const kernels_system *s)
{
	char part[KERNELS__UA_SYSTEM_MAX];

	kernels__hub_ua_system(s, part, sizeof(part));
	pthread_mutex_lock(&ua_lock);
	memcpy(cfg->ua_system, part, sizeof(part));
	pthread_mutex_unlock(&ua_lock);
}

void kernels__hub_ua_system(const kernels_system *s, char *buf, size_t size)
{
	kernels__buf ua = { 0 };
	char bstr[64] = "";

	/* the backend as variant names spell it (Python kernels' backend/cu130),
	 * then torch, tvm-ffi and glibc */
	kernels__system_backend_str(s, bstr, sizeof(bstr));
	kernels__buf_printf(&ua, "backend/%s", bstr);
	if (s->torch_version_string)
		kernels__buf_printf(&ua, "; torch/%s", s->torch_version_string);
	if (s->tvm_ffi_version > 0)
		kernels__buf_printf(&ua, "; tvm-ffi/%d.%d", s->tvm_ffi_version / 100, s->tvm_ffi_version % 100);
	if (s->glibc)
		kernels__buf_printf(&ua, "; glibc/%s", s->glibc);
	if (ua.ptr)
		snprintf(buf, size, "%s", ua.ptr);
	kernels__buf_free(&ua);
}

/* The call's first request comes before its variant selection describes
 * the system (plan.c): describe it here, once per call, so that request
 * says backend/ too, as Python kernels' first one does. A failure leaves
 * the part out: the selection reports it. */
static void ua_system_get(const kernels__config *cfg, char out[KERNELS__UA_SYSTEM_MAX])
{
	kernels_system *s = NULL;
	char part[KERNELS__UA_SYSTEM_MAX] = "";

	/* Transfers of one call may start together: the call's buffer is
	 * filled and read under the lock, never read while written. The
	 * detection runs outside it: a process's first one (NVML, the
	 * runtime's file) takes milliseconds, which a host's fork() in
	 * another thread would otherwise wait out. Two transfers that both
	 * find the buffer empty describe the same system; the first is kept. */
	pthread_mutex_lock(&ua_lock);
	memcpy(out, cfg->ua_system, KERNELS__UA_SYSTEM_MAX);
	pthread_mutex_unlock(&ua_lock);
	if (*out)
		return;
	if (kernels__system_detect(cfg, &s) == 0)
		kernels__hub_ua_system(s, part, sizeof(part));
	else
		kernels_error_clear();
	kernels_system_free(s);
	pthread_mutex_lock(&ua_lock);
	if (!*cfg->ua_system)
		memcpy(cfg->ua_system, part, sizeof(part));
	memcpy(out, cfg->ua_system, KERNELS__UA_SYSTEM_MAX);
	pthread_mutex_unlock(&ua_lock);
}

/* Per call, as Python kernels builds its HfApi: the caller's app tag, then
 * libkernels and what runs the kernels (file_type/kernel, backend/, torch/
 * ...: cfg->ua_system, described once per call).
 * Telemetry off (HF_HUB_DISABLE_TELEMETRY, DISABLE_TELEMETRY, DO_NOT_TRACK):
 * the library's name and version only, still a valid header. Either way
 * "; origin/<it>" last when HF_HUB_USER_AGENT_ORIGIN is set, as
 * huggingface_hub ends its own. */
char *kernels__hub_user_agent(const kernels__config *cfg)
{
	const char *app = cfg->user_agent && *cfg->user_agent ? cfg->user_agent : NULL;
	const char *origin = cfg->ua_origin ? "; origin/" : "", *o = cfg->ua_origin ? cfg->ua_origin : "";
	char part[KERNELS__UA_SYSTEM_MAX] = "";
	const char *sys;

	if (!cfg->telemetry)
		return kernels__sprintf("libkernels/%s%s%s", KERNELS_VERSION_STRING, origin, o);
	if (cfg->ua_system)
		ua_system_get(cfg, part);
	sys = *part ? part : NULL;
	return kernels__sprintf("%s%slibkernels/%s; os/%s; cpu/%s; platform/%s-%s; file_type/kernel%s%s%s%s",
				app ? app : "", app ? "; " : "", KERNELS_VERSION_STRING, ua_os, ua_cpu, ua_cpu, ua_os,
				sys ? "; " : "", sys ? sys : "", origin, o);
}

/* ---- small helpers ---------------------------------------------------------- */

char *kernels__url_escape(const char *s, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	kernels__buf b = { 0 };

	if (kernels__buf_grow(&b, strlen(s) * 3) < 0)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/')) {
			b.ptr[b.len++] = (char)c;
		} else {
			b.ptr[b.len++] = '%';
			b.ptr[b.len++] = hex[c >> 4];
			b.ptr[b.len++] = hex[c & 15];
		}
	}
	b.ptr[b.len] = '\0';
	return kernels__buf_detach(&b);
}

char *kernels__etag_normalize(const char *etag)
{
	size_t n;

	if (!strncmp(etag, "W/", 2))
		etag += 2;
	n = strlen(etag);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"') {
		char *s = kernels__strdup(etag + 1);
		if (s)
			s[n - 2] = '\0';
		return s;
	}
	return kernels__strdup(etag);
}

char *kernels__url_resolve(const char *base, const char *location)
{
	CURLU *u = curl_url();
	char *out = NULL, *res = NULL;

	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_URL, location, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &out, 0) == CURLUE_OK) {
		res = strdup(out);
		curl_free(out);
	}
	curl_url_cleanup(u);
	return res;
}

int kernels__hub_transient_curl(CURLcode rc)
{
	switch (rc) {
	/* A refused connection or a failed DNS lookup says the same thing on
	 * the next try a second later: no retry ladder for those. */
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_PARTIAL_FILE:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

int kernels__hub_transient_status(long status)
{
	return status == 429 || status >= 500;
}

long kernels__hub_parse_retry_after(const char *value)
{
	char *end;
	long s;
	time_t when;

	if (!value || !*value)
		return -1;
	errno = 0;
	s = strtol(value, &end, 10);
	if (end != value && !*end && errno == 0)
		return s < 0 ? -1 : s;
	when = curl_getdate(value, NULL);
	if (when < 0)
		return -1;
	return when > time(NULL) ? (long)(when - time(NULL)) : 0;
}

static unsigned int jitter(void)
{
	static _Thread_local uint64_t state;

	if (!state)
		state = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&state ^ 0x9e3779b97f4a7c15ULL;
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return (unsigned int)(state >> 32);
}

long kernels__hub_backoff_ms(int attempt, long retry_after_s)
{
	long ms;

	if (retry_after_s >= 0)
		return (retry_after_s > RETRY_AFTER_CAP_S ? RETRY_AFTER_CAP_S : retry_after_s) * 1000 + 50;
	ms = backoff_base_ms;
	while (attempt-- > 0 && ms < BACKOFF_CAP_MS)
		ms *= 2;
	if (ms > BACKOFF_CAP_MS)
		ms = BACKOFF_CAP_MS;
	return ms + (long)(jitter() % (unsigned int)(ms / 4 + 1));
}

/* ---- CA certificates ------------------------------------------------------- */

/* What a caller names first, as Python's clients read them: requests'
 * variables, then OpenSSL's (httpx, and so huggingface_hub, read it). */
static const char *const ca_env[] = {"REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"};

/* Where distributions keep the system's CA bundle. A libcurl built on one
 * distribution (the one the Python wheel vendors) knows only that one's
 * path; on another it would trust nothing. */
static const char *const ca_files[] = {
	"/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Arch */
	"/etc/pki/tls/certs/ca-bundle.crt",                  /* RHEL, CentOS, Fedora */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* RHEL, Fedora (the source of the above) */
	"/etc/ssl/ca-bundle.pem",                            /* openSUSE, SLES */
	"/etc/ssl/cert.pem",                                 /* Alpine, the BSDs */
};
static pthread_once_t ca_once = PTHREAD_ONCE_INIT;
static const char *ca_probed; /* NULL: curl's built-in bundle is there, or none of ca_files is */

/* Once per process: the files do not come and go under a running program. */
static void ca_probe(void)
{
	size_t i;
#if LIBCURL_VERSION_NUM >= 0x074600
	const curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);

	if (v->age >= CURLVERSION_SEVENTH && v->cainfo && access(v->cainfo, R_OK) == 0)
		return;
#endif
	for (i = 0; i < sizeof(ca_files) / sizeof(ca_files[0]); i++)
		if (access(ca_files[i], R_OK) == 0) {
			ca_probed = ca_files[i];
			return;
		}
}

const char *kernels__hub_ca_bundle(const char **from)
{
	size_t i;
	const char *v;

	for (i = 0; i < sizeof(ca_env) / sizeof(ca_env[0]); i++)
		if ((v = getenv(ca_env[i])) && *v) {
			*from = ca_env[i];
			return v;
		}
	/* httpx's next choice, a folder: where some keep their company's CA */
	if ((v = getenv("SSL_CERT_DIR")) && *v) {
		*from = "SSL_CERT_DIR";
		return v;
	}
	pthread_once(&ca_once, ca_probe);
	*from = ca_probed ? "found on this system" : "libcurl's default";
	return ca_probed;
}

/* ---- one HTTP exchange ------------------------------------------------------ */

/* HTTP_PROXY for an http:// URL, as Python's clients read it (urllib's
 * getproxies, which httpx and requests use), where libcurl reads only
 * http_proxy: unless http_proxy is set (even empty: Python then has no
 * http proxy, libcurl neither) or this is a CGI request, whose
 * HTTP_PROXY a client's "Proxy:" header may have set. NO_PROXY still
 * applies (libcurl reads it for a proxy set so too). */
static const char *http_proxy_upper(const char *url)
{
	const char *v = getenv("HTTP_PROXY");

	if (strncasecmp(url, "http://", 7) || !v || !*v || getenv("http_proxy") || getenv("REQUEST_METHOD"))
		return NULL;
	return v;
}

/* libcurl opens its sockets without close-on-exec (7.88 does): a worker
 * the host fork+execs while a call runs would keep the connection open
 * after the call closed it. Ours are opened close-on-exec from the start,
 * so no fork in another thread catches one without the flag. */
static curl_socket_t open_socket(void *unused, curlsocktype purpose, struct curl_sockaddr *a)
{
	(void)unused, (void)purpose;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

CURL *kernels__hub_easy(const kernels__config *cfg, const char *url, const char *extra_header,
			struct curl_slist **headers)
{
	CURL *h;
	char *ua, *auth;
	struct curl_slist *l = NULL, *t;

	*headers = NULL;
	if (kernels__hub_global_init() < 0)
		return NULL;
	if (!(h = curl_easy_init())) {
		kernels__error_oom();
		return NULL;
	}
	if (!(ua = kernels__hub_user_agent(cfg))) {
		curl_easy_cleanup(h);
		return NULL;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_SHARE, share);
	curl_easy_setopt(h, CURLOPT_USERAGENT, ua);    /* curl copies it */
	free(ua);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, open_socket);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	curl_easy_setopt(h, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
	curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
	/* Requests that start together while the call's connection to a host
	 * is still being made wait to learn whether it multiplexes (HTTP/2,
	 * known only after TLS's ALPN) instead of each opening its own. Plain
	 * HTTP is HTTP/1.1 here: nothing to wait for. */
	if (cfg->conn && !strncasecmp(url, "https://", 8))
		curl_easy_setopt(h, CURLOPT_PIPEWAIT, 1L);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	/* The bytes and sizes are the files' own: a server may compress an
	 * answer to a request that names no encoding, or one that names
	 * several (RFC 9110), and a HEAD's Content-Length would then not be
	 * the file's size. huggingface_hub asks for identity too. */
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "identity");
	{
		const char *from, *ca = kernels__hub_ca_bundle(&from), *proxy = http_proxy_upper(url);

		if (ca && !strcmp(from, "SSL_CERT_DIR")) {
			/* that folder alone, as Python's ssl module given a capath */
			curl_easy_setopt(h, CURLOPT_CAINFO, NULL);
			curl_easy_setopt(h, CURLOPT_CAPATH, ca);
		} else if (ca) {
			curl_easy_setopt(h, CURLOPT_CAINFO, ca);
		}
		if (proxy)
			curl_easy_setopt(h, CURLOPT_PROXY, proxy);
	}
	{
		long left = kernels__deadline_left_ms(cfg);
		curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
				 left < cfg->timeout_ms ? (left > 0 ? left : 1L) : cfg->timeout_ms);
	}
	/* A transfer that moves nothing for the timeout is stalled; a slow
	 * but moving download of a large file is not an error. */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, cfg->timeout_ms >= 2000 ? cfg->timeout_ms / 1000 : 1L);
	if (cfg->token && kernels__hub_same_origin(cfg, url)) {
		if (!(auth = kernels__sprintf("Authorization: Bearer %s", cfg->token)))
			goto oom;
		t = curl_slist_append(l, auth);
		free(auth);
		if (!t)
			goto oom;
		l = t;
	}
	if (extra_header) {
		if (!(t = curl_slist_append(l, extra_header)))
			goto oom;
		l = t;
	}
	if (l)
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, l);
	*headers = l;
	return h;
oom:
	curl_slist_free_all(l);
	curl_easy_cleanup(h);
	kernels__error_oom();
	return NULL;
}

void kernels__hub_headers_clear(kernels__hub_headers *h)
{
	free(h->etag);
	free(h->linked_etag);
	free(h->repo_commit);
	free(h->location);
	free(h->link_next);
	free(h->error_code);
	free(h->error_message);
	free(h->content_range);
	free(h->content_type);
	memset(h, 0, sizeof(*h));
	h->content_length = h->linked_size = -1;
	h->retry_after = -1;
}

/* Headers of one answer (one hop of a redirect chain) and its body. */
typedef struct {
	kernels__hub_headers hd;
	kernels__buf body;
	size_t body_max;        /* the cap for this request's body */
	int body_overflow;
	int timeout_is_budget;  /* its timeout was what was left of the call's budget */
} hop;

static void hop_free(hop *h)
{
	kernels__hub_headers_clear(&h->hd);
	kernels__buf_free(&h->body);
}

/* Finds rel="next" in a Link header: <url>; rel="next", <url>; rel="last". */
static char *link_next(const char *v)
{
	const char *lt, *gt, *end;

	while ((lt = strchr(v, '<')) && (gt = strchr(lt, '>'))) {
		end = strchr(gt, ',');
		if (!end)
			end = gt + strlen(gt);
		{
			size_t n = (size_t)(end - gt);
			char params[512];
			snprintf(params, sizeof(params), "%.*s", (int)(n < 511 ? n : 511), gt + 1);
			if (strstr(params, "rel=\"next\"") || strstr(params, "rel=next")) {
				char *url = malloc((size_t)(gt - lt));
				if (url) {
					memcpy(url, lt + 1, (size_t)(gt - lt - 1));
					url[gt - lt - 1] = '\0';
				}
				return url;
			}
		}
		v = end;
	}
	return NULL;
}

static void set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
}

size_t kernels__hub_header_cb(char *data, size_t size, size_t nitems, void *userdata)
{
	kernels__hub_headers *h = userdata;
	size_t n = size * nitems, k;
	char line[8192], *colon, *v, *e;

	/* libcurl's header data is not NUL-terminated: read it only through
	 * a terminated copy. */
	k = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
	memcpy(line, data, k);
	line[k] = '\0';
	if (k >= 5 && !strncmp(line, "HTTP/", 5)) {
		/* A new answer starts (after a 100-continue): forget the last. */
		kernels__hub_headers_clear(h);
		h->status = strtol(line + strcspn(line, " "), NULL, 10);
		return n;
	}
	if (n == 0 || (n <= 2 && (line[0] == '\r' || line[0] == '\n'))) {
		h->complete = n > 0;
		return n;
	}
	if (!(colon = strchr(line, ':')))
		return n;
	*colon = '\0';
	for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
		;
	for (e = v + strlen(v); e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t');)
		*--e = '\0';
	if (!strcasecmp(line, "etag")) {
		free(h->etag);
		h->etag = kernels__etag_normalize(v);
	} else if (!strcasecmp(line, "x-linked-etag")) {
		free(h->linked_etag);
		h->linked_etag = kernels__etag_normalize(v);
	} else if (!strcasecmp(line, "x-repo-commit"))
		set_str(&h->repo_commit, v);
	else if (!strcasecmp(line, "location"))
		set_str(&h->location, v);
	else if (!strcasecmp(line, "x-error-code"))
		set_str(&h->error_code, v);
	else if (!strcasecmp(line, "x-error-message"))
		set_str(&h->error_message, v);
	else if (!strcasecmp(line, "content-range"))
		set_str(&h->content_range, v);
	else if (!strcasecmp(line, "content-type"))
		set_str(&h->content_type, v);
	else if (!strcasecmp(line, "content-length"))
		h->content_length = strtoll(v, NULL, 10);
	else if (!strcasecmp(line, "x-linked-size"))
		h->linked_size = strtoll(v, NULL, 10);
	else if (!strcasecmp(line, "retry-after"))
		h->retry_after = kernels__hub_parse_retry_after(v);
	else if (!strcasecmp(line, "link")) {
		free(h->link_next);
		h->link_next = link_next(v);
	}
	return n;
}

static size_t on_body(char *data, size_t size, size_t nitems, void *userdata)
{
	hop *h = userdata;
	size_t n = size * nitems;

	if (h->body.len + n > h->body_max) {
		h->body_overflow = 1;
		return 0;
	}
	if (kernels__buf_put(&h->body, data, n) < 0)
		return 0;
	return n;
}

/* One request without redirects or retries. Returns the curl result;
 * *waited_ms is how long it took. `fresh`: on a new connection (the last
 * attempt broke, and the call's connection it used may be what broke). */
static CURLcode do_hop(const kernels__config *cfg, const char *url, int head, hop *h, char *errbuf, int fresh,
		       long long *waited_ms)
{
	struct curl_slist *headers;
	CURL *c;
	CURLcode rc;
	long long t0 = kernels__now_ms();

	*waited_ms = 0;
	if (!(c = kernels__hub_easy(cfg, url, NULL, &headers)))
		return CURLE_OUT_OF_MEMORY;
	kernels__hub_headers_clear(&h->hd);
	kernels__buf_free(&h->body);
	h->body_overflow = 0;
	errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, kernels__hub_header_cb);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &h->hd);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, h);
	/* An API answer may come compressed (curl decodes it); a HEAD's
	 * Content-Length must stay the file's size (kernels__hub_easy). */
	if (!head)
		curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	/* The whole API answer must arrive within a bound, not just trickle,
	 * and within what is left of the call's budget. */
	{
		long left = kernels__deadline_left_ms(cfg), whole = cfg->timeout_ms * 4;
		h->timeout_is_budget = left < whole;
		curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, left < whole ? (left > 0 ? left : 1L) : whole);
	}
	if (head)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	if (fresh)
		curl_easy_setopt(c, CURLOPT_FRESH_CONNECT, 1L);
	rc = cfg->conn ? kernels__hub_conn_perform(cfg->conn, c) : curl_easy_perform(c);
	kernels__hub_conn_done(cfg->conn, c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h->hd.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(headers);
	*waited_ms = kernels__now_ms() - t0;
	return rc;
}

/* Whether a failed hop says "nobody answers there" (remembered for the
 * next calls) rather than "this one transfer broke". */
static int says_down(CURLcode rc, const hop *h, long long waited_ms)
{
	if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY)
		return 1;
	return rc == CURLE_OPERATION_TIMEDOUT && h->hd.status == 0 && waited_ms >= DOWN_AFTER_SILENT_MS;
}

/* A certificate that does not verify is no network trouble: say which CA
 * bundle judged it and how to name another. */
static int tls_error(const char *method, const char *url, const char *why)
{
	const char *from, *ca = kernels__hub_ca_bundle(&from);

	return kernels__error(KERNELS_ENETWORK,
			      "%s %s: the server's TLS certificate cannot be verified (%s) with the CA bundle %s (%s); "
			      "set SSL_CERT_FILE (or REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE) to a PEM file holding the CA "
			      "that issued it, or SSL_CERT_DIR to a folder of hashed certificates", method, url, why, ca ? ca : "libcurl was built with", from);
}

void kernels__hub_response_free(kernels__hub_response *r)
{
	if (!r)
		return;
	free(r->error_code);
	free(r->error_message);
	free(r->etag);
	free(r->repo_commit);
	free(r->location);
	free(r->link_next);
	free(r->content_type);
	free(r->body);
	memset(r, 0, sizeof(*r));
	r->size = -1;
}

static char *take(char **p)
{
	char *s = *p;
	*p = NULL;
	return s;
}

/* A 5xx or 429 that outlived the retries: the origin is not serving, and
 * is remembered so (origin.h says which statuses), as one that does not
 * answer is. 0: the answer itself is the caller's to name. */
static int unserved(const char *url, const hop *h, int attempt)
{
	char why[64];

	snprintf(why, sizeof(why), "HTTP %ld, %d attempt%s", h->hd.status, attempt + 1, attempt ? "s" : "");
	kernels__hub_down_mark(url, why, h->hd.status);
	return 0;
}

/* One hop with retries on transient failures, within the call's budget.
 * 0 with h filled (a 5xx or 429 that outlived the retries is an answer
 * too: the caller names it), or KERNELS_ENETWORK saying what was tried. */
static int hop_with_retries(const kernels__config *cfg, const char *url, int head, hop *h)
{
	const char *method = head ? "HEAD" : "GET";
	char errbuf[CURL_ERROR_SIZE], why[CURL_ERROR_SIZE + 64];
	long long waited = 0;
	int attempt, rc;
	CURLcode cc = CURLE_OK;

	if ((rc = kernels__hub_down_check(url)) < 0)
		return rc;
	for (attempt = 0;; attempt++) {
		long ms, left = kernels__deadline_left_ms(cfg);
		char budget[256];

		if (left <= 0)
			return kernels__error(KERNELS_ENETWORK, "%s %s: %s ran out %s%s", method, url,
					      kernels__deadline_what(cfg, budget, sizeof(budget)),
					      attempt ? "after " : "before it was sent", attempt ? why : "");
		cc = do_hop(cfg, url, head, h, errbuf, attempt > 0 && cc != CURLE_OK, &waited);
		if (cc == CURLE_OUT_OF_MEMORY)
			return kernels__error_oom();
		if (cc == CURLE_WRITE_ERROR && h->body_overflow)
			return kernels__error(KERNELS_EHTTP,
					      "the answer to GET %s is larger than %zu MiB; check HF_ENDPOINT", url,
					      h->body_max >> 20);
		if (cc == CURLE_OK) {
			snprintf(why, sizeof(why), "HTTP %ld", h->hd.status);
			kernels__hub_down_forget(url);
			kernels__endpoint_answered(cfg);
			if (!kernels__hub_transient_status(h->hd.status))
				return 0;
			if (attempt >= cfg->max_retries)
				return unserved(url, h, attempt);
			ms = kernels__hub_backoff_ms(attempt, h->hd.retry_after);
			if (ms >= kernels__deadline_left_ms(cfg)) {
				kernels__log(cfg, KERNELS_LOG_INFO,
					     "%s %s answered %ld; no time left in the call's deadline "
					     "to wait %ld ms and retry", method, url, h->hd.status, ms);
				return unserved(url, h, attempt);
			}
			kernels__log(cfg, KERNELS_LOG_INFO, "%s %s answered %ld; retrying in %ld ms", method, url,
				     h->hd.status, ms);
			kernels__sleep_ms(ms);
			continue;
		}
		snprintf(why, sizeof(why), "%s", *errbuf ? errbuf : curl_easy_strerror(cc));
		if (says_down(cc, h, waited)) {
			kernels__hub_down_mark(url, why, 0);
			break;
		}
		if (!kernels__hub_transient_curl(cc) || attempt >= cfg->max_retries)
			break;
		ms = kernels__hub_backoff_ms(attempt, -1);
		if (ms >= kernels__deadline_left_ms(cfg))
			break;
		kernels__log(cfg, KERNELS_LOG_INFO, "%s %s failed (%s); retrying in %ld ms", method, url, why, ms);
		kernels__sleep_ms(ms);
	}
	if (cc == CURLE_OPERATION_TIMEDOUT && (h->timeout_is_budget || kernels__deadline_left_ms(cfg) <= 0)) {
		char budget[256];
		return kernels__error(KERNELS_ENETWORK, "%s %s: no answer within %s (%s, %d attempt%s)", method, url,
				      kernels__deadline_what(cfg, budget, sizeof(budget)), why, attempt + 1,
				      attempt ? "s" : "");
	}
	if (cc == CURLE_OPERATION_TIMEDOUT)
		return kernels__error(KERNELS_ENETWORK,
				      "%s %s: no answer within %lld ms (%s, %d attempt%s); the server "
				      "accepts connections but does not answer", method, url, waited, why, attempt + 1,
				      attempt ? "s" : "");
	if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE)
		return tls_error(method, url, why);
	return kernels__error(KERNELS_ENETWORK, "cannot reach the Hub at %s (%s, %d attempt%s); check the network, "
			      "HF_ENDPOINT and proxy settings", url, why, attempt + 1, attempt ? "s" : "");
}

/* kernels__hub_request with a smaller cap on the body (tree pages). */
static int request_capped(const kernels__config *cfg, const char *url_or_path, int head, size_t body_max,
			  kernels__hub_response *r)
{
	hop h;
	char *url, *next, *repo_commit = NULL, *linked_etag = NULL;
	long long linked_size = -1;
	int redirects, rc;

	memset(r, 0, sizeof(*r));
	memset(&h, 0, sizeof(h));
	kernels__hub_headers_clear(&h.hd);
	h.body_max = body_max;
	r->size = -1;
	if (cfg->offline)
		return kernels__error(KERNELS_EOFFLINE,
				      "%s forbids the request %s; %s, or download what is needed first",
				      kernels__config_offline_said(cfg), url_or_path, kernels__config_online_hint(cfg));
	url = url_or_path[0] == '/' ? kernels__sprintf("%s%s", cfg->endpoint, url_or_path)
				    : kernels__strdup(url_or_path);
	if (!url)
		return KERNELS_ENOMEM;
	for (redirects = 0;; redirects++) {
		if ((rc = hop_with_retries(cfg, url, head, &h)) < 0)
			goto out;
		/* Metadata of the file travels on the first answer of a chain. */
		if (h.hd.repo_commit && !repo_commit)
			repo_commit = take(&h.hd.repo_commit);
		if (h.hd.linked_etag && !linked_etag)
			linked_etag = take(&h.hd.linked_etag);
		if (h.hd.linked_size >= 0 && linked_size < 0)
			linked_size = h.hd.linked_size;
		if (h.hd.status < 300 || h.hd.status >= 400 || h.hd.status == 304 || !h.hd.location)
			break;
		if (redirects >= KERNELS__MAX_REDIRECTS) {
			rc = kernels__error(KERNELS_EHTTP, "more than %d redirects from %s; check HF_ENDPOINT",
					    KERNELS__MAX_REDIRECTS, url_or_path);
			goto out;
		}
		if (!(next = kernels__url_resolve(url, h.hd.location))) {
			rc = kernels__error(KERNELS_EHTTP, "the Hub redirected %s to an invalid URL '%.200s'", url,
					    h.hd.location);
			goto out;
		}
		if (head && !kernels__hub_same_origin(cfg, next)) {
			/* A HEAD only wants the metadata; the CDN has none of it. */
			free(h.hd.location);
			h.hd.location = next;
			break;
		}
		free(url);
		url = next;
	}
	r->status = h.hd.status;
	r->error_code = take(&h.hd.error_code);
	r->error_message = take(&h.hd.error_message);
	r->etag = linked_etag ? take(&linked_etag) : take(&h.hd.etag);
	r->repo_commit = repo_commit ? take(&repo_commit) : NULL;
	r->location = take(&h.hd.location);
	r->link_next = take(&h.hd.link_next);
	r->content_type = take(&h.hd.content_type);
	r->size = linked_size >= 0 ? linked_size : h.hd.content_length;
	if (!head) {
		r->body_len = h.body.len;
		r->body = kernels__buf_detach(&h.body);
		if (!r->body)
			rc = KERNELS_ENOMEM;
	}
out:
	hop_free(&h);
	free(url);
	free(repo_commit);
	free(linked_etag);
	if (rc < 0)
		kernels__hub_response_free(r);
	return rc;
}

int kernels__hub_request(const kernels__config *cfg, const char *url_or_path, int head,
			 kernels__hub_response *r)
{
	return request_capped(cfg, url_or_path, head, KERNELS__HUB_BODY_MAX, r);
}

/* ---- the Hub's error vocabulary ---------------------------------------------- */

/* The server's own words: X-Error-Message, else {"error": "..."} in the body. */
static const char *server_message(const kernels__hub_response *r, char *buf, size_t n)
{
	json_t *j, *e;

	if (r->error_message && *r->error_message)
		return r->error_message;
	buf[0] = '\0';
	if (r->body && r->body_len && (j = json_loadb(r->body, r->body_len, 0, NULL))) {
		if ((e = json_object_get(j, "error")) && json_is_string(e))
			snprintf(buf, n, "%s", json_string_value(e));
		json_decref(j);
	}
	return buf;
}

int kernels__hub_status_error(const kernels__hub_response *r, const char *what)
{
	char buf[512], detail[700];
	const char *code = r->error_code ? r->error_code : "";
	const char *msg = server_message(r, buf, sizeof(buf));

	if (*msg)
		snprintf(detail, sizeof(detail), " (HTTP %ld%s%s: %s)", r->status, *code ? " " : "", code, msg);
	else
		snprintf(detail, sizeof(detail), " (HTTP %ld%s%s)", r->status, *code ? " " : "", code);

	if (!strcmp(code, "RepoNotFound"))
		return kernels__error(KERNELS_ENOTFOUND,
				      "%s: repository not found%s; check the repo id, and if the repo is private "
				      "set HF_TOKEN to a token that can read it", what, detail);
	if (!strcmp(code, "RevisionNotFound"))
		return kernels__error(KERNELS_ENOTFOUND, "%s: revision not found%s; check the branch, tag or commit id",
				      what, detail);
	if (!strcmp(code, "EntryNotFound"))
		return kernels__error(KERNELS_ENOTFOUND, "%s: file or folder not found in this revision%s; "
				      "check the path or pick another revision", what, detail);
	if (!strcmp(code, "GatedRepo") || r->status == 401 || r->status == 403)
		return kernels__error(KERNELS_EAUTH, "%s: access refused%s; log in with a token that may read "
				      "this repo (HF_TOKEN), and accept its conditions on the Hub if it is gated",
				      what, detail);
	if (r->status == 404)
		return kernels__error(KERNELS_ENOTFOUND, "%s: not found%s; check the repo id and revision", what,
				      detail);
	if (r->status == 429)
		kernels__error(KERNELS_EHTTP, "%s: the Hub is rate limiting requests%s; wait and try again, "
			       "or use a token (HF_TOKEN) for a higher limit", what, detail);
	else if (r->status >= 500)
		kernels__error(KERNELS_EHTTP, "%s: the Hub failed%s; try again later", what, detail);
	/* A 5xx or 429 reaches here only once it outlived the retries: the Hub
	 * is not serving, which get.c answers from the cache. */
	if (kernels__hub_transient_status(r->status)) {
		kernels__error_mark_unserved(r->status);
		return KERNELS_EHTTP;
	}
	return kernels__error(KERNELS_EHTTP, "%s: unexpected answer from the Hub%s; check HF_ENDPOINT", what, detail);
}

/* ---- the JSON API -------------------------------------------------------------- */

static int repo_not_found(const kernels__hub_response *r)
{
	return r->status == 404 && (!r->error_code || !strcmp(r->error_code, "RepoNotFound"));
}

/* GET /api/{t}/{repo}{suffix}; the answer is 2xx on success (anything
 * else is already an error). */
static int api_get_capped(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *suffix, size_t body_max, kernels__hub_response *r)
{
	char *path, what[700];
	int rc;

	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	if (!(path = kernels__sprintf("/api/%s/%s%s", kernels__repo_api_name(type), repo_id, suffix)))
		return KERNELS_ENOMEM;
	rc = request_capped(cfg, path, 0, body_max, r);
	if (rc == 0 && (r->status < 200 || r->status >= 300)) {
		snprintf(what, sizeof(what), "%s (GET %.500s)", repo_id, path);
		rc = kernels__hub_status_error(r, what);
		kernels__hub_response_free(r);
	}
	free(path);
	return rc;
}

static int api_get(const kernels__config *cfg, kernels__repo_type type, const char *repo_id, const char *suffix,
		   kernels__hub_response *r)
{
	return api_get_capped(cfg, type, repo_id, suffix, KERNELS__HUB_BODY_MAX, r);
}

int kernels__hub_repo_type(const kernels__config *cfg, const char *repo_id, const char *revision,
			   kernels__repo_type *type)
{
	kernels__hub_response r;
	char *rev = NULL, *path = NULL;
	int i, rc;

	*type = KERNELS__REPO_KERNEL;
	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	if (!(rev = kernels__url_escape(revision, 0)))
		return KERNELS_ENOMEM;
	for (i = 0; i < 2 && rc == 0; i++) {
		*type = i ? KERNELS__REPO_MODEL : KERNELS__REPO_KERNEL;
		free(path);
		if (!(path = kernels__sprintf("/api/%s/%s/revision/%s", kernels__repo_api_name(*type), repo_id, rev))) {
			rc = KERNELS_ENOMEM;
		} else if ((rc = request_capped(cfg, path, 0, KERNELS__HUB_BODY_MAX, &r)) == 0) {
			int missing = repo_not_found(&r);
			/* Any other answer (the revision missing, a token needed) is
			 * the repo's: the stage that asks for it says what is wrong. */
			if (missing && i == 1)
				rc = kernels__hub_status_error(&r, repo_id);
			kernels__hub_response_free(&r);
			if (!missing)
				break;
		}
	}
	free(rev);
	free(path);
	return rc;
}

static int parse_json(const kernels__hub_response *r, const char *what, json_t **out)
{
	json_error_t err;

	*out = json_loadb(r->body ? r->body : "", r->body_len, 0, &err);
	if (!*out)
		return kernels__error(KERNELS_EPARSE,
				      "the Hub's answer for %s is not valid JSON (line %d: %s); check HF_ENDPOINT "
				      "points at a Hugging Face Hub", what, err.line, err.text);
	return 0;
}

int kernels__hub_api_json(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *suffix, json_t **out)
{
	kernels__hub_response r;
	char what[600];
	int rc;

	*out = NULL;
	if ((rc = api_get(cfg, type, repo_id, suffix, &r)) < 0)
		return rc;
	snprintf(what, sizeof(what), "%s%.400s", repo_id, suffix);
	rc = parse_json(&r, what, out);
	kernels__hub_response_free(&r);
	return rc;
}

/* ---- tree listing ------------------------------------------------------------- */

#define BAD(...) (kernels__error(KERNELS_EPARSE, __VA_ARGS__), KERNELS_EPARSE)

int kernels__hub_tree_list(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, const char *path, int recursive, kernels__tree *out)
{
	return kernels__hub_tree_list_max(cfg, type, repo_id, commit, path, recursive, TREE_MAX_ENTRIES, out);
}

int kernels__hub_tree_list_max(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			       const char *commit, const char *path, int recursive, size_t max_entries,
			       kernels__tree *out)
{
	kernels__hub_response r;
	char *rev = NULL, *epath = NULL, *suffix = NULL, *next = NULL, where[700];
	json_t *list = NULL;
	int rc, pages;

	memset(out, 0, sizeof(*out));
	if (max_entries > TREE_MAX_ENTRIES)
		max_entries = TREE_MAX_ENTRIES;
	snprintf(where, sizeof(where), "listing '%.300s' of %s at %.64s", *path ? path : "/", repo_id, commit);
	if (*path && (rc = kernels__repo_path_check(path)) < 0)
		return kernels__error_prefix("%s", where);
	if (!(rev = kernels__url_escape(commit, 0)) || !(epath = kernels__url_escape(path, 1)) ||
	    !(suffix = kernels__sprintf("/tree/%s%s%s%s", rev, *path ? "/" : "", epath,
					 recursive ? "?recursive=true" : ""))) {
		rc = KERNELS_ENOMEM;
		goto out;
	}
	rc = api_get_capped(cfg, type, repo_id, suffix, TREE_PAGE_MAX, &r);
	for (pages = 1; rc == 0; pages++) {
		next = take(&r.link_next);
		rc = parse_json(&r, where, &list);
		kernels__hub_response_free(&r);
		if (rc == 0)
			rc = kernels__tree_append_json(list, path, where, max_entries, out);
		json_decref(list);
		list = NULL;
		if (rc < 0 || !next)
			break;
		if (pages >= TREE_MAX_PAGES) {
			rc = BAD("%s: more than %d pages; refusing the listing", where, TREE_MAX_PAGES);
			break;
		}
		rc = request_capped(cfg, next, 0, TREE_PAGE_MAX, &r);
		if (rc == 0 && (r.status < 200 || r.status >= 300)) {
			rc = kernels__hub_status_error(&r, where);
			kernels__hub_response_free(&r);
		}
		free(next);
		next = NULL;
	}
	if (rc == 0)
		rc = kernels__tree_check(out, where);
out:
	free(next);
	free(rev);
	free(epath);
	free(suffix);
	if (rc < 0)
		kernels__tree_free(out);
	return rc;
}

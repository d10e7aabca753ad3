/* Internal: the Hub client (libcurl). Process-wide DNS and TLS-session
 * sharing (curl share handle, mutex-protected), requests with retries/backoff, the
 * Hub's error vocabulary mapped to KERNELS_E* codes with clear messages.
 * Owned by the hub-client stage; other stages only call these. */
#ifndef KERNELS_LIB_HUB_H
#define KERNELS_LIB_HUB_H

#include <curl/curl.h>
#include <jansson.h>
#include <stddef.h>

#include "config.h"
#include "kernels/download.h"
#include "kernels/system.h"
#include "origin.h"
#include "repo.h"
#include "tree.h"

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
	char *content_type;     /* Content-Type */
	long long size;         /* X-Linked-Size or Content-Length; -1 unknown */
	char *body;             /* NUL-terminated body (GET), NULL for HEAD */
	size_t body_len;
} kernels__hub_response;

void kernels__hub_response_free(kernels__hub_response *r);

/* HTTP redirects one request follows, on either transfer path: a longer
 * chain is a loop or a mistake. */
#define KERNELS__MAX_REDIRECTS 10

/* GET (or HEAD when `head`) of `url_or_path`: a path starting with '/' is
 * appended to cfg->endpoint, anything else is a full URL. Sends the token
 * only to the endpoint's host, the User-Agent, and retries 5xx and 429
 * (with Retry-After), resets and stalls up to cfg->max_retries, never a
 * refused connection or a failed DNS lookup, and never past the call's
 * deadline (cfg->deadline_at: every wait and timeout is cut to what is
 * left). Returns 0 when an HTTP answer of any status arrived (check
 * r->status), KERNELS_ENETWORK when the Hub could not be reached (or is
 * remembered as not answering: kernels__hub_down_check) or the deadline ran
 * out, KERNELS_EOFFLINE when cfg->offline.
 * Redirects: same-host redirects are always followed; a redirect to another
 * host (an LFS file's CDN) is followed by GET (without the token) and left
 * in r->location by HEAD. Headers of the first answer that carry metadata
 * (X-Repo-Commit, X-Linked-Etag, X-Linked-Size) are kept across redirects.
 * A GET body is capped at KERNELS__HUB_BODY_MAX bytes (KERNELS_EHTTP). */
#define KERNELS__HUB_BODY_MAX (256u << 20)
int kernels__hub_request(const kernels__config *cfg, const char *url_or_path, int head,
			 kernels__hub_response *r);

/* GET {endpoint}/api/{kernels|models}/{repo_id}{suffix} and parse the JSON
 * body. A non-2xx answer becomes an error through kernels__hub_status_error.
 * `*out` is owned by the caller (json_decref). */
int kernels__hub_api_json(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			  const char *suffix, json_t **out);

/* Asks the Hub which type of repo `repo_id` is: the kernel form of
 * /api/{t}/{repo}/revision/{revision}, then the model form when the Hub
 * says no kernel repo has that name (404 RepoNotFound). *type is the form
 * that knows the repo (kernel when neither answers "no such repo", the
 * revision being missing or a token needed: the stage that asks for it
 * says so). KERNELS_ENOTFOUND when neither form knows the repo; network
 * errors as kernels__hub_request. For download.c's kernels__repo_locate
 * only: every other request takes the type it decided. */
int kernels__hub_repo_type(const kernels__config *cfg, const char *repo_id, const char *revision,
			   kernels__repo_type *type);

/* Maps a non-2xx answer to a KERNELS_E* code and a message naming `what`
 * (e.g. "revision 'v9' of org/x") and what to do (log in, check the name). */
int kernels__hub_status_error(const kernels__hub_response *r, const char *what);

/* Percent-encodes a revision or path segment for a URL ('/' kept when
 * keep_slash). malloc'ed. */
char *kernels__url_escape(const char *s, int keep_slash);

/* ---- Tree listing -------------------------------------------------------- */

/* Lists {path} of `commit`, recursively when `recursive` (GET /api/{t}/{repo}/
 * tree/{commit}/{path}[?recursive=true], following Link rel="next" pages). `path` is "" for the whole repo, or a
 * folder such as "build" or "build/torch27-cxx11-cu126-x86_64-linux". Every
 * entry must lie under `path` and pass kernels__repo_path_check; a
 * malformed or hostile listing is refused (KERNELS_EPARSE / KERNELS_EUNSAFE)
 * as a whole. A missing folder is KERNELS_ENOTFOUND. Pages larger than 8 MiB are
 * refused (the Hub's hold 1,000 entries, about 250 KiB). The result is sorted by
 * path (kernels__tree_check). */
int kernels__hub_tree_list(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			   const char *commit, const char *path, int recursive, kernels__tree *out);
/* The same, refusing (KERNELS_EPARSE) a listing of more than max_entries
 * as soon as a page takes it past them (never more than 1,000,000). */
int kernels__hub_tree_list_max(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			       const char *commit, const char *path, int recursive, size_t max_entries,
			       kernels__tree *out);

/* ---- File transfers (hub_fetch.c) -------------------------------------------- */

/* Fetches the file entries of `tree` (folders are skipped) of repo_id at
 * `commit` into the cache, verifying each (git blob sha1 / LFS sha256),
 * then links them under snapshots/{commit}/. Every path must already have
 * passed the listing's checks (kernels__hub_tree_list does that). `stats`
 * may be NULL. Concurrent (cfg->max_parallel), resumable, lock-protected
 * against other processes; redirects to the CDN followed here. */
int kernels__hub_fetch_tree(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			    const char *commit, const kernels__tree *tree, kernels_download_stats *stats);

/* ---- Building blocks shared by hub.c and hub_fetch.c only ------------------- */

/* Process-wide libcurl initialisation (pthread_once; at load time when
 * libcurl's own is not thread-safe). 0 or an error. */
int kernels__hub_global_init(void);

/* The User-Agent for `cfg`, per call: "[<app>; ]libkernels/<version>;
 * os/<os>; cpu/<cpu>; platform/<cpu>-<os>; file_type/kernel[; <system>]"
 * (app: options.user_agent; system: cfg->ua_system, e.g. "backend/cu130;
 * torch/2.11.0"), or "libkernels/<version>" when telemetry is off.
 * malloc'ed. */
char *kernels__hub_user_agent(const kernels__config *cfg);
/* The system's part of the User-Agent: "backend/cu130; torch/2.11.0;
 * tvm-ffi/0.1; glibc/2.36", into buf. */
void kernels__hub_ua_system(const kernels_system *s, char *buf, size_t size);
/* Records `s`'s part as the call's (cfg->ua_system), under the lock its
 * readers take: a call's transfers may already be running. */
void kernels__hub_ua_system_set(const kernels__config *cfg, const kernels_system *s);

/* The headers of one HTTP answer, parsed by kernels__hub_header_cb
 * (CURLOPT_HEADERFUNCTION with CURLOPT_HEADERDATA = a kernels__hub_headers*).
 * Strings malloc'ed or NULL; ETags normalised. A new status line clears it. */
typedef struct {
	long status;
	char *etag, *linked_etag, *repo_commit, *location, *link_next, *error_code, *error_message;
	char *content_range, *content_type;
	long long content_length, linked_size;  /* -1 when absent */
	long retry_after;                        /* seconds, -1 when absent */
	int complete;                            /* the blank line ending the headers arrived */
} kernels__hub_headers;

size_t kernels__hub_header_cb(char *data, size_t size, size_t nitems, void *headers);
/* Frees the strings and resets the numbers to "absent" (also initialises). */
void kernels__hub_headers_clear(kernels__hub_headers *h);

/* A new easy handle with the shared pool, timeouts, HTTP/2, User-Agent and
 * no automatic redirects. `*headers` receives the header list to free after
 * the transfer (curl_slist_free_all); the token is added only when `url`
 * is on the endpoint's host; `extra_header` (e.g. a Range) may be NULL. */
CURL *kernels__hub_easy(const kernels__config *cfg, const char *url, const char *extra_header,
			struct curl_slist **headers);

/* ---- the call's connections (hub_conn.c) ------------------------------------- */

/* One call's connections: a curl multi handle, made on the call's first
 * request and closed by kernels__hub_conn_free, that every request of the
 * call goes through (cfg->conn), from any of its threads. */
typedef struct kernels__hub_conn kernels__hub_conn;

/* A new, empty one (no multi yet): NULL when out of memory (error set). */
kernels__hub_conn *kernels__hub_conn_new(void);
/* Closes the call's connections. Every transfer must be over. NULL: no-op. */
void kernels__hub_conn_free(kernels__hub_conn *c);
/* Runs easy handle `h` to its end on the call's connections, like
 * curl_easy_perform (which it falls back to when the calling thread holds
 * the multi itself). Thread-safe: any thread of the call may drive the
 * others' transfers while it waits for its own. Sets CURLOPT_PRIVATE. */
CURLcode kernels__hub_conn_perform(kernels__hub_conn *c, CURL *h);
/* The multi, for the calling thread alone until kernels__hub_conn_release
 * (requests of other threads wait): hub_fetch.c runs its own loop on it.
 * NULL when this thread holds it already or it cannot be made. */
CURLM *kernels__hub_conn_hold(kernels__hub_conn *c);
void kernels__hub_conn_release(kernels__hub_conn *c);
/* Counts a finished transfer of `h` (its new connections: CURLINFO_NUM_CONNECTS).
 * NULL `c`: no-op. */
void kernels__hub_conn_done(kernels__hub_conn *c, CURL *h);
/* The call's requests so far and the connections they opened. */
void kernels__hub_conn_counts(kernels__hub_conn *c, unsigned long *requests, unsigned long *connects);
/* A warm-up: easy handle `h` (its header list `hdrs`; both taken over)
 * joins the call's connections and nobody waits for it: it moves on while
 * any request of the call runs, its connection stays in the pool for the
 * transfers after it, and one still running when the call ends is
 * dropped. One per `origin` ("scheme://host:port") at a time: a second is
 * freed. 0, or KERNELS_ENOMEM. */
int kernels__hub_conn_warm(kernels__hub_conn *c, CURL *h, struct curl_slist *hdrs, const char *origin);
/* 1 while a warm-up to `url`'s origin is not over. NULL `c`: 0. */
int kernels__hub_conn_warming(kernels__hub_conn *c, const char *url);
/* For the holder's loop: 1 when message `m` ended a warm-up (it is
 * counted and its handle is gone: the message is not the holder's). */
int kernels__hub_conn_warm_done(kernels__hub_conn *c, CURLMsg *m);
/* Takes one warm-up that is over off the call's list: 1, its origin, the
 * HTTP status it got and, when it failed, curl's words for why (else
 * NULL); 0 when none is left (or `c` is NULL). The caller logs them: the
 * connections know no configuration. */
int kernels__hub_conn_warm_over(kernels__hub_conn *c, char *origin, size_t size, long *status,
				const char **failure);

/* ---- the CDN's connection opened early (hub_warm.c) -------------------------- */

/* The Hub's answers to /resolve/ of an LFS file redirect to its CDN, whose
 * host only that answer names: a cold get opens that connection last, on
 * its critical path. A cache that followed one before remembers, per
 * endpoint, the origin it went to (a hint: {cache}/.locks/.libkernels/cdn/
 * {sha256 of the endpoint, 16 hex}, "{endpoint}\t{origin}\n", written
 * without a flush, ignored when it names another endpoint or does not
 * parse), and a get that will download opens it as soon as the commit is
 * known. */

/* Records `url`, where a /resolve/ answer of cfg->endpoint redirected, as
 * the endpoint's CDN (its origin; nothing when that is the endpoint's own,
 * or the hint says so already). Best effort: sets no error. */
void kernels__hub_cdn_seen(const kernels__config *cfg, const char *url);
/* The origin the hint names for cfg->endpoint, into buf; 0, or -1 when
 * there is none (absent, another endpoint's, malformed). */
int kernels__hub_cdn_hint(const kernels__config *cfg, char *buf, size_t n);
/* A HEAD of "/" at the hinted CDN, sent on the call's connections
 * (kernels__hub_conn_warm) and not waited for: whatever it answers, its
 * connection is open when the first redirect there comes. Nothing offline,
 * without the call's connections or without a hint. Sets no error. */
void kernels__hub_cdn_warm(const kernels__config *cfg);

/* The CA bundle every handle is given: the first of $REQUESTS_CA_BUNDLE,
 * $CURL_CA_BUNDLE, $SSL_CERT_FILE that is set; else $SSL_CERT_DIR, a folder
 * (*from says so; it is then the handles' CA path); else, when libcurl's built-in
 * bundle is missing (a libcurl built on another distribution, as the Python
 * wheel's), the first of the distributions' usual paths that exists; else
 * NULL (libcurl's own default). `*from` says which, for messages. */
const char *kernels__hub_ca_bundle(const char **from);

/* Resolves `location` (absolute or relative) against `base`. malloc'ed or NULL. */
char *kernels__url_resolve(const char *base, const char *location);

/* Whether a curl result / HTTP status deserves another try. */
int kernels__hub_transient_curl(CURLcode rc);
int kernels__hub_transient_status(long status);

/* Milliseconds to wait before retry number `attempt` (0-based): exponential
 * with jitter, or `retry_after_s` (capped) when the server gave one (>= 0). */
long kernels__hub_backoff_ms(int attempt, long retry_after_s);

/* Parses a Retry-After value (delay-seconds or HTTP-date) into seconds; -1 when absent/garbled. */
long kernels__hub_parse_retry_after(const char *value);

/* Strips a weak prefix W/ and the quotes of an ETag (malloc'ed). */
char *kernels__etag_normalize(const char *etag);

#ifdef KERNELS_TESTING
/* The test build only: the base of the exponential backoff in ms (default 250). */
void kernels__hub_set_backoff_base_ms(long ms);
#endif

#endif

/*
 * The local Hub fixture for C tests: a private tests/hub/server.py on
 * 127.0.0.1 (free ports) with its own temporary root.  Every instance is
 * independent, so tests may run in parallel.  See tests/hub/README.md for
 * the endpoints, publish options, fault JSON and log format.
 */
#ifndef KERNELS_TEST_HUB_H
#define KERNELS_TEST_HUB_H

#include "kernels/options.h"

typedef struct test_hub test_hub;

/* Fresh temp root, starts the server (it exits by itself if this process
 * dies), waits until it is ready (20 s at most).  NULL on failure, with a
 * message on stderr. */
test_hub *test_hub_start(void);

/* "http://127.0.0.1:PORT" of the Hub, of the CDN that serves LFS content,
 * and the server's root folder.  Owned by the hub. */
const char *test_hub_endpoint(const test_hub *hub);
const char *test_hub_cdn(const test_hub *hub);
const char *test_hub_root(const test_hub *hub);

/* Runs `publish.py --root <root> <args>`, the args formatted from fmt and
 * passed through the shell (quote paths with spaces), e.g.
 *   test_hub_publish(h, "--repo org/k --text README.md=hi --tag v1.0.0 --branch main --branch v1");
 * 0 on success.  The commit id it printed is then test_hub_last_commit(). */
int test_hub_publish(test_hub *hub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Publishes a JSON list of steps (or one step object) with
 * `publish.py --spec`, no shell quoting involved, e.g.
 *   [{"repo": "org/k", "files": {"a.py": "x = 1", "w.bin": {"random": 2000000, "seed": 1}},
 *     "tags": ["v1.0.0"], "branches": ["main", "v1"]}]
 * Keys are publish()'s keyword arguments (see tests/hub/README.md).  0 on
 * success; test_hub_last_commit() is then the last step's commit. */
int test_hub_publish_json(test_hub *hub, const char *json);
/* 40-hex commit id of the last successful publish that made or targeted a
 * commit; "" before.  Owned by the hub, overwritten by the next publish. */
const char *test_hub_last_commit(const test_hub *hub);

/* POST /_fixture/faults with a JSON object (or array of them), e.g.
 *   {"path": "/resolve/", "mode": "503", "count": 2}.  0 on success. */
int test_hub_fault(test_hub *hub, const char *json);
/* DELETE /_fixture/faults: drops every pending fault. */
void test_hub_faults_clear(test_hub *hub);
/* POST /_fixture/config, e.g. {"page_size": 3}.  0 on success. */
int test_hub_config(test_hub *hub, const char *json);

/* The request log as JSON text (an array of entries, oldest first);
 * malloc'ed, the caller frees it.  NULL on failure. */
char *test_hub_log(test_hub *hub);
/* Number of log entries with this method (NULL: any) whose path contains
 * path_substring (NULL: any).  -1 on failure. */
int test_hub_log_count(test_hub *hub, const char *method, const char *path_substring);
/* Like test_hub_log_count, also filtered on the listener ("hub", "cdn" or
 * NULL: any), the status (0: any) and whether an Authorization header was
 * sent (1 sent, 0 not sent, -1 any).  -1 on failure. */
int test_hub_log_count_ex(test_hub *hub, const char *method, const char *path_substring, const char *listener,
			  int status, int authorization);
/* Number of distinct TCP connections (the log's "conn") that requests to
 * `listener` ("hub", "cdn" or NULL: both) came over.  -1 on failure. */
int test_hub_log_connections(test_hub *hub, const char *listener);
/* DELETE /_fixture/log. */
void test_hub_log_clear(test_hub *hub);

/* Default options aimed at the hub, with `cache` as the cache folder, not
 * offline, and `sys` (may be NULL: detect) as the system. */
void test_hub_options(kernels_options *o, const test_hub *hub, const char *cache, const kernels_system *sys);

/* "http://127.0.0.1:PORT" where nothing listens (a port bound, then
 * closed): connections to it are refused. malloc'ed, the caller frees it;
 * NULL on failure. */
char *test_dead_endpoint(void);

/* Kills the server, waits for it, removes the temp root, frees the hub.
 * NULL is a no-op. */
void test_hub_stop(test_hub *hub);

#endif

/* The fetch stage against the local Hub fixture: cache layout byte for byte,
 * no second download, no helper thread to be had, offline, fault modes,
 * hostile listings, a SIGKILLed download resumed, 16 processes sharing one
 * cache, a cache shared by two users. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"
#include "../lib/cache.h"
#include "../lib/download.h"
#include "hub.h"
#include "test_hub.h" /* the fixture */
#include "test_world.h"
#include "fsync_log.h"
#include "thread_fail.h"
#include "testutil.h"

#define V1 "torch27-cxx11-cu126-x86_64-linux"
#define V2 "torch-universal"
#define BIG_SIZE (3 * 1024 * 1024 + 17)
#define HUGE_SIZE (12 * 1024 * 1024)

static const char *self_exe;

/* The files of variant V1, with their bytes, published as "org/k". */
typedef struct {
	const char *path;
	unsigned char *data;
	size_t len;
} file;

static file files[8];
static size_t n_files;

/* The world (tests/support/test_world.h): the Hub, the published tree in
 * its tmp folder, a fresh cache per test, and its commits by slot. */
static test_world W;
enum {
	K,   /* org/k */
	M,   /* org/m, a model-type repo */
	HUGE /* org/huge: one large LFS file */
};

static unsigned char *random_bytes(size_t n, unsigned int seed)
{
	unsigned char *p = malloc(n ? n : 1);
	size_t i;
	unsigned long long x = seed * 2654435761ULL + 1;

	for (i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		p[i] = (unsigned char)(x >> 24);
	}
	return p;
}

static void add_file(const char *path, const void *data, size_t len)
{
	file *f = &files[n_files++];
	f->path = path;
	f->data = malloc(len ? len : 1);
	memcpy(f->data, data, len);
	f->len = len;
}

/* git blob sha1 or sha256 (lfs) of a buffer, hex. */
static void hash_hex(const void *data, size_t len, int lfs, char *out)
{
	unsigned char d[EVP_MAX_MD_SIZE];
	unsigned int n;
	char hdr[64];
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	static const char hx[] = "0123456789abcdef";

	EVP_DigestInit_ex(c, lfs ? EVP_sha256() : EVP_sha1(), NULL);
	if (!lfs) {
		int k = snprintf(hdr, sizeof(hdr), "blob %zu", len);
		EVP_DigestUpdate(c, hdr, (size_t)k + 1);
	}
	EVP_DigestUpdate(c, data, len);
	EVP_DigestFinal_ex(c, d, &n);
	EVP_MD_CTX_free(c);
	for (unsigned int i = 0; i < n; i++) {
		out[2 * i] = hx[d[i] >> 4];
		out[2 * i + 1] = hx[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static int is_lfs(const file *f)
{
	return f->len > 1024 * 1024;
}

static void etag_of(const file *f, char *out)
{
	hash_hex(f->data, f->len, is_lfs(f), out);
}

static int group_setup(void **state)
{
	test_world *e = &W;
	unsigned char *big, *mid, *huge;
	static const char init[] = "from ._ops import ops\n";
	static const char meta[] = "{\"id\": \"_k_abc\", \"name\": \"k\", \"version\": 1}\n";
	char path[PATH_MAX];
	size_t i;

	if (test_world_start(e, "dl") != 0)
		return -1;
	big = random_bytes(BIG_SIZE, 7), mid = random_bytes(5000, 3), huge = random_bytes(HUGE_SIZE, 9);
	add_file("build/" V1 "/metadata.json", meta, strlen(meta));
	add_file("build/" V1 "/__init__.py", init, strlen(init));
	add_file("build/" V1 "/k/__init__.py", init, strlen(init)); /* same blob */
	add_file("build/" V1 "/_ops.py", "ops = None\n", 11);
	add_file("build/" V1 "/_k_abc.abi3.so", big, BIG_SIZE);    /* LFS: 302 to the CDN */
	add_file("build/" V1 "/sub/deep/data.bin", mid, 5000);
	add_file("build/" V1 "/empty.txt", "", 0);
	free(big);
	free(mid);

	for (i = 0; i < n_files; i++) {
		snprintf(path, sizeof(path), "%s/%s", e->tmp, files[i].path);
		assert_int_equal(test_write_file(path, files[i].data, files[i].len), 0);
	}
	snprintf(path, sizeof(path), "%s/build/" V2 "/__init__.py", e->tmp);
	test_write_file(path, "v2\n", 3);
	snprintf(path, sizeof(path), "%s/README.md", e->tmp);
	test_write_file(path, "# k\n", 4);

	assert_int_equal(test_world_publish(e, K, "--repo org/k --dir '%s' --branch main", e->tmp), 0);
	assert_int_equal(test_world_publish(e, M, "--repo org/m --type model --dir '%s' --branch main", e->tmp), 0);
	snprintf(path, sizeof(path), "%s/huge.bin", e->tmp);
	test_write_file(path, huge, HUGE_SIZE);
	free(huge);
	assert_int_equal(test_world_publish(e, HUGE, "--repo org/huge --file 'build/" V1 "/huge.bin=%s' --branch main",
					    path), 0);
	unlink(path);
	kernels__hub_set_backoff_base_ms(20);
	*state = e;
	return 0;
}

static int group_teardown(void **state)
{
	size_t i;

	for (i = 0; i < n_files; i++)
		free(files[i].data);
	return test_world_teardown(state);
}

/* A fresh cache, the request log and the faults cleared. */
static int setup(void **state)
{
	test_world *e = *state;

	test_world_fresh_cache(e);
	test_hub_faults_clear(e->hub);
	return 0;
}

static void options(test_world *e, kernels_options *o)
{
	test_world_options(e, o, NULL);
	o->max_retries = 3;
	o->timeout_ms = 5000;
}

static int download(test_world *e, const kernels_options *o, const char *repo, const char *commit, const char *variant,
		    kernels_download_stats *stats)
{
	const char *vs[1] = { variant };
	kernels_snapshot *s = NULL;
	int rc = kernels_download(&s, repo, commit, vs, 1, o);

	if (rc == 0) {
		assert_non_null(kernels_snapshot_path(s));
		assert_string_equal(kernels_snapshot_commit(s), commit);
		if (stats)
			kernels_snapshot_stats(stats, s);
	} else {
		assert_null(s);
	}
	kernels_snapshot_free(s);
	(void)e;
	return rc;
}

/* Every file of V1 present in `repo_folder` in huggingface_hub's cache layout:
 * blobs/{etag}, and snapshots/{commit}/{path} relative links to them. */
static void check_layout(test_world *e, const char *repo_folder, const char *commit)
{
	char snap[PATH_MAX], blob[PATH_MAX], target[PATH_MAX], expect[PATH_MAX], etag[65];
	size_t i, len;

	for (i = 0; i < n_files; i++) {
		const file *f = &files[i];
		const char *p;
		ssize_t n;
		char *data;
		int depth = 0;

		etag_of(f, etag);
		snprintf(snap, sizeof(snap), "%s/%s/snapshots/%s/%s", e->cache, repo_folder, commit, f->path);
		snprintf(blob, sizeof(blob), "%s/%s/blobs/%s", e->cache, repo_folder, etag);
		n = readlink(snap, target, sizeof(target) - 1);
		assert_true(n > 0);
		target[n] = '\0';
		for (p = f->path; (p = strchr(p, '/')); p++)
			depth++;
		expect[0] = '\0';
		for (int k = 0; k < depth + 2; k++)
			strcat(expect, "../");
		strcat(expect, "blobs/");
		strcat(expect, etag);
		assert_string_equal(target, expect);
		data = test_read_file(blob, &len);
		assert_non_null(data);
		assert_int_equal(len, f->len);
		assert_memory_equal(data, f->data, f->len);
		free(data);
		data = test_read_file(snap, &len);   /* through the link */
		assert_non_null(data);
		assert_int_equal(len, f->len);
		free(data);
	}
	/* Nothing else: no README, no other variant, no temporary files. */
	snprintf(snap, sizeof(snap), "%s/%s/snapshots/%s/README.md", e->cache, repo_folder, commit);
	assert_false(test_exists(snap));
	snprintf(snap, sizeof(snap), "%s/%s/snapshots/%s/build/" V2, e->cache, repo_folder, commit);
	assert_false(test_exists(snap));
	assert_int_equal(test_system("test -z \"$(find '%s' -name '*.incomplete' -o -name '*.tmp-*')\"", e->cache), 0);
}

/* Log entries matching, as a JSON array (caller decrefs). */
static json_t *log_json(test_world *e)
{
	char *text = test_hub_log(e->hub);
	json_t *j = json_loads(text, 0, NULL);
	free(text);
	assert_non_null(j);
	return j;
}

static void test_fetch_layout(void **state)
{
	test_world *e = *state;
	kernels_options o;
	kernels_download_stats st = KERNELS_DOWNLOAD_STATS_INIT;
	json_t *log, *it;
	size_t i;
	int cdn = 0;
	char url[256];

	options(e, &o);
	o.token = "hf_test_token";
	assert_int_equal(test_hub_config(e->hub, "{\"page_size\": 3}"), 0); /* force Link paging */
	fsync_log_clear();
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, &st), 0);
	test_hub_config(e->hub, "{\"page_size\": 50}");
	check_layout(e, "kernels--org--k", e->commit[K]);
	assert_int_equal(st.files, n_files);
	assert_int_equal(st.blobs_downloaded, n_files - 1); /* the two __init__.py share a blob */
	/* Every blob flushed under its temporary name, before its rename (the
	 * flushes of a call go together, not one per blob as it arrives), and
	 * blobs/ after the renames. */
	{
		char blobs[PATH_MAX], blobs_in[PATH_MAX + 1];
		snprintf(blobs, sizeof(blobs), "%s/kernels--org--k/blobs", e->cache);
		snprintf(blobs_in, sizeof(blobs_in), "%s/", blobs);
		assert_int_equal(fsync_log_count(blobs_in, ".incomplete"), (int)st.blobs_downloaded);
		assert_int_equal(fsync_log_count(blobs_in, NULL), (int)st.blobs_downloaded);
		assert_true(fsync_log_count(blobs, NULL) > fsync_log_count(blobs_in, NULL));
	}
	/* The LFS file's download receipt: flushed under its temporary name (so
	 * before its rename, beside blobs/'s flush), and in place when the call
	 * returns. */
	{
		char receipts[PATH_MAX];
		snprintf(receipts, sizeof(receipts), "%s/kernels--org--k/.libkernels/blobs/", e->cache);
		assert_int_equal(fsync_log_count(receipts, ".json.tmp-"), 1);
		assert_int_equal(fsync_log_count(receipts, NULL), 1);
		assert_int_equal(test_system("test $(ls -A '%s' | grep -Ec '^[0-9a-f]{64}[.]json$') = 1 && "
					     "test $(ls -A '%s' | wc -l) = 1", receipts, receipts), 0);
	}
	assert_int_equal(st.files_cached, 0);
	assert_true(st.max_parallel >= 2);

	/* One GET per blob (an empty file needs none: its hash is known); the LFS
	 * file came from the CDN without the token. */
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/resolve/"), (int)n_files - 2);
	assert_true(test_hub_log_count(e->hub, "GET", "/tree/") >= 3);
	log = log_json(e);
	json_array_foreach(log, i, it) {
		const char *listener = json_string_value(json_object_get(it, "listener"));
		const char *encoding = json_string_value(json_object_get(it, "accept_encoding"));
		int auth = json_is_true(json_object_get(it, "authorization"));
		/* A file's bytes uncompressed, as they are hashed; an API answer
		 * may come compressed. */
		if (strstr(json_string_value(json_object_get(it, "path")), "/api/")) {
			assert_non_null(encoding);
		} else {
			assert_non_null(encoding);
			assert_string_equal(encoding, "identity");
		}
		if (!strcmp(listener, "cdn")) {
			cdn++;
			assert_false(auth);
		} else {
			assert_true(auth);
		}
		/* Only build/V1/ was asked for. */
		assert_null(strstr(json_string_value(json_object_get(it, "path")), "README"));
		assert_null(strstr(json_string_value(json_object_get(it, "path")), V2));
	}
	assert_int_equal(cdn, 1);
	json_decref(log);

	/* A second fetch lists the tree but transfers no blob. */
	test_hub_log_clear(e->hub);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, &st), 0);
	assert_int_equal(test_hub_log_count(e->hub, NULL, "/resolve/"), 0);
	assert_int_equal(test_hub_log_count(e->hub, NULL, "/lfs/"), 0);
	assert_int_equal(st.blobs_downloaded, 0);
	assert_int_equal(st.files_cached, n_files);

	/* Offline: not one request, and the same answer. */
	test_hub_log_clear(e->hub);
	o.offline = 1;
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	assert_int_equal(test_hub_log_count(e->hub, NULL, NULL), 0);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V2, NULL), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), V2));
	assert_non_null(strstr(kernels_error_last(), "download"));
	assert_int_equal(test_hub_log_count(e->hub, NULL, NULL), 0);

	/* Offline with a blob gone: the broken file is named. */
	{
		char etag[65], blob[PATH_MAX];
		etag_of(&files[5], etag);
		snprintf(blob, sizeof(blob), "%s/kernels--org--k/blobs/%s", e->cache, etag);
		assert_int_equal(unlink(blob), 0);
		assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EOFFLINE);
		assert_non_null(strstr(kernels_error_last(), "data.bin"));
		/* Online again, only that blob is fetched. */
		o.offline = 0;
		test_hub_log_clear(e->hub);
		assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, &st), 0);
		assert_int_equal(test_hub_log_count(e->hub, "GET", "/resolve/"), 1);
		assert_int_equal(st.blobs_downloaded, 1);
		check_layout(e, "kernels--org--k", e->commit[K]);
	}
	snprintf(url, sizeof(url), "%s", e->cache);
}

/* The LFS file is asked for first: its answer is a redirect to the CDN, a
 * second hop the others do not need, so it must not wait behind them for
 * a connection. One transfer at a time makes the order the fixture sees
 * the order the requests were started in. */
/* Where no thread can be had (a pids limit), the large module's flush,
 * which would begin on a helper as soon as it is right, joins the call's
 * batch in line: every blob still flushed under its temporary name before
 * it takes its own, and the layout whole. In a child, so that the refusal
 * and the flushes counted are its own. */
enum { FETCHED = 1, ALL_FLUSHED_FIRST = 2, THREADS_REFUSED = 4 };

static int fetch_in_child_without_threads(test_world *e)
{
	pid_t pid = fork();
	int status = 0;

	assert_true(pid >= 0);
	if (pid == 0) {
		const char *vs[1] = { V1 };
		kernels_download_stats st = KERNELS_DOWNLOAD_STATS_INIT;
		kernels_snapshot *s = NULL;
		kernels_options o;
		char blobs_in[PATH_MAX];
		int out = 0, n;

		options(e, &o);
		snprintf(blobs_in, sizeof(blobs_in), "%s/kernels--org--k/blobs/", e->cache);
		fsync_log_clear();
		thread_fail_refuse(1);
		if (kernels_download(&s, "org/k", e->commit[K], vs, 1, &o) == 0) {
			out |= FETCHED;
			kernels_snapshot_stats(&st, s);
		}
		n = fsync_log_count(blobs_in, ".incomplete");
		if (n == (int)n_files - 1 && n == (int)st.blobs_downloaded && fsync_log_count(blobs_in, NULL) == n)
			out |= ALL_FLUSHED_FIRST;
		if (thread_fail_refused() > 0)
			out |= THREADS_REFUSED;
		kernels_snapshot_free(s);
		_exit(out);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_fetch_without_a_helper(void **state)
{
	test_world *e = *state;

	assert_true(BIG_SIZE >= 1024 * 1024); /* large enough for a flush of its own */
	assert_int_equal(fetch_in_child_without_threads(e), FETCHED | ALL_FLUSHED_FIRST | THREADS_REFUSED);
	check_layout(e, "kernels--org--k", e->commit[K]);
}

static void test_lfs_file_asked_first(void **state)
{
	test_world *e = *state;
	kernels_options o;
	json_t *log, *it;
	const char *first = NULL;
	size_t i;

	options(e, &o);
	o.max_parallel = 1;
	test_hub_log_clear(e->hub);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	log = log_json(e);
	json_array_foreach(log, i, it) {
		const char *path = json_string_value(json_object_get(it, "path"));
		if (strstr(path, "/resolve/") || !strcmp(json_string_value(json_object_get(it, "listener")), "cdn")) {
			first = path;
			break;
		}
	}
	assert_non_null(first);
	assert_non_null(strstr(first, "/resolve/"));
	assert_non_null(strstr(first, "/_k_abc.abi3.so"));
	json_decref(log);
}

static void test_model_repo_and_variants(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char **names = NULL;
	size_t n = 0;

	options(e, &o);
	assert_int_equal(download(e, &o, "org/m", e->commit[M], V1, NULL), 0);
	check_layout(e, "models--org--m", e->commit[M]);
	assert_int_equal(kernels_variants_list(&names, &n, "org/m", e->commit[M], &o), 0);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], V2);
	assert_string_equal(names[1], V1);
	kernels_free(names);
	/* Offline lists what the snapshot holds. */
	o.offline = 1;
	test_hub_log_clear(e->hub);
	assert_int_equal(kernels_variants_list(&names, &n, "org/m", e->commit[M], &o), 0);
	assert_int_equal(n, 1);
	assert_string_equal(names[0], V1);
	kernels_free(names);
	assert_int_equal(kernels_variants_list(&names, &n, "org/k", e->commit[K], &o), KERNELS_EOFFLINE);
	assert_int_equal(test_hub_log_count(e->hub, NULL, NULL), 0);
	/* A variant the commit lacks names those it has. */
	o.offline = 0;
	assert_int_equal(download(e, &o, "org/k", e->commit[K], "torch99-cpu-x86_64-linux", NULL), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), V1));
	assert_int_equal(download(e, &o, "org/k", e->commit[K], "../x", NULL), KERNELS_EINVAL);
	assert_int_equal(download(e, &o, "org/k", "main", V1, NULL), KERNELS_EINVAL);
	assert_int_equal(download(e, &o, "org/nope", e->commit[K], V1, NULL), KERNELS_ENOTFOUND);
}

/* kernels_download and kernels_variants_list walk the endpoints
 * (kernels_options.endpoints, KERNELS_ENDPOINTS) as kernels_get does: a
 * dead first endpoint, or a mirror without the repo, hands over to the
 * next, whose request log shows the work done. */
static void test_endpoints_in_turn(void **state)
{
	test_world *e = *state;
	kernels_options o;
	test_hub *empty;
	char *dead = test_dead_endpoint(), *list, **names = NULL;
	size_t n = 0;

	assert_non_null(dead);
	options(e, &o);
	assert_true(asprintf(&list, "%s,%s", dead, test_hub_endpoint(e->hub)) > 0);
	o.endpoints = list;
	if (download(e, &o, "org/k", e->commit[K], V1, NULL) < 0)
		fail_msg("a dead first endpoint: %s", kernels_error_last());
	check_layout(e, "kernels--org--k", e->commit[K]);
	assert_true(test_hub_log_count(e->hub, "GET", "/tree/") >= 1);
	assert_true(test_hub_log_count(e->hub, "GET", "/org/k/resolve/") >= 1);
	free(list);

	/* A mirror that lacks the repo: it is asked, then the Hub answers. */
	assert_non_null(empty = test_hub_start());
	assert_true(asprintf(&list, "%s,%s", test_hub_endpoint(empty), test_hub_endpoint(e->hub)) > 0);
	o.endpoints = list;
	test_hub_log_clear(e->hub);
	assert_int_equal(kernels_variants_list(&names, &n, "org/m", e->commit[M], &o), 0);
	assert_int_equal(n, 2);
	kernels_free(names);
	assert_true(test_hub_log_count(empty, "GET", "/org/m/revision/") >= 1);
	assert_true(test_hub_log_count(e->hub, "GET", "/api/models/org/m/tree/") >= 1);
	test_hub_log_clear(e->hub);
	if (download(e, &o, "org/m", e->commit[M], V1, NULL) < 0)
		fail_msg("a mirror without the repo: %s", kernels_error_last());
	check_layout(e, "models--org--m", e->commit[M]);
	assert_true(test_hub_log_count(e->hub, "GET", "/org/m/resolve/") >= 1);

	/* Every endpoint fails: each said once, in order. */
	free(list);
	assert_true(asprintf(&list, "%s,%s", dead, test_hub_endpoint(empty)) > 0);
	o.endpoints = list;
	assert_int_equal(download(e, &o, "org/nowhere", e->commit[K], V1, NULL), KERNELS_ENOTFOUND);
	assert_non_null(strstr(kernels_error_last(), dead));
	assert_non_null(strstr(kernels_error_last(), test_hub_endpoint(empty)));
	test_hub_stop(empty);
	kernels__hub_down_forget_all();
	free(list);
	free(dead);
}

/* The HEAD requests for a path ending in `name` that asked for the file
 * uncompressed (Accept-Encoding: identity), or -1 if another one did not. */
static int heads_asking_identity(test_world *e, const char *name)
{
	json_t *log = log_json(e), *it;
	size_t i, n = strlen(name);
	int count = 0;

	json_array_foreach(log, i, it) {
		const char *path = json_string_value(json_object_get(it, "path"));
		const char *enc = json_string_value(json_object_get(it, "accept_encoding"));
		if (strcmp(json_string_value(json_object_get(it, "method")), "HEAD") || strlen(path) < n ||
		    strcmp(path + strlen(path) - n, name))
			continue;
		if (!enc || strcmp(enc, "identity")) {
			count = -1;
			break;
		}
		count++;
	}
	json_decref(log);
	return count;
}

static void test_download_file(void **state)
{
	test_world *e = *state;
	kernels__config cfg;
	kernels_options o;
	kernels__repo_type t = KERNELS__REPO_KERNEL;
	char *local = NULL, *data, marker[PATH_MAX];
	size_t len;

	options(e, &o);
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	/* A file of build/ whose listing the Hub's answer contradicts (another
	 * hash): refused, and the listing is not kept, so the next call lists
	 * again and gets it. */
	assert_int_equal(test_hub_fault(e->hub, "{\"path\": \"/tree/\", \"mode\": \"200\", \"body\": [{\"type\": "
					 "\"file\", \"oid\": \"2222222222222222222222222222222222222222\", \"size\": "
					 "44, \"path\": \"build/" V1 "/metadata.json\"}]}"), 0);
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], files[0].path, &local, 0),
			 KERNELS_EINTEGRITY);
	assert_null(local);
	assert_int_equal(test_system("test ! -e '%s/kernels--org--k/.libkernels/trees/%s/build.tsv'", e->cache,
				     e->commit[K]), 0);
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], files[0].path, &local, 0), 0);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/tree/"), 2);
	free(local);
	/* An LFS file through its redirect, verified and linked. */
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], files[4].path, &local, 0), 0);
	data = test_read_file(local, &len);
	assert_int_equal(len, files[4].len);
	assert_memory_equal(data, files[4].data, len);
	free(data);
	free(local);
	/* Known now: no request at all, online or offline. */
	test_hub_log_clear(e->hub);
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], files[4].path, &local, 0), 0);
	free(local);
	cfg.offline = 1;
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], files[4].path, &local, 0), 0);
	free(local);
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], "kernel-status.toml", &local, 0),
			 KERNELS_EOFFLINE);
	assert_int_equal(test_hub_log_count(e->hub, NULL, NULL), 0);
	/* A file the commit lacks: asked once, then remembered like huggingface_hub does. */
	cfg.offline = 0;
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], "kernel-status.toml", &local, 0),
			 KERNELS_ENOTFOUND);
	assert_null(local);
	snprintf(marker, sizeof(marker), "%s/kernels--org--k/.no_exist/%s/kernel-status.toml", e->cache, e->commit[K]);
	assert_true(test_exists(marker));
	assert_int_equal(test_hub_log_count(e->hub, "HEAD", "kernel-status.toml"), 1);
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], "kernel-status.toml", &local, 0),
			 KERNELS_ENOTFOUND);
	cfg.offline = 1;
	assert_int_equal(kernels__download_file(&cfg, t, "org/k", e->commit[K], "kernel-status.toml", &local, 0),
			 KERNELS_ENOTFOUND);
	assert_int_equal(test_hub_log_count(e->hub, NULL, NULL), 1);
	/* Model repos are found too (the one decision, then by value). */
	cfg.offline = 0;
	t = KERNELS__REPO_KERNEL;
	assert_int_equal(kernels__repo_locate(&cfg, "org/m", e->commit[M], &t), 0);
	assert_int_equal(t, KERNELS__REPO_MODEL);
	assert_int_equal(kernels__download_file(&cfg, t, "org/m", e->commit[M], "README.md", &local, 0), 0);
	assert_int_equal(heads_asking_identity(e, "/README.md"), 1); /* its size is the file's */
	data = test_read_file(local, &len);
	assert_int_equal(len, 4);
	free(data);
	free(local);
	/* A variant of which only metadata.json was fetched (as a lock or the
	 * arch check leaves one) is not in the cache offline. */
	assert_int_equal(kernels__download_file(&cfg, t, "org/m", e->commit[M], files[0].path, &local, 0), 0);
	free(local);
	o.offline = 1;
	assert_int_equal(download(e, &o, "org/m", e->commit[M], V1, NULL), KERNELS_EOFFLINE);
	assert_non_null(strstr(kernels_error_last(), "only its metadata.json"));
	kernels__config_free(&cfg);
}

/* ---- faults --------------------------------------------------------------------------- */

static void fault(test_world *e, const char *json)
{
	assert_int_equal(test_hub_fault(e->hub, json), 0);
}

static int count_range_requests(test_world *e, const char *listener)
{
	json_t *log = log_json(e), *it;
	size_t i;
	int n = 0;

	json_array_foreach(log, i, it) {
		if (json_is_string(json_object_get(it, "range")) &&
		    !strcmp(json_string_value(json_object_get(it, "listener")), listener))
			n++;
	}
	json_decref(log);
	return n;
}

static void test_fault_5xx_and_429(void **state)
{
	test_world *e = *state;
	kernels_options o;
	kernels_download_stats st = KERNELS_DOWNLOAD_STATS_INIT;

	options(e, &o);
	o.log_cb = test_log_all;
	test_logged_clear();
	fault(e, "{\"path\": \"/resolve/\", \"regex\": \"metadata\\\\.json$\", \"mode\": \"500\", \"count\": 2}");
	fault(e, "{\"path\": \"_ops.py\", \"mode\": \"429\", \"retry_after\": 1}");
	fault(e, "{\"listener\": \"cdn\", \"path\": \"/lfs/\", \"mode\": \"503\"}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, &st), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "metadata.json"), 3);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "_ops.py"), 2);
	assert_true(st.retries >= 4);
	/* Retry-After: 1 is the wait announced (not the short test backoff). */
	if (!strstr(test_logged, "_ops.py: answered 429; retrying in 1050 ms"))
		fail_msg("no wait of the server's Retry-After in the log:\n%s", test_logged);
}

static void test_fault_reset_and_truncate_resume(void **state)
{
	test_world *e = *state;
	kernels_options o;

	options(e, &o);
	fault(e, "{\"listener\": \"cdn\", \"path\": \"/lfs/\", \"mode\": \"reset\", \"after_bytes\": 1000000}");
	fault(e, "{\"listener\": \"cdn\", \"path\": \"/lfs/\", \"mode\": \"truncate\", \"after_bytes\": 2000000}");
	fault(e, "{\"path\": \"data.bin\", \"mode\": \"truncate\", \"after_bytes\": 1000}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	/* Three CDN requests; the second and third resumed with a Range. */
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/lfs/"), 3);
	assert_true(count_range_requests(e, "cdn") >= 2);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "data.bin"), 2);
	/* Hub: the LFS file's 2nd and 3rd resolve, and data.bin's 2nd, carried the Range. */
	assert_int_equal(count_range_requests(e, "hub"), 3);
}

static void test_fault_wrong_bytes(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char path[PATH_MAX];

	options(e, &o);
	/* Once: the damaged bytes are thrown away and fetched again. */
	fault(e, "{\"listener\": \"cdn\", \"path\": \"/lfs/\", \"mode\": \"wrong_bytes\", \"after_bytes\": 5000}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/lfs/"), 2);

	/* Always: a clear error, and the cache holds nothing of that file nor any link. */
	test_rmtree(e->cache);
	mkdir(e->cache, 0755);
	fault(e, "{\"path\": \"data.bin\", \"mode\": \"wrong_bytes\", \"count\": -1}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EINTEGRITY);
	assert_non_null(strstr(kernels_error_last(), "sub/deep/data.bin"));
	{
		char etag[65];
		etag_of(&files[5], etag);
		assert_non_null(strstr(kernels_error_last(), etag));
		snprintf(path, sizeof(path), "%s/kernels--org--k/blobs/%s", e->cache, etag);
		assert_false(test_exists(path));
		strcat(path, ".incomplete");
		assert_false(test_exists(path));
	}
	snprintf(path, sizeof(path), "%s/kernels--org--k/snapshots", e->cache);
	assert_false(test_exists(path));
	test_hub_faults_clear(e->hub);
}

/* A flush that fails after every write succeeded (a full NFS share, a
 * spent quota, delayed allocation, a failing disk): `f`'s download fails
 * naming it, the cause and what to do, and leaves neither its blob nor its
 * .incomplete, whose bytes may not be on the disk: the next call starts it
 * over instead of resuming from them (a hash warning, or worse). */
static void flush_fails(test_world *e, const file *f, int err, const char *advice)
{
	kernels_options o;
	char etag[65], part[80], path[PATH_MAX];

	options(e, &o);
	o.log_cb = test_log_warnings;
	test_logged_clear();
	etag_of(f, etag);
	snprintf(part, sizeof(part), "/%s.incomplete", etag);
	fsync_log_fail(part, err, 1, 1);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EIO);
	fsync_log_fail(NULL, 0, 0, 0);
	assert_non_null(strstr(kernels_error_last(), f->path + strlen("build/" V1 "/")));
	assert_non_null(strstr(kernels_error_last(), strerror(err)));
	assert_non_null(strstr(kernels_error_last(), advice));
	snprintf(path, sizeof(path), "%s/kernels--org--k/blobs/%s", e->cache, etag);
	assert_false(test_exists(path));
	strcat(path, ".incomplete");
	assert_false(test_exists(path));

	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	assert_null(strstr(test_logged, "hash to"));
}

static void test_flush_fails_disk_full(void **state)
{
	flush_fails(*state, &files[5], ENOSPC, "HF_HUB_CACHE"); /* small: flushed with the batch */
}

static void test_flush_fails_io_error(void **state)
{
	flush_fails(*state, &files[4], EIO, "check the disk"); /* large: flushed early, on a thread */
}

static void test_fault_slow(void **state)
{
	test_world *e = *state;
	kernels_options o;

	options(e, &o);
	o.timeout_ms = 3000;
	/* Stalls longer than the timeout are cut and retried; a short delay is
	 * just waited out. Both sides of the timeout are far from it (0.1 s and
	 * 6 s against 3 s), so a busy machine cannot move either across. */
	fault(e, "{\"listener\": \"cdn\", \"path\": \"/lfs/\", \"mode\": \"slow\", \"delay\": 6}");
	fault(e, "{\"path\": \"_ops.py\", \"mode\": \"slow\", \"delay\": 0.1}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	/* The stalled request is logged when the fixture wakes up from its
	 * delay (60 s: a hang guard). */
	for (int waited = 0; test_hub_log_count(e->hub, "GET", "/lfs/") < 2 && waited < 60000; waited += 50)
		usleep(50000);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/lfs/"), 2);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "_ops.py"), 1);
}

static long long file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 ? (long long)st.st_size : -1;
}

/* A CDN that sends part of the file and then nothing, on every attempt:
 * the call gives up when the silence summed over the attempts reaches the
 * stall budget (set small here), not after max_retries of them; the
 * message names the host, the file, how far it got and the setting; the
 * bytes are kept, never published, and the next call resumes after them. */
static void test_frozen_cdn_spends_the_stall_budget(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char etag[65], path[PATH_MAX], host[64], got[64];
	const char *msg;
	long long kept;
	int ranged;

	options(e, &o);
	o.timeout_ms = 1000;       /* each attempt stalls out after 1 s */
	o.max_retries = 50;        /* so that only the budget can end it */
	o.stall_budget_ms = 2500;  /* three of them (the option wins over the variable) */
	setenv("KERNELS_STALL_BUDGET_MS", "600000", 1);
	fault(e, "{\"listener\": \"cdn\", \"path\": \"/lfs/\", \"mode\": \"hang\", \"after_bytes\": 65536, "
		 "\"count\": -1}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_ENETWORK);
	unsetenv("KERNELS_STALL_BUDGET_MS");
	msg = kernels_error_last();
	etag_of(&files[4], etag);
	snprintf(path, sizeof(path), "%s/kernels--org--k/blobs/%s", e->cache, etag);
	assert_false(test_exists(path));                          /* never published */
	strcat(path, ".incomplete");
	kept = file_size(path);                                   /* kept for the next call */
	assert_true(kept >= 65536 && kept % 65536 == 0);         /* what each attempt sent */
	snprintf(host, sizeof(host), "%s stopped sending", test_hub_cdn(e->hub));
	snprintf(got, sizeof(got), "%lld of %zu bytes are kept", kept, files[4].len);
	if (!strstr(msg, "_k_abc.abi3.so") || !strstr(msg, host) || !strstr(msg, "stall budget of 2500 ms") ||
	    !strstr(msg, "stall_budget_ms") || !strstr(msg, "KERNELS_STALL_BUDGET_MS") || !strstr(msg, got))
		fail_msg("the stall message lacks the file, host, progress or setting: %s", msg);
	/* More than one attempt, and far fewer than max_retries allows. */
	assert_true(test_hub_log_count(e->hub, "GET", "/lfs/") >= 1);     /* how many fit the budget is the clock's */
	assert_true(test_hub_log_count(e->hub, "GET", "/lfs/") <= 4);
	snprintf(path, sizeof(path), "%s/kernels--org--k/snapshots/%s/build/" V1 "/_k_abc.abi3.so", e->cache,
		 e->commit[K]);
	assert_false(test_exists(path));
	/* The CDN thaws: the next call resumes after the kept bytes. */
	test_hub_faults_clear(e->hub);
	ranged = count_range_requests(e, "cdn");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	check_layout(e, "kernels--org--k", e->commit[K]);
	assert_int_equal(count_range_requests(e, "cdn"), ranged + 1);
}

static void test_fault_persistent_error(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char path[PATH_MAX];

	options(e, &o);
	o.max_retries = 2;
	fault(e, "{\"path\": \"_ops.py\", \"mode\": \"500\", \"count\": -1}");
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EHTTP);
	assert_non_null(strstr(kernels_error_last(), "_ops.py"));
	assert_int_equal(test_hub_log_count(e->hub, "GET", "_ops.py"), 3);
	snprintf(path, sizeof(path), "%s/kernels--org--k/snapshots", e->cache);
	assert_false(test_exists(path));
	/* No file of _ops.py's arrived: no .incomplete of it is left (one holding bytes would be, to resume). */
	assert_int_equal(test_system("test -z \"$(find '%s' -name '*.incomplete' -empty)\"", e->cache), 0);
	/* A cancelled download (progress callback) is an error too, and resumable. */
	test_hub_faults_clear(e->hub);
	kernels__hub_down_forget_all(); /* the 500 left the Hub remembered as not serving */
}

static int cancel_cb(const char *path, size_t fd, size_t ft, size_t ad, size_t at, void *payload)
{
	(void)path, (void)fd, (void)ft, (void)at;
	*(size_t *)payload = ad;
	return ad > 1000000;
}

static int record_cb(const char *path, size_t fd, size_t ft, size_t ad, size_t at, void *payload)
{
	size_t *p = payload;
	(void)path;
	assert_true(fd <= ft);
	assert_true(ad <= at);
	p[0]++;
	p[1] = ad;
	p[2] = at;
	return 0;
}

static void test_progress(void **state)
{
	test_world *e = *state;
	kernels_options o;
	size_t seen = 0, rec[3] = { 0 }, total = 0, i;

	options(e, &o);
	o.max_retries = 0;
	o.progress_cb = cancel_cb;
	o.progress_payload = &seen;
	o.max_parallel = 1;
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_ERROR);
	assert_non_null(strstr(kernels_error_last(), "cancelled"));
	/* Fresh cache: every byte is then counted up front. */
	test_rmtree(e->cache);
	mkdir(e->cache, 0700);
	o.progress_cb = record_cb;
	o.progress_payload = rec;
	o.max_parallel = 0;
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	for (i = 0; i < n_files; i++)
		total += i == 2 ? 0 : files[i].len; /* one blob for the two __init__.py */
	assert_true(rec[0] >= n_files - 1);
	assert_int_equal(rec[2], total);
	assert_int_equal(rec[1], total);
	check_layout(e, "kernels--org--k", e->commit[K]);
}

/* ---- hostile listings ------------------------------------------------------------------ */

static void hostile(test_world *e, const char *entry_json, int expect)
{
	kernels_options o;
	char buf[2048];
	char *listing_dir = test_mkdtemp("dl-outside");

	options(e, &o);
	snprintf(buf, sizeof(buf),
		 "{\"path\": \"/tree/\", \"mode\": \"200\", \"body\": [{\"type\": \"file\", \"oid\": "
		 "\"%s\", \"size\": 3, \"path\": \"build/" V1 "/ok.txt\"}, %s]}",
		 "0000000000000000000000000000000000000001", entry_json);
	fault(e, buf);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), expect);
	assert_non_null(strstr(kernels_error_last(), "refus"));
	/* Nothing at all was written: no file was even requested. */
	assert_int_equal(test_hub_log_count(e->hub, NULL, "/resolve/"), 0);
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", e->cache), 0);
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", listing_dir), 0);
	test_rmtree(listing_dir);
	free(listing_dir);
	test_hub_faults_clear(e->hub);
}

#define OID "\"oid\": \"1111111111111111111111111111111111111111\""

static void test_hostile_listings(void **state)
{
	test_world *e = *state;

	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/../../../../../evil\"}",
		KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"/tmp/evil\"}", KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/a\\\\b\"}", KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/a\\nb\"}", KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"other/x\"}", KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"symlink\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/link\", "
		   "\"target\": \"../../../../etc/passwd\"}", KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 1000000000000000, \"path\": \"build/" V1 "/big\"}",
		KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/ok.txt/x\"}", KERNELS_EUNSAFE);
	hostile(e, "{\"type\": \"file\", \"oid\": 12, \"size\": 3, \"path\": \"build/" V1 "/n\"}", KERNELS_EPARSE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": \"3\", \"path\": \"build/" V1 "/n\"}", KERNELS_EPARSE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/n\", \"lfs\": {\"oid\": \"x\"}}",
		KERNELS_EPARSE);
	hostile(e, "[1, 2]", KERNELS_EPARSE);
	hostile(e, "{\"type\": \"file\", " OID ", \"size\": 3, \"path\": \"build/" V1 "/ok.txt\"}", KERNELS_EPARSE);
	/* ok.txt's blob again, said to be of another size: one of the two lies,
	 * and nothing of the listing is kept for the next call. */
	hostile(e, "{\"type\": \"file\", \"oid\": \"0000000000000000000000000000000000000001\", \"size\": 4, "
		   "\"path\": \"build/" V1 "/same.txt\"}", KERNELS_EPARSE);
	assert_non_null(strstr(kernels_error_last(), "same hash but different sizes"));

	/* A size under the per-file cap but beyond the free disk is refused before any transfer. */
	{
		struct statvfs vs;
		char entry[512];
		unsigned long long avail;
		assert_int_equal(statvfs(e->cache, &vs), 0);
		avail = (unsigned long long)vs.f_bavail * vs.f_frsize;
		if (avail < (63ULL << 30)) {
			snprintf(entry, sizeof(entry), "{\"type\": \"file\", " OID ", \"size\": %llu, \"path\": \"build/" V1
				 "/big\"}", avail + (1ULL << 30));
			kernels_options o;
			char buf[2048];
			options(e, &o);
			snprintf(buf, sizeof(buf), "{\"path\": \"/tree/\", \"mode\": \"200\", \"body\": [%s]}", entry);
			fault(e, buf);
			assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EIO);
			assert_non_null(strstr(kernels_error_last(), "free"));
			assert_int_equal(test_hub_log_count(e->hub, NULL, "/resolve/"), 0);
		} else {
			/* The per-file cap (64 GiB) is below the free space: the case above covers it. */
			print_message("disk has %llu bytes free; the free-space refusal is covered by the cap case\n", avail);
		}
	}
}

/* A listing record ({repo}/.libkernels/trees/{commit}/build.tsv) only
 * saves the listing request: one that is whole and well formed but wrong
 * (edited by hand or by another program) is not trusted past the Hub's
 * first answer that belies it. A file's hash or size other than the Hub's,
 * or a variant or file the record lacks, has the listing asked of the Hub
 * again, once, and the call goes on from it; the record is replaced, and
 * no absence it claimed is remembered in .no_exist/. */
static void tamper_record(test_world *e, const char *sed, char *rec, size_t n)
{
	snprintf(rec, n, "%s/kernels--org--k/.libkernels/trees/%s/build.tsv", e->cache, e->commit[K]);
	assert_int_equal(test_system("rm -rf '%s/kernels--org--k/blobs' '%s/kernels--org--k/snapshots' && "
				     "sed -i '%s' '%s' && ! cmp -s '%s' '%s.orig'", e->cache, e->cache, sed, rec,
				     rec, rec), 0);
}

#define RECORDED(path) "build\\/" V1 "\\/" path "$"

static void test_wrong_listing_record(void **state)
{
	static const char *const edits[] = {
		/* another blob for _ops.py: the Hub's ETag says otherwise */
		"s/^f [0-9a-f]\\{40\\} \\(11 - " RECORDED("_ops.py") "\\)/f 0123456789012345678901234567890123456789 \\1/",
		/* data.bin said to be smaller: the Hub sends more */
		"s/ 5000 \\(- " RECORDED("sub\\/deep\\/data.bin") "\\)/ 4000 \\1/",
		/* data.bin said to be larger: the Hub's length says otherwise */
		"s/ 5000 \\(- " RECORDED("sub\\/deep\\/data.bin") "\\)/ 6000 \\1/",
		/* no V1 at all (the count at the end kept right) */
		"/ build\\/" V1 "/d; s/^end .*/end 2/",
	};
	test_world *e = *state;
	kernels__config cfg;
	kernels_options o;
	char rec[PATH_MAX], *local = NULL;
	size_t i;

	for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		test_world_fresh_cache(e);
		options(e, &o);
		assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
		snprintf(rec, sizeof(rec), "%s/kernels--org--k/.libkernels/trees/%s/build.tsv", e->cache, e->commit[K]);
		assert_int_equal(test_system("cp '%s' '%s.orig'", rec, rec), 0);
		tamper_record(e, edits[i], rec, sizeof(rec));
		test_hub_log_clear(e->hub);
		if (download(e, &o, "org/k", e->commit[K], V1, NULL) != 0)
			fail_msg("edit %zu: %s", i, kernels_error_last());
		check_layout(e, "kernels--org--k", e->commit[K]);
		assert_int_equal(test_hub_log_count(e->hub, NULL, "/tree/"), 1);
		assert_int_equal(test_system("cmp -s '%s' '%s.orig'", rec, rec), 0); /* the Hub's again */
	}
	/* One file asked for by its path (a CUDA candidate's metadata.json):
	 * the record lacks it, the Hub has it. */
	tamper_record(e, "/ " RECORDED("metadata.json") "/d; s/^end 13/end 12/", rec, sizeof(rec));
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	assert_int_equal(kernels__download_file(&cfg, KERNELS__REPO_KERNEL, "org/k", e->commit[K], files[0].path,
						&local, 0), 0);
	assert_non_null(strstr(local, "/metadata.json"));
	free(local);
	assert_int_equal(test_system("cmp -s '%s' '%s.orig'", rec, rec), 0);
	assert_int_equal(test_system("test ! -e '%s/kernels--org--k/.no_exist'", e->cache), 0);
	kernels__config_free(&cfg);
}

/* A listing that the Hub's own answers for its files contradict: `entry`
 * (JSON) as the whole listing of V1, the call refused with `expect`; the
 * listing is not kept, so the next call, against the honest Hub, asks for
 * it again and fetches the variant. */
static void contradicted(test_world *e, const char *entry, int expect, const char *said)
{
	static const char other[] = "build/" V2 "/__init__.py"; /* a file the listing leaves out */
	kernels__config cfg;
	kernels_options o;
	char buf[2048], *local = NULL;
	int trees;

	options(e, &o);
	o.max_retries = 1;
	assert_int_equal(kernels__config_load(&cfg, &o), 0);
	/* twice: the probe below records it, the download asks again when the record is belied */
	snprintf(buf, sizeof(buf), "{\"path\": \"/tree/\", \"mode\": \"200\", \"count\": 2, \"body\": [%s]}",
		 entry);
	fault(e, buf);
	assert_int_equal(kernels__download_file(&cfg, KERNELS__REPO_KERNEL, "org/k", e->commit[K], other, &local, 0),
			 KERNELS_ENOTFOUND);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), expect);
	if (!strstr(kernels_error_last(), said))
		fail_msg("the refusal does not say '%s': %s", said, kernels_error_last());
	assert_int_equal(test_system("test ! -e '%s/kernels--org--k/.libkernels/trees/%s/build.tsv'", e->cache,
				     e->commit[K]), 0);
	test_hub_faults_clear(e->hub);
	trees = test_hub_log_count(e->hub, "GET", "/tree/");
	if (download(e, &o, "org/k", e->commit[K], V1, NULL) != 0)
		fail_msg("after a contradicted listing (%s), the honest Hub's call failed: %s", entry,
			 kernels_error_last());
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/tree/"), trees + 1);
	check_layout(e, "kernels--org--k", e->commit[K]);
	/* Nor is the absence it claimed: the file is there at the Hub. */
	if (kernels__download_file(&cfg, KERNELS__REPO_KERNEL, "org/k", e->commit[K], other, &local, 0) != 0)
		fail_msg("after a contradicted listing (%s), %s is still said to be absent: %s", entry, other,
			 kernels_error_last());
	free(local);
	kernels__config_free(&cfg);
	test_world_fresh_cache(e);
}

static void test_contradicted_listing_not_kept(void **state)
{
	test_world *e = *state;
	char etag[65], entry[512];

	etag_of(&files[3], etag); /* _ops.py, 11 bytes */
	/* another hash than the Hub's ETag for the file */
	contradicted(e, "{\"type\": \"file\", \"oid\": \"2222222222222222222222222222222222222222\", \"size\": 11, "
			"\"path\": \"build/" V1 "/_ops.py\"}", KERNELS_EINTEGRITY, "ETag");
	/* a size the Hub's answer does not have */
	snprintf(entry, sizeof(entry), "{\"type\": \"file\", \"oid\": \"%s\", \"size\": 12, "
		 "\"path\": \"build/" V1 "/_ops.py\"}", etag);
	contradicted(e, entry, KERNELS_EINTEGRITY, "12 bytes");
	/* a file the Hub does not have */
	contradicted(e, "{\"type\": \"file\", \"oid\": \"2222222222222222222222222222222222222222\", \"size\": 3, "
			"\"path\": \"build/" V1 "/ok.txt\"}", KERNELS_ENOTFOUND, "ok.txt");
}

/* Threads of one process share the connection pool and still exclude each
 * other per blob (flock locks belong to each open file, not the process). */
typedef struct {
	test_world *e;
	int rc;
	char msg[512];
} thread_arg;

static void *thread_fetch(void *p)
{
	thread_arg *a = p;
	kernels_options o;
	const char *vs[1] = { V1 };
	kernels_snapshot *s = NULL;

	options(a->e, &o);
	a->rc = kernels_download(&s, "org/k", a->e->commit[K], vs, 1, &o);
	snprintf(a->msg, sizeof(a->msg), "%s", kernels_error_last());
	kernels_snapshot_free(s);
	return NULL;
}

static void test_threads(void **state)
{
	test_world *e = *state;
	pthread_t th[6];
	thread_arg args[6];
	size_t i;

	for (i = 0; i < 6; i++) {
		args[i].e = e;
		assert_int_equal(pthread_create(&th[i], NULL, thread_fetch, &args[i]), 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		if (args[i].rc)
			print_error("thread %zu: %s\n", i, args[i].msg);
		assert_int_equal(args[i].rc, 0);
	}
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/resolve/"), (int)n_files - 2);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/lfs/"), 1);
	check_layout(e, "kernels--org--k", e->commit[K]);
}

/* A folder link planted inside a snapshot (a shared cache, another user) must
 * not make libkernels write outside the cache. */
static void test_planted_folder_link(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char *outside = test_mkdtemp("dl-outside"), snap[PATH_MAX], link[PATH_MAX + 16];

	options(e, &o);
	snprintf(snap, sizeof(snap), "%s/kernels--org--k/snapshots/%s", e->cache, e->commit[K]);
	assert_int_equal(test_system("mkdir -p '%s'", snap), 0);
	snprintf(link, sizeof(link), "%s/build", snap);
	assert_int_equal(symlink(outside, link), 0);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EUNSAFE);
	assert_non_null(strstr(kernels_error_last(), "not a folder"));
	assert_int_equal(test_system("test -z \"$(ls -A '%s')\"", outside), 0);
	test_rmtree(outside);
	free(outside);
}

/* ---- processes ------------------------------------------------------------------------- */

static int slow_cb(const char *path, size_t fd, size_t ft, size_t ad, size_t at, void *payload)
{
	struct timespec ts = { 0, 40 * 1000000L };
	(void)path, (void)fd, (void)ft, (void)ad, (void)at, (void)payload;
	nanosleep(&ts, NULL);
	return 0;
}

/* `self child ENDPOINT CACHE REPO COMMIT VARIANT GO_FILE SLOW`: one download in
 * a fresh process, started when GO_FILE exists. Exit 0 on success. */
static int child_main(char **argv)
{
	kernels_options o;
	const char *vs[1] = { argv[6] };
	kernels_snapshot *s = NULL;
	struct timespec ts = { 0, 1000000L };
	int rc;

	while (access(argv[7], F_OK) != 0)
		nanosleep(&ts, NULL);
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = argv[2];
	o.cache_dir = argv[3];
	o.offline = 0;
	if (!strcmp(argv[8], "1")) {
		o.progress_cb = slow_cb;
		o.max_parallel = 1;
	}
	rc = kernels_download(&s, argv[4], argv[5], vs, 1, &o);
	if (rc < 0)
		fprintf(stderr, "child %ld: %s\n", (long)getpid(), kernels_error_last());
	kernels_snapshot_free(s);
	return rc < 0 ? 1 : 0;
}

static pid_t spawn(test_world *e, const char *repo, const char *commit, const char *go, int slow, uid_t uid)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		execl(self_exe, self_exe, "child", test_hub_endpoint(e->hub), e->cache, repo, commit, V1, go,
		      slow ? "1" : "0", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void test_sixteen_processes(void **state)
{
	test_world *e = *state;
	pid_t pids[16];
	char go[PATH_MAX];
	size_t i;
	int status;

	snprintf(go, sizeof(go), "%s.go", e->cache);
	unlink(go);
	for (i = 0; i < 16; i++)
		pids[i] = spawn(e, "org/k", e->commit[K], go, 0, 0);
	usleep(200000);
	test_write_file(go, "", 0);
	for (i = 0; i < 16; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	unlink(go);
	/* Each blob crossed the wire exactly once. */
	for (i = 0; i < n_files; i++) {
		if (i == 2)
			continue; /* shares the blob of __init__.py */
		if (is_lfs(&files[i]))
			assert_int_equal(test_hub_log_count(e->hub, "GET", "/lfs/"), 1);
		else {
			char name[PATH_MAX];
			int n;
			snprintf(name, sizeof(name), "/resolve/%s/%s", e->commit[K], files[i].path);
			n = test_hub_log_count(e->hub, "GET", name);
			if (n != (files[i].len ? 1 : 0))
				print_error("%s was fetched %d times\n", files[i].path, n);
			assert_int_equal(n, files[i].len ? 1 : 0);
		}
	}
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/resolve/"), (int)n_files - 2);
	check_layout(e, "kernels--org--k", e->commit[K]);
}

/* A cache huggingface_hub writes without symlinks (HF_HUB_DISABLE_SYMLINKS):
 * the first process to finish moves a blob it fetched into the snapshot,
 * so the others, which found the blob in blobs/ a moment before, must not
 * fail for it being gone: eight ranks of one job start at once. */
static void test_processes_without_symlinks(void **state)
{
	test_world *e = *state;
	pid_t pids[8];
	char go[PATH_MAX], snap[PATH_MAX];
	size_t i;
	int status, failed = 0;

	snprintf(go, sizeof(go), "%s.go", e->cache);
	unlink(go);
	setenv("HF_HUB_DISABLE_SYMLINKS", "1", 1);
	for (i = 0; i < 8; i++)
		pids[i] = spawn(e, "org/k", e->commit[K], go, 0, 0);
	unsetenv("HF_HUB_DISABLE_SYMLINKS");
	usleep(200000);
	test_write_file(go, "", 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		failed += !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	unlink(go);
	assert_int_equal(failed, 0);
	for (i = 0; i < n_files; i++) {
		struct stat st;
		size_t len;
		char *data;

		snprintf(snap, sizeof(snap), "%s/kernels--org--k/snapshots/%s/%s", e->cache, e->commit[K],
			 files[i].path);
		assert_int_equal(lstat(snap, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		data = test_read_file(snap, &len);
		assert_non_null(data);
		assert_int_equal(len, files[i].len);
		assert_memory_equal(data, files[i].data, len);
		free(data);
	}
}

/* The cache root tagged as huggingface_hub 2.x tags it on a download
 * (CACHEDIR.TAG), so that backup tools skip what can be fetched again; a
 * tag already there is left as it is, and a call that downloads nothing
 * (here: all cached, offline) writes none. */
static void test_cache_root_tagged(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char tag[PATH_MAX], *text;
	size_t len;

	snprintf(tag, sizeof(tag), "%s/CACHEDIR.TAG", e->cache);
	options(e, &o);
	assert_false(test_exists(tag));
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	text = test_read_file(tag, &len);
	assert_non_null(text);
	assert_true(len > 43 && !memcmp(text, "Signature: 8a477f597d28d172789f06886806bc55\n", 44));
	free(text);
	assert_int_equal(unlink(tag), 0);
	o.offline = 1;
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	assert_false(test_exists(tag));
	test_write_file(tag, "Signature: 8a477f597d28d172789f06886806bc55\n# mine\n", 52);
	o.offline = 0;
	assert_int_equal(test_system("rm -rf '%s/kernels--org--k'", e->cache), 0);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
	text = test_read_file(tag, &len);
	assert_non_null(text);
	assert_int_equal(len, 52);
	free(text);
}

static void test_sigkill_resume(void **state)
{
	test_world *e = *state;
	char go[PATH_MAX], inc[PATH_MAX], etag[65], blob[PATH_MAX];
	pid_t pid;
	int status, waited = 0;
	long long have;
	json_t *log, *it;
	size_t i;
	int resumed = 0;
	kernels_options o;
	char *data;
	size_t len;
	unsigned char *huge = random_bytes(HUGE_SIZE, 9);

	hash_hex(huge, HUGE_SIZE, 1, etag);
	snprintf(inc, sizeof(inc), "%s/kernels--org--huge/blobs/%s.incomplete", e->cache, etag);
	snprintf(blob, sizeof(blob), "%s/kernels--org--huge/blobs/%s", e->cache, etag);
	snprintf(go, sizeof(go), "%s.go", e->cache);
	test_write_file(go, "", 0);
	pid = spawn(e, "org/huge", e->commit[HUGE], go, 1, 0);
	while ((have = file_size(inc)) < 2 * 1024 * 1024 && waited < 120000) {      /* a hang guard */
		usleep(5000);
		waited += 5;
	}
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	unlink(go);
	assert_true(WIFSIGNALED(status));
	have = file_size(inc);
	assert_true(have >= 2 * 1024 * 1024 && have < HUGE_SIZE);
	assert_false(test_exists(blob));

	test_hub_log_clear(e->hub);
	options(e, &o);
	assert_int_equal(download(e, &o, "org/huge", e->commit[HUGE], V1, NULL), 0);
	log = log_json(e);
	json_array_foreach(log, i, it) {
		const char *r = json_string_value(json_object_get(it, "range"));
		char want[64];
		snprintf(want, sizeof(want), "bytes=%lld-", have);
		if (r && !strcmp(r, want))
			resumed++;
	}
	json_decref(log);
	assert_int_equal(resumed, 2); /* the Hub's 302, then the CDN */
	data = test_read_file(blob, &len);
	assert_int_equal(len, HUGE_SIZE);
	assert_memory_equal(data, huge, HUGE_SIZE);
	assert_false(test_exists(inc));
	free(data);
	free(huge);
}

/* A cache root fetched into, open to every user, with its lock files
 * left read-only for others (as another user's umask 022 makes them) and
 * one blob missing: another user must download it through a lock file
 * it cannot write. `blob` and `lock` (PATH_MAX each) get their paths. */
static void shared_cache_missing_blob(test_world *e, kernels_options *o, char *blob, char *lock)
{
	mode_t old = umask(0);
	char etag[65];

	options(e, o);
	chmod(e->cache, 0777);
	assert_int_equal(download(e, o, "org/k", e->commit[K], V1, NULL), 0);
	umask(old);
	assert_int_equal(test_system("find '%s/.locks' -type f -exec chmod 0644 {} +", e->cache), 0);
	etag_of(&files[3], etag);
	snprintf(blob, PATH_MAX, "%s/kernels--org--k/blobs/%s", e->cache, etag);
	snprintf(lock, PATH_MAX, "%s/.locks/kernels--org--k/%s.lock", e->cache, etag);
	assert_int_equal(unlink(blob), 0);
	test_hub_log_clear(e->hub);
}

/* A cache shared by two users: root fetched, another uid reuses the blobs
 * (lock files it cannot write) and adds its own. */
static void test_shared_cache(void **state)
{
	test_world *e = *state;
	kernels_options o;
	pid_t pid;
	int status;
	char blob[PATH_MAX], lock[PATH_MAX];

	shared_cache_missing_blob(e, &o, blob, lock);
	if (getuid() != 0) {
		/* Without root there is no second user to become; run the same check as ourselves. */
		assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), 0);
		return;
	}
	{
		/* Another user: the lock file of the missing blob is not writable for it. */
		char go[PATH_MAX];
		assert_true(test_exists(lock));
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			if (setgid(65534) < 0 || setuid(65534) < 0)
				_exit(3);
			_exit(open(lock, O_RDWR) < 0 && errno == EACCES ? 0 : 4);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(WEXITSTATUS(status), 0);
		snprintf(go, sizeof(go), "%s.go", e->cache);
		test_write_file(go, "", 0);
		pid = spawn(e, "org/k", e->commit[K], go, 0, 65534);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		unlink(go);
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/resolve/"), 1);
	check_layout(e, "kernels--org--k", e->commit[K]);
	{
		struct stat st;
		assert_int_equal(stat(blob, &st), 0);
		assert_int_equal(st.st_uid, 65534);
	}
}

/* A fifo planted at a lock file, read-only for others: opening it to read
 * would wait for a writer that never comes. Root (which may write it) and
 * the other user are both refused at once, by name, and nothing is
 * downloaded through it. */
static void test_shared_cache_fifo_lock(void **state)
{
	test_world *e = *state;
	kernels_options o;
	char blob[PATH_MAX], lock[PATH_MAX], go[PATH_MAX];
	pid_t pid;
	int status, waited;

	shared_cache_missing_blob(e, &o, blob, lock);
	assert_int_equal(test_system("rm '%s' && mkfifo -m 0444 '%s'", lock, lock), 0);
	assert_int_equal(download(e, &o, "org/k", e->commit[K], V1, NULL), KERNELS_EUNSAFE);
	if (!strstr(kernels_error_last(), lock) || !strstr(kernels_error_last(), "not a regular file"))
		fail_msg("the refusal does not name the lock file: %s", kernels_error_last());
	if (getuid() != 0)
		goto unchanged;
	snprintf(go, sizeof(go), "%s.go", e->cache);
	test_write_file(go, "", 0);
	pid = spawn(e, "org/k", e->commit[K], go, 0, 65534);
	/* A hang guard, not a measurement: a refusal takes milliseconds. */
	for (waited = 0; waited < 1200 && waitpid(pid, &status, WNOHANG) == 0; waited++)
		usleep(100 * 1000);
	unlink(go);
	if (waited == 1200) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("the other user's download still waits on the fifo after 120 s");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 1);
unchanged:
	assert_int_equal(test_hub_log_count(e->hub, "GET", "/resolve/"), 0);
	assert_false(test_exists(blob));
	assert_int_equal(test_system("test -p '%s'", lock), 0);
}

int main(int argc, char **argv)
{
	static char exe[PATH_MAX];
	ssize_t n;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_fetch_layout, setup),
		cmocka_unit_test_setup(test_fetch_without_a_helper, setup),
		cmocka_unit_test_setup(test_lfs_file_asked_first, setup),
		cmocka_unit_test_setup(test_model_repo_and_variants, setup),
		cmocka_unit_test_setup(test_download_file, setup),
		cmocka_unit_test_setup(test_endpoints_in_turn, setup),
		cmocka_unit_test_setup(test_fault_5xx_and_429, setup),
		cmocka_unit_test_setup(test_fault_reset_and_truncate_resume, setup),
		cmocka_unit_test_setup(test_fault_wrong_bytes, setup),
		cmocka_unit_test_setup(test_flush_fails_disk_full, setup),
		cmocka_unit_test_setup(test_flush_fails_io_error, setup),
		cmocka_unit_test_setup(test_fault_slow, setup),
		cmocka_unit_test_setup(test_frozen_cdn_spends_the_stall_budget, setup),
		cmocka_unit_test_setup(test_fault_persistent_error, setup),
		cmocka_unit_test_setup(test_progress, setup),
		cmocka_unit_test_setup(test_hostile_listings, setup),
		cmocka_unit_test_setup(test_wrong_listing_record, setup),
		cmocka_unit_test_setup(test_contradicted_listing_not_kept, setup),
		cmocka_unit_test_setup(test_planted_folder_link, setup),
		cmocka_unit_test_setup(test_sixteen_processes, setup),
		cmocka_unit_test_setup(test_processes_without_symlinks, setup),
		cmocka_unit_test_setup(test_cache_root_tagged, setup),
		cmocka_unit_test_setup(test_threads, setup),
		cmocka_unit_test_setup(test_sigkill_resume, setup),
		cmocka_unit_test_setup(test_shared_cache, setup),
		cmocka_unit_test_setup(test_shared_cache_fifo_lock, setup),
	};

	if (argc == 9 && !strcmp(argv[1], "child"))
		return child_main(argv);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return 2;
	exe[n] = '\0';
	self_exe = exe;
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

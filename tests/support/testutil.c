#include "testutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *test_mkdtemp(const char *tag)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	if (asprintf(&path, "%s/kernels-test-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", tag) < 0)
		return NULL;
	if (!mkdtemp(path)) {
		free(path);
		return NULL;
	}
	return path;
}

void test_rmtree(const char *path)
{
	if (path && *path && strcmp(path, "/"))
		test_system("rm -rf '%s'", path);
}

void test_rmtree_free(char **path)
{
	if (*path)
		test_rmtree(*path);
	free(*path);
	*path = NULL;
}

int test_share_blobs(const char *cache, const char *repo)
{
	return test_system("cd '%s' && mkdir -p blobs && echo 1 > blobs/.huggingface-shared-blobs && n=$(ls blobs | wc -l) && "
			   "for b in '%s'/blobs/*; do h=$(printf '%%064x' $n); n=$((n+1)); p=${h%%${h#??}}; "
			   "mkdir -p blobs/$p && mv \"$b\" blobs/$p/$h && ln -s ../../blobs/$p/$h \"$b\" || exit 1; "
			   "done && test -L \"$b\"", cache, repo);
}

void test_fresh_dir(char **path, const char *tag)
{
	test_rmtree_free(path);
	*path = test_mkdtemp(tag);
}

char *test_tmp;

int test_tmp_setup(void **state)
{
	const char *name = program_invocation_short_name;

	(void)state;
	test_tmp = test_mkdtemp(strncmp(name, "test_", 5) ? name : name + 5);
	return test_tmp ? 0 : -1;
}

int test_tmp_teardown(void **state)
{
	(void)state;
	test_rmtree_free(&test_tmp);
	return 0;
}

char test_logged[16384];
static pthread_mutex_t logged_lock = PTHREAD_MUTEX_INITIALIZER;

static void log_line(const char *message)
{
	pthread_mutex_lock(&logged_lock);
	if (strlen(test_logged) + strlen(message) + 2 < sizeof(test_logged)) {
		strcat(test_logged, message);
		strcat(test_logged, "\n");
	}
	pthread_mutex_unlock(&logged_lock);
}

void test_log_warnings(kernels_log_level level, const char *message, void *payload)
{
	(void)payload;
	if (level >= KERNELS_LOG_WARNING)
		log_line(message);
}

void test_log_all(kernels_log_level level, const char *message, void *payload)
{
	(void)level;
	(void)payload;
	log_line(message);
}

void test_logged_clear(void)
{
	pthread_mutex_lock(&logged_lock);
	test_logged[0] = '\0';
	pthread_mutex_unlock(&logged_lock);
}

static void mkparents(const char *path)
{
	char *p = strdup(path), *q;

	for (q = p + 1; (q = strchr(q, '/')); q++) {
		*q = '\0';
		mkdir(p, 0755);
		*q = '/';
	}
	free(p);
}

int test_write_file(const char *path, const void *data, size_t len)
{
	FILE *f;
	int ok;

	mkparents(path);
	if (!(f = fopen(path, "wb")))
		return -1;
	ok = fwrite(data, 1, len, f) == len;
	return (fclose(f) == 0 && ok) ? 0 : -1;
}

int test_put(const char *root, const char *rel, const char *text)
{
	char *path;
	int rc;

	if (asprintf(&path, "%s/%s", root, rel) < 0)
		return -1;
	rc = test_write_file(path, text, strlen(text));
	free(path);
	return rc;
}

char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 4096 + 1 > cap) {
			cap = (cap ? cap * 2 : 8192);
			buf = realloc(buf, cap);
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

int test_system(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int st;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		cmd = NULL;
	va_end(ap);
	if (!cmd)
		return -1;
	st = system(cmd);
	free(cmd);
	return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int test_exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

int test_each_entry(const char *path, void (*check)(char *line, void *payload), void *payload)
{
	FILE *f = fopen(path, "r");
	char line[1024];
	int count = 0;

	if (!f) {
		fprintf(stderr, "test_each_entry: cannot read %s: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		check(line, payload);
		count++;
	}
	fclose(f);
	return count;
}

int test_app_make(test_app *app, const char *parent, const char *name, const char *manifest)
{
	memset(app, 0, sizeof(*app));
	if (asprintf(&app->dir, "%s/%s", parent, name) < 0 ||
	    asprintf(&app->manifest, "%s/pyproject.toml", app->dir) < 0 ||
	    asprintf(&app->lock, "%s/kernels.lock", app->dir) < 0 ||
	    test_write_file(app->manifest, manifest, strlen(manifest))) {
		test_app_free(app);
		return -1;
	}
	return 0;
}

void test_app_free(test_app *app)
{
	free(app->dir);
	free(app->manifest);
	free(app->lock);
	memset(app, 0, sizeof(*app));
}

uint64_t test_rng_seed(void)
{
	return (uint64_t)time(NULL) ^ (uint64_t)clock();
}

uint64_t test_rng(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

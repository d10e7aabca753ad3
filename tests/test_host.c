/* libkernels inside a real host process: what an inference server does to
 * a library that the other suites do not. A worker it fork+execs during a
 * get inherits none of the library's descriptors (sockets, lock files,
 * blobs); a worker it forks (no exec) gets kernels, even when other
 * threads were inside the library at the fork (loading a kernel, taking its
 * locks); a host's interval timer (SIGALRM without SA_RESTART) fails no
 * get; a plugin linked to libkernels survives being dlclosed. Each check
 * runs against the local Hub fixture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>

#include "kernels.h"
#include "signature.h"
#include "test_world.h"
#include "testutil.h"
#include "../tests/data/variants/fixture.h"

static test_world W;
static char *loading, *go; /* acme/slow's constructor: says it runs, then waits for `go` */

/* ---- the helper a host execs ------------------------------------------------------ */

static int is_unix_socket(int fd)
{
	int domain = 0;
	socklen_t len = sizeof(domain);

	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
}

/* `self fds`: prints "FD TARGET" for every descriptor it inherited beyond
 * 0-2 (the one listing /proc/self/fd is its own, skipped); a local
 * (AF_UNIX) socket's target is "unix:[INODE]". */
static int list_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[64], target[PATH_MAX];
	ssize_t n;

	if (!d)
		return 1;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if ((n = readlink(path, target, sizeof(target) - 1)) < 0)
			continue;
		target[n] = '\0';
		printf("%d %s%s\n", fd, is_unix_socket(fd) ? "unix:" : "", target);
	}
	closedir(d);
	return 0;
}

/* What `self fds` prints when fork+exec'ed now: malloc'ed, the caller frees it. */
static char *inherited_fds(void)
{
	int p[2], status;
	char *out = calloc(1, 65536);
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	assert_non_null(out);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		execl("/proc/self/exe", "test_host", "fds", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	while (got + 1 < 65536 && ((n = read(p[0], out + got, 65535 - got)) > 0 || (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	close(p[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return out;
}

/* ---- the world --------------------------------------------------------------------- */

/* acme/slow: a kernel whose constructor takes its time, as torch's do
 * (seconds), creating `loading` when it starts and returning once `go`
 * exists (20 s at most). */
static int publish_slow(void)
{
	char *src = NULL, *dir = NULL, *so = NULL, *extra = NULL;
	int rc = -1;

	if (asprintf(&loading, "%s/loading", W.tmp) > 0 && asprintf(&go, "%s/go", W.tmp) > 0 &&
	    asprintf(&src, "%s/src-slow", W.tmp) > 0 &&
	    asprintf(&dir, "%s/build/torch211-cxx11-cpu-x86_64-linux", src) > 0 &&
	    asprintf(&so, "%s/_slow_9.abi3.so", dir) > 0 &&
	    asprintf(&extra, "#include <unistd.h>\n"
			     "__attribute__((constructor)) static void slow(void) {\n"
			     "  FILE *f = fopen(\"%s\", \"w\"); if (f) fclose(f);\n"
			     "  for (int i = 0; i < 2000 && access(\"%s\", F_OK); i++) usleep(10000);\n"
			     "}\n", loading, go) > 0 &&
	    test_system("mkdir -p '%s'", dir) == 0 && !fx_build_so(so, 9, NULL, extra, NULL) &&
	    !fx_metadata(dir, "--name slow --id _slow_9 --backend cpu"))
		rc = test_hub_publish(W.hub, "--repo acme/slow --dir '%s' --branch main --tag v1.0.0 --trusted", src);
	free(extra);
	free(so);
	free(dir);
	free(src);
	return rc;
}

static int setup(void **state)
{
	if (test_world_start(&W, "host") ||
	    fx_publish_answer(W.hub, W.tmp, "acme/plain", "plain", 7, NULL, "--trusted") ||
	    test_world_keep_last(&W, 0) || publish_slow())
		return -1;
	*state = &W;
	return 0;
}

static void options(kernels_options *o)
{
	static kernels_system sys = TEST_SYS_CPU;
	test_world_options(&W, o, &sys);
}

/* ---- descriptors a fork+exec'ed child inherits ------------------------------------- */

typedef struct {
	char *before; /* the host's own, listed before the get */
	char *leaked; /* lines the child listed that the host did not have before */
	int calls;
} fd_watch;

/* libcurl before 8.8 opens each multi handle's wake-up socket pair
 * without close-on-exec (curl issue 13618), out of the API's reach: those
 * local sockets live as long as the call and are all a child may inherit
 * from one. */
static int curl_wakeup_leaks(const char *line)
{
	return curl_version_info(CURLVERSION_NOW)->version_num < 0x080800 && strstr(line, " unix:socket:[");
}

/* Every line of `during` that is not one of `before` (nor what libcurl
 * leaks), appended to *out. */
static void keep_new_lines(const char *before, const char *during, char **out)
{
	const char *line = during, *nl;

	for (; *line; line = nl + 1) {
		char one[PATH_MAX + 32];
		size_t len;

		if (!(nl = strchr(line, '\n')))
			break;
		len = (size_t)(nl - line) + 1;
		snprintf(one, sizeof(one), "%.*s", (int)len, line);
		if (!strstr(before, one) && !curl_wakeup_leaks(one)) {
			size_t have = *out ? strlen(*out) : 0;
			*out = realloc(*out, have + len + 1);
			memcpy(*out + have, one, len + 1);
		}
	}
}

/* Mid-download (the call's connection, blob and cache lock open): a
 * worker the host starts now. */
static int watch_fds(const char *path, size_t fd, size_t ft, size_t ad, size_t at, void *payload)
{
	fd_watch *w = payload;
	char *during;
	(void)path, (void)fd, (void)ft, (void)ad, (void)at;

	if (w->calls++)
		return 0;
	during = inherited_fds();
	keep_new_lines(w->before, during, &w->leaked);
	free(during);
	return 0;
}

static void test_exec_during_get_inherits_nothing(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	fd_watch w = { 0 };
	char *after;
	(void)state;

	w.before = inherited_fds();
	options(&o);
	o.progress_cb = watch_fds;
	o.progress_payload = &w;
	if (kernels_get(&k, "acme/plain", "v1.0.0", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_true(w.calls > 0);
	assert_int_equal(test_kernel_answer(k), 7);
	after = inherited_fds();
	keep_new_lines(w.before, after, &w.leaked);
	if (w.leaked)
		fail_msg("a child exec'ed during or after kernels_get inherited:\n%s", w.leaked);
	kernels_kernel_close(k);
	free(after);
	free(w.before);
}

/* ---- fork() without exec ------------------------------------------------------------ */

/* A forked child's get of acme/plain: its exit status, 0 when the kernel
 * answered. The child exits on its own within 10 s (SIGALRM), so a lock
 * it inherited taken fails the test instead of hanging it. */
static void child_get_plain(const char *cache)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	void *sym;

	alarm(10);
	options(&o);
	o.cache_dir = cache;
	if (kernels_get(&k, "acme/plain", "v1.0.0", &o) < 0) {
		fprintf(stderr, "child: %s\n", kernels_error_last());
		_exit(1);
	}
	sym = kernels_symbol(k, "kernel_answer");
	_exit(sym && ((int (*)(void))sym)() == 7 ? 0 : 2);
}

/* Forks; the child runs child_get_plain in a cache of its own. The
 * child's wait status. */
static int fork_get_plain(void)
{
	char cache[PATH_MAX];
	int status;
	pid_t pid;

	snprintf(cache, sizeof(cache), "%s-child", W.cache);
	test_rmtree(cache);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		child_get_plain(cache);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	test_rmtree(cache);
	return status;
}

static void assert_child_got(int status)
{
	if (WIFSIGNALED(status))
		fail_msg("the forked child's kernels_get never returned (signal %d: a lock it inherited taken)",
			 WTERMSIG(status));
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_fork_after_get(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	options(&o);
	if (kernels_get(&k, "acme/plain", "v1.0.0", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	assert_child_got(fork_get_plain());
	kernels_kernel_close(k);
}

/* A thread's get: of `repo` at v1.0.0, its result in `rc`. */
typedef struct {
	const char *repo;
	int rc;
} thread_get;

static void *get_in_thread(void *arg)
{
	thread_get *g = arg;
	kernels_options o;
	kernels_kernel *k = NULL;

	options(&o);
	if ((g->rc = kernels_get(&k, g->repo, "v1.0.0", &o)) < 0)
		fprintf(stderr, "%s: %s\n", g->repo, kernels_error_last());
	kernels_kernel_close(k);
	return NULL;
}

/* A server forks its workers while another of its threads loads a kernel
 * (torch's take seconds): the worker's own get must not wait for a load
 * that, in the child, no thread will ever finish. */
static void test_fork_while_another_thread_loads(void **state)
{
	pthread_t t;
	thread_get slow = { "acme/slow", -1 };
	int status, i;
	(void)state;

	unlink(loading);
	unlink(go);
	assert_int_equal(pthread_create(&t, NULL, get_in_thread, &slow), 0);
	for (i = 0; i < 2000 && access(loading, F_OK); i++)
		usleep(10000);
	assert_int_equal(access(loading, F_OK), 0);
	status = fork_get_plain();
	test_write_file(go, "", 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(slow.rc, 0);
	assert_child_got(status);
}

#ifndef __SANITIZE_ADDRESS__ /* see main() */
/* Threads that keep taking the library's process-wide locks: a re-get
 * from the memo (its lock, the loaded kernels'), a get from a Hub known
 * down (the origins' memory), a get that asks the Hub (the User-Agent's
 * lock, libcurl's shared DNS and TLS sessions), the signature roots. */
static _Atomic int hammering;

static void one_turn(int which)
{
	kernels_options o;
	kernels_kernel *k = NULL;

	options(&o);
	if (which == 1)
		o.endpoint = "http://127.0.0.1:9";
	if (which == 3)
		(void)kernels__signature_root_parses();
	else if (kernels_get(&k, "acme/plain", which == 0 ? W.commit[0] : "main", &o) == 0)
		kernels_kernel_close(k);
}

static void *hammer(void *arg)
{
	while (hammering)
		one_turn((int)(intptr_t)arg);
	return NULL;
}

/* The same in a forked child, once each: exits 0 when all returned, else
 * SIGALRM ends it. */
static void child_takes_every_lock(void)
{
	int i;

	alarm(10);
	for (i = 0; i < 4; i++)
		one_turn(i);
	_exit(0);
}

/* A server forks workers while its other threads are inside the library:
 * each lock a thread held at the fork must be free in the child. */
static void test_fork_while_threads_take_locks(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	pthread_t t[4];
	int i, status;
	(void)state;

	options(&o);
	if (kernels_get(&k, "acme/plain", W.commit[0], &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	hammering = 1;
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, hammer, (void *)(intptr_t)i), 0);
	usleep(100000);
	for (i = 0; i < 40; i++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			child_takes_every_lock();
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			break;
	}
	hammering = 0;
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	kernels_kernel_close(k);
	assert_child_got(status);
}
#endif

/* ---- a host's signals ------------------------------------------------------------- */

static volatile sig_atomic_t ticks;

static void tick(int sig)
{
	(void)sig;
	ticks++;
}

/* A host's interval timer, its handler installed without SA_RESTART: every
 * blocking system call a get makes (connect, poll, read, write, flock,
 * fsync, waits) may fail with EINTR, over and over. Four gets of one kernel
 * into one cache at once, so three wait for the cache lock too. */
static void test_timer_signal_without_restart(void **state)
{
	struct sigaction sa = { 0 }, old;
	struct itimerval it = { { 0, 100 }, { 0, 100 } }, off = { 0 };
	pthread_t t[4];
	thread_get plain[4];
	int i;
	(void)state;

	sa.sa_handler = tick;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	assert_int_equal(setitimer(ITIMER_REAL, &it, NULL), 0);
	for (i = 0; i < 4; i++) {
		plain[i] = (thread_get){ "acme/plain", -1 };
		assert_int_equal(pthread_create(&t[i], NULL, get_in_thread, &plain[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_true(ticks > 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(plain[i].rc, 0);
}

/* ---- a plugin unloaded ------------------------------------------------------------ */

/* A plugin host dlopens a plugin linked to libkernels, gets a kernel from
 * two threads (one of them outliving the plugin), dlcloses it, three
 * times, then exits: nothing of the library may run after it is gone. */
static void test_plugin_unloaded(void **state)
{
	const char *plugin = getenv("KERNELS_TEST_PLUGIN"), *host = getenv("KERNELS_TEST_UNLOAD_HOST");
	(void)state;

	assert_non_null(plugin);
	assert_non_null(host);
	assert_int_equal(test_system("'%s' '%s' '%s' '%s' 3", host, plugin, test_hub_endpoint(W.hub), W.cache), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_exec_during_get_inherits_nothing, test_world_fresh),
		cmocka_unit_test_setup(test_fork_after_get, test_world_fresh),
		cmocka_unit_test_setup(test_fork_while_another_thread_loads, test_world_fresh),
#ifndef __SANITIZE_ADDRESS__
		/* Not in the ASan build: its allocator (GCC 12's) is not taken
		 * across fork, so a child forked while another thread allocates
		 * waits for it forever, in malloc, whatever libkernels does. */
		cmocka_unit_test_setup(test_fork_while_threads_take_locks, test_world_fresh),
#endif
		cmocka_unit_test_setup(test_timer_signal_without_restart, test_world_fresh),
		cmocka_unit_test_setup(test_plugin_unloaded, test_world_fresh),
	};

	if (argc > 1 && !strcmp(argv[1], "fds"))
		return list_fds();
	return cmocka_run_group_tests(tests, setup, test_world_teardown);
}

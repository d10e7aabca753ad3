/* kernels_get latency: the first (cold) call and warm ones, in one run.
 *
 *   get_bench REPO REVISION [--warm N] [--torch-lib DIR] [--backend cpu] [--json] [--once] [--mark]
 *
 * The Hub and the cache come from the environment (HF_ENDPOINT,
 * HF_HUB_CACHE): bench/get/run.sh starts the local Hub fixture, publishes
 * img2gray and points both at fresh folders. With --torch-lib, libc10,
 * libtorch_cpu and libtorch from DIR are loaded first (RTLD_GLOBAL), as a
 * C++ host linked to libtorch would have them: libkernels then detects torch
 * and the torch variant's module can be dlopen'ed.
 *
 * Phases, each timed around kernels_get_ext() alone:
 *   cold          empty cache: revision, trust, variant choice, download,
 *                 digest verification, dlopen
 *   warm          the same call again in the same process, the Hub
 *                 reachable: the revision is asked of the Hub (one refs
 *                 request), the loaded handle returned
 *   warm offline  options.offline = 1: refs/ and the loaded handle
 *   re-get commit the resolved commit id again: no request, no system
 *                 call, the loaded handle (lib/memo.h); in microseconds
 * The first handle stays open (the kernel stays loaded, as in a program
 * that uses it); each warm call takes and drops one more reference.
 * --once: the first call only, as JSON {"ms", "variant", "commit", and the
 * stages' ms}: what a fresh process pays (bench/vs_python runs one process
 * per phase).
 * --mark: each call is preceded and followed by a line on stderr
 * (MARK_BEGIN, MARK_END, one write(2) each), so that a system call trace
 * (strace -f) can be cut to the call's own (bench/get/offline.sh).
 * After the cold call the module's img2gray_cpu (when exported) converts a
 * test image and is checked against the formula, so the timing is of a
 * kernel that works. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

typedef struct {
	double total, resolve, select, download, load;
} sample;

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Median of the column at byte offset `off` of every sample. */
static double col(const sample *s, int n, size_t off)
{
	double *v = malloc(sizeof(double) * (size_t)n), m;

	for (int i = 0; i < n; i++)
		v[i] = *(const double *)((const char *)&s[i] + off);
	m = median(v, n);
	free(v);
	return m;
}

static sample med(const sample *s, int n)
{
	sample m = { col(s, n, offsetof(sample, total)), col(s, n, offsetof(sample, resolve)),
		     col(s, n, offsetof(sample, select)), col(s, n, offsetof(sample, download)),
		     col(s, n, offsetof(sample, load)) };
	return m;
}

static double minimum(const sample *s, int n)
{
	double m = s[0].total;
	for (int i = 1; i < n; i++)
		m = s[i].total < m ? s[i].total : m;
	return m;
}

static char first_commit[41];
static int mark;

#define MARK_BEGIN "get_bench: call begins\n"
#define MARK_END "get_bench: call ends\n"

/* One write each, outside the timed span. */
static void mark_line(const char *line)
{
	if (mark && write(2, line, strlen(line)) < 0)
		mark = 0;
}

/* The process's own CPU time (every thread, user and system): what the
 * client itself spends, apart from the time it waits on the Hub and disk. */
static double cpu_ms(void)
{
	struct rusage u;
	getrusage(RUSAGE_SELF, &u);
	return (u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1e3 + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e3;
}

static int one_get(const char *repo, const char *rev, const kernels_options *o, sample *s, kernels_kernel **keep)
{
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	kernels_kernel *k = NULL;
	double t0;
	int rc;

	mark_line(MARK_BEGIN);
	t0 = now_ms();
	rc = kernels_get_ext(&k, &st, repo, rev, o);
	s->total = now_ms() - t0;
	mark_line(MARK_END);
	if (rc < 0) {
		fprintf(stderr, "get_bench: kernels_get(%s, %s) failed (%d): %s\n", repo, rev, rc, kernels_error_last());
		return rc;
	}
	s->resolve = st.resolve_ms, s->select = st.select_ms, s->download = st.download_ms, s->load = st.load_ms;
	if (!first_commit[0])
		snprintf(first_commit, sizeof(first_commit), "%s", st.commit);
	if (keep && !*keep)
		*keep = k;
	else
		kernels_kernel_close(k);
	return 0;
}

typedef int (*img2gray_fn)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t);

/* -1: wrong result, 0: nothing to check, 1: correct. */
static int check(kernels_kernel *k)
{
	img2gray_fn fn = (img2gray_fn)(uintptr_t)kernels_symbol(k, "img2gray_cpu");
	enum { H = 31, W = 47 };
	static uint8_t rgb[H * W * 3], gray[H * W];
	unsigned s = 12345;

	if (!fn) {
		kernels_error_clear();
		return 0;
	}
	for (int i = 0; i < H * W * 3; i++)
		s = s * 1103515245u + 12345u, rgb[i] = (uint8_t)(s >> 16);
	if (fn(rgb, gray, 1, H, W) != 0)
		return -1;
	for (int i = 0; i < H * W; i++)
		if (gray[i] != (54 * rgb[3 * i] + 184 * rgb[3 * i + 1] + 18 * rgb[3 * i + 2] + 128) >> 8)
			return -1;
	return 1;
}

/* Warnings ("skipping the publisher trust check ... offline") would be
 * printed on every offline call: count them instead of timing stderr. */
static int warnings;
static void count_log(kernels_log_level level, const char *message, void *payload)
{
	(void)message, (void)payload;
	warnings += level == KERNELS_LOG_WARNING;
}

static int load_torch(const char *dir)
{
	static const char *libs[] = { "libc10.so", "libtorch_cpu.so", "libtorch.so" };
	char path[4096];

	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, libs[i]);
		if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL)) {
			fprintf(stderr, "get_bench: cannot load %s: %s\n", path, dlerror());
			return -1;
		}
	}
	return 0;
}

static void print_row(const char *name, sample m, double min, int n, int json, int last)
{
	if (json)
		printf("  \"%s\": {\"median_ms\": %.3f, \"min_ms\": %.3f, \"n\": %d, \"resolve_ms\": %.3f, "
		       "\"select_ms\": %.3f, \"download_ms\": %.3f, \"load_ms\": %.3f}%s\n",
		       name, m.total, min, n, m.resolve, m.select, m.download, m.load, last ? "" : ",");
	else
		printf("%-13s %10.3f %10.3f %4d   %8.3f %8.3f %9.3f %8.3f\n", name, m.total, min, n, m.resolve,
		       m.select, m.download, m.load);
}

int main(int argc, char **argv)
{
	const char *repo = NULL, *rev = NULL, *torch = NULL, *backend = NULL;
	int warm = 50, json = 0, once = 0, i, ok;
	kernels_options opts;
	kernels_system sys;
	kernels_kernel *kept = NULL;
	double cpu0;
	sample cold, *w, *off, *re;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--warm") && i + 1 < argc)
			warm = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--torch-lib") && i + 1 < argc)
			torch = argv[++i];
		else if (!strcmp(argv[i], "--backend") && i + 1 < argc)
			backend = argv[++i];
		else if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--once"))
			once = 1;
		else if (!strcmp(argv[i], "--mark"))
			mark = 1;
		else if (!repo)
			repo = argv[i];
		else if (!rev)
			rev = argv[i];
		else
			repo = NULL, i = argc;
	}
	if (!repo || !rev || warm < 1) {
		fprintf(stderr, "usage: get_bench REPO REVISION [--warm N] [--torch-lib DIR] [--backend cpu] [--json] "
			"[--once] [--mark]\n");
		return 2;
	}
	if (torch && load_torch(torch))
		return 1;
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.log_cb = count_log;
	if (backend) {
		memset(&sys, 0, sizeof(sys));
		sys.backend = backend;
		sys.no_gpu = !strcmp(backend, "cpu");
		opts.system = &sys;
	}
	w = calloc((size_t)warm, sizeof(*w));
	off = calloc((size_t)warm, sizeof(*off));
	re = calloc((size_t)warm, sizeof(*re));
	if (!w || !off || !re)
		return 1;

	cpu0 = cpu_ms();
	if (one_get(repo, rev, &opts, &cold, &kept))
		return 1;
	cpu0 = cpu_ms() - cpu0;
	ok = check(kept);
	if (ok < 0) {
		fprintf(stderr, "get_bench: img2gray_cpu of %s gives a wrong image\n", kernels_kernel_path(kept));
		return 1;
	}
	if (once) {
		printf("{\"ms\": %.3f, \"variant\": \"%s\", \"commit\": \"%s\", \"checked\": %s, \"resolve_ms\": %.3f, "
		       "\"select_ms\": %.3f, \"download_ms\": %.3f, \"load_ms\": %.3f, \"cpu_ms\": %.3f}\n", cold.total,
		       kernels_kernel_variant(kept), first_commit, ok ? "true" : "false", cold.resolve, cold.select,
		       cold.download, cold.load, cpu0);
		kernels_kernel_close(kept);
		return 0;
	}
	for (i = 0; i < warm; i++)
		if (one_get(repo, rev, &opts, &w[i], NULL))
			return 1;
	opts.offline = 1;
	for (i = 0; i < warm; i++)
		if (one_get(repo, rev, &opts, &off[i], NULL))
			return 1;
	opts.offline = 0;
	for (i = 0; i < warm; i++)
		if (one_get(repo, first_commit, &opts, &re[i], NULL))
			return 1;

	if (json) {
		printf("{\n  \"repo\": \"%s\", \"revision\": \"%s\", \"variant\": \"%s\", \"checked\": %s,\n", repo, rev,
		       kernels_kernel_variant(kept), ok ? "true" : "false");
		print_row("cold", cold, cold.total, 1, 1, 0);
		print_row("warm", med(w, warm), minimum(w, warm), warm, 1, 0);
		print_row("warm_offline", med(off, warm), minimum(off, warm), warm, 1, 0);
		print_row("reget_commit", med(re, warm), minimum(re, warm), warm, 1, 0);
		printf("  \"warnings\": %d\n}\n", warnings);
	} else {
		printf("kernels_get(%s, %s) -> %s (%s)\n", repo, rev, kernels_kernel_variant(kept),
		       ok ? "img2gray_cpu checked" : "no img2gray_cpu to check");
		printf("%-13s %10s %10s %4s   %8s %8s %9s %8s\n", "phase", "median ms", "min ms", "n", "resolve",
		       "select", "download", "load");
		print_row("cold", cold, cold.total, 1, 0, 0);
		print_row("warm", med(w, warm), minimum(w, warm), warm, 0, 0);
		print_row("warm offline", med(off, warm), minimum(off, warm), warm, 0, 0);
		print_row("re-get commit", med(re, warm), minimum(re, warm), warm, 0, 1);
		printf("re-get commit: median %.2f us, min %.2f us (no request, no system call)\n", med(re, warm).total * 1e3,
		       minimum(re, warm) * 1e3);
		printf("(%d warnings, e.g. the skipped trust check offline, went to a counting log callback)\n", warnings);
	}
	kernels_kernel_close(kept);
	free(w);
	free(off);
	free(re);
	return 0;
}

/* What checking a kernel's sigstore signature costs at load time.
 *
 *   sig_bench VARIANT_DIR TRUSTED_ROOT [runs [HUB_CACHE]]
 *
 * VARIANT_DIR holds a module, metadata.json and metadata.json.sigstore
 * signed by the stand-in sigstore whose trusted_root.json is TRUSTED_ROOT
 * (bench/signature/run.sh makes both). Measured, each `runs` times (median
 * and minimum, milliseconds):
 *   bundle         kernels_signature_verify_bundle over metadata.json:
 *                  read the trusted root, parse the bundle, verify chain,
 *                  SCT, checkpoint, proof, SET, signature, log entry
 *   public-good    the same bundle against the built-in public-good root
 *                  (parsed once per process; refused at the chain): what
 *                  a call costs before any signature is checked
 *   digest         kernels_verify_variant: every file hashed (no signature)
 *   sig+digest     kernels_signature_verify_variant: both
 *   load off       a cold kernels_load_local in a fresh (forked) process,
 *                  signatures off
 *   load require   the same with signatures required
 * and, given HUB_CACHE (a Hub cache holding the same variant as
 * bench/signed at BENCH_COMMIT), a cold offline kernels_get of it with
 * signatures required, in a fresh (forked) process:
 *   cached first   with no verification receipts: the first process after
 *                  a download (it hashes, verifies and writes them)
 *   cached warm    in a later process: the receipts vouch for the signature
 *                  and the digest, nothing is hashed or verified again
 * A forked child has nothing of the variant mapped, so each load is cold
 * (verification, dlopen, constructors). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void report(const char *what, double *t, int n)
{
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%-14s median %8.3f ms   min %8.3f ms   (%d runs)\n", what, t[n / 2], t[0], n);
}

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);
	if (!f || !buf) {
		fprintf(stderr, "cannot read %s\n", path);
		exit(1);
	}
	*n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* The repo run.sh puts in its Hub cache. */
#define BENCH_REPO "bench/signed"
#define BENCH_COMMIT "0123456789abcdef0123456789abcdef01234567"

/* A cold load in a forked child, of `dir` or (given `cache`) of BENCH_REPO
 * from that Hub cache, offline: its time in ms, or -1. */
static double cold_load(const char *dir, const char *cache, int mode, const char *root)
{
	int fds[2];
	double t = -1;
	pid_t pid;

	if (pipe(fds))
		return -1;
	if ((pid = fork()) == 0) {
		kernels_options o;
		kernels_kernel *k = NULL;
		double t0;
		int rc;

		kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
		o.signature = mode;
		o.sigstore_trusted_root = root;
		t0 = now_ms();
		if (cache) { /* the cached variant, as a fresh process gets it offline */
			o.cache_dir = cache;
			o.offline = 1;
			o.find_torch = 1;
			o.trusted_orgs = BENCH_REPO;
			setenv("KERNELS_BACKEND", "cpu", 1); /* the variant run.sh builds */
			rc = kernels_get(&k, BENCH_REPO, BENCH_COMMIT, &o);
		} else {
			rc = kernels_load_local(&k, dir, &o);
		}
		t = now_ms() - t0;
		if (rc) {
			fprintf(stderr, "load: %s\n", kernels_error_last());
			t = -1;
		}
		if (write(fds[1], &t, sizeof(t)) != sizeof(t))
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &t, sizeof(t)) != sizeof(t))
		t = -1;
	close(fds[0]);
	waitpid(pid, NULL, 0);
	return t;
}

/* Forgets what earlier loads of a cached variant recorded in its repo's
 * cache folder ({repo}/.libkernels). */
static int drop_receipts(const char *cache)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/kernels--bench--signed/.libkernels/receipts'", cache);
	return system(cmd);
}

/* The two cached rows: a first load that verifies and records, then warm
 * loads through the receipts. */
static int cached_rows(const char *cache, const char *root, double *t, int runs)
{
	int i;

	for (i = 0; i < runs; i++)
		if (drop_receipts(cache) || (t[i] = cold_load(NULL, cache, KERNELS_SIGNATURE_REQUIRE, root)) < 0)
			return -1;
	report("cached first", t, runs);
	for (i = 0; i < runs; i++)
		if ((t[i] = cold_load(NULL, cache, KERNELS_SIGNATURE_REQUIRE, root)) < 0)
			return -1;
	report("cached warm", t, runs);
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir, *root;
	char *meta, *bundle, path[4096];
	size_t mn, bn;
	int runs, i;
	double *t;
	kernels_options o;

	if (argc < 3) {
		fprintf(stderr, "usage: sig_bench VARIANT_DIR TRUSTED_ROOT [runs]\n");
		return 2;
	}
	dir = argv[1];
	root = argv[2];
	runs = argc > 3 ? atoi(argv[3]) : 51;
	t = calloc((size_t)runs, sizeof(*t));
	snprintf(path, sizeof(path), "%s/metadata.json", dir);
	meta = slurp(path, &mn);
	snprintf(path, sizeof(path), "%s/metadata.json.sigstore", dir);
	bundle = slurp(path, &bn);

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.sigstore_trusted_root = root;
	for (i = 0; i < runs; i++) {
		double t0 = now_ms();
		if (kernels_signature_verify_bundle(meta, mn, bundle, bn, NULL, 0, &o)) {
			fprintf(stderr, "bundle: %s\n", kernels_error_last());
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	report("bundle", t, runs);

	for (i = 0; i < runs; i++) {
		double t0 = now_ms();
		if (kernels_signature_verify_bundle(meta, mn, bundle, bn, NULL, 0, NULL) != KERNELS_ESIGNATURE)
			return 1;
		t[i] = now_ms() - t0;
	}
	report("public-good", t, runs);

	for (i = 0; i < runs; i++) {
		double t0 = now_ms();
		if (kernels_verify_variant(NULL, dir, &o)) {
			fprintf(stderr, "digest: %s\n", kernels_error_last());
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	report("digest", t, runs);

	for (i = 0; i < runs; i++) {
		double t0 = now_ms();
		if (kernels_signature_verify_variant(NULL, dir, &o)) {
			fprintf(stderr, "sig+digest: %s\n", kernels_error_last());
			return 1;
		}
		t[i] = now_ms() - t0;
	}
	report("sig+digest", t, runs);

	for (i = 0; i < runs; i++)
		if ((t[i] = cold_load(dir, NULL, KERNELS_SIGNATURE_OFF, root)) < 0)
			return 1;
	report("load off", t, runs);
	for (i = 0; i < runs; i++)
		if ((t[i] = cold_load(dir, NULL, KERNELS_SIGNATURE_REQUIRE, root)) < 0)
			return 1;
	report("load require", t, runs);
	if (argc > 4 && cached_rows(argv[4], root, t, runs))
		return 1;
	free(t);
	free(meta);
	free(bundle);
	return 0;
}

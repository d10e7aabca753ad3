/* Cold-fetch benchmark against the local Hub fixture (tests/hub).
 *
 *   fetch_bench [small_files] [large_files] [large_mib] [repeats]
 *
 * Publishes one kernel with two variants: "many-small" (small_files files of
 * 1-8 KiB, plain git blobs answered by the Hub itself) and "few-large"
 * (large_files LFS files of large_mib MiB, each a 302 to the fixture's CDN).
 * Then, for several max_parallel settings, fetches each variant into an
 * empty cache `repeats` times and prints the best wall time, files/s and
 * MiB/s with the number of transfers that ran at once, and the CPU time
 * this process (libkernels: HTTP, hashing, writing) spent. The fixture is a
 * Python server on 127.0.0.1 that runs git for every request (~60 ms each):
 * wall times of the many-small variant are dominated by it, so compare
 * settings and versions with them, and read libkernels' own cost from the
 * CPU column. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels.h"
#include "test_hub.h"
#include "testutil.h"

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void fill(unsigned char *p, size_t n, unsigned long long seed)
{
	size_t i;
	for (i = 0; i < n; i++) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		p[i] = (unsigned char)(seed >> 24);
	}
}

static int publish(test_hub *hub, int small, int large, int large_mib)
{
	char *src = test_mkdtemp("bench-src"), path[4096];
	size_t big = (size_t)large_mib << 20;
	unsigned char *buf = malloc(big > 8192 ? big : 8192);
	int i, rc;

	for (i = 0; i < small; i++) {
		size_t n = 1024 + (size_t)(i * 7919) % 7168;
		fill(buf, n, 1000 + (unsigned long long)i);
		snprintf(path, sizeof(path), "%s/build/many-small/mod/f%04d.py", src, i);
		if (test_write_file(path, buf, n))
			return -1;
	}
	for (i = 0; i < large; i++) {
		fill(buf, big, 5000 + (unsigned long long)i);
		snprintf(path, sizeof(path), "%s/build/few-large/_lib%d.so", src, i);
		if (test_write_file(path, buf, big))
			return -1;
	}
	free(buf);
	rc = test_hub_publish(hub, "--repo bench/k --dir '%s' --branch main", src);
	test_rmtree(src);
	free(src);
	return rc;
}

/* Best of `repeats` cold fetches; 0 on success. */
static int run(test_hub *hub, const char *commit, const char *variant, int parallel, int repeats)
{
	double best = 1e30, best_cpu = 0;
	kernels_download_stats st, best_st;
	int r;

	memset(&best_st, 0, sizeof(best_st));
	for (r = 0; r < repeats; r++) {
		char *cache = test_mkdtemp("bench-cache");
		kernels_options o;
		kernels_snapshot *s = NULL;
		const char *vs[1] = { variant };
		double t0, c0, dt, cpu;

		kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
		o.endpoint = test_hub_endpoint(hub);
		o.cache_dir = cache;
		o.offline = 0;
		o.max_parallel = parallel;
		t0 = clock_s(CLOCK_MONOTONIC);
		c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
		if (kernels_download(&s, "bench/k", commit, vs, 1, &o) < 0) {
			fprintf(stderr, "fetch_bench: %s\n", kernels_error_last());
			test_rmtree(cache);
			free(cache);
			return -1;
		}
		dt = clock_s(CLOCK_MONOTONIC) - t0;
		cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
		kernels_snapshot_stats(&st, s);
		kernels_snapshot_free(s);
		test_rmtree(cache);
		free(cache);
		if (dt < best) {
			best = dt;
			best_cpu = cpu;
			best_st = st;
		}
	}
	printf("%-11s %5zu files %7.1f MiB  max_parallel=%-3d ran_at_once=%-3u %8.3f s %8.1f files/s %7.1f MiB/s"
	       "  client CPU %.3f s\n",
	       variant, best_st.files, best_st.bytes_total / 1048576.0, parallel, best_st.max_parallel, best,
	       best_st.files / best, best_st.bytes_total / 1048576.0 / best, best_cpu);
	return 0;
}

int main(int argc, char **argv)
{
	int small = argc > 1 ? atoi(argv[1]) : 400;
	int large = argc > 2 ? atoi(argv[2]) : 4;
	int large_mib = argc > 3 ? atoi(argv[3]) : 32;
	int repeats = argc > 4 ? atoi(argv[4]) : 1;
	static const int parallel[] = { 1, 4, 8, 16 };
	test_hub *hub = test_hub_start();
	char commit[41];
	size_t i;
	int rc = 0;

	if (!hub)
		return 1;
	if (publish(hub, small, large, large_mib) < 0) {
		test_hub_stop(hub);
		return 1;
	}
	snprintf(commit, sizeof(commit), "%s", test_hub_last_commit(hub));
	printf("libkernels %s cold fetch from the local Hub fixture (%s), best of %d\n", kernels_version(),
	       test_hub_endpoint(hub), repeats);
	for (i = 0; i < sizeof(parallel) / sizeof(parallel[0]) && rc == 0; i++)
		rc = run(hub, commit, "many-small", parallel[i], repeats);
	for (i = 0; i < sizeof(parallel) / sizeof(parallel[0]) && rc == 0; i++)
		rc = run(hub, commit, "few-large", parallel[i], repeats);
	test_hub_stop(hub);
	return rc ? 1 : 0;
}

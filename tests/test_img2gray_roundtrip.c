/* The round trip of the reference kernel: the img2gray variants this build
 * made (cuda/CMakeLists.txt) are published to the local Hub as v1.0.0 ..
 * v2.0.0, fetched back by a C host with kernels_get(">=1.1.2,<2"), and the
 * C entry point of the loaded module is checked against a reference
 * computed here, on random images of odd sizes. Torch variants need
 * libtorch in the process, so the host loads it first, as a server linked
 * against libtorch would have. Exits 77 (skipped) when this build has no
 * torch variant (no torch, or a sanitizer build). */
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "test_hub.h"
#include "testutil.h"

typedef int (*cpu_fn)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t);

static test_hub *hub;
static char *cache, *variants_dir;

static uint8_t reference_pixel(unsigned r, unsigned g, unsigned b)
{
	double y = 0.2109375 * r + 0.71875 * g + 0.0703125 * b; /* 54/256, 184/256, 18/256 */
	return (uint8_t)(y + 0.5);
}

static int has_torch_variant(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && (e = readdir(d)))
		found |= !strncmp(e->d_name, "torch", 5);
	if (d)
		closedir(d);
	return found;
}

static int load_libtorch(void)
{
	char path[4096];
	FILE *p = popen(KERNELS_PYTHON " -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null", "r");
	int ok = 0;

	if (p && fgets(path, sizeof(path) - 32, p)) {
		path[strcspn(path, "\n")] = '\0';
		strcat(path, "/lib/libtorch.so");
		ok = dlopen(path, RTLD_NOW | RTLD_GLOBAL) != NULL;
	}
	if (p)
		pclose(p);
	return ok;
}

static int setup(void **state)
{
	(void)state;
	hub = test_hub_start();
	assert_non_null(hub);
	cache = test_mkdtemp("img2gray-cache");
	assert_int_equal(test_system("%s '%s/scripts/publish-img2gray.py' --root '%s' --build '%s' >/dev/null",
				     KERNELS_PYTHON, KERNELS_SOURCE_DIR, test_hub_root(hub), variants_dir), 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_hub_stop(hub);
	test_rmtree(cache);
	free(cache);
	return 0;
}

static void check_random_images(cpu_fn run)
{
	static const int64_t sizes[][3] = { { 1, 1, 1 }, { 1, 7, 13 }, { 2, 31, 17 }, { 3, 101, 67 }, { 1, 480, 641 } };
	uint64_t seed = 0x1234567;
	size_t s;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int64_t b = sizes[s][0], h = sizes[s][1], w = sizes[s][2], n = b * h * w, i;
		uint8_t *rgb = malloc((size_t)(3 * n)), *gray = malloc((size_t)n);

		for (i = 0; i < 3 * n; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			rgb[i] = (uint8_t)(seed >> 56);
		}
		assert_int_equal(run(rgb, gray, b, h, w), 0);
		for (i = 0; i < n; i++)
			if (gray[i] != reference_pixel(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]))
				fail_msg("%lldx%lldx%lld: pixel %lld is %u, expected %u", (long long)b, (long long)h,
					 (long long)w, (long long)i, gray[i],
					 reference_pixel(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]));
		free(rgb);
		free(gray);
	}
}

/* Fetches by version range with `backend` forced (NULL: detected) and
 * checks the module's C entry point. */
static void fetch_and_check(const char *backend, const char *variant_prefix)
{
	kernels_options o;
	kernels_system sys = { 0 };
	kernels_kernel *k = NULL;
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	cpu_fn run;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = test_hub_endpoint(hub);
	o.cache_dir = cache;
	o.offline = 0;
	sys.backend = backend;
	o.system = backend ? &sys : NULL;
	if (kernels_get_ext(&k, &st, "kernels-community/img2gray", ">=1.1.2,<2", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	if (strncmp(kernels_kernel_variant(k), variant_prefix, strlen(variant_prefix)))
		fail_msg("chose %s, expected %s*", kernels_kernel_variant(k), variant_prefix);
	assert_int_equal(st.from_cache, 0);
	assert_non_null(strstr(kernels_metadata_id(kernels_kernel_metadata(k)), "_img2gray_"));
	run = (cpu_fn)kernels_symbol(k, "img2gray_cpu");
	assert_non_null(run);
	check_random_images(run);
	assert_int_equal(run(NULL, NULL, 1, 1, 1), -1); /* the kernel's own argument check */
	kernels_kernel_close(k);

	/* The version range chose v1.1.2: the cache recorded the tag. */
	assert_int_equal(test_system("test -f '%s/kernels--kernels-community--img2gray/refs/v1.1.2'", cache), 0);
}

/* The torch CPU variant, as a CPU-only server asks for it. */
static void test_cpu_variant_by_range(void **state)
{
	(void)state;
	fetch_and_check("cpu", "torch211-cxx11-cpu-");
}

/* Whatever this process's torch makes best (the CUDA build of torch picks
 * the cu130 variant even without a GPU; its module runs on the CPU too). */
static void test_detected_variant_by_range(void **state)
{
	(void)state;
	fetch_and_check(NULL, "torch211-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_variant_by_range),
		cmocka_unit_test(test_detected_variant_by_range),
	};

	if (asprintf(&variants_dir, "%s/variants/img2gray/build", KERNELS_BINARY_DIR) < 0)
		return 1;
	if (!has_torch_variant(variants_dir)) {
		printf("skipped: this build made no torch variant of img2gray (no torch, or a sanitizer build)\n");
		return 77;
	}
	if (!load_libtorch()) {
		/* The build found torch, so this is a failure, not a skip. */
		printf("libtorch of the torch that built the variants cannot be loaded: %s\n", dlerror());
		return 1;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}

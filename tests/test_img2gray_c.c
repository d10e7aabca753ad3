/* The plain C entry points of img2gray (cuda/src/img2gray_cpu.c, which every
 * variant's module exports), built alone as <build>/cuda/c-test/libimg2gray.so
 * by cuda/tests.cmake: loaded with dlopen as a C host would a module, its
 * entry point checked against a reference computed here from the documented
 * formula in double arithmetic, on random images of odd sizes with a batch
 * dimension. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dlfcn.h>
#include <cmocka.h>

#include "testutil.h"

typedef int (*cpu_fn)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t);
typedef int (*cuda_fn)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t, void *);

static void *lib;
static cpu_fn img2gray_cpu;

/* Documented rounding: round half up of (54 R + 184 G + 18 B) / 256. */
static uint8_t reference_pixel(unsigned r, unsigned g, unsigned b)
{
	double y = (54.0 * r + 184.0 * g + 18.0 * b) / 256.0;
	return (uint8_t)(unsigned)(y + 0.5); /* y >= 0: truncation is floor */
}

static uint64_t rng_state;

static int setup(void **state)
{
	const char *bin = getenv("KERNELS_BINARY_DIR");
	char path[4096];
	(void)state;
	if (!bin)
		bin = KERNELS_BINARY_DIR;
	snprintf(path, sizeof(path), "%s/cuda/c-test/libimg2gray.so", bin);
	lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "cannot load the img2gray C entry points %s: %s (build the project first)\n", path,
			dlerror());
		return -1;
	}
	img2gray_cpu = (cpu_fn)dlsym(lib, "img2gray_cpu");
	if (!img2gray_cpu)
		return -1;
	rng_state = test_rng_seed();
	printf("# seed %llu\n", (unsigned long long)rng_state);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (lib)
		dlclose(lib);
	return 0;
}

static void check_shape(int64_t b, int64_t h, int64_t w)
{
	size_t n = (size_t)(b * h * w);
	uint8_t *rgb = malloc(3 * n + 1), *gray = malloc(n + 1);
	size_t i;
	assert_non_null(rgb);
	assert_non_null(gray);
	for (i = 0; i < 3 * n; i++)
		rgb[i] = (uint8_t)(test_rng(&rng_state) >> 56);
	memset(gray, 0x5a, n + 1); /* poison, plus a guard byte */
	assert_int_equal(img2gray_cpu(rgb, gray, b, h, w), 0);
	for (i = 0; i < n; i++) {
		uint8_t want = reference_pixel(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
		if (gray[i] != want)
			fail_msg("b=%lld h=%lld w=%lld pixel %zu: got %u want %u", (long long)b, (long long)h,
				 (long long)w, i, gray[i], want);
	}
	assert_int_equal(gray[n], 0x5a);
	free(rgb);
	free(gray);
}

static void test_fixed_shapes(void **state)
{
	static const int64_t shapes[][3] = { { 1, 1, 1 }, { 1, 1, 15 }, { 1, 1, 17 }, { 1, 7, 13 }, { 3, 17, 31 },
					     { 2, 33, 65 }, { 5, 3, 1 }, { 1, 481, 641 }, { 4, 121, 257 } };
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		check_shape(shapes[i][0], shapes[i][1], shapes[i][2]);
}

static void test_random_odd_shapes(void **state)
{
	int i;
	(void)state;
	for (i = 0; i < 20; i++)
		check_shape(1 + (int64_t)(test_rng(&rng_state) % 4), 1 + 2 * (int64_t)(test_rng(&rng_state) % 100),
			    1 + 2 * (int64_t)(test_rng(&rng_state) % 200));
}

/* Every (R, G, B): the kernel equals the documented formula, and the fixed
 * point stays within 1 of round(0.21 R + 0.72 G + 0.07 B). */
static void test_exhaustive(void **state)
{
	const size_t n = 256 * 256 * 256;
	uint8_t *rgb = malloc(3 * n), *gray = malloc(n);
	size_t i;
	int maxdiff = 0;
	(void)state;
	assert_non_null(rgb);
	assert_non_null(gray);
	for (i = 0; i < n; i++) {
		rgb[3 * i] = (uint8_t)(i >> 16);
		rgb[3 * i + 1] = (uint8_t)(i >> 8);
		rgb[3 * i + 2] = (uint8_t)i;
	}
	assert_int_equal(img2gray_cpu(rgb, gray, 1, 4096, 4096), 0);
	for (i = 0; i < n; i++) {
		unsigned r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
		int exact = (int)(0.21 * r + 0.72 * g + 0.07 * b + 0.5);
		int d = abs((int)gray[i] - exact);
		if (gray[i] != reference_pixel(r, g, b))
			fail_msg("rgb (%u,%u,%u): got %u want %u", r, g, b, gray[i], reference_pixel(r, g, b));
		if (d > maxdiff)
			maxdiff = d;
	}
	assert_true(maxdiff <= 1);
	/* the extremes */
	assert_int_equal(gray[0], 0);
	assert_int_equal(gray[n - 1], 255);
	free(rgb);
	free(gray);
}

static void test_errors(void **state)
{
	uint8_t in[3] = { 1, 2, 3 }, out[1];
	cuda_fn cuda = (cuda_fn)dlsym(lib, "img2gray_cuda");
	int (*has_cuda)(void) = (int (*)(void))dlsym(lib, "img2gray_has_cuda");
	(void)state;
	assert_int_equal(img2gray_cpu(NULL, NULL, 0, 10, 10), 0);
	assert_int_equal(img2gray_cpu(NULL, out, 1, 1, 1), -1);
	assert_int_equal(img2gray_cpu(in, NULL, 1, 1, 1), -1);
	assert_int_equal(img2gray_cpu(in, out, 1, -1, 1), -1);
	assert_int_equal(img2gray_cpu(in, out, INT64_MAX, 2, 2), -1);
	assert_int_equal(img2gray_cpu(in, out, 1, 1, INT64_MAX / 2), -1);
	/* the CPU-only module answers ENOCUDA instead of missing the symbol */
	assert_non_null(cuda);
	assert_non_null(has_cuda);
	assert_int_equal(has_cuda(), 0);
	assert_int_equal(cuda(in, out, 1, 1, 1, NULL), -2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed_shapes),
		cmocka_unit_test(test_random_odd_shapes),
		cmocka_unit_test(test_exhaustive),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

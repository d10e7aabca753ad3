/* A plain C host of img2gray's tvm-ffi variant, end to end. The variants
 * this build made (torch and tvm-ffi, cuda/CMakeLists.txt) are published to
 * the local Hub as v1.0.0 .. v2.0.0; this process, linked against libkernels
 * and libtvm_ffi only (no libtorch, no libpython), kernels_get()s
 * ">=1.1.2,<2", must be given the tvm-ffi variant, and calls its
 * img2gray_cpu the way include/kernels/tvm_ffi.h documents, on random images
 * of odd sizes with batch dimensions, against (54 R + 184 G + 18 B + 128) >> 8
 * computed here. Also: the errors the kernel raises through tvm-ffi, the
 * lookup's errors, and that neither libtorch/libc10 nor libpython was ever
 * mapped into the process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <tvm/ffi/c_api.h>

#include "kernels.h"
#include "test_hub.h"
#include "testutil.h"

#define REPO "kernels-community/img2gray"

static test_hub *hub;
static char *cache, *scratch, tag[32];
static uint64_t rng_state;

static int setup(void **state)
{
	TVMFFIVersion v;
	(void)state;
	TVMFFIGetVersion(&v);
	snprintf(tag, sizeof(tag), "tvm-ffi%u%u-", v.major, v.minor);
	rng_state = test_rng_seed();
	printf("# seed %llu, linked tvm-ffi %u.%u.%u\n", (unsigned long long)rng_state, v.major, v.minor, v.patch);
	if (!(hub = test_hub_start()) || !(cache = test_mkdtemp("tvm-ffi-cache")) ||
	    !(scratch = test_mkdtemp("tvm-ffi-scratch")))
		return -1;
	return test_system("%s '%s/scripts/publish-img2gray.py' --root '%s' --build '%s/variants/img2gray/build' >/dev/null",
			   KERNELS_PYTHON, KERNELS_SOURCE_DIR, test_hub_root(hub), KERNELS_BINARY_DIR) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	test_hub_stop(hub);
	test_rmtree(cache);
	test_rmtree(scratch);
	free(cache);
	free(scratch);
	return 0;
}

static kernels_kernel *get(const char *backend, kernels_get_stats *st)
{
	kernels_options o;
	kernels_system sys = { 0 };
	kernels_kernel *k = NULL;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = test_hub_endpoint(hub);
	o.cache_dir = cache;
	sys.backend = backend;
	o.system = backend ? &sys : NULL;
	if (kernels_get_ext(&k, st, REPO, ">=1.1.2,<2", &o) < 0)
		fail_msg("kernels_get: %s", kernels_error_last());
	return k;
}

static void *lookup(kernels_kernel *k, const char *name)
{
	void *fn = NULL;
	if (kernels_tvm_ffi_function(&fn, k, name) < 0)
		fail_msg("kernels_tvm_ffi_function(%s): %s", name, kernels_error_last());
	assert_non_null(fn);
	return fn;
}

/* Calls fn(out, in) with two DLTensor* arguments. On an error, its kind and
 * message go to kind/msg (when given) and the error is released. */
static int call(void *fn, DLTensor *out, DLTensor *in, char *kind, char *msg, size_t size)
{
	TVMFFIAny args[2] = { { .type_index = kTVMFFIDLTensorPtr, .v_ptr = out },
			      { .type_index = kTVMFFIDLTensorPtr, .v_ptr = in } };
	TVMFFIAny result = { .type_index = kTVMFFINone };
	TVMFFIObjectHandle err = NULL;
	const TVMFFIErrorCell *cell;
	int rc = ((TVMFFISafeCallType)fn)(NULL, args, 2, &result);

	if (rc == 0) {
		assert_int_equal(result.type_index, kTVMFFINone); /* the functions return nothing */
		return 0;
	}
	TVMFFIErrorMoveFromRaised(&err);
	assert_non_null(err);
	cell = (const TVMFFIErrorCell *)((const char *)err + sizeof(TVMFFIObject));
	if (kind)
		snprintf(kind, size, "%.*s", (int)cell->kind.size, cell->kind.data);
	if (msg)
		snprintf(msg, size, "%.*s", (int)cell->message.size, cell->message.data);
	TVMFFIObjectDecRef(err);
	return rc;
}

static DLTensor tensor(void *data, int32_t ndim, int64_t *shape)
{
	DLTensor t = { .data = data, .device = { kDLCPU, 0 }, .ndim = ndim, .dtype = { kDLUInt, 8, 1 },
		       .shape = shape };
	return t;
}

/* in [dims..., h, w, 3] -> out [dims..., h, w], both with poisoned guard
 * bytes after them, against the integer formula. */
static void check_image(void *fn, int nbatch, const int64_t *batch, int64_t h, int64_t w)
{
	int64_t in_shape[8], out_shape[8], n = h * w;
	size_t i;
	int d;
	uint8_t *rgb, *gray;
	DLTensor in, out;

	for (d = 0; d < nbatch; d++) {
		in_shape[d] = out_shape[d] = batch[d];
		n *= batch[d];
	}
	in_shape[nbatch] = out_shape[nbatch] = h;
	in_shape[nbatch + 1] = out_shape[nbatch + 1] = w;
	in_shape[nbatch + 2] = 3;
	rgb = malloc((size_t)(3 * n) + 1);
	gray = malloc((size_t)n + 16);
	assert_non_null(rgb);
	assert_non_null(gray);
	for (i = 0; i < (size_t)(3 * n); i++)
		rgb[i] = (uint8_t)(test_rng(&rng_state) >> 56);
	memset(gray, 0x5a, (size_t)n + 16);
	in = tensor(rgb, nbatch + 3, in_shape);
	out = tensor(gray, nbatch + 2, out_shape);
	assert_int_equal(call(fn, &out, &in, NULL, NULL, 0), 0);
	for (i = 0; i < (size_t)n; i++) {
		unsigned want = (54u * rgb[3 * i] + 184u * rgb[3 * i + 1] + 18u * rgb[3 * i + 2] + 128u) >> 8;
		if (gray[i] != want)
			fail_msg("%d batch dims, h=%lld w=%lld: pixel %zu is %u, expected %u", nbatch, (long long)h,
				 (long long)w, i, gray[i], want);
	}
	for (i = 0; i < 16; i++)
		assert_int_equal(gray[n + (int64_t)i], 0x5a);
	free(rgb);
	free(gray);
}

static void check_random_images(void *fn)
{
	static const int64_t fixed[][2] = { { 1, 1 }, { 1, 15 }, { 7, 13 }, { 33, 65 }, { 481, 641 } };
	int64_t batch[3];
	size_t s;
	int i;

	for (s = 0; s < sizeof(fixed) / sizeof(fixed[0]); s++) {
		batch[0] = 1 + (int64_t)s;
		check_image(fn, 0, NULL, fixed[s][0], fixed[s][1]);
		check_image(fn, 1, batch, fixed[s][0], fixed[s][1]);
	}
	for (i = 0; i < 12; i++) {
		int nbatch = 1 + i % 2;
		batch[0] = 1 + (int64_t)(test_rng(&rng_state) % 4);
		batch[1] = 1 + 2 * (int64_t)(test_rng(&rng_state) % 2);
		check_image(fn, nbatch, batch, 1 + 2 * (int64_t)(test_rng(&rng_state) % 100),
			    1 + 2 * (int64_t)(test_rng(&rng_state) % 150));
	}
}

/* A plain C host: libtvm_ffi and the module (when given) are mapped,
 * nothing of torch or Python is. */
static void check_maps(const kernels_kernel *k)
{
	char *maps = test_read_file("/proc/self/maps", NULL), *lib = NULL;

	assert_non_null(maps);
	assert_non_null(strstr(maps, "/libtvm_ffi.so"));
	if (k) {
		/* in the cache the module is a link to its blob, which is what is mapped */
		assert_non_null(lib = realpath(kernels_kernel_library(k), NULL));
		if (!strstr(maps, lib))
			fail_msg("the kernel's module %s (%s) is not mapped", kernels_kernel_library(k), lib);
	}
	/* (cmocka cuts long messages: the line that matched goes first) */
	if (strstr(maps, "libtorch") || strstr(maps, "libc10") || strstr(maps, "libpython"))
		fail_msg("torch or Python is mapped into this process: %.200s", strstr(maps, "libtorch") ?
			 strstr(maps, "libtorch") : strstr(maps, "libc10") ? strstr(maps, "libc10") : strstr(maps, "libpython"));
	free(lib);
	free(maps);
}

/* libkernels sees the libtvm_ffi this process links, and no torch. */
static void test_system_detection(void **state)
{
	kernels_system *sys = NULL;
	TVMFFIVersion v;
	(void)state;
	TVMFFIGetVersion(&v);
	if (kernels_system_detect(&sys, NULL) < 0)
		fail_msg("kernels_system_detect: %s", kernels_error_last());
	assert_int_equal(sys->tvm_ffi_version, (int)(v.major * 100 + v.minor));
	assert_non_null(sys->tvm_ffi_path);
	assert_int_equal(sys->torch_version, 0);
	kernels_system_free(sys);
}

/* The CPU variant, as a CPU-only host asks for it: downloaded, called. */
static void test_cpu_variant_by_range(void **state)
{
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	kernels_kernel *k;
	char want[64];
	(void)state;
	k = get("cpu", &st);
	snprintf(want, sizeof(want), "%scpu-", tag);
	if (strncmp(kernels_kernel_variant(k), want, strlen(want)))
		fail_msg("chose %s, expected %s*", kernels_kernel_variant(k), want);
	assert_int_equal(st.from_cache, 0);
	assert_non_null(strstr(kernels_metadata_id(kernels_kernel_metadata(k)), "_img2gray_cpu_"));
	check_random_images(lookup(k, "img2gray_cpu"));
	check_maps(k);
	kernels_kernel_close(k);
	/* the range chose v1.1.2 */
	assert_int_equal(test_system("test -f '%s/kernels--kernels-community--img2gray/refs/v1.1.2'", cache), 0);
}

/* Whatever this machine makes best: a tvm-ffi variant (the CUDA one on a
 * GPU machine, whose module has img2gray_cpu too). */
static void test_detected_variant(void **state)
{
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	kernels_kernel *k;
	(void)state;
	k = get(NULL, &st);
	if (strncmp(kernels_kernel_variant(k), tag, strlen(tag)))
		fail_msg("chose %s, expected %s*", kernels_kernel_variant(k), tag);
	check_random_images(lookup(k, "img2gray_cpu"));
	check_maps(k);
	kernels_kernel_close(k);
}

/* The kernel's own checks come back as tvm-ffi errors with a kind. */
static void test_kernel_errors(void **state)
{
	uint8_t rgb[2 * 3 * 3] = { 0 }, gray[2 * 3] = { 0 };
	int64_t in_shape[3] = { 2, 3, 3 }, out_shape[2] = { 2, 3 }, bad_shape[2] = { 3, 2 };
	int64_t strides[3] = { 3, 6, 1 }; /* H and W swapped: not contiguous */
	char kind[64], msg[512];
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	kernels_kernel *k = get("cpu", &st);
	void *fn = lookup(k, "img2gray_cpu");
	DLTensor in = tensor(rgb, 3, in_shape), out = tensor(gray, 2, out_shape), bad;
	(void)state;

	bad = in;
	bad.dtype.bits = 16;
	assert_int_not_equal(call(fn, &out, &bad, kind, msg, sizeof(msg)), 0);
	assert_string_equal(kind, "TypeError");
	assert_non_null(strstr(msg, "input must be uint8"));

	bad = out;
	bad.shape = bad_shape;
	assert_int_not_equal(call(fn, &bad, &in, kind, msg, sizeof(msg)), 0);
	assert_string_equal(kind, "ValueError");
	assert_non_null(strstr(msg, "output must have the input's shape"));

	bad = in;
	bad.strides = strides;
	assert_int_not_equal(call(fn, &out, &bad, kind, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "input must be contiguous"));

	bad = out;
	bad.device.device_type = kDLCUDA;
	assert_int_not_equal(call(fn, &bad, &in, kind, msg, sizeof(msg)), 0);
	assert_non_null(strstr(msg, "must both be on the cpu"));

	/* and a good call still works afterwards */
	assert_int_equal(call(fn, &out, &in, NULL, NULL, 0), 0);
	kernels_kernel_close(k);
}

/* A local variant folder assembled with scripts/build-variant.py. */
static kernels_kernel *local_variant(const char *name, const char *extra)
{
	kernels_kernel *k = NULL;
	char *dir = NULL;

	assert_true(asprintf(&dir, "%s/%s", scratch, name) > 0);
	assert_int_equal(test_system("%s '%s/scripts/build-variant.py' assemble --out '%s' --name img2gray "
				     "--id _img2gray_cpu_test --major 1 --backend cpu %s >/dev/null",
				     KERNELS_PYTHON, KERNELS_SOURCE_DIR, dir, extra), 0);
	if (kernels_load_local(&k, dir, NULL) < 0)
		fail_msg("kernels_load_local(%s): %s", dir, kernels_error_last());
	free(dir);
	return k;
}

static void test_lookup_errors(void **state)
{
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	kernels_kernel *k = get("cpu", &st), *plain, *noarch;
	void *fn = (void *)1;
	char *extra = NULL;
	(void)state;

	assert_int_equal(kernels_tvm_ffi_function(NULL, k, "img2gray_cpu"), KERNELS_EINVAL);
	assert_int_equal(kernels_tvm_ffi_function(&fn, NULL, "img2gray_cpu"), KERNELS_EINVAL);
	assert_null(fn);
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, NULL), KERNELS_EINVAL);
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, ""), KERNELS_EINVAL);
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, "img2gray-cpu"), KERNELS_EINVAL);
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, "__tvm_ffi_img2gray_cpu"), KERNELS_ENOTFOUND);

	/* a missing function: the message lists what the module has */
	assert_int_equal(kernels_tvm_ffi_function(&fn, k, "img2rgb"), KERNELS_ENOTFOUND);
	assert_null(fn);
	assert_non_null(strstr(kernels_error_last(), "no tvm-ffi function 'img2rgb'"));
	{
		const char *m = kernels_error_last(), *list = strstr(m, "its functions are: ");
		assert_non_null(list); /* the CPU module has exactly one */
		assert_string_equal(list, "its functions are: img2gray_cpu");
	}
	kernels_kernel_close(k);

	/* a module with the plain C entry points only: not a tvm-ffi variant */
	assert_true(asprintf(&extra, "--native '%s/cuda/c-test/libimg2gray.so'", KERNELS_BINARY_DIR) > 0);
	plain = local_variant("plain", extra);
	free(extra);
	assert_non_null(kernels_symbol(plain, "img2gray_cpu"));
	assert_int_equal(kernels_tvm_ffi_function(&fn, plain, "img2gray_cpu"), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "is not a tvm-ffi variant"));
	assert_non_null(strstr(kernels_error_last(), "exports no __tvm_ffi_* function"));
	kernels_kernel_close(plain);

	/* Python files only (noarch) */
	assert_true(asprintf(&extra, "--python-package '%s/cuda/tvm-ffi-ext/img2gray'", KERNELS_SOURCE_DIR) > 0);
	noarch = local_variant("noarch", extra);
	free(extra);
	assert_int_equal(kernels_tvm_ffi_function(&fn, noarch, "img2gray_cpu"), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "no native module"));
	kernels_kernel_close(noarch);
}

/* Last: nothing any test did mapped torch or Python. */
static void test_no_torch_no_python(void **state)
{
	(void)state;
	check_maps(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_system_detection),
		cmocka_unit_test(test_cpu_variant_by_range),
		cmocka_unit_test(test_detected_variant),
		cmocka_unit_test(test_kernel_errors),
		cmocka_unit_test(test_lookup_errors),
		cmocka_unit_test(test_no_torch_no_python),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

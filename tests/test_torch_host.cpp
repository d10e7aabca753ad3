/* A C++ inference server's view: a host linked against libtorch (with
 * --as-needed, so libtorch.so itself is not among its libraries) and no
 * Python at all fetches the kernel-builder-built img2gray torch variant
 * from the local Hub, finds its op through the dispatcher with
 * include/kernels/torch.hpp and checks the numbers against a reference
 * computed here. On a machine with a GPU the CUDA variant runs on CUDA
 * tensors too and must match the CPU bit for bit.
 *
 *   test_torch_host VARIANTS_BUILD_DIR REPO CPU_VARIANT [--no-digest | --cpu-only]
 *
 * publishes the variants of VARIANTS_BUILD_DIR as REPO and expects
 * CPU_VARIANT for a CPU-only request. --no-digest publishes the build with
 * metadata.json stripped of its digest, as kernel-builder wrote it before
 * digests existed; --cpu-only is for a repo with no variant for the
 * detected backend. One process per form: torch allows one library per ops
 * namespace. */
#include <kernels/torch.hpp>

#include <ATen/ATen.h>
#include <ATen/Context.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

/* cmocka last: its fail() macro would rename std::ios::fail. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
extern "C" {
#include <cmocka.h>
}

extern "C" {
#include "test_hub.h"
#include "testutil.h"
}

static test_hub *hub;
static char *cache;
static const char *variants_dir;
static bool no_digest;
static std::string repo, cpu_variant;

static bool mapped(const char *needle)
{
	std::ifstream maps("/proc/self/maps");
	std::string line;
	while (std::getline(maps, line))
		if (line.find(needle) != std::string::npos)
			return true;
	return false;
}

static at::Tensor reference(const at::Tensor &rgb)
{
	at::Tensor c = rgb.to(at::kInt);
	at::Tensor y = (c.select(-1, 0) * 54 + c.select(-1, 1) * 184 + c.select(-1, 2) * 18 + 128) / 256;
	return y.to(at::kByte);
}

static void options(kernels_options *o, kernels_system *sys, const char *backend)
{
	kernels_options_init(o, KERNELS_OPTIONS_VERSION);
	o->endpoint = test_hub_endpoint(hub);
	o->cache_dir = cache;
	o->offline = 0;
	*sys = kernels_system{};
	sys->backend = backend;
	o->system = backend ? sys : nullptr;
}

static int setup(void **)
{
	if (!(hub = test_hub_start()) || !(cache = test_mkdtemp("torch-host-cache")))
		return -1;
	return test_system("%s '%s/scripts/publish-img2gray.py' --root '%s' --build '%s' --repo %s %s >/dev/null",
			   KERNELS_PYTHON, KERNELS_SOURCE_DIR, test_hub_root(hub), variants_dir, repo.c_str(),
			   no_digest ? "--no-digest" : "");
}

static int teardown(void **)
{
	test_hub_stop(hub);
	test_rmtree(cache);
	free(cache);
	return 0;
}

static void check_op(const kernels::kernel &k, const at::Device &device)
{
	auto img2gray = k.op<void(const at::Tensor &, at::Tensor &)>("img2gray");
	static const int64_t sizes[][3] = { { 1, 1, 1 }, { 1, 7, 13 }, { 2, 31, 17 }, { 3, 101, 67 }, { 1, 480, 641 } };
	at::manual_seed(7);
	for (const auto &s : sizes) {
		at::Tensor rgb = at::randint(0, 256, { s[0], s[1], s[2], 3 }, at::kByte);
		at::Tensor gray = at::empty({ s[0], s[1], s[2] }, at::TensorOptions(at::kByte).device(device));
		img2gray.call(rgb.to(device), gray);
		if (!at::equal(gray.cpu(), reference(rgb)))
			fail_msg("%s: %lldx%lldx%lld differs from the reference", device.str().c_str(), (long long)s[0],
				 (long long)s[1], (long long)s[2]);
	}
}

/* The CPU variant, as a CPU-only server asks for it. */
static void test_cpu_variant(void **)
{
	kernels_options o;
	kernels_system sys;

	assert_false(mapped("libpython"));
	assert_false(mapped("/libtorch.so")); /* --as-needed left it out; libkernels finds it */
	options(&o, &sys, "cpu");
	kernels::kernel k = kernels::kernel::get(repo, ">=1.1.2,<2", &o);
	assert_string_equal(k.variant().c_str(), cpu_variant.c_str());
	assert_true(mapped("/libtorch.so"));

	std::vector<std::string> schemas = k.schemas();
	assert_int_equal(schemas.size(), 1);
	/* As torch prints it: the schema img2gray registered, "Tensor!" with its alias set. */
	assert_true(schemas[0].rfind(k.ns() + "::img2gray(Tensor input, Tensor(", 0) == 0);
	assert_non_null(strstr(schemas[0].c_str(), "!"));
	assert_non_null(strstr(schemas[0].c_str(), " output) -> ()"));
	check_op(k, at::kCPU);

	/* A wrong signature is torch's error; an unknown op is ours, listing what there is. */
	try {
		k.op("gray2img");
		fail_msg("found an op that does not exist");
	} catch (const kernels::error &e) {
		assert_int_equal(e.code(), KERNELS_ENOTFOUND);
		assert_non_null(strstr(e.what(), "img2gray(Tensor input"));
	}
	assert_false(mapped("libpython"));
}

/* Close, then get again: the mapped module is reused, its TORCH_LIBRARY
 * does not run twice (torch would abort), the op still answers. */
static void test_close_and_get_again(void **)
{
	kernels_options o;
	kernels_system sys;

	options(&o, &sys, "cpu");
	{
		kernels::kernel k = kernels::kernel::get(repo, ">=1.1.2,<2", &o);
		check_op(k, at::kCPU);
	}
	o.offline = 1;
	kernels::kernel again = kernels::kernel::get(repo, ">=1.1.2,<2", &o);
	check_op(again, at::kCPU);
	assert_int_equal(kernels_kernel_refcount(again.handle()), 1);
}

/* What this torch makes best: with a CUDA build of torch the cu130 variant
 * (its CUDA libraries loaded by libkernels from the torch folder); its CPU
 * op always runs, its CUDA op where there is a GPU. */
static void test_detected_variant(void **)
{
	kernels_options o;
	kernels_system sys;

	options(&o, &sys, nullptr);
	kernels::kernel k = kernels::kernel::get(repo, ">=1.1.2,<2", &o);
	std::printf("# detected: %s\n", k.variant().c_str());
	check_op(k, at::kCPU);
	if (k.variant().find("-cu") != std::string::npos && at::hasCUDA() &&
	    at::detail::getCUDAHooks().deviceCount() > 0) {
		check_op(k, at::Device(at::kCUDA, 0));
		std::printf("# CUDA op on cuda:0 matches the reference\n");
	}
	assert_false(mapped("libpython"));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_variant),
		cmocka_unit_test(test_close_and_get_again),
		cmocka_unit_test(test_detected_variant),
	};

	if (argc < 4) {
		std::fprintf(stderr, "usage: %s VARIANTS_BUILD_DIR REPO CPU_VARIANT [--no-digest | --cpu-only]\n", argv[0]);
		return 2;
	}
	variants_dir = argv[1];
	repo = argv[2];
	cpu_variant = argv[3];
	no_digest = argc > 4 && !std::strcmp(argv[4], "--no-digest");
	if (argc > 4 && !std::strcmp(argv[4], "--cpu-only"))
		return _cmocka_run_group_tests("tests", tests, 2, setup, teardown);
	return cmocka_run_group_tests(tests, setup, teardown);
}

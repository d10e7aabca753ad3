/* The arch check (lib/variant.c, the backend table lib/backend.c): a
 * variant's backend.archs against the device the kernel will run on, the
 * current one or kernels_options.device, every GPU's result in the trace;
 * switched off by skip_arch_check; ROCm gfx archs like CUDA capabilities;
 * GPUs named by KERNELS_GPU_ARCHS; the versioned kernels_system.
 * (Verdicts against Python kernels 0.17.2's own check:
 * tests/python/test_arch_parity.py.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "backend.h"
#include "testutil.h"

#define CU130 "torch211-cxx11-cu130-x86_64-linux"
#define ROCM63 "torch211-cxx11-rocm63-x86_64-linux"

static kernels_system cuda_two_gpus(void)
{
	kernels_system s = { 0 };
	s.torch_version = 211;
	s.torch_cxx11_abi = 1;
	s.tvm_ffi_version = -1;
	s.backend = "cuda";
	s.backend_version = 1300;
	s.cpu = "x86_64";
	s.os = "linux";
	s.gpu_count = 2;
	s.gpu_archs[0] = 90; /* GPU 0: an H100 */
	s.gpu_archs[1] = 80; /* GPU 1: an A100 */
	return s;
}

/* Resolves one CUDA variant with `archs` on the detected form of `ov`. */
static kernels_variant_trace *resolve(const kernels_system *ov, const char *variant, const char *const *archs,
				      kernels_options *o)
{
	kernels_variant_candidate c = { variant, archs, NULL };
	kernels_variant_trace *t = NULL;
	kernels_system *sys = NULL;

	o->system = ov;
	assert_int_equal(kernels_system_detect(&sys, o), 0);
	assert_int_equal(kernels_variant_resolve_candidates(&t, &c, 1, sys, o), 0);
	kernels_system_free(sys);
	return t;
}

static void test_current_device_and_option(void **state)
{
	static const char *const a80[] = { "8.0", NULL };
	kernels_system ov = cuda_two_gpus();
	kernels_variant_trace *t;
	kernels_options o;
	(void)state;

	unsetenv("KERNELS_DEVICE");
	unsetenv("KERNELS_SKIP_ARCH_CHECK");
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	/* the current device (0, an H100 9.0) does not run an 8.0-only build,
	 * though GPU 1 would: rejected, as 0.17 rejects it */
	t = resolve(&ov, CU130, a80, &o);
	assert_null(kernels_variant_trace_chosen(t));
	assert_string_equal(kernels_variant_trace_reason_at(t, 0), "CUDA capability 9.0 of the current device is not "
			    "supported by the architectures of the build: 8.0");
	assert_string_equal(kernels_variant_trace_devices_at(t, 0), "GPU 0 (9.0): not supported [the device checked]; "
			    "GPU 1 (8.0): supported; build archs: 8.0");
	kernels_variant_trace_free(t);

	/* the caller runs on GPU 1 */
	o.device = "1";
	t = resolve(&ov, CU130, a80, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), CU130);
	assert_non_null(strstr(kernels_variant_trace_devices_at(t, 0), "GPU 1 (8.0): supported [the device checked]"));
	kernels_variant_trace_free(t);

	/* ... said by the environment, or by the process (its current device) */
	o.device = NULL;
	setenv("KERNELS_DEVICE", "cuda:1", 1);
	t = resolve(&ov, CU130, a80, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), CU130);
	kernels_variant_trace_free(t);
	unsetenv("KERNELS_DEVICE");
	ov.current_device = 1;
	t = resolve(&ov, CU130, a80, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), CU130);
	kernels_variant_trace_free(t);
	ov.current_device = 0;

	/* a device that is not there */
	o.device = "5";
	t = resolve(&ov, CU130, a80, &o);
	assert_null(kernels_variant_trace_chosen(t));
	assert_string_equal(kernels_variant_trace_reason_at(t, 0), "device 5 does not exist: this machine has 2 GPUs");
	kernels_variant_trace_free(t);
	o.device = "gpu one";
	o.system = &ov;
	{
		kernels_variant_candidate c = { CU130, a80, NULL };
		kernels_variant_trace *t2 = NULL;
		assert_int_equal(kernels_variant_resolve_candidates(&t2, &c, 1, NULL, &o), KERNELS_EINVAL);
		assert_non_null(strstr(kernels_error_last(), "kernels_options.device"));
	}
}

static void test_check_off(void **state)
{
	static const char *const a80[] = { "8.0", NULL };
	kernels_system ov = cuda_two_gpus();
	kernels_variant_trace *t;
	kernels_options o;
	(void)state;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.skip_arch_check = 1;
	t = resolve(&ov, CU130, a80, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), CU130);
	assert_non_null(strstr(kernels_variant_trace_devices_at(t, 0), "arch check off"));
	kernels_variant_trace_free(t);

	o.skip_arch_check = 0;
	setenv("KERNELS_SKIP_ARCH_CHECK", "1", 1);
	t = resolve(&ov, CU130, a80, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), CU130);
	kernels_variant_trace_free(t);
	unsetenv("KERNELS_SKIP_ARCH_CHECK");
}

/* 0.17.2 checks whatever build it chose whose metadata says CUDA or
 * ROCm, the noarch and stable-ABI ones too; the metadata's backend.type
 * says which, not the name (torch-universal with CUDA archs). Unlike 0.17,
 * which raises, the next build that fits is chosen. */
static void test_every_kind_is_checked(void **state)
{
	static const char *const a80[] = { "8.0", NULL }, *const a90[] = { "9.0", NULL };
	static const char *const names[] = { "torch-stable-abi29-cu130-x86_64-linux", "tvm-ffi01-cu130-x86_64-linux",
					     "torch-cuda", "torch-universal" };
	kernels_system ov = cuda_two_gpus(); /* the current device: 9.0 */
	kernels_variant_trace *t;
	kernels_options o;
	size_t i;
	(void)state;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	ov.tvm_ffi_version = 1;
	for (i = 0; i < 3; i++) {
		t = resolve(&ov, names[i], a80, &o);
		assert_null(kernels_variant_trace_chosen(t));
		assert_non_null(strstr(kernels_variant_trace_reason_at(t, 0), "CUDA capability 9.0"));
		kernels_variant_trace_free(t);
		t = resolve(&ov, names[i], a90, &o);
		assert_string_equal(kernels_variant_trace_chosen(t), names[i]);
		kernels_variant_trace_free(t);
	}
	/* the name says no backend: the archs are compared only when the
	 * metadata says which backend they are of */
	t = resolve(&ov, "torch-universal", a80, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), "torch-universal");
	kernels_variant_trace_free(t);
	{
		kernels_variant_candidate c[] = { { "torch-cuda", a80, "cuda" }, { "torch-universal", a80, "cuda" },
						  { "torch-universal", a90, "rocm" } };
		kernels_system *sys = NULL;
		o.system = &ov;
		assert_int_equal(kernels_system_detect(&sys, &o), 0);
		assert_int_equal(kernels_variant_resolve_candidates(&t, c, 2, sys, &o), 0);
		assert_null(kernels_variant_trace_chosen(t)); /* both refused */
		kernels_variant_trace_free(t);
		/* archs of another backend than the system's: not compared (0.17
		 * compares CUDA archs only with a CUDA torch) */
		assert_int_equal(kernels_variant_resolve_candidates(&t, c + 2, 1, sys, &o), 0);
		assert_string_equal(kernels_variant_trace_chosen(t), "torch-universal");
		kernels_variant_trace_free(t);
		/* the check off: chosen whatever the archs */
		o.skip_arch_check = 1;
		assert_int_equal(kernels_variant_resolve_candidates(&t, c, 2, sys, &o), 0);
		assert_string_equal(kernels_variant_trace_chosen(t), "torch-cuda");
		kernels_variant_trace_free(t);
		kernels_system_free(sys);
	}
}

static void test_rocm(void **state)
{
	static const char *const mi300[] = { "gfx942", NULL }, *const both[] = { "gfx90a", "gfx942", NULL };
	kernels_system ov = { 0 }, *sys = NULL;
	kernels_variant_trace *t;
	kernels_options o;
	char name[32];
	(void)state;

	ov.torch_version = 211;
	ov.torch_cxx11_abi = 1;
	ov.tvm_ffi_version = -1;
	ov.backend = "rocm";
	ov.backend_version = 603;
	ov.cpu = "x86_64";
	ov.os = "linux";
	ov.gpu_count = 1;
	ov.gpu_arch_names[0] = "gfx90a:sramecc+:xnack-"; /* as torch's gcnArchName says it */
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	t = resolve(&ov, ROCM63, mi300, &o);
	assert_null(kernels_variant_trace_chosen(t));
	assert_string_equal(kernels_variant_trace_reason_at(t, 0), "ROCm arch gfx90a of the current "
			    "device is not supported by the architectures of the build: gfx942");
	kernels_variant_trace_free(t);
	t = resolve(&ov, ROCM63, both, &o);
	assert_string_equal(kernels_variant_trace_chosen(t), ROCM63);
	kernels_variant_trace_free(t);

	/* KERNELS_GPU_ARCHS names ROCm GPUs too; a mixed list is refused */
	setenv("KERNELS_BACKEND", "rocm", 1);
	setenv("KERNELS_BACKEND_VERSION", "6.3", 1);
	setenv("KERNELS_GPU_ARCHS", "gfx942:sramecc+, gfx90a", 1);
	o.system = NULL;
	assert_int_equal(kernels_system_detect(&sys, &o), 0);
	assert_int_equal(sys->gpu_count, 2);
	assert_string_equal(sys->gpu_arch_names[0], "gfx942");
	assert_string_equal(sys->gpu_arch_names[1], "gfx90a");
	assert_int_equal(sys->current_device, 0);
	kernels_system_free(sys);
	setenv("KERNELS_GPU_ARCHS", "gfx942,9.0", 1);
	assert_int_equal(kernels_system_detect(&sys, &o), KERNELS_EINVAL);
	unsetenv("KERNELS_GPU_ARCHS");
	unsetenv("KERNELS_BACKEND");
	unsetenv("KERNELS_BACKEND_VERSION");

	/* the KFD topology's gfx_target_version, as the amdgpu driver writes it */
	kernels__gfx_name(90010, name, sizeof(name));
	assert_string_equal(name, "gfx90a");
	kernels__gfx_name(90402, name, sizeof(name));
	assert_string_equal(name, "gfx942");
	kernels__gfx_name(110000, name, sizeof(name));
	assert_string_equal(name, "gfx1100");
	kernels__gfx_name(100300, name, sizeof(name));
	assert_string_equal(name, "gfx1030");
}

static void test_backend_table_and_system(void **state)
{
	const kernels__backend *const *b = kernels__backends();
	kernels_system ov = cuda_two_gpus(), *sys = NULL;
	kernels_options o;
	size_t n = 0;
	(void)state;

	for (; *b; b++, n++)
		assert_ptr_equal(kernels__backend_find((*b)->name), *b);
	assert_int_equal(n, 8); /* the backends Python kernels 0.17 knows */
	assert_string_equal(kernels__backend_by_prefix("cu126")->name, "cuda");
	assert_string_equal(kernels__backend_by_prefix("rocm63")->name, "rocm");
	assert_string_equal(kernels__backend_by_prefix("cann81")->name, "cann");
	assert_string_equal(kernels__backend_by_prefix("cpu")->name, "cpu");
	assert_null(kernels__backend_by_prefix("vulkan"));
	assert_non_null(kernels__backend_find("cuda")->archs_support);
	assert_non_null(kernels__backend_find("rocm")->detect);
	assert_null(kernels__backend_find("metal")->archs_support);

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.system = &ov;
	assert_int_equal(kernels_system_detect(&sys, &o), 0);
	assert_int_equal(sys->version, KERNELS_SYSTEM_VERSION);
	assert_string_equal(sys->gpu_arch_names[0], "9.0");
	assert_string_equal(sys->gpu_arch_names[1], "8.0");
	assert_null(sys->gpu_arch_names[2]);
	assert_int_equal(sys->current_device, 0);
	{
		char buf[512];
		kernels_system_format(buf, sizeof(buf), sys);
		assert_non_null(strstr(buf, "GPUs 9.0 8.0 (current: 0)"));
	}
	kernels_system_free(sys);
}

/* XPU, TPU, Neuron and CANN devices from sysfs and /dev, on a fake root:
 * what counts and in which order, and what is left out. */
static void put(const char *root, const char *rel, const char *text)
{
	assert_int_equal(test_put(root, rel, text), 0);
}

static void pci(const char *root, const char *slot, const char *vendor, const char *cls, const char *device)
{
	char rel[256];
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/vendor", slot);
	put(root, rel, vendor);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/class", slot);
	put(root, rel, cls);
	snprintf(rel, sizeof(rel), "sys/bus/pci/devices/%s/device", slot);
	put(root, rel, device);
}

static void expect(const char *backend, int count, const char *first, const char *last)
{
	kernels__gpu_list l;

	kernels__backend_find(backend)->detect(&l);
	assert_int_equal(l.count, count);
	if (count) {
		assert_string_equal(l.arch[0], first);
		assert_string_equal(l.arch[count - 1], last);
	}
}

static void test_devices_from_sysfs_and_dev(void **state)
{
	char root[] = "/tmp/kernels-test-devroot-XXXXXX", cmd[128];
	kernels_system ov = { 0 }, *sys = NULL;
	kernels_options o;
	(void)state;

	assert_non_null(mkdtemp(root));
	kernels__backend_set_root(root);
	expect("xpu", 0, NULL, NULL); /* nothing there: none */
	expect("neuron", 0, NULL, NULL);
	pci(root, "0000:3a:00.0", "0x8086\n", "0x038000\n", "0x0bd5\n"); /* a Max 1550 */
	pci(root, "0000:9a:00.0", "0x8086\n", "0x030000\n", "0x0bd6\n");
	pci(root, "0000:00:1f.0", "0x8086\n", "0x060100\n", "0x1234\n"); /* an Intel bridge: no GPU */
	pci(root, "0000:05:00.0", "0x1ae0\n", "0x120000\n", "0x0062\n"); /* a TPU */
	pci(root, "0000:06:00.0", "0x10de\n", "0x030200\n", "0x2330\n"); /* NVIDIA: not these rows' */
	put(root, "dev/neuron0", "");
	put(root, "dev/neuron10", "");
	put(root, "dev/neuron2", "");
	put(root, "dev/neuron_x", "");
	put(root, "dev/davinci0", "");
	put(root, "dev/davinci_manager", "");
	expect("xpu", 2, "0x0bd5", "0x0bd6");
	expect("tpu", 1, "0x0062", "0x0062");
	expect("neuron", 3, "neuron", "neuron");
	expect("cann", 1, "ascend", "ascend");

	/* the system description counts them for the selected backend */
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	ov.backend = "neuron";
	ov.torch_version = 209;
	o.system = &ov;
	unsetenv("KERNELS_GPU_ARCHS");
	assert_int_equal(kernels_system_detect(&sys, &o), 0);
	assert_int_equal(sys->gpu_count, 3);
	kernels_system_free(sys);
	kernels__backend_set_root(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_current_device_and_option),
		cmocka_unit_test(test_check_off),
		cmocka_unit_test(test_every_kind_is_checked),
		cmocka_unit_test(test_rocm),
		cmocka_unit_test(test_backend_table_and_system),
		cmocka_unit_test(test_devices_from_sysfs_and_dev),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

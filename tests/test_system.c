/* System detection: this machine (no GPU, no torch), overrides through
 * options and environment, and torch / tvm-ffi found in the process from
 * fake libraries laid out like a pip install or a libtorch archive (each
 * loaded in a forked child, since a process cannot unload them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "../tests/data/variants/fixture.h"

static char *tmp;

static const char *const env_vars[] = { "KERNELS_TORCH_VERSION", "KERNELS_CXX11_ABI", "KERNELS_TVM_FFI_VERSION",
					"KERNELS_BACKEND", "KERNELS_BACKEND_VERSION", "KERNELS_CUDA_VERSION",
					"KERNELS_GPU_ARCHS", "KERNELS_CPU", "KERNELS_OS" };

static void clear_env(void)
{
	size_t i;
	for (i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static int setup(void **state)
{
	(void)state;
	clear_env();
	tmp = test_mkdtemp("system");
	return tmp ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	clear_env();
	test_rmtree(tmp);
	free(tmp);
	return 0;
}

static void test_this_machine(void **state)
{
	kernels_system *s;
	char text[512];
	(void)state;

	assert_int_equal(kernels_system_detect(&s, NULL), 0);
	assert_string_equal(s->cpu, "x86_64");
	assert_string_equal(s->os, "linux");
	assert_non_null(s->glibc);
	assert_int_equal(s->torch_version, 0);
	assert_int_equal(s->torch_cxx11_abi, -1);
	assert_null(s->torch_path);
	assert_int_equal(s->tvm_ffi_version, 0);
	if (s->gpu_count == 0) {
		/* The test machine: no driver or no GPU (a CUDA toolkit may be
		 * installed): that is a cpu machine. */
		assert_string_equal(s->backend, "cpu");
		assert_int_equal(s->backend_version, 0);
		assert_string_equal(s->backend_source, "default");
	} else {
		assert_string_equal(s->backend, "cuda");
		assert_true(s->backend_version > 0);
		assert_int_equal(s->backend_version, s->cuda_runtime_version ? s->cuda_runtime_version :
						     s->cuda_driver_version);
	}
	assert_true(kernels_system_format(s, text, sizeof(text)) < sizeof(text));
	assert_non_null(strstr(text, "no torch"));
	assert_non_null(strstr(text, "x86_64-linux"));
	assert_int_equal(kernels_system_format(s, text, 8), kernels_system_format(s, NULL, 0));
	assert_int_equal(strlen(text), 7);
	kernels_system_free(s);
	kernels_system_free(NULL);
	assert_int_equal(kernels_system_detect(NULL, NULL), KERNELS_EINVAL);
}

static void test_options_override(void **state)
{
	kernels_options opts;
	kernels_system ov = { 0 }, *s;
	(void)state;

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	ov.torch_version = 211;
	ov.torch_cxx11_abi = 0;
	ov.tvm_ffi_version = 1;
	ov.backend = "cuda";
	ov.backend_version = 1300;
	ov.gpu_count = 2;
	ov.gpu_archs[0] = 90;
	ov.gpu_archs[1] = 100;
	ov.cpu = "aarch64";
	ov.os = "linux";
	opts.system = &ov;
	setenv("KERNELS_TORCH_VERSION", "2.7", 1);   /* options beat the environment */
	setenv("KERNELS_CUDA_VERSION", "12.1", 1);
	setenv("KERNELS_CPU", "riscv64", 1);
	assert_int_equal(kernels_system_detect(&s, &opts), 0);
	assert_int_equal(s->torch_version, 211);
	assert_int_equal(s->torch_cxx11_abi, 0);
	assert_int_equal(s->tvm_ffi_version, 1);
	assert_string_equal(s->backend, "cuda");
	assert_int_equal(s->backend_version, 1300);
	assert_string_equal(s->backend_source, "options");
	assert_int_equal(s->gpu_count, 2);
	assert_int_equal(s->gpu_archs[1], 100);
	assert_string_equal(s->cpu, "aarch64");
	kernels_system_free(s);

	/* cpu forced: no GPUs, whatever else says otherwise */
	memset(&ov, 0, sizeof(ov));
	ov.no_gpu = 1;
	ov.torch_version = -1;
	assert_int_equal(kernels_system_detect(&s, &opts), 0);
	assert_string_equal(s->backend, "cpu");
	assert_int_equal(s->gpu_count, 0);
	assert_int_equal(s->torch_version, 0);
	assert_string_equal(s->cpu, "riscv64"); /* the environment fills what options leave */
	kernels_system_free(s);
	clear_env();
}

static void test_environment(void **state)
{
	kernels_system *s;
	char text[512];
	(void)state;

	setenv("KERNELS_TORCH_VERSION", "2.9.1+cu128", 1);
	setenv("KERNELS_CXX11_ABI", "1", 1);
	setenv("KERNELS_TVM_FFI_VERSION", "0.1", 1);
	setenv("KERNELS_CUDA_VERSION", "12.8", 1);
	setenv("KERNELS_GPU_ARCHS", "9.0, 8.6", 1);
	setenv("KERNELS_OS", "darwin", 1);
	assert_int_equal(kernels_system_detect(&s, NULL), 0);
	assert_int_equal(s->torch_version, 209);
	assert_int_equal(s->torch_cxx11_abi, 1);
	assert_int_equal(s->tvm_ffi_version, 1);
	assert_string_equal(s->backend, "cuda");
	assert_int_equal(s->backend_version, 1208);
	assert_string_equal(s->backend_source, "environment");
	assert_int_equal(s->gpu_count, 2);
	assert_int_equal(s->gpu_archs[0], 90);
	assert_int_equal(s->gpu_archs[1], 86);
	assert_string_equal(s->os, "darwin");
	kernels_system_format(s, text, sizeof(text));
	assert_non_null(strstr(text, "torch 2.9 (cxx11 ABI)"));
	assert_non_null(strstr(text, "backend cuda 12.8 (from environment)"));
	assert_non_null(strstr(text, "GPUs 9.0 8.6"));
	kernels_system_free(s);

	setenv("KERNELS_BACKEND", "rocm", 1);
	setenv("KERNELS_BACKEND_VERSION", "6.3", 1);
	assert_int_equal(kernels_system_detect(&s, NULL), 0);
	assert_string_equal(s->backend, "rocm");
	assert_int_equal(s->backend_version, 603);
	kernels_system_free(s);

	setenv("KERNELS_BACKEND", "cpu", 1); /* forces cpu: GPUs dropped */
	assert_int_equal(kernels_system_detect(&s, NULL), 0);
	assert_string_equal(s->backend, "cpu");
	assert_int_equal(s->gpu_count, 0);
	kernels_system_free(s);

	static const struct { const char *var, *value; } bad[] = {
		{ "KERNELS_TORCH_VERSION", "two" }, { "KERNELS_CXX11_ABI", "yes" }, { "KERNELS_GPU_ARCHS", "sm_90" },
		{ "KERNELS_TVM_FFI_VERSION", "x" }, { "KERNELS_CUDA_VERSION", "12.x" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		clear_env();
		setenv(bad[i].var, bad[i].value, 1);
		assert_int_equal(kernels_system_detect(&s, NULL), KERNELS_EINVAL);
		assert_null(s);
		assert_non_null(strstr(kernels_error_last(), bad[i].var));
	}
	clear_env();
	setenv("KERNELS_GPU_ARCHS", "none", 1);
	setenv("KERNELS_TORCH_VERSION", "none", 1);
	assert_int_equal(kernels_system_detect(&s, NULL), 0);
	assert_int_equal(s->gpu_count, 0);
	assert_int_equal(s->torch_version, 0);
	kernels_system_free(s);
	clear_env();
}

/* ---- fake torch / tvm-ffi in a child process ------------------------------- */

#define CXX11_SYM "_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
#define CXX98_SYM "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs"
/* A c10 export in the cxx11 namespace that is not the probe symbol, so the
 * ELF symbol-table scan is what decides. */
#define OTHER_CXX11_SYM "_ZN3c106StringC1ERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"

static char *fake_lib(const char *rel, const char *symbol)
{
	char *path, extra[512];

	assert_true(asprintf(&path, "%s/%s", tmp, rel) > 0);
	snprintf(extra, sizeof(extra), "int fake_sym(void) __asm__(\"%s\"); int fake_sym(void) { return 0; }",
		 symbol ? symbol : "fake_plain_symbol");
	test_system("mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(fx_build_so(path, 0, NULL, extra, NULL), 0);
	return path;
}

static void write_text(const char *rel, const char *text)
{
	char *path;
	assert_true(asprintf(&path, "%s/%s", tmp, rel) > 0);
	assert_int_equal(test_write_file(path, text, strlen(text)), 0);
	free(path);
}

typedef void (*child_check)(const kernels_system *s);

/* Loads `libs` in a child, detects, runs `check` there; fails the test when
 * the child does. */
static void in_child(const char *const *libs, child_check check, const char *const *env)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		kernels_system *s;
		size_t i;
		for (i = 0; libs[i]; i++)
			if (!dlopen(libs[i], RTLD_NOW | RTLD_LOCAL)) {
				fprintf(stderr, "child: %s\n", dlerror());
				_exit(2);
			}
		for (i = 0; env && env[i]; i += 2)
			setenv(env[i], env[i + 1], 1);
		if (kernels_system_detect(&s, NULL) != 0) {
			fprintf(stderr, "child: %s\n", kernels_error_last());
			_exit(3);
		}
		check(s); /* cmocka asserts in the child exit non-zero */
		kernels_system_free(s);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

#define CHILD_ASSERT(c)                                                          \
	do {                                                                     \
		if (!(c)) {                                                      \
			fprintf(stderr, "child: %s:%d: %s\n", __FILE__, __LINE__, #c); \
			_exit(1);                                                \
		}                                                                \
	} while (0)

static void check_pip_cxx11(const kernels_system *s)
{
	CHILD_ASSERT(s->torch_version == 211);
	CHILD_ASSERT(s->torch_cxx11_abi == 1);
	CHILD_ASSERT(!strcmp(s->torch_version_string, "2.11.0+cu130"));
	CHILD_ASSERT(strstr(s->torch_path, "/pip/site-packages/torch") != NULL);
	CHILD_ASSERT(!strcmp(s->backend, "cuda"));
	CHILD_ASSERT(s->backend_version == 1300);
	CHILD_ASSERT(!strcmp(s->backend_source, "torch"));
}

static void check_env_beats_torch(const kernels_system *s)
{
	CHILD_ASSERT(s->torch_version == 0);
	CHILD_ASSERT(!strcmp(s->backend, "cpu"));
	CHILD_ASSERT(!strcmp(s->backend_source, "environment"));
}

static void check_pip_cxx98_cpu(const kernels_system *s)
{
	CHILD_ASSERT(s->torch_version == 207);
	CHILD_ASSERT(s->torch_cxx11_abi == 0);
	CHILD_ASSERT(!strcmp(s->backend, "cpu"));
	CHILD_ASSERT(!strcmp(s->backend_source, "torch"));
}

static void check_libtorch(const kernels_system *s)
{
	CHILD_ASSERT(s->torch_version == 205);
	CHILD_ASSERT(s->torch_cxx11_abi == 1);
	CHILD_ASSERT(!strcmp(s->torch_version_string, "2.5.1+cu124"));
	CHILD_ASSERT(!strcmp(s->backend, "cuda"));
	CHILD_ASSERT(s->backend_version == 1204);
}

static void check_rocm(const kernels_system *s)
{
	CHILD_ASSERT(s->torch_version == 209);
	CHILD_ASSERT(s->torch_cxx11_abi == -1); /* no c10 symbol tells */
	CHILD_ASSERT(!strcmp(s->backend, "rocm"));
	CHILD_ASSERT(s->backend_version == 603);
}

static void check_tvm_ffi(const kernels_system *s)
{
	CHILD_ASSERT(s->tvm_ffi_version == 1);
	CHILD_ASSERT(strstr(s->tvm_ffi_path, "/tvm_ffi") != NULL);
	CHILD_ASSERT(s->torch_version == 0);
}

static void test_fake_torch(void **state)
{
	char *a, *b, *c, *d, *e;
	(void)state;

	a = fake_lib("pip/site-packages/torch/lib/libc10.so", CXX11_SYM);
	write_text("pip/site-packages/torch/version.py",
		   "from typing import Optional\n\n__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip']\n"
		   "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\n"
		   "git_version = 'abc'\nhip: Optional[str] = None\nxpu: Optional[str] = None\n");
	in_child((const char *[]){ a, NULL }, check_pip_cxx11, NULL);
	in_child((const char *[]){ a, NULL }, check_env_beats_torch,
		 (const char *[]){ "KERNELS_TORCH_VERSION", "none", "KERNELS_BACKEND", "cpu", NULL });

	b = fake_lib("old/torch/lib/libc10.so", CXX98_SYM);
	write_text("old/torch/version.py", "__version__ = \"2.7.1+cpu\"\ncuda = None\nhip = None\n");
	in_child((const char *[]){ b, NULL }, check_pip_cxx98_cpu, NULL);

	c = fake_lib("libtorch/lib/libc10.so", OTHER_CXX11_SYM);
	write_text("libtorch/build-version", "2.5.1+cu124\n");
	in_child((const char *[]){ c, NULL }, check_libtorch, NULL);

	d = fake_lib("rocm/torch/lib/libtorch_cpu.so", NULL);
	write_text("rocm/torch/version.py", "__version__ = '2.9.0+rocm6.3'\ncuda = None\nhip = '6.3.42131-fa1d09cbd'\n");
	in_child((const char *[]){ d, NULL }, check_rocm, NULL);

	e = fake_lib("tvm/tvm_ffi/lib/libtvm_ffi.so", NULL);
	write_text("tvm/tvm_ffi/__init__.py", "\"\"\"TVM FFI.\"\"\"\n__version__ = \"0.1.9\"\n");
	in_child((const char *[]){ e, NULL }, check_tvm_ffi, NULL);
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
}

static void *detect_thread(void *arg)
{
	kernels_system *s;
	(void)arg;
	if (kernels_system_detect(&s, NULL) != 0)
		return (void *)1;
	kernels_system_free(s);
	return NULL;
}

static void test_concurrent_detect(void **state)
{
	pthread_t t[8];
	void *ret;
	int i;
	(void)state;
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, detect_thread, NULL), 0);
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], &ret);
		assert_null(ret);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_this_machine),
		cmocka_unit_test(test_options_override),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_fake_torch),
		cmocka_unit_test(test_concurrent_detect),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

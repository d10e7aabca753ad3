/* System detection: this machine (no GPU, no torch), overrides through
 * options and environment; torch / tvm-ffi found in the process, from the
 * real torch and apache-tvm-ffi wheels installed for python3 and from fake
 * libraries laid out like a pip install or a libtorch archive (each loaded
 * in a forked child, since a process cannot unload them); an installed
 * torch found outside the process (torch_dir, virtualenv, python3 on PATH
 * with its venv, pyenv and user-site rules) without loading it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "kernels.h"
#include "../tests/data/variants/fixture.h"


static const char *const env_vars[] = { "KERNELS_TORCH_VERSION", "KERNELS_CXX11_ABI", "KERNELS_TVM_FFI_VERSION",
					"KERNELS_BACKEND", "KERNELS_BACKEND_VERSION", "KERNELS_CUDA_VERSION",
					"KERNELS_GPU_ARCHS", "KERNELS_CPU", "KERNELS_OS", "KERNELS_TORCH_DIR",
					"KERNELS_FIND_TORCH" };

static void clear_env(void)
{
	size_t i;
	for (i = 0; i < sizeof(env_vars) / sizeof(env_vars[0]); i++)
		unsetenv(env_vars[i]);
}

static int setup(void **state)
{
	clear_env();
	return test_tmp_setup(state);
}

static int teardown(void **state)
{
	clear_env();
	return test_tmp_teardown(state);
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
	assert_true(kernels_system_format(text, sizeof(text), s) < sizeof(text));
	assert_non_null(strstr(text, "no torch"));
	assert_non_null(strstr(text, "x86_64-linux"));
	assert_int_equal(kernels_system_format(text, 8, s), kernels_system_format(NULL, 0, s));
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
	kernels_system_format(text, sizeof(text), s);
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
	/* A malformed list is refused even where a cpu backend leaves it unused
	 * (a binding passes its flag through it and reports the refusal). */
	clear_env();
	setenv("KERNELS_BACKEND", "cpu", 1);
	setenv("KERNELS_GPU_ARCHS", "9.0,gfx942", 1);
	assert_int_equal(kernels_system_detect(&s, NULL), KERNELS_EINVAL);
	assert_null(s);
	assert_non_null(strstr(kernels_error_last(), "KERNELS_GPU_ARCHS='9.0,gfx942'"));
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

	assert_true(asprintf(&path, "%s/%s", test_tmp, rel) > 0);
	snprintf(extra, sizeof(extra), "int fake_sym(void) __asm__(\"%s\"); int fake_sym(void) { return 0; }",
		 symbol ? symbol : "fake_plain_symbol");
	test_system("mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(fx_build_so(path, 0, NULL, extra, NULL), 0);
	return path;
}

static void write_text(const char *rel, const char *text)
{
	char *path;
	assert_true(asprintf(&path, "%s/%s", test_tmp, rel) > 0);
	assert_int_equal(test_write_file(path, text, strlen(text)), 0);
	free(path);
}

typedef void (*child_check)(const kernels_system *s);

/* The folder a child detects in (pyenv reads .python-version from there). */
static const char *child_cwd;

/* Loads `libs` in a child, sets `env` (name, value pairs; a NULL value
 * unsets), detects with `opts`, runs `check` there; fails the test when the
 * child does. */
static void in_child_opts(const char *const *libs, child_check check, const char *const *env,
			  const kernels_options *opts)
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
			if (env[i + 1])
				setenv(env[i], env[i + 1], 1);
			else
				unsetenv(env[i]);
		if (chdir(child_cwd ? child_cwd : test_tmp) != 0)
			_exit(4);
		if (kernels_system_detect(&s, opts) != 0) {
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

static void in_child(const char *const *libs, child_check check, const char *const *env)
{
	in_child_opts(libs, check, env, NULL);
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
	CHILD_ASSERT(strstr(s->torch_path, "/pip/site-packages/torch/lib") != NULL);
	CHILD_ASSERT(!strcmp(s->torch_source, "process"));
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

/* ---- tvm-ffi versions as packages write them -------------------------------- */

static int expect_tvm;           /* the version code the child must see */
static const char *expect_tvm_path; /* a suffix of tvm_ffi_path; NULL: none */

static int ends_with(const char *s, const char *suffix)
{
	size_t a = s ? strlen(s) : 0, b = strlen(suffix);
	return s && a >= b && !strcmp(s + a - b, suffix);
}

static void check_tvm_expected(const kernels_system *s)
{
	CHILD_ASSERT(s->tvm_ffi_version == expect_tvm);
	if (expect_tvm_path)
		CHILD_ASSERT(ends_with(s->tvm_ffi_path, expect_tvm_path));
	else
		CHILD_ASSERT(s->tvm_ffi_path == NULL);
}

/* Extra hand-written forms on top of the real wheel (test_real_tvm_ffi). */
static void test_tvm_ffi_version_forms(void **state)
{
	static const struct {
		const char *file, *text;
		int version;
	} forms[] = {
		/* apache-tvm-ffi 0.1.x: __init__.py imports _version.py, which vcs-versioning writes. */
		{ "_version.py", "from __future__ import annotations\n__all__ = [\"__version__\"]\nversion: str\n"
				 "__version__: str\n\n__version__ = version = '0.1.15.post2'\n"
				 "__version_tuple__ = version_tuple = (0, 1, 15, 'post2')\n", 1 },
		{ "__init__.py", "__version__: str = \"0.12.0\"  # annotated\n", 12 },
		{ "__init__.py", "version = __version__ = '1.3.0'; x = 1\n", 103 },
		{ "__init__.py", "__version__ = \"0.0.1\"\n__version__ = '0.2.0'\n", 2 }, /* the last one wins */
		{ "__init__.py", "\"\"\"doc\"\"\"\ntry:\n    __version__ = '0.4.0'\nexcept ImportError:\n    pass\n", 0 },
		{ "__init__.py", "__version__ = get_version()\n", 0 },
		{ "__init__.py", "__version__ == '0.5.0'\n__version__ += '0.6'\n", 0 },
		{ "version.py", "__version__ = r'0.7.1'\n", 7 },
		{ "version.py", "__version__ = '''0.8.0'''\n", 8 },
	};
	char *lib = fake_lib("forms/base/tvm_ffi/lib/libtvm_ffi.so", NULL);
	size_t i;
	(void)state;

	/* The one built library, copied: each package folder holds one form. */
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char rel[256], *so, *init;
		snprintf(rel, sizeof(rel), "forms/f%zu/tvm_ffi/%s", i, forms[i].file);
		write_text(rel, forms[i].text);
		assert_true(asprintf(&so, "%s/forms/f%zu/tvm_ffi/lib/libtvm_ffi.so", test_tmp, i) > 0);
		assert_true(asprintf(&init, "%s/forms/f%zu/tvm_ffi/__init__.py", test_tmp, i) > 0);
		test_system("mkdir -p \"$(dirname '%s')\" && cp '%s' '%s' && touch '%s'", so, lib, so, init);
		expect_tvm = forms[i].version;
		expect_tvm_path = forms[i].version ? "/tvm_ffi" : NULL;
		in_child((const char *[]){ so, NULL }, check_tvm_expected, NULL);
		free(so);
		free(init);
	}
	free(lib);
}

/* ---- the real wheels installed for python3 ---------------------------------- */

/* What python3 says about its installed torch and apache-tvm-ffi, without
 * importing either: the package folders, tvm-ffi's distribution version,
 * torch/version.py's __version__ and cuda as Python reads them. */
static struct {
	char torch[PATH_MAX], tvm_ffi[PATH_MAX], tvm_version[64], torch_version[64], torch_cuda[64];
} real;

static void read_real_packages(void)
{
	static const char *const script =
		"import importlib.util as u, importlib.metadata as m, os\n"
		"t = u.find_spec('torch').submodule_search_locations[0]\n"
		"f = u.find_spec('tvm_ffi').submodule_search_locations[0]\n"
		"s = u.spec_from_file_location('tv', os.path.join(t, 'version.py')); v = u.module_from_spec(s)\n"
		"s.loader.exec_module(v)\n"
		"print(os.path.realpath(t)); print(os.path.realpath(f)); print(m.version('apache-tvm-ffi'))\n"
		"print(v.__version__); print(v.cuda or 'none')\n";
	char cmd[1024];
	FILE *p;

	if (real.torch[0])
		return;
	snprintf(cmd, sizeof(cmd), "python3 -c \"%s\"", script);
	assert_non_null(p = popen(cmd, "r"));
	assert_non_null(fgets(real.torch, sizeof(real.torch), p));
	assert_non_null(fgets(real.tvm_ffi, sizeof(real.tvm_ffi), p));
	assert_non_null(fgets(real.tvm_version, sizeof(real.tvm_version), p));
	assert_non_null(fgets(real.torch_version, sizeof(real.torch_version), p));
	assert_non_null(fgets(real.torch_cuda, sizeof(real.torch_cuda), p));
	assert_int_equal(pclose(p), 0);
	real.torch[strcspn(real.torch, "\n")] = '\0';
	real.tvm_ffi[strcspn(real.tvm_ffi, "\n")] = '\0';
	real.tvm_version[strcspn(real.tvm_version, "\n")] = '\0';
	real.torch_version[strcspn(real.torch_version, "\n")] = '\0';
	real.torch_cuda[strcspn(real.torch_cuda, "\n")] = '\0';
}

/* major*100+minor of "0.1.15.post2", as Python kernels keeps Version(major.minor). */
static int major_minor_code(const char *v)
{
	int major = 0, minor = 0;
	assert_true(sscanf(v, "%d.%d", &major, &minor) == 2);
	return major * 100 + minor;
}

static void test_real_tvm_ffi(void **state)
{
	char *lib, variant[64];
	(void)state;

	read_real_packages();
	assert_true(asprintf(&lib, "%s/lib/libtvm_ffi.so", real.tvm_ffi) > 0);
	expect_tvm = major_minor_code(real.tvm_version);
	assert_true(expect_tvm > 0);
	expect_tvm_path = real.tvm_ffi;
	in_child((const char *[]){ lib, NULL }, check_tvm_expected, NULL);
	/* Python kernels names the variant of tvm-ffi X.Y "tvm-ffi{X}{Y}"; ours
	 * reads that name back to the detected version. */
	snprintf(variant, sizeof(variant), "tvm-ffi%d%d-cpu-x86_64-linux", expect_tvm / 100, expect_tvm % 100);
	{
		kernels_variant_info info;
		assert_int_equal(kernels_variant_parse(&info, variant), 0);
		assert_int_equal(info.framework_major * 100 + info.framework_minor, expect_tvm);
	}

	/* The real library without its package (copied next to a C host): its
	 * own TVMFFIGetVersion answers, the same major.minor. */
	{
		char *alone;
		assert_true(asprintf(&alone, "%s/alone/libtvm_ffi.so", test_tmp) > 0);
		assert_int_equal(test_system("mkdir -p '%s/alone' && cp '%s' '%s'", test_tmp, lib, alone), 0);
		expect_tvm_path = "/alone";
		in_child((const char *[]){ alone, NULL }, check_tvm_expected, NULL);
		free(alone);
	}
	free(lib);
}

/* What the real torch must look like, wherever it was found. */
static const char *expect_torch_source;

static void check_real_torch(const kernels_system *s)
{
	char lib[PATH_MAX + 8];
	snprintf(lib, sizeof(lib), "%s/lib", real.torch);
	CHILD_ASSERT(s->torch_version == 211);
	CHILD_ASSERT(s->torch_cxx11_abi == 1);
	CHILD_ASSERT(s->torch_version_string && !strcmp(s->torch_version_string, real.torch_version));
	CHILD_ASSERT(s->torch_path && !strcmp(s->torch_path, lib));
	CHILD_ASSERT(s->torch_source && !strcmp(s->torch_source, expect_torch_source));
	if (strcmp(real.torch_cuda, "none")) {
		CHILD_ASSERT(!strcmp(s->backend, "cuda"));
		CHILD_ASSERT(s->backend_version == major_minor_code(real.torch_cuda));
	} else {
		CHILD_ASSERT(!strcmp(s->backend, "cpu"));
	}
	CHILD_ASSERT(!strcmp(s->backend_source, "torch"));
	/* Found outside: read, never loaded. */
	if (strcmp(expect_torch_source, "process"))
		CHILD_ASSERT(dlopen("libc10.so", RTLD_LAZY | RTLD_NOLOAD) == NULL);
}

static void test_real_torch(void **state)
{
	char *c10, *cpu, *dir;
	kernels_options opts;
	(void)state;

	read_real_packages();
	assert_true(asprintf(&c10, "%s/lib/libc10.so", real.torch) > 0);
	assert_true(asprintf(&cpu, "%s/lib/libtorch_cpu.so", real.torch) > 0);
	assert_true(asprintf(&dir, "%s/lib", real.torch) > 0);

	expect_torch_source = "process";
	in_child((const char *[]){ c10, cpu, NULL }, check_real_torch,
		 (const char *[]){ "KERNELS_TORCH_DIR", "/nonexistent", NULL }); /* a loaded torch wins */

	expect_torch_source = "environment";
	in_child((const char *[]){ NULL }, check_real_torch, (const char *[]){ "KERNELS_TORCH_DIR", real.torch, NULL });
	in_child((const char *[]){ NULL }, check_real_torch, (const char *[]){ "KERNELS_TORCH_DIR", dir, NULL });

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.torch_dir = dir;
	expect_torch_source = "option";
	in_child_opts((const char *[]){ NULL }, check_real_torch,
		      (const char *[]){ "KERNELS_TORCH_DIR", "/nonexistent", NULL }, &opts);

	/* The python3 on PATH that installed it (the one read_real_packages ran). */
	opts.torch_dir = NULL;
	opts.find_torch = 1;
	expect_torch_source = "python3";
	in_child_opts((const char *[]){ NULL }, check_real_torch, (const char *[]){ "VIRTUAL_ENV", NULL, NULL }, &opts);
	in_child((const char *[]){ NULL }, check_real_torch,
		 (const char *[]){ "VIRTUAL_ENV", NULL, "KERNELS_FIND_TORCH", "1", NULL });
	free(c10);
	free(cpu);
	free(dir);
}

/* ---- an installed torch outside the process: the search -------------------- */

static const struct {
	int version, abi;
	const char *source, *path_suffix, *backend;
	int backend_version;
} *want, none_found = { 0, -1, NULL, NULL, "cpu", 0 };

static void check_found(const kernels_system *s)
{
	CHILD_ASSERT(s->torch_version == want->version);
	CHILD_ASSERT(s->torch_cxx11_abi == want->abi);
	if (!want->source) {
		CHILD_ASSERT(s->torch_source == NULL && s->torch_path == NULL);
		return;
	}
	if (!s->torch_source || strcmp(s->torch_source, want->source) || !ends_with(s->torch_path, want->path_suffix)) {
		fprintf(stderr, "child: found %s at %s, want %s at ...%s\n", s->torch_source, s->torch_path, want->source,
			want->path_suffix);
		_exit(1);
	}
	CHILD_ASSERT(!strcmp(s->backend, want->backend));
	CHILD_ASSERT(s->backend_version == want->backend_version);
	CHILD_ASSERT(!strcmp(s->backend_source, "torch"));
}

#define WANT(...)                                                                 \
	do {                                                                      \
		static const __typeof__(*want) w_ = { __VA_ARGS__ };              \
		want = &w_;                                                       \
	} while (0)

/* {site}/torch: version.py and lib/libc10.so (a copy of `c10`). */
static void fake_torch_pkg(const char *site, const char *version_py, const char *c10)
{
	char rel[512];
	snprintf(rel, sizeof(rel), "%s/torch/version.py", site);
	write_text(rel, version_py);
	test_system("mkdir -p '%s/%s/torch/lib' && cp '%s' '%s/%s/torch/lib/libc10.so'", test_tmp, site, c10, test_tmp, site);
}

/* An executable that is not Python: it must never be run. */
static void fake_python(const char *rel)
{
	test_system("mkdir -p \"$(dirname '%s/%s')\" && printf '#!/bin/sh\\nexit 99\\n' > '%s/%s' && chmod 755 '%s/%s'",
		    test_tmp, rel, test_tmp, rel, test_tmp, rel);
}

static void test_outside_torch_search(void **state)
{
	char *c11 = fake_lib("outside/c10-cxx11/libc10.so", CXX11_SYM), *c98 = fake_lib("outside/c10-cxx98/libc10.so", CXX98_SYM);
	char path[2048], path_pyenv[4096], home[512], empty_home[512], venv[512], cfg[1024];
	kernels_options opts;
	(void)state;

	fake_torch_pkg("outside/venv/lib/python3.12/site-packages", "__version__ = '2.8.0+cpu'\ncuda = None\nhip = None\n",
		       c98);
	/* A plain installation: bin/python3 -> python3.12, its site-packages. */
	fake_python("outside/usr/bin/python3.12");
	test_system("ln -s python3.12 '%s/outside/usr/bin/python3'", test_tmp);
	fake_torch_pkg("outside/usr/lib/python3.12/site-packages",
		       "__version__ = '2.9.1+cu128'\ncuda: Optional[str] = '12.8'\nhip: Optional[str] = None\n", c11);
	/* Debian: /usr/local/lib/python3.N/dist-packages. */
	fake_python("outside/deb/bin/python3.11");
	test_system("ln -s python3.11 '%s/outside/deb/bin/python3'", test_tmp);
	fake_torch_pkg("outside/deb/local/lib/python3.11/dist-packages", "__version__ = '2.6.0'\ncuda = '12.6'\n", c11);
	/* The user site of the same python3.12. */
	fake_torch_pkg("outside/home/.local/lib/python3.12/site-packages", "__version__ = '2.10.0'\ncuda = None\n", c11);
	/* pyenv: a shim script, versions/, the global version file. */
	fake_python("outside/pyenv/shims/python3");
	fake_python("outside/pyenv/versions/3.12.0/bin/python3.12");
	test_system("ln -s python3.12 '%s/outside/pyenv/versions/3.12.0/bin/python3'", test_tmp);
	fake_torch_pkg("outside/pyenv/versions/3.12.0/lib/python3.12/site-packages", "__version__ = '2.7.1'\ncuda = None\n",
		       c11);
	write_text("outside/pyenv/version", "3.99.0\n3.12.0\n"); /* the first one is not installed */
	write_text("outside/sys/.python-version", "system\n");
	/* A venv of the plain installation. */
	fake_python("outside/venv2/bin/python3");

	snprintf(path, sizeof(path), "%s/outside/nopython:%s/outside/usr/bin:/usr/bin:/bin", test_tmp, test_tmp);
	snprintf(path_pyenv, sizeof(path_pyenv), "%s/outside/pyenv/shims:%s", test_tmp, path);
	snprintf(home, sizeof(home), "%s/outside/home", test_tmp);
	snprintf(empty_home, sizeof(empty_home), "%s/outside/nohome", test_tmp);
	snprintf(venv, sizeof(venv), "%s/outside/venv", test_tmp);

	/* Off by default: nothing but the process is looked at. */
	want = &none_found;
	in_child((const char *[]){ NULL }, check_found,
		 (const char *[]){ "PATH", path, "HOME", empty_home, "VIRTUAL_ENV", venv, NULL });

	WANT(208, 0, "virtualenv", "/outside/venv/lib/python3.12/site-packages/torch/lib", "cpu", 0);
	in_child((const char *[]){ NULL }, check_found,
		 (const char *[]){ "PATH", path, "HOME", empty_home, "VIRTUAL_ENV", venv, "KERNELS_FIND_TORCH", "1", NULL });

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.find_torch = 1;
	WANT(209, 1, "python3", "/outside/usr/lib/python3.12/site-packages/torch/lib", "cuda", 1208);
	in_child_opts((const char *[]){ NULL }, check_found,
		      (const char *[]){ "PATH", path, "HOME", empty_home, "VIRTUAL_ENV", NULL, NULL }, &opts);

	/* The user site comes first on sys.path; PYTHONNOUSERSITE drops it. */
	WANT(210, 1, "python3", "/outside/home/.local/lib/python3.12/site-packages/torch/lib", "cpu", 0);
	in_child_opts((const char *[]){ NULL }, check_found,
		      (const char *[]){ "PATH", path, "HOME", home, "VIRTUAL_ENV", NULL, NULL }, &opts);
	WANT(209, 1, "python3", "/outside/usr/lib/python3.12/site-packages/torch/lib", "cuda", 1208);
	in_child_opts((const char *[]){ NULL }, check_found,
		      (const char *[]){ "PATH", path, "HOME", home, "VIRTUAL_ENV", NULL, "PYTHONNOUSERSITE", "1", NULL },
		      &opts);

	/* Debian's dist-packages. */
	{
		char deb[4096];
		snprintf(deb, sizeof(deb), "%s/outside/deb/bin:%s", test_tmp, path);
		WANT(206, 1, "python3", "/outside/deb/local/lib/python3.11/dist-packages/torch/lib", "cuda", 1206);
		in_child_opts((const char *[]){ NULL }, check_found,
			      (const char *[]){ "PATH", deb, "HOME", empty_home, "VIRTUAL_ENV", NULL, NULL }, &opts);
	}

	/* pyenv: the global version file's first installed version, unless
	 * .python-version or PYENV_VERSION says "system" (the next python3). */
	WANT(207, 1, "python3", "/outside/pyenv/versions/3.12.0/lib/python3.12/site-packages/torch/lib", "cpu", 0);
	in_child_opts((const char *[]){ NULL }, check_found,
		      (const char *[]){ "PATH", path_pyenv, "HOME", empty_home, "VIRTUAL_ENV", NULL, "PYENV_VERSION", NULL,
					NULL },
		      &opts);
	WANT(209, 1, "python3", "/outside/usr/lib/python3.12/site-packages/torch/lib", "cuda", 1208);
	in_child_opts((const char *[]){ NULL }, check_found,
		      (const char *[]){ "PATH", path_pyenv, "HOME", empty_home, "VIRTUAL_ENV", NULL, "PYENV_VERSION",
					"system", NULL },
		      &opts);
	{
		char sysdir[512];
		snprintf(sysdir, sizeof(sysdir), "%s/outside/sys", test_tmp);
		child_cwd = sysdir;
		in_child_opts((const char *[]){ NULL }, check_found,
			      (const char *[]){ "PATH", path_pyenv, "HOME", empty_home, "VIRTUAL_ENV", NULL, "PYENV_VERSION",
						NULL, NULL },
			      &opts);
		child_cwd = NULL;
	}

	/* A venv first on PATH: its own site-packages only, unless its
	 * pyvenv.cfg includes the system ones (of its home). */
	{
		char vpath[4096];
		snprintf(vpath, sizeof(vpath), "%s/outside/venv2/bin:%s", test_tmp, path);
		snprintf(cfg, sizeof(cfg), "home = %s/outside/usr/bin\ninclude-system-site-packages = false\nversion = 3.12.1\n",
			 test_tmp);
		write_text("outside/venv2/pyvenv.cfg", cfg);
		want = &none_found;
		in_child_opts((const char *[]){ NULL }, check_found,
			      (const char *[]){ "PATH", vpath, "HOME", empty_home, "VIRTUAL_ENV", NULL, NULL }, &opts);
		snprintf(cfg, sizeof(cfg), "home = %s/outside/usr/bin\ninclude-system-site-packages = true\nversion = 3.12.1\n",
			 test_tmp);
		write_text("outside/venv2/pyvenv.cfg", cfg);
		WANT(209, 1, "python3", "/outside/usr/lib/python3.12/site-packages/torch/lib", "cuda", 1208);
		in_child_opts((const char *[]){ NULL }, check_found,
			      (const char *[]){ "PATH", vpath, "HOME", empty_home, "VIRTUAL_ENV", NULL, NULL }, &opts);
		fake_torch_pkg("outside/venv2/lib/python3.12/site-packages", "__version__ = '2.5.0'\n", c98);
		WANT(205, 0, "python3", "/outside/venv2/lib/python3.12/site-packages/torch/lib", "cpu", 0);
		in_child_opts((const char *[]){ NULL }, check_found,
			      (const char *[]){ "PATH", vpath, "HOME", empty_home, "VIRTUAL_ENV", NULL, NULL }, &opts);
	}

	/* A torch version given: no search at all. */
	want = &none_found;
	{
		static const __typeof__(*want) given = { 211, -1, NULL, NULL, "cpu", 0 };
		want = &given;
	}
	in_child_opts((const char *[]){ NULL }, check_found,
		      (const char *[]){ "PATH", path, "HOME", empty_home, "KERNELS_TORCH_VERSION", "2.11", NULL }, &opts);
	free(c11);
	free(c98);
}

static void test_torch_dir(void **state)
{
	kernels_options opts;
	kernels_system *s;
	char *dir;
	(void)state;

	/* A libtorch archive: build-version at the top, libraries in lib/. */
	{
		char *c = fake_lib("archive/libtorch/lib/libc10.so", OTHER_CXX11_SYM);
		write_text("archive/libtorch/build-version", "2.5.1+cu124\n");
		free(c);
	}
	assert_true(asprintf(&dir, "%s/archive/libtorch", test_tmp) > 0);
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.torch_dir = dir;
	assert_int_equal(kernels_system_detect(&s, &opts), 0);
	assert_int_equal(s->torch_version, 205);
	assert_int_equal(s->torch_cxx11_abi, 1);
	assert_string_equal(s->torch_source, "option");
	assert_true(ends_with(s->torch_path, "/archive/libtorch/lib"));
	assert_string_equal(s->backend, "cuda");
	assert_int_equal(s->backend_version, 1204);
	{
		char text[1024];
		kernels_system_format(text, sizeof(text), s);
		assert_non_null(strstr(text, "torch 2.5 (cxx11 ABI) from option at /"));
		assert_non_null(strstr(text, "/archive/libtorch/lib, backend cuda 12.4 (from torch)"));
	}
	kernels_system_free(s);

	/* Named but holding no torch: an error that names the setting. */
	opts.torch_dir = test_tmp;
	assert_int_equal(kernels_system_detect(&s, &opts), KERNELS_EINVAL);
	assert_null(s);
	assert_non_null(strstr(kernels_error_last(), "torch_dir"));
	opts.torch_dir = NULL;
	setenv("KERNELS_TORCH_DIR", "/nonexistent/torch", 1);
	assert_int_equal(kernels_system_detect(&s, &opts), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "KERNELS_TORCH_DIR='/nonexistent/torch'"));
	/* ... unless a torch version is given. */
	setenv("KERNELS_TORCH_VERSION", "2.11", 1);
	assert_int_equal(kernels_system_detect(&s, &opts), 0);
	assert_null(s->torch_source);
	kernels_system_free(s);
	clear_env();
	free(dir);
}

/* ---- CUDA through stand-in libraries --------------------------------------- */

/* Stand-ins of the three libraries detection may meet, built at test time
 * into {test_tmp}/cuda: a libcuda whose cuInit logs each call (and whose
 * cuDeviceGetCount fails until one, as the real driver's), a libcudart
 * 12.9 that brings libcuda in and calls cuInit from each entry point, as
 * the real runtime does, and an NVML that
 * sees two GPUs (9.0, 10.0) where the driver sees one (8.6), so each check
 * tells which answered. A child re-executes this test with LD_LIBRARY_PATH
 * naming the folder (the loader reads it only at start). */
static const char standin_cuda[] =
	"#include <stdio.h>\n#include <stdlib.h>\n"
	"static int inited;\n"
	"int cuInit(unsigned f) { const char *m = getenv(\"STANDIN_CUINIT_LOG\"); FILE *fp;\n"
	"  (void)f; inited = 1; if (m && (fp = fopen(m, \"a\"))) { fputs(\"cuInit\\n\", fp); fclose(fp); } return 0; }\n"
	"int cuDriverGetVersion(int *v) { *v = 12080; return 0; }\n"
	"int cuDeviceGetCount(int *n) { if (!inited) return 3; *n = 1; return 0; }\n"
	"int cuDeviceGet(int *d, int i) { *d = i; return 0; }\n"
	"int cuDeviceGetAttribute(int *v, int a, int d) { (void)d; *v = a == 75 ? 8 : 6; return 0; }\n";
static const char standin_cudart[] = /* every entry point initialises the driver first, as the real one's */
	"int cuInit(unsigned f);\n"
	"int cudaRuntimeGetVersion(int *v) { cuInit(0); *v = 12090; return 0; }\n"
	"int cudaGetDevice(int *d) { cuInit(0); *d = 0; return 0; }\n";
static const char standin_nvml[] = /* with STANDIN_NVML_GATE: says it entered, waits to be let go */
	"#include <stdio.h>\n#include <stdlib.h>\n#include <unistd.h>\n"
	"static void gate(const char *g) { char p[4096]; FILE *f;\n"
	"  snprintf(p, sizeof(p), \"%s.in\", g); if ((f = fopen(p, \"w\"))) fclose(f);\n"
	"  snprintf(p, sizeof(p), \"%s.go\", g); while (access(p, F_OK)) usleep(1000); }\n"
	"int nvmlInit_v2(void) { if (getenv(\"STANDIN_NVML_GATE\")) gate(getenv(\"STANDIN_NVML_GATE\"));\n"
	"  return getenv(\"STANDIN_NVML_FAIL\") ? 999 : 0; }\n"
	"int nvmlShutdown(void) { return 0; }\n"
	"int nvmlDeviceGetCount_v2(unsigned *n) { *n = 2; return 0; }\n"
	"int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **h) { *h = (void *)(unsigned long)(i + 1); return 0; }\n"
	"int nvmlDeviceGetCudaComputeCapability(void *h, int *ma, int *mi) {\n"
	"  *ma = h == (void *)1 ? 9 : 10; *mi = 0; return 0; }\n"
	"int nvmlSystemGetCudaDriverVersion_v2(int *v) { *v = 13010; return 0; }\n";

static void build_standin(const char *dir, const char *file, const char *soname, const char *src,
			  const char *flags)
{
	char *c, *so;
	assert_true(asprintf(&c, "%s/%s.c", dir, file) > 0);
	assert_true(asprintf(&so, "%s/%s", dir, file) > 0);
	assert_int_equal(test_write_file(c, src, strlen(src)), 0);
	assert_int_equal(test_system("cc -shared -fPIC -o '%s' '%s' -Wl,-soname,%s %s", so, c, soname, flags), 0);
	free(c);
	free(so);
}

static char *standin_dir(void)
{
	char *dir, *flags;
	assert_true(asprintf(&dir, "%s/cuda", test_tmp) > 0);
	assert_true(asprintf(&flags, "-L'%s' -l:libcuda.so.1", dir) > 0);
	test_system("mkdir -p '%s'", dir);
	build_standin(dir, "libcuda.so.1", "libcuda.so.1", standin_cuda, "");
	build_standin(dir, "libnvidia-ml.so.1", "libnvidia-ml.so.1", standin_nvml, "");
	build_standin(dir, "libcudart.so.12.9.79", "libcudart.so.12", standin_cudart, flags);
	free(flags);
	assert_int_equal(test_system("cd '%s' && ln -sf libcudart.so.12.9.79 libcudart.so.12 && "
				     "ln -sf libcudart.so.12 libcudart.so", dir), 0);
	return dir;
}

static int loaded(const char *name)
{
	void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
	if (h)
		dlclose(h);
	return h != NULL;
}

/* ---- a fork while another thread's first detection runs -------------------- */

static atomic_int forked, stuck;

static int gate_file(const char *suffix, int create)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s.%s", getenv("STANDIN_NVML_GATE"), suffix);
	if (!create)
		return access(p, F_OK) == 0;
	if ((f = fopen(p, "w")))
		fclose(f);
	return f != NULL;
}

/* A call that goes online: its first request's User-Agent describes the
 * system, so it detects (the endpoint refuses; the answer does not matter). */
static void *online_call(void *arg)
{
	kernels_options o = KERNELS_OPTIONS_INIT;
	kernels_revision *r = NULL;
	(void)arg;

	o.endpoint = "http://127.0.0.1:9";
	o.max_retries = 0;
	kernels_revision_resolve(&r, "acme/plain", "main", &o);
	kernels_revision_free(r);
	return NULL;
}

/* Lets the detection go if the fork has not come back after 30 s: a
 * fork waiting on it would otherwise wait for good. */
static void *watchdog(void *arg)
{
	int i;
	(void)arg;

	for (i = 0; i < 3000 && !atomic_load(&forked); i++)
		usleep(10000);
	if (!atomic_load(&forked)) {
		atomic_store(&stuck, 1);
		gate_file("go", 1);
	}
	return NULL;
}

/* The host forks a worker while another of its threads is inside the
 * process's first detection (NVML held here until the fork is back). */
static int fork_during_detect_child(void)
{
	pthread_t call, dog;
	int i, status;
	pid_t pid;

	CHILD_ASSERT(pthread_create(&call, NULL, online_call, NULL) == 0);
	for (i = 0; i < 6000 && !gate_file("in", 0); i++)
		usleep(10000);
	CHILD_ASSERT(gate_file("in", 0)); /* the call is inside detection now */
	CHILD_ASSERT(pthread_create(&dog, NULL, watchdog, NULL) == 0);
	if ((pid = fork()) == 0)
		_exit(0);
	atomic_store(&forked, 1);
	CHILD_ASSERT(pid > 0 && waitpid(pid, &status, 0) == pid);
	gate_file("go", 1);
	pthread_join(call, NULL);
	pthread_join(dog, NULL);
	CHILD_ASSERT(!atomic_load(&stuck)); /* the fork came back while detection ran */
	return 0;
}

/* The child: what the host did first (mode), then detection; exits 0 when
 * all holds. */
static int cuda_child(const char *mode)
{
	int (*init)(unsigned) = NULL, want;
	kernels_system *s;
	void *h;

	if (!strcmp(mode, "cudart")) /* the host loaded the runtime: libcuda came in, uninitialised */
		CHILD_ASSERT(dlopen("libcudart.so.12", RTLD_NOW) && loaded("libcuda.so.1"));
	if (!strcmp(mode, "host-init")) {
		CHILD_ASSERT((h = dlopen("libcuda.so.1", RTLD_NOW)) != NULL);
		*(void **)&init = dlsym(h, "cuInit");
		CHILD_ASSERT(init && init(0) == 0);
	}
	CHILD_ASSERT(kernels_system_detect(&s, NULL) == 0);
	if (!strcmp(mode, "host-init") || !strcmp(mode, "no-nvml")) {
		/* the driver answered: one GPU 8.6, its version */
		CHILD_ASSERT(s->gpu_count == 1 && s->gpu_archs[0] == 86);
		CHILD_ASSERT(s->cuda_driver_version == 1208);
	} else if (!strcmp(mode, "visible")) {
		CHILD_ASSERT(s->gpu_count == 1 && s->gpu_archs[0] == 100);
	} else {
		/* NVML answered; nothing of CUDA was loaded for it */
		CHILD_ASSERT(s->gpu_count == 2 && s->gpu_archs[0] == 90 && s->gpu_archs[1] == 100);
		CHILD_ASSERT(s->cuda_driver_version == 1301);
		CHILD_ASSERT(!strcmp(mode, "cudart") || (!loaded("libcuda.so.1") && !loaded("libcudart.so.12")));
	}
	want = strcmp(mode, "wheel") ? 1209 : 1301;
	CHILD_ASSERT(s->cuda_runtime_version == want);
	CHILD_ASSERT(!strcmp(s->backend, "cuda") && s->backend_version == want);
	CHILD_ASSERT(!strcmp(s->backend_source, "cudart"));
	kernels_system_free(s);
	return 0;
}

/* This test's own program, as main() found it: a child runs it again
 * (argv[0], not /proc/self/exe, which is valgrind's under valgrind). */
static char self_exe[PATH_MAX] = "/proc/self/exe";

/* Runs the child in `mode` with the stand-ins; the number of cuInit calls
 * it logged. */
static int run_cuda_child(const char *dir, const char *mode, const char *name, const char *value)
{
	char *log, line[64];
	int status, calls = 0;
	FILE *f;
	pid_t pid;

	assert_true(asprintf(&log, "%s/cuinit-%s.log", test_tmp, mode) > 0);
	assert_true((pid = fork()) >= 0);
	if (pid == 0) {
		setenv("LD_LIBRARY_PATH", dir, 1);
		setenv("STANDIN_CUINIT_LOG", log, 1);
		if (name)
			setenv(name, value, 1);
		execl(self_exe, "test_system", "--cuda-child", mode, (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	if ((f = fopen(log, "r"))) {
		while (fgets(line, sizeof(line), f))
			calls++;
		fclose(f);
	}
	free(log);
	return calls;
}

/* A host's fork() does not wait for another thread's detection, the
 * first of a process taking as long as NVML does. */
static void test_fork_during_detect(const char *dir)
{
	char *gate;

	assert_true(asprintf(&gate, "%s/nvml-gate", test_tmp) > 0);
	assert_int_equal(run_cuda_child(dir, "fork-in-detect", "STANDIN_NVML_GATE", gate), 0);
	free(gate);
}

/* Detection never initialises the driver for a host that did not: GPUs and
 * the driver's version from NVML, the runtime's version from its file
 * name, nothing of CUDA loaded; a host that initialised is asked through
 * the driver; only a machine without a working NVML pays cuInit. */
static void test_cuda_standins(void **state)
{
	char *dir = standin_dir();
	(void)state;

	assert_int_equal(run_cuda_child(dir, "fresh", NULL, NULL), 0);
	assert_int_equal(run_cuda_child(dir, "cudart", NULL, NULL), 0);
	assert_int_equal(run_cuda_child(dir, "visible", "CUDA_VISIBLE_DEVICES", "1"), 0);
	assert_int_equal(run_cuda_child(dir, "host-init", NULL, NULL), 1); /* the host's own call only */
	assert_int_equal(run_cuda_child(dir, "no-nvml", "STANDIN_NVML_FAIL", "1"), 1);
	test_fork_during_detect(dir);
	free(dir);
	/* A runtime from a pip wheel: libcudart.so.13 (and a link to it), its
	 * version only in the wheel's dist-info three folders up. */
	assert_int_equal(test_system("w='%s/wheel/site-packages' && mkdir -p \"$w/nvidia/cu13/lib\" "
				     "\"$w/nvidia_cuda_runtime-13.1.80.dist-info\" && cd \"$w/nvidia/cu13/lib\" && "
				     "cp ../../../../../cuda/libcudart.so.12.9.79 libcudart.so.13 && ln -s libcudart.so.13 libcudart.so && "
				     "ln -s ../../../../../cuda/libcuda.so.1 ../../../../../cuda/libnvidia-ml.so.1 .", test_tmp), 0);
	assert_true(asprintf(&dir, "%s/wheel/site-packages/nvidia/cu13/lib", test_tmp) > 0);
	assert_int_equal(run_cuda_child(dir, "wheel", NULL, NULL), 0);
	free(dir);
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

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_this_machine),
		cmocka_unit_test(test_options_override),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_fake_torch),
		cmocka_unit_test(test_tvm_ffi_version_forms),
		cmocka_unit_test(test_real_tvm_ffi),
		cmocka_unit_test(test_real_torch),
		cmocka_unit_test(test_outside_torch_search),
		cmocka_unit_test(test_torch_dir),
		cmocka_unit_test(test_cuda_standins),
		cmocka_unit_test(test_concurrent_detect),
	};

	if (argc == 3 && !strcmp(argv[1], "--cuda-child"))
		return strcmp(argv[2], "fork-in-detect") ? cuda_child(argv[2]) : fork_during_detect_child();
	if (strchr(argv[0], '/') && !realpath(argv[0], self_exe))
		snprintf(self_exe, sizeof(self_exe), "/proc/self/exe");
	return cmocka_run_group_tests(tests, setup, teardown);
}

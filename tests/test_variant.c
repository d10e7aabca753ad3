/* Variant parsing and resolution, held to the anchor table that the Python
 * `kernels` resolver answered (tests/data/variants/anchor.json). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "kernels.h"
#include "testutil.h"

static int vcode(json_t *s)
{
	int major, minor;
	if (!json_is_string(s))
		return 0;
	assert_int_equal(sscanf(json_string_value(s), "%d.%d", &major, &minor), 2);
	return major * 100 + minor;
}

static void fill_system(json_t *js, kernels_system *s)
{
	json_t *abi = json_object_get(js, "cxx11_abi"), *g;
	size_t i;

	memset(s, 0, sizeof(*s));
	s->torch_version = vcode(json_object_get(js, "torch"));
	s->torch_cxx11_abi = json_is_boolean(abi) ? json_is_true(abi) : -1;
	s->tvm_ffi_version = vcode(json_object_get(js, "tvm_ffi"));
	s->backend = json_string_value(json_object_get(js, "backend"));
	s->backend_version = vcode(json_object_get(js, "backend_version"));
	s->cpu = json_string_value(json_object_get(js, "cpu"));
	s->os = json_string_value(json_object_get(js, "os"));
	s->macos_version = vcode(json_object_get(js, "macos"));
	json_array_foreach(json_object_get(js, "gpus"), i, g) {
		s->gpu_archs[i] = (vcode(g) / 100) * 10 + vcode(g) % 100;
		s->gpu_count++;
	}
}

static int warnings;
static void count_warnings(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_WARNING && strstr(msg, "invalid build variant"))
		warnings++;
}

static int run_case(json_t *c)
{
	json_t *vars = json_object_get(c, "variants"), *exp = json_object_get(c, "expected"), *e, *v;
	json_t *trace = json_object_get(exp, "trace"), *invalid = json_object_get(exp, "invalid");
	const char *title = json_string_value(json_object_get(c, "title"));
	size_t n = json_array_size(vars), i, j, k;
	kernels_variant_candidate *cand = calloc(n + 1, sizeof(*cand));
	const char ***archs = calloc(n + 1, sizeof(*archs));
	kernels_variant_trace *t;
	kernels_options opts;
	kernels_system sys;
	int failures = 0, rank = 0;

	fill_system(json_object_get(c, "system"), &sys);
	json_array_foreach(vars, i, v) {
		json_t *a = json_object_get(v, "archs"), *s;
		cand[i].name = json_string_value(json_object_get(v, "name"));
		cand[i].backend = json_string_value(json_object_get(v, "backend")); /* metadata's, when given */
		if (json_is_array(a)) {
			archs[i] = calloc(json_array_size(a) + 1, sizeof(char *));
			json_array_foreach(a, j, s)
				archs[i][j] = json_string_value(s);
			cand[i].archs = archs[i];
		}
	}
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.log_cb = count_warnings;
	warnings = 0;
	assert_int_equal(kernels_variant_resolve_candidates(&t, cand, n, &sys, &opts), 0);
	assert_int_equal(warnings, (int)json_array_size(invalid));

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "case '%s': ", title);                  \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			failures++;                                             \
		}                                                               \
	} while (0)

	CHECK(kernels_variant_trace_count(t) == json_array_size(trace) + json_array_size(invalid),
	      "trace has %zu entries, expected %zu", kernels_variant_trace_count(t),
	      json_array_size(trace) + json_array_size(invalid));
	json_array_foreach(trace, k, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *reason = json_string_value(json_object_get(e, "reason"));
		int accepted = json_is_true(json_object_get(e, "accepted"));
		const char *got = kernels_variant_trace_name_at(t, k), *got_reason = kernels_variant_trace_reason_at(t, k);

		CHECK(got && !strcmp(got, name), "entry %zu is %s, expected %s", k, got ? got : "(none)", name);
		CHECK(kernels_variant_trace_accepted_at(t, k) == accepted, "%s accepted %d, expected %d", name,
		      kernels_variant_trace_accepted_at(t, k), accepted);
		CHECK(kernels_variant_trace_valid_at(t, k) == 1, "%s should be valid", name);
		CHECK((!reason && !got_reason) || (reason && got_reason && !strcmp(reason, got_reason)),
		      "%s reason '%s', expected '%s'", name, got_reason ? got_reason : "(null)",
		      reason ? reason : "(null)");
		CHECK(kernels_variant_trace_rank_at(t, k) == (accepted ? rank : -1), "%s rank %d", name,
		      kernels_variant_trace_rank_at(t, k));
		if (accepted)
			rank++;
	}
	json_array_foreach(invalid, k, e) {
		size_t at = json_array_size(trace) + k;
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *got = kernels_variant_trace_name_at(t, at), *reason = kernels_variant_trace_reason_at(t, at);
		char want[1024];
		snprintf(want, sizeof(want), "invalid build variant: %s", json_string_value(json_object_get(e, "error")));
		CHECK(got && !strcmp(got, name), "invalid entry %zu is %s, expected %s", at, got ? got : "(none)", name);
		CHECK(kernels_variant_trace_valid_at(t, at) == 0, "%s should be invalid", name);
		CHECK(reason && !strcmp(reason, want), "%s: reason '%s', expected '%s'", name, reason ? reason : "",
		      want);
	}
	{
		json_t *chosen = json_object_get(exp, "chosen");
		const char *got = kernels_variant_trace_chosen(t);
		CHECK(json_is_null(chosen) ? got == NULL : (got && !strcmp(got, json_string_value(chosen))),
		      "chose %s, expected %s", got ? got : "(none)",
		      json_is_null(chosen) ? "(none)" : json_string_value(chosen));
		CHECK(kernels_variant_fits(NULL, 0, &sys, NULL) == 0, "an empty list fits nothing");
	}
	kernels_variant_trace_free(t);
	for (i = 0; i < n; i++)
		free(archs[i]);
	free(archs);
	free(cand);
	return failures;
}

/* tests/data/variants/<name>, parsed; the test fails when it cannot be. */
static json_t *load_data(const char *name)
{
	char path[4096];
	json_error_t err;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/tests/data/variants/%s", KERNELS_SOURCE_DIR, name);
	if (!(doc = json_load_file(path, 0, &err)))
		fail_msg("cannot read %s: %s", path, err.text);
	return doc;
}

static void test_anchor(void **state)
{
	json_t *doc = load_data("anchor.json"), *cases, *c;
	size_t i;
	int failures = 0;
	(void)state;

	cases = json_object_get(doc, "cases");
	assert_true(json_array_size(cases) >= 40);
	json_array_foreach(cases, i, c)
		failures += run_case(c);
	json_decref(doc);
	assert_int_equal(failures, 0);
}

/* The corpus of kernel-builder's newest names (corpus.json): each system's
 * choice, accepted set (in preference order) and refused names, with the
 * arch check on and off, as 0.17.2 answers. */
static int run_corpus_case(json_t *c, const kernels_variant_candidate *cand, size_t n, size_t ours_only)
{
	json_t *exp = json_object_get(c, "expected"), *accepted = json_object_get(exp, "accepted");
	const char *title = json_string_value(json_object_get(c, "title"));
	const char *chosen = json_string_value(json_object_get(exp, "chosen"));
	kernels_variant_trace *t;
	kernels_options opts;
	kernels_system sys;
	size_t k;
	int failures = 0;

	fill_system(json_object_get(c, "system"), &sys);
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	opts.log_cb = count_warnings;
	opts.skip_arch_check = json_is_true(json_object_get(c, "skip_arch_check"));
	warnings = 0;
	assert_int_equal(kernels_variant_resolve_candidates(&t, cand, n, &sys, &opts), 0);
	if (warnings != (int)(json_array_size(json_object_get(exp, "invalid")) + ours_only)) {
		fprintf(stderr, "case '%s': %d names refused, 0.17.2 refuses %zu (+%zu on purpose)\n", title, warnings,
			json_array_size(json_object_get(exp, "invalid")), ours_only);
		failures++;
	}
	if (!chosen != !kernels_variant_trace_chosen(t) ||
	    (chosen && strcmp(chosen, kernels_variant_trace_chosen(t)))) {
		fprintf(stderr, "case '%s': chose %s, 0.17.2 %s\n", title,
			kernels_variant_trace_chosen(t) ? kernels_variant_trace_chosen(t) : "nothing",
			chosen ? chosen : "nothing");
		failures++;
	}
	for (k = 0; k < json_array_size(accepted); k++) {
		const char *want = json_string_value(json_array_get(accepted, k));
		const char *got = kernels_variant_trace_name_at(t, k);
		if (!got || strcmp(got, want) || kernels_variant_trace_accepted_at(t, k) != 1) {
			fprintf(stderr, "case '%s': accepted #%zu is %s, 0.17.2's %s\n", title, k, got ? got : "-", want);
			failures++;
		}
	}
	if (kernels_variant_trace_accepted_at(t, k) == 1) {
		fprintf(stderr, "case '%s': %s accepted too\n", title, kernels_variant_trace_name_at(t, k));
		failures++;
	}
	kernels_variant_trace_free(t);
	return failures;
}

static void test_corpus(void **state)
{
	json_t *doc = load_data("corpus.json"), *c, *v;
	kernels_variant_candidate *cand;
	const char ***archs;
	size_t i, j, n;
	int failures = 0;
	(void)state;

	n = json_array_size(json_object_get(doc, "variants"));
	assert_true(n >= 90);
	cand = calloc(n, sizeof(*cand));
	archs = calloc(n, sizeof(*archs));
	json_array_foreach(json_object_get(doc, "variants"), i, v) {
		json_t *a = json_object_get(v, "archs"), *s;
		cand[i].name = json_string_value(json_object_get(v, "name"));
		if (json_is_array(a)) {
			archs[i] = calloc(json_array_size(a) + 1, sizeof(char *));
			json_array_foreach(a, j, s)
				archs[i][j] = json_string_value(s);
			cand[i].archs = archs[i];
		}
	}
	json_array_foreach(json_object_get(doc, "cases"), i, c)
		failures += run_corpus_case(c, cand, n, json_array_size(json_object_get(doc, "refused_by_libkernels_only")));
	for (i = 0; i < n; i++)
		free(archs[i]);
	free(archs);
	free(cand);
	json_decref(doc);
	assert_int_equal(failures, 0);
}

static void test_parse(void **state)
{
	kernels_variant_info v;
	(void)state;

	assert_int_equal(kernels_variant_parse(&v, "torch27-cxx11-cu126-x86_64-linux"), 0);
	assert_int_equal(v.kind, KERNELS_VARIANT_TORCH);
	assert_int_equal(v.framework_major, 2);
	assert_int_equal(v.framework_minor, 7);
	assert_int_equal(v.cxx11_abi, 1);
	assert_string_equal(v.backend, "cuda");
	assert_int_equal(v.backend_major, 12);
	assert_int_equal(v.backend_minor, 6);
	assert_string_equal(v.cpu, "x86_64");
	assert_string_equal(v.os, "linux");

	assert_int_equal(kernels_variant_parse(&v, "torch211-cu130-aarch64-linux"), 0);
	assert_int_equal(v.framework_minor, 11);
	assert_int_equal(v.cxx11_abi, -1);
	assert_int_equal(v.backend_major, 13);
	assert_int_equal(v.backend_minor, 0);

	assert_int_equal(kernels_variant_parse(&v, "torch-stable-abi210-rocm63-x86_64-linux"), 0);
	assert_int_equal(v.kind, KERNELS_VARIANT_TORCH_STABLE_ABI);
	assert_int_equal(v.framework_minor, 10);
	assert_string_equal(v.backend, "rocm");

	assert_int_equal(kernels_variant_parse(&v, "tvm-ffi01-xpu20251-x86_64-linux"), 0);
	assert_int_equal(v.kind, KERNELS_VARIANT_TVM_FFI);
	assert_int_equal(v.framework_major, 0);
	assert_int_equal(v.framework_minor, 1);
	assert_int_equal(v.backend_major, 2025);
	assert_int_equal(v.backend_minor, 1);

	assert_int_equal(kernels_variant_parse(&v, "torch-universal"), 0);
	assert_int_equal(v.kind, KERNELS_VARIANT_NOARCH);
	assert_string_equal(v.backend, "universal");
	assert_string_equal(v.cpu, "");
	assert_int_equal(kernels_variant_parse(&v, "torch29-metal-aarch64-darwin"), 0);
	assert_int_equal(v.backend_major, -1);

	/* Never a crash, always a message naming the bad part. */
	static const char *bad[] = { "", "-", "torch211", "torch211-cu", "torch211-cu1", "tvm", "tvm-ffi",
				     "torch-stable-abi", "torch-stable-abi-", "torch99999999999-cu126-x86_64-linux",
				     "torch211-cu99999999999999-x86_64-linux", "a-b-c-d-e-f-g-h-i-j-k-l-m" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(kernels_variant_parse(&v, bad[i]), KERNELS_EINVAL);
		assert_true(strlen(kernels_error_last()) > 10);
	}
	char longname[600];
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	memcpy(longname, "torch-", 6);
	assert_int_equal(kernels_variant_parse(&v, longname), KERNELS_EINVAL);
	assert_int_equal(kernels_variant_parse(&v, NULL), KERNELS_EINVAL);
}

/* A CUDA 12.8 torch 2.11 (C++11 ABI) on x86_64 Linux, nothing said of GPUs. */
static const kernels_system SYS_CU128 = { .torch_version = 211, .torch_cxx11_abi = 1, .backend = "cuda",
					  .backend_version = 1208, .cpu = "x86_64", .os = "linux" };

static void test_trace_api(void **state)
{
	const char *names[] = { "torch211-cu130-x86_64-linux", "bogus", "torch211-cu128-x86_64-linux", NULL,
				"torch-cuda" };
	kernels_system sys = SYS_CU128;
	kernels_variant_trace *t;
	(void)state;

	assert_int_equal(kernels_variant_resolve(&t, names, 5, &sys, NULL), 0);
	assert_int_equal(kernels_variant_trace_count(t), 4); /* the NULL name is ignored */
	assert_string_equal(kernels_variant_trace_chosen(t), "torch211-cu128-x86_64-linux");
	assert_string_equal(kernels_variant_trace_name_at(t, 1), "torch-cuda");
	assert_null(kernels_variant_trace_reason_at(t, 0));
	assert_null(kernels_variant_trace_name_at(t, 4));
	assert_int_equal(kernels_variant_trace_accepted_at(t, 4), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_variant_trace_string(t),
			       "torch211-cu128-x86_64-linux compatible, preferred"));
	assert_non_null(strstr(kernels_variant_trace_string(t),
			       "torch211-cu130-x86_64-linux: CUDA version (13.0) is not compatible with system CUDA "
			       "version (12.8)"));
	assert_non_null(strstr(kernels_variant_trace_string(t), "bogus: invalid build variant"));
	kernels_variant_trace_free(t);

	assert_int_equal(kernels_variant_fits(names, 5, &sys, NULL), 1);
	sys.backend = "cpu";
	assert_int_equal(kernels_variant_fits(names, 3, &sys, NULL), 0);
	assert_int_equal(kernels_variant_resolve(NULL, names, 1, &sys, NULL), KERNELS_EINVAL);
	assert_int_equal(kernels_variant_resolve(&t, NULL, 1, &sys, NULL), KERNELS_EINVAL);
	assert_null(t);
	kernels_variant_trace_free(NULL);
}

/* With no system given, resolution detects this machine (no torch, no GPU
 * in the test environment): only noarch cpu/universal variants fit. */
static void test_detected_system(void **state)
{
	const char *names[] = { "torch211-cu128-x86_64-linux", "torch-cpu", "torch-universal" };
	kernels_options opts;
	kernels_variant_trace *t;
	(void)state;

	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	kernels_system force = { 0 };
	force.backend = "cpu";
	opts.system = &force;
	assert_int_equal(kernels_variant_resolve(&t, names, 3, NULL, &opts), 0);
	assert_string_equal(kernels_variant_trace_chosen(t), "torch-cpu");
	assert_int_equal(kernels_variant_trace_accepted_at(t, 1), 1);
	assert_int_equal(kernels_variant_trace_accepted_at(t, 2), 0);
	kernels_variant_trace_free(t);
}

/* No variant fits: the hint names the nearest change of the system that
 * makes one of the repo's own variants fit, and nothing when one fits. */
static void test_no_match_hint(void **state)
{
	const char *cuda_cpu[] = { "torch211-cxx11-cu130-x86_64-linux", "torch211-cxx11-cpu-x86_64-linux" };
	const char *plain[] = { "torch211-cxx11-cpu-x86_64-linux", "tvm-ffi01-cpu-x86_64-linux" };
	kernels_system sys = SYS_CU128;
	kernels_variant_trace *t;
	kernels_options o;
	const char *h;
	(void)state;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.find_torch = 0;
	/* a CUDA 12.8 torch on a machine with no GPU */
	assert_int_equal(kernels_variant_resolve(&t, cuda_cpu, 2, &sys, &o), 0);
	assert_null(kernels_variant_trace_chosen(t));
	assert_non_null(h = kernels_variant_trace_hint(t));
	assert_non_null(strstr(h, "no GPU, and `torch211-cxx11-cpu-x86_64-linux` fits with the cpu backend"));
	assert_non_null(strstr(h, "`--backend cpu`"));
	assert_non_null(strstr(h, "`KERNELS_BACKEND=cpu`"));
	assert_non_null(strstr(h, "`backend=\"cpu\"`"));
	assert_null(strstr(h, "torch variants exist")); /* torch is there */
	kernels_variant_trace_free(t);
	/* with a GPU the cpu backend is no fix of ours to offer */
	sys.gpu_count = 1;
	sys.gpu_archs[0] = 90;
	assert_int_equal(kernels_variant_resolve(&t, cuda_cpu, 2, &sys, &o), 0);
	assert_null(kernels_variant_trace_hint(t));
	kernels_variant_trace_free(t);

	/* a plain C program: no torch, no libtvm_ffi, cpu */
	memset(&sys, 0, sizeof(sys));
	sys.torch_version = -1;
	sys.tvm_ffi_version = -1;
	sys.backend = "cpu";
	sys.cpu = "x86_64";
	sys.os = "linux";
	assert_int_equal(kernels_variant_resolve(&t, plain, 2, &sys, &o), 0);
	assert_non_null(h = kernels_variant_trace_hint(t));
	assert_non_null(strstr(h, "torch variants exist (`torch211-cxx11-cpu-x86_64-linux`)"));
	assert_non_null(strstr(h, "`KERNELS_FIND_TORCH=1`"));
	assert_non_null(strstr(h, "`--torch-dir DIR`"));
	assert_non_null(strstr(h, "tvm-ffi variants exist (`tvm-ffi01-cpu-x86_64-linux`, for tvm-ffi 0.1)"));
	assert_non_null(strstr(h, "link the program with libtvm_ffi"));
	kernels_variant_trace_free(t);
	/* with libtvm_ffi 0.1 loaded, it fits: no hint */
	sys.tvm_ffi_version = 1;
	assert_int_equal(kernels_variant_resolve(&t, plain, 2, &sys, &o), 0);
	assert_string_equal(kernels_variant_trace_chosen(t), "tvm-ffi01-cpu-x86_64-linux");
	assert_null(kernels_variant_trace_hint(t));
	kernels_variant_trace_free(t);
	assert_null(kernels_variant_trace_hint(NULL));
}

/* Puts back a variable a test changed (`value`, taken: NULL unsets it). */
static void restore_env(const char *name, char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
	free(value);
}

/* A scratch PATH where the hint's old walk of PATH and the torch search
 * parted: a folder named python3 first (not a program: the search passes
 * over it), then a pyenv shim whose chosen version has no torch. System
 * detection finds no torch, and the hint names the interpreter the search
 * asked, pyenv's 3.13.0, never the folder or the shim. */
static void test_hint_names_the_python3_searched(void **state)
{
	char *tmp = test_mkdtemp("variant-path"), *path, *py, *old_path, *old_home, name[128];
	kernels_system *sys;
	kernels_variant_trace *t;
	kernels_options o;
	const char *names[1] = { name }, *h;
	(void)state;

	assert_int_equal(test_system("cd '%s' && mkdir -p dir/python3 home pyenv/shims pyenv/versions/3.13.0/bin "
				     "pyenv/versions/3.13.0/lib/python3.13/site-packages && printf '#!/bin/sh\\nexit 99\\n' "
				     "> pyenv/shims/python3 && cp pyenv/shims/python3 pyenv/versions/3.13.0/bin/python3.13 "
				     "&& ln -s python3.13 pyenv/versions/3.13.0/bin/python3 && chmod 755 dir/python3 "
				     "pyenv/shims/python3 pyenv/versions/3.13.0/bin/python3.13", tmp), 0);
	assert_true(asprintf(&path, "%s/dir:%s/pyenv/shims", tmp, tmp) > 0);
	assert_true(asprintf(&py, "%s/pyenv/versions/3.13.0/bin/python3", tmp) > 0);
	old_path = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	setenv("PATH", path, 1);
	setenv("PYENV_VERSION", "3.13.0", 1);
	setenv("HOME", tmp, 1);
	unsetenv("VIRTUAL_ENV");
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.find_torch = 1;
	assert_int_equal(kernels_system_detect(&sys, &o), 0);
	assert_int_equal(sys->torch_version, 0);
	assert_null(sys->torch_source);
	snprintf(name, sizeof(name), "torch211-cxx11-cpu-%s-%s", sys->cpu, sys->os);
	assert_int_equal(kernels_variant_resolve(&t, names, 1, NULL, &o), 0);
	assert_null(kernels_variant_trace_chosen(t));
	assert_non_null(h = kernels_variant_trace_hint(t));
	if (!strstr(h, py) || strstr(h, "/dir/python3") || strstr(h, "/shims/python3"))
		fail_msg("the hint does not name the python3 the search asked (%s): %s", py, h);
	kernels_variant_trace_free(t);
	kernels_system_free(sys);
	restore_env("PATH", old_path);
	restore_env("HOME", old_home);
	unsetenv("PYENV_VERSION");
	test_rmtree(tmp);
	free(tmp);
	free(path);
	free(py);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_anchor),
		cmocka_unit_test(test_corpus),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_trace_api),
		cmocka_unit_test(test_detected_system),
		cmocka_unit_test(test_no_match_hint),
		cmocka_unit_test(test_hint_names_the_python3_searched),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

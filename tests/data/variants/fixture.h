/* Test variant folders built at test time: a small C shared object per
 * variant (compiled with the system cc) and a metadata.json whose digest
 * make_metadata.py computes with hashlib, independently of libkernels.
 * Included by tests/test_verify.c and tests/test_loader.c. */
#ifndef KERNELS_TEST_VARIANT_FIXTURE_H
#define KERNELS_TEST_VARIANT_FIXTURE_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "test_hub.h"

/* Compiles a kernel module into `path` exporting `int kernel_answer(void)`
 * returning `answer`; its constructor creates `marker` (when non-NULL) so a
 * test can tell whether it was ever dlopen()ed. `extra` is appended to the
 * C source, `flags` to the compiler command line. 0 on success. */
__attribute__((unused)) static int fx_build_so(const char *path, int answer, const char *marker, const char *extra, const char *flags)
{
	char src[4096], *src_path;
	int rc;

	snprintf(src, sizeof(src),
		 "#include <stdio.h>\n"
		 "int kernel_answer(void) { return %d; }\n"
		 "__attribute__((constructor)) static void loaded(void) {\n"
		 "  const char *m = %s%s%s; if (m) { FILE *f = fopen(m, \"w\"); if (f) fclose(f); }\n"
		 "}\n%s\n",
		 answer, marker ? "\"" : "", marker ? marker : "(const char *)0", marker ? "\"" : "",
		 extra ? extra : "");
	if (asprintf(&src_path, "%s.c", path) < 0)
		return -1;
	if (test_write_file(src_path, src, strlen(src))) {
		free(src_path);
		return -1;
	}
	rc = test_system("cc -shared -fPIC -o '%s' '%s' %s", path, src_path, flags ? flags : "");
	remove(src_path);
	free(src_path);
	return rc;
}

/* Runs make_metadata.py on `dir` with extra arguments. 0 on success. */
static int fx_metadata(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
__attribute__((unused)) static int fx_metadata(const char *dir, const char *fmt, ...)
{
	char args[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	return test_system("%s '%s/tests/data/variants/make_metadata.py' '%s' %s", KERNELS_PYTHON,
			   KERNELS_SOURCE_DIR, dir, args);
}

/* A complete arch variant: {base}/{variant}/_{name}_{tag}.abi3.so + Python
 * files + metadata.json. Returns the malloc'ed folder path. */
__attribute__((unused)) static char *fx_variant(const char *base, const char *variant, const char *name, int answer, const char *marker)
{
	char *dir, *so, *py;

	if (asprintf(&dir, "%s/%s", base, variant) < 0)
		return NULL;
	if (asprintf(&so, "%s/_%s_%d.abi3.so", dir, name, answer) < 0 ||
	    asprintf(&py, "%s/__init__.py", dir) < 0)
		return NULL;
	test_write_file(py, "from ._ops import ops\n", 22);
	if (fx_build_so(so, answer, marker, NULL, NULL) ||
	    fx_metadata(dir, "--name %s --id _%s_%d --backend cpu", name, name, answer)) {
		free(dir);
		dir = NULL;
	}
	free(so);
	free(py);
	return dir;
}

/* {root}/build/{variant}/: a module `_{name}_{answer}.abi3.so` answering
 * `answer`, and metadata.json (backend, archs "8.0,9.0" or NULL, major
 * version). The layout a repo publishes. 0 on success. */
__attribute__((unused)) static int fx_answer_variant(const char *root, const char *variant, const char *name,
						      int answer, const char *backend, const char *archs, int version)
{
	char *dir = NULL, *so = NULL;
	int rc = -1;

	if (asprintf(&dir, "%s/build/%s", root, variant) > 0 &&
	    asprintf(&so, "%s/_%s_%d.abi3.so", dir, name, answer) > 0 && !fx_build_so(so, answer, NULL, NULL, NULL))
		rc = fx_metadata(dir, "--name %s --id _%s_%d --backend %s%s%s --version %d", name, name, answer, backend,
				 archs ? " --archs " : "", archs ? archs : "", version);
	free(so);
	free(dir);
	return rc;
}

/* Publishes {tmp}/src-{name}/build/torch211-cxx11-cpu-x86_64-linux (a
 * module _{name}_{answer}.abi3.so answering `answer`, its constructor
 * creating `marker` when non-NULL) as `repo` at main/v1.0.0 with extra
 * publish `flags` (e.g. "--trusted"). 0 on success. */
__attribute__((unused)) static int fx_publish_answer(test_hub *hub, const char *tmp, const char *repo, const char *name,
						      int answer, const char *marker, const char *flags)
{
	char *src = NULL, *dir = NULL, *so = NULL;
	int rc = -1;

	if (asprintf(&src, "%s/src-%s", tmp, name) > 0 &&
	    asprintf(&dir, "%s/build/torch211-cxx11-cpu-x86_64-linux", src) > 0 &&
	    asprintf(&so, "%s/_%s_%d.abi3.so", dir, name, answer) > 0 && test_system("mkdir -p '%s'", dir) == 0 &&
	    !fx_build_so(so, answer, marker, NULL, NULL) &&
	    !fx_metadata(dir, "--name %s --id _%s_%d --backend cpu", name, name, answer))
		rc = test_hub_publish(hub, "--repo %s --dir '%s' --branch main --tag v1.0.0 %s", repo, src,
				      flags ? flags : "");
	free(so);
	free(dir);
	free(src);
	return rc;
}

#endif

/* The wheel writer (include/kernels/wheel.h): file names for every variant
 * form, the package chosen for both layouts, RECORD contents (hashes known
 * in advance), reproducible bytes, and the refusals. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kernels.h>
#include "testutil.h"

static void name_is(const char *repo, const char *version, const char *variant, const char *py, const char *ml,
		    const char *want)
{
	kernels_wheel_options wo = { KERNELS_WHEEL_OPTIONS_VERSION, py, ml };
	char *got = NULL;
	int rc = kernels_wheel_filename(&got, repo, version, variant, &wo);

	if (rc)
		fail_msg("%s %s %s: %s", repo, version, variant, kernels_error_last());
	assert_string_equal(got, want);
	free(got);
}

static void test_filenames(void **state)
{
	(void)state;
	name_is("img2gray", "0.1.0", "torch27-cxx11-cu126-x86_64-linux", NULL, NULL,
		"img2gray-0.1.0+torch27cu126cxx11-cp39-abi3-manylinux_2_28_x86_64.whl");
	name_is("drbh/img2gray", "0.1.0", "torch27-cxx98-cu118-x86_64-linux", NULL, NULL,
		"img2gray-0.1.0+torch27cu118cxx98-cp39-abi3-manylinux_2_28_x86_64.whl");
	name_is("org/my-kernel", "1.2.3", "torch211-cu130-aarch64-linux", NULL, NULL,
		"my_kernel-1.2.3+torch211cu130-cp39-abi3-manylinux_2_28_aarch64.whl");
	name_is("org/a-b_c..d", "1", "torch29-cxx11-rocm63-x86_64-linux", "3.10", "2.34",
		"a_b_c_d-1+torch29curocm63cxx11-cp310-abi3-manylinux_2_34_x86_64.whl");
	name_is("k", "2.0", "torch28-cxx11-cpu-x86_64-linux", NULL, NULL,
		"k-2.0+torch28cucpucxx11-cp39-abi3-manylinux_2_28_x86_64.whl");
	name_is("k", "2.0", "torch29-metal-aarch64-darwin", NULL, NULL, "k-2.0+torch29cumetal-cp39-abi3-macosx_11_0_arm64.whl");
	name_is("k", "2.0", "torch29-cu128-x86_64-windows", NULL, NULL, "k-2.0+torch29cu128-cp39-abi3-win_amd64.whl");
	name_is("k", "2.0", "torch-stable-abi29-cu128-x86_64-linux", NULL, NULL,
		"k-2.0+torchstable29cu128-cp39-abi3-manylinux_2_28_x86_64.whl");
	name_is("k", "2.0", "tvm-ffi01-cpu-x86_64-linux", NULL, NULL,
		"k-2.0+tvmffi01cpu-cp39-abi3-manylinux_2_28_x86_64.whl");
	name_is("k", "2.0", "torch29-cxx11-xpu20251-x86_64-linux", NULL, NULL,
		"k-2.0+torch29cuxpu20251cxx11-cp39-abi3-manylinux_2_28_x86_64.whl");
	name_is("org/img2gray", "0.1.0", "torch-universal", NULL, NULL, "img2gray-0.1.0-py39-none-any.whl");
	name_is("org/img2gray", "0.1.0", "torch-cuda", "3.11", NULL, "img2gray-0.1.0-py311-none-any.whl");
	name_is("k", "1.0rc1", "torch-cpu", NULL, NULL, "k-1.0rc1-py39-none-any.whl");
}

static void refused(const char *repo, const char *version, const char *variant, const char *py, const char *ml)
{
	kernels_wheel_options wo = { KERNELS_WHEEL_OPTIONS_VERSION, py, ml };
	char *got = (char *)"sentinel";

	assert_int_equal(kernels_wheel_filename(&got, repo, version, variant, &wo), KERNELS_EINVAL);
	assert_null(got);
	assert_true(strlen(kernels_error_last()) > 10);
}

static void test_filename_refusals(void **state)
{
	kernels_wheel_options old = { 99, NULL, NULL };
	char *got = NULL;

	(void)state;
	refused("k", "1.0-beta", "torch-universal", NULL, NULL);
	refused("k", "v1.0", "torch-universal", NULL, NULL);
	refused("k", "", "torch-universal", NULL, NULL);
	refused("k", "1.0+local", "torch-universal", NULL, NULL);
	refused("k", "1.0/x", "torch-universal", NULL, NULL);
	refused("k", NULL, "torch-universal", NULL, NULL);
	refused("a b", "1.0", "torch-universal", NULL, NULL);
	refused("org/", "1.0", "torch-universal", NULL, NULL);
	refused("k", "1.0", "nonsense", NULL, NULL);
	refused("k", "1.0", "torch27-cxx11-cu126-x86_64-plan9", NULL, NULL);
	refused("k", "1.0", "torch-universal", "3", NULL);
	refused("k", "1.0", "torch-universal", "3.x", NULL);
	refused("k", "1.0", "torch27-cxx11-cu126-x86_64-linux", NULL, "2.28.1");
	refused("k", "1.0", NULL, NULL, NULL);
	assert_int_equal(kernels_wheel_filename(&got, "k", "1.0", "torch-universal", &old), KERNELS_EINVAL);
	assert_int_equal(kernels_wheel_filename(NULL, "k", "1.0", "torch-universal", NULL), KERNELS_EINVAL);
}

/* ---- writing ------------------------------------------------------------------ */

typedef struct {
	char *names[64];
	char *data[64];
	size_t sizes[64];
	int modes[64];
	int n;
} zip_contents;

static void zip_read(const char *path, zip_contents *z)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;

	memset(z, 0, sizeof(*z));
	archive_read_support_format_zip(a);
	assert_int_equal(archive_read_open_filename(a, path, 16384), ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		size_t size = (size_t)archive_entry_size(e);
		assert_true(z->n < 64);
		z->names[z->n] = strdup(archive_entry_pathname(e));
		z->data[z->n] = calloc(1, size + 1);
		z->sizes[z->n] = size;
		z->modes[z->n] = (int)(archive_entry_perm(e) & 0777);
		assert_int_equal(archive_read_data(a, z->data[z->n], size), (la_ssize_t)size);
		z->n++;
	}
	archive_read_free(a);
}

static void zip_free(zip_contents *z)
{
	int i;
	for (i = 0; i < z->n; i++) {
		free(z->names[i]);
		free(z->data[i]);
	}
}

static const char *zip_get(const zip_contents *z, const char *name)
{
	int i;
	for (i = 0; i < z->n; i++)
		if (!strcmp(z->names[i], name))
			return z->data[i];
	return NULL;
}

static void put(const char *dir, const char *rel, const char *text)
{
	assert_int_equal(test_put(dir, rel, text), 0);
}

static void test_write_current_layout(void **state)
{
	char *tmp = test_mkdtemp("wheel"), *v, *out, *path = NULL, *outside, *first, *second;
	const char *record;
	size_t l1, l2;
	zip_contents z;
	int i;

	(void)state;
	assert_true(asprintf(&v, "%s/build/torch211-cxx11-cpu-x86_64-linux", tmp) > 0);
	assert_true(asprintf(&out, "%s/out", tmp) > 0);
	assert_true(asprintf(&outside, "%s/blob", tmp) > 0);
	put(v, "__init__.py", "print(1)\n");
	put(v, "_ops.py", "abc");
	put(v, "sub/x,y.py", "abc");
	put(v, "__pycache__/a.cpython-311.pyc", "junk");
	put(v, "b.pyc", "junk");
	put(v, "metadata.json", "{}");
	put(v, "metadata.json.sigstore", "sig");
	put(v, "my_k/__init__.py", "from .. import *\n");
	assert_int_equal(test_write_file(outside, "abc", 3), 0);
	{
		char *link;
		assert_true(asprintf(&link, "%s/_my_k_1.abi3.so", v) > 0);
		assert_int_equal(symlink(outside, link), 0); /* cache snapshots are links into blobs/ */
		chmod(outside, 0755);
		free(link);
	}
	mkdir(out, 0755);

	assert_int_equal(kernels_wheel_write(&path, v, "org/my-k", "0.1.0", NULL, out, NULL), 0);
	assert_non_null(strstr(path, "/out/my_k-0.1.0+torch211cucpucxx11-cp39-abi3-manylinux_2_28_x86_64.whl"));
	zip_read(path, &z);
	{
		static const char *const want[] = {
			"my_k/__init__.py", "my_k/_my_k_1.abi3.so", "my_k/_ops.py", "my_k/metadata.json", "my_k/sub/x,y.py",
			"my_k-0.1.0+torch211cucpucxx11.dist-info/WHEEL", "my_k-0.1.0+torch211cucpucxx11.dist-info/METADATA",
			"my_k-0.1.0+torch211cucpucxx11.dist-info/RECORD",
		};
		assert_int_equal(z.n, 8);
		for (i = 0; i < 8; i++)
			assert_string_equal(z.names[i], want[i]);
	}
	assert_int_equal(z.modes[1], 0755);
	assert_int_equal(z.modes[2], 0644);
	assert_string_equal(zip_get(&z, "my_k/_my_k_1.abi3.so"), "abc");
	assert_string_equal(zip_get(&z, "my_k-0.1.0+torch211cucpucxx11.dist-info/WHEEL"),
			    "Wheel-Version: 1.0\nGenerator: libkernels (" KERNELS_VERSION_STRING ")\n"
			    "Root-Is-Purelib: false\nTag: cp39-abi3-manylinux_2_28_x86_64\n\n");
	assert_string_equal(zip_get(&z, "my_k-0.1.0+torch211cucpucxx11.dist-info/METADATA"),
			    "Metadata-Version: 2.1\nName: my_k\nVersion: 0.1.0+torch211cucpucxx11\nSummary: my_k kernel\n"
			    "Requires-Python: >=3.9\nRequires-Dist: torch==2.11.*\n\n");
	record = zip_get(&z, "my_k-0.1.0+torch211cucpucxx11.dist-info/RECORD");
	/* sha256 urlsafe base64 without padding, as computed by Python's hashlib. */
	assert_non_null(strstr(record, "my_k/__init__.py,sha256=zEIVUIj8pXMHWNtysqW8ozESqUHfqi1DCY7EIs5OohM,9\n"));
	assert_non_null(strstr(record, "my_k/_ops.py,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n"));
	assert_non_null(strstr(record, "my_k/_my_k_1.abi3.so,sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n"));
	assert_non_null(strstr(record, "\"my_k/sub/x,y.py\",sha256=ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0,3\n"));
	assert_non_null(strstr(record, "my_k-0.1.0+torch211cucpucxx11.dist-info/WHEEL,sha256="));
	assert_non_null(strstr(record, "my_k-0.1.0+torch211cucpucxx11.dist-info/METADATA,sha256="));
	{
		static const char last[] = "\nmy_k-0.1.0+torch211cucpucxx11.dist-info/RECORD,,\n";
		assert_true(strlen(record) > sizeof(last));
		assert_string_equal(record + strlen(record) - (sizeof(last) - 1), last);
	}
	assert_null(strstr(record, "pyc"));
	assert_null(strstr(record, "sigstore"));
	zip_free(&z);

	/* Reproducible: the same variant gives the same bytes. */
	first = test_read_file(path, &l1);
	free(path);
	assert_int_equal(kernels_wheel_write(&path, v, "org/my-k", "0.1.0", "torch211-cxx11-cpu-x86_64-linux", out, NULL),
			 0);
	second = test_read_file(path, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(first, second, l1);
	free(first);
	free(second);
	free(path);
	test_rmtree(tmp);
	free(tmp);
	free(v);
	free(out);
	free(outside);
}

static void test_write_seed_layout_and_noarch(void **state)
{
	char *tmp = test_mkdtemp("wheel"), *v, *path = NULL;
	zip_contents z;

	(void)state;
	assert_true(asprintf(&v, "%s/torch-universal", tmp) > 0);
	put(v, "k/__init__.py", "x = 1\n");
	put(v, "k/layers.py", "y = 2\n");
	put(v, "metadata.json", "{}");
	assert_int_equal(kernels_wheel_write(&path, v, "k", "3", NULL, tmp, NULL), 0);
	assert_non_null(strstr(path, "/k-3-py39-none-any.whl"));
	zip_read(path, &z);
	assert_int_equal(z.n, 5);
	assert_string_equal(z.names[0], "k/__init__.py");
	assert_string_equal(z.names[1], "k/layers.py");
	assert_string_equal(zip_get(&z, "k-3.dist-info/WHEEL"),
			    "Wheel-Version: 1.0\nGenerator: libkernels (" KERNELS_VERSION_STRING ")\n"
			    "Root-Is-Purelib: true\nTag: py39-none-any\n\n");
	assert_non_null(strstr(zip_get(&z, "k-3.dist-info/METADATA"), "Requires-Dist: torch\n"));
	zip_free(&z);
	free(path);
	test_rmtree(tmp);
	free(tmp);
	free(v);
}

static void test_write_refusals(void **state)
{
	char *tmp = test_mkdtemp("wheel"), *v, *nopkg, *linked, *link, *path = (char *)"x", *missing;

	(void)state;
	assert_true(asprintf(&v, "%s/torch-universal", tmp) > 0);
	assert_true(asprintf(&nopkg, "%s/torch-cpu", tmp) > 0);
	assert_true(asprintf(&linked, "%s/torch-cuda", tmp) > 0);
	assert_true(asprintf(&missing, "%s/no-such-folder", tmp) > 0);
	put(v, "__init__.py", "x = 1\n");
	put(nopkg, "README.md", "no package");
	put(linked, "__init__.py", "x = 1\n");
	assert_true(asprintf(&link, "%s/escape", linked) > 0);
	assert_int_equal(symlink("/etc", link), 0);

	assert_int_equal(kernels_wheel_write(&path, nopkg, "k", "1", NULL, tmp, NULL), KERNELS_ENOTFOUND);
	assert_null(path);
	assert_non_null(strstr(kernels_error_last(), "no Python package"));
	assert_int_equal(kernels_wheel_write(&path, missing, "k", "1", "torch-cpu", tmp, NULL), KERNELS_ENOTFOUND);
	assert_int_equal(kernels_wheel_write(&path, linked, "k", "1", NULL, tmp, NULL), KERNELS_EUNSAFE);
	assert_int_equal(kernels_wheel_write(&path, v, "k", "1", NULL, missing, NULL), KERNELS_EIO);
	assert_int_equal(kernels_wheel_write(&path, v, "k", "v1", NULL, tmp, NULL), KERNELS_EINVAL);
	assert_int_equal(kernels_wheel_write(&path, NULL, "k", "1", NULL, tmp, NULL), KERNELS_EINVAL);
	/* Nothing half-written is left behind. */
	{
		char *cmd;
		assert_true(asprintf(&cmd, "test -z \"$(ls -A '%s' | grep -v -e '^torch-' -e '^no-such')\"", tmp) > 0);
		assert_int_equal(test_system("%s", cmd), 0);
		free(cmd);
	}
	free(v);
	free(nopkg);
	free(linked);
	free(link);
	free(missing);
	test_rmtree(tmp);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_filenames),
		cmocka_unit_test(test_filename_refusals),
		cmocka_unit_test(test_write_current_layout),
		cmocka_unit_test(test_write_seed_layout_and_noarch),
		cmocka_unit_test(test_write_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

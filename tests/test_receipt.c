/* Verification receipts (lib/receipt.c): a cached variant verified once is
 * not hashed again while every file keeps its identity; a touched,
 * replaced or rewritten file (or metadata.json) means a full re-hash, and a
 * changed byte is then refused. The library's debug log says which. */
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
#include "../tests/data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"

static test_hub *hub;
static char *tmp, *cache, *module;
static int receipt_used;
static kernels_system sys_cpu = { .torch_version = 211, .torch_cxx11_abi = 1, .tvm_ffi_version = -1,
				  .backend = "cpu", .cpu = "x86_64", .os = "linux", .no_gpu = 1 };

static void on_log(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	if (level == KERNELS_LOG_DEBUG && strstr(msg, "unchanged since (receipt)"))
		receipt_used++;
}

static int setup(void **state)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	(void)state;

	if (!(hub = test_hub_start()) || !(tmp = test_mkdtemp("receipt")))
		return -1;
	assert_true(asprintf(&cache, "%s/cache", tmp) > 0);
	assert_int_equal(fx_publish_answer(hub, tmp, "acme/rc", "rc", 3, NULL, "--trusted"), 0);
	assert_true(asprintf(&module, "%s/kernels--acme--rc/snapshots/%s/build/" VARIANT "/_rc_3.abi3.so", cache,
			     test_hub_last_commit(hub)) > 0);
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.endpoint = test_hub_endpoint(hub);
	o.cache_dir = cache;
	o.offline = 0;
	o.system = &sys_cpu;
	assert_int_equal(kernels_get(&k, "acme/rc", "v1.0.0", &o), 0);
	kernels_kernel_close(k);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	test_hub_stop(hub);
	test_rmtree(tmp);
	free(tmp);
	free(cache);
	free(module);
	return 0;
}

/* An offline load: KERNELS_* code; *used says whether the receipt spared the hashing. */
static int load(int *used)
{
	kernels_options o;
	kernels_kernel *k = NULL;
	int rc;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	o.cache_dir = cache;
	o.offline = 1;
	o.system = &sys_cpu;
	o.log_cb = on_log;
	receipt_used = 0;
	rc = kernels_get(&k, "acme/rc", "v1.0.0", &o);
	kernels_kernel_close(k);
	*used = receipt_used;
	return rc;
}

static void test_receipt_spares_the_hash(void **state)
{
	int used;
	(void)state;

	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1); /* the first get wrote it */
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1);
}

static void test_touched_file_is_hashed_again(void **state)
{
	int used;
	(void)state;

	assert_int_equal(test_system("touch -d '2001-01-01' \"$(readlink -f '%s')\"", module), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
	assert_int_equal(load(&used), 0); /* a new receipt for the new identity */
	assert_int_equal(used, 1);
}

static void test_replaced_file_is_hashed_again(void **state)
{
	int used;
	(void)state;

	/* Same bytes, new inode. */
	assert_int_equal(test_system("b=$(readlink -f '%s') && cp -p \"$b\" \"$b.new\" && mv -f \"$b.new\" \"$b\"", module), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
	/* metadata.json touched: hashed again too. */
	assert_int_equal(test_system("touch \"$(readlink -f \"$(dirname '%s')/metadata.json\")\"", module), 0);
	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 0);
}

/* A byte rewritten in place with the times put back: the change time still
 * moves, so the file is hashed and refused. */
static void test_rewritten_file_is_refused(void **state)
{
	int used;
	(void)state;

	assert_int_equal(load(&used), 0);
	assert_int_equal(used, 1);
	assert_int_equal(test_system("b=$(readlink -f '%s') && t=$(stat -c %%y \"$b\") && chmod u+w \"$b\" && "
				     "printf 'Z' | dd of=\"$b\" bs=1 seek=200 conv=notrunc 2>/dev/null && "
				     "chmod u-w \"$b\" && touch -d \"$t\" \"$b\"", module), 0);
	assert_int_equal(load(&used), KERNELS_EINTEGRITY);
	assert_int_equal(used, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_receipt_spares_the_hash),
		cmocka_unit_test(test_touched_file_is_hashed_again),
		cmocka_unit_test(test_replaced_file_is_hashed_again),
		cmocka_unit_test(test_rewritten_file_is_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * A host written against the headers of libkernels before 1.0
 * (tests/abi/v0, frozen: never edit them), built with them and run against
 * the library of this build: the everyday path (kernels_options_init at
 * options version 1, kernels_get, kernels_symbol, kernels_kernel_close,
 * kernels_error_last) must keep working for it. Its kernels_options ends
 * where a guard page begins, so a library that reads or writes past the
 * fields version 1 had crashes here instead of reading a neighbour.
 * usage: host_v0 REPO REVISION (the Hub and cache from the environment)
 */
#include <kernels.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static kernels_options *options_before_guard(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *two = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (two == MAP_FAILED || mprotect(two + page, page, PROT_NONE) != 0)
		return NULL;
	return (kernels_options *)(two + page - sizeof(kernels_options));
}

int main(int argc, char **argv)
{
	kernels_options *opts = options_before_guard();
	kernels_kernel *k = NULL;
	int (*twice)(int);

	if (argc != 3 || !opts)
		return 2;
	if (kernels_options_init(opts, 1) < 0 || opts->version != 1 || opts->offline != KERNELS_FROM_ENV) {
		fprintf(stderr, "kernels_options_init(opts, 1): %s\n", kernels_error_last());
		return 1;
	}
	opts->max_parallel = 2;
	if (kernels_get(&k, argv[1], argv[2], opts) < 0) {
		fprintf(stderr, "kernels_get: %s\n", kernels_error_last());
		return 1;
	}
	twice = (int (*)(int))kernels_symbol(k, "twice");
	if (!twice) {
		fprintf(stderr, "kernels_symbol: %s\n", kernels_error_last());
		kernels_kernel_close(k);
		return 1;
	}
	printf("%s %d\n", kernels_kernel_variant(k), twice(21));
	kernels_kernel_close(k);
	return 0;
}

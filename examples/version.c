/* The smallest program that links libkernels: prints its version and
 * what an error message looks like. */
#include <stdio.h>
#include <kernels.h>

int main(void)
{
	kernels_options opts;

	if (kernels_options_init(&opts, 0) < 0)
		printf("expected error: %s (%s)\n", kernels_error_last(), kernels_strerror(kernels_error_last_code()));
	printf("libkernels %s\n", kernels_version());
	return kernels_version_number() == KERNELS_VERSION_NUMBER ? 0 : 1;
}

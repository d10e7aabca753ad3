/* Preloaded (LD_PRELOAD) into the `libkernels` tool by its tests: every
 * call the program makes of kernels_system_detect appends a line to the
 * file $KERNELS_TEST_DETECT_LOG, then the library's own function answers.
 * The library's detections inside its other calls do not go through this
 * symbol, so the lines count the tool's own detections. Outside lib/ and
 * outside the static test support library, which must not define it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels.h"

typedef int (*detect_fn)(kernels_system **, const struct kernels_options *);

int kernels_system_detect(kernels_system **out, const struct kernels_options *opts)
{
	detect_fn next = (detect_fn)dlsym(RTLD_NEXT, "kernels_system_detect");
	const char *log = getenv("KERNELS_TEST_DETECT_LOG");
	FILE *f = log ? fopen(log, "a") : NULL;

	if (f) {
		fputs("kernels_system_detect\n", f);
		fclose(f);
	}
	return next ? next(out, opts) : KERNELS_EINVAL;
}

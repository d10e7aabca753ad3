/* Library-wide facts: its version, and the one way to release the
 * strings and arrays the API returns (kernels_free). Process-wide initialisation of the dependencies
 * lives with the stage that needs it, behind pthread_once. */
#include "kernels/common.h"

#include <stdlib.h>

const char *kernels_version(void)
{
	return KERNELS_VERSION_STRING;
}

int kernels_version_number(void)
{
	return KERNELS_VERSION_NUMBER;
}

/* Everything the library hands the caller to release (strings, arrays,
 * string arrays packed into one block) is one malloc'ed block. */
void kernels_free(void *ptr)
{
	free(ptr);
}

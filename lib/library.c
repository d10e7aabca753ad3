/* Library-wide facts: its version, and the one way to free the string
 * arrays the API returns. Process-wide initialisation of the dependencies
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

void kernels_strings_free(char **strings, size_t count)
{
	size_t i;

	if (!strings)
		return;
	for (i = 0; i < count; i++)
		free(strings[i]);
	free(strings);
}

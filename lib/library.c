/* Library-wide facts: its version. Process-wide initialisation of the
 * dependencies lives with the stage that needs it, behind pthread_once. */
#include "kernels/common.h"

const char *kernels_version(void)
{
	return KERNELS_VERSION_STRING;
}

int kernels_version_number(void)
{
	return KERNELS_VERSION_NUMBER;
}

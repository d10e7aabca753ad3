/* Prints what kernels_system_detect() sees in a process without torch. */
#include <stdio.h>
#include "kernels/system.h"
#include "kernels/common.h"

int main(void)
{
	kernels_system *s;
	char text[1024];
	if (kernels_system_detect(&s, NULL) != 0) {
		fprintf(stderr, "detect failed: %s\n", kernels_error_last());
		return 1;
	}
	kernels_system_format(text, sizeof(text), s);
	printf("C (no torch): %s\n", text);
	kernels_system_free(s);
	return 0;
}

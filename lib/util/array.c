#include "array.h"
#include "error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int kernels__array_reserve(void *items_ptr, size_t *cap, size_t need, size_t size)
{
	size_t grown = *cap ? *cap : 8;
	void *items, *p;

	if (need <= *cap)
		return 0;
	while (grown < need) {
		if (grown > SIZE_MAX / 2)
			return kernels__error_oom();
		grown *= 2;
	}
	if (grown > SIZE_MAX / size)
		return kernels__error_oom();
	/* The pointer is read and written through memcpy: items_ptr is a T **
	 * of any T, which must not be accessed as a void **. */
	memcpy(&items, items_ptr, sizeof(items));
	if (!(p = realloc(items, grown * size)))
		return kernels__error_oom();
	memcpy(items_ptr, &p, sizeof(p));
	*cap = grown;
	return 0;
}

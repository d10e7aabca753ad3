/* Versioned structs read and written no further than the caller's
 * version reaches (layout.h). */
#include "layout.h"
#include "error.h"
#include "kernels/common.h"

#include <string.h>

size_t kernels__layout_size(const kernels__layout *l, unsigned int version)
{
	if (version == 0 || version > l->current) {
		kernels__error(KERNELS_EINVAL,
			       "%s.version is %u; this libkernels (%s) knows versions 1 to %u: set it to %s from "
			       "the header you build with (or use its _INIT initialiser), and build against a "
			       "libkernels at least as new as that header",
			       l->name, version, KERNELS_VERSION_STRING, l->current, l->macro);
		return 0;
	}
	return l->sizes[version];
}

int kernels__layout_check(const kernels__layout *l, const void *dst)
{
	unsigned int version;

	memcpy(&version, dst, sizeof(version));
	return kernels__layout_size(l, version) ? 0 : KERNELS_EINVAL;
}

int kernels__layout_read(const kernels__layout *l, void *dst, const void *src)
{
	unsigned int version, current = l->current;
	size_t size;

	memcpy(&version, src, sizeof(version));
	if (!(size = kernels__layout_size(l, version)))
		return KERNELS_EINVAL;
	memcpy(dst, src, size);
	memcpy(dst, &current, sizeof(current));
	return 0;
}

int kernels__layout_write(const kernels__layout *l, void *dst, const void *src)
{
	unsigned int version;
	size_t size;

	memcpy(&version, dst, sizeof(version));
	if (!(size = kernels__layout_size(l, version)))
		return KERNELS_EINVAL;
	memcpy((char *)dst + sizeof(version), (const char *)src + sizeof(version), size - sizeof(version));
	return 0;
}

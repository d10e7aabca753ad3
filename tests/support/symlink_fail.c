/* The wrapper behind symlink_fail.h; only linked into programs that call it. */
#include "symlink_fail.h"

#include <errno.h>
#include <stdatomic.h>

int __real_symlinkat(const char *target, int dirfd, const char *path);

static atomic_int refusing, refused;

void symlink_fail_refuse(int on)
{
	atomic_store(&refused, 0);
	atomic_store(&refusing, on);
}

int symlink_fail_refused(void)
{
	return atomic_load(&refused);
}

int __wrap_symlinkat(const char *target, int dirfd, const char *path)
{
	if (atomic_load(&refusing)) {
		atomic_fetch_add(&refused, 1);
		errno = EPERM;
		return -1;
	}
	return __real_symlinkat(target, dirfd, path);
}

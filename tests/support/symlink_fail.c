/* The wrapper behind symlink_fail.h; only linked into programs that call it. */
#include "symlink_fail.h"

#include <errno.h>
#include <stdatomic.h>

int __real_symlinkat(const char *target, int dirfd, const char *path);

static atomic_int refusing, refused; /* refusing: the errno given, or 0 */

void symlink_fail_with(int err)
{
	atomic_store(&refused, 0);
	atomic_store(&refusing, err);
}

void symlink_fail_refuse(int on)
{
	symlink_fail_with(on ? EPERM : 0);
}

int symlink_fail_refused(void)
{
	return atomic_load(&refused);
}

int __wrap_symlinkat(const char *target, int dirfd, const char *path)
{
	int err = atomic_load(&refusing);

	if (err) {
		atomic_fetch_add(&refused, 1);
		errno = err;
		return -1;
	}
	return __real_symlinkat(target, dirfd, path);
}

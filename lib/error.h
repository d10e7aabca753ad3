/* Internal: raising errors into the thread-local slot behind kernels_error_last(). */
#ifndef KERNELS_LIB_ERROR_H
#define KERNELS_LIB_ERROR_H

#include "kernels/common.h"

/* Records `code` with a formatted message for this thread and returns code,
 * so a failing path reads `return kernels__error(KERNELS_EINVAL, "...")`. */
int kernels__error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prepends context to the current message ("fetching org/x: <old message>"),
 * keeping its code, and returns that code. With no error raised it raises
 * KERNELS_ERROR, so a failure never reads as "no error". */
int kernels__error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Each whole occurrence of the path `from` in the current message (one no
 * further name characters continue: "/proc/self/fd/8" is not in
 * "/proc/self/fd/81") becomes `to`, the code kept: for a path reached
 * through a descriptor that the user knows by its own name. */
void kernels__error_path_rename(const char *from, const char *to);

/* The current error, a KERNELS_EHTTP, is the Hub not serving: it answered
 * `status` (a 5xx or 429) until the retries ran out. get.c falls back to
 * the cache on it as on an unreachable Hub; kernels__error() forgets it,
 * kernels__error_prefix() and kernels__error_path_rename() keep it. */
void kernels__error_mark_unserved(long status);
/* That status while the current error is a KERNELS_EHTTP so marked, else 0. */
long kernels__error_unserved(void);

/* Out of memory: cannot allocate a message, so a static one is used. */
int kernels__error_oom(void);

#endif

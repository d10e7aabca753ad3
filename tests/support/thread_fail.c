/* The wrapper behind thread_fail.h; only linked into programs that call it. */
#include "thread_fail.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

int __real_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg);

static atomic_int refusing, refused;

void thread_fail_refuse(int on)
{
	atomic_store(&refused, 0);
	atomic_store(&refusing, on);
}

int thread_fail_refused(void)
{
	return atomic_load(&refused);
}

int __wrap_pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *), void *arg)
{
	if (atomic_load(&refusing)) {
		atomic_fetch_add(&refused, 1);
		return EAGAIN;
	}
	return __real_pthread_create(thread, attr, start, arg);
}

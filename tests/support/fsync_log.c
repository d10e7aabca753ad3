/* The wrapper behind fsync_log.h; only linked into programs that call it. */
#include "fsync_log.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define LOG_MAX 256

int __real_fsync(int fd);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char paths[LOG_MAX][PATH_MAX];
static int count;

void fsync_log_clear(void)
{
	pthread_mutex_lock(&lock);
	count = 0;
	pthread_mutex_unlock(&lock);
}

int fsync_log_count(const char *prefix, const char *part)
{
	int i, n = 0;

	pthread_mutex_lock(&lock);
	for (i = 0; i < count; i++)
		n += !strncmp(paths[i], prefix, strlen(prefix)) && (!part || strstr(paths[i], part));
	pthread_mutex_unlock(&lock);
	return n;
}

int __wrap_fsync(int fd)
{
	char link[64];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	pthread_mutex_lock(&lock);
	if (count < LOG_MAX && (len = readlink(link, paths[count], PATH_MAX - 1)) > 0) {
		paths[count][len] = '\0';
		count++;
	}
	pthread_mutex_unlock(&lock);
	return __real_fsync(fd);
}

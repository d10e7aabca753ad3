/* The wrapper behind fsync_log.h; only linked into programs that call it. */
#include "fsync_log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOG_MAX 256

int __real_fsync(int fd);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char paths[LOG_MAX][PATH_MAX];
static int count;
static char fail_part[PATH_MAX];
static int fail_err, fail_lose, fail_left;

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

void fsync_log_fail(const char *part, int err, int lose, int times)
{
	pthread_mutex_lock(&lock);
	snprintf(fail_part, sizeof(fail_part), "%s", part ? part : "");
	fail_err = err;
	fail_lose = lose;
	fail_left = times;
	pthread_mutex_unlock(&lock);
}

/* Zeroes the first bytes (never past the end) through a descriptor of its
 * own: the caller's may be read-only. */
static void lose_bytes(const char *link)
{
	static const char zeros[4096];
	int fd = open(link, O_WRONLY | O_CLOEXEC);
	struct stat st;
	size_t n;

	if (fd < 0)
		return;
	n = fstat(fd, &st) == 0 && (size_t)st.st_size < sizeof(zeros) ? (size_t)st.st_size : sizeof(zeros);
	if (pwrite(fd, zeros, n, 0) < 0)
		perror("fsync_log: zeroing");
	close(fd);
}

/* The errno the call `path` gets (0: it succeeds), one of those armed used up. */
static int fail_for(const char *path, int *lose)
{
	int err = 0;

	pthread_mutex_lock(&lock);
	if (fail_left > 0 && *fail_part && strstr(path, fail_part)) {
		fail_left--;
		err = fail_err;
		*lose = fail_lose;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

int __wrap_fsync(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t len;
	int err, lose = 0, rc;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof(path) - 1);
	path[len > 0 ? len : 0] = '\0';
	pthread_mutex_lock(&lock);
	if (count < LOG_MAX && len > 0)
		snprintf(paths[count++], PATH_MAX, "%s", path);
	pthread_mutex_unlock(&lock);
	err = len > 0 ? fail_for(path, &lose) : 0;
	if (err && lose)
		lose_bytes(link);
	rc = __real_fsync(fd);
	if (err) {
		errno = err;
		return -1;
	}
	return rc;
}

/* The wrapper behind opendir_count.h; only linked into programs that call it. */
#include "opendir_count.h"

#include <dirent.h>
#include <pthread.h>
#include <string.h>

DIR *__real_opendir(const char *name);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static const char *watched;
static int counted;

void opendir_count(const char *suffix)
{
	pthread_mutex_lock(&lock);
	watched = suffix;
	counted = 0;
	pthread_mutex_unlock(&lock);
}

int opendir_counted(void)
{
	int n;

	pthread_mutex_lock(&lock);
	n = counted;
	pthread_mutex_unlock(&lock);
	return n;
}

DIR *__wrap_opendir(const char *name)
{
	size_t len = name ? strlen(name) : 0;

	pthread_mutex_lock(&lock);
	if (watched && len >= strlen(watched) && !strcmp(name + len - strlen(watched), watched))
		counted++;
	pthread_mutex_unlock(&lock);
	return __real_opendir(name);
}

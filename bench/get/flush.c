/* What a flush costs on the disk under a cache, for reading a cold get's
 * timeline (bench/get/timeline.sh): a file of SIZE bytes written in 16 KiB
 * pieces, as a download writes it, then fdatasync; the same with the
 * write-back started as it is written and waited for (sync_file_range)
 * before the fdatasync; and two such files flushed at once from two
 * threads, as a blob and its Python-free copy would be. Medians of RUNS.
 *   flush DIR [SIZE [RUNS]]
 * Not part of the library: a measuring tool. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static size_t size;
static char *bytes;

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* Writes a fresh file (with its write-back waited for if `settle`) and
 * returns what its fdatasync took, in ms; -1 on failure. */
static double one(int settle)
{
	char path[4096];
	size_t off, n;
	double t;
	int fd;

	snprintf(path, sizeof(path), "%s/flush.%d.%lx.tmp", dir, (int)getpid(), (unsigned long)pthread_self());
	if ((fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600)) < 0)
		return -1;
	for (off = 0; off < size; off += n) {
		n = size - off < 16384 ? size - off : 16384;
		if (write(fd, bytes + off, n) != (ssize_t)n)
			break;
	}
	if (settle)
		sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
				SYNC_FILE_RANGE_WAIT_AFTER);
	t = now_ms();
	if (off < size || fdatasync(fd) < 0)
		t = -1;
	else
		t = now_ms() - t;
	close(fd);
	unlink(path);
	return t;
}

static void *one_thread(void *arg)
{
	*(double *)arg = one(0);
	return NULL;
}

/* Two files written, then flushed at once: the later of the two. */
static double two(void)
{
	double a, b;
	pthread_t th;

	if (pthread_create(&th, NULL, one_thread, &a) != 0)
		return -1;
	b = one(0);
	pthread_join(th, NULL);
	return a < 0 || b < 0 ? -1 : a > b ? a : b;
}

static int by_value(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

static void report(const char *what, double *t, int runs)
{
	qsort(t, (size_t)runs, sizeof(*t), by_value);
	if (t[0] < 0)
		printf("%-34s failed (cannot write in %s)\n", what, dir);
	else
		printf("%-34s median %7.2f ms   min %7.2f ms   (%d runs)\n", what, t[runs / 2], t[0], runs);
}

int main(int argc, char **argv)
{
	int runs, i;
	double *t;

	if (argc < 2) {
		fprintf(stderr, "usage: flush DIR [SIZE [RUNS]]\n");
		return 2;
	}
	dir = argv[1];
	size = argc > 2 ? strtoul(argv[2], NULL, 10) : 2809880;
	runs = argc > 3 ? atoi(argv[3]) : 9;
	if (!size || runs < 1 || !(bytes = malloc(size)) || !(t = calloc((size_t)runs, sizeof(*t))))
		return 2;
	for (i = 0; i < (int)size; i++)
		bytes[i] = (char)(i * 2654435761u >> 13);
	printf("# flush of a %zu-byte file in %s\n", size, dir);
	for (i = 0; i < runs; i++)
		t[i] = one(0);
	report("written, then flushed", t, runs);
	for (i = 0; i < runs; i++)
		t[i] = one(1);
	report("written back first, then flushed", t, runs);
	for (i = 0; i < runs; i++)
		t[i] = two();
	report("two such files flushed at once", t, runs);
	return 0;
}

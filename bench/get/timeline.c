/* An LD_PRELOAD logger for bench/get/timeline.sh: when a cold get's
 * requests leave and their answers arrive, and how long each fsync takes,
 * against one monotonic clock, so that the call's critical path can be read
 * off (which stage waits on the server, on the disk, or on the client).
 * It wraps connect, send, recv and fsync, and the load stage's
 * copy_file_range, dlopen and pthread_join (a wait on a helper), and writes
 * one line per event to standard error: "T <ms> <thread> <event>". Only the
 * first line of an HTTP request or answer is logged; of a body, each read
 * is one "data" line (timeline.sh keeps a socket's last: when its last byte
 * came). Not part of the library: a measuring tool, loaded into get_bench
 * alone. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* One write per line: lines of several threads never interleave. */
static void event(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int n = snprintf(line, sizeof(line), "T %.3f %d ", now_ms(), (int)gettid());

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(2, line, (size_t)n) < 0)
		return;
}

/* The first line of an HTTP message, when `buf` starts one. */
static int first_line(const void *buf, size_t len, char *out, size_t size)
{
	static const char *const starts[] = { "GET ", "HEAD ", "POST ", "HTTP/" };
	size_t i, k;

	for (i = 0; i < sizeof(starts) / sizeof(*starts); i++)
		if (len > strlen(starts[i]) && !memcmp(buf, starts[i], strlen(starts[i])))
			break;
	if (i == sizeof(starts) / sizeof(*starts))
		return 0;
	for (k = 0; k + 1 < size && k < len && ((const char *)buf)[k] != '\r'; k++)
		out[k] = ((const char *)buf)[k];
	out[k] = '\0';
	return 1;
}

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);
typedef ssize_t (*send_fn)(int, const void *, size_t, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef int (*fsync_fn)(int);
typedef ssize_t (*copy_file_range_fn)(int, off_t *, int, off_t *, size_t, unsigned int);
typedef void *(*dlopen_fn)(const char *, int);
typedef int (*pthread_join_fn)(pthread_t, void **);

/* The wrapped function itself, found once (a race finds the same one). */
#define REAL(name) \
	static name##_fn real_##name; \
	if (!real_##name) \
	real_##name = (name##_fn)dlsym(RTLD_NEXT, #name)

int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	REAL(connect);
	if (addr->sa_family == AF_INET || addr->sa_family == AF_INET6)
		event("connect fd=%d", fd);
	return real_connect(fd, addr, len);
}

ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	char line[160];

	REAL(send);
	if (first_line(buf, len, line, sizeof(line)))
		event("send fd=%d %s", fd, line);
	return real_send(fd, buf, len, flags);
}

ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	char line[160];
	ssize_t n;

	REAL(recv);
	n = real_recv(fd, buf, len, flags);
	if (n > 0 && first_line(buf, (size_t)n, line, sizeof(line)))
		event("recv fd=%d %s", fd, line);
	else if (n > 0)
		event("data fd=%d", fd);
	return n;
}

int fsync(int fd)
{
	double t;
	int rc;

	REAL(fsync);
	t = now_ms();
	rc = real_fsync(fd);
	event("fsync fd=%d %.2f ms", fd, now_ms() - t);
	return rc;
}

ssize_t copy_file_range(int in, off_t *in_off, int out, off_t *out_off, size_t len, unsigned int flags)
{
	double t;
	ssize_t n;

	REAL(copy_file_range);
	t = now_ms();
	n = real_copy_file_range(in, in_off, out, out_off, len, flags);
	event("copy %zd bytes %.2f ms", n, now_ms() - t);
	return n;
}

/* Only the loads that take time: the module's, not the libraries already
 * mapped that its dependencies name again. */
void *dlopen(const char *file, int mode)
{
	const char *base = file ? strrchr(file, '/') : NULL;
	double t;
	void *h;

	REAL(dlopen);
	t = now_ms();
	h = real_dlopen(file, mode);
	t = now_ms() - t;
	if (t >= 0.1)
		event("dlopen %s %.2f ms", base ? base + 1 : file ? file : "(self)", t);
	return h;
}

/* A wait on a helper (a flush, a copy being named): only the ones that wait. */
int pthread_join(pthread_t thread, void **ret)
{
	double t;
	int rc;

	REAL(pthread_join);
	t = now_ms();
	rc = real_pthread_join(thread, ret);
	t = now_ms() - t;
	if (t >= 0.1)
		event("join %.2f ms", t);
	return rc;
}

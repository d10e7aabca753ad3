/* A plugin host (no libkernels of its own): `unload_host PLUGIN ENDPOINT
 * CACHE ROUNDS` dlopens PLUGIN (linked to libkernels), has it get a kernel
 * from the calling thread and from a thread of the host's that outlives the
 * plugin, dlcloses it, and does it again ROUNDS times; then exits. Exit 0
 * when every round's kernel answered and no round after the first left
 * more descriptors open; a crash at dlclose, at the thread's exit or at the
 * process's exit is a defect test_host looks for too. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

typedef int (*run_fn)(const char *endpoint, const char *cache);

typedef struct {
	run_fn run;
	char **argv;
	int answer;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int closed;
} worker;

/* Gets the kernel, then waits until the plugin is closed and exits: its
 * thread-local state is released after the library is gone. */
static void *work(void *arg)
{
	worker *w = arg;

	__atomic_store_n(&w->answer, w->run(w->argv[2], w->argv[3]), __ATOMIC_RELEASE);
	pthread_mutex_lock(&w->mu);
	while (!w->closed)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int round_trip(char **argv)
{
	worker w = { .argv = argv, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER };
	void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	pthread_t t;
	int mine;

	if (!dl || !(w.run = (run_fn)dlsym(dl, "plugin_run"))) {
		fprintf(stderr, "unload_host: %s\n", dlerror());
		return -1;
	}
	if (pthread_create(&t, NULL, work, &w) != 0)
		return -1;
	mine = w.run(argv[2], argv[3]);
	while (!__atomic_load_n(&w.answer, __ATOMIC_ACQUIRE)) /* the worker's get, done before the close */
		sched_yield();
	if (dlclose(dl) != 0)
		return -1;
	pthread_mutex_lock(&w.mu);
	w.closed = 1;
	pthread_cond_signal(&w.cv);
	pthread_mutex_unlock(&w.mu);
	pthread_join(t, NULL);
	return mine == 7 && w.answer == 7 ? 0 : -1;
}

/* The descriptors the process has open. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	int i, rounds = argc > 4 ? atoi(argv[4]) : 0, fds = 0;

	if (argc != 5)
		return 2;
	for (i = 0; i < rounds; i++) {
		if (round_trip(argv) < 0)
			return 1;
		/* A round leaves nothing behind that the next does not reuse: the
		 * kernel it mapped and the descriptor naming it are the process's
		 * once, not once per load of the plugin. */
		if (i == 0)
			fds = open_fds();
		else if (open_fds() != fds) {
			fprintf(stderr, "unload_host: round %d left %d descriptors open, round 1 %d\n", i + 1,
				open_fds(), fds);
			return 3;
		}
	}
	return 0;
}

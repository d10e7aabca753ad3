/* What system detection costs in a fresh process, and what its CUDA
 * sources cost on their own: NVML (no CUDA context) against cuInit, and
 * kernels_system_detect with the backend detected or forced to cpu.
 *
 *   detect_bench [runs]         prints a table (each figure: median of
 *                               `runs` fresh processes, default 7)
 *   detect_bench --one MODE     one measurement in this process (ms)
 *
 * MODE: nvml | cuinit | detect | detect-cpu | cuinit+detect (detect in a
 * process whose host already initialised CUDA) | cudart+detect (the host
 * loaded the CUDA runtime, which brings libcuda in, but initialised
 * nothing). Each detect line ends with what CUDA the process holds
 * afterwards: "[libcuda: none]" means detection loaded no driver. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kernels.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int nvml(void)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	int (*init)(void), (*count)(unsigned *);
	unsigned n = 0;
	if (!h)
		return -1;
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
	return init && count && init() == 0 && count(&n) == 0 ? (int)n : -1;
}

static int cuinit(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	int (*init)(unsigned), (*count)(int *);
	int n = 0;
	if (!h)
		return -1;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	return init && count && init(0) == 0 && count(&n) == 0 ? n : -1;
}

static int detect(const char *backend, char *line, size_t size)
{
	kernels_options o;
	kernels_system sys = { 0 }, *s = NULL;
	int rc;

	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	sys.backend = backend;
	o.system = backend ? &sys : NULL;
	rc = kernels_system_detect(&s, &o);
	if (rc == 0)
		kernels_system_format(line, size, s);
	kernels_system_free(s);
	return rc;
}

/* Whether libcuda is in the process, and initialised (cuDeviceGetCount
 * fails until cuInit was called, and asking initialises nothing). */
static const char *driver_state(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
	int (*count)(int *), n = 0;
	if (!h)
		return "none";
	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	return count && count(&n) == 0 ? "initialised" : "loaded, not initialised";
}

static double timed_detect(char *line, size_t size)
{
	double t0 = now_ms(), t;
	size_t n;
	detect(NULL, line, size);
	t = now_ms() - t0;
	n = strlen(line);
	snprintf(line + n, size - n, " [libcuda: %s]", driver_state());
	return t;
}

static double one(const char *mode, char *line, size_t size)
{
	double t0;
	*line = 0;
	if (!strcmp(mode, "cuinit+detect")) {
		cuinit();
		return timed_detect(line, size);
	}
	if (!strcmp(mode, "cudart+detect")) {
		if (!dlopen("libcudart.so", RTLD_NOW) && !dlopen("libcudart.so.13", RTLD_NOW) &&
		    !dlopen("libcudart.so.12", RTLD_NOW))
			snprintf(line, size, "(no libcudart) ");
		return timed_detect(line + strlen(line), size - strlen(line));
	}
	if (!strcmp(mode, "detect"))
		return timed_detect(line, size);
	t0 = now_ms();
	if (!strcmp(mode, "nvml"))
		snprintf(line, size, "%d GPUs", nvml());
	else if (!strcmp(mode, "cuinit"))
		snprintf(line, size, "%d GPUs", cuinit());
	else if (!strcmp(mode, "detect-cpu"))
		detect("cpu", line, size);
	return now_ms() - t0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "nvml", "cuinit", "detect", "detect-cpu", "cuinit+detect", "cudart+detect" };
	int runs = argc > 1 && strcmp(argv[1], "--one") ? atoi(argv[1]) : 7;
	size_t m;

	if (argc > 2 && !strcmp(argv[1], "--one")) {
		char line[512];
		printf("%.3f\t%s\n", one(argv[2], line, sizeof(line)), line);
		return 0;
	}
	printf("%-14s %10s   %s\n", "mode", "median ms", "answer (last run)");
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		double v[64];
		char cmd[4096], line[1024] = "";
		int i;
		for (i = 0; i < runs && i < 64; i++) {
			FILE *p;
			snprintf(cmd, sizeof(cmd), "'%s' --one %s", argv[0], modes[m]);
			p = popen(cmd, "r");
			if (!p || !fgets(line, sizeof(line), p) || sscanf(line, "%lf", &v[i]) != 1)
				v[i] = -1;
			if (p)
				pclose(p);
		}
		qsort(v, (size_t)i, sizeof(double), cmp);
		line[strcspn(line, "\n")] = 0;
		printf("%-14s %10.2f   %s\n", modes[m], v[i / 2], strchr(line, '\t') ? strchr(line, '\t') + 1 : line);
	}
	return 0;
}

/* CUDA facts of the process, found without creating what the host did not:
 * a host that already initialised the driver is asked through it (free);
 * any other process asks NVML for the GPUs and the driver's version and
 * reads the runtime's version from the file the dynamic loader would pick
 * (or the host loaded), never calling cuInit nor loading or calling a
 * CUDA runtime (each of its entry points initialises the driver first:
 * about 200 ms and a driver instance on a fresh H200 process). Only a
 * machine with no working NVML (Jetson) still pays cuInit, the one way left
 * to see its GPUs. */
#include "cuda_facts.h"
#include "fork.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76
#define CUDA_SUCCESS 0

static kernels__cuda_facts facts; /* written once, under facts_once; read-only after */
static pthread_once_t facts_once = PTHREAD_ONCE_INIT;

/* CUDA_VISIBLE_DEVICES and LD_LIBRARY_PATH as the configuration of the
 * first call that looked captured them: both are facts of the process (the
 * driver reads the first once, the loader the second at start). */
static char visible_devices[256];
static char *library_path;
static pthread_mutex_t env_mu = PTHREAD_MUTEX_INITIALIZER;
static int env_set;

void kernels__cuda_facts_fork(kernels__fork_phase phase)
{
	kernels__fork_mutex(&env_mu, phase);
}

void kernels__cuda_env_from(const kernels__config *cfg)
{
	const char *v = kernels__config_env(cfg, "CUDA_VISIBLE_DEVICES");
	const char *lp = kernels__config_env(cfg, "LD_LIBRARY_PATH");

	pthread_mutex_lock(&env_mu);
	if (!env_set) {
		snprintf(visible_devices, sizeof(visible_devices), "%s", v ? v : "");
		library_path = lp ? strdup(lp) : NULL; /* NULL on no memory: the cache and default folders remain */
	}
	env_set = 1;
	pthread_mutex_unlock(&env_mu);
}

/* CUDA encodes versions as major*1000 + minor*10. */
static int cuda_version_code(int v)
{
	return v > 0 ? (v / 1000) * 100 + (v % 1000) / 10 : 0;
}

/* ---- the driver, when the host initialised it ---------------------------- */

typedef struct {
	int (*init)(unsigned);
	int (*version)(int *);
	int (*count)(int *);
	int (*get)(int *, int);
	int (*attr)(int *, int, int);
} driver_api;

static int driver_api_of(void *h, driver_api *d)
{
	*(void **)&d->init = dlsym(h, "cuInit");
	*(void **)&d->version = dlsym(h, "cuDriverGetVersion");
	*(void **)&d->count = dlsym(h, "cuDeviceGetCount");
	*(void **)&d->get = dlsym(h, "cuDeviceGet");
	*(void **)&d->attr = dlsym(h, "cuDeviceGetAttribute");
	return d->init && d->version && d->count && d->get && d->attr;
}

/* The driver's answers; cuDeviceGetCount fails (CUDA_ERROR_NOT_INITIALIZED)
 * until someone called cuInit, and asking initialises nothing. 1 when the
 * driver answered. */
static int gpus_from_driver(const driver_api *d)
{
	int v = 0, n = 0, i;

	if (d->count(&n) != CUDA_SUCCESS)
		return 0;
	if (d->version(&v) == CUDA_SUCCESS)
		facts.driver_version = cuda_version_code(v);
	for (i = 0; i < n && facts.gpu_count < KERNELS_MAX_GPUS; i++) {
		int dev, major = 0, minor = 0;
		if (d->get(&dev, i) || d->attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) ||
		    d->attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
			continue;
		facts.gpu_archs[facts.gpu_count++] = major * 10 + minor;
	}
	return 1;
}

/* ---- NVML: GPUs and the driver's CUDA version, no CUDA at all ------------ */

/* 1 when NVML answered. NVML stays loaded and initialised for the life of
 * the process: nvmlShutdown detaches the GPUs again (3 ms of the 20 on the
 * H200; attaching is what nvmlDeviceGetHandleByIndex paid for), and
 * unloading NVML mid-process is not worth the risk. (nvmlInit maps libcuda
 * itself, without initialising it.) */
static int gpus_from_nvml(void)
{
	void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(void), (*count)(unsigned *), (*get)(unsigned, void **), (*cc)(void *, int *, int *),
		(*version)(int *);
	unsigned n = 0, i;
	int v = 0;

	if (!h)
		return 0;
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&count = dlsym(h, "nvmlDeviceGetCount_v2");
	*(void **)&get = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&cc = dlsym(h, "nvmlDeviceGetCudaComputeCapability");
	*(void **)&version = dlsym(h, "nvmlSystemGetCudaDriverVersion_v2");
	if (!version)
		*(void **)&version = dlsym(h, "nvmlSystemGetCudaDriverVersion");
	if (!init || !count || !get || !cc || init() != 0)
		return 0;
	if (version && version(&v) == 0)
		facts.driver_version = cuda_version_code(v);
	if (count(&n) == 0) {
		for (i = 0; i < n && facts.gpu_count < KERNELS_MAX_GPUS; i++) {
			void *dev = NULL;
			int major = 0, minor = 0;
			if (get(i, &dev) == 0 && cc(dev, &major, &minor) == 0)
				facts.gpu_archs[facts.gpu_count++] = major * 10 + minor;
		}
	}
	return 1;
}

/* NVML numbers every GPU of the machine; CUDA only those
 * CUDA_VISIBLE_DEVICES lists, in its order. Indices only (a UUID list
 * leaves NVML's order: the driver path honours those itself). */
static void apply_visible_devices(void)
{
	const char *v = visible_devices[0] ? visible_devices : NULL;
	int archs[KERNELS_MAX_GPUS], n = 0;
	char *end;

	if (!v)
		return;
	while (*v && n < KERNELS_MAX_GPUS) {
		long i = strtol(v, &end, 10);
		if (end == v)
			return; /* not a list of indices */
		if (i < 0 || i >= facts.gpu_count)
			break; /* CUDA stops at the first invalid entry */
		archs[n++] = facts.gpu_archs[i];
		v = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			break;
	}
	memcpy(facts.gpu_archs, archs, sizeof(int) * (size_t)n);
	facts.gpu_count = n;
}

/* ---- the runtime's version, from its file ------------------------------- */

/* ld.so.cache's entry flags for a library this process can load. */
#if defined(__x86_64__)
#define LDCACHE_FLAGS 0x0303 /* FLAG_ELF_LIBC6 | FLAG_X8664_LIB64 */
#elif defined(__aarch64__)
#define LDCACHE_FLAGS 0x0a03 /* FLAG_ELF_LIBC6 | FLAG_AARCH64_LIB64 */
#else
#define LDCACHE_FLAGS 0
#endif

#define LDCACHE_NEW "glibc-ld.so.cache1.1"
#define LDCACHE_OLD "ld.so-1.7.0"

/* The new-format table of ld.so.cache at `off` (after an old-format table
 * in caches glibc < 2.32 wrote); the path it maps `name` to, or NULL. */
static char *ldcache_lookup(const char *map, size_t size, const char *name)
{
	size_t off = 0, i, n;

	if (size >= 16 && !memcmp(map, LDCACHE_OLD, strlen(LDCACHE_OLD))) {
		uint32_t old_n;
		memcpy(&old_n, map + 12, 4);
		off = (16 + (size_t)old_n * 12 + 7) & ~(size_t)7;
	}
	if (off > size || size - off < 48 || memcmp(map + off, LDCACHE_NEW, strlen(LDCACHE_NEW)))
		return NULL;
	{
		uint32_t nlibs;
		memcpy(&nlibs, map + off + 20, 4);
		n = nlibs;
	}
	if (n > (size - off - 48) / 24)
		return NULL;
	for (i = 0; i < n; i++) {
		const char *e = map + off + 48 + i * 24;
		int32_t flags;
		uint32_t key, value;
		memcpy(&flags, e, 4);
		memcpy(&key, e + 4, 4);
		memcpy(&value, e + 8, 4);
		if ((LDCACHE_FLAGS && flags != LDCACHE_FLAGS) || key >= size - off || value >= size - off)
			continue;
		/* Strings are NUL-terminated inside the file: bound the compare. */
		if (strnlen(map + off + key, size - off - key) == size - off - key ||
		    strnlen(map + off + value, size - off - value) == size - off - value)
			continue;
		if (!strcmp(map + off + key, name))
			return strdup(map + off + value);
	}
	return NULL;
}

static char *ldcache_find(const char *name)
{
	int fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *path = NULL;
	void *map;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (64 << 20) &&
	    (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) != MAP_FAILED) {
		path = ldcache_lookup(map, (size_t)st.st_size, name);
		munmap(map, (size_t)st.st_size);
	}
	close(fd);
	return path;
}

static char *in_dir(const char *dir, size_t len, const char *name)
{
	char *path = kernels__sprintf("%.*s/%s", (int)len, dir, name);

	if (path && access(path, R_OK) == 0)
		return path;
	free(path);
	return NULL;
}

/* Where dlopen(name) would look: LD_LIBRARY_PATH, ld.so.cache, the default
 * folders. (A runtime only an RPATH finds is seen once the host loads it.) */
static char *loader_find(const char *name)
{
	static const char *const defaults[] = { "/lib64", "/usr/lib64", "/lib", "/usr/lib" };
	const char *p = library_path;
	char *path;
	size_t i;

	while (p && *p) {
		size_t len = strcspn(p, ":;");
		if (len && (path = in_dir(p, len, name)))
			return path;
		p += len + (p[len] != '\0');
	}
	if ((path = ldcache_find(name)))
		return path;
	for (i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		if ((path = in_dir(defaults[i], strlen(defaults[i]), name)))
			return path;
	return NULL;
}

/* "libcudart.so.13.0.96" -> 1300; 0 when the name stops at the major. */
static int version_of_file_name(const char *path)
{
	const char *base = strrchr(path, '/'), *v;
	int major, minor;
	char end;

	base = base ? base + 1 : path;
	if (strncmp(base, "libcudart.so.", 13))
		return 0;
	v = base + 13;
	if (sscanf(v, "%d.%d%c", &major, &minor, &end) < 2 || major <= 0 || major > 99 || minor < 0 || minor > 99)
		return 0;
	return major * 100 + minor;
}

/* "13.0.96" -> 1300; 0 when it is no version. */
static int version_code(const char *s)
{
	int v = kernels__version_major_minor(s);
	return v > 0 ? v : 0;
}

/* "nvidia_cuda_runtime-13.0.96.dist-info" (the pip wheel, also in
 * toolkits assembled from wheels) or "nvidia_cuda_runtime_cu12-12.8.90..."
 * in `dir` or its dist-info/ folder; 0 when none. */
static int version_of_dist_info(const char *dir)
{
	const char *where[] = { "", "/dist-info" };
	int version = 0;
	size_t w;

	for (w = 0; w < 2 && !version; w++) {
		char *d = kernels__sprintf("%s%s", dir, where[w]);
		DIR *dh = d ? opendir(d) : NULL;
		struct dirent *e;
		while (dh && !version && (e = readdir(dh))) {
			const char *dash = strchr(e->d_name, '-');
			size_t len = strlen(e->d_name);
			if (strncmp(e->d_name, "nvidia_cuda_runtime", 19) || !dash || len < 10 ||
			    strcmp(e->d_name + len - 10, ".dist-info"))
				continue;
			version = version_code(dash + 1);
		}
		if (dh)
			closedir(dh);
		free(d);
	}
	return version;
}

/* The toolkit's version.json: "cuda_cudart" : { ... "version" : "13.0.96" }. */
static int version_of_toolkit_json(const char *dir)
{
	char *file = kernels__sprintf("%s/version.json", dir), *text = NULL, *p;
	size_t len;
	int version = 0;

	if (file && kernels__read_file(file, 65536, KERNELS__READ_PREFIX, &text, &len, NULL) == 0 &&
	    (p = strstr(text, "\"cuda_cudart\"")) && (p = strstr(p, "\"version\"")) && (p = strchr(p + 9, '"')))
		version = version_code(p + 1);
	free(text);
	free(file);
	return version;
}

/* The version of the runtime file at `path`: its real name, else what the
 * toolkit or wheel it came in says (the lib folder's parents, up to 3). */
static int version_of_runtime_file(const char *path)
{
	char real[PATH_MAX], *slash;
	int version, up;

	if (!realpath(path, real))
		return 0;
	if ((version = version_of_file_name(real)))
		return version;
	for (up = 0; up < 4 && !version; up++) {
		if (!(slash = strrchr(real, '/')) || slash == real)
			break;
		*slash = '\0'; /* the file's folder (lib), then its parents */
		if (up > 0 && !(version = version_of_toolkit_json(real)))
			version = version_of_dist_info(real);
	}
	return version;
}

static const char *const cudart_names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12",
					    "libcudart.so.11.0" };

/* The version of a runtime the host loaded, from its file; the runtime
 * itself is asked only once the driver is initialised (host_init): its
 * every entry point, cudaRuntimeGetVersion included, initialises the
 * driver first (200 ms on the H200). 1 when one is loaded. */
static int loaded_runtime(int host_init)
{
	size_t i;

	for (i = 0; i < sizeof(cudart_names) / sizeof(cudart_names[0]); i++) {
		void *h = dlopen(cudart_names[i], RTLD_LAZY | RTLD_NOLOAD);
		struct link_map *map = NULL;
		int (*get)(int *), v = 0;

		if (!h)
			continue;
		if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name)
			facts.runtime_version = version_of_runtime_file(map->l_name);
		*(void **)&get = dlsym(h, "cudaRuntimeGetVersion");
		if (!facts.runtime_version && host_init && get && get(&v) == 0)
			facts.runtime_version = cuda_version_code(v);
		dlclose(h);
		return 1;
	}
	return 0;
}

/* A runtime the host loaded, else the file the loader would pick. */
static void detect_runtime(int host_init)
{
	size_t i;

	if (loaded_runtime(host_init))
		return;
	for (i = 0; i < sizeof(cudart_names) / sizeof(cudart_names[0]) && !facts.runtime_version; i++) {
		char *path = loader_find(cudart_names[i]);
		if (path)
			facts.runtime_version = version_of_runtime_file(path);
		free(path);
	}
}

/* No driver, no GPU, a broken install: all of them simply leave zeros.
 * Whether the host initialised CUDA is decided before this loads anything. */
static void detect(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
	driver_api d;
	int host_init = cuda && driver_api_of(cuda, &d) && gpus_from_driver(&d);

	detect_runtime(host_init);
	if (host_init)
		goto out;
	if (gpus_from_nvml()) {
		apply_visible_devices();
		goto out;
	}
	/* No NVML to ask: the driver is the only source left. */
	if (!cuda && !(cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)))
		return;
	if (driver_api_of(cuda, &d) && d.init(0) == CUDA_SUCCESS)
		gpus_from_driver(&d);
	return; /* a libcuda loaded here stays: unloading a CUDA driver is not safe */
out:
	if (cuda)
		dlclose(cuda); /* the NOLOAD reference only; the host's stays */
}

const kernels__cuda_facts *kernels__cuda_facts_get(void)
{
	pthread_once(&facts_once, detect);
	return &facts;
}

/* Whether the host initialised the driver: libcuda mapped and
 * cuDeviceGetCount answering (it fails until cuInit, and asking
 * initialises nothing). */
static int driver_initialised(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
	int (*count)(int *), n = 0, yes;

	if (!h)
		return 0;
	*(void **)&count = dlsym(h, "cuDeviceGetCount");
	yes = count && count(&n) == CUDA_SUCCESS;
	dlclose(h);
	return yes;
}

/* CUDA's current device when the host loaded a runtime and initialised
 * the driver (cudaGetDevice creates no context, but on an uninitialised
 * driver it would initialise it), else 0, the first visible device, as
 * torch.cuda.current_device() says before anything chose another. */
int kernels__cuda_current_device(void)
{
	size_t i;

	if (!driver_initialised())
		return 0;
	for (i = 0; i < sizeof(cudart_names) / sizeof(cudart_names[0]); i++) {
		void *h = dlopen(cudart_names[i], RTLD_LAZY | RTLD_NOLOAD);
		int (*get)(int *), dev = 0;

		if (!h)
			continue;
		*(void **)&get = dlsym(h, "cudaGetDevice");
		if (get && get(&dev) != 0)
			dev = 0;
		dlclose(h);
		return dev;
	}
	return 0;
}

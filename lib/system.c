/* System detection: a chain of options, then KERNELS_* environment, then
 * what the process and machine show. Facts that cannot change while the
 * process runs (uname, glibc, CUDA driver and runtime, GPUs) are detected
 * once behind pthread_once; torch and tvm-ffi are looked up on every call
 * because they may be loaded later; where torch is and what it is, in the
 * process or installed, torch_locate.c finds. */
#include "system.h"
#include "backend.h"
#include "cuda_facts.h"
#include "error.h"
#include "pysource.h"
#include "torch_locate.h"
#include "util.h"

#include <ctype.h>
#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/utsname.h>

/* The environment as the call's configuration captured it (config.h):
 * stages never read the process environment themselves. */
static const char *env(const kernels__config *cfg, const char *name)
{
	return kernels__config_env(cfg, name);
}

/* ---- small parsers ---------------------------------------------------- */

/* "9.0,8.6" -> {90, 86}, or "gfx90a,gfx942:sramecc+" -> names {"gfx90a",
 * "gfx942"} (archs 0); -1 on a malformed or mixed list. */
static int parse_gpu_archs(const char *s, int *archs, char names[][32], int max)
{
	int n = 0, gfx = -1;
	char *end;

	while (*s) {
		long major, minor;
		if (!strncmp(s, "gfx", 3) && gfx != 0) {
			size_t len = strcspn(s, ", :");
			if (len < 4 || len >= 32 || n == max)
				return -1;
			gfx = 1;
			archs[n] = 0;
			memcpy(names[n], s, len);
			names[n++][len] = '\0';
			end = (char *)s + len;
			if (*end == ':') /* feature flags, as torch's gcnArchName has them */
				end += strcspn(end, ", ");
		} else {
			if (!isdigit((unsigned char)*s) || gfx == 1)
				return -1;
			major = strtol(s, &end, 10);
			if (*end != '.' || !isdigit((unsigned char)end[1]))
				return -1;
			minor = strtol(end + 1, &end, 10);
			if (minor > 9 || major > 99 || n == max)
				return -1;
			gfx = 0;
			archs[n] = (int)(major * 10 + minor);
			snprintf(names[n++], 32, "%d.%d", (int)major, (int)minor);
		}
		while (*end == ',' || *end == ' ')
			end++;
		s = end;
	}
	return n;
}

/* ---- facts fixed for the life of the process --------------------------- */

static struct {
	char cpu[64];
	char os[64];
	char glibc[32];
	int macos_version;
} machine; /* written once, under machine_once; read-only after */
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void detect_machine(void)
{
	struct utsname u;
	size_t i;

	if (uname(&u) == 0) {
		snprintf(machine.cpu, sizeof(machine.cpu), "%.63s", u.machine);
		snprintf(machine.os, sizeof(machine.os), "%.63s", u.sysname);
		for (i = 0; machine.os[i]; i++)
			machine.os[i] = (char)tolower((unsigned char)machine.os[i]);
		/* Variant names use Python's spelling of the cpu. */
		if (!strcmp(machine.cpu, "arm64"))
			snprintf(machine.cpu, sizeof(machine.cpu), "aarch64");
		else if (!strcmp(machine.cpu, "AMD64"))
			snprintf(machine.cpu, sizeof(machine.cpu), "x86_64");
	}
	snprintf(machine.glibc, sizeof(machine.glibc), "%s", gnu_get_libc_version());
}

/* The loaded library's own answer, for a libtvm_ffi that came without its
 * Python package (a C/C++ SDK, or copied next to the host). */
static int tvm_ffi_library_version(const char *lib)
{
	struct {
		uint32_t major, minor, patch;
	} v = { 0, 0, 0 };
	void (*get)(void *);
	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);

	if (!h)
		return 0;
	*(void **)&get = dlsym(h, "TVMFFIGetVersion");
	if (get)
		get(&v);
	dlclose(h);
	return get && v.minor <= 99 && v.major <= 1000 ? (int)(v.major * 100 + v.minor) : 0;
}

/* tvm_ffi/lib/libtvm_ffi.so: the package's files hold __version__, as the
 * Python client reads it; else the library says. */
static int detect_tvm_ffi(const kernels__loaded_libs *l, char **path)
{
	static const char *const files[] = { "__init__.py", "_version.py", "version.py" };
	char *root = l->tvm_ffi ? kernels__package_root(l->tvm_ffi) : NULL;
	size_t i;
	int version = 0;

	*path = NULL;
	for (i = 0; root && i < sizeof(files) / sizeof(files[0]) && version <= 0; i++) {
		char *file = kernels__sprintf("%s/%s", root, files[i]), *text, *v;
		text = file ? kernels__read_small_file(file) : NULL;
		free(file);
		v = text ? kernels__py_string_assignment(text, "__version__") : NULL;
		version = kernels__version_major_minor(v);
		free(v);
		free(text);
	}
	if (version <= 0 && l->tvm_ffi && (version = tvm_ffi_library_version(l->tvm_ffi)) > 0) {
		free(root);
		root = kernels__strdup(l->tvm_ffi);
		if (root && strrchr(root, '/'))
			*strrchr(root, '/') = '\0';
	}
	if (version <= 0) {
		free(root);
		return 0;
	}
	*path = root;
	return version;
}

/* ---- the chain ---------------------------------------------------------- */

static int env_version(const kernels__config *cfg, const char *name, int *out)
{
	const char *v = env(cfg, name);
	if (!v)
		return 0;
	if (!strcasecmp(v, "none")) {
		*out = 0;
		return 1;
	}
	if ((*out = kernels__version_major_minor(v)) <= 0)
		return kernels__error(KERNELS_EINVAL, "%s='%s' is not a version like 2.11; fix or unset it", name, v);
	return 1;
}

static char *dup_field(const char *s)
{
	return s ? strdup(s) : NULL;
}

void kernels_system_free(kernels_system *sys)
{
	if (!sys)
		return;
	free((char *)sys->backend);
	free((char *)sys->cpu);
	free((char *)sys->os);
	free((char *)sys->glibc);
	free((char *)sys->torch_version_string);
	free((char *)sys->torch_path);
	free((char *)sys->tvm_ffi_path);
	free((char *)sys->backend_source);
	free((char *)sys->torch_source);
	for (int i = 0; i < KERNELS_MAX_GPUS; i++)
		free((char *)sys->gpu_arch_names[i]);
	free(sys);
}

static int chain_torch(const kernels__config *cfg, kernels_system *s, const kernels_system *ov,
		       const kernels__torch_info *t)
{
	const char *abi = env(cfg, "KERNELS_CXX11_ABI");
	int v, rc;

	if (ov->torch_version != 0) {
		s->torch_version = ov->torch_version > 0 ? ov->torch_version : 0;
		s->torch_cxx11_abi = ov->torch_version > 0 ? ov->torch_cxx11_abi : -1;
		return 0;
	}
	if ((rc = env_version(cfg, "KERNELS_TORCH_VERSION", &v)) < 0)
		return rc;
	if (rc) {
		s->torch_version = v;
		s->torch_cxx11_abi = -1;
	} else {
		s->torch_version = t->version;
		s->torch_cxx11_abi = t->cxx11_abi;
		s->torch_version_string = dup_field(t->version_string);
		s->torch_path = dup_field(t->path);
		s->torch_source = dup_field(t->path ? t->source : NULL);
		if ((t->version_string && !s->torch_version_string) ||
		    (t->path && (!s->torch_path || !s->torch_source)))
			return kernels__error_oom();
	}
	if (abi) {
		if (strcmp(abi, "0") && strcmp(abi, "1"))
			return kernels__error(KERNELS_EINVAL, "KERNELS_CXX11_ABI='%s' must be 0 or 1; fix or unset it",
					      abi);
		s->torch_cxx11_abi = abi[0] == '1';
	}
	if (!s->torch_version)
		s->torch_cxx11_abi = -1;
	return 0;
}

static int chain_tvm_ffi(const kernels__config *cfg, kernels_system *s, const kernels_system *ov,
			 const kernels__loaded_libs *l)
{
	char *path;
	int v, rc;

	if (ov->tvm_ffi_version != 0) {
		s->tvm_ffi_version = ov->tvm_ffi_version > 0 ? ov->tvm_ffi_version : 0;
		return 0;
	}
	if ((rc = env_version(cfg, "KERNELS_TVM_FFI_VERSION", &v)) < 0)
		return rc;
	if (rc) {
		s->tvm_ffi_version = v;
		return 0;
	}
	s->tvm_ffi_version = detect_tvm_ffi(l, &path);
	s->tvm_ffi_path = path;
	return 0;
}

static void set_backend(kernels_system *s, const char *backend, int version, const char *source)
{
	s->backend = strdup(backend);
	s->backend_version = version > 0 ? version : 0;
	s->backend_source = strdup(source);
}

static int chain_backend(const kernels__config *cfg, kernels_system *s, const kernels_system *ov,
			 const kernels__torch_info *t, int *forced_cpu)
{
	const char *eb = env(cfg, "KERNELS_BACKEND");
	const kernels__cuda_facts *cuda;
	int v = 0, rc;

	*forced_cpu = 0;
	if (ov->backend && !ov->no_gpu && (rc = kernels__backend_check(ov->backend, "kernels_options.system->backend",
											      "")) < 0)
		return rc;
	if (!ov->backend && !ov->no_gpu && eb && (rc = kernels__backend_check(eb, "KERNELS_BACKEND", "; fix or unset it")) < 0)
		return rc;
	if (ov->no_gpu || (ov->backend && !strcmp(ov->backend, "cpu"))) {
		*forced_cpu = 1;
		set_backend(s, "cpu", 0, "options");
	} else if (ov->backend) {
		set_backend(s, ov->backend, ov->backend_version, "options");
	} else if (eb && !strcmp(eb, "cpu")) {
		*forced_cpu = 1;
		set_backend(s, "cpu", 0, "environment");
	} else if (eb || env(cfg, "KERNELS_CUDA_VERSION")) {
		const char *name = eb ? eb : "cuda";
		if ((rc = env_version(cfg, env(cfg, "KERNELS_BACKEND_VERSION") ? "KERNELS_BACKEND_VERSION" :
				      "KERNELS_CUDA_VERSION", &v)) < 0)
			return rc;
		set_backend(s, name, v, "environment");
	} else if (t->backend && t->version) {
		set_backend(s, t->backend, t->backend_version, "torch");
	} else if ((cuda = kernels__cuda_facts_get())->runtime_version && cuda->gpu_count > 0) {
		/* Without torch, a CUDA runtime alone (a toolkit on a machine
		 * with no driver or no GPU) does not make a CUDA machine. */
		set_backend(s, "cuda", cuda->runtime_version, "cudart");
	} else if (cuda->driver_version && cuda->gpu_count > 0) {
		set_backend(s, "cuda", cuda->driver_version, "driver");
	} else {
		set_backend(s, "cpu", 0, "default");
	}
	return 0;
}

static int chain_gpus(const kernels__config *cfg, kernels_system *s, const kernels_system *ov, int forced_cpu)
{
	const char *ea = env(cfg, "KERNELS_GPU_ARCHS");
	char names[KERNELS_MAX_GPUS][32];
	int archs[KERNELS_MAX_GPUS], n = 0, i;

	s->gpu_count = 0;
	s->current_device = -1;
	memset(names, 0, sizeof(names));
	/* Malformed is refused even where the list goes unused (a cpu backend,
	 * GPUs the options give): whoever set it meant something else. */
	if (ea && strcasecmp(ea, "none") && (n = parse_gpu_archs(ea, archs, names, KERNELS_MAX_GPUS)) < 0)
		return kernels__error(KERNELS_EINVAL, "KERNELS_GPU_ARCHS='%s' is not a list like 9.0,8.6 or gfx90a,gfx942 "
				      "(at most %d); fix or unset it", ea, KERNELS_MAX_GPUS);
	if (forced_cpu || ov->gpu_count < 0)
		return 0;
	if (ov->gpu_count > 0) {
		s->gpu_count = ov->gpu_count > KERNELS_MAX_GPUS ? KERNELS_MAX_GPUS : ov->gpu_count;
		memcpy(s->gpu_archs, ov->gpu_archs, sizeof(int) * (size_t)s->gpu_count);
		for (i = 0; i < s->gpu_count; i++)
			if (ov->gpu_arch_names[i]) /* "gfx90a:sramecc+:xnack-": the arch is before the features */
				snprintf(names[i], sizeof(names[i]), "%.*s",
					 (int)strcspn(ov->gpu_arch_names[i], ":") > 31
					 ? 31 : (int)strcspn(ov->gpu_arch_names[i], ":"), ov->gpu_arch_names[i]);
			else
				snprintf(names[i], sizeof(names[i]), "%d.%d", ov->gpu_archs[i] / 10,
					 ov->gpu_archs[i] % 10);
	} else if (ea) {
		if (!strcasecmp(ea, "none"))
			return 0;
		memcpy(s->gpu_archs, archs, sizeof(int) * (size_t)n);
		s->gpu_count = n;
	} else {
		/* the GPUs of the selected backend, from its row of the table */
		const kernels__backend *b = kernels__backend_find(s->backend);
		kernels__gpu_list list = { 0 };
		if (b && b->detect)
			b->detect(&list);
		for (i = 0; i < list.count; i++) {
			int maj = 0, min = 0;
			memcpy(names[i], list.arch[i], sizeof(names[i]));
			s->gpu_archs[i] = sscanf(list.arch[i], "%d.%d", &maj, &min) == 2 ? maj * 10 + min : 0;
		}
		s->gpu_count = list.count;
	}
	for (i = 0; i < s->gpu_count; i++)
		if (!(s->gpu_arch_names[i] = strdup(names[i])))
			return kernels__error_oom();
	if (s->gpu_count > 0) {
		s->current_device = ov->current_device > 0 ? ov->current_device
				    : s->backend && !strcmp(s->backend, "cuda") ? kernels__cuda_current_device() : 0;
		if (s->current_device >= s->gpu_count)
			s->current_device = 0;
	}
	return 0;
}

int kernels__system_detect(const kernels__config *cfg, kernels_system **out)
{
	const kernels_system *ov = &cfg->system_override;
	kernels__loaded_libs libs = { 0 };
	kernels__torch_info torch;
	kernels_system *s;
	int rc, forced_cpu;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_system_detect: out is NULL");
	*out = NULL;
	pthread_once(&machine_once, detect_machine);
	kernels__cuda_env_from(cfg);
	if (!(s = calloc(1, sizeof(*s))))
		return kernels__error_oom();
	s->version = KERNELS_SYSTEM_VERSION;
	kernels__loaded_libs_find(&libs);
	/* An installed torch is looked for only when no torch version is given. */
	rc = kernels__torch_locate(cfg, &libs, ov->torch_version == 0 && !env(cfg, "KERNELS_TORCH_VERSION"), &torch);

	if (rc < 0 || (rc = chain_torch(cfg, s, ov, &torch)) < 0 || (rc = chain_tvm_ffi(cfg, s, ov, &libs)) < 0 ||
	    (rc = chain_backend(cfg, s, ov, &torch, &forced_cpu)) < 0 || (rc = chain_gpus(cfg, s, ov, forced_cpu)) < 0)
		goto fail;
	s->cpu = strdup(ov->cpu ? ov->cpu : env(cfg, "KERNELS_CPU") ? env(cfg, "KERNELS_CPU") : machine.cpu);
	s->os = strdup(ov->os ? ov->os : env(cfg, "KERNELS_OS") ? env(cfg, "KERNELS_OS") : machine.os);
	s->glibc = machine.glibc[0] ? strdup(machine.glibc) : NULL;
	s->macos_version = ov->macos_version ? ov->macos_version : machine.macos_version;
	if (!forced_cpu) {
		const kernels__cuda_facts *cuda = kernels__cuda_facts_get();
		s->cuda_runtime_version = cuda->runtime_version;
		s->cuda_driver_version = cuda->driver_version;
	}
	if (!s->cpu || !s->os || !s->backend || !s->backend_source) {
		rc = kernels__error_oom();
		goto fail;
	}
	kernels__torch_info_free(&torch);
	kernels__loaded_libs_free(&libs);
	*out = s;
	return 0;
fail:
	kernels__torch_info_free(&torch);
	kernels__loaded_libs_free(&libs);
	kernels_system_free(s);
	return rc;
}

int kernels_system_detect(kernels_system **out, const kernels_options *opts)
{
	kernels__config cfg;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_system_detect: out is NULL; pass a kernels_system **");
	*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__system_detect(&cfg, out);
	kernels__config_free(&cfg);
	return rc;
}

size_t kernels_system_format(char *buf, size_t size, const kernels_system *sys)
{
	kernels__buf b = { 0 };
	size_t n;
	int i;

	if (!sys) {
		kernels__buf_puts(&b, "(no system)");
	} else {
		if (sys->torch_version > 0) {
			kernels__buf_printf(&b, "torch %d.%d", sys->torch_version / 100, sys->torch_version % 100);
			if (sys->torch_cxx11_abi >= 0)
				kernels__buf_printf(&b, " (%s ABI)", sys->torch_cxx11_abi ? "cxx11" : "cxx98");
			if (sys->torch_source && sys->torch_path)
				kernels__buf_printf(&b, " from %s at %s", sys->torch_source, sys->torch_path);
		} else {
			kernels__buf_puts(&b, "no torch");
		}
		if (sys->tvm_ffi_version > 0)
			kernels__buf_printf(&b, ", tvm-ffi %d.%d", sys->tvm_ffi_version / 100,
					    sys->tvm_ffi_version % 100);
		kernels__buf_printf(&b, ", backend %s", sys->backend ? sys->backend : "cpu");
		if (sys->backend_version > 0)
			kernels__buf_printf(&b, " %d.%d", sys->backend_version / 100, sys->backend_version % 100);
		if (sys->backend_source)
			kernels__buf_printf(&b, " (from %s)", sys->backend_source);
		if (sys->gpu_count > 0) {
			kernels__buf_puts(&b, ", GPUs");
			for (i = 0; i < sys->gpu_count && i < KERNELS_MAX_GPUS; i++) {
				if (sys->gpu_arch_names[i])
					kernels__buf_printf(&b, " %s", sys->gpu_arch_names[i]);
				else
					kernels__buf_printf(&b, " %d.%d", sys->gpu_archs[i] / 10,
							    sys->gpu_archs[i] % 10);
			}
			if (sys->gpu_count > 1 && sys->current_device >= 0)
				kernels__buf_printf(&b, " (current: %d)", sys->current_device);
		}
		kernels__buf_printf(&b, ", %s-%s", sys->cpu ? sys->cpu : "?", sys->os ? sys->os : "?");
		if (sys->glibc)
			kernels__buf_printf(&b, ", glibc %s", sys->glibc);
		if (sys->cuda_driver_version > 0)
			kernels__buf_printf(&b, ", CUDA driver %d.%d", sys->cuda_driver_version / 100,
					    sys->cuda_driver_version % 100);
		if (sys->cuda_runtime_version > 0)
			kernels__buf_printf(&b, ", CUDA runtime %d.%d", sys->cuda_runtime_version / 100,
					    sys->cuda_runtime_version % 100);
	}
	n = b.ptr ? b.len : 0;
	if (size > 0) {
		size_t c = n < size - 1 ? n : size - 1;
		if (c)
			memcpy(buf, b.ptr, c);
		buf[c] = '\0';
	}
	kernels__buf_free(&b);
	return n;
}

void kernels__system_backend_str(const kernels_system *s, char *buf, size_t size)
{
	const char *name = s && s->backend && *s->backend ? s->backend : "cpu";
	const kernels__backend *b = kernels__backend_find(name);

	if (b && b->versioned)
		snprintf(buf, size, "%s%d%d", b->prefix, s->backend_version / 100, s->backend_version % 100);
	else
		snprintf(buf, size, "%s", name);
}

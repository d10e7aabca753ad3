/* Loading verified variants into the process. A process-wide registry
 * (mutex-protected list keyed by the variant folder's real path) makes a
 * second load of the same folder return the same handle; two folders (two
 * commits of one kernel) are two handles with their own RTLD_LOCAL module,
 * so their identical symbol names do not clash.
 *
 * Native modules are mapped with RTLD_NODELETE and never unmapped: torch's
 * dispatcher, tvm-ffi and the CUDA runtime keep pointers into them (op
 * tables, registered fat binaries, kernels still in flight), so unmapping
 * one would leave the process holding dangling code. A second table keyed
 * by the module file's identity hands the mapped module back on a later
 * load, so its static registrations never run twice. */
#include "loader.h"
#include "cache.h"
#include "metadata.h"
#include "signature.h"
#include "native.h"
#include "pyfree.h"
#include "error.h"
#include "fork.h"
#include "util.h"
#include "system.h"
#include "variant.h"
#include "verify.h"

#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct kernels_kernel {
	struct kernels_kernel *next;
	int refs;                 /* under registry_lock */
	char *repo, *commit, *variant, *path, *library;
	kernels_metadata *meta;
	void *dl;                 /* NULL: noarch; owned by the module table */
	struct kernels_kernel **deps; /* kernel-depends, loaded first (deps.c); a reference each */
	size_t ndeps;
};

/* A mapped native module, for the life of the process. */
typedef struct module {
	struct module *next;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	char *id;   /* metadata id: the ops namespace a torch module registers */
	int torch;  /* links libtorch/libc10 */
	char *path;
	void *dl;
} module;

/* The process's loaded kernels and mapped modules: facts of the process
 * (see the top of this file), each list behind its lock. */
static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static kernels_kernel *registry;
/* Mapping is serialised, so two threads never map one module twice and a
 * torch namespace is checked against every module mapped: one thread at a
 * time holds `mapping`; the others wait on map_done. Not a mutex held
 * across the mapping: the module's constructors run there (torch's take
 * seconds), and a host forking meanwhile would hand its child that mutex
 * taken for good. map_lock, held only for a few instructions, guards
 * `mapping` and the list; the mapping thread reads the list without it,
 * no other thread writing it meanwhile. */
static pthread_mutex_t map_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t map_done = PTHREAD_COND_INITIALIZER;
static int mapping;
static module *modules;

static void map_begin(void)
{
	pthread_mutex_lock(&map_lock);
	while (mapping)
		pthread_cond_wait(&map_done, &map_lock);
	mapping = 1;
	pthread_mutex_unlock(&map_lock);
}

/* Ends the mapping, listing `m` (NULL: nothing new was mapped). */
static void map_end(module *m)
{
	pthread_mutex_lock(&map_lock);
	if (m) {
		m->next = modules;
		modules = m;
	}
	mapping = 0;
	pthread_cond_broadcast(&map_done);
	pthread_mutex_unlock(&map_lock);
}

/* fork() (fork.h): a mapping another thread was making has no thread to
 * finish it in the child, which maps on its own (a module whose loading
 * the fork interrupted is the dynamic linker's to refuse); map_done may
 * count waiters that do not exist there: a fresh one. */
void kernels__loader_fork(kernels__fork_phase phase)
{
	if (phase == KERNELS__FORK_PREPARE) {
		pthread_mutex_lock(&registry_lock);
		pthread_mutex_lock(&map_lock);
		return;
	}
	if (phase == KERNELS__FORK_CHILD) {
		mapping = 0;
		pthread_cond_init(&map_done, NULL);
	}
	pthread_mutex_unlock(&map_lock);
	pthread_mutex_unlock(&registry_lock);
}

static void kernel_free(kernels_kernel *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->ndeps; i++)
		kernels_kernel_close(k->deps[i]);
	free(k->deps);
	kernels_metadata_free(k->meta);
	free(k->repo);
	free(k->commit);
	free(k->variant);
	free(k->path);
	free(k->library);
	free(k);
}

/* Finds a loaded variant and takes a reference; call with the lock held. */
static kernels_kernel *find_locked(const char *path)
{
	kernels_kernel *k;
	for (k = registry; k; k = k->next)
		if (!strcmp(k->path, path)) {
			k->refs++;
			return k;
		}
	return NULL;
}

static int is_so(const char *rel, const char *dir)
{
	size_t n = strlen(rel), d = dir ? strlen(dir) : 0;
	if (dir && (strncmp(rel, dir, d) || rel[d] != '/'))
		return 0;
	rel += dir ? d + 1 : 0;
	n = strlen(rel);
	return !strchr(rel, '/') && n > 3 && !strcmp(rel + n - 3, ".so");
}

/* The one native module among the files of `dir` (NULL: top level): the
 * only *.so there, else the one named after the metadata id. */
static int pick_in(const kernels_metadata *m, const char *dir, const char *what, const char **out)
{
	size_t i, n = kernels__metadata_file_count(m), found = 0;
	const char *id = kernels_metadata_id(m), *named = NULL, *only = NULL;
	size_t idlen = strlen(id);
	kernels__buf list = { 0 };
	int rc;

	for (i = 0; i < n; i++) {
		const char *rel = kernels__metadata_file(m, i), *base;
		if (!is_so(rel, dir))
			continue;
		base = strrchr(rel, '/') ? strrchr(rel, '/') + 1 : rel;
		found++;
		only = rel;
		kernels__buf_printf(&list, "%s%s", found > 1 ? ", " : "", rel);
		if (!strncmp(base, id, idlen) && (!strcmp(base + idlen, ".so") || base[idlen] == '.'))
			named = rel;
	}
	*out = found == 1 ? only : named;
	rc = found > 1 && !named ?
		     kernels__error(KERNELS_ELOAD,
				    "%s has several native modules (%s) and none is named after its id '%s'; "
				    "keep one *.so per variant or name it %s.abi3.so", what, list.ptr, id, id) : 0;
	kernels__buf_free(&list);
	return rc;
}

static int pick_module(const kernels_metadata *m, const char *what, const char **out)
{
	char pkg[256];
	size_t i;
	int rc;

	if ((rc = pick_in(m, NULL, what, out)) < 0 || *out)
		return rc;
	/* A build with the module inside its Python package: {name}/ */
	snprintf(pkg, sizeof(pkg), "%s", kernels_metadata_name(m));
	for (i = 0; pkg[i]; i++)
		if (pkg[i] == '-')
			pkg[i] = '_';
	return pick_in(m, pkg, what, out);
}

static char *describe(const char *repo, const char *commit, const char *variant, const char *path)
{
	if (repo)
		return kernels__sprintf("variant '%s' of %s@%.12s", variant, repo, commit ? commit : "?");
	return kernels__sprintf("variant '%s' (%s)", variant, path);
}

/* ---- mapping native modules ---------------------------------------------- */

static int same_time(struct timespec a, struct timespec b)
{
	return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static int same_file(const module *m, const struct stat *st)
{
	return m->dev == st->st_dev && m->ino == st->st_ino && m->size == st->st_size &&
	       same_time(m->mtime, st->st_mtim) && same_time(m->ctime, st->st_ctim);
}

#ifdef KERNELS_TESTING
/* Tests swap a file here, between its verification and its opening
 * (tests/test_loader.c defines it); the release library has no such hook. */
extern void kernels__test_before_open(const char *path) __attribute__((weak));
#define BEFORE_OPEN(path) (kernels__test_before_open ? kernels__test_before_open(path) : (void)0)
#else
#define BEFORE_OPEN(path) ((void)0)
#endif

/* Opens a verified file of the variant to map it: the descriptor must be
 * the very file whose bytes were hashed (device, inode, size, modification
 * and change times), so what was hashed is what is loaded; the mapping then
 * goes through this descriptor. It is opened by the path verification
 * resolved its links to (the identity check below, not the path, is what
 * vouches for it). Returns the descriptor or an error. */
static int open_verified(const kernels_kernel *k, const char *rel, const char *what, struct stat *st)
{
	const struct stat *want = NULL;
	const char *real = NULL;
	size_t i;
	int fd = -1, rc;

	for (i = 0; i < kernels__metadata_file_count(k->meta) && !want; i++)
		if (!strcmp(kernels__metadata_file(k->meta, i), rel)) {
			want = kernels__metadata_file_stat(k->meta, i);
			real = kernels__metadata_file_real(k->meta, i);
		}
	if (!want || !real)
		rc = kernels__error(KERNELS_EINTEGRITY, "loading %s: %s was not among its verified files", what, rel);
	else if (BEFORE_OPEN(real),
		 (fd = open(real, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 || fstat(fd, st) < 0)
		rc = kernels__error(KERNELS_EIO, "loading %s: cannot open %s: %s", what, real, strerror(errno));
	else if (st->st_dev != want->st_dev || st->st_ino != want->st_ino || st->st_size != want->st_size ||
		 !same_time(st->st_mtim, want->st_mtim) || !same_time(st->st_ctim, want->st_ctim))
		rc = kernels__error(KERNELS_EINTEGRITY,
				    "loading %s: %s changed between its verification and its loading (another "
				    "process wrote the cache); nothing of it was loaded: load it again", what, rel);
	else
		rc = fd;
	if (rc < 0 && fd >= 0)
		close(fd);
	return rc;
}

static module *find_module(const struct stat *st)
{
	module *m;
	for (m = modules; m; m = m->next)
		if (same_file(m, st))
			return m;
	return NULL;
}

static int links_torch(const kernels__elf *e)
{
	size_t i;
	for (i = 0; i < e->needed_count; i++)
		if (!strncmp(e->needed[i], "libtorch", 8) || !strncmp(e->needed[i], "libc10", 6))
			return 1;
	return 0;
}

/* Torch accepts one TORCH_LIBRARY per namespace and aborts the process on
 * a second, so a torch module claiming the namespace of another file
 * (the same build published twice, under two paths) is refused. */
static int check_namespace(const char *id, const char *what)
{
	module *m;

	for (m = modules; m; m = m->next)
		if (m->torch && !strcmp(m->id, id))
			return kernels__error(KERNELS_ELOAD,
					      "cannot load %s: its ops namespace '%s' is already registered by %s, "
					      "a different file in this process (torch allows one library per "
					      "namespace); load one revision of this kernel per process (revisions "
					      "holding one build share its file only where the cache has symlinks: "
					      "leave HF_HUB_DISABLE_SYMLINKS unset)", what, id, m->path);
	return 0;
}

/* A copy of the module another loader mapped (the Python `kernels`
 * package, or a plain import, from another cache or build): an object of
 * the process named like the module, or after its id, from another file. */
typedef struct {
	const char *base, *id;
	const struct stat *st;
	char *found; /* NULL with hit set: out of memory naming it */
	int hit;
} foreign_search;

static int named_alike(const char *base, const foreign_search *f)
{
	size_t n = strlen(f->id);

	return !strcmp(base, f->base) || (!strncmp(base, f->id, n) && base[n] == '.');
}

static int foreign_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	foreign_search *f = data;
	const char *name = info->dlpi_name, *base;
	struct stat st;
	(void)size;

	if (!name || !*name)
		return 0;
	base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	if (!named_alike(base, f))
		return 0;
	/* The same file is one object: dlopen hands that back, nothing runs twice. */
	if (stat(name, &st) == 0 && st.st_dev == f->st->st_dev && st.st_ino == f->st->st_ino)
		return 0;
	f->found = kernels__strdup(name);
	f->hit = 1;
	return 1;
}

/* Torch aborts the process when a second file registers a namespace, so
 * a torch module whose namespace another loader's copy holds is refused
 * before it is mapped; ours are in `modules` (check_namespace). */
static int check_foreign(const char *id, const char *library, const struct stat *st, const char *what)
{
	foreign_search f = { strrchr(library, '/') ? strrchr(library, '/') + 1 : library, id, st, NULL, 0 };
	int rc;

	kernels__dl_iterate_phdr(foreign_cb, &f);
	if (!f.hit)
		return 0;
	rc = kernels__error(KERNELS_ELOAD,
			    "cannot load %s: its ops namespace '%s' is already registered in this process by %s, "
			    "a different file loaded by another loader (the Python `kernels` package or an import), "
			    "and torch aborts on a second registration of one namespace; use the module already "
			    "loaded (sys.modules['%s']), load the same revision from the same cache as that one "
			    "(revisions holding one build share its file only where the cache has symlinks), or "
			    "load this one in a new process", what, id, f.found ? f.found : "another file", id);
	free(f.found);
	return rc;
}

/* Loads one DT_NEEDED library the dynamic linker would not find by itself:
 * from the module's run path ($ORIGIN being its real folder) or from the
 * folder of the detected torch, so a host linked with --as-needed (no
 * libtorch.so in its own list) loads torch variants all the same. */
static int is_verified_file(const kernels_kernel *k, const char *rel)
{
	size_t i;
	for (i = 0; i < kernels__metadata_file_count(k->meta); i++)
		if (!strcmp(kernels__metadata_file(k->meta, i), rel))
			return 1;
	return 0;
}

/* Maps one library: a file of the variant itself through its verified
 * descriptor (like the module), anything else by path. Kept for the life
 * of the process, like the module needing it. */
static int preload_file(const kernels_kernel *k, const char *dir, const char *name, const char *what)
{
	char *full = kernels__sprintf("%s/%s", dir, name), mapped[64];
	const char *err;
	struct stat st;
	int rc = 0, fd = -1;

	if (!full)
		return KERNELS_ENOMEM;
	if (!strcmp(dir, k->path) && is_verified_file(k, name)) {
		if ((fd = open_verified(k, name, what, &st)) < 0) {
			free(full);
			return fd;
		}
		snprintf(mapped, sizeof(mapped), "/proc/self/fd/%d", fd);
	}
	dlerror();
	if (!dlopen(fd >= 0 ? mapped : full, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
		err = dlerror();
		rc = kernels__error(KERNELS_ELOAD, "loading %s: its dependency %s failed to load: %s", what, full,
				    err ? err : "dlopen failed");
		if (fd >= 0)
			close(fd);
	}
	free(full);
	return rc;
}

/* Loads one DT_NEEDED library the dynamic linker would not find by itself
 * (the module is mapped through /proc/self/fd, so its $ORIGIN is not its
 * folder): from the module's run path ($ORIGIN being its real folder) or
 * from the folder of the detected torch, so a host linked with --as-needed
 * (no libtorch.so in its own list) loads torch variants all the same. A
 * library of the variant must carry a SONAME (as shared libraries do) for
 * the module's DT_NEEDED to find it mapped. */
static int preload_one(const kernels_kernel *k, const char *name, const char *runpath, const char *torch_dir,
		       const char *what)
{
	const char *dirs[2] = { runpath, torch_dir };
	void *h;
	size_t i;

	if ((h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD))) {
		dlclose(h);
		return 0;
	}
	for (i = 0; i < 2; i++) {
		const char *p = dirs[i];
		while (p && *p) {
			size_t n = strcspn(p, ":");
			int origin = i == 0 && n >= 7 && !strncmp(p, "$ORIGIN", 7);
			char *dir = origin ? kernels__sprintf("%s%.*s", k->path, (int)(n - 7), p + 7)
					   : kernels__sprintf("%.*s", (int)n, p);
			char *full = dir ? kernels__sprintf("%s/%s", dir, name) : NULL;
			int rc = 0, found = full && access(full, F_OK) == 0;

			if (found)
				rc = preload_file(k, dir, name, what);
			free(dir);
			if (!full)
				return KERNELS_ENOMEM;
			free(full);
			if (found)
				return rc;
			p += n + (p[n] == ':');
		}
	}
	return 0; /* the dynamic linker's own search decides, and dlerror names it */
}

static int preload_needed(const kernels__config *cfg, const kernels__elf *e, const kernels_kernel *k, const char *what)
{
	kernels_system *sys = NULL;
	size_t i;
	int rc = 0;

	for (i = 0; i < e->needed_count && rc == 0; i++) {
		void *h = dlopen(e->needed[i], RTLD_LAZY | RTLD_NOLOAD);
		if (h) {
			dlclose(h);
			continue;
		}
		/* Detection only when something is missing: it walks the loaded
		 * objects and may look for an installed torch. */
		if (!sys && (rc = kernels__system_detect(cfg, &sys)) < 0)
			break;
		rc = preload_one(k, e->needed[i], e->runpath, sys->torch_path, what);
	}
	kernels_system_free(sys);
	return rc;
}

/* A Python extension module built by kernel-builder references the Python
 * C API (PyModule_Create2) from PyInit_<name>, which only an interpreter
 * calls. Without libpython in the process those references cannot bind,
 * and with bind-now linking dlopen refuses the module for them: it is
 * mapped through a copy with them made weak (lib/pyfree.c). */
static int unresolved_python(const kernels__elf *e, size_t *count)
{
	size_t i;

	*count = 0;
	for (i = 0; i < e->python_count; i++)
		*count += dlsym(RTLD_DEFAULT, e->python[i].name) == NULL;
	return *count > 0;
}

/* dlerror() names the copy (/proc/self/fd/N); users need the module and, for C++, the
 * readable symbol. */
static int load_failed(const char *what, const char *library, const char *mapped_as)
{
	const char *err = dlerror(), *sym;
	char *(*demangle)(const char *, char *, size_t *, int *);
	char *text, *pretty = NULL;
	size_t skip = strlen(mapped_as);
	int rc, status = -1;

	/* The next dl call may free dlerror()'s text: keep a copy. */
	if (!(text = kernels__strdup(err ? err : "dlopen failed")))
		return KERNELS_ENOMEM;
	err = text;
	if (!strncmp(err, mapped_as, skip) && err[skip] == ':')
		err += skip + 1 + (err[skip + 1] == ' ');
	if ((sym = strstr(err, "undefined symbol: "))) {
		sym += 18;
		*(void **)&demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
		if (demangle && !strncmp(sym, "_Z", 2))
			pretty = demangle(sym, NULL, NULL, &status);
		rc = kernels__error(KERNELS_ELOAD,
				    "loading %s failed: %s: undefined symbol: %s%s%s%s (nothing in this process "
				    "defines it): the module was built against another torch (version or C++ ABI) or "
				    "needs a library that is not loaded; pick the variant built for this process's "
				    "torch, or load the torch it was built for first", what, library, sym,
				    pretty ? " (" : "", pretty ? pretty : "", pretty ? ")" : "");
	} else {
		rc = kernels__error(KERNELS_ELOAD,
				    "loading %s failed: %s: %s; the module needs a library or symbol this process "
				    "lacks (load the torch/CUDA it was built for first, or pick a variant matching "
				    "this process's torch version and C++ ABI)", what, library, err);
	}
	free(pretty);
	free(text);
	return rc;
}

/* kernel-depends: a dependent whose module references symbols one of its
 * dependencies defines, without naming it in DT_NEEDED (where its SONAME
 * would find it mapped), needs that dependency in the global scope. Only
 * such a dependency is promoted to RTLD_GLOBAL, so the symbols of the
 * others stay local and cannot capture a later module's own names. */
static int expose_dependencies(const kernels__config *cfg, const kernels_kernel *k, const kernels__elf *e,
			       const char *what)
{
	size_t d, i;

	for (d = 0; d < k->ndeps; d++) {
		const kernels_kernel *dep = k->deps[d];
		struct link_map *lm = NULL;
		const char *sym = NULL;

		for (i = 0; dep->dl && i < e->needed_count; i++) { /* linked by SONAME: in its own scope */
			void *h = dlopen(e->needed[i], RTLD_LAZY | RTLD_NOLOAD);
			if (h)
				dlclose(h);
			if (h == dep->dl)
				break;
		}
		if (i < e->needed_count)
			continue;
		for (i = 0; dep->dl && !sym && i < e->undefined_count; i++)
			if (!dlsym(RTLD_DEFAULT, e->undefined[i]) && dlsym(dep->dl, e->undefined[i]))
				sym = e->undefined[i];
		if (!sym)
			continue;
		dlerror();
		if (dlinfo(dep->dl, RTLD_DI_LINKMAP, &lm) < 0 || !lm ||
		    !dlopen(lm->l_name, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL)) {
			const char *err = dlerror();
			return kernels__error(KERNELS_ELOAD, "loading %s: its dependency %s defines '%s' it needs, but "
					      "could not be made global: %s", what, dep->library, sym,
					      err ? err : "dlopen failed");
		}
		kernels__log(cfg, KERNELS_LOG_INFO, "%s: dependency %s (%s) loaded RTLD_GLOBAL: the module needs "
			     "its symbol '%s'", what, dep->repo ? dep->repo : dep->path, dep->variant, sym);
	}
	return 0;
}

/* Maps the module open on `fd` (verified) through that descriptor, or
 * through a Python-free copy of its bytes. *keep says the descriptor now
 * names the mapping and must stay open. */
static int map_module(const kernels__config *cfg, const kernels_kernel *k, const char *root, const char *rel, int fd,
		      const struct stat *st, const char *what, void **dl, int *torch, int *keep,
		      kernels__write_later **later)
{
	kernels__elf e;
	char mapped[64];
	size_t missing = 0;
	int rc, mfd = -1;

	*dl = NULL;
	*keep = 0;
	if ((rc = kernels__elf_read(fd, what, &e)) < 0)
		return rc;
	*torch = links_torch(&e);
	if ((*torch && ((rc = check_namespace(kernels_metadata_id(k->meta), what)) < 0 ||
			(rc = check_foreign(kernels_metadata_id(k->meta), k->library, st, what)) < 0)) ||
	    (rc = preload_needed(cfg, &e, k, what)) < 0)
		goto done;
	if (k->ndeps && (rc = expose_dependencies(cfg, k, &e, what)) < 0)
		goto done;
	if (unresolved_python(&e, &missing)) {
		const char *alg = NULL, *digest = kernels__metadata_file_digest(k->meta, rel, &alg);
		char *source = digest ? kernels__sprintf("%s:%s", alg, digest) : NULL;

		if (digest && !source) {
			rc = KERNELS_ENOMEM;
			goto done;
		}
		rc = kernels__pyfree_open(cfg, root, source, fd, st, &e, what, &mfd, later);
		free(source);
		if (rc < 0)
			goto done;
		kernels__log(cfg, KERNELS_LOG_DEBUG, "%s: %zu Python C-API reference%s left unbound (no libpython "
			     "in this process; only PyInit uses them)", what, missing, missing == 1 ? "" : "s");
	}
	snprintf(mapped, sizeof(mapped), "/proc/self/fd/%d", mfd >= 0 ? mfd : fd);
	dlerror();
	if (!(*dl = dlopen(mapped, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)))
		rc = load_failed(what, k->library, mapped);
done:
	/* A mapped descriptor stays open for good: the dynamic linker knows the
	 * module by the name /proc/self/fd/N, and a reused N would make it hand
	 * back this module for the next one. */
	if (mfd >= 0 && rc < 0)
		close(mfd);
	*keep = rc == 0 && mfd < 0;
	kernels__elf_free(&e);
	return rc;
}

/* Maps the module once per process; a later load of the same file (a
 * re-get after close) returns the mapping it already has. */
static int load_module(const kernels__config *cfg, kernels_kernel *k, const char *root, const char *rel,
		       const char *what, kernels__write_later **later)
{
	module *m = NULL;
	struct stat st;
	int fd, rc = 0, keep = 0;

	if ((fd = open_verified(k, rel, what, &st)) < 0)
		return fd;
	map_begin();
	if (!(m = find_module(&st))) {
		void *dl = NULL;
		int torch = 0;
		if ((rc = map_module(cfg, k, root, rel, fd, &st, what, &dl, &torch, &keep, later)) == 0 &&
		    (!(m = calloc(1, sizeof(*m))) || !(m->id = kernels__strdup(kernels_metadata_id(k->meta))) ||
		     !(m->path = kernels__strdup(k->library)))) {
			/* The module is mapped for good; only our record of it is lost. */
			if (m) {
				free(m->id);
				free(m);
				m = NULL;
			}
			rc = kernels__error_oom();
		}
		if (m) {
			m->dev = st.st_dev;
			m->ino = st.st_ino;
			m->size = st.st_size;
			m->mtime = st.st_mtim;
			m->ctime = st.st_ctim;
			m->dl = dl;
			m->torch = torch;
		}
		map_end(m);
	} else {
		map_end(NULL);
	}
	if (m)
		k->dl = m->dl;
	if (!keep)
		close(fd);
	return rc;
}

/* Whether the metadata.json the signature covered (`signed_meta`) is the
 * one verification parsed into `m`. */
static int signed_meta_parsed(const struct stat *signed_meta, const kernels_metadata *m)
{
	const struct stat *parsed = kernels__metadata_stat(m);

	return parsed && parsed->st_dev == signed_meta->st_dev && parsed->st_ino == signed_meta->st_ino &&
	       parsed->st_size == signed_meta->st_size && same_time(parsed->st_mtim, signed_meta->st_mtim) &&
	       same_time(parsed->st_ctim, signed_meta->st_ctim);
}

/* The metadata.json whose bytes the signature covered must be the one
 * verification parsed: a writer of the cache could swap it in between. */
static int signed_is_parsed(const struct stat *signed_meta, const kernels_metadata *m, const char *what)
{
	if (!signed_meta->st_ino || signed_meta_parsed(signed_meta, m))
		return 0; /* no signature checked, or the same file */
	return kernels__error(KERNELS_EINTEGRITY, "loading %s: metadata.json changed between its signature check and "
			      "its verification (another process wrote the cache); nothing was loaded: load it again",
			      what);
}

/* A variant this process has loaded, asked for again by a call that
 * checks signatures: another call may have loaded it under none, or
 * under another trusted root or policies. Its signature is checked now
 * (cheap while a receipt holds), over the very metadata.json the loaded
 * module was verified against; then its kernel-depends', which came with
 * it under the first call's settings. */
static int loaded_signature_holds(const kernels__config *cfg, const kernels_kernel *k)
{
	struct stat signed_meta;
	char *what;
	size_t i;
	int rc;

	if (!cfg->sig || cfg->sig->mode == KERNELS_SIGNATURE_OFF)
		return 0;
	if (!(what = describe(k->repo, k->commit, k->variant, k->path)))
		return KERNELS_ENOMEM;
	rc = kernels__signature_check(cfg, k->path, what, &signed_meta);
	if (rc == 0 && signed_meta.st_ino && !signed_meta_parsed(&signed_meta, k->meta))
		rc = kernels__error(KERNELS_EINTEGRITY, "%s: loaded in this process from a metadata.json other than the "
				    "one signed in its folder now (the cache was rewritten since): its signature cannot "
				    "vouch for what is loaded; load it in a new process", what);
	free(what);
	for (i = 0; rc == 0 && i < k->ndeps; i++)
		rc = loaded_signature_holds(cfg, k->deps[i]);
	return rc;
}

/* The kernel-depends, through the caller's `deps`. */
static int load_deps(const kernels__config *cfg, kernels__deps_fn deps, kernels_kernel *k, const char *real,
		     const char *what)
{
	if (!kernels_metadata_kernel_depend_count(k->meta))
		return 0;
	if (!deps)
		return kernels__error(KERNELS_EINVAL, "%s depends on other kernels (kernel-depends), which this call "
				      "does not load; load it with kernels_get or kernels_load_local", what);
	return deps(cfg, k->repo ? k->repo : real, k->commit, k->meta, what, &k->deps, &k->ndeps);
}

/* The loaded kernel of this folder (real path), with a reference more
 * for the caller, or NULL. */
static kernels_kernel *find_loaded(const char *real)
{
	kernels_kernel *k;

	pthread_mutex_lock(&registry_lock);
	k = find_locked(real);
	pthread_mutex_unlock(&registry_lock);
	return k;
}

/* A handle for the folder `real`, not loaded yet; *what names it in
 * messages (the caller frees it). */
static int kernel_new(const char *repo_id, const char *commit, const char *variant_name, const char *real,
		      kernels_kernel **out, char **what)
{
	const char *base = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	kernels_kernel *k = calloc(1, sizeof(*k));

	if (!k)
		return kernels__error_oom();
	k->refs = 1;
	k->path = kernels__strdup(real);
	k->variant = kernels__strdup(variant_name ? variant_name : base);
	k->repo = repo_id ? kernels__strdup(repo_id) : NULL;
	k->commit = commit ? kernels__strdup(commit) : NULL;
	if (!k->path || !k->variant || (repo_id && !k->repo) || (commit && !k->commit) ||
	    !(*what = describe(repo_id, commit, k->variant, real))) {
		kernel_free(k);
		return KERNELS_ENOMEM;
	}
	*out = k;
	return 0;
}

/* The folder verified, then its rules and dependencies, then its module
 * mapped: nothing from the folder runs before its digest checked out. */
static int load_verified(const kernels__config *cfg, kernels__deps_fn deps, kernels_kernel *k, const char *real,
			 const char *root, const char *what, kernels__write_later **records)
{
	struct stat signed_meta;
	const char *module = NULL;
	int rc;

	if ((rc = kernels__signature_check(cfg, real, what, &signed_meta)) < 0 || /* signed bytes before parsing */
	    (rc = kernels__verify_resolved(cfg, real, root, what, &k->meta, records)) < 0 ||
	    (rc = signed_is_parsed(&signed_meta, k->meta, what)) < 0 || (rc = pick_module(k->meta, what, &module)) < 0)
		return rc;
	/* kernels-minver and python-depends (metadata.c), then the kernel-depends
	 * loaded before this module (the caller's `deps`: deps.c) */
	if ((rc = kernels__metadata_rules(cfg, k->meta, what)) < 0 || (rc = load_deps(cfg, deps, k, real, what)) < 0)
		return rc;
	if (!module)
		return 0;
	if (!(k->library = kernels__sprintf("%s/%s", real, module)))
		return KERNELS_ENOMEM;
	return load_module(cfg, k, root, module, what, records);
}

/* `k` entered in the registry, or, when another thread loaded the same
 * folder meanwhile, freed for that one's handle. */
static kernels_kernel *register_or_take(kernels_kernel *k)
{
	kernels_kernel *other;

	pthread_mutex_lock(&registry_lock);
	if ((other = find_locked(k->path)) == NULL) {
		k->next = registry;
		registry = k;
	}
	pthread_mutex_unlock(&registry_lock);
	if (!other)
		return k;
	kernel_free(k);
	return other;
}

int kernels__loader_open(const kernels__config *cfg, kernels__deps_fn deps, const char *repo_id, const char *commit,
			 const char *variant_name, const char *folder, const char *root, kernels_kernel **out)
{
	char real[PATH_MAX], root_real[PATH_MAX], *what = NULL;
	/* Receipts written on the way, flushed and renamed beside what follows
	 * them (the dependencies, the mapping) and joined before returning. */
	kernels__write_later *records = NULL;
	kernels_kernel *k = NULL;
	int rc;

	if (!out || !folder)
		return kernels__error(KERNELS_EINVAL, "loading a kernel: out and the variant folder must be given");
	*out = NULL;
	if (!kernels__realpath(folder, real, NULL))
		return kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO,
				      "variant folder %s: %s; download the variant first", folder, strerror(errno));
	if ((*out = find_loaded(real))) {
		if ((rc = loaded_signature_holds(cfg, *out)) < 0) {
			kernels_kernel_close(*out);
			*out = NULL;
		}
		return rc;
	}
	/* The registry is keyed by the folder's real path alone; `root` is
	 * resolved only for a load, once, for verification and the Python-free
	 * copy. */
	if (root && !kernels__realpath(root, root_real, NULL))
		return kernels__error(KERNELS_EIO, "folder %s: %s", root, strerror(errno));
	root = root ? root_real : NULL;
	if ((rc = kernel_new(repo_id, commit, variant_name, real, &k, &what)) == 0 &&
	    (rc = load_verified(cfg, deps, k, real, root, what, &records)) == 0)
		*out = register_or_take(k);
	else
		kernel_free(k);
	free(what);
	kernels__cache_settle(cfg, &records);
	return rc;
}

static int has_metadata(const char *dir)
{
	char *p = kernels__sprintf("%s/metadata.json", dir);
	int yes = p && access(p, F_OK) == 0;
	free(p);
	return yes;
}

/* A local variant's metadata.json, if it reads: a tree may lack one or
 * hold an old one. Out of memory is still an error, never "no metadata"
 * (the arch check would then pass a variant it should refuse). */
static int metadata_optional(kernels_metadata **m, const char *dir)
{
	if (kernels_metadata_read(m, dir) == KERNELS_ENOMEM)
		return KERNELS_ENOMEM;
	kernels_error_clear();
	return 0;
}

int kernels__local_variants(const char *build, char ***names, size_t *count)
{
	struct dirent **ents = NULL;
	int n = scandir(build, &ents, NULL, alphasort), i, rc = 0;
	char **v = NULL;
	size_t k = 0;

	*names = NULL;
	*count = 0;
	if (n < 0)
		return errno == ENOMEM ? kernels__error_oom() :
		       kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO,
				      "cannot list %s: %s; give a variant folder or a build tree", build,
				      strerror(errno));
	if (!(v = calloc((size_t)n + 1, sizeof(*v))))
		rc = kernels__error_oom();
	for (i = 0; i < n; i++) {
		char *dir = NULL;
		struct stat st;
		if (rc == 0 && ents[i]->d_name[0] != '.') {
			if (!(dir = kernels__sprintf("%s/%s", build, ents[i]->d_name)))
				rc = KERNELS_ENOMEM;
			else if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
				 !(v[k++] = kernels__strdup(ents[i]->d_name)))
				rc = KERNELS_ENOMEM;
		}
		free(dir);
		free(ents[i]);
	}
	free(ents);
	if (rc < 0) {
		kernels__strings_free(v, k);
		return rc;
	}
	*names = v;
	*count = k;
	return 0;
}

/* The candidates' metadata for the selection: build/{name}, or the one
 * variant folder given. */
typedef struct {
	const char *dir;
	int single;
} local_source;

static int local_metadata(void *ctx, const char *name, kernels_metadata **m)
{
	const local_source *l = ctx;
	char *dir = l->single ? kernels__strdup(l->dir) : kernels__sprintf("%s/%s", l->dir, name);
	int rc;

	*m = NULL;
	if (!dir)
		return KERNELS_ENOMEM;
	rc = metadata_optional(m, dir);
	free(dir);
	return rc;
}

/* The decisions for the local tree at `path`: one variant folder, else the
 * folders of path/build (or of path itself when it has no build/). *build
 * (malloc'ed; NULL for one folder) is where the chosen one is; *detected
 * the system detected when `sys` is NULL (the caller frees both). */
static int local_select(const kernels__config *cfg, const char *path, const kernels_system *sys, char **build,
			kernels_system **detected, kernels_variant_trace **trace)
{
	local_source src = { path, 1 };
	char *one = (char *)(strrchr(path, '/') ? strrchr(path, '/') + 1 : path), **names = &one;
	size_t n = 1;
	int rc = 0;

	*build = NULL;
	*detected = NULL;
	*trace = NULL;
	if (!has_metadata(path)) {
		if (!(*build = kernels__sprintf("%s/build", path)))
			return KERNELS_ENOMEM;
		if (access(*build, F_OK) != 0) {
			free(*build);
			if (!(*build = kernels__strdup(path)))
				return KERNELS_ENOMEM;
		}
		src.dir = *build;
		src.single = 0;
		rc = kernels__local_variants(*build, &names, &n);
	}
	if (rc == 0 && !sys && (rc = kernels__system_detect(cfg, detected)) == 0)
		sys = *detected;
	if (rc == 0)
		rc = kernels__variant_select(cfg, path, names, n, local_metadata, &src, sys, trace);
	if (!src.single)
		kernels__strings_free(names, n);
	return rc;
}

/* LOCAL_KERNELS in kernels_get_variants / kernels_has_kernel (deps.h):
 * the decisions for a local tree, as kernels__loader_open_local makes them. */
int kernels__local_trace(const kernels__config *cfg, const char *path, const kernels_system *sys,
			 kernels_variant_trace **trace)
{
	kernels_system *detected;
	char *build;
	int rc = local_select(cfg, path, sys, &build, &detected, trace);

	kernels_system_free(detected);
	free(build);
	return rc;
}

int kernels__loader_open_local(const kernels__config *cfg, kernels__deps_fn deps, const char *repo_id,
			       const char *path, const kernels_system *sys, kernels_kernel **out)
{
	kernels_system *detected = NULL;
	kernels_variant_trace *trace = NULL;
	char *build = NULL, *chosen = NULL;
	int rc;

	if (!out || !path)
		return kernels__error(KERNELS_EINVAL, "kernels_load_local: out and path must be given");
	*out = NULL;
	if (has_metadata(path))
		return kernels__loader_open(cfg, deps, repo_id, NULL, NULL, path, NULL, out);
	if ((rc = local_select(cfg, path, sys, &build, &detected, &trace)) < 0)
		goto done;
	if (!kernels_variant_trace_chosen(trace)) {
		rc = kernels__variant_no_match(trace, path, sys ? sys : detected);
		goto done;
	}
	if (!(chosen = kernels__sprintf("%s/%s", build, kernels_variant_trace_chosen(trace)))) {
		rc = KERNELS_ENOMEM;
		goto done;
	}
	rc = kernels__loader_open(cfg, deps, repo_id, NULL, kernels_variant_trace_chosen(trace), chosen, NULL, out);
done:
	free(chosen);
	kernels_variant_trace_free(trace);
	kernels_system_free(detected);
	free(build);
	return rc;
}


void *kernels_symbol(const kernels_kernel *k, const char *symbol)
{
	const char *err;
	void *p;

	if (!k || !symbol) {
		kernels__error(KERNELS_EINVAL, "kernels_symbol: kernel and symbol must not be NULL");
		return NULL;
	}
	if (!k->dl) {
		kernels__error(KERNELS_ELOAD,
			       "variant '%s' has no native code (a noarch variant: Python/Triton files only), so "
			       "there is no symbol '%s' to look up; use its files under %s", k->variant, symbol,
			       k->path);
		return NULL;
	}
	dlerror();
	p = dlsym(k->dl, symbol);
	if (!p && (err = dlerror())) {
		kernels__error(KERNELS_ELOAD,
			       "symbol '%s' is not exported by %s (variant '%s'): %s; check the name (C++ names are "
			       "mangled; export it with extern \"C\")", symbol, k->library, k->variant, err);
		return NULL;
	}
	/* Found with the value 0 (an absolute symbol): NULL is still a failure
	 * here, and must say so, not leave an earlier message to be read. */
	if (!p)
		kernels__error(KERNELS_ELOAD, "symbol '%s' of %s (variant '%s') has the address 0: nothing there to "
			       "call or read; check the name", symbol, k->library, k->variant);
	return p;
}

void kernels_kernel_close(kernels_kernel *k)
{
	kernels_kernel **pp;
	int last = 0;

	if (!k)
		return;
	pthread_mutex_lock(&registry_lock);
	if (--k->refs == 0) {
		for (pp = &registry; *pp; pp = &(*pp)->next)
			if (*pp == k) {
				*pp = k->next;
				break;
			}
		last = 1;
	}
	pthread_mutex_unlock(&registry_lock);
	if (last)
		kernel_free(k);
}

int kernels_kernel_list(kernels_kernel ***out, size_t *count)
{
	kernels_kernel *k, **v = NULL;
	size_t n = 0, i = 0;

	if (!out || !count)
		return kernels__error(KERNELS_EINVAL, "kernels_kernel_list: out and count must be given");
	*out = NULL;
	*count = 0;
	pthread_mutex_lock(&registry_lock);
	for (k = registry; k; k = k->next)
		n++;
	if (n && !(v = malloc(n * sizeof(*v)))) {
		pthread_mutex_unlock(&registry_lock);
		return kernels__error_oom();
	}
	for (k = registry; k; k = k->next) {
		k->refs++;
		v[i++] = k;
	}
	pthread_mutex_unlock(&registry_lock);
	*out = v;
	*count = n;
	return 0;
}

KERNELS__GETTER(const char *, kernels_kernel_repo, kernels_kernel, repo, NULL)
KERNELS__GETTER(const char *, kernels_kernel_commit, kernels_kernel, commit, NULL)
KERNELS__GETTER(const char *, kernels_kernel_variant, kernels_kernel, variant, NULL)
KERNELS__GETTER(const char *, kernels_kernel_path, kernels_kernel, path, NULL)
KERNELS__GETTER(const char *, kernels_kernel_library, kernels_kernel, library, NULL)
KERNELS__GETTER(const kernels_metadata *, kernels_kernel_metadata, kernels_kernel, meta, NULL)
KERNELS__GETTER(size_t, kernels_kernel_dependency_count, kernels_kernel, ndeps, 0)
KERNELS__GETTER_AT(const kernels_kernel *, kernels_kernel_dependency_at, kernels_kernel, deps, ndeps)

int kernels_kernel_refcount(const kernels_kernel *k)
{
	int n;
	if (!k)
		return 0;
	pthread_mutex_lock(&registry_lock);
	n = k->refs;
	pthread_mutex_unlock(&registry_lock);
	return n;
}

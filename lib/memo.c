/* kernels_get's in-process memo: see memo.h for what it promises. */
#include "memo.h"
#include "error.h"

#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

extern char **environ;

#define MEMO_MAX 256 /* entries of each kind; the least recently used goes first */

typedef struct memo {
	struct memo *next;
	uint64_t hash;
	char *key;                 /* settings \x1f repo \x1f commit (or revision) */
	const kernels_kernel *k;   /* compared, never followed before a reference is held */
	char *path;                /* what kernels_kernel_path(k) said */
	unsigned long long adds, subs; /* the process's loaded objects when recorded */
	char commit[41];           /* names: what the revision resolved to */
	long long at_ms;           /* names: when */
} memo;

/* A process cache by design (memo.h): keyed by every setting that changes
 * the answer, so one call's settings never leak into another's, and
 * guarded by `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static memo *handles, *names;  /* most recently used first */

/* ---- the key ---------------------------------------------------------------- */

static void put_str(kernels__buf *b, const char *name, const char *v)
{
	kernels__buf_printf(b, "%s=%s%c", name, v ? v : "\x01", 0x1e);
}

static void put_int(kernels__buf *b, const char *name, long long v)
{
	kernels__buf_printf(b, "%s=%lld%c", name, v, 0x1e);
}

static void put_system(kernels__buf *b, const kernels_system *s)
{
	int i;

	if (!s) {
		put_str(b, "system", NULL);
		return;
	}
	put_int(b, "torch", s->torch_version);
	put_int(b, "abi", s->torch_cxx11_abi);
	put_int(b, "tvm", s->tvm_ffi_version);
	put_str(b, "backend", s->backend);
	put_int(b, "backend_version", s->backend_version);
	put_int(b, "gpus", s->gpu_count);
	for (i = 0; i < s->gpu_count && i < KERNELS_MAX_GPUS; i++) {
		put_int(b, "gpu", s->gpu_archs[i]);
		put_str(b, "gpu_name", s->gpu_arch_names[i]);
	}
	put_int(b, "current_device", s->current_device);
	put_str(b, "cpu", s->cpu);
	put_str(b, "os", s->os);
	put_int(b, "no_gpu", s->no_gpu);
	put_int(b, "macos", s->macos_version);
	put_int(b, "cudart", s->cuda_runtime_version);
	put_int(b, "driver", s->cuda_driver_version);
	put_str(b, "glibc", s->glibc);
	put_str(b, "torch_string", s->torch_version_string);
	put_str(b, "torch_path", s->torch_path);
	put_str(b, "tvm_path", s->tvm_ffi_path);
}

/* The environment variables that can change an answer: every HF_* and
 * KERNELS_* (the token excepted: it never changes which variant a commit
 * gives, and has no business in memory twice), LOCAL_KERNELS, and what
 * the default cache folder and the search for a torch read. */
static int env_counts(const char *e)
{
	static const char *const exact[] = { "HOME=", "PATH=", "VIRTUAL_ENV=", "LOCAL_KERNELS=" };
	size_t i;

	if (!strncmp(e, "HF_TOKEN=", 9) || !strncmp(e, "HF_TOKEN_PATH=", 14))
		return 0;
	if (!strncmp(e, "HF_", 3) || !strncmp(e, "KERNELS_", 8))
		return 1;
	for (i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
		if (!strncmp(e, exact[i], strlen(exact[i])))
			return 1;
	return 0;
}

int kernels__memo_settings(const kernels_options *o, kernels__buf *b)
{
	char **e;

	if (o && o->version != KERNELS_OPTIONS_VERSION)
		return -1;
	if (o) {
		put_str(b, "endpoint", o->endpoint);
		put_str(b, "endpoints", o->endpoints);
		put_str(b, "cache", o->cache_dir);
		put_int(b, "offline", o->offline);
		put_int(b, "trust", o->trust_remote_code);
		put_str(b, "orgs", o->trusted_orgs);
		put_system(b, o->system);
		put_str(b, "torch_dir", o->torch_dir);
		put_int(b, "find_torch", o->find_torch);
		put_int(b, "skip_arch_check", o->skip_arch_check); /* the arch check decides the variant */
		put_str(b, "device", o->device);
		/* Not the signature options: a handle still loaded is returned
		 * whatever they say (the loader checks a signature when it maps a
		 * variant), and a closed one ends its entry. */
	} else {
		put_str(b, "options", "defaults");
	}
	for (e = environ; e && *e; e++)
		if (env_counts(*e))
			kernels__buf_printf(b, "%s%c", *e, 0x1e);
	return b->ptr ? 0 : -1;
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static char *make_key(const char *settings, const char *repo_id, const char *what)
{
	return kernels__sprintf("%s\x1f%s\x1f%s", settings, repo_id, what);
}

/* ---- the loaded objects ------------------------------------------------------- */

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *c = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1; /* the counters are the process's: one object tells them */
}

static void loaded_objects(unsigned long long c[2])
{
	c[0] = c[1] = 0;
	dl_iterate_phdr(first_object, c);
}

/* ---- the lists -------------------------------------------------------------------- */

static void memo_free(memo *m)
{
	free(m->key);
	free(m->path);
	free(m);
}

/* The entry for `key` (moved to the front), or NULL; *prev_out for unlinking. */
static memo *find(memo **list, const char *key, uint64_t hash, memo ***link_out)
{
	memo **pp, *m;

	for (pp = list; (m = *pp); pp = &m->next) {
		if (m->hash != hash || strcmp(m->key, key))
			continue;
		*pp = m->next;          /* move to the front */
		m->next = *list;
		*list = m;
		*link_out = list;
		return m;
	}
	return NULL;
}

static void unlink_front(memo **list)
{
	memo *m = *list;

	*list = m->next;
	memo_free(m);
}

/* Adds `m` in front, dropping the least recently used past MEMO_MAX. */
static void push(memo **list, memo *m)
{
	memo **pp;
	size_t n = 0;

	m->next = *list;
	*list = m;
	for (pp = list; *pp; pp = &(*pp)->next)
		if (++n > MEMO_MAX) {
			memo *gone = *pp;
			*pp = NULL;
			while (gone) {
				memo *next = gone->next;
				memo_free(gone);
				gone = next;
			}
			break;
		}
}

/* One more reference to m->k when it is still loaded (its handle not
 * closed): the registry's list hands a reference to each handle, and all
 * but that one are given back. */
static kernels_kernel *reference(const memo *m)
{
	kernels_kernel **all = NULL, *hit = NULL;
	size_t n = 0, i;

	if (kernels_kernel_list(&all, &n) < 0) {
		kernels_error_clear();
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (!hit && all[i] == m->k && kernels_kernel_path(all[i]) && !strcmp(kernels_kernel_path(all[i]), m->path))
			hit = all[i];
		else
			kernels_kernel_close(all[i]);
	}
	free(all);
	return hit;
}

int kernels__memo_take(const char *settings, const char *repo_id, const char *commit, kernels_kernel **out)
{
	char *key = make_key(settings, repo_id, commit);
	unsigned long long now[2];
	memo *m, **list;
	uint64_t h;

	*out = NULL;
	if (!key) {
		kernels_error_clear();
		return 0;
	}
	h = fnv1a(key);
	loaded_objects(now);
	pthread_mutex_lock(&lock);
	if ((m = find(&handles, key, h, &list))) {
		if (m->adds == now[0] && m->subs == now[1])
			*out = reference(m);
		if (!*out)
			unlink_front(list); /* closed, or the process changed: the whole path decides again */
	}
	pthread_mutex_unlock(&lock);
	free(key);
	return *out != NULL;
}

void kernels__memo_put(const char *settings, const char *repo_id, const char *commit, const kernels_kernel *k)
{
	memo *m = calloc(1, sizeof(*m)), *old, **list;
	unsigned long long now[2];

	if (!m || !k || !kernels_kernel_path(k) || !(m->key = make_key(settings, repo_id, commit)) ||
	    !(m->path = kernels__strdup(kernels_kernel_path(k)))) {
		if (m)
			memo_free(m);
		kernels_error_clear(); /* the memo is an optimisation: the call succeeded */
		return;
	}
	m->hash = fnv1a(m->key);
	m->k = k;
	loaded_objects(now);
	m->adds = now[0];
	m->subs = now[1];
	pthread_mutex_lock(&lock);
	if ((old = find(&handles, m->key, m->hash, &list)))
		unlink_front(list);
	push(&handles, m);
	pthread_mutex_unlock(&lock);
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int kernels__memo_name(const char *settings, const char *repo_id, const char *revision, long long ttl_ms,
		       char commit[41])
{
	char *key;
	memo *m, **list;
	int fresh = 0;

	if (ttl_ms <= 0 || !(key = make_key(settings, repo_id, revision))) {
		kernels_error_clear();
		return 0;
	}
	pthread_mutex_lock(&lock);
	if ((m = find(&names, key, fnv1a(key), &list)) && now_ms() - m->at_ms < ttl_ms) {
		memcpy(commit, m->commit, 41);
		fresh = 1;
	}
	pthread_mutex_unlock(&lock);
	free(key);
	return fresh;
}

void kernels__memo_name_put(const char *settings, const char *repo_id, const char *revision, const char *commit)
{
	memo *m = calloc(1, sizeof(*m)), *old, **list;

	if (!m || strlen(commit) != 40 || !(m->key = make_key(settings, repo_id, revision))) {
		if (m)
			memo_free(m);
		kernels_error_clear();
		return;
	}
	m->hash = fnv1a(m->key);
	memcpy(m->commit, commit, 41);
	m->at_ms = now_ms();
	pthread_mutex_lock(&lock);
	if ((old = find(&names, m->key, m->hash, &list)))
		unlink_front(list);
	push(&names, m);
	pthread_mutex_unlock(&lock);
}

void kernels__memo_clear(void)
{
	pthread_mutex_lock(&lock);
	while (handles)
		unlink_front(&handles);
	while (names)
		unlink_front(&names);
	pthread_mutex_unlock(&lock);
}

/* kernels_get's in-process memo: see memo.h for what it promises. */
#include "memo.h"
#include "error.h"

#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* A struct's fields that go into the key, by name, type and offset: one
 * table per struct, so a field is added in one line and every key has it. */
typedef struct {
	const char *name;
	size_t off;
	int is_str; /* const char * (NULL written as \x01); else int */
} field;

#define FIELD_INT(type, name, member) { name, offsetof(type, member), 0 }
#define FIELD_STR(type, name, member) { name, offsetof(type, member), 1 }

static const field system_fields[] = {
	FIELD_INT(kernels_system, "torch", torch_version),
	FIELD_INT(kernels_system, "abi", torch_cxx11_abi),
	FIELD_INT(kernels_system, "tvm", tvm_ffi_version),
	FIELD_STR(kernels_system, "backend", backend),
	FIELD_INT(kernels_system, "backend_version", backend_version),
	FIELD_INT(kernels_system, "current_device", current_device),
	FIELD_STR(kernels_system, "cpu", cpu),
	FIELD_STR(kernels_system, "os", os),
	FIELD_INT(kernels_system, "no_gpu", no_gpu),
	FIELD_INT(kernels_system, "macos", macos_version),
	FIELD_INT(kernels_system, "cudart", cuda_runtime_version),
	FIELD_INT(kernels_system, "driver", cuda_driver_version),
	FIELD_STR(kernels_system, "glibc", glibc),
	FIELD_STR(kernels_system, "torch_string", torch_version_string),
	FIELD_STR(kernels_system, "torch_path", torch_path),
	FIELD_STR(kernels_system, "tvm_path", tvm_ffi_path),
	FIELD_INT(kernels_system, "gpus", gpu_count), /* then each GPU: put_system */
};

/* Not the signature options: a handle still loaded is returned whatever
 * they say (the loader checks a signature when it maps a variant), and a
 * closed one ends its entry. */
static const field option_fields[] = {
	FIELD_STR(kernels_options, "endpoint", endpoint),
	FIELD_STR(kernels_options, "endpoints", endpoints),
	FIELD_STR(kernels_options, "cache", cache_dir),
	FIELD_INT(kernels_options, "offline", offline),
	FIELD_INT(kernels_options, "trust", trust_remote_code),
	FIELD_STR(kernels_options, "orgs", trusted_orgs),
	FIELD_STR(kernels_options, "torch_dir", torch_dir),
	FIELD_INT(kernels_options, "find_torch", find_torch),
	FIELD_INT(kernels_options, "skip_arch_check", skip_arch_check), /* the arch check decides the variant */
	FIELD_STR(kernels_options, "device", device),
};

static int put_str(kernels__buf *b, const char *name, const char *v)
{
	return kernels__buf_printf(b, "%s=%s%c", name, v ? v : "\x01", 0x1e);
}

static int put_fields(kernels__buf *b, const void *st, const field *f, size_t n)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const char *at = (const char *)st + f[i].off;
		rc = f[i].is_str ? put_str(b, f[i].name, *(const char *const *)at)
				 : kernels__buf_printf(b, "%s=%d%c", f[i].name, *(const int *)at, 0x1e);
	}
	return rc;
}

static int put_system(kernels__buf *b, const kernels_system *s)
{
	int i, rc;

	if (!s)
		return put_str(b, "system", NULL);
	rc = put_fields(b, s, system_fields, sizeof(system_fields) / sizeof(system_fields[0]));
	for (i = 0; rc == 0 && i < s->gpu_count && i < KERNELS_MAX_GPUS; i++)
		rc = kernels__buf_printf(b, "gpu=%d%cgpu_name=%s%c", s->gpu_archs[i], 0x1e,
					 s->gpu_arch_names[i] ? s->gpu_arch_names[i] : "\x01", 0x1e);
	return rc;
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
	int rc;

	/* The settings it keys on are all of version 1: any known version. */
	if (o && (o->version < 1 || o->version > KERNELS_OPTIONS_VERSION))
		return -1;
	if (!o)
		rc = put_str(b, "options", "defaults");
	else if ((rc = put_fields(b, o, option_fields, sizeof(option_fields) / sizeof(option_fields[0]))) == 0)
		rc = put_system(b, o->system);
	for (e = environ; rc == 0 && e && *e; e++)
		if (env_counts(*e))
			rc = kernels__buf_printf(b, "%s%c", *e, 0x1e);
	/* A key short of a field would match another call's settings: out of
	 * memory, the call goes without the memo instead. */
	if (rc < 0) {
		kernels__buf_free(b);
		return -1;
	}
	return 0;
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
		if (!hit && all[i] == m->k && kernels_kernel_path(all[i]) &&
		    !strcmp(kernels_kernel_path(all[i]), m->path))
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
	if ((m = find(&names, key, fnv1a(key), &list)) && kernels__now_ms() - m->at_ms < ttl_ms) {
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
	m->at_ms = kernels__now_ms();
	pthread_mutex_lock(&lock);
	if ((old = find(&names, m->key, m->hash, &list)))
		unlink_front(list);
	push(&names, m);
	pthread_mutex_unlock(&lock);
}

#ifdef KERNELS_TESTING
void kernels__memo_clear(void)
{
	pthread_mutex_lock(&lock);
	while (handles)
		unlink_front(&handles);
	while (names)
		unlink_front(&names);
	pthread_mutex_unlock(&lock);
}
#endif

/* kernels_get's in-process memo: see memo.h for what it promises. */
#include "memo.h"
#include "config.h"
#include "error.h"
#include "fork.h"

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

void kernels__memo_fork(kernels__fork_phase phase)
{
	kernels__fork_mutex(&lock, phase);
}

/* ---- the key ---------------------------------------------------------------- */

/* A struct's fields that go into the key, by name, type and offset: one
 * table per struct, so a field is added in one line and every key has it. */
typedef struct {
	const char *name;
	size_t off;
	int is_str;         /* const char * (NULL written as \x01); else int */
	unsigned int since; /* the struct's version that has it: an older caller's struct ends before */
} field;

#define FIELD_INT(type, name, member) { name, offsetof(type, member), 0, 1 }
#define FIELD_STR(type, name, member) { name, offsetof(type, member), 1, 1 }

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

/* Every field of kernels_options, in the header's order, and what the key
 * does with it: KEY_INT / KEY_STR(member, name, since) key it, SKIP(member)
 * leaves it out for the reason beside it. The struct mirrored from this
 * list must have the options' size and every offset (the assertions
 * below), so a field added to kernels_options and not here fails the
 * build, and tests/python/test_memo_key.py fails on one added in padding.
 * The signature options too: a handle one call had under no check is not
 * another's that requires one (the loader checks a loaded variant again
 * for a call whose signature settings it was not loaded under). */
#define OPTION_FIELDS(KEY_INT, KEY_STR, SKIP)                                                              \
	SKIP(version)                         /* checked first: any known version keys these */           \
	KEY_STR(endpoint, "endpoint", 1)                                                                   \
	KEY_STR(cache_dir, "cache", 1)                                                                     \
	SKIP(token)                           /* never changes which variant a commit gives */             \
	KEY_INT(offline, "offline", 1)                                                                     \
	SKIP(timeout_ms)                      /* how requests are made, not what they answer */            \
	SKIP(max_retries)                     /* likewise */                                               \
	SKIP(max_parallel)                    /* likewise */                                               \
	KEY_INT(trust_remote_code, "trust", 1)                                                             \
	KEY_STR(trusted_orgs, "orgs", 1)                                                                   \
	SKIP(system)                          /* keyed field by field: put_system */                       \
	SKIP(log_cb)                          /* where messages go, not the answer */                      \
	SKIP(log_payload)                     /* likewise */                                               \
	SKIP(progress_cb)                     /* likewise */                                               \
	SKIP(progress_payload)                /* likewise */                                               \
	KEY_STR(torch_dir, "torch_dir", 1)                                                                 \
	KEY_INT(find_torch, "find_torch", 1)                                                               \
	SKIP(deadline_ms)                     /* how long the call may take */                             \
	KEY_STR(endpoints, "endpoints", 1)                                                                 \
	SKIP(log_level)                       /* where messages go */                                      \
	KEY_INT(signature, "signature", 1)                                                                 \
	KEY_STR(sigstore_trusted_root, "sigroot", 1)                                                       \
	SKIP(signature_policies)              /* keyed policy by policy: put_policies */                   \
	SKIP(signature_policy_count)          /* likewise */                                               \
	SKIP(revision_ttl_s)                  /* the memo's own clock for names (kernels__memo_name) */    \
	KEY_INT(skip_arch_check, "skip_arch_check", 1) /* the arch check decides the variant */            \
	KEY_STR(device, "device", 1)                                                                       \
	SKIP(user_agent)                      /* what the Hub is told, not what it answers */              \
	SKIP(stall_budget_ms)                 /* how requests are made */

#define OPTION_INT(member, name, since) { name, offsetof(kernels_options, member), 0, since },
#define OPTION_STR(member, name, since) { name, offsetof(kernels_options, member), 1, since },
#define OPTION_SKIP(member)
static const field option_fields[] = { OPTION_FIELDS(OPTION_INT, OPTION_STR, OPTION_SKIP) };

/* The mirror: the members listed above, of the options' own types. */
#define OPTION_TYPE(member) __typeof__(((kernels_options *)0)->member)
#define MIRROR_KEYED(member, name, since) OPTION_TYPE(member) member;
#define MIRROR_SKIP(member) OPTION_TYPE(member) member;
struct options_mirror {
	OPTION_FIELDS(MIRROR_KEYED, MIRROR_KEYED, MIRROR_SKIP)
};
_Static_assert(sizeof(struct options_mirror) == sizeof(kernels_options),
	       "a field of kernels_options is missing from OPTION_FIELDS: key it or skip it, saying why");
#define SAME_OFFSET(member, ...)                                                                          \
	_Static_assert(offsetof(struct options_mirror, member) == offsetof(kernels_options, member),      \
		       "OPTION_FIELDS is out of the options' order at " #member);
#define SAME_OFFSET_SKIP(member) SAME_OFFSET(member)
OPTION_FIELDS(SAME_OFFSET, SAME_OFFSET, SAME_OFFSET_SKIP)
/* What put_fields reads must be of the kind the list says. */
#define IS_INT(member, ...) _Static_assert(_Generic(((kernels_options *)0)->member, int: 1, default: 0), #member);
#define IS_STR(member, ...)                                                                               \
	_Static_assert(_Generic(((kernels_options *)0)->member, const char *: 1, default: 0), #member);
#define NOT_READ(member)
OPTION_FIELDS(IS_INT, IS_STR, NOT_READ)

/* The key is written with appends, not printf: it is built on every
 * kernels_get, and a re-get of a commit is only this and a lookup. */

/* name, then '=' and the value when there is one, then the separator. */
static int put_item(kernels__buf *b, const char *name, const char *v, size_t vlen, int has_value)
{
	static const char eq = '=', sep = 0x1e;
	int rc = kernels__buf_puts(b, name);

	if (rc == 0 && has_value && (rc = kernels__buf_put(b, &eq, 1)) == 0)
		rc = kernels__buf_put(b, v, vlen);
	return rc < 0 ? rc : kernels__buf_put(b, &sep, 1);
}

static int put_str(kernels__buf *b, const char *name, const char *v)
{
	return put_item(b, name, v ? v : "\x01", v ? strlen(v) : 1, 1);
}

/* As "%d" writes it. */
static int put_int(kernels__buf *b, const char *name, int v)
{
	char digits[16], *p = digits + sizeof(digits);
	unsigned int u = v < 0 ? 0u - (unsigned int)v : (unsigned int)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	return put_item(b, name, p, (size_t)(digits + sizeof(digits) - p), 1);
}

/* The fields of `st`, a struct of layout `version`: one its caller's
 * version does not have yet is keyed as absent, never read. */
static int put_fields(kernels__buf *b, const void *st, unsigned int version, const field *f, size_t n)
{
	size_t i;
	int rc = 0;

	for (i = 0; i < n && rc == 0; i++) {
		const char *at = (const char *)st + f[i].off;
		if (f[i].since > version)
			rc = put_item(b, f[i].name, NULL, 0, 0);
		else
			rc = f[i].is_str ? put_str(b, f[i].name, *(const char *const *)at)
					 : put_int(b, f[i].name, *(const int *)at);
	}
	return rc;
}

static int put_system(kernels__buf *b, const kernels_system *s)
{
	int i, rc;

	if (!s)
		return put_str(b, "system", NULL);
	rc = put_fields(b, s, 1, system_fields, sizeof(system_fields) / sizeof(system_fields[0]));
	for (i = 0; rc == 0 && i < s->gpu_count && i < KERNELS_MAX_GPUS; i++)
		if ((rc = put_int(b, "gpu", s->gpu_archs[i])) == 0)
			rc = put_str(b, "gpu_name", s->gpu_arch_names[i]);
	return rc;
}

/* Each of the caller's signature policies, field by field, as the
 * signature check reads them (any struct version). */
static int put_policies(kernels__buf *b, const kernels_options *o)
{
	kernels_signature_policy *p = NULL;
	size_t i, j;
	int rc = o->signature_policy_count ? kernels__signature_policies_read(&p, o->signature_policies,
									   o->signature_policy_count) : 0;

	for (i = 0; rc == 0 && i < o->signature_policy_count; i++) {
		if ((rc = put_str(b, "issuer", p[i].issuer)) == 0 && (rc = put_str(b, "identity", p[i].identity)) == 0)
			rc = put_str(b, "repository", p[i].repository);
		for (j = 0; rc == 0 && j < p[i].signer_uri_count; j++)
			rc = put_str(b, "signer", p[i].signer_uris[j]);
	}
	free(p);
	kernels_error_clear(); /* a policy that does not read: the call says so, with no memo */
	return rc;
}

/* The environment variables that can change an answer: every HF_* and
 * KERNELS_* (the token excepted: it never changes which variant a commit
 * gives, and has no business in memory twice), LOCAL_KERNELS, what the
 * cache folder is read from besides (another cache: its own copy), the
 * offline and staging switches huggingface_hub reads, what system
 * detection reads (the GPUs seen, the CUDA runtime found) and what the
 * search for a torch reads. */
static int env_counts(const char *e)
{
	static const char *const exact[] = {
		"HOME=", "XDG_CACHE_HOME=", "HUGGINGFACE_HUB_CACHE=", "TRANSFORMERS_OFFLINE=",
		"HUGGINGFACE_CO_STAGING=", "LOCAL_KERNELS=", "CUDA_VISIBLE_DEVICES=", "LD_LIBRARY_PATH=", "PATH=",
		"VIRTUAL_ENV=", "PYENV_VERSION=", "PYTHONUSERBASE=", "PYTHONNOUSERSITE=",
	};
	size_t i;

	if (!e[0] || !strchr("CHKLPTVX", e[0])) /* what every name below starts with: most go here */
		return 0;
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

	/* Any known version: put_fields reads no further than it reaches. */
	if (o && (o->version < 1 || o->version > KERNELS_OPTIONS_VERSION))
		return -1;
	rc = kernels__buf_grow(b, 1024); /* a key is some hundreds of bytes: one allocation */
	if (rc == 0)
		rc = o ? put_fields(b, o, o->version, option_fields, sizeof(option_fields) / sizeof(*option_fields))
		       : put_str(b, "options", "defaults");
	if (rc == 0 && o)
		rc = put_system(b, o->system);
	if (rc == 0 && o)
		rc = put_policies(b, o);
	for (e = environ; rc == 0 && e && *e; e++)
		if (env_counts(*e))
			rc = put_item(b, *e, NULL, 0, 0);
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
	kernels__dl_iterate_phdr(first_object, c);
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

static size_t length(const memo *m)
{
	size_t n = 0;

	for (; m; m = m->next)
		n++;
	return n;
}

void kernels__memo_counts(size_t *n_handles, size_t *n_names)
{
	pthread_mutex_lock(&lock);
	*n_handles = length(handles);
	*n_names = length(names);
	pthread_mutex_unlock(&lock);
}
#endif

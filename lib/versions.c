/* kernels_versions_list: the versions a repo's refs name (its vN branches
 * and v+version tags), from reflist.c: the Hub's refs, or the cache's
 * offline. */
#include "revision.h"
#include "error.h"
#include "reflist.h"
#include "specifier.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

typedef kernels__ref_entry entry;
typedef kernels__reflist table;

/* vN branches and v+version tags of `t`, sorted, each name once. */
static int versions_from(const table *t, char ***versions, size_t *count)
{
	kernels__named_version *v = t->n ? calloc(t->n, sizeof(*v)) : NULL;
	char **names = NULL;
	size_t i, n = 0, k = 0;
	int rc = 0;

	if (t->n && !v)
		return kernels__error_oom();
	for (i = 0; i < t->n; i++) {
		const entry *e = &t->v[i];
		int major = e->kind == KERNELS_REVISION_BRANCH && e->name[0] == 'v' &&
			    kernels__is_digits(e->name + 1, strlen(e->name + 1));
		int tag = e->kind == KERNELS_REVISION_TAG && e->name[0] == 'v';
		if (!major && !tag)
			continue;
		if ((v[n].v = kernels__version_try_parse(e->name + 1)))
			v[n++].name = e->name;
	}
	if (n) {
		qsort(v, n, sizeof(*v), kernels__named_version_cmp);
		if (!(names = calloc(n, sizeof(*names))))
			rc = kernels__error_oom();
	}
	for (i = 0; rc == 0 && i < n; i++) {
		if (k && !strcmp(names[k - 1], v[i].name))
			continue;
		if (!(names[k++] = kernels__strdup(v[i].name)))
			rc = KERNELS_ENOMEM;
	}
	for (i = 0; i < n; i++)
		kernels__version_free(v[i].v);
	free(v);
	if (rc < 0) {
		kernels__strings_free(names, k);
		return rc;
	}
	*versions = k ? names : NULL;
	if (!k)
		free(names);
	*count = k;
	return 0;
}

static int versions_cached(const kernels__config *cfg, const char *repo_id, table *t)
{
	const char *why;
	int code = kernels__reflist_offline_why(cfg, &why);
	int rc = kernels__reflist_cached(cfg, repo_id, t);

	if (rc < 0)
		return rc;
	if (rc == 0 && code == KERNELS_EOFFLINE)
		return kernels__error(code, "%s, and %s is not in the cache at %s; list its versions once online (%s)",
				      why, repo_id, cfg->cache_dir, kernels__config_online_hint(cfg));
	if (rc == 0)
		return kernels__error(code, "%s, and %s is not in the cache at %s; %s", why, repo_id, cfg->cache_dir,
				      code == KERNELS_EHTTP ? "try again when the Hub answers"
							    : "check the network connection, HF_ENDPOINT and proxy settings");
	return 0;
}

int kernels__versions_list(const kernels__config *cfg, const char *repo_id, char ***versions, size_t *count)
{
	table t = { 0 };
	int rc;

	if (!versions || !count)
		return kernels__error(KERNELS_EINVAL, "kernels_versions_list: versions or count is NULL");
	*versions = NULL;
	*count = 0;
	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	rc = cfg->offline ? versions_cached(cfg, repo_id, &t) : kernels__reflist_remote(cfg, repo_id, &t);
	if (rc == 0)
		rc = versions_from(&t, versions, count);
	kernels__reflist_free(&t);
	return rc;
}

/* `kernels info` (Python kernels 0.17's cli/info.py): a kernel described by
 * the metadata of one variant and the backends of all of them. Only the
 * listing and one metadata.json are read; nothing is loaded. */
#include "kernels/info.h"
#include "kernels/revision.h"
#include "kernels/variant.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "download.h"
#include "loader.h"
#include "error.h"
#include "repo.h"
#include "revision.h"
#include "util.h"
#include "variant.h"

struct kernels_info {
	char *repo_id, *path, *revision, *commit;
	kernels_metadata *meta;
	char **variants;
	size_t nvariants;
	char **backends;
	size_t nbackends;
};

void kernels_info_free(kernels_info *i)
{
	size_t k;

	if (!i)
		return;
	free(i->repo_id);
	free(i->path);
	free(i->revision);
	free(i->commit);
	kernels_metadata_free(i->meta);
	for (k = 0; k < i->nvariants; k++)
		free(i->variants[k]);
	free(i->variants);
	for (k = 0; k < i->nbackends; k++)
		free(i->backends[k]);
	free(i->backends);
	free(i);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Keeps the names that are variants, and their backends (each once). */
static int take_variants(kernels_info *i, char **names, size_t n)
{
	size_t k, b;

	if (!(i->variants = calloc(n + 1, sizeof(*i->variants))) ||
	    !(i->backends = calloc(n + 1, sizeof(*i->backends))))
		return kernels__error_oom();
	for (k = 0; k < n; k++) {
		kernels_variant_info v;
		if (kernels_variant_parse(&v, names[k]) < 0) {
			kernels_error_clear(); /* not a variant: 0.17 skips it */
			continue;
		}
		if (!(i->variants[i->nvariants] = kernels__strdup(names[k])))
			return KERNELS_ENOMEM;
		i->nvariants++;
		for (b = 0; b < i->nbackends && strcmp(i->backends[b], v.backend); b++)
			;
		if (b == i->nbackends && !(i->backends[i->nbackends++] = kernels__strdup(v.backend)))
			return KERNELS_ENOMEM;
	}
	qsort(i->variants, i->nvariants, sizeof(*i->variants), cmp_str);
	qsort(i->backends, i->nbackends, sizeof(*i->backends), cmp_str);
	return 0;
}

static int local_info(kernels_info *i, const char *path)
{
	char *build = kernels__sprintf("%s/build", path), **names = NULL;
	size_t n = 0, k;
	int rc;

	if (!build)
		return KERNELS_ENOMEM;
	/* the loader's listing of a local tree: one for both */
	if ((rc = kernels__local_variants(build, &names, &n)) < 0) {
		if (rc != KERNELS_ENOMEM)
			rc = kernels__error(KERNELS_ENOTFOUND, "No build variants found in: %s", build);
		free(build);
		return rc;
	}
	if (rc == 0)
		rc = take_variants(i, names, n);
	if (rc == 0 && i->nvariants == 0)
		rc = kernels__error(KERNELS_ENOTFOUND, "No build variants found in: %s", build);
	/* the first variant (in name order) whose metadata.json reads */
	for (k = 0; rc == 0 && k < i->nvariants && !i->meta; k++) {
		char *dir = kernels__sprintf("%s/%s", build, i->variants[k]);
		if (dir && kernels_metadata_read(&i->meta, dir) < 0)
			kernels_error_clear();
		free(dir);
	}
	kernels__strings_free(names, n);
	free(build);
	return rc;
}

/* No revision: the highest vN branch, else main (0.17's default). */
static int default_revision(const kernels__config *cfg, const char *repo_id, char **out)
{
	char **versions = NULL;
	size_t n = 0, k;
	long best = -1;
	int rc = kernels__versions_list(cfg, repo_id, &versions, &n);

	if (rc < 0)
		return rc;
	for (k = 0; k < n; k++) {
		const char *v = versions[k];
		char *end;
		long major = v[0] == 'v' && v[1] ? strtol(v + 1, &end, 10) : -1;
		if (major >= 0 && !*end && major > best)
			best = major;
	}
	kernels__strings_free(versions, n);
	*out = best >= 0 ? kernels__sprintf("v%ld", best) : kernels__strdup("main");
	return *out ? 0 : KERNELS_ENOMEM;
}

static int hub_info(const kernels__config *cfg, kernels_info *i, const char *repo_id, const char *revision)
{
	kernels_revision *rev = NULL;
	kernels__repo_type type = KERNELS__REPO_KERNEL;
	char **names = NULL, *path = NULL, *local = NULL, *slash;
	size_t n = 0;
	int rc;

	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	if (!(i->repo_id = kernels__strdup(repo_id)))
		return KERNELS_ENOMEM;
	if (revision)
		rc = (i->revision = kernels__strdup(revision)) ? 0 : KERNELS_ENOMEM;
	else
		rc = default_revision(cfg, repo_id, &i->revision);
	if (rc == 0)
		rc = kernels__revision_resolve(cfg, repo_id, i->revision, &rev);
	if (rc == 0) {
		rc = (i->commit = kernels__strdup(kernels_revision_commit(rev))) ? 0 : KERNELS_ENOMEM;
		if (rc == 0)
			rc = kernels__repo_locate_revision(cfg, rev, &type);
	}
	if (rc == 0)
		rc = kernels__variants_list(cfg, type, repo_id, i->commit, &names, &n);
	if (rc == 0)
		rc = take_variants(i, names, n);
	if (rc == 0 && i->nvariants == 0)
		rc = kernels__error(KERNELS_ENOTFOUND, "No build variants found in %s (revision: %s)", repo_id,
				    i->revision);
	/* one metadata.json: the keys that describe the kernel are the same in each */
	if (rc == 0 && (path = kernels__sprintf("build/%s/metadata.json", i->variants[0]))) {
		if (kernels__download_file(cfg, type, repo_id, i->commit, path, &local, 0) == 0 &&
		    (slash = strrchr(local, '/'))) {
			*slash = '\0';
			if (kernels_metadata_read(&i->meta, local) < 0)
				i->meta = NULL;
		}
		kernels_error_clear(); /* no metadata: described without it, as 0.17 does */
	}
	free(path);
	free(local);
	kernels__strings_free(names, n);
	kernels_revision_free(rev);
	return rc;
}

int kernels__info_get(const kernels__config *cfg, kernels_info **out, const char *kernel, const char *revision)
{
	kernels_info *i;
	struct stat st;
	int rc;

	*out = NULL;
	if (!(i = calloc(1, sizeof(*i))))
		return kernels__error_oom();
	if (stat(kernel, &st) == 0 && S_ISDIR(st.st_mode)) {
		if (revision)
			rc = kernels__error(KERNELS_EINVAL,
					    "--revision and --version cannot be used with a local path");
		else if (!(i->path = kernels__strdup(kernel)))
			rc = KERNELS_ENOMEM;
		else
			rc = local_info(i, kernel);
	} else {
		rc = hub_info(cfg, i, kernel, revision);
	}
	if (rc < 0) {
		kernels_info_free(i);
		return rc;
	}
	*out = i;
	return 0;
}

KERNELS__GETTER(const char *, kernels_info_repo_id, kernels_info, repo_id, NULL)
KERNELS__GETTER(const char *, kernels_info_path, kernels_info, path, NULL)
KERNELS__GETTER(const char *, kernels_info_revision, kernels_info, revision, NULL)
KERNELS__GETTER(const char *, kernels_info_commit, kernels_info, commit, NULL)
KERNELS__GETTER(const kernels_metadata *, kernels_info_metadata, kernels_info, meta, NULL)
KERNELS__GETTER(size_t, kernels_info_backend_count, kernels_info, nbackends, 0)
KERNELS__GETTER_AT(const char *, kernels_info_backend_at, kernels_info, backends, nbackends)
KERNELS__GETTER(size_t, kernels_info_variant_count, kernels_info, nvariants, 0)
KERNELS__GETTER_AT(const char *, kernels_info_variant_at, kernels_info, variants, nvariants)

/* ---- 0.17's hint when no variant fits ---------------------------------------- */

int kernels__no_match_hint(const kernels__config *cfg, const char *repo_id, const kernels_system *sys, int rc)
{
	kernels_variant_trace *t = NULL;
	kernels_revision *rev = NULL;
	kernels__repo_type type = KERNELS__REPO_KERNEL;
	char *message = kernels__strdup(kernels_error_last()), *latest = NULL, **names = NULL;
	size_t n = 0;

	/* Best effort, as 0.17: more requests, and never a different error. */
	if (!message || cfg->offline || default_revision(cfg, repo_id, &latest) < 0 || !strcmp(latest, "main") ||
	    kernels__revision_resolve(cfg, repo_id, latest, &rev) < 0 ||
	    kernels__repo_locate_revision(cfg, rev, &type) < 0 ||
	    kernels__variants_list(cfg, type, repo_id, kernels_revision_commit(rev), &names, &n) < 0)
		goto done;
	/* the one selection, without archs (as 0.17's hint) */
	if (kernels__variant_select(cfg, NULL, names, n, NULL, NULL, sys, &t) == 0 && kernels_variant_trace_chosen(t)) {
		kernels__error(KERNELS_ENOMATCH, "%s\n\nHowever, version %s of '%s' has a build compatible with your "
			       "system (%s). Consider upgrading to that version by specifying the `version` argument.",
			       message, latest, repo_id, kernels_variant_trace_chosen(t));
		rc = KERNELS_ENOMATCH;
		free(message);
		message = NULL;
	}
done:
	if (message) /* the original error, as it was */
		kernels__error(rc, "%s", message);
	free(message);
	free(latest);
	kernels_variant_trace_free(t);
	kernels__strings_free(names, n);
	kernels_revision_free(rev);
	return rc;
}

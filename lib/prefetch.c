/* A commit's first requests side by side: see prefetch.h. */
#include "prefetch.h"
#include "download.h"
#include "error.h"
#include "hub.h"
#include "listing.h"

#include <stdlib.h>
#include <string.h>

static void *fetch_status(void *arg)
{
	kernels__prefetch *pf = arg;
	kernels__repo_type type = pf->type;
	char *local = NULL;

	kernels__download_file(&pf->cfg, &type, pf->repo_id, pf->commit, "kernel-status.toml", &local);
	free(local);
	kernels_error_clear();
	return NULL;
}

static void *fetch_listing(void *arg)
{
	kernels__prefetch *pf = arg;
	kernels__repo_type type = pf->type;
	kernels__tree t;

	if (kernels__listing_build(&pf->cfg, &type, pf->repo_id, pf->commit, &t) == 0)
		kernels__tree_free(&t);
	kernels_error_clear();
	return NULL;
}

void kernels__prefetch_start(kernels__prefetch *pf, const kernels__config *cfg, kernels__repo_type type,
			     const char *repo_id, const char *commit)
{
	memset(pf, 0, sizeof(*pf));
	if (cfg->offline || kernels__hub_global_init() < 0) {
		kernels_error_clear();
		return;
	}
	pf->cfg = *cfg;
	pf->cfg.log_cb = NULL;
	pf->cfg.log_level = KERNELS_LOG_WARNING + 1; /* the default sink prints nothing */
	pf->cfg.progress_cb = NULL;
	pf->type = type;
	pf->repo_id = repo_id;
	pf->commit = commit;
	if (!kernels__download_file_known(cfg, repo_id, commit, "kernel-status.toml"))
		pf->status_started = pthread_create(&pf->status, NULL, fetch_status, pf) == 0;
	if (!kernels__listing_recorded(cfg, repo_id, commit))
		pf->listing_started = pthread_create(&pf->listing, NULL, fetch_listing, pf) == 0;
}

void kernels__prefetch_join(kernels__prefetch *pf)
{
	if (pf->status_started)
		pthread_join(pf->status, NULL);
	if (pf->listing_started)
		pthread_join(pf->listing, NULL);
	pf->status_started = pf->listing_started = 0;
}

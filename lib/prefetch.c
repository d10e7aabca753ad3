/* A commit's first requests side by side: see prefetch.h. */
#include "prefetch.h"
#include "download.h"
#include "error.h"
#include "hub.h"
#include "listing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The commit's top folder, listed (an API request: nothing under /resolve/
 * is asked before the trust verdict): without a kernel-status.toml there,
 * its absence is recorded and the status stage asks nothing; with one, the
 * stage fetches it after the verdict, as before. Only a listing that names
 * build/ vouches for an absence: one naming neither (empty, cut short)
 * would have the marker skip a real redirect for good; the status stage
 * then asks for the file itself. */
static void *fetch_status(void *arg)
{
	kernels__prefetch *pf = arg;
	kernels__repo_type type = pf->type;
	const kernels__tree_entry *build;
	kernels__tree t;

	if ((pf->status_rc = kernels__hub_tree_list(&pf->cfg, type, pf->repo_id, pf->commit, "", 0, &t)) == 0) {
		if (!kernels__tree_find(&t, "kernel-status.toml") && (build = kernels__tree_find(&t, "build")) &&
		    build->is_dir)
			kernels__download_mark_absent(&pf->cfg, type, pf->repo_id, pf->commit, "kernel-status.toml");
		kernels__tree_free(&t);
	} else {
		snprintf(pf->status_msg, sizeof(pf->status_msg), "%s", kernels_error_last());
	}
	kernels_error_clear();
	return NULL;
}

static void *fetch_listing(void *arg)
{
	kernels__prefetch *pf = arg;
	kernels__tree t;

	if ((pf->listing_rc = kernels__listing_build(&pf->cfg, pf->type, pf->repo_id, pf->commit, &t)) == 0)
		kernels__tree_free(&t);
	else
		snprintf(pf->listing_msg, sizeof(pf->listing_msg), "%s", kernels_error_last());
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
	if (!kernels__download_file_known(cfg, type, repo_id, commit, "kernel-status.toml"))
		pf->status_started = pthread_create(&pf->status, NULL, fetch_status, pf) == 0;
	if (!kernels__listing_recorded(cfg, type, repo_id, commit))
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

int kernels__prefetch_failure(const kernels__prefetch *pf)
{
	if (pf->status_rc == KERNELS_ENETWORK)
		return kernels__error(KERNELS_ENETWORK, "%s", pf->status_msg);
	if (pf->listing_rc == KERNELS_ENETWORK)
		return kernels__error(KERNELS_ENETWORK, "%s", pf->listing_msg);
	return 0;
}

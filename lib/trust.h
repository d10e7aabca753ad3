/* Internal: the publisher trust check before anything of a repo is fetched. */
#ifndef KERNELS_LIB_TRUST_H
#define KERNELS_LIB_TRUST_H

#include "config.h"
#include "repo.h"
#include "fs.h"

/* Where the Hub's last verdict on a repo's publisher is kept, in the
 * repo's cache folder, and how long a "trusted" one stands in offline. */
#define KERNELS__TRUST_RECORD ".libkernels/trust.json"
#define KERNELS__TRUST_MAX_AGE (30 * 24 * 3600)
/* Online, a "trusted" verdict younger than this is not asked again. */
#define KERNELS__TRUST_FRESH (24 * 3600)

/* 0 when `repo_id` (a repo that exists: check after resolving a revision)
 * may be loaded: cfg->trust_remote_code, the repo or its org in
 * cfg->trusted_orgs, or the org's trustedKernelPublisher on the Hub (the
 * verdict is recorded in the cache, and a "trusted" one younger than
 * KERNELS__TRUST_FRESH answers without asking again); offline, a "trusted" record younger
 * than KERNELS__TRUST_MAX_AGE. KERNELS_EUNTRUSTED
 * otherwise, saying why and what to set; KERNELS_ENETWORK when the Hub
 * cannot be reached (not "untrusted": the caller may answer from the cache,
 * offline, where the record decides). `later` (may be NULL): a "trusted"
 * verdict's record is flushed and renamed on a helper thread pushed there
 * (kernels__cache_write_later), for the caller to join before it returns. */
int kernels__trust_check(const kernels__config *cfg, kernels__repo_type type, const char *repo_id,
			 kernels__write_later **later);

#endif

/* Internal: the publisher trust check before anything of a repo is fetched. */
#ifndef KERNELS_LIB_TRUST_H
#define KERNELS_LIB_TRUST_H

#include "config.h"

/* 0 when `repo_id` may be loaded: cfg->trust_remote_code, the repo or its
 * org in cfg->trusted_orgs, the org's trustedKernelPublisher on the Hub, or
 * offline (skipped with a warning, as the cache holds only what was trusted
 * when fetched). KERNELS_EUNTRUSTED otherwise, with what to set;
 * KERNELS_ENETWORK when the Hub cannot be reached (not "untrusted": the
 * caller may answer from the cache). */
int kernels__trust_check(const kernels__config *cfg, const char *repo_id);

#endif

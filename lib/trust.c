/* Publisher trust, as the current Python client checks it: a kernel is
 * native code from the internet, so only repos whose org the Hub marks as a
 * trusted kernel publisher load, unless the caller opted in. */
#include "trust.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "hub.h"
#include "util.h"

/* An allowlist entry is an org ("acme") or a repo id ("acme/relu"),
 * separated by commas, blanks around them ignored. */
static int allowlisted(const char *list, const char *repo_id)
{
	size_t org_len = strcspn(repo_id, "/"), id_len = strlen(repo_id);

	while (list && *list) {
		size_t n = strcspn(list, ",");
		const char *e = list, *end = list + n;

		while (e < end && *e == ' ')
			e++;
		while (end > e && end[-1] == ' ')
			end--;
		if (((size_t)(end - e) == id_len && !strncmp(e, repo_id, id_len)) ||
		    ((size_t)(end - e) == org_len && !strncmp(e, repo_id, org_len)))
			return 1;
		list += n + (list[n] == ',');
	}
	return 0;
}

int kernels__trust_check(const kernels__config *cfg, const char *repo_id)
{
	kernels__hub_response r = { 0 };
	char *org = strndup(repo_id, strcspn(repo_id, "/")), *path;
	json_t *doc = NULL;
	int rc, trusted = 0;

	if (cfg->trust_remote_code || allowlisted(cfg->trusted_orgs, repo_id)) {
		free(org);
		return 0;
	}
	if (cfg->offline) {
		kernels__log(cfg, KERNELS_LOG_WARNING,
			     "skipping the publisher trust check for '%s' because the Hub is offline", repo_id);
		free(org);
		return 0;
	}
	if (!org)
		return kernels__error_oom();
	path = kernels__sprintf("/api/organizations/%s/overview", org);
	rc = path ? kernels__hub_request(cfg, path, 0, &r) : KERNELS_ENOMEM; /* sprintf set the message */
	if (rc == 0 && r.status == 200 && r.body && (doc = json_loadb(r.body, r.body_len, 0, NULL)))
		trusted = json_is_true(json_object_get(doc, "trustedKernelPublisher"));
	/* Unreachable (KERNELS_ENETWORK) is not "untrusted": the caller may
	 * then load what the cache already holds, and fetch nothing. */
	if (rc == 0)
		rc = trusted ? 0 : kernels__error(KERNELS_EUNTRUSTED,
			"kernel repository '%s' is %s; native code from it would run in this process. Set "
			"options.trust_remote_code = 1, or list the repo or its org in options.trusted_orgs, "
			"to load kernels from publishers the Hub does not mark as trusted",
			repo_id, r.status == 200 ? "not from a trusted publisher" :
				 "from a publisher whose trust status could not be verified");
	json_decref(doc);
	kernels__hub_response_free(&r);
	free(path);
	free(org);
	return rc;
}

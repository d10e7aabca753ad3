#include "repo.h"
#include "error.h"
#include "util.h"

#include <stdio.h>
#include <string.h>


static int part_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || s[0] == '-' || s[0] == '.' || s[n - 1] == '-' || s[n - 1] == '.')
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			 c == '-' || c == '_' || c == '.';
		if (!ok)
			return 0;
		if (i > 0 && ((c == '-' && s[i - 1] == '-') || (c == '.' && s[i - 1] == '.')))
			return 0;
	}
	return 1;
}

int kernels__repo_id_check(const char *repo_id)
{
	const char *slash;
	size_t n;

	if (!repo_id || !*repo_id)
		return kernels__error(KERNELS_EINVAL,
				      "repo id is empty; pass it as \"org/name\", e.g. "
				      "\"kernels-community/activation\"");
	n = strlen(repo_id);
	slash = strchr(repo_id, '/');
	if (n > KERNELS__REPO_ID_MAX || !slash || strchr(slash + 1, '/') ||
	    !part_ok(repo_id, (size_t)(slash - repo_id)) || !part_ok(slash + 1, strlen(slash + 1)))
		return kernels__error(KERNELS_EINVAL,
				      "repo id '%.*s' is not valid: use \"org/name\" with one '/', each part made of "
				      "letters, digits, '-', '_' or '.', not starting or ending with '-' or '.', "
				      "without '--' or '..', at most %d characters",
				      200, repo_id, KERNELS__REPO_ID_MAX);
	/* A git URL habit: the Hub's clients refuse it, and it would make a
	 * second cache folder for the same repo. */
	if (n > 4 && !strcasecmp(repo_id + n - 4, ".git"))
		return kernels__error(KERNELS_EINVAL, "repo id '%s' ends with '.git'; use \"%.*s\"", repo_id,
				      (int)(n - 4), repo_id);
	return 0;
}

const char *kernels__repo_url_prefix(kernels__repo_type type)
{
	return type == KERNELS__REPO_KERNEL ? "kernels/" : "";
}

const char *kernels__repo_api_name(kernels__repo_type type)
{
	return type == KERNELS__REPO_KERNEL ? "kernels" : "models";
}

char *kernels__repo_cache_name(kernels__repo_type type, const char *repo_id)
{
	const char *slash = strchr(repo_id, '/');

	return kernels__sprintf("%s--%.*s--%s", kernels__repo_api_name(type),
				(int)(slash - repo_id), repo_id, slash + 1);
}

int kernels__repo_parse(kernels__repo *r, const char *repo_id)
{
	size_t org;
	int rc;

	memset(r, 0, sizeof(*r));
	if ((rc = kernels__repo_id_check(repo_id)) < 0)
		return rc;
	org = (size_t)(strchr(repo_id, '/') - repo_id);
	snprintf(r->id, sizeof(r->id), "%s", repo_id);
	snprintf(r->org, sizeof(r->org), "%.*s", (int)org, repo_id);
	snprintf(r->name, sizeof(r->name), "%s", repo_id + org + 1);
	kernels__repo_set_type(r, KERNELS__REPO_KERNEL);
	return 0;
}

void kernels__repo_set_type(kernels__repo *r, kernels__repo_type type)
{
	r->type = type;
	snprintf(r->cache_name, sizeof(r->cache_name), "%s--%s--%s", kernels__repo_api_name(type), r->org, r->name);
}

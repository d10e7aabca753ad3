/*
 * libFuzzer target over the sigstore bundle reader and verifier
 * (lib/sigstore/: ks_bundle_parse, then ks_verify against the stand-in
 * trusted root the seed corpus was signed with, tests/data/sigstore/fuzz/,
 * so mutations reach the certificate, SCT, checkpoint and proof code).
 *
 * Invariants besides memory errors, leaks and undefined behaviour:
 *  - a failure is ESIGNATURE (or ENOMEM) with a message and nothing kept;
 *  - a parsed bundle has what the verifier relies on: a signing
 *    certificate, a media type version of 1 to 3, a kind and version, a
 *    checkpoint, a proof index below the tree size, an inclusion promise
 *    for v0.1 and a promise or timestamps for later versions;
 *  - the verdict depends on the JSON value, not its spelling: the same
 *    document re-serialised (keys sorted, compact) parses and verifies the
 *    same way; verifying twice gives the same answer.
 */
#include <jansson.h>
#include <libgen.h>

#include "fuzz_common.h"
#include "sigstore/sigstore.h"

static ks_trustroot root;
static char *artifact;
static size_t artifact_size;

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = malloc(1 << 20);
	if (!f || !buf)
		abort();
	*n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char here[4096], *dir, *p;
	size_t n;
	(void)argc;
	(void)argv;

	snprintf(here, sizeof(here), "%s", __FILE__);
	dir = dirname(here); /* tests/fuzz */
	if (asprintf(&p, "%s/../data/sigstore/fuzz/trusted_root.json", dir) < 0)
		abort();
	{
		char *json = slurp(p, &n);
		/* Keys started long ago; "now" is fixed so runs do not depend on the date. */
		if (ks_trustroot_parse(&root, json, n, p, (int64_t)1767225600 * 1000000))
			abort();
		free(json);
	}
	free(p);
	if (asprintf(&p, "%s/../data/sigstore/fuzz/artifact", dir) < 0)
		abort();
	artifact = slurp(p, &artifact_size);
	free(p);
	return 0;
}

static const kernels_signature_policy policy = {
	.version = KERNELS_SIGNATURE_POLICY_VERSION,
	.issuer = "https://token.actions.githubusercontent.com",
	.identity = "https://github.com/huggingface/kernels-community/.github/workflows/build.yaml@refs/heads/main",
};

/* -1: did not parse; 0: parsed, refused; 1: parsed, verified. */
static int verdict(const uint8_t *data, size_t size)
{
	ks_bundle b;
	int rc = ks_bundle_parse(&b, data, size), v;

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_ESIGNATURE || rc == KERNELS_ENOMEM);
		return -1;
	}
	CHECK(b.leaf != NULL);
	CHECK(b.version >= 1 && b.version <= 3);
	CHECK(b.kind && b.kind_version && b.checkpoint);
	CHECK(b.proof_index < b.tree_size);
	CHECK(b.nhashes <= 64);
	CHECK(b.version != 1 || b.has_promise);
	CHECK(b.has_promise || b.ntimestamps);
	rc = ks_verify(&root, &b, artifact, artifact_size, &policy, 1);
	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(rc == KERNELS_ESIGNATURE || rc == KERNELS_ENOMEM);
	}
	v = rc == 0;
	/* Deterministic: the same bundle, the same answer. */
	CHECK((ks_verify(&root, &b, artifact, artifact_size, &policy, 1) == 0) == v);
	ks_bundle_free(&b);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *doc;
	char *again;
	int v = verdict(data, size);

	doc = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!doc) {
		CHECK(v == -1);
		return 0;
	}
	again = json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(doc);
	if (again) {
		CHECK(verdict((const uint8_t *)again, strlen(again)) == v);
		free(again);
	}
	return 0;
}

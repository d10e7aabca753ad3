/* libFuzzer target: the smart-HTTP refs advertisement reader
 * (kernels__git_advertisement_parse, lib/gitls.c), fed the bytes of an
 * info/refs answer as the Hub (or anything at HF_ENDPOINT) may send them.
 * Invariants: no crash, leak or over-read; success gives refs each with a
 * non-empty name free of NUL and newline and a 40-hex id; failure gives a
 * coded message and nothing in the result. */
#include "fuzz_common.h"
#include "gitls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	kernels__git_refs r;
	size_t i;
	int rc = kernels__git_advertisement_parse((const char *)data, size, "http://fuzz/kernels/org/name", &r);

	if (rc < 0) {
		fuzz_check_failure(rc);
		CHECK(r.heads == NULL && r.count == 0);
		return 0;
	}
	for (i = 0; i < r.count; i++) {
		CHECK(r.heads[i].name && r.heads[i].name[0]);
		CHECK(!strchr(r.heads[i].name, '\n'));
		CHECK(strlen(r.heads[i].commit) == 40 && strspn(r.heads[i].commit, "0123456789abcdef") == 40);
	}
	kernels__git_refs_free(&r);
	return 0;
}

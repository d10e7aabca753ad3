/* The smart-HTTP refs advertisement reader (lib/gitls.c): what git's
 * reference discovery sends (protocol v0/v1 pkt-lines) gives every ref and
 * peeled tag; anything cut short, mislengthed or of another protocol
 * version is refused with KERNELS_EPARSE and nothing in the result. The
 * request itself is covered against the local Hub by test_revision. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "kernels.h"
#include "gitls.h"

#define A "1111111111111111111111111111111111111111"
#define B "2222222222222222222222222222222222222222"
#define URL "http://hub/kernels/acme/k"

typedef struct {
	char b[1024];
	size_t n;
} adv;

/* Appends one pkt-line holding `len` bytes of `text` (NULL: a flush-pkt). */
static void pkt(adv *a, const char *text, size_t len)
{
	if (!text) {
		memcpy(a->b + a->n, "0000", 4);
		a->n += 4;
		return;
	}
	snprintf(a->b + a->n, sizeof(a->b) - a->n, "%04zx", len + 4);
	memcpy(a->b + a->n + 4, text, len);
	a->n += 4 + len;
}

#define PKT(a, lit) pkt(a, lit, sizeof(lit) - 1)

static void raw(adv *a, const char *text)
{
	memcpy(a->b + a->n, text, strlen(text));
	a->n += strlen(text);
}

static void head(adv *a)
{
	a->n = 0;
	PKT(a, "# service=git-upload-pack\n");
	pkt(a, NULL, 0);
}

static void test_refs_and_peeled_tags(void **state)
{
	static const char first[] = A " refs/heads/main\0multi_ack side-band-64k ofs-delta\n";
	kernels__git_refs r;
	adv a;
	(void)state;

	head(&a);
	pkt(&a, first, sizeof(first) - 1);
	PKT(&a, B " refs/tags/v1.0.0\n");
	PKT(&a, A " refs/tags/v1.0.0^{}\n");
	PKT(&a, B " refs/heads/v1"); /* a line may lack its newline */
	pkt(&a, NULL, 0);
	assert_int_equal(kernels__git_advertisement_parse(a.b, a.n, URL, &r), 0);
	assert_int_equal(r.count, 4);
	assert_string_equal(r.heads[0].name, "refs/heads/main");
	assert_string_equal(r.heads[0].commit, A);
	assert_string_equal(r.heads[1].name, "refs/tags/v1.0.0");
	assert_string_equal(r.heads[1].commit, B);
	assert_string_equal(r.heads[2].name, "refs/tags/v1.0.0^{}");
	assert_string_equal(r.heads[2].commit, A);
	assert_string_equal(r.heads[3].name, "refs/heads/v1");
	kernels__git_refs_free(&r);
}

static void test_empty_repo_and_version_1(void **state)
{
	static const char caps[] = "0000000000000000000000000000000000000000 capabilities^{}\0ofs-delta\n";
	kernels__git_refs r;
	adv a;
	(void)state;

	head(&a);
	PKT(&a, "version 1\n");
	pkt(&a, caps, sizeof(caps) - 1);
	pkt(&a, NULL, 0);
	assert_int_equal(kernels__git_advertisement_parse(a.b, a.n, URL, &r), 0);
	assert_int_equal(r.count, 0);
	kernels__git_refs_free(&r);
}

static void refused(const adv *a, const char *why)
{
	kernels__git_refs r;

	assert_int_equal(kernels__git_advertisement_parse(a->b, a->n, URL, &r), KERNELS_EPARSE);
	assert_null(r.heads);
	assert_int_equal(r.count, 0);
	if (!strstr(kernels_error_last(), why))
		print_error("%s\n", kernels_error_last());
	assert_non_null(strstr(kernels_error_last(), why));
	assert_non_null(strstr(kernels_error_last(), URL));
}

static void test_malformed_refused(void **state)
{
	adv a;
	(void)state;

	head(&a);
	PKT(&a, A " refs/heads/main\n");
	refused(&a, "no flush-pkt"); /* cut after a ref */
	raw(&a, "00");
	refused(&a, "no flush-pkt");
	head(&a);
	raw(&a, "00zz");
	refused(&a, "4 hex digits");
	head(&a);
	raw(&a, "0fff" A " refs/heads/main\n0000");
	refused(&a, "past the end");
	head(&a);
	raw(&a, "0001");
	refused(&a, "reserved length");
	a.n = 0;
	PKT(&a, A " refs/heads/main\n");
	pkt(&a, NULL, 0);
	refused(&a, "# service=git-upload-pack");
	a.n = 0;
	PKT(&a, "# service=git-upload-pack\n");
	PKT(&a, A " refs/heads/main\n");
	refused(&a, "no flush-pkt after the service line");
	head(&a);
	PKT(&a, "version 2\n");
	pkt(&a, NULL, 0);
	refused(&a, "protocol version");
	head(&a);
	PKT(&a, "1234 refs/heads/main\n");
	pkt(&a, NULL, 0);
	refused(&a, "40-hex id");
	head(&a);
	PKT(&a, A " \n");
	pkt(&a, NULL, 0);
	refused(&a, "<40-hex id> <name>");
	head(&a);
	PKT(&a, A " \0caps\n");
	pkt(&a, NULL, 0);
	refused(&a, "no name");
	a.n = 0;
	refused(&a, "no flush-pkt");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_refs_and_peeled_tags),
		cmocka_unit_test(test_empty_repo_and_version_1),
		cmocka_unit_test(test_malformed_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Sigstore signatures (include/kernels/signature.h, lib/sigstore/), against
 * a stand-in sigstore made at test time by tests/data/sigstore/testsign.py
 * (its own Fulcio CA, CT log and Rekor keys; cryptography, not libkernels):
 *  - the bundle reader refuses malformed bundles, naming what is wrong;
 *  - each broken bundle the signer makes is refused for its own reason,
 *    the valid ones (v0.1 and v0.3) verify, and nothing verifies against
 *    the built-in public-good root;
 *  - end to end through the local Hub: kernels_get of signed variants
 *    loads the valid one and refuses tampered metadata, a tampered module
 *    (the digest, after a valid signature), a wrong signer, an expired
 *    certificate, a broken inclusion proof, and an unsigned variant when
 *    signatures are required; a refused variant's constructor never runs;
 *  - a trusted root is parsed once per content and a root file read again
 *    only when its identity changes: rewritten in place (same size and
 *    modification time) or renamed over, it judges by its new bytes.
 * The same bundles are checked against sigstore-python by
 * tests/python/test_signature_reference.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"
#include "testutil.h"
#include "test_hub.h"
#include "../data/variants/fixture.h"

#define VARIANT "torch211-cxx11-cpu-x86_64-linux"

static struct {
	char *tmp, *keys, *root, *artifact, *cache;
	test_hub *hub;
} W;

static int sign(const char *file, const char *out, const char *args)
{
	return test_system("%s '%s/tests/data/sigstore/testsign.py' sign '%s' '%s' '%s' %s", KERNELS_PYTHON,
			   KERNELS_SOURCE_DIR, W.keys, file, out, args ? args : "");
}

static char *path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *path(const char *fmt, ...)
{
	va_list ap;
	char *p;
	va_start(ap, fmt);
	assert_true(vasprintf(&p, fmt, ap) > 0);
	va_end(ap);
	return p;
}

static void options(kernels_options *o, int mode)
{
	kernels_options_init(o, KERNELS_OPTIONS_VERSION);
	o->signature = mode;
	o->sigstore_trusted_root = W.root;
	if (W.hub) {
		o->endpoint = test_hub_endpoint(W.hub);
		o->cache_dir = W.cache;
		o->offline = 0;
	}
}

static int setup(void **state)
{
	(void)state;
	W.tmp = test_mkdtemp("signature");
	W.keys = path("%s/keys", W.tmp);
	W.root = path("%s/trusted_root.json", W.keys);
	W.artifact = path("%s/artifact.txt", W.tmp);
	W.cache = path("%s/cache", W.tmp);
	if (test_system("%s '%s/tests/data/sigstore/testsign.py' init '%s'", KERNELS_PYTHON, KERNELS_SOURCE_DIR, W.keys))
		return -1;
	return test_write_file(W.artifact, "what was signed\n", 16);
}

static int teardown(void **state)
{
	(void)state;
	test_hub_stop(W.hub);
	test_rmtree(W.tmp);
	free(W.tmp);
	free(W.keys);
	free(W.root);
	free(W.artifact);
	free(W.cache);
	return 0;
}

static int verify_file(const char *bundle_path, const kernels_options *o)
{
	size_t an, bn;
	char *a = test_read_file(W.artifact, &an), *b = test_read_file(bundle_path, &bn);
	int rc;

	assert_non_null(a);
	assert_non_null(b);
	rc = kernels_signature_verify_bundle(a, an, b, bn, NULL, 0, o);
	free(a);
	free(b);
	return rc;
}

static void expect_bundle(const char *json, const char *message)
{
	kernels_options o;
	int rc;

	options(&o, 0);
	rc = kernels_signature_verify_bundle("x", 1, json, strlen(json), NULL, 0, &o);
	assert_int_equal(rc, KERNELS_ESIGNATURE);
	if (!strstr(kernels_error_last(), message))
		fail_msg("expected '%s' in: %s", message, kernels_error_last());
}

/* ---- the bundle reader ------------------------------------------------------ */

/* The signature's base64, read strictly but for line breaks: whole quads,
 * '=' only as the last one or two characters, no bits past the padding. A
 * readable one gets as far as the next check (the bundle has no key). */
static void expect_signature_b64(void)
{
	static const struct {
		const char *b64;
		int ok;
	} cases[] = {
		{ "QUJD", 1 }, { "QUI=", 1 }, { "QQ==", 1 }, { "", 1 }, { "QU\\nJD\\r\\nQQ==\\n", 1 },
		{ "QUJ=", 0 }, { "QR==", 0 }, { "Q===", 0 }, { "====", 0 }, { "QQ=A", 0 }, { "Q=Q=", 0 },
		{ "QQ==QUJD", 0 }, { "QUJ", 0 }, { "QUJDQ", 0 }, { "QU-D", 0 }, { "QU\\u00e9D", 0 }, { "QUJD=", 0 },
		/* four digits at a time where they lie in step: what follows them still counts */
		{ "QUJDQUJDQUI=", 1 }, { "Q\\nUJDQUJDQUJD\\nQUI=", 1 }, { "QUJD-", 0 }, { "QUJDQUJD*", 0 },
		{ "QUJD-UJDQUJD", 0 }, { "QUJDQUJDQQ==QUJD", 0 }, { "QUJDQ\\nUJ\\nDQ=", 0 }, { "QUJDQ\\nUJ\\nDQUI=", 1 },
		{ "QUJDQUJDQUJDQ", 0 },
	};
	kernels_options o;
	size_t i;

	options(&o, 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *json = path("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", "
				  "\"verificationMaterial\": {\"tlogEntries\": []}, \"messageSignature\": "
				  "{\"signature\": \"%s\"}}", cases[i].b64);
		const char *want = cases[i].ok ? "exactly one of publicKey" : "is not valid base64";
		assert_int_equal(kernels_signature_verify_bundle("a", 1, json, strlen(json), NULL, 0, &o),
				 KERNELS_ESIGNATURE);
		if (!strstr(kernels_error_last(), want))
			fail_msg("'%s': expected '%s' in: %s", cases[i].b64, want, kernels_error_last());
		free(json);
	}
}

static void test_malformed_bundles_are_refused_by_name(void **state)
{
	(void)state;
	expect_bundle("{", "bundle: not valid JSON");
	expect_bundle("[]", "bundle: the bundle is not a JSON object");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle+json;version=9\"}",
		      "unsupported media type");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"extra\": 1}",
		      "unknown field 'extra'");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\"}",
		      "verificationMaterial is missing");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"verificationMaterial\": "
		      "{\"tlogEntries\": []}, \"messageSignature\": {\"signature\": \"not base64!\"}}",
		      "messageSignature.signature is not valid base64");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"verificationMaterial\": "
		      "{\"tlogEntries\": []}, \"messageSignature\": {\"signature\": \"QQ==\"}}",
		      "exactly one of publicKey, x509CertificateChain and certificate");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle+json;version=0.1\", \"verificationMaterial\": "
		      "{\"x509CertificateChain\": {\"certificates\": []}, \"tlogEntries\": []}, "
		      "\"messageSignature\": {\"signature\": \"QQ==\"}}",
		      "the certificate chain is empty");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"verificationMaterial\": "
		      "{\"publicKey\": {\"hint\": \"k\"}, \"tlogEntries\": []}, \"messageSignature\": {\"signature\": \"QQ==\"}}",
		      "signed keyless");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"verificationMaterial\": "
		      "{\"certificate\": {\"rawBytes\": \"QQ==\"}, \"tlogEntries\": []}, \"messageSignature\": {\"signature\": \"QQ==\"}}",
		      "not a DER X.509 certificate");
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"verificationMaterial\": "
		      "{\"tlogEntries\": [{\"logIndex\": \"-1\"}]}, \"messageSignature\": {\"signature\": \"QQ==\"}}",
		      "logIndex '-1' is not an unsigned 64-bit number");
	/* base64 is read strictly: bits past the padding must be zero. */
	expect_bundle("{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\", \"verificationMaterial\": "
		      "{\"tlogEntries\": []}, \"messageSignature\": {\"signature\": \"QR==\"}}",
		      "is not valid base64");
	expect_signature_b64();
}

/* A valid bundle whose entry is edited: a second entry, no checkpoint. */
static void test_bundle_shape_is_checked(void **state)
{
	char *b = path("%s/shape.json", W.tmp), *json, *two, *p;
	size_t n;
	(void)state;

	assert_int_equal(sign(W.artifact, b, NULL), 0);
	json = test_read_file(b, &n);
	assert_non_null(json);
	/* "tlogEntries": [E] -> [E, E] */
	p = strstr(json, "\"tlogEntries\": [");
	assert_non_null(p);
	{
		char *start = p + strlen("\"tlogEntries\": ["), *end = strstr(start, "}]");
		size_t elen;
		assert_non_null(end);
		elen = (size_t)(end + 1 - start);
		assert_true(asprintf(&two, "%.*s, %.*s%s", (int)(end + 1 - json), json, (int)elen, start, end + 1) > 0);
	}
	expect_bundle(two, "exactly one transparency log entry");
	free(two);
	p = strstr(json, "\"checkpoint\": {");
	assert_non_null(p);
	memcpy(p, "\"checkpoinX\"", 12);
	expect_bundle(json, "unknown field 'checkpoinX'");
	free(json);
	free(b);
}

/* `json` with the string value of "key" rewritten: a "\n" (escaped) after
 * its first `first` characters and then every `every`, and the character
 * at `at` (when >= 0) replaced by `c`. */
static char *edit_value(const char *json, const char *key, size_t first, size_t every, long at, char c)
{
	char *k = path("\"%s\": \"", key), *out, *o;
	const char *v = strstr(json, k), *end;
	size_t i;

	assert_non_null(v);
	v += strlen(k);
	end = strchr(v, '"');
	assert_non_null(end);
	out = o = malloc(strlen(json) * 2 + 1);
	assert_non_null(out);
	memcpy(o, json, (size_t)(v - json));
	o += v - json;
	for (i = 0; v + i < end; i++) {
		if (i == first || (i > first && every && (i - first) % every == 0)) {
			*o++ = '\\';
			*o++ = 'n';
		}
		*o++ = (long)i == at ? c : v[i];
	}
	strcpy(o, end);
	free(k);
	return out;
}

static void expect_verify(const char *json, const char *message)
{
	kernels_options o;
	size_t an;
	char *a = test_read_file(W.artifact, &an);
	int rc;

	options(&o, 0);
	rc = kernels_signature_verify_bundle(a, an, json, strlen(json), NULL, 0, &o);
	free(a);
	if (!message && rc != 0)
		fail_msg("expected it to verify: %s", kernels_error_last());
	if (message && (rc != KERNELS_ESIGNATURE || !strstr(kernels_error_last(), message)))
		fail_msg("expected '%s' in: %s", message, rc ? kernels_error_last() : "(it verified)");
}

/* base64 is read four characters at a time where it can be: line breaks
 * that put the quads out of step (after the first character, then every
 * 7) still give the same bytes (the whole bundle verifies: the body's hash
 * leads to the log's root, the certificate chains, the signature holds),
 * and a bad character or padding deep inside a long value is still
 * refused. */
static void test_wrapped_base64_reads_as_the_same_bytes(void **state)
{
	char *b = path("%s/wrapped.json", W.tmp), *json, *w1, *w2, *w3, *bad;
	size_t n;
	(void)state;

	assert_int_equal(sign(W.artifact, b, NULL), 0);
	json = test_read_file(b, &n);
	assert_non_null(json);
	expect_verify(json, NULL);
	w1 = edit_value(json, "canonicalizedBody", 1, 7, -1, 0);
	w2 = edit_value(w1, "rawBytes", 3, 76, -1, 0);
	w3 = edit_value(w2, "signature", 2, 5, -1, 0);
	expect_verify(w3, NULL);
	bad = edit_value(json, "canonicalizedBody", 1000000, 0, 601, '-');
	expect_verify(bad, "canonicalizedBody is not valid base64");
	free(bad);
	bad = edit_value(json, "canonicalizedBody", 1000000, 0, 602, '=');
	expect_verify(bad, "canonicalizedBody is not valid base64");
	free(bad);
	bad = edit_value(json, "canonicalizedBody", 1, 7, 603, '-');
	expect_verify(bad, "canonicalizedBody is not valid base64");
	free(bad);
	bad = edit_value(json, "rawBytes", 1000000, 0, 400, '*');
	expect_verify(bad, "rawBytes is not valid base64");
	free(bad);
	free(w1);
	free(w2);
	free(w3);
	free(json);
	free(b);
}

/* ---- the generated cases ---------------------------------------------------- */

static void test_each_broken_bundle_is_refused_for_its_reason(void **state)
{
	static const struct {
		const char *args, *message;
	} cases[] = {
		{ "--case valid", NULL },
		{ "--case valid --media v0.1", NULL },
		{ "--case valid --media v0.2", NULL },
		{ "--case expired", "certificate has expired" },
		{ "--case bad-proof", "inclusion proof does not lead to its root hash" },
		{ "--case bad-checkpoint", "checkpoint's signature is not the log's" },
		{ "--case root-hash-mismatch", "checkpoint's root hash is not the inclusion proof's" },
		{ "--case bad-set", "signed entry timestamp" },
		{ "--case bad-sct", "SCT is not signed by a CT log" },
		{ "--case untrusted-ca", "does not chain to the trusted root's Fulcio CA" },
		{ "--case body-mismatch", "what the log recorded" },
		{ "--case body-spaced", NULL }, /* the body in another JSON form than Rekor's canonical one */
		{ "--case body-spaced-mismatch", "what the log recorded" },
		{ "--case wrong-signature", "signature: not valid for this file" },
		{ "--case digest-mismatch", "message digest is not the SHA-256 of this file" },
		{ "--case no-promise", "neither an inclusion promise nor a signed timestamp" },
		{ "--signer https://github.com/evil/kernels/.github/workflows/build.yaml@refs/heads/main",
		  "build signer URI https://github.com/evil/kernels/" },
	};
	kernels_options o;
	size_t i;
	(void)state;

	options(&o, 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *b = path("%s/case%zu.json", W.tmp, i);
		int rc;
		assert_int_equal(sign(W.artifact, b, cases[i].args), 0);
		rc = verify_file(b, &o);
		if (!cases[i].message) {
			if (rc != 0)
				fail_msg("%s: %s", cases[i].args, kernels_error_last());
		} else {
			assert_int_equal(rc, KERNELS_ESIGNATURE);
			if (!strstr(kernels_error_last(), cases[i].message))
				fail_msg("%s: expected '%s' in: %s", cases[i].args, cases[i].message, kernels_error_last());
		}
		free(b);
	}
}

static void test_policies_decide_who_may_sign(void **state)
{
	const char *ours[] = { "https://github.com/acme/kernels/.github/workflows/release.yaml@refs/heads/main" };
	kernels_signature_policy p = { .version = KERNELS_SIGNATURE_POLICY_VERSION,
				       .issuer = "https://token.actions.githubusercontent.com",
				       .repository = "https://github.com/huggingface/kernels-community",
				       .signer_uris = ours, .signer_uri_count = 1 };
	kernels_signature_policy anyone = { .version = KERNELS_SIGNATURE_POLICY_VERSION,
					    .issuer = "https://token.actions.githubusercontent.com" };
	char *b = path("%s/acme.json", W.tmp), *a, *j;
	size_t an, bn;
	kernels_options o;
	(void)state;

	assert_int_equal(sign(W.artifact, b, "--signer https://github.com/acme/kernels/.github/workflows/release.yaml@refs/heads/main"), 0);
	options(&o, 0);
	/* Not a signer of the default policy... */
	assert_int_equal(verify_file(b, &o), KERNELS_ESIGNATURE);
	/* ...but one the caller adds. */
	o.signature_policies = &p;
	o.signature_policy_count = 1;
	assert_int_equal(verify_file(b, &o), 0);
	/* Explicit policies replace the default ones. */
	a = test_read_file(W.artifact, &an);
	j = test_read_file(b, &bn);
	assert_int_equal(kernels_signature_verify_bundle(a, an, j, bn, &p, 1, NULL), KERNELS_ESIGNATURE);
	assert_non_null(strstr(kernels_error_last(), "Fulcio")); /* built-in root: not ours */
	options(&o, 0);
	assert_int_equal(kernels_signature_verify_bundle(a, an, j, bn, &p, 1, &o), 0);
	/* A policy naming no signer is refused, not treated as "anyone". */
	assert_int_equal(kernels_signature_verify_bundle(a, an, j, bn, &anyone, 1, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "neither an identity nor signer URIs"));
	free(a);
	free(j);
	free(b);
}

static void test_trusted_root_sources(void **state)
{
	char *b = path("%s/root.json", W.tmp), *bad = path("%s/bad_root.json", W.tmp);
	kernels_options o;
	(void)state;

	assert_int_equal(sign(W.artifact, b, NULL), 0);
	/* Built in: sigstore's public-good root, which never signed this. */
	kernels_options_init(&o, KERNELS_OPTIONS_VERSION);
	assert_int_equal(verify_file(b, &o), KERNELS_ESIGNATURE);
	assert_non_null(strstr(kernels_error_last(), "does not chain to the trusted root's Fulcio CA"));
	/* From the environment. */
	setenv("KERNELS_SIGSTORE_TRUSTED_ROOT", W.root, 1);
	assert_int_equal(verify_file(b, &o), 0);
	/* A root that does not exist or read is the caller's error. */
	setenv("KERNELS_SIGSTORE_TRUSTED_ROOT", "/nonexistent/root.json", 1);
	assert_int_equal(verify_file(b, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "KERNELS_SIGSTORE_TRUSTED_ROOT"));
	unsetenv("KERNELS_SIGSTORE_TRUSTED_ROOT");
	assert_int_equal(test_write_file(bad, "{\"mediaType\": \"x\"}", 18), 0);
	o.sigstore_trusted_root = bad;
	assert_int_equal(verify_file(b, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "unsupported media type"));
	free(b);
	free(bad);
}

/* ---- the trusted root, parsed once per content ------------------------------ */

size_t kernels__signature_root_parses(void);

static void *verify_thread(void *arg)
{
	kernels_options o;
	int i;

	options(&o, 0);
	for (i = 0; i < 5; i++)
		if (verify_file(arg, &o) != 0)
			return (void *)1;
	return NULL;
}

/* A root is parsed once per content and shared (across threads too); a
 * file rewritten with other content is parsed again, and going back finds
 * the first parse. */
static void test_trusted_root_is_parsed_once(void **state)
{
	char *b = path("%s/once.json", W.tmp), *keys2 = path("%s/keys2", W.tmp);
	char *root2 = path("%s/trusted_root.json", keys2), *file = path("%s/root-copy.json", W.tmp);
	kernels_options o;
	pthread_t t[8];
	size_t parses;
	void *ret;
	int i;
	(void)state;

	assert_int_equal(sign(W.artifact, b, NULL), 0);
	assert_int_equal(test_system("%s '%s/tests/data/sigstore/testsign.py' init '%s'", KERNELS_PYTHON,
				     KERNELS_SOURCE_DIR, keys2), 0);
	options(&o, 0);
	assert_int_equal(verify_file(b, &o), 0);
	parses = kernels__signature_root_parses();
	assert_int_equal(verify_file(b, &o), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(pthread_create(&t[i], NULL, verify_thread, b), 0);
	for (i = 0; i < 8; i++) {
		assert_int_equal(pthread_join(t[i], &ret), 0);
		assert_null(ret);
	}
	assert_int_equal(kernels__signature_root_parses(), parses);
	/* The same bytes under another name: no parse. */
	o.sigstore_trusted_root = file;
	assert_int_equal(test_system("cp '%s' '%s'", W.root, file), 0);
	assert_int_equal(verify_file(b, &o), 0);
	assert_int_equal(kernels__signature_root_parses(), parses);
	/* Other content at that name: parsed, and it judges. */
	assert_int_equal(test_system("cp '%s' '%s'", root2, file), 0);
	assert_int_equal(verify_file(b, &o), KERNELS_ESIGNATURE);
	assert_int_equal(kernels__signature_root_parses(), parses + 1);
	assert_int_equal(test_system("cp '%s' '%s'", W.root, file), 0);
	assert_int_equal(verify_file(b, &o), 0);
	assert_int_equal(kernels__signature_root_parses(), parses + 1);
	free(b);
	free(keys2);
	free(root2);
	free(file);
}

/* ---- a root file replaced under its name is read again ---------------------- */

size_t kernels__signature_root_reads(void);
void kernels__signature_root_settle_ns(long long ns);

/* `src`'s bytes padded with spaces to `size` (JSON allows them at the end). */
static char *padded(const char *src, size_t size)
{
	size_t n;
	char *data = test_read_file(src, &n), *out;

	assert_non_null(data);
	assert_true(n <= size);
	out = malloc(size);
	assert_non_null(out);
	memcpy(out, data, n);
	memset(out + n, ' ', size - n);
	free(data);
	return out;
}

/* Writes `src` padded to `size` into `dst` through one descriptor (the
 * same inode when dst exists), then gives it modification time `mt`. */
static void write_in_place(const char *src, const char *dst, size_t size, const struct timespec *mt)
{
	char *data = padded(src, size);
	struct timespec times[2] = { *mt, *mt };
	int fd = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, size), (ssize_t)size);
	assert_int_equal(futimens(fd, times), 0);
	assert_int_equal(close(fd), 0);
	free(data);
}

static size_t file_size(const char *p)
{
	struct stat st;
	assert_int_equal(stat(p, &st), 0);
	return (size_t)st.st_size;
}

static void assert_same_size_and_mtime(const struct stat *a, const char *p)
{
	struct stat b;

	assert_int_equal(stat(p, &b), 0);
	assert_int_equal(a->st_size, b.st_size);
	assert_int_equal(a->st_mtim.tv_sec, b.st_mtim.tv_sec);
	assert_int_equal(a->st_mtim.tv_nsec, b.st_mtim.tv_nsec);
}

static char *other_root(void)
{
	char *keys2 = path("%s/keys2", W.tmp), *root2 = path("%s/trusted_root.json", keys2);

	if (access(root2, R_OK) != 0)
		assert_int_equal(test_system("%s '%s/tests/data/sigstore/testsign.py' init '%s'", KERNELS_PYTHON,
					     KERNELS_SOURCE_DIR, keys2), 0);
	free(keys2);
	return root2;
}

/* A size both test roots fit in, so either can be written over the other
 * in place without the file's size telling them apart. */
static size_t in_place_size(const char *root2)
{
	return (file_size(W.root) > file_size(root2) ? file_size(W.root) : file_size(root2)) + 8;
}

/* The common start of the root-file cases: the artifact signed into
 * `bundle`, `o` pointed at `file`, which holds the test root written in
 * place (`size` bytes, modification time `mt`), `first` its stat, and the
 * signature verified against it once, so the file's identity is known. */
static void signed_with_root_file(const char *bundle, const char *file, size_t size, const struct timespec *mt,
				  kernels_options *o, struct stat *first)
{
	assert_int_equal(sign(W.artifact, bundle, NULL), 0);
	options(o, 0);
	o->sigstore_trusted_root = file;
	write_in_place(W.root, file, size, mt);
	assert_int_equal(stat(file, first), 0);
	assert_int_equal(verify_file(bundle, o), 0);
}

/* A root file rewritten in place with other bytes of the same size, its
 * modification time put back, judges by its new content (and again by the
 * old when that comes back): the identity kept for a file includes its
 * inode change time, and a file changed within the last moments is read
 * on every call anyway. */
static void test_trusted_root_rewritten_in_place_is_read_again(void **state)
{
	char *b = path("%s/inplace.sigstore", W.tmp), *file = path("%s/inplace-root.json", W.tmp), *root2 = other_root();
	size_t size = in_place_size(root2), reads;
	struct timespec mt = { 1700000000, 123456789 };
	kernels_options o;
	struct stat first;
	(void)state;

	signed_with_root_file(b, file, size, &mt, &o, &first);
	reads = kernels__signature_root_reads();
	write_in_place(root2, file, size, &mt);
	assert_same_size_and_mtime(&first, file);
	assert_int_equal(verify_file(b, &o), KERNELS_ESIGNATURE);
	assert_non_null(strstr(kernels_error_last(), "Fulcio"));
	assert_true(kernels__signature_root_reads() > reads);
	write_in_place(W.root, file, size, &mt);
	assert_int_equal(verify_file(b, &o), 0);
	free(b);
	free(file);
	free(root2);
}

/* Once a root file's last change lies behind the clock (here: at once), it
 * is not read again while its identity stays; another file renamed over it
 * with the same size and modification time has another inode, and is read
 * and judges. */
static void test_trusted_root_file_identity(void **state)
{
	char *b = path("%s/identity.sigstore", W.tmp), *file = path("%s/identity-root.json", W.tmp);
	char *next = path("%s/identity-root.json.new", W.tmp), *root2 = other_root();
	size_t size = in_place_size(root2), reads;
	struct timespec mt = { 1700000000, 5 };
	kernels_options o;
	struct stat first, now;
	(void)state;

	kernels__signature_root_settle_ns(0);
	signed_with_root_file(b, file, size, &mt, &o, &first);
	reads = kernels__signature_root_reads();
	assert_int_equal(verify_file(b, &o), 0);
	assert_int_equal(verify_file(b, &o), 0);
	assert_int_equal(kernels__signature_root_reads(), reads);
	write_in_place(root2, next, size, &mt);
	assert_int_equal(rename(next, file), 0);
	assert_same_size_and_mtime(&first, file);
	assert_int_equal(stat(file, &now), 0);
	assert_true(now.st_ino != first.st_ino);
	assert_int_equal(verify_file(b, &o), KERNELS_ESIGNATURE);
	assert_int_equal(kernels__signature_root_reads(), reads + 1);
	kernels__signature_root_settle_ns(-1);
	free(b);
	free(file);
	free(next);
	free(root2);
}

static void test_bad_options_are_refused(void **state)
{
	kernels_options o;
	(void)state;

	options(&o, 7);
	assert_int_equal(kernels_signature_verify_bundle("x", 1, "{}", 2, NULL, 0, &o), KERNELS_EINVAL);
	options(&o, 0);
	setenv("KERNELS_SIGNATURE", "sometimes", 1);
	assert_int_equal(kernels_signature_verify_bundle("x", 1, "{}", 2, NULL, 0, &o), KERNELS_EINVAL);
	assert_non_null(strstr(kernels_error_last(), "KERNELS_SIGNATURE"));
	unsetenv("KERNELS_SIGNATURE");
	o.signature_policy_count = 1;
	assert_int_equal(kernels_signature_verify_bundle("x", 1, "{}", 2, NULL, 0, &o), KERNELS_EINVAL);
	assert_string_equal(kernels_strerror(KERNELS_ESIGNATURE), "signature missing or invalid");
}

/* ---- variants, locally and through the Hub ------------------------------------ */

/* {W.tmp}/{name}/build/VARIANT: a module whose constructor writes
 * {W.tmp}/{name}.ran, metadata.json, and (unless sign_args is NULL) its
 * signature. Returns the repo's source folder. */
static char *signed_variant(const char *name, int answer, const char *sign_args, char **marker)
{
	char *base = path("%s/%s/build", W.tmp, name), *dir, *meta, *bundle;

	*marker = path("%s/%s.ran", W.tmp, name);
	dir = fx_variant(base, VARIANT, name, answer, *marker);
	assert_non_null(dir);
	meta = path("%s/metadata.json", dir);
	bundle = path("%s/metadata.json.sigstore", dir);
	if (sign_args)
		assert_int_equal(sign(meta, bundle, sign_args), 0);
	free(meta);
	free(bundle);
	free(dir);
	*strrchr(base, '/') = 0;
	return base;
}

static void test_verify_variant_statuses(void **state)
{
	kernels_signature_status st;
	kernels_options o;
	char *marker, *src = signed_variant("local", 1, "", &marker), *dir = path("%s/build/%s", src, VARIANT), *so;
	(void)state;

	options(&o, 0);
	assert_int_equal(kernels_signature_verify_variant(&st, dir, &o), 0);
	assert_int_equal(st, KERNELS_SIGNATURE_VALID);
	/* The module changed after signing: the signature holds, the digest not. */
	so = path("%s/_local_1.abi3.so", dir);
	assert_int_equal(fx_build_so(so, 2, marker, NULL, NULL), 0);
	assert_int_equal(kernels_signature_verify_variant(&st, dir, &o), KERNELS_EINTEGRITY);
	assert_int_equal(st, KERNELS_SIGNATURE_DIGEST_MISMATCH);
	/* Signed metadata without a digest covers nothing. */
	assert_int_equal(fx_metadata(dir, "--name local --id _local_1 --omit digest"), 0);
	{
		char *meta = path("%s/metadata.json", dir), *bundle = path("%s/metadata.json.sigstore", dir);
		assert_int_equal(sign(meta, bundle, NULL), 0);
		free(meta);
		free(bundle);
	}
	assert_int_equal(kernels_signature_verify_variant(&st, dir, &o), KERNELS_ESIGNATURE);
	assert_int_equal(st, KERNELS_SIGNATURE_DIGEST_MISSING);
	assert_int_equal(test_system("rm '%s/metadata.json.sigstore'", dir), 0);
	assert_int_equal(kernels_signature_verify_variant(&st, dir, &o), KERNELS_ESIGNATURE);
	assert_int_equal(st, KERNELS_SIGNATURE_BUNDLE_MISSING);
	{
		char *bundle = path("%s/metadata.json.sigstore", dir);
		assert_int_equal(test_write_file(bundle, "{}", 2), 0);
		free(bundle);
	}
	assert_int_equal(kernels_signature_verify_variant(&st, dir, &o), KERNELS_ESIGNATURE);
	assert_int_equal(st, KERNELS_SIGNATURE_BUNDLE_INVALID);
	assert_false(test_exists(marker)); /* verifying never loads */
	free(so);
	free(dir);
	free(src);
	free(marker);
}

typedef struct {
	const char *repo;      /* acme/<name> */
	const char *sign;      /* testsign.py arguments; NULL: unsigned */
	int mode;              /* KERNELS_SIGNATURE_* */
	int tamper;            /* 1: metadata.json after signing, 2: the module after signing */
	int expect;            /* kernels_get's result */
	const char *message;
} e2e_case;

static void run_e2e(const e2e_case *c, int answer)
{
	const char *name = strchr(c->repo, '/') + 1;
	char *marker, *src = signed_variant(name, answer, c->sign, &marker);
	char *dir = path("%s/build/%s", src, VARIANT);
	kernels_kernel *k = NULL;
	kernels_system sys = { 0 };
	kernels_options o;
	int rc;

	if (c->tamper == 1) {
		/* Still valid JSON, still the same digest: only the bytes differ. */
		assert_int_equal(test_system("sed -i 's/\"name\"/ \"name\"/' '%s/metadata.json'", dir), 0);
	} else if (c->tamper == 2) {
		char *so = path("%s/_%s_%d.abi3.so", dir, name, answer);
		assert_int_equal(fx_build_so(so, 666, marker, NULL, NULL), 0);
		free(so);
	}
	assert_int_equal(test_hub_publish(W.hub, "--repo %s --dir '%s' --branch main --tag v1.0.0 --trusted", c->repo, src), 0);
	sys.torch_version = 211;
	sys.torch_cxx11_abi = 1;
	sys.tvm_ffi_version = -1;
	sys.backend = "cpu";
	sys.cpu = "x86_64";
	sys.os = "linux";
	sys.no_gpu = 1;
	options(&o, c->mode);
	o.system = &sys;
	rc = kernels_get(&k, c->repo, "v1.0.0", &o);
	if (rc != c->expect)
		fail_msg("%s: kernels_get gave %d, expected %d: %s", c->repo, rc, c->expect, kernels_error_last());
	if (c->expect == 0) {
		int (*fn)(void) = (int (*)(void))kernels_symbol(k, "kernel_answer");
		assert_non_null(fn);
		assert_int_equal(fn(), answer);
		assert_true(test_exists(marker));
		kernels_kernel_close(k);
	} else {
		assert_null(k);
		if (c->message && !strstr(kernels_error_last(), c->message))
			fail_msg("%s: expected '%s' in: %s", c->repo, c->message, kernels_error_last());
		if (test_exists(marker))
			fail_msg("%s: refused, yet its constructor ran", c->repo);
	}
	free(dir);
	free(src);
	free(marker);
}

static void test_end_to_end_through_the_hub(void **state)
{
	static const e2e_case cases[] = {
		{ "acme/sigvalid", "", KERNELS_SIGNATURE_REQUIRE, 0, 0, NULL },
		{ "acme/sigdefault", "", 0, 0, 0, NULL },
		{ "acme/sigmeta", "", 0, 1, KERNELS_ESIGNATURE, "message digest is not the SHA-256 of this file" },
		{ "acme/sigmodule", "", KERNELS_SIGNATURE_REQUIRE, 2, KERNELS_EINTEGRITY, "hash mismatch: _sigmodule_" },
		{ "acme/sigsigner", "--signer https://github.com/evil/kernels/.github/workflows/build.yaml@refs/heads/main",
		  0, 0, KERNELS_ESIGNATURE, "not one a policy accepts" },
		{ "acme/sigexpired", "--case expired", 0, 0, KERNELS_ESIGNATURE, "certificate has expired" },
		{ "acme/sigproof", "--case bad-proof", KERNELS_SIGNATURE_REQUIRE, 0, KERNELS_ESIGNATURE,
		  "inclusion proof does not lead to its root hash" },
		{ "acme/signone", NULL, KERNELS_SIGNATURE_REQUIRE, 0, KERNELS_ESIGNATURE, "has no signature" },
		{ "acme/signoneok", NULL, KERNELS_SIGNATURE_IF_PRESENT, 0, 0, NULL },
		{ "acme/sigoff", "--case bad-proof", KERNELS_SIGNATURE_OFF, 0, 0, NULL },
	};
	size_t i;
	(void)state;

	W.hub = test_hub_start();
	assert_non_null(W.hub);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_e2e(&cases[i], 100 + (int)i);
}

static int receipt_said, files_receipt_said;
static void count_receipt(kernels_log_level level, const char *msg, void *payload)
{
	(void)payload;
	receipt_said += level == KERNELS_LOG_DEBUG && strstr(msg, "signature verified before, unchanged since") != NULL;
	files_receipt_said += level == KERNELS_LOG_DEBUG && strstr(msg, ": verified before, unchanged since") != NULL;
}

static int get_as(const char *repo, const char *revision, int mode, kernels_kernel **k)
{
	kernels_system sys = { .torch_version = 211, .torch_cxx11_abi = 1, .tvm_ffi_version = -1, .backend = "cpu",
			       .cpu = "x86_64", .os = "linux", .no_gpu = 1 };
	kernels_options o;

	options(&o, mode);
	o.system = &sys;
	*k = NULL;
	return kernels_get(k, repo, revision, &o);
}

/* A variant one call loaded with no signature check (acme/sigoff, whose
 * bundle's proof is broken) is not handed to a later call of the process
 * that requires or checks signatures, by name or by commit (the memo),
 * while the first still holds it; a call as lax as the first still gets
 * it. A valid one (acme/sigvalid) loaded unchecked passes the later check. */
static void test_loaded_variant_checked_for_a_stricter_call(void **state)
{
	static const int strict[] = { KERNELS_SIGNATURE_REQUIRE, KERNELS_SIGNATURE_IF_PRESENT };
	kernels_kernel *lax = NULL, *by_commit = NULL, *again = NULL;
	char commit[41];
	size_t i;
	(void)state;

	assert_int_equal(get_as("acme/sigoff", "v1.0.0", KERNELS_SIGNATURE_OFF, &lax), 0);
	snprintf(commit, sizeof(commit), "%s", kernels_kernel_commit(lax));
	assert_int_equal(get_as("acme/sigoff", commit, KERNELS_SIGNATURE_OFF, &by_commit), 0);
	assert_ptr_equal(by_commit, lax);
	for (i = 0; i < sizeof(strict) / sizeof(strict[0]); i++) {
		assert_int_equal(get_as("acme/sigoff", "v1.0.0", strict[i], &again), KERNELS_ESIGNATURE);
		assert_null(again);
		if (!strstr(kernels_error_last(), "inclusion proof"))
			fail_msg("the refusal does not say why: %s", kernels_error_last());
		assert_int_equal(get_as("acme/sigoff", commit, strict[i], &again), KERNELS_ESIGNATURE);
		assert_null(again);
	}
	assert_int_equal(get_as("acme/sigoff", commit, KERNELS_SIGNATURE_OFF, &again), 0);
	assert_ptr_equal(again, lax);
	kernels_kernel_close(again);
	kernels_kernel_close(by_commit);
	assert_int_equal(kernels_kernel_refcount(lax), 1);
	kernels_kernel_close(lax);

	assert_int_equal(get_as("acme/sigvalid", "v1.0.0", KERNELS_SIGNATURE_OFF, &lax), 0);
	assert_int_equal(get_as("acme/sigvalid", "v1.0.0", KERNELS_SIGNATURE_REQUIRE, &again), 0);
	assert_ptr_equal(again, lax);
	kernels_kernel_close(again);
	kernels_kernel_close(lax);
}

/* The same for what such a variant depends on: acme/sigtop, validly
 * signed, depends on acme/sigbase, unsigned. Loaded unchecked, it is not
 * handed to a call that requires signatures (sigbase has none), and is to
 * one that checks them where present. */
static void test_stricter_call_checks_dependencies(void **state)
{
	char *m1, *m2, *base = signed_variant("sigbase", 130, NULL, &m1), *top = signed_variant("sigtop", 131, NULL, &m2);
	char *dir = path("%s/build/%s", top, VARIANT), *meta = path("%s/metadata.json", dir);
	char *bundle = path("%s/metadata.json.sigstore", dir);
	kernels_kernel *lax = NULL, *again = NULL;
	(void)state;

	assert_int_equal(fx_metadata(dir, "--name sigtop --id _sigtop_131 --backend cpu --set "
				     "'kernel-depends=[{\"repo-id\": \"acme/sigbase\", \"version\": 1}]'"), 0);
	assert_int_equal(sign(meta, bundle, ""), 0);
	assert_int_equal(test_hub_publish(W.hub, "--repo acme/sigbase --dir '%s' --branch main --branch v1 --tag v1.0.0 "
					  "--trusted", base), 0);
	assert_int_equal(test_hub_publish(W.hub, "--repo acme/sigtop --dir '%s' --branch main --branch v1 --tag v1.0.0 "
					  "--trusted", top), 0);
	assert_int_equal(get_as("acme/sigtop", "v1.0.0", KERNELS_SIGNATURE_OFF, &lax), 0);
	assert_int_equal(kernels_kernel_dependency_count(lax), 1);
	assert_int_equal(get_as("acme/sigtop", "v1.0.0", KERNELS_SIGNATURE_REQUIRE, &again), KERNELS_ESIGNATURE);
	assert_null(again);
	if (!strstr(kernels_error_last(), "sigbase"))
		fail_msg("the refusal does not name the dependency: %s", kernels_error_last());
	assert_int_equal(get_as("acme/sigtop", "v1.0.0", KERNELS_SIGNATURE_IF_PRESENT, &again), 0);
	assert_ptr_equal(again, lax);
	kernels_kernel_close(again);
	kernels_kernel_close(lax);
	free(bundle);
	free(meta);
	free(dir);
	free(top);
	free(base);
	free(m1);
	free(m2);
}

static int get_signed(int mode, int offline)
{
	kernels_system sys = { .torch_version = 211, .torch_cxx11_abi = 1, .tvm_ffi_version = -1, .backend = "cpu",
			       .cpu = "x86_64", .os = "linux", .no_gpu = 1 };
	kernels_kernel *k = NULL;
	kernels_options o;
	int rc;

	options(&o, mode);
	o.system = &sys;
	o.offline = offline;
	o.log_cb = count_receipt;
	receipt_said = files_receipt_said = 0;
	rc = kernels_get(&k, "acme/sigvalid", "v1.0.0", &o);
	kernels_kernel_close(k);
	return rc;
}

static int get_signed_in(int mode)
{
	return get_signed(mode, 1);
}

static int get_signed_in_online(int mode)
{
	return get_signed(mode, 0);
}

static int get_signed_again(void)
{
	return get_signed_in(KERNELS_SIGNATURE_REQUIRE);
}

/* The one path `pattern` matches (malloc'ed). */
static char *the_path(const char *pattern)
{
	glob_t g;
	char *p;

	assert_int_equal(glob(pattern, 0, NULL, &g), 0);
	assert_int_equal(g.gl_pathc, 1);
	p = strdup(g.gl_pathv[0]);
	globfree(&g);
	return p;
}

/* The files receipt of acme/sigvalid made to vouch for `module` as it is now. */
static void forge_receipt(const char *receipt, const char *module)
{
	json_t *doc = json_load_file(receipt, 0, NULL), *files = json_object_get(doc, "files"), *id;
	const char *name = strrchr(module, '/') + 1;
	struct stat st;

	assert_non_null(json_object_get(files, name));
	assert_int_equal(stat(module, &st), 0);
	id = json_pack("{s:I, s:I, s:I, s:I, s:I}", "dev", (json_int_t)st.st_dev, "ino", (json_int_t)st.st_ino, "size",
		       (json_int_t)st.st_size, "mtime_ns", (json_int_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec,
		       "ctime_ns", (json_int_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
	assert_int_equal(json_object_set_new(files, name, id), 0);
	assert_int_equal(json_dump_file(doc, receipt, JSON_COMPACT), 0);
	json_decref(doc);
}

/* Where signatures are required, a receipt another user of a shared cache
 * wrote is not read: that user could swap the module and vouch for it, and
 * the load would skip the digest the signature covers. Here a byte is
 * appended to the module and the files receipt forged for it: refused when
 * uid 65534 wrote it, taken when this user did (who could as well write the
 * module). Elsewhere anyone's receipt is read (no hashing again), since
 * the other modes leave a writer of the cache other ways around. */
static void test_foreign_receipt_under_require(void **state)
{
	char *pattern, *module, *receipt;
	(void)state;

	if (getuid() != 0)
		skip(); /* no other user to give the receipt to */
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(files_receipt_said, 1);
	pattern = path("%s/kernels--acme--sigvalid/.libkernels/receipts/*/build/%s.json", W.cache, VARIANT);
	receipt = the_path(pattern);
	free(pattern);
	pattern = path("%s/kernels--acme--sigvalid/snapshots/*/build/%s/_sigvalid_100.abi3.so", W.cache, VARIANT);
	module = the_path(pattern);
	free(pattern);
	/* An honest receipt of another user: read in the default mode, not under require. */
	assert_int_equal(chown(receipt, 65534, 65534), 0);
	assert_int_equal(get_signed_in(KERNELS_SIGNATURE_IF_PRESENT), 0);
	assert_int_equal(files_receipt_said, 1);
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(files_receipt_said, 0); /* hashed, and this user's receipt written */
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(files_receipt_said, 1);
	/* The module swapped (a byte appended) and a receipt forged for it. */
	assert_int_equal(test_system("b=$(readlink -f '%s') && cp -p \"$b\" '%s/module.orig' && chmod u+w \"$b\" && "
				     "printf 'Z' >> \"$b\"", module, W.tmp), 0);
	forge_receipt(receipt, module);
	assert_int_equal(chown(receipt, 65534, 65534), 0);
	assert_int_equal(get_signed_again(), KERNELS_EINTEGRITY);
	assert_int_equal(chown(receipt, 0, 0), 0);
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(files_receipt_said, 1);
	assert_int_equal(test_system("b=$(readlink -f '%s') && mv -f '%s/module.orig' \"$b\"", module, W.tmp), 0);
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(files_receipt_said, 0);
	free(module);
	free(receipt);
}

/* A cache below a folder named "snapshots" (/srv/snapshots/hf): the
 * signature's receipt goes in the repo folder's .libkernels/, as anywhere,
 * not in a folder above the cache, and serves the next load. */
static void test_signature_receipt_in_a_cache_under_snapshots(void **state)
{
	char *normal = W.cache, *above = path("%s/snapshots", W.tmp), *receipt;
	(void)state;

	W.cache = path("%s/cache", above);
	assert_int_equal(test_system("mkdir -p '%s'", W.cache), 0);
	assert_int_equal(get_signed_in_online(KERNELS_SIGNATURE_REQUIRE), 0);
	receipt = path("%s/kernels--acme--sigvalid/.libkernels/receipts/*/build/%s.signature.json", W.cache, VARIANT);
	free(the_path(receipt));
	assert_int_equal(test_system("test ! -e '%s/.libkernels' && test ! -e '%s/.libkernels'", W.tmp, above), 0);
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(receipt_said, 1);
	test_rmtree(above);
	free(W.cache);
	free(above);
	free(receipt);
	W.cache = normal;
}

/* The signature check is remembered in a receipt: a later load with the
 * same root and policies skips it while both files keep their identity;
 * a touched bundle is checked again, a rewritten one refused. */
static void test_signature_receipt(void **state)
{
	char *bundle;
	(void)state;

	assert_int_equal(get_signed_again(), 0); /* the end-to-end get left the receipt */
	assert_int_equal(receipt_said, 1);
	bundle = path("%s/kernels--acme--sigvalid/snapshots/*/build/%s/metadata.json.sigstore", W.cache, VARIANT);
	assert_int_equal(test_system("touch \"$(readlink -f %s)\"", bundle), 0);
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(receipt_said, 0);
	assert_int_equal(get_signed_again(), 0);
	assert_int_equal(receipt_said, 1);
	assert_int_equal(test_system("b=\"$(readlink -f %s)\" && chmod u+w \"$b\" && printf '{}' > \"$b\"", bundle), 0);
	assert_int_equal(get_signed_again(), KERNELS_ESIGNATURE);
	assert_int_equal(receipt_said, 0);
	free(bundle);
}

static void test_require_from_the_environment(void **state)
{
	char *marker, *src = signed_variant("envreq", 9, NULL, &marker), *dir = path("%s/build/%s", src, VARIANT);
	kernels_kernel *k = NULL;
	(void)state;

	setenv("KERNELS_SIGNATURE", "require", 1);
	assert_int_equal(kernels_load_local(&k, dir, NULL), KERNELS_ESIGNATURE);
	unsetenv("KERNELS_SIGNATURE");
	assert_false(test_exists(marker));
	assert_int_equal(kernels_load_local(&k, dir, NULL), 0);
	assert_true(test_exists(marker));
	kernels_kernel_close(k);
	free(dir);
	free(src);
	free(marker);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_malformed_bundles_are_refused_by_name),
		cmocka_unit_test(test_bundle_shape_is_checked),
		cmocka_unit_test(test_wrapped_base64_reads_as_the_same_bytes),
		cmocka_unit_test(test_each_broken_bundle_is_refused_for_its_reason),
		cmocka_unit_test(test_policies_decide_who_may_sign),
		cmocka_unit_test(test_trusted_root_sources),
		cmocka_unit_test(test_trusted_root_is_parsed_once),
		cmocka_unit_test(test_trusted_root_rewritten_in_place_is_read_again),
		cmocka_unit_test(test_trusted_root_file_identity),
		cmocka_unit_test(test_bad_options_are_refused),
		cmocka_unit_test(test_verify_variant_statuses),
		cmocka_unit_test(test_require_from_the_environment),
		cmocka_unit_test(test_end_to_end_through_the_hub),
		cmocka_unit_test(test_loaded_variant_checked_for_a_stricter_call),
		cmocka_unit_test(test_stricter_call_checks_dependencies),
		cmocka_unit_test(test_foreign_receipt_under_require),
		cmocka_unit_test(test_signature_receipt),
		cmocka_unit_test(test_signature_receipt_in_a_cache_under_snapshots),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}

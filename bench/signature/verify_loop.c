/* N verifications of one bundle through kernels_signature_verify_bundle, for
 * callgrind: instructions per verification are the difference between two
 * runs (N=61 and N=11, divided by 50), which leaves out start-up and the
 * trusted root's one parse. See bench/results/signature.txt for the commands.
 *
 *   verify_loop ARTIFACT BUNDLE ROOT|- N
 *
 * ROOT "-" uses the built-in public-good root. The policy is the public
 * conformance suite's signer. Prints the least and the median wall time of
 * one call (the first, which parses the root, left out). Exits 1 when a
 * verification fails. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels/common.h"
#include "kernels/options.h"
#include "kernels/signature.h"

static char *slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long len;

	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(p = malloc((size_t)len + 1)) || fread(p, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "verify_loop: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*n = (size_t)len;
	return p;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	kernels_signature_policy pol = KERNELS_SIGNATURE_POLICY_INIT;
	kernels_options opts;
	size_t an, bn;
	char *artifact, *bundle;
	double *ms;
	long i, n;

	if (argc != 5) {
		fprintf(stderr, "usage: verify_loop ARTIFACT BUNDLE ROOT|- N\n");
		return 2;
	}
	artifact = slurp(argv[1], &an);
	bundle = slurp(argv[2], &bn);
	n = atol(argv[4]);
	if (n < 2 || !(ms = calloc((size_t)n, sizeof(*ms))))
		return 2;
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	if (argv[3][0] != '-')
		opts.sigstore_trusted_root = argv[3];
	pol.issuer = "https://token.actions.githubusercontent.com";
	pol.identity = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"
		       "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
	for (i = 0; i < n; i++) {
		double t0 = now_ms();
		if (kernels_signature_verify_bundle(artifact, an, bundle, bn, &pol, 1, &opts) != 0) {
			fprintf(stderr, "verify_loop: %s\n", kernels_error_last());
			return 1;
		}
		ms[i] = now_ms() - t0;
	}
	qsort(ms + 1, (size_t)n - 1, sizeof(*ms), by_value);
	printf("%ld calls: min %.3f ms, median %.3f ms (first %.3f ms)\n", n - 1, ms[1], ms[1 + (n - 1) / 2], ms[0]);
	free(ms);
	free(artifact);
	free(bundle);
	return 0;
}

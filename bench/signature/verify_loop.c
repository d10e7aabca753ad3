/* N verifications of one bundle through kernels_signature_verify_bundle, for
 * callgrind: instructions per verification are the difference between two
 * runs (N=61 and N=11, divided by 50), which leaves out start-up and the
 * trusted root's one parse. See bench/results/signature.txt for the commands.
 *
 *   verify_loop ARTIFACT BUNDLE ROOT|- N
 *
 * ROOT "-" uses the built-in public-good root. The policy is the public
 * conformance suite's signer. Exits 1 when a verification fails. */
#include <stdio.h>
#include <stdlib.h>

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

int main(int argc, char **argv)
{
	kernels_signature_policy pol = KERNELS_SIGNATURE_POLICY_INIT;
	kernels_options opts;
	size_t an, bn;
	char *artifact, *bundle;
	long i, n;

	if (argc != 5) {
		fprintf(stderr, "usage: verify_loop ARTIFACT BUNDLE ROOT|- N\n");
		return 2;
	}
	artifact = slurp(argv[1], &an);
	bundle = slurp(argv[2], &bn);
	n = atol(argv[4]);
	kernels_options_init(&opts, KERNELS_OPTIONS_VERSION);
	if (argv[3][0] != '-')
		opts.sigstore_trusted_root = argv[3];
	pol.issuer = "https://token.actions.githubusercontent.com";
	pol.identity = "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/"
		       "workflows/extremely-dangerous-oidc-beacon.yml@refs/heads/main";
	for (i = 0; i < n; i++)
		if (kernels_signature_verify_bundle(artifact, an, bundle, bn, &pol, 1, &opts) != 0) {
			fprintf(stderr, "verify_loop: %s\n", kernels_error_last());
			return 1;
		}
	free(artifact);
	free(bundle);
	return 0;
}

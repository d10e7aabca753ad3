/*
 * libkernels: sigstore signatures of kernel variants, verified offline.
 *
 * kernel-builder signs each variant's metadata.json and writes the sigstore
 * bundle next to it as metadata.json.sigstore. metadata.json carries the
 * digest of every file of the variant, so a valid signature over its exact
 * bytes vouches for the whole variant. The verifier here checks a bundle
 * (media types v0.1 to v0.3) against a sigstore trusted root with no
 * network: the signing certificate chains to the root's Fulcio CA at the
 * time the transparency log (or a timestamp authority) saw the signature;
 * its embedded SCT is signed by one of the root's CT logs; the Rekor entry
 * matches the signature, the certificate and the artifact's digest, sits in
 * the log (RFC 6962 inclusion proof to a checkpoint the log signed) and,
 * where the bundle has one, carries a valid signed entry timestamp; the
 * certificate names an identity a policy accepts; and the signature is
 * valid over the artifact's bytes. What it proves, and what it does not:
 * docs/threat-model.md.
 *
 * The trusted root is sigstore's public-good one, built into the library
 * (lib/sigstore/trusted_root.json; its source and date: lib/sigstore/README.md), unless
 * kernels_options.sigstore_trusted_root or $KERNELS_SIGSTORE_TRUSTED_ROOT
 * names another trusted_root.json (a private sigstore deployment, tests).
 *
 * The default policy is the Python `kernels` 0.17 package's
 * DEFAULT_POLICIES: issued through GitHub Actions
 * (https://token.actions.githubusercontent.com, both issuer extensions),
 * source repository https://github.com/huggingface/kernels-community, built
 * by one of its build workflows on refs/heads/main. Callers add policies
 * with kernels_options.signature_policies; a certificate passes when any
 * policy accepts it.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_SIGNATURE_H
#define KERNELS_SIGNATURE_H

#include "common.h"
#include "options.h"

#ifdef __cplusplus
extern "C" {
#endif

/** When kernels_get and the other loading calls check signatures. */
typedef enum {
	/** $KERNELS_SIGNATURE (off, if-present, require), else if-present. */
	KERNELS_SIGNATURE_DEFAULT = 0,
	/** Never look at metadata.json.sigstore. */
	KERNELS_SIGNATURE_OFF = 1,
	/** A variant with a bundle loads only when the bundle is valid; one
	 *  without loads as before (digest checked as always). */
	KERNELS_SIGNATURE_IF_PRESENT = 2,
	/** No variant loads without a valid bundle and a signed digest. */
	KERNELS_SIGNATURE_REQUIRE = 3
} kernels_signature_mode;

/**
 * Who may have signed: a certificate passes a policy when its OIDC issuer
 * extension (1.3.6.1.4.1.57264.1.1) equals `issuer` and every other field
 * that is set matches. `issuer` and at least one of `identity` and
 * `signer_uris` are required (a policy naming no signer would accept any
 * sigstore user). All strings are borrowed. Versioned: every element of
 * an array has the `version` of the first, which says how large each is
 * (KERNELS_SIGNATURE_POLICY_INIT; docs/api-stability.md).
 */
#define KERNELS_SIGNATURE_POLICY_VERSION 1
/** A policy with its version set and nothing else: fill in the rest. */
#define KERNELS_SIGNATURE_POLICY_INIT { KERNELS_SIGNATURE_POLICY_VERSION, NULL, NULL, NULL, NULL, 0 }

typedef struct kernels_signature_policy {
	unsigned int version;   /**< KERNELS_SIGNATURE_POLICY_VERSION */
	/** OIDC issuer, e.g. "https://token.actions.githubusercontent.com".
	 *  The v2 issuer extension (…1.8) must equal it too when the
	 *  certificate has one, and must be present when `repository` or
	 *  `signer_uris` is set (Fulcio writes both for GitHub Actions). */
	const char *issuer;
	/** A subject alternative name of the certificate (URI, e-mail, or
	 *  sigstore's other name), compared exactly; NULL: any. */
	const char *identity;
	/** Source repository URI extension (…1.12), e.g.
	 *  "https://github.com/acme/kernels"; NULL: any. */
	const char *repository;
	/** Build signer URI extension (…1.9) must be one of these, e.g.
	 *  "https://github.com/acme/kernels/.github/workflows/build.yaml@refs/heads/main";
	 *  NULL/0: any. */
	const char *const *signer_uris;
	size_t signer_uri_count;
} kernels_signature_policy;

/** What kernels_signature_verify_variant found, as Python kernels 0.17's
 *  VerificationResult names it. */
typedef enum {
	KERNELS_SIGNATURE_VALID = 0,           /**< signed by an accepted signer, files match the digest */
	KERNELS_SIGNATURE_BUNDLE_MISSING = 1,  /**< no metadata.json.sigstore */
	KERNELS_SIGNATURE_BUNDLE_INVALID = 2,  /**< the bundle is malformed or of an unknown kind */
	KERNELS_SIGNATURE_METADATA_MISSING = 3,/**< no metadata.json */
	KERNELS_SIGNATURE_FAILED = 4,          /**< the signature, certificate, log entry or policy failed */
	KERNELS_SIGNATURE_METADATA_INVALID = 5,/**< signed, but metadata.json does not parse */
	KERNELS_SIGNATURE_DIGEST_MISSING = 6,  /**< signed, but metadata.json has no digest */
	KERNELS_SIGNATURE_DIGEST_MISMATCH = 7  /**< signed, but the files do not match the digest */
} kernels_signature_status;

/**
 * Verifies the variant folder `variant_dir` as `kernels verify-signature`
 * does: the bundle over metadata.json's exact bytes (before they are
 * parsed), with the trusted root and policies of `opts` (NULL: defaults;
 * kernels_options.signature is not consulted: this call always verifies),
 * then every file against metadata.json's digest. `*status` (may be NULL)
 * tells which step failed. Returns 0 when valid; KERNELS_ESIGNATURE, or
 * KERNELS_EINTEGRITY for files that do not match the digest, with a message
 * naming what failed; KERNELS_EINVAL for bad arguments or options.
 */
KERNELS_EXTERN(int) kernels_signature_verify_variant(kernels_signature_status *status, const char *variant_dir,
						     const kernels_options *opts);

/**
 * Verifies a sigstore bundle (`bundle`, `bundle_size` bytes of JSON) over
 * `artifact` (`artifact_size` bytes), offline, with the trusted root of
 * `opts` (NULL: the built-in public-good root, or
 * $KERNELS_SIGSTORE_TRUSTED_ROOT). `policies` (`count` of them) replace the
 * default and the options' policies when given; NULL uses those. Returns 0
 * when valid, KERNELS_ESIGNATURE with the reason otherwise, KERNELS_EINVAL
 * for bad arguments or an unusable trusted root.
 */
KERNELS_EXTERN(int) kernels_signature_verify_bundle(const void *artifact, size_t artifact_size, const void *bundle,
						    size_t bundle_size, const kernels_signature_policy *policies,
						    size_t count, const kernels_options *opts);

#ifdef __cplusplus
}
#endif

#endif

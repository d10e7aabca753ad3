/* Internal: signatures in the loading path (the public side is
 * include/kernels/signature.h; the verifier is lib/sigstore/). */
#ifndef KERNELS_LIB_SIGNATURE_H
#define KERNELS_LIB_SIGNATURE_H

#include "config.h"

/* Checks the signature of the variant folder `dir` as cfg's signature
 * mode asks, over metadata.json's bytes before anything parses them:
 * off: nothing; if-present: a metadata.json.sigstore must be valid;
 * require: it must be there and valid. A valid one must sign a digest
 * (which kernels__verify_variant then checks against the files). `what`
 * names the variant in messages (may be NULL). 0, or KERNELS_ESIGNATURE
 * with what failed. Called by the loader before kernels__verify_variant. */
struct stat;
/* *signed_meta: the identity of the metadata.json whose bytes the signature
 * was checked over (all zero when no signature was checked), so the caller
 * can make sure verification parses that very file. */
int kernels__signature_check(const kernels__config *cfg, const char *dir, const char *what, struct stat *signed_meta);

#ifdef KERNELS_TESTING
/* The test build only: how many trusted roots this process has parsed (each
 * distinct content once, while it stays among the few kept). */
size_t kernels__signature_root_parses(void);
/* How many times a trusted root file was read (a file whose identity has
 * not changed since a settled read is not read again). */
size_t kernels__signature_root_reads(void);
/* How far a root file's last change must lie behind the clock for its
 * identity to be trusted (default 2 s; negative restores it). */
void kernels__signature_root_settle_ns(long long ns);
#endif

#endif

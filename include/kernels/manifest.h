/*
 * libkernels: project manifests, the [tool.kernels.dependencies] table of
 * pyproject.toml, read exactly as the Python `kernels` package reads it:
 *
 *     [tool.kernels.dependencies]
 *     "kernels-community/activation" = 1        # major version: branch v1
 *     "drbh/img2gray" = ">=0.1.2,<0.2.0"        # PEP 440 specifier over vX.Y.Z tags
 *
 * Ownership: a kernels_manifest is freed by the caller with
 * kernels_manifest_free(); pointers read out of it belong to it. A manifest
 * may be read from several threads at once. Locking a manifest's
 * dependencies is kernels/lock.h's and kernels/project.h's.
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_MANIFEST_H
#define KERNELS_MANIFEST_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kernels_manifest kernels_manifest;

/** How a manifest dependency names its version. */
typedef enum {
	KERNELS_DEPENDENCY_VERSION = 0,   /**< an integer major version N: branch vN */
	KERNELS_DEPENDENCY_SPECIFIER = 1  /**< a PEP 440 specifier set over vX.Y.Z tags */
} kernels_dependency_kind;

/** One [tool.kernels.dependencies] entry. Strings belong to the manifest. */
typedef struct {
	const char *repo_id;            /**< "org/name", already validated */
	kernels_dependency_kind kind;
	unsigned long long version;     /**< VERSION: the major version */
	const char *specifier;          /**< SPECIFIER: the string as written; NULL otherwise */
	int line, col;                  /**< where the key is written in pyproject.toml */
} kernels_dependency;

/**
 * Reads [tool.kernels.dependencies] from `path`: a pyproject.toml file, or
 * a project folder holding one. `*out` is the caller's (kernels_manifest_free).
 * Errors: KERNELS_ENOTFOUND (no pyproject.toml, or no
 * [tool.kernels.dependencies] table in it), KERNELS_EPARSE (invalid TOML, a
 * value that is neither an integer >= 0 nor a string, an invalid repo id:
 * the message gives file:line:col), KERNELS_EIO, KERNELS_ENOMEM.
 * An empty table is not an error: the count is 0.
 */
KERNELS_EXTERN(int) kernels_manifest_load(kernels_manifest **out, const char *path);

/** Like kernels_manifest_load for TOML text in memory; `name` is used in messages. */
KERNELS_EXTERN(int) kernels_manifest_load_string(kernels_manifest **out, const char *toml, size_t len,
						  const char *name);

/** Number of dependencies, in the order the file lists them. */
KERNELS_EXTERN(size_t) kernels_manifest_dependency_count(const kernels_manifest *manifest);

/** The i-th dependency, or NULL past the end. Owned by the manifest. */
KERNELS_EXTERN(const kernels_dependency *) kernels_manifest_dependency_at(const kernels_manifest *manifest, size_t i);

/** The path of the pyproject.toml that was read (or the `name`). */
KERNELS_EXTERN(const char *) kernels_manifest_path(const kernels_manifest *manifest);

/** Frees a manifest; NULL is fine. */
KERNELS_EXTERN(void) kernels_manifest_free(kernels_manifest *manifest);

#ifdef __cplusplus
}
#endif

#endif

/* Internal: the metadata.json keys Python kernels 0.17 defines beyond what
 * verification needs (lib/metadata.c), parsed once with the metadata. */
#ifndef KERNELS_LIB_METADATA_H
#define KERNELS_LIB_METADATA_H

#include "kernels/metadata.h"
#include "config.h"

#include <jansson.h>
#include <sys/stat.h>

typedef struct kernels__metafields kernels__metafields;

/* A parsed metadata.json: verify.c parses and verifies it (the gate in
 * front of dlopen), this file reads the keys that say what the kernel is
 * and needs. */
struct kernels_metadata {
	json_t *json;
	const char *id, *name, *license, *backend; /* borrowed from json */
	int version;
	const char **archs;   /* NULL-terminated, borrowed strings; NULL when none */
	size_t narchs;
	int dirty;
	char dirty_sources[64];
	const char *algorithm;
	json_t *files;        /* digest.files, borrowed */
	char **walked;        /* verified files, relative, sorted */
	struct stat *walked_st; /* what each was verified as (device, inode, size, times) */
	char **walked_real;   /* the path each resolved to when verified (links followed) */
	struct stat meta_st;    /* metadata.json as it was read */
	size_t nwalked;
	kernels__metafields *fields; /* metadata.c: name, *-depends, minver, upstream, source, provenance */
};

/* Checks and reads name, python-depends, kernel-depends, kernels-minver,
 * upstream, source and provenance of the parsed document `root` (strings
 * stay borrowed from it). `path` names the file in messages. Errors:
 * KERNELS_EPARSE (what 0.17's parser refuses), KERNELS_ENOMEM. */
int kernels__metafields_parse(json_t *root, const char *path, kernels__metafields **out);
void kernels__metafields_free(kernels__metafields *f);

/* 1 when `name` matches ^[a-z][-a-z0-9]*[a-z0-9]$ (kernels-data's KernelName). */
int kernels__kernel_name_valid(const char *name);
/* "X.Y.Z" as kernels-minver takes it, normalised into out; -1 when not one. */
int kernels__minver_parse(const char *s, char *out, size_t size);

/* The rules 0.17 applies to a resolved variant's metadata before loading
 * it (validate.py): KERNELS_ELOAD naming both versions when its
 * kernels-minver is newer than KERNELS_COMPAT_KERNELS_VERSION; its
 * python-depends reported at info level (a C host cannot check them).
 * `what` names the variant. */
int kernels__metadata_rules(const kernels__config *cfg, const kernels_metadata *m, const char *what);

#endif

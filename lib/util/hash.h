/* Hashes of a file's bytes, read through one descriptor: the digests
 * metadata.json lists, and the names the Hub gives a file (git's blob sha1,
 * or the LFS sha256 of its content). */
#ifndef KERNELS_LIB_UTIL_HASH_H
#define KERNELS_LIB_UTIL_HASH_H

#include <openssl/evp.h>
#include <stddef.h>
#include <sys/stat.h>

/* Hashes `path` with `md`, after `prefix` (prefix_len bytes; NULL: none),
 * through one descriptor opened without following a final link, and
 * records what was hashed (device, inode, size, times) in *st: a caller
 * that maps the file after checking it compares against that. The digest
 * into `digest` (EVP_MAX_MD_SIZE bytes), its length into *dlen. 0, or
 * KERNELS_EIO / KERNELS_ENOMEM with the error set. */
int kernels__hash_path(const char *path, const EVP_MD *md, const char *prefix, size_t prefix_len,
		       unsigned char *digest, unsigned int *dlen, struct stat *st);

typedef enum { KERNELS__BLOB_GIT_SHA1, KERNELS__BLOB_SHA256 } kernels__blob_kind;

/* The name the Hub lists a file by, in lower-case hex into `hex` (65
 * bytes): git's blob sha1 ("blob <size>\0", then the content), or the
 * sha256 of the content (an LFS file). The size in git's header is the
 * one fstat gives the descriptor that is read. `st` as kernels__hash_path
 * (may be NULL). */
int kernels__hash_blob(const char *path, kernels__blob_kind kind, char hex[65], struct stat *st);

/* The same for an open descriptor, read from where it stands; `st` is its
 * fstat (the size git's header names). */
int kernels__hash_blob_fd(int fd, kernels__blob_kind kind, char hex[65], const struct stat *st);

/* Starts `ctx` on the hash that names a blob of `kind`; for git's sha1,
 * feeds the header git hashes before the content of a blob of `size`
 * bytes. 1, or 0 when OpenSSL fails (as its EVP functions). For hashes
 * taken while the bytes arrive (a download, a bundle being read). */
int kernels__blob_digest_begin(EVP_MD_CTX *ctx, kernels__blob_kind kind, long long size);

/* Readies OpenSSL's sha256 and sha1: a process's first digest costs about
 * a millisecond (the default provider's algorithms are looked up), which a
 * thread with time to spare (one waiting on the network) pays instead of
 * the first call that hashes. Thread-safe; cheap after the first. */
void kernels__hash_warm(void);

#endif

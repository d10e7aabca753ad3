#include "hash.h"
#include "error.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Digests what is left of fd into `ctx`, already begun, and frees it; 0 or -1. */
static int digest_fd(int fd, EVP_MD_CTX *ctx, int ok, unsigned char *digest, unsigned int *dlen)
{
	unsigned char buf[65536];
	ssize_t n = 0;

	while (ok && ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)))
		ok = n < 0 || EVP_DigestUpdate(ctx, buf, (size_t)n);
	ok = ok && n == 0 && EVP_DigestFinal_ex(ctx, digest, dlen);
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -1;
}

static int open_file(const char *path, struct stat *st)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc;

	if (fd >= 0 && fstat(fd, st) == 0)
		return fd;
	rc = kernels__error(KERNELS_EIO, "cannot read %s: %s", path, strerror(errno));
	if (fd >= 0)
		close(fd);
	return rc;
}

int kernels__hash_path(const char *path, const EVP_MD *md, const char *prefix, size_t prefix_len,
		       unsigned char *digest, unsigned int *dlen, struct stat *st)
{
	int fd = open_file(path, st), ok, rc;
	EVP_MD_CTX *ctx;

	if (fd < 0)
		return fd;
	ctx = EVP_MD_CTX_new();
	ok = ctx && EVP_DigestInit_ex(ctx, md, NULL) && (!prefix || EVP_DigestUpdate(ctx, prefix, prefix_len));
	rc = digest_fd(fd, ctx, ok, digest, dlen);
	close(fd);
	return rc == 0 ? 0 : kernels__error(KERNELS_EIO, "hashing %s failed", path);
}

int kernels__hash_blob(const char *path, kernels__blob_kind kind, char hex[65], struct stat *st)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	struct stat sb;
	int fd = open_file(path, st ? st : &sb), ok, rc;
	EVP_MD_CTX *ctx;

	if (fd < 0)
		return fd;
	ctx = EVP_MD_CTX_new();
	ok = ctx && kernels__blob_digest_begin(ctx, kind, (long long)(st ? st : &sb)->st_size);
	rc = digest_fd(fd, ctx, ok, digest, &dlen);
	close(fd);
	if (rc < 0)
		return kernels__error(KERNELS_EIO, "hashing %s failed", path);
	kernels__hex(digest, dlen, hex);
	return 0;
}

int kernels__hash_blob_fd(int fd, kernels__blob_kind kind, char hex[65], const struct stat *st)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok = ctx && kernels__blob_digest_begin(ctx, kind, (long long)st->st_size);

	if (digest_fd(fd, ctx, ok, digest, &dlen) < 0)
		return kernels__error(KERNELS_EIO, "hashing a cached file failed: %s", strerror(errno));
	kernels__hex(digest, dlen, hex);
	return 0;
}

int kernels__blob_digest_begin(EVP_MD_CTX *ctx, kernels__blob_kind kind, long long size)
{
	char header[64];
	int n;

	if (kind == KERNELS__BLOB_SHA256)
		return EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
	/* A git blob id hashes "blob <size>\0" before the content. */
	n = snprintf(header, sizeof(header), "blob %lld", size);
	return EVP_DigestInit_ex(ctx, EVP_sha1(), NULL) && EVP_DigestUpdate(ctx, header, (size_t)n + 1);
}

void kernels__hash_warm(void)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n;

	EVP_Digest("", 0, md, &n, EVP_sha256(), NULL);
	EVP_Digest("", 0, md, &n, EVP_sha1(), NULL);
}

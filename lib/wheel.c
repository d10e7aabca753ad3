/* A build variant as a Python wheel (include/kernels/wheel.h): the name
 * from the variant's tags, the package from the variant folder, the
 * dist-info pip needs, written as a deflated zip with libarchive. */
#include "cache.h"
#include "error.h"
#include "layout.h"
#include "util.h"
#include "kernels/variant.h"
#include "kernels/wheel.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_DEPTH 32
#define MAX_FILES 100000
/* Zip timestamps are DOS dates from 1980: a fixed one keeps wheels reproducible. */
#define WHEEL_MTIME 315964800 /* 1980-01-06 00:00:00 UTC */

typedef struct {
	char *name;          /* normalized distribution / package name */
	char *version;       /* the full version, with the local label */
	char *tag;           /* python-abi-platform */
	char *requires;      /* Requires-Dist */
	char *python;        /* "3.9" */
	int purelib;
	char *filename;
	char *dist_info;     /* "{name}-{version}.dist-info" */
} wheel_info;

static void info_free(wheel_info *w)
{
	free(w->name);
	free(w->version);
	free(w->tag);
	free(w->requires);
	free(w->python);
	free(w->filename);
	free(w->dist_info);
	memset(w, 0, sizeof(*w));
}

/* PEP 427 escaping: runs of '-', '_' and '.' become one '_'. */
static int normalize_name(const char *repo_name, char **out)
{
	const char *slash = strrchr(repo_name, '/'), *p;
	kernels__buf b = { 0 };

	if (slash)
		repo_name = slash + 1;
	if (!*repo_name)
		return kernels__error(KERNELS_EINVAL, "wheel: empty kernel name; pass the repo name, e.g. 'img2gray'");
	for (p = repo_name; *p; p++) {
		int alnum = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9');
		if (alnum) {
			if (kernels__buf_put(&b, p, 1))
				goto oom;
			continue;
		}
		if (*p != '-' && *p != '_' && *p != '.') {
			kernels__buf_free(&b);
			return kernels__error(KERNELS_EINVAL,
					      "wheel: kernel name '%s' has the character '%c'; only letters, digits, "
					      "'-', '_' and '.' make a Python package name", repo_name, *p);
		}
		if ((!b.len || b.ptr[b.len - 1] != '_') && kernels__buf_put(&b, "_", 1))
			goto oom;
	}
	*out = kernels__buf_detach(&b);
	return *out ? 0 : kernels__error_oom();
oom:
	kernels__buf_free(&b);
	return kernels__error_oom();
}

/* A public version: digits first, then letters, digits, '.' and '!' only
 * ('-' would split the file name, '+' is the local label we add). */
static int check_version(const char *v)
{
	const char *p;

	if (!v || !(*v >= '0' && *v <= '9'))
		return kernels__error(KERNELS_EINVAL,
				      "wheel: version '%s' must start with a digit; pass a version such as 0.1.0 "
				      "(without the leading 'v' of the tag)", v ? v : "(null)");
	for (p = v; *p; p++) {
		int ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			 *p == '.' || *p == '!';
		if (!ok)
			return kernels__error(KERNELS_EINVAL,
					      "wheel: version '%s' has the character '%c'; a wheel version is a PEP "
					      "440 public version such as 0.1.0 or 1.2rc1", v, *p);
	}
	if (strlen(v) > 64)
		return kernels__error(KERNELS_EINVAL, "wheel: version '%s' is longer than 64 characters", v);
	return 0;
}

/* "3.9" -> "39"; "2.28" -> "2_28". Digits and one dot only. */
static int dotted(const char *what, const char *v, char sep, char *out, size_t size)
{
	const char *dot = v ? strchr(v, '.') : NULL;
	size_t i, n = v ? strlen(v) : 0;

	if (!dot || dot == v || !dot[1] || strchr(dot + 1, '.') || n + 1 > size)
		goto bad;
	for (i = 0; i < n; i++) {
		if (v[i] == '.')
			continue;
		if (v[i] < '0' || v[i] > '9')
			goto bad;
	}
	for (i = 0; *v; v++) {
		if (*v == '.') {
			if (sep)
				out[i++] = sep;
		} else {
			out[i++] = *v;
		}
	}
	out[i] = '\0';
	return 0;
bad:
	return kernels__error(KERNELS_EINVAL, "wheel: %s '%s' must be MAJOR.MINOR, e.g. %s", what, v ? v : "(null)",
			      sep ? "2.28" : "3.9");
}

/* The variant's backend part as written ("cu126"): third field from the end. */
static int backend_token(const char *variant, char *out, size_t size)
{
	const char *end = variant + strlen(variant), *p = end;
	const char *stop = NULL;
	int dashes = 0;

	while (p > variant) {
		p--;
		if (*p == '-') {
			dashes++;
			if (dashes == 2)
				stop = p;
			if (dashes == 3)
				break;
		}
	}
	if (dashes < 3 || !stop || (size_t)(stop - p - 1) + 1 > size || stop == p + 1)
		return kernels__error(KERNELS_EINVAL, "wheel: cannot find the backend in variant name '%s'", variant);
	memcpy(out, p + 1, (size_t)(stop - p - 1));
	out[stop - p - 1] = '\0';
	return 0;
}

static int platform_tag(const kernels_variant_info *vi, const char *manylinux, char *out, size_t size)
{
	const char *cpu = vi->cpu;

	if (!strcmp(vi->os, "linux"))
		snprintf(out, size, "manylinux_%s_%s", manylinux, cpu);
	else if (!strcmp(vi->os, "darwin"))
		snprintf(out, size, "macosx_11_0_%s", !strcmp(cpu, "aarch64") ? "arm64" : cpu);
	else if (!strcmp(vi->os, "windows"))
		snprintf(out, size, "win_%s", !strcmp(cpu, "x86_64") ? "amd64" : !strcmp(cpu,
											 "aarch64") ? "arm64" : cpu);
	else
		return kernels__error(KERNELS_EINVAL, "wheel: no wheel platform tag for the OS '%s'", vi->os);
	return 0;
}

/* Where each version of kernels_wheel_options ends (docs/api-stability.md). */
static const size_t wheel_options_sizes[] = { 0, KERNELS__END(kernels_wheel_options, manylinux_version) };
static const kernels__layout wheel_options_layout = { "kernels_wheel_options", "KERNELS_WHEEL_OPTIONS_VERSION",
						      wheel_options_sizes, KERNELS_WHEEL_OPTIONS_VERSION };
_Static_assert(sizeof(wheel_options_sizes) / sizeof(wheel_options_sizes[0]) == KERNELS_WHEEL_OPTIONS_VERSION + 1,
	       "a new kernels_wheel_options version needs its size in wheel_options_sizes");

static int wheel_info_make(wheel_info *w, const char *repo_name, const char *version, const char *variant,
			   const kernels_wheel_options *given)
{
	kernels_wheel_options o = { KERNELS_WHEEL_OPTIONS_VERSION, NULL, NULL };
	const char *py, *ml;
	char pyflat[16], mlflat[16], token[KERNELS_VARIANT_FIELD_MAX], plat[2 * KERNELS_VARIANT_FIELD_MAX];
	char local[KERNELS_VARIANT_FIELD_MAX + 64];
	kernels_variant_info vi;
	int rc;

	memset(w, 0, sizeof(*w));
	if (given && (rc = kernels__layout_read(&wheel_options_layout, &o, given)) < 0)
		return rc;
	py = o.python_version ? o.python_version : "3.9";
	ml = o.manylinux_version ? o.manylinux_version : "2.28";
	if (!repo_name || !variant)
		return kernels__error(KERNELS_EINVAL, "wheel: the kernel name and the variant name are required");
	if ((rc = normalize_name(repo_name, &w->name)) || (rc = check_version(version)) ||
	    (rc = dotted("Python version", py, 0, pyflat, sizeof(pyflat))) ||
	    (rc = dotted("manylinux version", ml, '_', mlflat, sizeof(mlflat))))
		goto fail;
	if ((rc = kernels_variant_parse(&vi, variant))) {
		rc = kernels__error_prefix("wheel for variant '%s'", variant);
		goto fail;
	}
	if (!(w->python = kernels__strdup(py)))
		goto oom;
	if (vi.kind == KERNELS_VARIANT_NOARCH) {
		w->purelib = 1;
		w->version = kernels__strdup(version);
		w->tag = kernels__sprintf("py%s-none-any", pyflat);
		w->requires = kernels__strdup("torch");
	} else {
		if ((rc = backend_token(variant, token, sizeof(token))) ||
		    (rc = platform_tag(&vi, mlflat, plat, sizeof(plat))))
			goto fail;
		switch (vi.kind) {
		case KERNELS_VARIANT_TORCH:
			/* As the Python client's to-wheel: "cu" + the backend part without
			 * its own "cu" (so cu126 -> cu126, cpu -> cucpu, rocm63 -> curocm63). */
			snprintf(local, sizeof(local), "torch%d%dcu%s%s", vi.framework_major, vi.framework_minor,
				 strncmp(token, "cu", 2) ? token : token + 2,
				 vi.cxx11_abi == 1 ? "cxx11" : vi.cxx11_abi == 0 ? "cxx98" : "");
			w->requires = kernels__sprintf("torch==%d.%d.*", vi.framework_major, vi.framework_minor);
			break;
		case KERNELS_VARIANT_TORCH_STABLE_ABI:
			snprintf(local, sizeof(local), "torchstable%d%d%s", vi.framework_major, vi.framework_minor,
				 token);
			w->requires = kernels__sprintf("torch>=%d.%d", vi.framework_major, vi.framework_minor);
			break;
		default:
			snprintf(local, sizeof(local), "tvmffi%d%d%s", vi.framework_major, vi.framework_minor, token);
			w->requires = kernels__sprintf("apache-tvm-ffi==%d.%d.*", vi.framework_major,
						       vi.framework_minor);
			break;
		}
		w->version = kernels__sprintf("%s+%s", version, local);
		w->tag = kernels__sprintf("cp%s-abi3-%s", pyflat, plat);
	}
	if (!w->version || !w->tag || !w->requires)
		goto oom;
	w->filename = kernels__sprintf("%s-%s-%s.whl", w->name, w->version, w->tag);
	w->dist_info = kernels__sprintf("%s-%s.dist-info", w->name, w->version);
	if (!w->filename || !w->dist_info)
		goto oom;
	return 0;
oom:
	rc = kernels__error_oom();
fail:
	info_free(w);
	return rc;
}

int kernels_wheel_filename(char **out, const char *repo_name, const char *version, const char *variant_name,
			   const kernels_wheel_options *wopts)
{
	wheel_info w;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_wheel_filename: out must not be NULL");
	*out = NULL;
	if ((rc = wheel_info_make(&w, repo_name, version, variant_name, wopts)))
		return rc;
	*out = w.filename;
	w.filename = NULL;
	info_free(&w);
	return 0;
}

/* ---- collecting the package's files --------------------------------------- */

typedef struct {
	char *arc;   /* path inside the wheel */
	char *src;   /* path on disk */
	mode_t mode;
	off_t size;
} wheel_file;

typedef struct {
	wheel_file *v;
	size_t n, cap;
} file_list;

static void files_free(file_list *l)
{
	size_t i;
	for (i = 0; i < l->n; i++) {
		free(l->v[i].arc);
		free(l->v[i].src);
	}
	free(l->v);
}

static int skipped(const char *name, int top, const char *pkg, int is_dir)
{
	size_t n = strlen(name);

	if (!strcmp(name, ".") || !strcmp(name, ".."))
		return 1;
	if (is_dir)
		return !strcmp(name, "__pycache__") || (top && pkg && !strcmp(name, pkg));
	if (n > 4 && !strcmp(name + n - 4, ".pyc"))
		return 1;
	return top && !strcmp(name, "metadata.json.sigstore");
}

static int by_arc(const void *a, const void *b)
{
	return strcmp(((const wheel_file *)a)->arc, ((const wheel_file *)b)->arc);
}

/* Walks `dir` (arc prefix `arc`); at the top, `skip_pkg` names the
 * compatibility shim folder to leave out. */
static int collect(file_list *l, const char *dir, const char *arc, const char *skip_pkg, int depth)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (depth > MAX_DEPTH)
		return kernels__error(KERNELS_EUNSAFE, "wheel: %s is nested more than %d folders deep", dir, MAX_DEPTH);
	if (!(d = opendir(dir)))
		return kernels__error(errno == ENOENT ? KERNELS_ENOTFOUND : KERNELS_EIO, "wheel: cannot read %s: %s",
				      dir, strerror(errno));
	while (!rc && (errno = 0, de = readdir(d))) {
		struct stat lst, st;
		char *src = kernels__sprintf("%s/%s", dir, de->d_name);
		char *sub = src ? kernels__sprintf("%s/%s", arc, de->d_name) : NULL;

		if (!src || !sub) {
			free(src);
			free(sub);
			rc = kernels__error_oom();
			break;
		}
		if (lstat(src, &lst) || stat(src, &st)) {
			rc = kernels__error(KERNELS_EIO, "wheel: cannot read %s: %s (a broken link?)", src,
					    strerror(errno));
		} else if (S_ISDIR(st.st_mode)) {
			if (S_ISLNK(lst.st_mode))
				rc = kernels__error(KERNELS_EUNSAFE, "wheel: %s is a link to a folder; variants hold "
						    "plain folders", src);
			else if (!skipped(de->d_name, depth == 0, skip_pkg, 1))
				rc = collect(l, src, sub, NULL, depth + 1);
		} else if (S_ISREG(st.st_mode) && !skipped(de->d_name, depth == 0, skip_pkg, 0)) {
			if (l->n >= MAX_FILES || KERNELS__ARRAY_GROW(l->v, l->cap, l->n) < 0) {
				rc = l->n >= MAX_FILES ? kernels__error(KERNELS_EIO, "wheel: more than %d files",
									MAX_FILES)
						       : KERNELS_ENOMEM;
				free(src);
				free(sub);
				break;
			}
			l->v[l->n].arc = sub;
			l->v[l->n].src = src;
			l->v[l->n].mode = st.st_mode;
			l->v[l->n].size = st.st_size;
			l->n++;
			continue;
		}
		free(src);
		free(sub);
	}
	if (!rc && errno)
		rc = kernels__error(KERNELS_EIO, "wheel: cannot list %s: %s", dir, strerror(errno));
	closedir(d);
	return rc;
}

static int package_files(file_list *l, const char *variant_dir, const char *pkg)
{
	char *init = kernels__sprintf("%s/__init__.py", variant_dir);
	char *sub = kernels__sprintf("%s/%s", variant_dir, pkg);
	struct stat st;
	int rc;

	if (!init || !sub) {
		free(init);
		free(sub);
		return kernels__error_oom();
	}
	if (stat(variant_dir, &st) || !S_ISDIR(st.st_mode))
		rc = kernels__error(KERNELS_ENOTFOUND, "wheel: no variant folder %s; download the variant first",
				    variant_dir);
	else if (!stat(init, &st) && S_ISREG(st.st_mode))
		rc = collect(l, variant_dir, pkg, pkg, 0);
	else if (!stat(sub, &st) && S_ISDIR(st.st_mode))
		rc = collect(l, sub, pkg, NULL, 1);
	else
		rc = kernels__error(KERNELS_ENOTFOUND, "wheel: %s holds no Python package (neither __init__.py nor "
				    "%s/); only torch and tvm-ffi variants become wheels", variant_dir, pkg);
	free(init);
	free(sub);
	if (!rc)
		qsort(l->v, l->n, sizeof(*l->v), by_arc);
	return rc;
}

/* ---- writing ---------------------------------------------------------------- */

static void b64url(const unsigned char *d, size_t n, char *out)
{
	int len = EVP_EncodeBlock((unsigned char *)out, d, (int)n);
	int i;

	while (len > 0 && out[len - 1] == '=')
		len--;
	out[len] = '\0';
	for (i = 0; i < len; i++)
		out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
}

/* A RECORD field: quoted (csv) when it holds a comma, quote or newline. */
static int record_path(kernels__buf *rec, const char *path)
{
	const char *p;

	if (!strpbrk(path, ",\"\r\n"))
		return kernels__buf_puts(rec, path);
	if (kernels__buf_put(rec, "\"", 1))
		return -1;
	for (p = path; *p; p++)
		if ((*p == '"' && kernels__buf_put(rec, "\"", 1)) || kernels__buf_put(rec, p, 1))
			return -1;
	return kernels__buf_put(rec, "\"", 1);
}

static int entry_header(struct archive *a, const char *arc, mode_t mode, size_t size)
{
	struct archive_entry *e = archive_entry_new();
	int r;

	if (!e)
		return kernels__error_oom();
	archive_entry_set_pathname(e, arc);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, (mode & 0111) ? 0755 : 0644);
	archive_entry_set_size(e, (la_int64_t)size);
	archive_entry_set_mtime(e, WHEEL_MTIME, 0);
	r = archive_write_header(a, e);
	archive_entry_free(e);
	if (r != ARCHIVE_OK)
		return kernels__error(KERNELS_EIO, "wheel: cannot add %s: %s", arc, archive_error_string(a));
	return 0;
}

static int add_memory(struct archive *a, kernels__buf *rec, const char *arc, const char *data, int recorded)
{
	size_t n = strlen(data);
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	char b64[128];
	int rc;

	if ((rc = entry_header(a, arc, 0644, n)))
		return rc;
	if (n && archive_write_data(a, data, n) != (la_ssize_t)n)
		return kernels__error(KERNELS_EIO, "wheel: cannot write %s: %s", arc, archive_error_string(a));
	if (!recorded)
		return 0;
	if (!EVP_Digest(data, n, md, &mdlen, EVP_sha256(), NULL))
		return kernels__error(KERNELS_ERROR, "wheel: sha256 failed");
	b64url(md, mdlen, b64);
	if (record_path(rec, arc) || kernels__buf_printf(rec, ",sha256=%s,%zu\n", b64, n) < 0)
		return kernels__error_oom();
	return 0;
}

static int add_file(struct archive *a, kernels__buf *rec, const wheel_file *f)
{
	unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	unsigned long long total = 0;
	EVP_MD_CTX *ctx;
	char b64[128];
	ssize_t n;
	int fd, rc;

	if ((rc = entry_header(a, f->arc, f->mode, (size_t)f->size)))
		return rc;
	if ((fd = open(f->src, O_RDONLY | O_CLOEXEC)) < 0)
		return kernels__error(KERNELS_EIO, "wheel: cannot open %s: %s", f->src, strerror(errno));
	if (!(ctx = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		close(fd);
		EVP_MD_CTX_free(ctx);
		return kernels__error(KERNELS_ERROR, "wheel: cannot start sha256");
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		total += (unsigned long long)n;
		if (total > (unsigned long long)f->size) {
			rc = kernels__error(KERNELS_EIO, "wheel: %s grew while it was read; retry", f->src);
			break;
		}
		EVP_DigestUpdate(ctx, buf, (size_t)n);
		if (archive_write_data(a, buf, (size_t)n) != n) {
			rc = kernels__error(KERNELS_EIO, "wheel: cannot write %s: %s", f->arc, archive_error_string(a));
			break;
		}
	}
	if (!rc && n < 0)
		rc = kernels__error(KERNELS_EIO, "wheel: cannot read %s: %s", f->src, strerror(errno));
	if (!rc && total != (unsigned long long)f->size)
		rc = kernels__error(KERNELS_EIO, "wheel: %s changed size while it was read; retry", f->src);
	close(fd);
	if (!rc) {
		EVP_DigestFinal_ex(ctx, md, &mdlen);
		b64url(md, mdlen, b64);
		if (record_path(rec, f->arc) || kernels__buf_printf(rec, ",sha256=%s,%llu\n", b64, total) < 0)
			rc = kernels__error_oom();
	}
	EVP_MD_CTX_free(ctx);
	return rc;
}

static int write_zip(const char *path, const wheel_info *w, const file_list *l)
{
	struct archive *a = archive_write_new();
	kernels__buf rec = { 0 }, text = { 0 };
	char *arc = NULL;
	size_t i;
	int rc = 0;

	if (!a)
		return kernels__error_oom();
	if (archive_write_set_format_zip(a) != ARCHIVE_OK ||
	    archive_write_zip_set_compression_deflate(a) != ARCHIVE_OK ||
	    archive_write_open_filename(a, path) != ARCHIVE_OK) {
		rc = kernels__error(KERNELS_EIO, "wheel: cannot create %s: %s", path, archive_error_string(a));
		goto out;
	}
	for (i = 0; !rc && i < l->n; i++)
		rc = add_file(a, &rec, &l->v[i]);
	if (rc)
		goto out;

	if (kernels__buf_printf(&text, "Wheel-Version: 1.0\nGenerator: libkernels (%s)\nRoot-Is-Purelib: %s\nTag: "
				"%s\n\n", kernels_version(), w->purelib ? "true" : "false", w->tag) < 0 ||
	    !(arc = kernels__sprintf("%s/WHEEL", w->dist_info))) {
		rc = kernels__error_oom();
		goto out;
	}
	if ((rc = add_memory(a, &rec, arc, text.ptr, 1)))
		goto out;
	free(arc);
	text.len = 0;
	if (kernels__buf_printf(&text,
				"Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s kernel\n"
				"Requires-Python: >=%s\nRequires-Dist: %s\n\n",
				w->name, w->version, w->name, w->python, w->requires) < 0 ||
	    !(arc = kernels__sprintf("%s/METADATA", w->dist_info))) {
		rc = kernels__error_oom();
		goto out;
	}
	if ((rc = add_memory(a, &rec, arc, text.ptr, 1)))
		goto out;
	free(arc);
	if (!(arc = kernels__sprintf("%s/RECORD", w->dist_info)) || record_path(&rec, arc) ||
	    kernels__buf_puts(&rec, ",,\n")) {
		rc = kernels__error_oom();
		goto out;
	}
	if ((rc = add_memory(a, &rec, arc, rec.ptr, 0)))
		goto out;
	if (archive_write_close(a) != ARCHIVE_OK)
		rc = kernels__error(KERNELS_EIO, "wheel: cannot finish %s: %s", path, archive_error_string(a));
out:
	free(arc);
	kernels__buf_free(&rec);
	kernels__buf_free(&text);
	archive_write_free(a);
	return rc;
}

/* The wheel written beside its name in out_dir, then flushed and renamed
 * to it (*dest, which the caller frees in any case): a crash never leaves
 * a short wheel. */
static int publish_wheel(const char *out_dir, const wheel_info *w, const file_list *files, char **dest)
{
	char *tmp = kernels__sprintf("%s/.%s.XXXXXX", out_dir, w->filename);
	int rc, fd;

	if (!(*dest = kernels__sprintf("%s/%s", out_dir, w->filename)) || !tmp) {
		free(tmp);
		return kernels__error_oom();
	}
	if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0) {
		rc = kernels__error(KERNELS_EIO, "wheel: cannot write into %s: %s; pass an existing, writable folder",
				    out_dir, strerror(errno));
		free(tmp);
		return rc;
	}
	close(fd);
	if ((rc = write_zip(tmp, w, files)) == 0 && (chmod(tmp, 0644) || (fd = open(tmp, O_RDONLY | O_CLOEXEC)) < 0))
		rc = kernels__error(KERNELS_EIO, "wheel: cannot reopen %s: %s", tmp, strerror(errno));
	if (rc == 0 && (rc = kernels__cache_publish(fd, tmp, *dest, NULL, 1)) == 0) {
		free(tmp);
		return 0;
	}
	unlink(tmp);
	free(tmp);
	return rc;
}

int kernels_wheel_write(char **wheel_path, const char *variant_dir, const char *repo_name, const char *version,
			const char *variant_name, const char *out_dir, const kernels_wheel_options *wopts)
{
	char *base = NULL, *dest = NULL;
	file_list files = { 0 };
	wheel_info w;
	int rc;

	if (wheel_path)
		*wheel_path = NULL;
	if (!variant_dir || !out_dir)
		return kernels__error(KERNELS_EINVAL, "kernels_wheel_write: variant_dir and out_dir are required");
	if (!variant_name) {
		size_t n = strlen(variant_dir);
		while (n > 1 && variant_dir[n - 1] == '/')
			n--;
		if (!(base = strndup(variant_dir, n)))
			return kernels__error_oom();
		variant_name = strrchr(base, '/') ? strrchr(base, '/') + 1 : base;
	}
	if ((rc = wheel_info_make(&w, repo_name, version, variant_name, wopts))) {
		free(base);
		return rc;
	}
	if ((rc = package_files(&files, variant_dir, w.name)) == 0 &&
	    (rc = publish_wheel(out_dir, &w, &files, &dest)) == 0 && wheel_path) {
		*wheel_path = dest;
		dest = NULL;
	}
	free(dest);
	free(base);
	files_free(&files);
	info_free(&w);
	return rc;
}

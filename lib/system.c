/* System detection: a chain of options, then KERNELS_* environment, then
 * what the process and machine show. Facts that cannot change while the
 * process runs (uname, glibc, CUDA driver and runtime, GPUs) are detected
 * once behind pthread_once; torch and tvm-ffi are looked up on every call
 * because they may be loaded later. An installed torch outside the process
 * is only read (version.py, libc10's ELF symbol table), never loaded. */
#include "system.h"
#include "backend.h"
#include "cuda_facts.h"
#include "elffile.h"
#include "error.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

/* The environment as the call's configuration captured it (config.h):
 * stages never read the process environment themselves. */
static const char *env(const kernels__config *cfg, const char *name)
{
	return kernels__config_env(cfg, name);
}

/* ---- small parsers ---------------------------------------------------- */

/* "9.0,8.6" -> {90, 86}, or "gfx90a,gfx942:sramecc+" -> names {"gfx90a",
 * "gfx942"} (archs 0); -1 on a malformed or mixed list. */
static int parse_gpu_archs(const char *s, int *archs, char names[][32], int max)
{
	int n = 0, gfx = -1;
	char *end;

	while (*s) {
		long major, minor;
		if (!strncmp(s, "gfx", 3) && gfx != 0) {
			size_t len = strcspn(s, ", :");
			if (len < 4 || len >= 32 || n == max)
				return -1;
			gfx = 1;
			archs[n] = 0;
			memcpy(names[n], s, len);
			names[n++][len] = '\0';
			end = (char *)s + len;
			if (*end == ':') /* feature flags, as torch's gcnArchName has them */
				end += strcspn(end, ", ");
		} else {
			if (!isdigit((unsigned char)*s) || gfx == 1)
				return -1;
			major = strtol(s, &end, 10);
			if (*end != '.' || !isdigit((unsigned char)end[1]))
				return -1;
			minor = strtol(end + 1, &end, 10);
			if (minor > 9 || major > 99 || n == max)
				return -1;
			gfx = 0;
			archs[n] = (int)(major * 10 + minor);
			snprintf(names[n++], 32, "%d.%d", (int)major, (int)minor);
		}
		while (*end == ',' || *end == ' ')
			end++;
		s = end;
	}
	return n;
}

/* The first 64 KiB of a version or configuration file; NULL when absent. */
static char *read_small_file(const char *path)
{
	char *text;
	size_t len;

	return kernels__read_file(path, 65536, KERNELS__READ_PREFIX, &text, &len, NULL) == 0 ? text : NULL;
}

static int is_ident_start(int c)
{
	return isalpha(c) || c == '_';
}

static int is_ident(int c)
{
	return isalnum(c) || c == '_';
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* One string literal ('x', "x", r'x', a triple-quoted one on one line)
 * followed only by blanks, a comment or a ';'. Its text, or NULL for
 * anything else (None, an expression, an escape): then the value cannot be
 * known from the text. */
static char *py_string_literal(const char *p)
{
	const char *close, *after;
	char quote[4] = { 0 };
	size_t q;

	if ((*p == 'r' || *p == 'R' || *p == 'u' || *p == 'U') && (p[1] == '\'' || p[1] == '"'))
		p++;
	if (*p != '\'' && *p != '"')
		return NULL;
	q = p[1] == *p && p[2] == *p ? 3 : 1;
	memset(quote, *p, q);
	p += q;
	if (!(close = strstr(p, quote)) || memchr(p, '\n', (size_t)(close - p)) || memchr(p, '\\', (size_t)(close - p)))
		return NULL;
	after = skip_blanks(close + q);
	if (*after && *after != '\n' && *after != '\r' && *after != '#' && *after != ';')
		return NULL;
	return strndup(p, (size_t)(close - p));
}

/* Whether `line` is a top-level assignment to `name`, in the forms Python
 * packages write: `name = '1.0'`, `name: Optional[str] = "1.0"`, chained
 * `__version__ = version = '1.0'` (setuptools-scm, vcs-versioning), with a
 * trailing comment. *value is the string, or NULL when it is not a plain
 * string. Indented lines (inside try:, if:) and bare annotations
 * (`name: str`) do not count. */
static int py_assigns(const char *line, const char *name, char **value)
{
	size_t len = strlen(name);
	const char *p = line;
	int first = 1, hit = 0;

	*value = NULL;
	while (is_ident_start((unsigned char)*p)) {
		const char *id = p, *q;
		while (is_ident((unsigned char)*p))
			p++;
		q = skip_blanks(p);
		if (first && *q == ':')
			/* An annotation: one target, then `=` on the same line. */
			while (*q && *q != '=' && *q != '\n')
				q++;
		if (*q != '=' || q[1] == '=')
			return 0;
		hit |= (size_t)(p - id) == len && !strncmp(id, name, len);
		first = 0;
		p = skip_blanks(q + 1);
		/* Chained: another `target =` follows; else the value. */
		for (q = p; is_ident((unsigned char)*q); q++)
			;
		q = skip_blanks(q);
		if (is_ident_start((unsigned char)*p) && *q == '=' && q[1] != '=')
			continue;
		if (hit)
			*value = py_string_literal(p);
		return hit;
	}
	return 0;
}

/* The string value the top-level assignments of a Python file give `name`
 * (the last one wins, as when the module runs); NULL when absent, None or
 * not a plain string. */
static char *py_string_assignment(const char *text, const char *name)
{
	const char *line = text;
	char *result = NULL, *v;

	for (; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		if (!py_assigns(line, name, &v))
			continue;
		free(result);
		result = v;
	}
	return result;
}

/* ---- facts fixed for the life of the process --------------------------- */

static struct {
	char cpu[64];
	char os[64];
	char glibc[32];
	int macos_version;
} machine; /* written once, under machine_once; read-only after */
static pthread_once_t machine_once = PTHREAD_ONCE_INIT;

static void detect_machine(void)
{
	struct utsname u;
	size_t i;

	if (uname(&u) == 0) {
		snprintf(machine.cpu, sizeof(machine.cpu), "%.63s", u.machine);
		snprintf(machine.os, sizeof(machine.os), "%.63s", u.sysname);
		for (i = 0; machine.os[i]; i++)
			machine.os[i] = (char)tolower((unsigned char)machine.os[i]);
		/* Variant names use Python's spelling of the cpu. */
		if (!strcmp(machine.cpu, "arm64"))
			snprintf(machine.cpu, sizeof(machine.cpu), "aarch64");
		else if (!strcmp(machine.cpu, "AMD64"))
			snprintf(machine.cpu, sizeof(machine.cpu), "x86_64");
	}
	snprintf(machine.glibc, sizeof(machine.glibc), "%s", gnu_get_libc_version());
}

/* ---- torch and tvm-ffi in this process --------------------------------- */

typedef struct {
	char *c10;     /* path of libc10 */
	char *torch;   /* path of libtorch / libtorch_cpu */
	char *tvm_ffi; /* path of libtvm_ffi */
} loaded_libs;

static int has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	loaded_libs *l = data;
	const char *name = info->dlpi_name, *base;
	(void)size;

	if (!name || !*name)
		return 0;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (!l->c10 && has_prefix(base, "libc10.so"))
		l->c10 = strdup(name);
	else if (!l->torch && (has_prefix(base, "libtorch_cpu.so") || has_prefix(base, "libtorch.so")))
		l->torch = strdup(name);
	else if (!l->tvm_ffi && has_prefix(base, "libtvm_ffi.so"))
		l->tvm_ffi = strdup(name);
	return 0;
}

/* The folder above the one holding `lib` (torch/lib/libc10.so -> torch). */
static char *package_root(const char *lib)
{
	char real[PATH_MAX], *dir;

	if (!kernels__realpath(lib, real, NULL))
		return NULL;
	dir = dirname(real);      /* .../torch/lib */
	dir = dirname(dir);       /* .../torch */
	return strdup(dir);
}

/* The C++ ABI of libc10: a known c10 function taking a std::string is
 * exported under one of two manglings. Failing that, any c10 export in the
 * cxx11 inline namespace tells. */
static const char *const c10_cxx11_symbol =
	"_ZN3c106detail14torchCheckFailEPKcS2_jRKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE";
static const char *const c10_cxx98_symbol = "_ZN3c106detail14torchCheckFailEPKcS2_jRKSs";

/* 1 or 0 once a defined symbol tells the ABI; c10 and cxx11 gather the
 * weaker evidence meanwhile. */
static int on_c10_symbol(const Elf64_Sym *sym, const char *name, uint64_t offset, void *payload)
{
	int *seen = payload; /* [0]: a c10 export, [1]: one in the cxx11 namespace */

	(void)offset;
	if (sym->st_shndx == SHN_UNDEF)
		return 0;
	if (!strcmp(name, c10_cxx11_symbol))
		return 2;
	if (!strcmp(name, c10_cxx98_symbol))
		return 1;
	if (has_prefix(name, "_ZN3c10")) {
		seen[0] = 1;
		seen[1] |= strstr(name, "St7__cxx11") != NULL;
	}
	return 0;
}

/* The ABI from the names libc10 defines in its dynamic symbol table, read
 * from the file: torch is never loaded for this (-1: cannot tell). */
static int elf_file_abi(const char *path)
{
	kernels__elf_file f;
	int fd = open(path, O_RDONLY | O_CLOEXEC), seen[2] = { 0, 0 }, rc;

	if (fd < 0)
		return -1;
	if ((rc = kernels__elf_open(&f, fd, path)) == 0)
		rc = kernels__elf_symbols(&f, on_c10_symbol, seen);
	kernels__elf_close(&f);
	close(fd);
	if (rc < 0) {
		kernels_error_clear(); /* an unreadable libc10 only leaves the ABI unknown */
		return -1;
	}
	return rc == 2 ? 1 : rc == 1 ? 0 : seen[1] ? 1 : seen[0] ? 0 : -1;
}

/* A loaded libc10 answers dlsym; the file's symbol table otherwise. */
static int loaded_torch_abi(const char *lib)
{
	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
	int abi = -1;

	if (h) {
		if (dlsym(h, c10_cxx11_symbol))
			abi = 1;
		else if (dlsym(h, c10_cxx98_symbol))
			abi = 0;
		dlclose(h);
	}
	return abi >= 0 ? abi : elf_file_abi(lib);
}

typedef struct {
	int version;           /* major*100+minor; 0 none */
	int cxx11_abi;
	char *version_string;
	char *path;            /* the lib/ folder */
	const char *source;    /* static: "process", "option", ... */
	char *backend;         /* NULL: unknown */
	int backend_version;
} torch_info;

static void torch_info_free(torch_info *t)
{
	free(t->version_string);
	free(t->path);
	free(t->backend);
	memset(t, 0, sizeof(*t));
	t->cxx11_abi = -1;
}

/* torch/version.py of a pip install: __version__, cuda, hip, xpu. */
static int torch_from_version_py(torch_info *t, const char *root)
{
	char *path = kernels__sprintf("%s/version.py", root), *text, *v;

	text = path ? read_small_file(path) : NULL;
	free(path);
	if (!text)
		return 0;
	t->version_string = py_string_assignment(text, "__version__");
	if ((v = py_string_assignment(text, "cuda"))) {
		t->backend = strdup("cuda");
		t->backend_version = kernels__version_major_minor(v);
	} else if ((v = py_string_assignment(text, "hip"))) {
		t->backend = strdup("rocm");
		t->backend_version = kernels__version_major_minor(v);
	} else if ((v = py_string_assignment(text, "xpu")) && strlen(v) >= 6) {
		/* torch.version.xpu is e.g. "20250100": kernels reads [0:4].[5]. */
		t->backend = strdup("xpu");
		t->backend_version = atoi((char[5]){ v[0], v[1], v[2], v[3], 0 }) * 100 + (v[5] - '0');
	} else {
		t->backend = strdup("cpu");
	}
	free(v);
	free(text);
	return t->version_string != NULL;
}

/* libtorch archives ship build-version, e.g. "2.5.1+cu124". */
static int torch_from_build_version(torch_info *t, const char *root)
{
	char *path = kernels__sprintf("%s/build-version", root), *text, *plus;
	size_t n;

	text = path ? read_small_file(path) : NULL;
	free(path);
	if (!text)
		return 0;
	n = strcspn(text, "\r\n \t");
	text[n] = '\0';
	t->version_string = text;
	if ((plus = strchr(text, '+'))) {
		const char *tag = plus + 1;
		size_t d = strspn(tag + 2, "0123456789");
		if (has_prefix(tag, "cu") && d >= 2 && !tag[2 + d]) {
			/* As the variant grammar reads cu126: the last digit is the minor. */
			int all = atoi(tag + 2);
			t->backend = strdup("cuda");
			t->backend_version = (all / 10) * 100 + all % 10;
		} else if (has_prefix(tag, "rocm")) {
			t->backend = strdup("rocm");
			t->backend_version = kernels__version_major_minor(tag + 4);
		} else if (!strcmp(tag, "cpu")) {
			t->backend = strdup("cpu");
		}
	}
	return 1;
}

/* The torch whose package folder is `root` (version.py or build-version,
 * libraries in root/lib). `loaded`: the path of its loaded libc10/libtorch,
 * NULL when it is only on disk. 0 when `root` holds no torch. */
static int torch_at(torch_info *t, const char *root, const char *loaded, const char *source)
{
	char *c10;

	torch_info_free(t);
	if (!torch_from_version_py(t, root)) {
		torch_info_free(t);
		if (!torch_from_build_version(t, root)) {
			torch_info_free(t);
			return 0;
		}
	}
	if ((t->version = kernels__version_major_minor(t->version_string)) <= 0)
		t->version = 0;
	if (t->backend_version < 0)
		t->backend_version = 0;
	t->source = source;
	if (loaded) {
		char real[PATH_MAX];
		t->cxx11_abi = loaded_torch_abi(loaded);
		t->path = kernels__realpath(loaded, real, NULL) ? strdup(dirname(real)) : NULL;
	} else if ((t->path = kernels__sprintf("%s/lib", root)) && (c10 = kernels__sprintf("%s/libc10.so", t->path))) {
		t->cxx11_abi = elf_file_abi(c10);
		free(c10);
	}
	if (!t->path) {
		torch_info_free(t);
		return KERNELS_ENOMEM;
	}
	return 1;
}

/* ---- torch outside the process ------------------------------------------- */

static int is_dir(const char *path)
{
	struct stat st;
	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

static int torch_files_in(const char *dir)
{
	char *a = kernels__sprintf("%s/version.py", dir), *b = kernels__sprintf("%s/build-version", dir);
	int yes = (a && !access(a, R_OK)) || (b && !access(b, R_OK));
	free(a);
	free(b);
	return yes;
}

/* The package folder of the torch at `dir`: the folder itself or, for its
 * lib/, the one above. NULL when neither holds a torch. */
static char *torch_root_of(const char *dir)
{
	char real[PATH_MAX], up[PATH_MAX];
	const char *base;

	if (!realpath(dir, real) || !is_dir(real))
		return NULL;
	if (torch_files_in(real))
		return strdup(real);
	base = strrchr(real, '/');
	if (!base || strcmp(base + 1, "lib"))
		return NULL;
	snprintf(up, sizeof(up), "%s", real);
	*strrchr(up, '/') = '\0';
	return torch_files_in(up) ? strdup(up) : NULL;
}

/* `site`/torch when it is a torch: 1 found, 0 not, <0 an error. */
static int torch_in_site(torch_info *t, const char *site, const char *source)
{
	char *dir = kernels__sprintf("%s/torch", site), *root;
	int rc;

	if (!dir)
		return KERNELS_ENOMEM;
	root = torch_root_of(dir);
	free(dir);
	if (!root)
		return 0;
	rc = torch_at(t, root, NULL, source);
	free(root);
	return rc;
}

/* {base}/python{ver}/{tail}: with `ver` NULL, each python3.N folder of base. */
static int torch_in_versions(torch_info *t, const char *base, const char *ver, const char *tail, const char *source)
{
	struct dirent *de;
	DIR *d;
	int rc = 0;

	if (ver) {
		char *site = kernels__sprintf("%s/python%s/%s", base, ver, tail);
		rc = site ? torch_in_site(t, site, source) : KERNELS_ENOMEM;
		free(site);
		return rc;
	}
	if (!(d = opendir(base)))
		return 0;
	while (rc == 0 && (de = readdir(d))) {
		if (has_prefix(de->d_name, "python3.") && isdigit((unsigned char)de->d_name[8]))
			rc = torch_in_versions(t, base, de->d_name + 6, tail, source);
	}
	closedir(d);
	return rc;
}

/* The site folders of an installation at `prefix`, in the order Python
 * puts them on sys.path (user site first, then Debian's and the usual). */
static int torch_in_prefix(const kernels__config *cfg, torch_info *t, const char *prefix, const char *ver,
			   int user_site, const char *source)
{
	char *lib = kernels__sprintf("%s/lib", prefix), *local = kernels__sprintf("%s/local/lib", prefix);
	char *debian = kernels__sprintf("%s/lib/python3/dist-packages", prefix), *user = NULL;
	const char *home = env(cfg, "PYTHONUSERBASE") ? env(cfg, "PYTHONUSERBASE") : NULL;
	int rc = 0;

	if (user_site && !env(cfg, "PYTHONNOUSERSITE")) {
		if (home)
			user = kernels__sprintf("%s/lib", home);
		else if (env(cfg, "HOME"))
			user = kernels__sprintf("%s/.local/lib", env(cfg, "HOME"));
	}
	if (!lib || !local || !debian)
		rc = KERNELS_ENOMEM;
	if (rc == 0 && user)
		rc = torch_in_versions(t, user, ver, "site-packages", source);
	if (rc == 0)
		rc = torch_in_versions(t, local, ver, "dist-packages", source);
	if (rc == 0)
		rc = torch_in_versions(t, lib, ver, "site-packages", source);
	if (rc == 0)
		rc = torch_in_site(t, debian, source);
	if (rc == 0)
		rc = torch_in_versions(t, lib, ver, "dist-packages", source);
	free(lib);
	free(local);
	free(debian);
	free(user);
	return rc;
}

/* A `key = value` line of pyvenv.cfg; NULL when absent. */
static char *cfg_value(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *line;

	for (line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *p = skip_blanks(line), *end;
		if (strncmp(p, key, len))
			continue;
		p = skip_blanks(p + len);
		if (*p != '=')
			continue;
		p = skip_blanks(p + 1);
		end = p + strcspn(p, "\r\n");
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		return strndup(p, (size_t)(end - p));
	}
	return NULL;
}

/* "3.11" of "3.11.2" or "python3.11"; NULL when it has none. */
static char *major_minor(const char *s)
{
	const char *p = s;
	size_t n;

	if (has_prefix(p, "python"))
		p += 6;
	if (!has_prefix(p, "3.") || !isdigit((unsigned char)p[2]))
		return NULL;
	n = 2 + strspn(p + 2, "0123456789");
	return strndup(p, n);
}

/* The torch that the interpreter at `python` (as found on PATH, links not
 * yet followed) imports. A venv (pyvenv.cfg next to its bin/) reads its own
 * site-packages, and its home's when it includes the system ones. */
static int torch_of_python(const kernels__config *cfg, torch_info *t, const char *python)
{
	char path[PATH_MAX], real[PATH_MAX], *cfg_path, *venv, *ver = NULL, *prefix;
	int rc = 0;

	snprintf(path, sizeof(path), "%s", python);
	prefix = dirname(dirname(path));
	if (!(cfg_path = kernels__sprintf("%s/pyvenv.cfg", prefix)))
		return KERNELS_ENOMEM;
	venv = read_small_file(cfg_path);
	free(cfg_path);
	if (venv) {
		char *v = cfg_value(venv, "version_info"), *sys = cfg_value(venv, "include-system-site-packages"),
		     *home = cfg_value(venv, "home"), *lib = kernels__sprintf("%s/lib", prefix);
		if (!v)
			v = cfg_value(venv, "version");
		ver = v ? major_minor(v) : NULL;
		rc = lib ? torch_in_versions(t, lib, ver, "site-packages", "python3") : KERNELS_ENOMEM;
		if (rc == 0 && sys && !strcasecmp(sys, "true") && home) {
			char *base = strdup(home);
			rc = base ? torch_in_prefix(cfg, t, dirname(base), ver, 1, "python3") : KERNELS_ENOMEM;
			free(base);
		}
		free(v);
		free(sys);
		free(home);
		free(lib);
		free(venv);
		free(ver);
		return rc;
	}
	if (!realpath(python, real))
		return 0;
	ver = major_minor(strrchr(real, '/') + 1);
	rc = torch_in_prefix(cfg, t, dirname(dirname(real)), ver, 1, "python3");
	free(ver);
	return rc;
}

/* The interpreter a pyenv shim runs for python3, chosen as pyenv does:
 * $PYENV_VERSION, else the nearest .python-version, else
 * $PYENV_ROOT/version ("system": none of pyenv's, *system set). */
static char *pyenv_python(const kernels__config *cfg, const char *root, int *system)
{
	char cwd[PATH_MAX], *text = NULL, *tok, *save, *found = NULL;

	*system = 0;
	if (env(cfg, "PYENV_VERSION"))
		text = strdup(env(cfg, "PYENV_VERSION"));
	else if (getcwd(cwd, sizeof(cwd))) {
		for (;;) {
			char *file = kernels__sprintf("%s/.python-version", cwd);
			text = file ? read_small_file(file) : NULL;
			free(file);
			if (text || !strcmp(cwd, "/"))
				break;
			*strrchr(cwd, '/') = '\0';
			if (!cwd[0])
				snprintf(cwd, sizeof(cwd), "/");
		}
	}
	if (!text) {
		char *file = kernels__sprintf("%s/version", root);
		text = file ? read_small_file(file) : NULL;
		free(file);
	}
	for (tok = text ? strtok_r(text, ": \t\r\n", &save) : NULL; tok &&
	     !found; tok = strtok_r(NULL, ": \t\r\n", &save)) {
		char *py;
		if (tok[0] == '#')
			continue;
		if (!strcmp(tok, "system")) {
			*system = 1;
			break;
		}
		py = kernels__sprintf("%s/versions/%s/bin/python3", root, tok);
		if (py && !access(py, X_OK))
			found = py;
		else
			free(py);
	}
	free(text);
	return found;
}

/* The torch of the python3 first on PATH, as that python3 would import it. */
static int torch_of_path_python(const kernels__config *cfg, torch_info *t)
{
	const char *p;

	for (p = env(cfg, "PATH"); p && *p; p += strcspn(p, ":"), p += *p == ':') {
		size_t n = strcspn(p, ":");
		/* An empty entry is the current folder, as the shell reads PATH. */
		char *dir = n ? strndup(p, n) : strdup("."), *py = dir ? kernels__sprintf("%s/python3", dir) : NULL;
		char *real = NULL;
		struct stat st;
		int rc = 0, system = 0;

		if (!py) {
			free(dir);
			return KERNELS_ENOMEM;
		}
		if (stat(py, &st) || !S_ISREG(st.st_mode) || access(py, X_OK)) {
			free(py);
			free(dir);
			continue;
		}
		if (n > 6 && !strcmp(dir + n - 6, "/shims")) {
			/* A pyenv shim is a script: the interpreter is pyenv's choice. */
			char *versions;
			dir[n - 6] = '\0';
			if ((versions = kernels__sprintf("%s/versions", dir)) && is_dir(versions))
				real = pyenv_python(cfg, dir, &system);
			free(versions);
		}
		if (!system)
			rc = torch_of_python(cfg, t, real ? real : py);
		free(real);
		free(py);
		free(dir);
		if (!system) /* pyenv's "system": the next python3 on PATH */
			return rc;
	}
	return 0;
}

/* The torch of the process, else the one named by the caller, else (when
 * asked for) the one of the virtualenv or of python3. Only an explicitly
 * named folder without a torch is an error. */
static int detect_torch(const kernels__config *cfg, const loaded_libs *l, int outside, torch_info *t)
{
	const char *lib = l->c10 ? l->c10 : l->torch;
	const char *venv = env(cfg, "VIRTUAL_ENV");
	char *root;
	int rc;

	memset(t, 0, sizeof(*t));
	t->cxx11_abi = -1;
	if (lib) {
		/* A loaded torch is the one the variant must match, known or not. */
		if (!(root = package_root(lib)))
			return 0;
		rc = torch_at(t, root, lib, "process");
		free(root);
		return rc < 0 ? rc : 0;
	}
	if (!outside)
		return 0;
	if (cfg->torch_dir) {
		const char *what = !strcmp(cfg->torch_dir_source, "option") ? "kernels_options.torch_dir" :
									     "KERNELS_TORCH_DIR";
		if (!(root = torch_root_of(cfg->torch_dir)))
			return kernels__error(KERNELS_EINVAL,
					      "%s='%s' holds no torch (no version.py or build-version there or above "
					      "its lib/); name the torch package folder (site-packages/torch) or unset "
					      "it", what, cfg->torch_dir);
		rc = torch_at(t, root, NULL, cfg->torch_dir_source);
		free(root);
		return rc < 0 ? rc : 0;
	}
	if (!cfg->find_torch)
		return 0;
	if (venv) {
		char *lib_dir = kernels__sprintf("%s/lib", venv);
		rc = lib_dir ? torch_in_versions(t, lib_dir, NULL, "site-packages", "virtualenv") : KERNELS_ENOMEM;
		free(lib_dir);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	rc = torch_of_path_python(cfg, t);
	return rc < 0 ? rc : 0;
}

/* tvm_ffi/lib/libtvm_ffi.so: the package's __init__.py holds __version__. */
/* The loaded library's own answer, for a libtvm_ffi that came without its
 * Python package (a C/C++ SDK, or copied next to the host). */
static int tvm_ffi_library_version(const char *lib)
{
	struct {
		uint32_t major, minor, patch;
	} v = { 0, 0, 0 };
	void (*get)(void *);
	void *h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);

	if (!h)
		return 0;
	*(void **)&get = dlsym(h, "TVMFFIGetVersion");
	if (get)
		get(&v);
	dlclose(h);
	return get && v.minor <= 99 && v.major <= 1000 ? (int)(v.major * 100 + v.minor) : 0;
}

/* tvm_ffi/lib/libtvm_ffi.so: the package's files hold __version__, as the
 * Python client reads it; else the library says. */
static int detect_tvm_ffi(const loaded_libs *l, char **path)
{
	static const char *const files[] = { "__init__.py", "_version.py", "version.py" };
	char *root = l->tvm_ffi ? package_root(l->tvm_ffi) : NULL;
	size_t i;
	int version = 0;

	*path = NULL;
	for (i = 0; root && i < sizeof(files) / sizeof(files[0]) && version <= 0; i++) {
		char *file = kernels__sprintf("%s/%s", root, files[i]), *text, *v;
		text = file ? read_small_file(file) : NULL;
		free(file);
		v = text ? py_string_assignment(text, "__version__") : NULL;
		version = kernels__version_major_minor(v);
		free(v);
		free(text);
	}
	if (version <= 0 && l->tvm_ffi && (version = tvm_ffi_library_version(l->tvm_ffi)) > 0) {
		free(root);
		root = kernels__strdup(l->tvm_ffi);
		if (root && strrchr(root, '/'))
			*strrchr(root, '/') = '\0';
	}
	if (version <= 0) {
		free(root);
		return 0;
	}
	*path = root;
	return version;
}

/* ---- the chain ---------------------------------------------------------- */

static int env_version(const kernels__config *cfg, const char *name, int *out)
{
	const char *v = env(cfg, name);
	if (!v)
		return 0;
	if (!strcasecmp(v, "none")) {
		*out = 0;
		return 1;
	}
	if ((*out = kernels__version_major_minor(v)) <= 0)
		return kernels__error(KERNELS_EINVAL, "%s='%s' is not a version like 2.11; fix or unset it", name, v);
	return 1;
}

static char *dup_field(const char *s)
{
	return s ? strdup(s) : NULL;
}

void kernels_system_free(kernels_system *sys)
{
	if (!sys)
		return;
	free((char *)sys->backend);
	free((char *)sys->cpu);
	free((char *)sys->os);
	free((char *)sys->glibc);
	free((char *)sys->torch_version_string);
	free((char *)sys->torch_path);
	free((char *)sys->tvm_ffi_path);
	free((char *)sys->backend_source);
	free((char *)sys->torch_source);
	for (int i = 0; i < KERNELS_MAX_GPUS; i++)
		free((char *)sys->gpu_arch_names[i]);
	free(sys);
}

static int chain_torch(const kernels__config *cfg, kernels_system *s, const kernels_system *ov, const torch_info *t)
{
	const char *abi = env(cfg, "KERNELS_CXX11_ABI");
	int v, rc;

	if (ov->torch_version != 0) {
		s->torch_version = ov->torch_version > 0 ? ov->torch_version : 0;
		s->torch_cxx11_abi = ov->torch_version > 0 ? ov->torch_cxx11_abi : -1;
		return 0;
	}
	if ((rc = env_version(cfg, "KERNELS_TORCH_VERSION", &v)) < 0)
		return rc;
	if (rc) {
		s->torch_version = v;
		s->torch_cxx11_abi = -1;
	} else {
		s->torch_version = t->version;
		s->torch_cxx11_abi = t->cxx11_abi;
		s->torch_version_string = dup_field(t->version_string);
		s->torch_path = dup_field(t->path);
		s->torch_source = dup_field(t->path ? t->source : NULL);
		if ((t->version_string && !s->torch_version_string) ||
		    (t->path && (!s->torch_path || !s->torch_source)))
			return kernels__error_oom();
	}
	if (abi) {
		if (strcmp(abi, "0") && strcmp(abi, "1"))
			return kernels__error(KERNELS_EINVAL, "KERNELS_CXX11_ABI='%s' must be 0 or 1; fix or unset it",
					      abi);
		s->torch_cxx11_abi = abi[0] == '1';
	}
	if (!s->torch_version)
		s->torch_cxx11_abi = -1;
	return 0;
}

static int chain_tvm_ffi(const kernels__config *cfg, kernels_system *s, const kernels_system *ov, const loaded_libs *l)
{
	char *path;
	int v, rc;

	if (ov->tvm_ffi_version != 0) {
		s->tvm_ffi_version = ov->tvm_ffi_version > 0 ? ov->tvm_ffi_version : 0;
		return 0;
	}
	if ((rc = env_version(cfg, "KERNELS_TVM_FFI_VERSION", &v)) < 0)
		return rc;
	if (rc) {
		s->tvm_ffi_version = v;
		return 0;
	}
	s->tvm_ffi_version = detect_tvm_ffi(l, &path);
	s->tvm_ffi_path = path;
	return 0;
}

static void set_backend(kernels_system *s, const char *backend, int version, const char *source)
{
	s->backend = strdup(backend);
	s->backend_version = version > 0 ? version : 0;
	s->backend_source = strdup(source);
}

static int chain_backend(const kernels__config *cfg, kernels_system *s, const kernels_system *ov, const torch_info *t,
			 int *forced_cpu)
{
	const char *eb = env(cfg, "KERNELS_BACKEND");
	const kernels__cuda_facts *cuda;
	int v = 0, rc;

	*forced_cpu = 0;
	if (ov->backend && !ov->no_gpu && (rc = kernels__backend_check(ov->backend, "kernels_options.system->backend",
											      "")) < 0)
		return rc;
	if (!ov->backend && !ov->no_gpu && eb && (rc = kernels__backend_check(eb, "KERNELS_BACKEND", "; fix or unset it")) < 0)
		return rc;
	if (ov->no_gpu || (ov->backend && !strcmp(ov->backend, "cpu"))) {
		*forced_cpu = 1;
		set_backend(s, "cpu", 0, "options");
	} else if (ov->backend) {
		set_backend(s, ov->backend, ov->backend_version, "options");
	} else if (eb && !strcmp(eb, "cpu")) {
		*forced_cpu = 1;
		set_backend(s, "cpu", 0, "environment");
	} else if (eb || env(cfg, "KERNELS_CUDA_VERSION")) {
		const char *name = eb ? eb : "cuda";
		if ((rc = env_version(cfg, env(cfg, "KERNELS_BACKEND_VERSION") ? "KERNELS_BACKEND_VERSION" :
				      "KERNELS_CUDA_VERSION", &v)) < 0)
			return rc;
		set_backend(s, name, v, "environment");
	} else if (t->backend && t->version) {
		set_backend(s, t->backend, t->backend_version, "torch");
	} else if ((cuda = kernels__cuda_facts_get())->runtime_version && cuda->gpu_count > 0) {
		/* Without torch, a CUDA runtime alone (a toolkit on a machine
		 * with no driver or no GPU) does not make a CUDA machine. */
		set_backend(s, "cuda", cuda->runtime_version, "cudart");
	} else if (cuda->driver_version && cuda->gpu_count > 0) {
		set_backend(s, "cuda", cuda->driver_version, "driver");
	} else {
		set_backend(s, "cpu", 0, "default");
	}
	return 0;
}

static int chain_gpus(const kernels__config *cfg, kernels_system *s, const kernels_system *ov, int forced_cpu)
{
	const char *ea = env(cfg, "KERNELS_GPU_ARCHS");
	char names[KERNELS_MAX_GPUS][32];
	int n, i;

	s->gpu_count = 0;
	s->current_device = -1;
	memset(names, 0, sizeof(names));
	if (forced_cpu || ov->gpu_count < 0)
		return 0;
	if (ov->gpu_count > 0) {
		s->gpu_count = ov->gpu_count > KERNELS_MAX_GPUS ? KERNELS_MAX_GPUS : ov->gpu_count;
		memcpy(s->gpu_archs, ov->gpu_archs, sizeof(int) * (size_t)s->gpu_count);
		for (i = 0; i < s->gpu_count; i++)
			if (ov->gpu_arch_names[i]) /* "gfx90a:sramecc+:xnack-": the arch is before the features */
				snprintf(names[i], sizeof(names[i]), "%.*s",
					 (int)strcspn(ov->gpu_arch_names[i], ":") > 31
					 ? 31 : (int)strcspn(ov->gpu_arch_names[i], ":"), ov->gpu_arch_names[i]);
			else
				snprintf(names[i], sizeof(names[i]), "%d.%d", ov->gpu_archs[i] / 10,
					 ov->gpu_archs[i] % 10);
	} else if (ea) {
		if (!strcasecmp(ea, "none"))
			return 0;
		if ((n = parse_gpu_archs(ea, s->gpu_archs, names, KERNELS_MAX_GPUS)) < 0)
			return kernels__error(KERNELS_EINVAL,
					      "KERNELS_GPU_ARCHS='%s' is not a list like 9.0,8.6 or gfx90a,gfx942 (at "
					      "most %d); fix or unset it", ea, KERNELS_MAX_GPUS);
		s->gpu_count = n;
	} else {
		/* the GPUs of the selected backend, from its row of the table */
		const kernels__backend *b = kernels__backend_find(s->backend);
		kernels__gpu_list list = { 0 };
		if (b && b->detect)
			b->detect(&list);
		for (i = 0; i < list.count; i++) {
			int maj = 0, min = 0;
			memcpy(names[i], list.arch[i], sizeof(names[i]));
			s->gpu_archs[i] = sscanf(list.arch[i], "%d.%d", &maj, &min) == 2 ? maj * 10 + min : 0;
		}
		s->gpu_count = list.count;
	}
	for (i = 0; i < s->gpu_count; i++)
		if (!(s->gpu_arch_names[i] = strdup(names[i])))
			return kernels__error_oom();
	if (s->gpu_count > 0) {
		s->current_device = ov->current_device > 0 ? ov->current_device
				    : s->backend && !strcmp(s->backend, "cuda") ? kernels__cuda_current_device() : 0;
		if (s->current_device >= s->gpu_count)
			s->current_device = 0;
	}
	return 0;
}

int kernels__system_detect(const kernels__config *cfg, kernels_system **out)
{
	const kernels_system *ov = &cfg->system_override;
	loaded_libs libs = { 0 };
	torch_info torch;
	kernels_system *s;
	int rc, forced_cpu;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_system_detect: out is NULL");
	*out = NULL;
	pthread_once(&machine_once, detect_machine);
	kernels__cuda_env_from(cfg);
	if (!(s = calloc(1, sizeof(*s))))
		return kernels__error_oom();
	s->version = KERNELS_SYSTEM_VERSION;
	dl_iterate_phdr(phdr_cb, &libs);
	/* An installed torch is looked for only when no torch version is given. */
	rc = detect_torch(cfg, &libs, ov->torch_version == 0 && !env(cfg, "KERNELS_TORCH_VERSION"), &torch);

	if (rc < 0 || (rc = chain_torch(cfg, s, ov, &torch)) < 0 || (rc = chain_tvm_ffi(cfg, s, ov, &libs)) < 0 ||
	    (rc = chain_backend(cfg, s, ov, &torch, &forced_cpu)) < 0 || (rc = chain_gpus(cfg, s, ov, forced_cpu)) < 0)
		goto fail;
	s->cpu = strdup(ov->cpu ? ov->cpu : env(cfg, "KERNELS_CPU") ? env(cfg, "KERNELS_CPU") : machine.cpu);
	s->os = strdup(ov->os ? ov->os : env(cfg, "KERNELS_OS") ? env(cfg, "KERNELS_OS") : machine.os);
	s->glibc = machine.glibc[0] ? strdup(machine.glibc) : NULL;
	s->macos_version = ov->macos_version ? ov->macos_version : machine.macos_version;
	if (!forced_cpu) {
		const kernels__cuda_facts *cuda = kernels__cuda_facts_get();
		s->cuda_runtime_version = cuda->runtime_version;
		s->cuda_driver_version = cuda->driver_version;
	}
	if (!s->cpu || !s->os || !s->backend || !s->backend_source) {
		rc = kernels__error_oom();
		goto fail;
	}
	torch_info_free(&torch);
	free(libs.c10);
	free(libs.torch);
	free(libs.tvm_ffi);
	*out = s;
	return 0;
fail:
	torch_info_free(&torch);
	free(libs.c10);
	free(libs.torch);
	free(libs.tvm_ffi);
	kernels_system_free(s);
	return rc;
}

int kernels_system_detect(kernels_system **out, const kernels_options *opts)
{
	kernels__config cfg;
	int rc;

	if (!out)
		return kernels__error(KERNELS_EINVAL, "kernels_system_detect: out is NULL; pass a kernels_system **");
	*out = NULL;
	if ((rc = kernels__config_load(&cfg, opts)) < 0)
		return rc;
	rc = kernels__system_detect(&cfg, out);
	kernels__config_free(&cfg);
	return rc;
}

size_t kernels_system_format(char *buf, size_t size, const kernels_system *sys)
{
	kernels__buf b = { 0 };
	size_t n;
	int i;

	if (!sys) {
		kernels__buf_puts(&b, "(no system)");
	} else {
		if (sys->torch_version > 0) {
			kernels__buf_printf(&b, "torch %d.%d", sys->torch_version / 100, sys->torch_version % 100);
			if (sys->torch_cxx11_abi >= 0)
				kernels__buf_printf(&b, " (%s ABI)", sys->torch_cxx11_abi ? "cxx11" : "cxx98");
			if (sys->torch_source && sys->torch_path)
				kernels__buf_printf(&b, " from %s at %s", sys->torch_source, sys->torch_path);
		} else {
			kernels__buf_puts(&b, "no torch");
		}
		if (sys->tvm_ffi_version > 0)
			kernels__buf_printf(&b, ", tvm-ffi %d.%d", sys->tvm_ffi_version / 100,
					    sys->tvm_ffi_version % 100);
		kernels__buf_printf(&b, ", backend %s", sys->backend ? sys->backend : "cpu");
		if (sys->backend_version > 0)
			kernels__buf_printf(&b, " %d.%d", sys->backend_version / 100, sys->backend_version % 100);
		if (sys->backend_source)
			kernels__buf_printf(&b, " (from %s)", sys->backend_source);
		if (sys->gpu_count > 0) {
			kernels__buf_puts(&b, ", GPUs");
			for (i = 0; i < sys->gpu_count && i < KERNELS_MAX_GPUS; i++) {
				if (sys->gpu_arch_names[i])
					kernels__buf_printf(&b, " %s", sys->gpu_arch_names[i]);
				else
					kernels__buf_printf(&b, " %d.%d", sys->gpu_archs[i] / 10,
							    sys->gpu_archs[i] % 10);
			}
			if (sys->gpu_count > 1 && sys->current_device >= 0)
				kernels__buf_printf(&b, " (current: %d)", sys->current_device);
		}
		kernels__buf_printf(&b, ", %s-%s", sys->cpu ? sys->cpu : "?", sys->os ? sys->os : "?");
		if (sys->glibc)
			kernels__buf_printf(&b, ", glibc %s", sys->glibc);
		if (sys->cuda_driver_version > 0)
			kernels__buf_printf(&b, ", CUDA driver %d.%d", sys->cuda_driver_version / 100,
					    sys->cuda_driver_version % 100);
		if (sys->cuda_runtime_version > 0)
			kernels__buf_printf(&b, ", CUDA runtime %d.%d", sys->cuda_runtime_version / 100,
					    sys->cuda_runtime_version % 100);
	}
	n = b.ptr ? b.len : 0;
	if (size > 0) {
		size_t c = n < size - 1 ? n : size - 1;
		if (c)
			memcpy(buf, b.ptr, c);
		buf[c] = '\0';
	}
	kernels__buf_free(&b);
	return n;
}

void kernels__system_backend_str(const kernels_system *s, char *buf, size_t size)
{
	const char *name = s && s->backend && *s->backend ? s->backend : "cpu";
	const kernels__backend *b = kernels__backend_find(name);

	if (b && b->versioned)
		snprintf(buf, size, "%s%d%d", b->prefix, s->backend_version / 100, s->backend_version % 100);
	else
		snprintf(buf, size, "%s", name);
}

/* The torch a variant must match: the one loaded in this process, else
 * the one the caller names, else the one the virtualenv or the python3 on
 * PATH would import (see torch_locate.h). Nothing is loaded or run to
 * learn it: the package's version files and libc10's symbol table say. */
#include "torch_locate.h"
#include "elffile.h"
#include "error.h"
#include "fork.h"
#include "pysource.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* The environment as the call's configuration captured it (config.h). */
static const char *env(const kernels__config *cfg, const char *name)
{
	return kernels__config_env(cfg, name);
}

/* ---- torch in this process --------------------------------------------- */

static int has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	kernels__loaded_libs *l = data;
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

void kernels__loaded_libs_find(kernels__loaded_libs *l)
{
	memset(l, 0, sizeof(*l));
	kernels__dl_iterate_phdr(phdr_cb, l);
}

void kernels__loaded_libs_free(kernels__loaded_libs *l)
{
	free(l->c10);
	free(l->torch);
	free(l->tvm_ffi);
	memset(l, 0, sizeof(*l));
}

/* The folder above the one holding `lib` (torch/lib/libc10.so -> torch). */
char *kernels__package_root(const char *lib)
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

void kernels__torch_info_free(kernels__torch_info *t)
{
	free(t->version_string);
	free(t->path);
	free(t->backend);
	memset(t, 0, sizeof(*t));
	t->cxx11_abi = -1;
}

/* torch/version.py of a pip install: __version__, cuda, hip, xpu. */
static int torch_from_version_py(kernels__torch_info *t, const char *root)
{
	char *path = kernels__sprintf("%s/version.py", root), *text, *v;

	text = path ? kernels__read_small_file(path) : NULL;
	free(path);
	if (!text)
		return 0;
	t->version_string = kernels__py_string_assignment(text, "__version__");
	if ((v = kernels__py_string_assignment(text, "cuda"))) {
		t->backend = strdup("cuda");
		t->backend_version = kernels__version_major_minor(v);
	} else if ((v = kernels__py_string_assignment(text, "hip"))) {
		t->backend = strdup("rocm");
		t->backend_version = kernels__version_major_minor(v);
	} else if ((v = kernels__py_string_assignment(text, "xpu")) && strlen(v) >= 6) {
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
static int torch_from_build_version(kernels__torch_info *t, const char *root)
{
	char *path = kernels__sprintf("%s/build-version", root), *text, *plus;
	size_t n;

	text = path ? kernels__read_small_file(path) : NULL;
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
 * libraries in root/lib). `loaded`: the path of its loaded libc10/libtorch
 * as the dynamic loader names it, and `loaded_dir` its folder, resolved
 * (the caller resolved it to find `root`); both NULL when it is only on
 * disk. 0 when `root` holds no torch. */
static int torch_at(kernels__torch_info *t, const char *root, const char *loaded, const char *loaded_dir,
		    const char *source)
{
	char *c10;

	kernels__torch_info_free(t);
	if (!torch_from_version_py(t, root)) {
		kernels__torch_info_free(t);
		if (!torch_from_build_version(t, root)) {
			kernels__torch_info_free(t);
			return 0;
		}
	}
	if ((t->version = kernels__version_major_minor(t->version_string)) <= 0)
		t->version = 0;
	if (t->backend_version < 0)
		t->backend_version = 0;
	t->source = source;
	if (loaded) {
		t->cxx11_abi = loaded_torch_abi(loaded);
		t->path = strdup(loaded_dir);
	} else if ((t->path = kernels__sprintf("%s/lib", root)) && (c10 = kernels__sprintf("%s/libc10.so", t->path))) {
		t->cxx11_abi = elf_file_abi(c10);
		free(c10);
	}
	if (!t->path) {
		kernels__torch_info_free(t);
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
static int torch_in_site(kernels__torch_info *t, const char *site, const char *source)
{
	char *dir = kernels__sprintf("%s/torch", site), *root;
	int rc;

	if (!dir)
		return KERNELS_ENOMEM;
	root = torch_root_of(dir);
	free(dir);
	if (!root)
		return 0;
	rc = torch_at(t, root, NULL, NULL, source);
	free(root);
	return rc;
}

/* {base}/python{ver}/{tail}: with `ver` NULL, each python3.N folder of base. */
static int torch_in_versions(kernels__torch_info *t, const char *base, const char *ver, const char *tail,
			     const char *source)
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
static int torch_in_prefix(const kernels__config *cfg, kernels__torch_info *t, const char *prefix, const char *ver,
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

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
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
static int torch_of_python(const kernels__config *cfg, kernels__torch_info *t, const char *python)
{
	char path[PATH_MAX], real[PATH_MAX], *cfg_path, *venv, *ver = NULL, *prefix;
	int rc = 0;

	snprintf(path, sizeof(path), "%s", python);
	prefix = dirname(dirname(path));
	if (!(cfg_path = kernels__sprintf("%s/pyvenv.cfg", prefix)))
		return KERNELS_ENOMEM;
	venv = kernels__read_small_file(cfg_path);
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
			text = file ? kernels__read_small_file(file) : NULL;
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
		text = file ? kernels__read_small_file(file) : NULL;
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

/* The python3 at `py` on PATH, as the torch search asks it: a pyenv shim
 * (a script in {root}/shims) stands for the interpreter pyenv chooses;
 * *skip when pyenv chooses "system" (then the next python3 on PATH runs).
 * Takes `py`; returns the interpreter (malloc'ed), NULL on ENOMEM. */
static char *interpreter_of(const kernels__config *cfg, char *py, const char *dir, int *skip)
{
	size_t n = strlen(dir);
	char *root, *versions, *chosen = NULL;

	*skip = 0;
	if (n <= 6 || strcmp(dir + n - 6, "/shims"))
		return py;
	if (!(root = strndup(dir, n - 6)) || !(versions = kernels__sprintf("%s/versions", root))) {
		free(root);
		free(py);
		return NULL;
	}
	if (is_dir(versions))
		chosen = pyenv_python(cfg, root, skip);
	free(versions);
	free(root);
	if (!chosen)
		return py;
	free(py);
	return chosen;
}

int kernels__path_python3(const kernels__config *cfg, char **out)
{
	const char *p;

	*out = NULL;
	for (p = env(cfg, "PATH"); p && *p; p += strcspn(p, ":"), p += *p == ':') {
		size_t n = strcspn(p, ":");
		/* An empty entry is the current folder, as the shell reads PATH. */
		char *dir = n ? strndup(p, n) : strdup("."), *py = dir ? kernels__sprintf("%s/python3", dir) : NULL;
		struct stat st;
		int skip = 0;

		if (py && (stat(py, &st) || !S_ISREG(st.st_mode) || access(py, X_OK))) {
			free(py);
			free(dir);
			continue;
		}
		py = py ? interpreter_of(cfg, py, dir, &skip) : NULL;
		free(dir);
		if (!py)
			return KERNELS_ENOMEM;
		if (!skip) {
			*out = py;
			return 0;
		}
		free(py);
	}
	return 0;
}

/* The torch of the python3 first on PATH, as that python3 would import it. */
static int torch_of_path_python(const kernels__config *cfg, kernels__torch_info *t)
{
	char *py;
	int rc = kernels__path_python3(cfg, &py);

	if (rc < 0 || !py)
		return rc;
	rc = torch_of_python(cfg, t, py);
	free(py);
	return rc;
}

/* The torch of the process, else the one named by the caller, else (when
 * asked for) the one of the virtualenv or of python3. Only an explicitly
 * named folder without a torch is an error. */
int kernels__torch_locate(const kernels__config *cfg, const kernels__loaded_libs *l, int outside,
			  kernels__torch_info *t)
{
	const char *lib = l->c10 ? l->c10 : l->torch;
	const char *venv = env(cfg, "VIRTUAL_ENV");
	char real[PATH_MAX], *root, *lib_dir;
	int rc;

	memset(t, 0, sizeof(*t));
	t->cxx11_abi = -1;
	if (lib) {
		/* A loaded torch is the one the variant must match, known or not.
		 * Resolved once: its folder is t->path, the one above the package. */
		if (!kernels__realpath(lib, real, NULL))
			return 0;
		if (!(lib_dir = strdup(dirname(real))))  /* .../torch/lib */
			return KERNELS_ENOMEM;
		rc = torch_at(t, dirname(real), lib, lib_dir, "process"); /* .../torch */
		free(lib_dir);
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
		rc = torch_at(t, root, NULL, NULL, cfg->torch_dir_source);
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

/* The compute backends Python kernels 0.17 knows (backends.py), one row
 * each: name, variant prefix, versioned or not, device detection and the
 * arch check. CUDA's GPUs come from cuda_facts.c (NVML or the driver, the
 * slow part shared with the backend version); ROCm's from the amdgpu driver's
 * KFD topology in sysfs; XPU's and TPU's from PCI functions in sysfs,
 * Neuron's and CANN's from their drivers' /dev nodes: no vendor library is
 * needed. Metal has none: KERNELS_GPU_ARCHS names its devices. */
#include "backend.h"
#include "cuda_facts.h"
#include "util.h"
#include "error.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The CUDA GPUs NVML or the driver reports (cuda_facts.c), as archs.
 * Looked up only when a call needs them: never when the backend is forced
 * to cpu. */
static void cuda_gpus(kernels__gpu_list *out)
{
	const kernels__cuda_facts *f = kernels__cuda_facts_get();
	int i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < f->gpu_count; i++)
		snprintf(out->arch[out->count++], sizeof(out->arch[0]), "%d.%d", f->gpu_archs[i] / 10,
			 f->gpu_archs[i] % 10);
}

/* "M.m" -> major, minor; -1 when not that form. */
static int parse_cc(const char *s, size_t n, int *major, int *minor)
{
	const char *dot = memchr(s, '.', n);

	if (!dot || !kernels__is_digits(s, (size_t)(dot - s)) ||
	    !kernels__is_digits(dot + 1, n - (size_t)(dot + 1 - s)) || dot - s > 4 || n - (size_t)(dot + 1 - s) > 4)
		return -1;
	*major = atoi(s);
	*minor = atoi(dot + 1);
	return 0;
}

/* One arch string against a compute capability; -1: not a known format. */
static int cuda_arch_supports(const char *arch, int maj, int min)
{
	size_t n = strlen(arch);
	int ptx = 0, amaj, amin;
	char suffix = 0;

	if (n >= 4 && !strcmp(arch + n - 4, "+PTX")) {
		ptx = 1;
		n -= 4;
	}
	if (n > 0 && (arch[n - 1] == 'a' || arch[n - 1] == 'f'))
		suffix = arch[--n];
	if (parse_cc(arch, n, &amaj, &amin) < 0)
		return -1;
	if (suffix == 'a')
		return maj == amaj && min == amin;
	if (suffix == 'f')
		return maj == amaj && min >= amin;
	if (ptx)
		return maj > amaj || (maj == amaj && min >= amin);
	return maj == amaj && min >= amin;
}

int kernels__cuda_archs_support_str(const char *const *archs, const char *device)
{
	int known = 0, maj, min, i;

	if (!device || parse_cc(device, strlen(device), &maj, &min) < 0)
		return -1;
	for (i = 0; archs && archs[i]; i++) {
		int r = cuda_arch_supports(archs[i], maj, min);
		if (r >= 0)
			known = 1;
		if (r > 0)
			return 1;
	}
	return known ? 0 : -1;
}

int kernels__rocm_archs_support(const char *const *archs, const char *device)
{
	size_t n = device ? strcspn(device, ":") : 0;
	int i;

	if (!n)
		return -1;
	for (i = 0; archs && archs[i]; i++)
		if (strlen(archs[i]) == n && !strncmp(archs[i], device, n))
			return 1;
	return 0;
}

void kernels__gfx_name(unsigned long v, char *out, size_t size)
{
	/* major, minor and stepping; the last two written in hex (gfx90a) */
	snprintf(out, size, "gfx%lu%lx%lx", v / 10000, (v / 100) % 100, v % 100);
}

/* The amdgpu driver lists every agent in /sys/class/kfd/kfd/topology/nodes:
 * GPUs have a non-zero gfx_target_version, in the order HIP numbers them. */
static void rocm_gpus(kernels__gpu_list *out)
{
	static const char *const root = "/sys/class/kfd/kfd/topology/nodes";
	struct dirent **ents = NULL;
	int n = scandir(root, &ents, NULL, versionsort), i;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < n; i++) {
		char path[512], line[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s/%s/properties", root, ents[i]->d_name);
		if (ents[i]->d_name[0] != '.' && (f = fopen(path, "re"))) {
			unsigned long v = 0;
			while (fgets(line, sizeof(line), f))
				if (sscanf(line, "gfx_target_version %lu", &v) == 1)
					break;
			fclose(f);
			if (v && out->count < KERNELS_MAX_GPUS)
				kernels__gfx_name(v, out->arch[out->count++], sizeof(out->arch[0]));
		}
		free(ents[i]);
	}
	free(ents);
}

/* ---- devices from sysfs and /dev, without vendor SDKs ------------------- */

/* Where sysfs and /dev are: "" on a machine, a fake tree in tests. */
static const char *dev_root = "";

#ifdef KERNELS_TESTING
void kernels__backend_set_root(const char *root)
{
	dev_root = root ? root : "";
}
#endif

/* "neuron12" with prefix "neuron": 12; -1 when not prefix+digits. */
static long numbered(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);

	if (strncmp(name, prefix, n) || !kernels__is_digits(name + n, strlen(name + n)) || strlen(name + n) > 6)
		return -1;
	return atol(name + n);
}

/* The device nodes {dev_root}/dev/{prefix}N, by N, each named `arch`. */
static void dev_nodes(kernels__gpu_list *out, const char *prefix, const char *arch)
{
	char dir[512];
	struct dirent **ents = NULL;
	int n, i;

	memset(out, 0, sizeof(*out));
	snprintf(dir, sizeof(dir), "%s/dev", dev_root);
	n = scandir(dir, &ents, NULL, versionsort);
	for (i = 0; i < n; i++) {
		if (numbered(ents[i]->d_name, prefix) >= 0 && out->count < KERNELS_MAX_GPUS)
			snprintf(out->arch[out->count++], sizeof(out->arch[0]), "%s", arch);
		free(ents[i]);
	}
	free(ents);
}

/* The first line of {dir}/{name}, without its newline; "" when unreadable. */
static void read_line(const char *dir, const char *name, char *out, size_t size)
{
	char path[768];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	out[0] = '\0';
	if ((f = fopen(path, "re"))) {
		if (fgets(out, (int)size, f))
			out[strcspn(out, "\n")] = '\0';
		fclose(f);
	}
}

/* PCI functions of `vendor` ("0x8086") whose class starts with one of
 * `classes` (display "0x03", processing accelerator "0x12"), in bus
 * order; each named by its PCI device id ("0x0bd5"). */
static void pci_devices(kernels__gpu_list *out, const char *vendor, const char *const *classes)
{
	char dir[512];
	struct dirent **ents = NULL;
	int n, i;
	size_t c;

	memset(out, 0, sizeof(*out));
	snprintf(dir, sizeof(dir), "%s/sys/bus/pci/devices", dev_root);
	n = scandir(dir, &ents, NULL, alphasort);
	for (i = 0; i < n; i++) {
		char dev[1024], v[32], cls[32], id[32];
		snprintf(dev, sizeof(dev), "%s/%s", dir, ents[i]->d_name);
		read_line(dev, "vendor", v, sizeof(v));
		read_line(dev, "class", cls, sizeof(cls));
		read_line(dev, "device", id, sizeof(id));
		for (c = 0; ents[i]->d_name[0] != '.' && !strcasecmp(v, vendor) && classes[c]; c++)
			if (!strncasecmp(cls, classes[c], strlen(classes[c])) && out->count < KERNELS_MAX_GPUS) {
				snprintf(out->arch[out->count++], sizeof(out->arch[0]), "%s", id);
				break;
			}
		free(ents[i]);
	}
	free(ents);
}

/* Intel GPUs (torch.xpu's devices): display-class PCI functions of vendor
 * 0x8086, named by device id (0x0bd5: Data Center GPU Max). */
static void xpu_devices(kernels__gpu_list *out)
{
	static const char *const display[] = { "0x03", NULL };
	pci_devices(out, "0x8086", display);
}

/* Google TPUs: accelerator-class PCI functions of vendor 0x1ae0. */
static void tpu_devices(kernels__gpu_list *out)
{
	static const char *const accel[] = { "0x12", "0x0880", NULL };
	pci_devices(out, "0x1ae0", accel);
}

/* AWS Neuron devices: the neuron driver's /dev/neuronN. */
static void neuron_devices(kernels__gpu_list *out)
{
	dev_nodes(out, "neuron", "neuron");
}

/* Huawei Ascend NPUs (CANN): the davinci driver's /dev/davinciN (not
 * davinci_manager). */
static void cann_devices(kernels__gpu_list *out)
{
	dev_nodes(out, "davinci", "ascend");
}

static const kernels__backend rows[] = {
	{ "cuda", "cu", "CUDA", 1, "cuda", "CUDA capability", cuda_gpus, kernels__cuda_archs_support_str },
	{ "rocm", "rocm", "ROCm", 1, "rocm", "ROCm arch", rocm_gpus, kernels__rocm_archs_support },
	{ "xpu", "xpu", "XPU", 1, "xpu", "XPU device", xpu_devices, NULL },
	{ "cann", "cann", "CANN", 1, "npu", "NPU", cann_devices, NULL },
	{ "cpu", "cpu", "CPU", 0, "cpu", NULL, NULL, NULL },
	{ "metal", "metal", "Metal", 0, "metal", "Metal device", NULL, NULL },
	{ "neuron", "neuron", "Neuron", 0, "neuron", "Neuron device", neuron_devices, NULL },
	{ "tpu", "tpu", "TPU", 0, "tpu", "TPU", tpu_devices, NULL },
};

#ifdef KERNELS_TESTING
static const kernels__backend *const all[] = { &rows[0], &rows[1], &rows[2], &rows[3],
					       &rows[4], &rows[5], &rows[6], &rows[7], NULL };

const kernels__backend *const *kernels__backends(void)
{
	return all;
}
#endif

const kernels__backend *kernels__backend_find(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(rows) / sizeof(rows[0]); i++)
		if (!strcmp(rows[i].name, name))
			return &rows[i];
	return NULL;
}

/* Edit distance of two short names, a swap of neighbours counting as one
 * edit ("cup" is one from "cpu", two from "cuda"); 9 for long ones. */
static size_t name_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, d[16][16];

	if (la > 14 || lb > 14)
		return 9;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

int kernels__backend_check(const char *name, const char *from, const char *then)
{
	kernels__buf list = { 0 };
	const char *near = NULL;
	size_t i, best = 3;
	int rc;

	if (kernels__backend_find(name))
		return 0;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		size_t d = !strcasecmp(rows[i].name, name) ? 0 : name_distance(name, rows[i].name);
		if (d < best && 2 * d < strlen(rows[i].name)) {
			best = d;
			near = rows[i].name;
		}
		if (kernels__buf_printf(&list, "%s%s", i ? ", " : "", rows[i].name) < 0) {
			kernels__buf_free(&list);
			return KERNELS_ENOMEM;
		}
	}
	if (near)
		rc = kernels__error(KERNELS_EINVAL, "%s is '%.40s', not a backend: did you mean '%s'? (backends: %s)%s",
				    from, name, near, list.ptr, then);
	else
		rc = kernels__error(KERNELS_EINVAL, "%s is '%.40s', not a backend; use one of: %s%s", from, name,
				    list.ptr, then);
	kernels__buf_free(&list);
	return rc;
}

const kernels__backend *kernels__backend_by_prefix(const char *s)
{
	size_t i;

	for (i = 0; s && i < sizeof(rows) / sizeof(rows[0]); i++)
		if (rows[i].versioned ? !strncmp(s, rows[i].prefix, strlen(rows[i].prefix))
				      : !strcmp(s, rows[i].prefix))
			return &rows[i];
	return NULL;
}

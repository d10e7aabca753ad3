/* img2gray: fetch the reference kernel from the Hub with libkernels and
 * convert a colour PNG to gray on the best device the kernel offers.
 *
 *   kernels_img2gray [--repo ORG/NAME] [--revision SPEC] [--torch-lib DIR] [--cpu]
 *                    input.png output.png
 *
 * Torch variants need libtorch in the process: with --torch-lib the
 * program loads it first (as an inference server linked against libtorch
 * would have), so libkernels detects torch and picks the matching variant.
 * The kernel's plain C entry points (img2gray_cpu, img2gray_cuda) are
 * looked up with kernels_symbol(); device memory comes from the CUDA
 * runtime that libtorch brought, found with dlsym. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kernels.h>

typedef int (*cpu_fn)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t);
typedef int (*cuda_fn)(const uint8_t *, uint8_t *, int64_t, int64_t, int64_t, void *);
typedef int (*cuda_malloc_fn)(void **, size_t);
typedef int (*cuda_memcpy_fn)(void *, const void *, size_t, int);
typedef int (*cuda_free_fn)(void *);
typedef int (*cuda_count_fn)(int *);
typedef int (*cuda_sync_fn)(void);

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void load_torch(const char *dir)
{
	static const char *const libs[] = { "libtorch.so", "libtorch_cuda.so" };
	size_t i;

	for (i = 0; i < sizeof(libs) / sizeof(libs[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, libs[i]);
		if (!dlopen(path, RTLD_NOW | RTLD_GLOBAL) && i == 0)
			fprintf(stderr, "img2gray: cannot load %s (%s); continuing without torch\n", path, dlerror());
	}
}

/* Runs the CUDA entry point when the module has one and a GPU is there;
 * returns 1 when it did, 0 to fall back to the CPU. */
static int convert_on_gpu(kernels_kernel *k, const uint8_t *rgb, uint8_t *gray, int64_t h, int64_t w)
{
	cuda_fn run = (cuda_fn)kernels_symbol(k, "img2gray_cuda");
	int (*has_cuda)(void) = (int (*)(void))kernels_symbol(k, "img2gray_has_cuda");
	cuda_malloc_fn cmalloc = (cuda_malloc_fn)dlsym(RTLD_DEFAULT, "cudaMalloc");
	cuda_memcpy_fn cmemcpy = (cuda_memcpy_fn)dlsym(RTLD_DEFAULT, "cudaMemcpy");
	cuda_free_fn cfree = (cuda_free_fn)dlsym(RTLD_DEFAULT, "cudaFree");
	cuda_count_fn ccount = (cuda_count_fn)dlsym(RTLD_DEFAULT, "cudaGetDeviceCount");
	cuda_sync_fn csync = (cuda_sync_fn)dlsym(RTLD_DEFAULT, "cudaDeviceSynchronize");
	void *drgb = NULL, *dgray = NULL;
	size_t n = (size_t)(h * w);
	int devices = 0, ok;

	kernels_error_clear();
	if (!run || !has_cuda || !has_cuda() || !cmalloc || !cmemcpy || !cfree || !ccount || !csync ||
	    ccount(&devices) != 0 || devices == 0)
		return 0;
	ok = cmalloc(&drgb, 3 * n) == 0 && cmalloc(&dgray, n) == 0 && cmemcpy(drgb, rgb, 3 * n, 1) == 0 &&
	     run(drgb, dgray, 1, h, w, NULL) == 0 && csync() == 0 && cmemcpy(gray, dgray, n, 2) == 0;
	cfree(drgb);
	cfree(dgray);
	return ok;
}

static int read_rgb(const char *path, png_image *img, uint8_t **rgb)
{
	memset(img, 0, sizeof(*img));
	img->version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(img, path)) {
		fprintf(stderr, "img2gray: cannot read %s: %s\n", path, img->message);
		return -1;
	}
	img->format = PNG_FORMAT_RGB;
	*rgb = malloc(PNG_IMAGE_SIZE(*img));
	if (!*rgb || !png_image_finish_read(img, NULL, *rgb, 0, NULL)) {
		fprintf(stderr, "img2gray: cannot decode %s: %s\n", path, img->message);
		return -1;
	}
	return 0;
}

static int write_gray(const char *path, png_uint_32 w, png_uint_32 h, const uint8_t *gray)
{
	png_image out;

	memset(&out, 0, sizeof(out));
	out.version = PNG_IMAGE_VERSION;
	out.width = w;
	out.height = h;
	out.format = PNG_FORMAT_GRAY;
	if (!png_image_write_to_file(&out, path, 0, gray, 0, NULL)) {
		fprintf(stderr, "img2gray: cannot write %s: %s\n", path, out.message);
		return -1;
	}
	return 0;
}

static void print_choice(kernels_kernel *k, const kernels_get_stats *st)
{
	const kernels_metadata *m = kernels_kernel_metadata(k);

	printf("kernel    %s@%.12s (%s)\n", st->repo_id, st->commit, kernels_metadata_id(m));
	printf("variant   %s\n", kernels_kernel_variant(k));
	printf("from      %s\n", st->local ? "a local tree" : st->from_cache ? "the cache (no download)"
						   : "the Hub (downloaded now)");
	printf("path      %s\n", kernels_kernel_path(k));
	printf("timings   resolve %.1f ms, select %.1f ms, download %.1f ms (%llu bytes), verify+load %.1f ms\n",
	       st->resolve_ms, st->select_ms, st->download_ms, st->download.bytes_downloaded, st->load_ms);
}

int main(int argc, char **argv)
{
	const char *repo = "kernels-community/img2gray", *revision = ">=1.1.2,<2";
	const char *in = NULL, *out = NULL;
	kernels_kernel *k = NULL;
	kernels_get_stats st;
	png_image img;
	uint8_t *rgb = NULL, *gray = NULL;
	double t0;
	int i, on_gpu = 0, force_cpu = 0, rc = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--repo") && i + 1 < argc)
			repo = argv[++i];
		else if (!strcmp(argv[i], "--revision") && i + 1 < argc)
			revision = argv[++i];
		else if (!strcmp(argv[i], "--torch-lib") && i + 1 < argc)
			load_torch(argv[++i]);
		else if (!strcmp(argv[i], "--cpu"))
			force_cpu = 1;
		else if (!in)
			in = argv[i];
		else if (!out)
			out = argv[i];
	}
	if (!in || !out) {
		fprintf(stderr, "usage: %s [--repo ORG/NAME] [--revision SPEC] [--torch-lib DIR] [--cpu] input.png output.png\n",
			argv[0]);
		return 2;
	}

	if (kernels_get_ext(&k, repo, revision, NULL, &st) < 0) {
		fprintf(stderr, "img2gray: %s\n", kernels_error_last());
		return 1;
	}
	print_choice(k, &st);
	if (read_rgb(in, &img, &rgb) < 0 || !(gray = malloc((size_t)img.width * img.height)))
		goto done;

	t0 = now_ms();
	if (!force_cpu)
		on_gpu = convert_on_gpu(k, rgb, gray, img.height, img.width);
	if (!on_gpu) {
		cpu_fn cpu = (cpu_fn)kernels_symbol(k, "img2gray_cpu");
		if (!cpu || cpu(rgb, gray, 1, img.height, img.width) != 0) {
			fprintf(stderr, "img2gray: the kernel's CPU entry point failed: %s\n", kernels_error_last());
			goto done;
		}
	}
	printf("convert   %ux%u on %s in %.2f ms\n", img.width, img.height, on_gpu ? "the GPU" : "the CPU",
	       now_ms() - t0);
	if (write_gray(out, img.width, img.height, gray) == 0) {
		printf("wrote     %s\n", out);
		rc = 0;
	}
done:
	free(rgb);
	free(gray);
	kernels_kernel_close(k);
	return rc;
}

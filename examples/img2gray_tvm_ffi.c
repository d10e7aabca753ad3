/* img2gray_tvm_ffi: a plain C program (no Python, no torch) that fetches the
 * tvm-ffi variant of the reference kernel with libkernels and converts a
 * colour PNG to gray through the kernel's tvm-ffi function img2gray_cpu.
 *
 *   kernels_img2gray_tvm_ffi [--repo ORG/NAME] [--revision SPEC] [--cpu] input.png output.png
 *
 * With a CUDA variant and a GPU it converts on the GPU (img2gray_cuda, the
 * image in device memory from the CUDA driver API, which the driver's
 * libcuda.so.1 provides: no CUDA toolkit needed); --cpu, a CPU variant or
 * no GPU converts on the CPU (img2gray_cpu).
 *
 * It links libkernels, libtvm_ffi and libpng. libtvm_ffi being in the
 * process is what makes kernels_get() pick a tvm-ffi{Mm}-* variant; the
 * call sequence is the one include/kernels/tvm_ffi.h documents. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kernels.h>
#include <tvm/ffi/c_api.h>

#include "png_io.h"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Prints the error a tvm-ffi function raised and releases it. */
static void print_tvm_ffi_error(const char *what)
{
	TVMFFIObjectHandle err = NULL;
	const TVMFFIErrorCell *cell;

	TVMFFIErrorMoveFromRaised(&err);
	if (!err) {
		fprintf(stderr, "img2gray_tvm_ffi: %s failed without an error object\n", what);
		return;
	}
	cell = (const TVMFFIErrorCell *)((const char *)err + sizeof(TVMFFIObject));
	fprintf(stderr, "img2gray_tvm_ffi: %s: %.*s: %.*s\n", what, (int)cell->kind.size, cell->kind.data,
		(int)cell->message.size, cell->message.data);
	TVMFFIObjectDecRef(err);
}

/* fn(out, in) on one image: in uint8 [h, w, 3], out uint8 [h, w], both on `device`. */
static int convert(void *fn, const char *name, DLDevice device, void *rgb, void *gray, int64_t h, int64_t w)
{
	int64_t in_shape[3] = { h, w, 3 }, out_shape[2] = { h, w };
	DLTensor in = { .data = rgb, .device = device, .ndim = 3, .dtype = { kDLUInt, 8, 1 }, .shape = in_shape };
	DLTensor out = { .data = gray, .device = device, .ndim = 2, .dtype = { kDLUInt, 8, 1 }, .shape = out_shape };
	TVMFFIAny args[2] = { { .type_index = kTVMFFIDLTensorPtr, .v_ptr = &out },
			      { .type_index = kTVMFFIDLTensorPtr, .v_ptr = &in } };
	TVMFFIAny result = { .type_index = kTVMFFINone };

	if (((TVMFFISafeCallType)fn)(NULL, args, 2, &result) != 0) {
		print_tvm_ffi_error(name);
		return -1;
	}
	if (result.type_index >= kTVMFFIStaticObjectBegin)
		TVMFFIObjectDecRef(result.v_obj);
	return 0;
}

/* The few CUDA driver calls a host needs to hand the kernel device memory. */
typedef struct {
	int (*init)(unsigned), (*device_get)(int *, int), (*count)(int *), (*retain)(void **, int),
		(*set_current)(void *), (*alloc)(unsigned long long *, size_t), (*free)(unsigned long long),
		(*htod)(unsigned long long, const void *, size_t), (*dtoh)(void *, unsigned long long, size_t),
		(*sync)(void);
} cuda_driver;

static int cuda_open(cuda_driver *d)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	void *ctx = NULL;
	int dev = 0, n = 0;

	if (!h)
		return -1;
	*(void **)&d->init = dlsym(h, "cuInit");
	*(void **)&d->device_get = dlsym(h, "cuDeviceGet");
	*(void **)&d->count = dlsym(h, "cuDeviceGetCount");
	*(void **)&d->retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&d->set_current = dlsym(h, "cuCtxSetCurrent");
	*(void **)&d->alloc = dlsym(h, "cuMemAlloc_v2");
	*(void **)&d->free = dlsym(h, "cuMemFree_v2");
	*(void **)&d->htod = dlsym(h, "cuMemcpyHtoD_v2");
	*(void **)&d->dtoh = dlsym(h, "cuMemcpyDtoH_v2");
	*(void **)&d->sync = dlsym(h, "cuCtxSynchronize");
	if (!d->init || !d->device_get || !d->count || !d->retain || !d->set_current || !d->alloc || !d->free ||
	    !d->htod || !d->dtoh || !d->sync || d->init(0) != 0 || d->count(&n) != 0 || n == 0 ||
	    d->device_get(&dev, 0) != 0 || d->retain(&ctx, dev) != 0 || d->set_current(ctx) != 0)
		return -1;
	return 0;
}

/* The image through device memory; the kernel runs on tvm-ffi's current
 * stream of the device (the default one here), so synchronise after it. */
static int convert_on_gpu(cuda_driver *d, void *fn, const uint8_t *rgb, uint8_t *gray, int64_t h, int64_t w)
{
	unsigned long long drgb = 0, dgray = 0;
	size_t n = (size_t)(h * w);
	int ok = d->alloc(&drgb, 3 * n) == 0 && d->alloc(&dgray, n) == 0 && d->htod(drgb, rgb, 3 * n) == 0 &&
		 convert(fn, "img2gray_cuda", (DLDevice){ kDLCUDA, 0 }, (void *)(uintptr_t)drgb,
			 (void *)(uintptr_t)dgray, h, w) == 0 &&
		 d->sync() == 0 && d->dtoh(gray, dgray, n) == 0;
	if (drgb)
		d->free(drgb);
	if (dgray)
		d->free(dgray);
	return ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *repo = "kernels-community/img2gray", *revision = ">=1.1.2,<2";
	const char *in = NULL, *out = NULL;
	kernels_kernel *k = NULL;
	kernels_get_stats st = KERNELS_GET_STATS_INIT;
	cuda_driver cuda = { 0 };
	TVMFFIVersion v;
	uint8_t *rgb = NULL, *gray = NULL;
	uint32_t width = 0, height = 0;
	void *fn;
	double t0;
	int i, rc = 1, force_cpu = 0, gpu;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--repo") && i + 1 < argc)
			repo = argv[++i];
		else if (!strcmp(argv[i], "--revision") && i + 1 < argc)
			revision = argv[++i];
		else if (!strcmp(argv[i], "--cpu"))
			force_cpu = 1;
		else if (!in)
			in = argv[i];
		else if (!out)
			out = argv[i];
	}
	if (!in || !out) {
		fprintf(stderr, "usage: %s [--repo ORG/NAME] [--revision SPEC] [--cpu] input.png output.png\n", argv[0]);
		return 2;
	}

	TVMFFIGetVersion(&v);
	printf("tvm-ffi   %u.%u.%u (linked)\n", v.major, v.minor, v.patch);
	if (kernels_get_ext(&k, &st, repo, revision, NULL) < 0) {
		fprintf(stderr, "img2gray_tvm_ffi: %s\n", kernels_error_last());
		return 1;
	}
	printf("kernel    %s@%.12s (%s)\n", st.repo_id, st.commit, kernels_metadata_id(kernels_kernel_metadata(k)));
	printf("variant   %s\n", kernels_kernel_variant(k));
	printf("from      %s\n", st.local ? "a local tree" : st.from_cache ? "the cache (no download)"
						  : "the Hub (downloaded now)");
	gpu = !force_cpu && !strcmp(kernels_metadata_backend(kernels_kernel_metadata(k)), "cuda") &&
	      cuda_open(&cuda) == 0;
	if (kernels_tvm_ffi_function(&fn, k, gpu ? "img2gray_cuda" : "img2gray_cpu") < 0) {
		fprintf(stderr, "img2gray_tvm_ffi: %s\n", kernels_error_last());
		goto done;
	}
	if (!(rgb = example_read_rgb(in, &width, &height)) || !(gray = malloc((size_t)width * height)))
		goto done;
	t0 = now_ms();
	if (gpu ? convert_on_gpu(&cuda, fn, rgb, gray, height, width) < 0
		: convert(fn, "img2gray_cpu", (DLDevice){ kDLCPU, 0 }, rgb, gray, height, width) < 0)
		goto done;
	printf("convert   %ux%u on the %s in %.2f ms\n", width, height, gpu ? "GPU" : "CPU", now_ms() - t0);
	if (example_write_gray(out, width, height, gray) == 0) {
		printf("wrote     %s\n", out);
		rc = 0;
	}
done:
	free(rgb);
	free(gray);
	kernels_kernel_close(k);
	return rc;
}

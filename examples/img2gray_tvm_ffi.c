/* img2gray_tvm_ffi: a plain C program (no Python, no torch) that fetches the
 * tvm-ffi variant of the reference kernel with libkernels and converts a
 * colour PNG to gray through the kernel's tvm-ffi function img2gray_cpu.
 *
 *   kernels_img2gray_tvm_ffi [--repo ORG/NAME] [--revision SPEC] input.png output.png
 *
 * It links libkernels, libtvm_ffi and libpng. libtvm_ffi being in the
 * process is what makes kernels_get() pick a tvm-ffi{Mm}-* variant; the
 * call sequence is the one include/kernels/tvm_ffi.h documents. */
#define _POSIX_C_SOURCE 200809L
#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kernels.h>
#include <tvm/ffi/c_api.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int read_rgb(const char *path, png_image *img, uint8_t **rgb)
{
	memset(img, 0, sizeof(*img));
	img->version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(img, path)) {
		fprintf(stderr, "img2gray_tvm_ffi: cannot read %s: %s\n", path, img->message);
		return -1;
	}
	img->format = PNG_FORMAT_RGB;
	*rgb = malloc(PNG_IMAGE_SIZE(*img));
	if (!*rgb || !png_image_finish_read(img, NULL, *rgb, 0, NULL)) {
		fprintf(stderr, "img2gray_tvm_ffi: cannot decode %s: %s\n", path, img->message);
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
		fprintf(stderr, "img2gray_tvm_ffi: cannot write %s: %s\n", path, out.message);
		return -1;
	}
	return 0;
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

/* img2gray_cpu(out, in) on one image: in uint8 [h, w, 3], out uint8 [h, w]. */
static int convert(void *fn, uint8_t *rgb, uint8_t *gray, int64_t h, int64_t w)
{
	int64_t in_shape[3] = { h, w, 3 }, out_shape[2] = { h, w };
	DLTensor in = { .data = rgb, .device = { kDLCPU, 0 }, .ndim = 3, .dtype = { kDLUInt, 8, 1 },
			.shape = in_shape };
	DLTensor out = { .data = gray, .device = { kDLCPU, 0 }, .ndim = 2, .dtype = { kDLUInt, 8, 1 },
			 .shape = out_shape };
	TVMFFIAny args[2] = { { .type_index = kTVMFFIDLTensorPtr, .v_ptr = &out },
			      { .type_index = kTVMFFIDLTensorPtr, .v_ptr = &in } };
	TVMFFIAny result = { .type_index = kTVMFFINone };

	if (((TVMFFISafeCallType)fn)(NULL, args, 2, &result) != 0) {
		print_tvm_ffi_error("img2gray_cpu");
		return -1;
	}
	if (result.type_index >= kTVMFFIStaticObjectBegin)
		TVMFFIObjectDecRef(result.v_obj);
	return 0;
}

int main(int argc, char **argv)
{
	const char *repo = "kernels-community/img2gray", *revision = ">=1.1.2,<2";
	const char *in = NULL, *out = NULL;
	kernels_kernel *k = NULL;
	kernels_get_stats st;
	TVMFFIVersion v;
	png_image img;
	uint8_t *rgb = NULL, *gray = NULL;
	void *fn;
	double t0;
	int i, rc = 1;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--repo") && i + 1 < argc)
			repo = argv[++i];
		else if (!strcmp(argv[i], "--revision") && i + 1 < argc)
			revision = argv[++i];
		else if (!in)
			in = argv[i];
		else if (!out)
			out = argv[i];
	}
	if (!in || !out) {
		fprintf(stderr, "usage: %s [--repo ORG/NAME] [--revision SPEC] input.png output.png\n", argv[0]);
		return 2;
	}

	TVMFFIGetVersion(&v);
	printf("tvm-ffi   %u.%u.%u (linked)\n", v.major, v.minor, v.patch);
	if (kernels_get_ext(&k, repo, revision, NULL, &st) < 0) {
		fprintf(stderr, "img2gray_tvm_ffi: %s\n", kernels_error_last());
		return 1;
	}
	printf("kernel    %s@%.12s (%s)\n", st.repo_id, st.commit, kernels_metadata_id(kernels_kernel_metadata(k)));
	printf("variant   %s\n", kernels_kernel_variant(k));
	printf("from      %s\n", st.local ? "a local tree" : st.from_cache ? "the cache (no download)"
						  : "the Hub (downloaded now)");
	if (kernels_tvm_ffi_function(&fn, k, "img2gray_cpu") < 0) {
		fprintf(stderr, "img2gray_tvm_ffi: %s\n", kernels_error_last());
		goto done;
	}
	if (read_rgb(in, &img, &rgb) < 0 || !(gray = malloc((size_t)img.width * img.height)))
		goto done;
	t0 = now_ms();
	if (convert(fn, rgb, gray, img.height, img.width) < 0)
		goto done;
	printf("convert   %ux%u on the CPU in %.2f ms\n", img.width, img.height, now_ms() - t0);
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

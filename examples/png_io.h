/* The examples' image files: an RGB PNG in (8-bit, HWC), a gray PNG out,
 * through libpng's simplified API. Header-only, for C and C++ examples. */
#ifndef KERNELS_EXAMPLE_PNG_IO_H
#define KERNELS_EXAMPLE_PNG_IO_H

#include <png.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads `path` as RGB; returns a malloc'ed w*h*3 buffer, NULL (with a
 * message on stderr) on failure. */
static inline uint8_t *example_read_rgb(const char *path, uint32_t *width, uint32_t *height)
{
	png_image img;
	uint8_t *rgb;

	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&img, path)) {
		fprintf(stderr, "cannot read %s: %s\n", path, img.message);
		return NULL;
	}
	img.format = PNG_FORMAT_RGB;
	rgb = (uint8_t *)malloc(PNG_IMAGE_SIZE(img));
	if (!rgb || !png_image_finish_read(&img, NULL, rgb, 0, NULL)) {
		fprintf(stderr, "cannot decode %s: %s\n", path, img.message);
		free(rgb);
		png_image_free(&img);
		return NULL;
	}
	*width = img.width;
	*height = img.height;
	return rgb;
}

/* Writes a w*h gray image; 0, or -1 with a message on stderr. */
static inline int example_write_gray(const char *path, uint32_t width, uint32_t height, const uint8_t *gray)
{
	png_image out;

	memset(&out, 0, sizeof(out));
	out.version = PNG_IMAGE_VERSION;
	out.width = width;
	out.height = height;
	out.format = PNG_FORMAT_GRAY;
	if (!png_image_write_to_file(&out, path, 0, gray, 0, NULL)) {
		fprintf(stderr, "cannot write %s: %s\n", path, out.message);
		return -1;
	}
	return 0;
}

#endif

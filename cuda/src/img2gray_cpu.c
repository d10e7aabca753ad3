/* The CPU implementation: a straight loop the compiler vectorises. */
#include "img2gray.h"
#include "img2gray_pixel.h"
#include "img2gray_internal.h"

#include <stddef.h>

int img2gray_cpu(const uint8_t *rgb, uint8_t *gray, int64_t batch, int64_t height, int64_t width) {
  int64_t n = img2gray_pixel_count(batch, height, width);
  if (n < 0)
    return IMG2GRAY_EINVAL;
  if (n == 0)
    return IMG2GRAY_OK;
  if (rgb == NULL || gray == NULL)
    return IMG2GRAY_EINVAL;
  const uint8_t *restrict in = rgb;
  uint8_t *restrict out = gray;
  for (int64_t i = 0; i < n; i++)
    out[i] = (uint8_t)img2gray_pixel(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
  return IMG2GRAY_OK;
}

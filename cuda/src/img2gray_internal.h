/* Internal helpers shared by the img2gray implementations. */
#ifndef IMG2GRAY_INTERNAL_H
#define IMG2GRAY_INTERNAL_H

#include <stdint.h>

/* Number of pixels batch * height * width, or -1 when a size is negative or
 * the byte count (3 per pixel) would overflow int64_t. */
static inline int64_t img2gray_pixel_count(int64_t batch, int64_t height, int64_t width) {
  int64_t n;
  if (batch < 0 || height < 0 || width < 0)
    return -1;
  if (__builtin_mul_overflow(batch, height, &n) || __builtin_mul_overflow(n, width, &n))
    return -1;
  if (n > INT64_MAX / 3)
    return -1;
  return n;
}

#endif

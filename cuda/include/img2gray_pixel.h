/*
 * The one definition of img2gray's arithmetic, shared by the CPU (C and C++)
 * and the GPU (CUDA) code so that both give bit-identical results.
 *
 * Luminance weights 0.21 R + 0.72 G + 0.07 B, in 8.8 fixed point: the weights
 * times 256 are 53.76, 184.32 and 17.92, rounded to 54, 184 and 18, which sum
 * to exactly 256 (so white stays 255 and nothing can overflow a byte):
 *
 *     gray = (54 * R + 184 * G + 18 * B + 128) >> 8
 *
 * i.e. round half up of (54 R + 184 G + 18 B) / 256. The maximum sum is
 * 255 * 256 + 128 = 65408, so 32-bit (even 16-bit unsigned) arithmetic is
 * exact. Against round(0.21 R + 0.72 G + 0.07 B) in real arithmetic the
 * result differs by at most 1 (checked exhaustively by the tests).
 */
#ifndef IMG2GRAY_PIXEL_H
#define IMG2GRAY_PIXEL_H

#include <stdint.h>

#if defined(__CUDACC__)
#define IMG2GRAY_HD static __host__ __device__ __forceinline__
#else
#define IMG2GRAY_HD static inline
#endif

#define IMG2GRAY_WEIGHT_R 54u
#define IMG2GRAY_WEIGHT_G 184u
#define IMG2GRAY_WEIGHT_B 18u
#define IMG2GRAY_SHIFT 8u
#define IMG2GRAY_BIAS 128u /* 1 << (IMG2GRAY_SHIFT - 1): round half up */

IMG2GRAY_HD uint32_t img2gray_pixel(uint32_t r, uint32_t g, uint32_t b) {
  return (IMG2GRAY_WEIGHT_R * r + IMG2GRAY_WEIGHT_G * g + IMG2GRAY_WEIGHT_B * b + IMG2GRAY_BIAS) >> IMG2GRAY_SHIFT;
}

#endif

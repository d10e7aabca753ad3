/*
 * img2gray: RGB (uint8, HWC, 3 channels) to gray (uint8), the reference kernel
 * of libkernels. Plain C entry points, exported from every native module of
 * the img2gray variants so a C host can call them through kernels_symbol().
 *
 * Layout: `rgb` holds batch * height * width pixels of 3 bytes (R, G, B),
 * rows contiguous, images contiguous; `gray` holds batch * height * width
 * bytes. Because both are contiguous, the batch is one flat pixel array.
 *
 * Rounding: see img2gray_pixel.h (defined once, shared by CPU and GPU).
 */
#ifndef IMG2GRAY_H
#define IMG2GRAY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define IMG2GRAY_API __declspec(dllexport)
#else
#define IMG2GRAY_API __attribute__((visibility("default")))
#endif

/* Return codes of the entry points (0 is success). */
enum {
  IMG2GRAY_OK = 0,
  IMG2GRAY_EINVAL = -1,   /* NULL pointer or negative/overflowing size */
  IMG2GRAY_ENOCUDA = -2,  /* this module was built without CUDA */
  IMG2GRAY_ECUDA = -3     /* the CUDA runtime reported an error (launch or device) */
};

/* Converts on the CPU. Sizes may be zero (nothing to do). rgb and gray must
 * not overlap. Returns IMG2GRAY_OK or IMG2GRAY_EINVAL. */
IMG2GRAY_API int img2gray_cpu(const uint8_t *rgb, uint8_t *gray,
                              int64_t batch, int64_t height, int64_t width);

/* Converts on the current CUDA device. rgb_dev and gray_dev are device
 * pointers of that device; stream is a cudaStream_t (NULL: the legacy default
 * stream). The work is only enqueued: synchronise the stream before reading
 * gray_dev. Any pointer alignment works; 16-byte aligned buffers take the
 * fastest path. Returns IMG2GRAY_OK, IMG2GRAY_EINVAL, IMG2GRAY_ECUDA (the
 * launch failed: cudaGetLastError() was consumed, see img2gray_last_cuda_error)
 * or IMG2GRAY_ENOCUDA in a module built without CUDA. */
IMG2GRAY_API int img2gray_cuda(const uint8_t *rgb_dev, uint8_t *gray_dev,
                               int64_t batch, int64_t height, int64_t width,
                               void *stream);

/* The cudaError_t of the last failing img2gray_cuda call on this thread
 * (0 when none), for messages; cudaGetErrorString() turns it into text. */
IMG2GRAY_API int img2gray_last_cuda_error(void);

/* 1 when this module contains the CUDA implementation, else 0. */
IMG2GRAY_API int img2gray_has_cuda(void);

#ifdef __cplusplus
}
#endif

#endif

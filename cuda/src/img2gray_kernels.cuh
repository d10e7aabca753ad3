/*
 * The img2gray CUDA kernels, in a header so the benchmark can time the same
 * code with other launch shapes. The entry point is in img2gray_cuda.cu.
 *
 * The work is memory-bound (3 bytes in, 1 out per pixel, ~8 integer
 * operations), so the kernel is written for bandwidth:
 *  - the batch is one flat array of n = batch*height*width pixels (HWC,
 *    contiguous), so every image shape, odd widths included, is the same loop;
 *  - the fast path moves 16 pixels per thread and step: three 16-byte loads
 *    (48 bytes of RGB) and one 16-byte store (16 gray bytes). Consecutive
 *    threads read consecutive 48-byte pieces, so a warp covers 1536 contiguous
 *    bytes in three load instructions (each 128-byte line is fully used, the
 *    lines of one warp are fetched once and served from L1 to the next two
 *    loads) and stores 512 contiguous bytes;
 *  - K such pieces per thread are loaded before any is used, so each thread
 *    has 48*K bytes in flight; a grid-stride loop covers any n;
 *  - the n % 16 pixels left over are done one per thread by the first threads;
 *  - buffers not 16-byte aligned (a tensor view with a storage offset) take a
 *    one-pixel-per-thread path: correct for any address, slower.
 */
#ifndef IMG2GRAY_KERNELS_CUH
#define IMG2GRAY_KERNELS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "img2gray_pixel.h"

namespace img2gray {

constexpr int kThreads = 256;

__device__ __forceinline__ uint32_t byte_at(uint32_t w, int k) { return (w >> (8 * k)) & 0xffu; }

/* 4 pixels (12 bytes in three little-endian words) -> 4 gray bytes in one word. */
__device__ __forceinline__ uint32_t gray4(uint32_t w0, uint32_t w1, uint32_t w2) {
  uint32_t g0 = img2gray_pixel(byte_at(w0, 0), byte_at(w0, 1), byte_at(w0, 2));
  uint32_t g1 = img2gray_pixel(byte_at(w0, 3), byte_at(w1, 0), byte_at(w1, 1));
  uint32_t g2 = img2gray_pixel(byte_at(w1, 2), byte_at(w1, 3), byte_at(w2, 0));
  uint32_t g3 = img2gray_pixel(byte_at(w2, 1), byte_at(w2, 2), byte_at(w2, 3));
  return g0 | (g1 << 8) | (g2 << 16) | (g3 << 24);
}

/* 16 pixels: 48 bytes (three uint4) -> 16 bytes (one uint4). */
__device__ __forceinline__ uint4 gray16(uint4 a, uint4 b, uint4 c) {
  uint4 o;
  o.x = gray4(a.x, a.y, a.z);
  o.y = gray4(a.w, b.x, b.y);
  o.z = gray4(b.z, b.w, c.x);
  o.w = gray4(c.y, c.z, c.w);
  return o;
}

/* Fast path: rgb and gray 16-byte aligned. nchunks = n / 16 chunks of 16
 * pixels; the tail (n % 16 pixels starting at pixel nchunks * 16) is done by
 * the first `tail` threads of the grid. */
template <int K>
static __global__ void __launch_bounds__(kThreads)
vec16_kernel(const uint4 *__restrict__ rgb, uint4 *__restrict__ gray, int64_t nchunks,
             const uint8_t *__restrict__ rgb_tail, uint8_t *__restrict__ gray_tail, int tail) {
  const int64_t tile = (int64_t)kThreads * K;
  const int64_t first = (int64_t)blockIdx.x * tile + threadIdx.x;
  const int64_t step = (int64_t)gridDim.x * tile;
  for (int64_t base = first; base < nchunks; base += step) {
    uint4 in[K][3];
#pragma unroll
    for (int j = 0; j < K; j++) {
      int64_t c = base + (int64_t)j * kThreads;
      if (c < nchunks) {
        in[j][0] = rgb[3 * c];
        in[j][1] = rgb[3 * c + 1];
        in[j][2] = rgb[3 * c + 2];
      }
    }
#pragma unroll
    for (int j = 0; j < K; j++) {
      int64_t c = base + (int64_t)j * kThreads;
      if (c < nchunks)
        gray[c] = gray16(in[j][0], in[j][1], in[j][2]);
    }
  }
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < tail)
    gray_tail[t] = (uint8_t)img2gray_pixel(rgb_tail[3 * t], rgb_tail[3 * t + 1], rgb_tail[3 * t + 2]);
}

/* Alternative fast path (timed by the benchmark): each block stages its
 * 256 chunks (12 KB of RGB) through shared memory with fully coalesced
 * 16-byte loads (thread t loads vectors t, t+256, t+512), then each thread
 * converts its own 48 bytes (16-byte shared reads at a 48-byte stride are
 * free of bank conflicts) and stores 16 bytes. Same tail handling. */
static __global__ void __launch_bounds__(kThreads)
smem_kernel(const uint4 *__restrict__ rgb, uint4 *__restrict__ gray, int64_t nchunks,
            const uint8_t *__restrict__ rgb_tail, uint8_t *__restrict__ gray_tail, int tail) {
  __shared__ uint4 stage[3 * kThreads];
  for (int64_t base = (int64_t)blockIdx.x * kThreads; base < nchunks; base += (int64_t)gridDim.x * kThreads) {
    const int64_t nvec = 3 * (nchunks - base < kThreads ? nchunks - base : kThreads);
    const uint4 *src = rgb + 3 * base;
#pragma unroll
    for (int j = 0; j < 3; j++) {
      int v = threadIdx.x + j * kThreads;
      if (v < nvec)
        stage[v] = src[v];
    }
    __syncthreads();
    int64_t c = base + threadIdx.x;
    if (c < nchunks)
      gray[c] = gray16(stage[3 * threadIdx.x], stage[3 * threadIdx.x + 1], stage[3 * threadIdx.x + 2]);
    __syncthreads();
  }
  const int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < tail)
    gray_tail[t] = (uint8_t)img2gray_pixel(rgb_tail[3 * t], rgb_tail[3 * t + 1], rgb_tail[3 * t + 2]);
}

/* Any alignment: one pixel per thread and step, grid-stride. */
static __global__ void __launch_bounds__(kThreads)
scalar_kernel(const uint8_t *__restrict__ rgb, uint8_t *__restrict__ gray, int64_t n) {
  const int64_t step = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step)
    gray[i] = (uint8_t)img2gray_pixel(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
}

/* The staged kernel's launcher (16-byte aligned buffers only; else the
 * scalar path), for the benchmark. */
inline cudaError_t launch_smem(const uint8_t *rgb, uint8_t *gray, int64_t n, cudaStream_t stream, int64_t max_blocks);

/* Enqueues the conversion of n pixels on `stream`. max_blocks caps the grid
 * (the grid-stride loops do the rest); 0 means one step per thread. Returns
 * the launch's cudaError_t. */
template <int K>
inline cudaError_t launch(const uint8_t *rgb, uint8_t *gray, int64_t n, cudaStream_t stream, int64_t max_blocks) {
  if (n <= 0)
    return cudaSuccess;
  if ((((uintptr_t)rgb) | ((uintptr_t)gray)) & 15u) {
    int64_t blocks = (n + kThreads - 1) / kThreads;
    if (max_blocks > 0 && blocks > max_blocks)
      blocks = max_blocks;
    if (blocks > INT32_MAX)
      blocks = INT32_MAX;
    scalar_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>(rgb, gray, n);
    return cudaGetLastError();
  }
  const int64_t nchunks = n / 16;
  const int tail = (int)(n % 16);
  int64_t blocks = (nchunks + (int64_t)kThreads * K - 1) / ((int64_t)kThreads * K);
  if (max_blocks > 0 && blocks > max_blocks)
    blocks = max_blocks;
  if (blocks > INT32_MAX)
    blocks = INT32_MAX;
  if (blocks < 1)
    blocks = 1; /* fewer than 16 pixels: one block does the tail */
  vec16_kernel<K><<<(unsigned)blocks, kThreads, 0, stream>>>(
      (const uint4 *)rgb, (uint4 *)gray, nchunks, rgb + 48 * nchunks, gray + 16 * nchunks, tail);
  return cudaGetLastError();
}

inline cudaError_t launch_smem(const uint8_t *rgb, uint8_t *gray, int64_t n, cudaStream_t stream, int64_t max_blocks) {
  if (n <= 0)
    return cudaSuccess;
  if ((((uintptr_t)rgb) | ((uintptr_t)gray)) & 15u)
    return launch<1>(rgb, gray, n, stream, max_blocks);
  const int64_t nchunks = n / 16;
  const int tail = (int)(n % 16);
  int64_t blocks = (nchunks + kThreads - 1) / kThreads;
  if (max_blocks > 0 && blocks > max_blocks)
    blocks = max_blocks;
  if (blocks > INT32_MAX)
    blocks = INT32_MAX;
  if (blocks < 1)
    blocks = 1;
  smem_kernel<<<(unsigned)blocks, kThreads, 0, stream>>>((const uint4 *)rgb, (uint4 *)gray, nchunks, rgb + 48 * nchunks,
                                                         gray + 16 * nchunks, tail);
  return cudaGetLastError();
}

} // namespace img2gray

#endif

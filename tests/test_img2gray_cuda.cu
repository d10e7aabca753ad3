// The CUDA entry point img2gray_cuda (src/img2gray_cuda.cu, linked in directly)
// on a GPU: random images of odd sizes, batches, every alignment of the
// device buffers, a non-default stream; results must be bit-identical to the
// CPU entry point and to a reference computed here from the documented formula,
// and no byte outside the output may be written. Run under compute-sanitizer
// on the GPU machine. Without a CUDA device it exits 77 (ctest: skipped).
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "img2gray.h"

static int passed = 0, failed = 0;

#define CK(x)                                                                                \
  do {                                                                                       \
    cudaError_t e_ = (x);                                                                    \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

static void check(bool ok, const char *what, long long b, long long h, long long w, int off) {
  if (ok) {
    passed++;
  } else {
    failed++;
    std::fprintf(stderr, "FAIL: %s (b=%lld h=%lld w=%lld offset=%d)\n", what, b, h, w, off);
  }
}

static uint8_t reference_pixel(unsigned r, unsigned g, unsigned b) {
  return (uint8_t)std::floor((54.0 * r + 184.0 * g + 18.0 * b) / 256.0 + 0.5);
}

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  std::random_device rd;
  unsigned seed = rd();
  std::printf("seed %u, has_cuda %d\n", seed, img2gray_has_cuda());
  std::mt19937_64 rng(seed);
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  struct Shape { long long b, h, w; };
  std::vector<Shape> shapes = {{1, 1, 1},   {1, 1, 15},   {1, 1, 16},    {1, 1, 17},     {1, 7, 13},
                               {3, 17, 31}, {2, 33, 65},  {5, 3, 1},     {1, 481, 641},  {4, 121, 257},
                               {1, 1080, 1920}, {2, 1080, 1919}, {1, 4320, 7680}};
  for (int i = 0; i < 8; i++)
    shapes.push_back({1 + (long long)(rng() % 4), 1 + 2 * (long long)(rng() % 300), 1 + 2 * (long long)(rng() % 600)});
  const int offsets[] = {0, 1, 3, 4, 16};
  const size_t guard = 64;

  for (const Shape &s : shapes) {
    size_t n = (size_t)(s.b * s.h * s.w);
    std::vector<uint8_t> rgb(3 * n), want(n), cpu(n), got(n + 2 * guard + 16);
    for (auto &v : rgb)
      v = (uint8_t)(rng() >> 56);
    for (size_t i = 0; i < n; i++)
      want[i] = reference_pixel(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
    check(img2gray_cpu(rgb.data(), cpu.data(), s.b, s.h, s.w) == IMG2GRAY_OK && cpu == want, "CPU entry vs reference",
          s.b, s.h, s.w, 0);
    for (int off : offsets) {
      if (n > 8000000 && off != 0 && off != 1)
        continue; // the big frames: aligned and one unaligned case are enough
      uint8_t *d_rgb, *d_gray;
      CK(cudaMalloc(&d_rgb, 3 * n + 16));
      CK(cudaMalloc(&d_gray, n + 2 * guard + 16));
      CK(cudaMemcpy(d_rgb + off, rgb.data(), 3 * n, cudaMemcpyHostToDevice));
      CK(cudaMemset(d_gray, 0x5a, n + 2 * guard + 16));
      CK(cudaDeviceSynchronize()); // the memset is asynchronous; odd offsets launch on a non-blocking stream
      int rc = img2gray_cuda(d_rgb + off, d_gray + guard + off, s.b, s.h, s.w, off % 2 ? stream : nullptr);
      CK(cudaDeviceSynchronize());
      CK(cudaGetLastError());
      CK(cudaMemcpy(got.data(), d_gray, n + 2 * guard + 16, cudaMemcpyDeviceToHost));
      bool same = rc == IMG2GRAY_OK;
      for (size_t i = 0; same && i < n; i++)
        same = got[guard + off + i] == cpu[i];
      check(same, "CUDA entry bit-identical to CPU", s.b, s.h, s.w, off);
      bool untouched = true;
      for (size_t i = 0; i < guard + off; i++)
        untouched = untouched && got[i] == 0x5a;
      for (size_t i = guard + off + n; i < n + 2 * guard + 16; i++)
        untouched = untouched && got[i] == 0x5a;
      check(untouched, "no write outside the output", s.b, s.h, s.w, off);
      CK(cudaFree(d_rgb));
      CK(cudaFree(d_gray));
    }
  }
  check(img2gray_cuda(nullptr, nullptr, 1, 0, 5, nullptr) == IMG2GRAY_OK, "empty image is OK", 1, 0, 5, 0);
  check(img2gray_cuda(nullptr, nullptr, 1, 2, 2, nullptr) == IMG2GRAY_EINVAL, "NULL is EINVAL", 1, 2, 2, 0);
  check(img2gray_cuda((const uint8_t *)16, (uint8_t *)16, 1, -2, 2, nullptr) == IMG2GRAY_EINVAL, "negative is EINVAL", 1, -2, 2, 0);
  CK(cudaStreamDestroy(stream));
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}

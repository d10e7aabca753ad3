// bench_img2gray: GB/s of the img2gray CUDA kernel against the seed's kernel
// (one pixel per thread, 16x16 2D grid) and a device-to-device copy of the
// same byte volume (the ceiling). Bytes counted: 3 per pixel read + 1 written.
// The L2 is flushed (a 256 MB memset) before every timed launch; each time is
// one launch between two CUDA events; the median of many launches is shown.
//
// usage: bench_img2gray [iterations] [csv output]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "img2gray.h"
#include "img2gray_kernels.cuh"

#define CK(x)                                                                                       \
  do {                                                                                              \
    cudaError_t e_ = (x);                                                                           \
    if (e_ != cudaSuccess) {                                                                        \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_));      \
      std::exit(1);                                                                                 \
    }                                                                                               \
  } while (0)

// The seed's kernel: a 16x16 2D grid, one pixel per thread, float weights.
__global__ void seed_img2gray(const uint8_t *rgb, uint8_t *gray, int width, int height, int batch) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height * batch)
    return;
  size_t i = (size_t)y * width + x;
  uint8_t r = rgb[3 * i], g = rgb[3 * i + 1], b = rgb[3 * i + 2];
  gray[i] = (uint8_t)(0.21f * r + 0.72f * g + 0.07f * b);
}

__global__ void fill_random(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 0x2c1b3c6du; h ^= h >> 12; h *= 0x297a2d39u; h ^= h >> 15;
    p[i] = (uint8_t)h;
  }
}

struct Size {
  const char *name;
  int batch, height, width;
};

int main(int argc, char **argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 100;
  FILE *csv = argc > 2 ? std::fopen(argv[2], "w") : nullptr;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB, %d iterations per point, L2 flushed before each\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, iters);

  const size_t flush_bytes = 256u << 20;
  void *flush;
  CK(cudaMalloc(&flush, flush_bytes));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));

  std::vector<Size> sizes = {{"1920x1080", 1, 1080, 1920},
                             {"3840x2160", 1, 2160, 3840},
                             {"7680x4320", 1, 4320, 7680},
                             {"32x1920x1080", 32, 1080, 1920}};
  const int sms = prop.multiProcessorCount;

  for (const Size &s : sizes) {
    size_t n = (size_t)s.batch * s.height * s.width;
    double bytes = 4.0 * n;
    uint8_t *rgb, *gray, *copy_src, *copy_dst;
    CK(cudaMalloc(&rgb, 3 * n));
    CK(cudaMalloc(&gray, n));
    CK(cudaMalloc(&copy_src, 2 * n));
    CK(cudaMalloc(&copy_dst, 2 * n));
    fill_random<<<1024, 256, 0, st>>>(rgb, 3 * n, 1234u + (uint32_t)n);
    CK(cudaGetLastError());
    CK(cudaMemsetAsync(copy_src, 7, 2 * n, st));

    // correctness of ours on this size against the host formula
    std::vector<uint8_t> h_rgb(3 * n), h_gray(n);
    CK(cudaMemsetAsync(gray, 0x5a, n, st));
    if (img2gray_cuda(rgb, gray, s.batch, s.height, s.width, st) != IMG2GRAY_OK) {
      std::fprintf(stderr, "img2gray_cuda failed: %s\n", cudaGetErrorString((cudaError_t)img2gray_last_cuda_error()));
      return 1;
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(h_rgb.data(), rgb, 3 * n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_gray.data(), gray, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
      if (h_gray[i] != img2gray_pixel(h_rgb[3 * i], h_rgb[3 * i + 1], h_rgb[3 * i + 2])) {
        std::fprintf(stderr, "%s: wrong pixel %zu\n", s.name, i);
        return 1;
      }

    struct Case {
      std::string name;
      std::function<void()> run;
    };
    dim3 blk(16, 16), grd((s.width + 15) / 16, (s.height * s.batch + 15) / 16);
    std::vector<Case> cases = {
        {"ours (img2gray_cuda)", [&] { img2gray_cuda(rgb, gray, s.batch, s.height, s.width, st); }},
        {"ours K=1", [&] { img2gray::launch<1>(rgb, gray, (int64_t)n, st, 0); }},
        {"ours K=4", [&] { img2gray::launch<4>(rgb, gray, (int64_t)n, st, 0); }},
        {"ours K=2 grid<=8*SMs", [&] { img2gray::launch<2>(rgb, gray, (int64_t)n, st, 8 * sms); }},
        {"ours smem-staged", [&] { img2gray::launch_smem(rgb, gray, (int64_t)n, st, 0); }},
        {"seed 16x16 1px/thread", [&] { seed_img2gray<<<grd, blk, 0, st>>>(rgb, gray, s.width, s.height, s.batch); }},
        {"copy D2D (ceiling)", [&] { cudaMemcpyAsync(copy_dst, copy_src, 2 * n, cudaMemcpyDeviceToDevice, st); }},
    };
    std::printf("\n%-14s %-24s %10s %10s %8s\n", "size", "kernel", "median us", "GB/s", "of copy");
    std::vector<double> gbs(cases.size());
    for (size_t c = 0; c < cases.size(); c++) {
      std::vector<float> t;
      for (int it = 0; it < iters + 5; it++) {
        CK(cudaMemsetAsync(flush, it & 0xff, flush_bytes, st));
        CK(cudaEventRecord(e0, st));
        cases[c].run();
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        CK(cudaGetLastError());
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        if (it >= 5)
          t.push_back(ms);
      }
      if (cases[c].name.rfind("ours", 0) == 0) { // every variant of ours must give the checked result
        std::vector<uint8_t> again(n);
        CK(cudaMemcpy(again.data(), gray, n, cudaMemcpyDeviceToHost));
        if (again != h_gray) {
          std::fprintf(stderr, "%s: %s gives a different result\n", s.name, cases[c].name.c_str());
          return 1;
        }
        CK(cudaMemsetAsync(gray, 0x5a, n, st));
      }
      std::sort(t.begin(), t.end());
      double med = t[t.size() / 2] * 1e-3;
      gbs[c] = bytes / med / 1e9;
    }
    double copy = gbs.back();
    for (size_t c = 0; c < cases.size(); c++) {
      std::printf("%-14s %-24s %10.1f %10.0f %7.1f%%\n", s.name, cases[c].name.c_str(), bytes / gbs[c] / 1e3, gbs[c],
                  100.0 * gbs[c] / copy);
      if (csv)
        std::fprintf(csv, "%s,%s,%.3f,%.1f\n", s.name, cases[c].name.c_str(), bytes / gbs[c] / 1e3, gbs[c]);
    }
    CK(cudaFree(rgb));
    CK(cudaFree(gray));
    CK(cudaFree(copy_src));
    CK(cudaFree(copy_dst));
  }
  if (csv)
    std::fclose(csv);
  return 0;
}

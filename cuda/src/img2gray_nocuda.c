/* Stubs for modules built without CUDA: the symbols exist everywhere so a C
 * host can look them up and get a clear answer instead of a missing symbol. */
#include "img2gray.h"

int img2gray_cuda(const uint8_t *rgb_dev, uint8_t *gray_dev, int64_t batch, int64_t height, int64_t width,
                  void *stream) {
  (void)rgb_dev; (void)gray_dev; (void)batch; (void)height; (void)width; (void)stream;
  return IMG2GRAY_ENOCUDA;
}

int img2gray_last_cuda_error(void) { return 0; }

int img2gray_has_cuda(void) { return 0; }

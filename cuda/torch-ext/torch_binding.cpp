/*
 * The torch op of img2gray: `img2gray(Tensor input, Tensor! output) -> ()`
 * registered under the variant's own namespace (TORCH_EXTENSION_NAME, the
 * metadata.json id), with a CPU implementation and, when built with
 * IMG2GRAY_WITH_CUDA, a CUDA one; the dispatcher picks by the tensors' device.
 * Both call the plain C entry points of img2gray.h, which this module exports
 * too, so C hosts can use it without the dispatcher.
 */
#include <torch/library.h>
#include <ATen/core/Tensor.h>

#include <string>

#ifdef IMG2GRAY_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "img2gray.h"
#include "registration.h"

#ifndef TORCH_EXTENSION_NAME
#error "TORCH_EXTENSION_NAME (the variant id) must be defined"
#endif

namespace {

/* Error messages are built with std::string and handed to TORCH_CHECK as one
 * C string, so no iostream code from this module runs: with a libstdc++ other
 * than torch's linked in (seen with GCC 13 on the GPU machine), c10::str's
 * ostringstream crashed inside Python. */
[[noreturn]] void fail(const std::string &msg) {
  TORCH_CHECK(false, msg.c_str());
}

std::string dims(c10::IntArrayRef s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

/* Checks what both implementations need and returns the batch size (1 for
 * a single image), height and width. */
void check_args(const at::Tensor &input, const at::Tensor &output, c10::DeviceType device, int64_t *batch,
                int64_t *height, int64_t *width) {
  if (input.device().type() != device || output.device().type() != device)
    fail("img2gray: input and output must both be on " + c10::DeviceTypeName(device) + "; got input on " +
         input.device().str() + " and output on " + output.device().str());
  if (input.device() != output.device())
    fail("img2gray: input (" + input.device().str() + ") and output (" + output.device().str() +
         ") must be on the same device");
  if (input.scalar_type() != at::kByte)
    fail(std::string("img2gray: input must be uint8 (torch.uint8), got ") + c10::toString(input.scalar_type()) +
         "; convert with .to(torch.uint8)");
  if (output.scalar_type() != at::kByte)
    fail(std::string("img2gray: output must be uint8 (torch.uint8), got ") + c10::toString(output.scalar_type()));
  if (!((input.dim() == 3 || input.dim() == 4) && input.size(-1) == 3))
    fail("img2gray: input must be [H, W, 3] or [B, H, W, 3] (HWC RGB), got shape " + dims(input.sizes()));
  c10::IntArrayRef want = input.sizes().slice(0, input.dim() - 1);
  if (output.sizes() != want)
    fail("img2gray: output must have shape " + dims(want) + " for an input of shape " + dims(input.sizes()) +
         ", got " + dims(output.sizes()));
  if (!input.is_contiguous())
    fail("img2gray: input must be contiguous (HWC); call .contiguous() first");
  if (!output.is_contiguous())
    fail("img2gray: output must be contiguous");
  *batch = input.dim() == 4 ? input.size(0) : 1;
  *height = input.size(-3);
  *width = input.size(-2);
}

void img2gray_cpu_impl(const at::Tensor &input, at::Tensor &output) {
  int64_t b, h, w;
  check_args(input, output, c10::DeviceType::CPU, &b, &h, &w);
  int rc = img2gray_cpu(input.data_ptr<uint8_t>(), output.data_ptr<uint8_t>(), b, h, w);
  if (rc != IMG2GRAY_OK)
    fail("img2gray: img2gray_cpu failed with code " + std::to_string(rc));
}

#ifdef IMG2GRAY_WITH_CUDA
void img2gray_cuda_impl(const at::Tensor &input, at::Tensor &output) {
  int64_t b, h, w;
  check_args(input, output, c10::DeviceType::CUDA, &b, &h, &w);
  const c10::cuda::CUDAGuard guard(input.device());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(input.device().index()).stream();
  int rc = img2gray_cuda(input.data_ptr<uint8_t>(), output.data_ptr<uint8_t>(), b, h, w, stream);
  if (rc != IMG2GRAY_OK)
    fail("img2gray: img2gray_cuda failed with code " + std::to_string(rc) + " (CUDA error " +
         std::to_string(img2gray_last_cuda_error()) + ": " +
         cudaGetErrorString((cudaError_t)img2gray_last_cuda_error()) + ")");
}
#endif

} // namespace

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("img2gray(Tensor input, Tensor! output) -> ()");
}

TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("img2gray", TORCH_FN(img2gray_cpu_impl));
}

#ifdef IMG2GRAY_WITH_CUDA
TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CUDA, ops) {
  ops.impl("img2gray", TORCH_FN(img2gray_cuda_impl));
}
#endif

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)

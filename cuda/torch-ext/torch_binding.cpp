/*
 * The torch op of img2gray: `img2gray(Tensor input, Tensor! output) -> ()`
 * registered under the variant's own namespace (IMG2GRAY_OPS_NAMESPACE, the
 * metadata.json id), with a CPU implementation and, when built with
 * IMG2GRAY_WITH_CUDA, a CUDA one; the dispatcher picks by the tensors' device.
 * Both call the plain C entry points of img2gray.h, which this module exports
 * too, so C hosts can use it without the dispatcher.
 */
#include <torch/library.h>
#include <ATen/core/Tensor.h>

#ifdef IMG2GRAY_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include "img2gray.h"
#include "registration.h"

#ifndef IMG2GRAY_OPS_NAMESPACE
#error "IMG2GRAY_OPS_NAMESPACE (the variant id) must be defined"
#endif

namespace {

/* Checks what both implementations need and returns the batch size (1 for
 * a single image), height and width. */
void check_args(const at::Tensor &input, const at::Tensor &output, c10::DeviceType device, int64_t *batch,
                int64_t *height, int64_t *width) {
  TORCH_CHECK(input.device().type() == device && output.device().type() == device,
              "img2gray: input and output must both be on ", device, "; got input on ", input.device(),
              " and output on ", output.device());
  TORCH_CHECK(input.device() == output.device(), "img2gray: input (", input.device(), ") and output (",
              output.device(), ") must be on the same device");
  TORCH_CHECK(input.scalar_type() == at::kByte, "img2gray: input must be uint8 (torch.uint8), got ",
              input.scalar_type(), "; convert with .to(torch.uint8)");
  TORCH_CHECK(output.scalar_type() == at::kByte, "img2gray: output must be uint8 (torch.uint8), got ",
              output.scalar_type());
  TORCH_CHECK((input.dim() == 3 || input.dim() == 4) && input.size(-1) == 3,
              "img2gray: input must be [H, W, 3] or [B, H, W, 3] (HWC RGB), got shape ", input.sizes());
  TORCH_CHECK(output.dim() == input.dim() - 1 && output.sizes() == input.sizes().slice(0, input.dim() - 1),
              "img2gray: output must have shape ", input.sizes().slice(0, input.dim() - 1),
              " for an input of shape ", input.sizes(), ", got ", output.sizes());
  TORCH_CHECK(input.is_contiguous(), "img2gray: input must be contiguous (HWC); call .contiguous() first");
  TORCH_CHECK(output.is_contiguous(), "img2gray: output must be contiguous");
  *batch = input.dim() == 4 ? input.size(0) : 1;
  *height = input.size(-3);
  *width = input.size(-2);
}

void img2gray_cpu_impl(const at::Tensor &input, at::Tensor &output) {
  int64_t b, h, w;
  check_args(input, output, c10::DeviceType::CPU, &b, &h, &w);
  int rc = img2gray_cpu(input.data_ptr<uint8_t>(), output.data_ptr<uint8_t>(), b, h, w);
  TORCH_CHECK(rc == IMG2GRAY_OK, "img2gray: img2gray_cpu failed with code ", rc);
}

#ifdef IMG2GRAY_WITH_CUDA
void img2gray_cuda_impl(const at::Tensor &input, at::Tensor &output) {
  int64_t b, h, w;
  check_args(input, output, c10::DeviceType::CUDA, &b, &h, &w);
  const c10::cuda::CUDAGuard guard(input.device());
  cudaStream_t stream = c10::cuda::getCurrentCUDAStream(input.device().index()).stream();
  int rc = img2gray_cuda(input.data_ptr<uint8_t>(), output.data_ptr<uint8_t>(), b, h, w, stream);
  TORCH_CHECK(rc == IMG2GRAY_OK, "img2gray: img2gray_cuda failed with code ", rc, " (CUDA error ",
              img2gray_last_cuda_error(), ": ", cudaGetErrorString((cudaError_t)img2gray_last_cuda_error()), ")");
}
#endif

} // namespace

IMG2GRAY_TORCH_LIBRARY(IMG2GRAY_OPS_NAMESPACE, m) {
  m.def("img2gray(Tensor input, Tensor! output) -> ()");
  m.impl("img2gray", c10::DispatchKey::CPU, TORCH_FN(img2gray_cpu_impl));
#ifdef IMG2GRAY_WITH_CUDA
  m.impl("img2gray", c10::DispatchKey::CUDA, TORCH_FN(img2gray_cuda_impl));
#endif
}

IMG2GRAY_PYTHON_MODULE(IMG2GRAY_OPS_NAMESPACE)

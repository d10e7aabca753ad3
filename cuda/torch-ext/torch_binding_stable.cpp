/*
 * img2gray against torch's stable ABI (kernel-builder's [torch.stable-abi]):
 * the same op, `img2gray(Tensor input, Tensor! output) -> ()`, registered
 * through the STABLE_TORCH_LIBRARY C shims (aoti_torch_*, torch_library_*)
 * instead of c10's C++ classes, so one build serves every torch from the
 * targeted version on. CPU only; the kernel is the plain C entry point.
 */
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/tensor.h>

#include <string>

#include "img2gray.h"
#include "registration.h"

#ifndef TORCH_EXTENSION_NAME
#error "TORCH_EXTENSION_NAME (the variant id) must be defined"
#endif

namespace {

void img2gray_cpu_stable(torch::stable::Tensor input, torch::stable::Tensor output) {
  STD_TORCH_CHECK(input.is_cpu() && output.is_cpu(), "img2gray: input and output must both be on cpu");
  STD_TORCH_CHECK(input.scalar_type() == torch::headeronly::ScalarType::Byte &&
                      output.scalar_type() == torch::headeronly::ScalarType::Byte,
                  "img2gray: input and output must be uint8 (torch.uint8)");
  const int64_t dim = input.dim();
  STD_TORCH_CHECK((dim == 3 || dim == 4) && input.size(dim - 1) == 3,
                  "img2gray: input must be [H, W, 3] or [B, H, W, 3] (HWC RGB)");
  STD_TORCH_CHECK(output.dim() == dim - 1, "img2gray: output must have the input's shape without its last dimension");
  for (int64_t i = 0; i < dim - 1; i++)
    STD_TORCH_CHECK(output.size(i) == input.size(i), "img2gray: output must have shape input.shape[:-1]");
  STD_TORCH_CHECK(input.is_contiguous() && output.is_contiguous(), "img2gray: input and output must be contiguous");
  const int64_t batch = dim == 4 ? input.size(0) : 1;
  int rc = img2gray_cpu(static_cast<const uint8_t *>(input.data_ptr()), static_cast<uint8_t *>(output.data_ptr()),
                        batch, input.size(dim - 3), input.size(dim - 2));
  STD_TORCH_CHECK(rc == IMG2GRAY_OK, "img2gray: img2gray_cpu failed with code " + std::to_string(rc));
}

} // namespace

STABLE_TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("img2gray(Tensor input, Tensor! output) -> ()");
}

STABLE_TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, ops) {
  ops.impl("img2gray", TORCH_BOX(&img2gray_cpu_stable));
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)

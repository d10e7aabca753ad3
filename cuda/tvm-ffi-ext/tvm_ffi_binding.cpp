/*
 * The tvm-ffi functions of img2gray, exported the way kernel-builder's
 * tvm-ffi kernels export theirs: TVM_FFI_DLL_EXPORT_TYPED_FUNC makes the C
 * symbol __tvm_ffi_<name>, a TVMFFISafeCallType that tvm_ffi.load_module()
 * (Python) and kernels_tvm_ffi_function() (C) both find.
 *
 *   img2gray_cpu(out, in)   in: uint8 [..., H, W, 3] on the CPU, out: uint8 [..., H, W]
 *   img2gray_cuda(out, in)  the same on one CUDA device, enqueued on tvm-ffi's
 *                           current stream of that device (TVMFFIEnvGetStream);
 *                           only in a module built with CUDA (CUDA_KERNEL)
 *
 * Both check dtype, shape, contiguity and device, then call the plain C entry
 * points of img2gray.h, which the module exports as well.
 */
#include <tvm/ffi/tvm_ffi.h>

#include <string>

#ifdef CUDA_KERNEL
#include <cuda_runtime.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/extra/cuda/device_guard.h>
#endif

#include "img2gray.h"

namespace {

using tvm::ffi::TensorView;

std::string dims(const TensorView &t) {
  std::string r = "[";
  for (int32_t i = 0; i < t.ndim(); i++)
    r += (i ? ", " : "") + std::to_string(t.size(i));
  return r + "]";
}

std::string where(DLDevice d) {
  const char *type = d.device_type == kDLCPU ? "cpu" : d.device_type == kDLCUDA ? "cuda" : nullptr;
  return (type ? std::string(type) : "device type " + std::to_string(d.device_type)) + ":" +
         std::to_string(d.device_id);
}

bool is_uint8(DLDataType t) { return t.code == kDLUInt && t.bits == 8 && t.lanes == 1; }

/* DLPack puts a view's offset in byte_offset; data alone may be the base. */
uint8_t *bytes(const TensorView &t) {
  return static_cast<uint8_t *>(t.data_ptr()) + t.byte_offset();
}

struct Image {
  const uint8_t *rgb;
  uint8_t *gray;
  int64_t batch, height, width;
};

/* What both implementations need; every leading dimension is batch. */
Image check_args(const TensorView &out, const TensorView &in, DLDeviceType device, const char *fn) {
  DLDevice di = in.device(), dout = out.device();
  if (di.device_type != device || dout.device_type != device)
    TVM_FFI_THROW(ValueError) << fn << ": input and output must both be on "
                              << (device == kDLCPU ? "the cpu" : "a cuda device") << "; got input on "
                              << where(di) << " and output on " << where(dout);
  if (di.device_id != dout.device_id)
    TVM_FFI_THROW(ValueError) << fn << ": input (" << where(di) << ") and output (" << where(dout)
                              << ") must be on the same device";
  if (!is_uint8(in.dtype()))
    TVM_FFI_THROW(TypeError) << fn << ": input must be uint8, got " << in.dtype();
  if (!is_uint8(out.dtype()))
    TVM_FFI_THROW(TypeError) << fn << ": output must be uint8, got " << out.dtype();
  if (in.ndim() < 3 || in.size(-1) != 3)
    TVM_FFI_THROW(ValueError) << fn << ": input must be [..., H, W, 3] (HWC RGB), got shape " << dims(in);
  bool same = out.ndim() == in.ndim() - 1;
  for (int32_t i = 0; same && i < out.ndim(); i++)
    same = out.size(i) == in.size(i);
  if (!same)
    TVM_FFI_THROW(ValueError) << fn << ": output must have the input's shape without the last dimension, got "
                              << dims(out) << " for an input of shape " << dims(in);
  if (!in.IsContiguous())
    TVM_FFI_THROW(ValueError) << fn << ": input must be contiguous (HWC)";
  if (!out.IsContiguous())
    TVM_FFI_THROW(ValueError) << fn << ": output must be contiguous";
  Image im{bytes(in), bytes(out), 1, in.size(-3), in.size(-2)};
  for (int32_t i = 0; i < in.ndim() - 3; i++)
    im.batch *= in.size(i);
  return im;
}

void img2gray_cpu_ffi(TensorView out, TensorView in) {
  Image im = check_args(out, in, kDLCPU, "img2gray_cpu");
  int rc = img2gray_cpu(im.rgb, im.gray, im.batch, im.height, im.width);
  if (rc != IMG2GRAY_OK)
    TVM_FFI_THROW(RuntimeError) << "img2gray_cpu: the C entry point failed with code " << rc;
}

#ifdef CUDA_KERNEL
void img2gray_cuda_ffi(TensorView out, TensorView in) {
  Image im = check_args(out, in, kDLCUDA, "img2gray_cuda");
  int32_t id = in.device().device_id;
  tvm::ffi::CUDADeviceGuard guard(id);
  void *stream = TVMFFIEnvGetStream(kDLCUDA, id);
  int rc = img2gray_cuda(im.rgb, im.gray, im.batch, im.height, im.width, stream);
  if (rc != IMG2GRAY_OK)
    TVM_FFI_THROW(RuntimeError) << "img2gray_cuda: the C entry point failed with code " << rc << " (CUDA error "
                                << img2gray_last_cuda_error() << ": "
                                << cudaGetErrorString(static_cast<cudaError_t>(img2gray_last_cuda_error())) << ")";
}
#endif

} // namespace

TVM_FFI_DLL_EXPORT_TYPED_FUNC(img2gray_cpu, img2gray_cpu_ffi);
#ifdef CUDA_KERNEL
TVM_FFI_DLL_EXPORT_TYPED_FUNC(img2gray_cuda, img2gray_cuda_ffi);
#endif

/*
 * libkernels: calling the functions of a tvm-ffi variant from C.
 *
 * A tvm-ffi variant (tvm-ffi{Mm}-{backend}-{cpu}-{os}, e.g.
 * tvm-ffi01-cpu-x86_64-linux, as kernel-builder builds it from a tvm-ffi
 * binding) holds one native module, {metadata id}.so. Each function the
 * binding exports with TVM_FFI_DLL_EXPORT_TYPED_FUNC(name, fn) is the C
 * symbol `__tvm_ffi_<name>` with tvm-ffi's TVMFFISafeCallType signature
 * (<tvm/ffi/c_api.h>), so a C host calls it without Python or torch:
 *
 *  1. Link libtvm_ffi (CMake: `python3 -m tvm_ffi.config --cmakedir` as
 *     tvm_ffi_ROOT, find_package(tvm_ffi), target tvm_ffi::shared; or
 *     --includedir, --dlpack-includedir and --libdir of the same command).
 *     The module needs it in the process, and kernels_get() accepts
 *     tvm-ffi{Mm} variants only when it detects a loaded libtvm_ffi of that
 *     major.minor (or KERNELS_TVM_FFI_VERSION says so). libkernels itself
 *     does not link libtvm_ffi. A linker with --as-needed (the default of
 *     many distributions) drops a library the program calls nothing of:
 *     call at least one tvm-ffi function (the error handling of step 4
 *     does) or link it with -Wl,--no-as-needed.
 *  2. kernels_get() the kernel, then kernels_tvm_ffi_function() the function.
 *  3. Call it as TVMFFISafeCallType: `self` NULL; each tensor argument a
 *     TVMFFIAny with type_index kTVMFFIDLTensorPtr and v_ptr pointing to a
 *     DLTensor (<dlpack/dlpack.h>; strides NULL means contiguous); the result
 *     a TVMFFIAny with type_index kTVMFFINone.
 *  4. A nonzero return is an error: TVMFFIErrorMoveFromRaised() hands over
 *     the error object, whose TVMFFIErrorCell follows its TVMFFIObject header
 *     (kind and message are TVMFFIByteArray, not NUL-terminated); release it
 *     with TVMFFIObjectDecRef(). A result holding an object (type_index >=
 *     kTVMFFIStaticObjectBegin) is released the same way.
 *  5. Close the kernel only after the last call: the function lives in its
 *     module.
 *
 * CUDA: tensors with device {kDLCUDA, id}; kernel-builder's CUDA functions
 * enqueue their work on tvm-ffi's current stream of that device, which the
 * host sets with TVMFFIEnvSetStream() (<tvm/ffi/extra/c_env_api.h>; NULL:
 * the legacy default stream), and return before it ran: synchronise that
 * stream before reading the output.
 *
 * Example: img2gray's img2gray_cpu(out, in), in uint8 [H, W, 3] and out
 * uint8 [H, W] (examples/img2gray_tvm_ffi.c is the whole program):
 *
 *   #include <kernels.h>
 *   #include <tvm/ffi/c_api.h>
 *
 *   kernels_kernel *k;
 *   void *fn;
 *   if (kernels_get(&k, "kernels-community/img2gray", ">=1.1.2,<2", NULL) < 0) {
 *       fprintf(stderr, "%s\n", kernels_error_last());
 *       return 1;
 *   }
 *   if (kernels_tvm_ffi_function(&fn, k, "img2gray_cpu") < 0) {
 *       fprintf(stderr, "%s\n", kernels_error_last());  // e.g. not a tvm-ffi variant
 *       kernels_kernel_close(k);
 *       return 1;
 *   }
 *   int64_t in_shape[3] = { h, w, 3 }, out_shape[2] = { h, w };
 *   DLTensor in = { .data = rgb, .device = { kDLCPU, 0 }, .ndim = 3,
 *                   .dtype = { kDLUInt, 8, 1 }, .shape = in_shape };
 *   DLTensor out = { .data = gray, .device = { kDLCPU, 0 }, .ndim = 2,
 *                    .dtype = { kDLUInt, 8, 1 }, .shape = out_shape };
 *   TVMFFIAny args[2] = { { .type_index = kTVMFFIDLTensorPtr, .v_ptr = &out },
 *                         { .type_index = kTVMFFIDLTensorPtr, .v_ptr = &in } };
 *   TVMFFIAny result = { .type_index = kTVMFFINone };
 *   if (((TVMFFISafeCallType)fn)(NULL, args, 2, &result) != 0) {
 *       TVMFFIObjectHandle err;
 *       TVMFFIErrorMoveFromRaised(&err);
 *       const TVMFFIErrorCell *e = (const TVMFFIErrorCell *)((char *)err + sizeof(TVMFFIObject));
 *       fprintf(stderr, "%.*s: %.*s\n", (int)e->kind.size, e->kind.data,
 *               (int)e->message.size, e->message.data);
 *       TVMFFIObjectDecRef(err);
 *   }
 *   kernels_kernel_close(k);
 *
 * Every function here is part of libkernels since 1.0 and may be called
 * from any thread unless its comment says otherwise (docs/threading.md).
 */
#ifndef KERNELS_TVM_FFI_H
#define KERNELS_TVM_FFI_H

#include "common.h"
#include "kernel.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The tvm-ffi function `name` of a loaded tvm-ffi variant: the address of
 * the module's symbol `__tvm_ffi_<name>`, to be cast to TVMFFISafeCallType
 * and called as the header comment above shows. `name` is the export name
 * given to TVM_FFI_DLL_EXPORT_TYPED_FUNC (letters, digits, '_'). `*out` is
 * valid until the kernel's last kernels_kernel_close(); it is NULL on error.
 *
 * Returns 0, KERNELS_EINVAL (a NULL argument; a name that is not an export
 * name; a kernel that is not a tvm-ffi variant: noarch, or a module that
 * exports no `__tvm_ffi_*` function, e.g. a torch variant), KERNELS_ENOTFOUND
 * (a tvm-ffi module without that function: the message lists the functions
 * it exports) or KERNELS_ENOMEM.
 */
KERNELS_EXTERN(int) kernels_tvm_ffi_function(void **out, const kernels_kernel *k, const char *name);

#ifdef __cplusplus
}
#endif

#endif

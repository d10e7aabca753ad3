# Tests of the img2gray variants that tests/CMakeLists.txt cannot glob, and
# the benchmark's build (so it compiles in CI). The C++ host that calls the
# torch op through the dispatcher is tests/test_torch_host.cpp.

if(IMG2GRAY_HAVE_CUDA AND EXISTS ${IMG2GRAY_ROOT}/bench/img2gray/bench_img2gray.cu)
  add_executable(bench_img2gray ${IMG2GRAY_ROOT}/bench/img2gray/bench_img2gray.cu ${IMG2GRAY_SRC}/img2gray_cuda.cu)
  target_include_directories(bench_img2gray PRIVATE ${IMG2GRAY_INC} ${IMG2GRAY_SRC})
  set_target_properties(bench_img2gray PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(bench_img2gray PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
endif()

# The C entry points on their own, for tests/test_img2gray_c.c (which
# dlopens it as a host would a module; also under the sanitizers).
add_library(img2gray_c_test SHARED ${IMG2GRAY_SRC}/img2gray_cpu.c ${IMG2GRAY_SRC}/img2gray_nocuda.c)
target_include_directories(img2gray_c_test PRIVATE ${IMG2GRAY_INC} ${IMG2GRAY_SRC})
set_target_properties(img2gray_c_test PROPERTIES OUTPUT_NAME img2gray
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/c-test)

# The CUDA entry point on a GPU (skipped, not passed, on a machine without
# one), linked with the sources directly.
if(IMG2GRAY_HAVE_CUDA)
  add_executable(test_img2gray_cuda ${IMG2GRAY_ROOT}/tests/test_img2gray_cuda.cu
    ${IMG2GRAY_SRC}/img2gray_cpu.c ${IMG2GRAY_SRC}/img2gray_cuda.cu)
  target_include_directories(test_img2gray_cuda PRIVATE ${IMG2GRAY_INC} ${IMG2GRAY_SRC})
  target_compile_options(test_img2gray_cuda PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
  set_target_properties(test_img2gray_cuda PROPERTIES CUDA_RUNTIME_LIBRARY Static)
  add_test(NAME test_img2gray_cuda COMMAND test_img2gray_cuda)
  set_tests_properties(test_img2gray_cuda PROPERTIES SKIP_RETURN_CODE 77 LABELS cuda TIMEOUT 600)
endif()

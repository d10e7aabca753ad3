# img2gray as tvm-ffi variants, built the way kernel-builder builds tvm-ffi
# kernels (kernel-builder/src/pyproject/templates/tvm_ffi/): one module
# <OPS_NAME>.so (no lib prefix; OPS_NAME = _img2gray_<backend>_<id suffix>,
# also the metadata id) holding tvm-ffi-ext/tvm_ffi_binding.cpp and the C
# code, next to the Python package (tvm-ffi-ext/img2gray/) and metadata.json:
#
#   tvm-ffi{Mm}-cpu-<cpu>-<os>/     img2gray_cpu
#   tvm-ffi{Mm}-cu{xy}-<cpu>-<os>/  img2gray_cpu and img2gray_cuda (needs nvcc)
#
# {Mm} is tvm-ffi's major and minor version, as generate_build_name writes
# them. Option KERNELS_BUILD_TVM_FFI_VARIANTS: default ON when python3 can
# import tvm_ffi (pip install apache-tvm-ffi). Included by CMakeLists.txt.
set(_tvm_ffi_default OFF)
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import tvm_ffi; print(tvm_ffi.__version__.split('-')[0])"
  OUTPUT_VARIABLE _tvm_ffi_version ERROR_VARIABLE _tvm_ffi_err RESULT_VARIABLE _tvm_ffi_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(_tvm_ffi_rc EQUAL 0)
  set(_tvm_ffi_default ON)
endif()
option(KERNELS_BUILD_TVM_FFI_VARIANTS "Build the img2gray tvm-ffi variants (needs python3 with tvm_ffi)" ${_tvm_ffi_default})

if(KERNELS_BUILD_TVM_FFI_VARIANTS AND KERNELS_SANITIZE)
  message(STATUS "img2gray: tvm-ffi variants skipped (KERNELS_SANITIZE: libtvm_ffi is not built with the sanitizers)")
  return()
elseif(NOT KERNELS_BUILD_TVM_FFI_VARIANTS)
  if(NOT _tvm_ffi_rc EQUAL 0)
    message(STATUS "img2gray: tvm-ffi variants skipped (${Python3_EXECUTABLE} cannot import tvm_ffi)")
  else()
    message(STATUS "img2gray: tvm-ffi variants skipped (KERNELS_BUILD_TVM_FFI_VARIANTS=OFF)")
  endif()
  return()
elseif(NOT _tvm_ffi_rc EQUAL 0)
  message(FATAL_ERROR "img2gray: KERNELS_BUILD_TVM_FFI_VARIANTS=ON but ${Python3_EXECUTABLE} cannot import tvm_ffi: "
    "install it (pip install -r tests/requirements.txt) or configure with -DKERNELS_BUILD_TVM_FFI_VARIANTS=OFF")
endif()

# tvm-ffi's own CMake package (tvm_ffi::shared, tvm_ffi_configure_target), as
# the template finds it. It asks FindPython for an interpreter: the same one.
execute_process(COMMAND ${Python3_EXECUTABLE} -m tvm_ffi.config --cmakedir
  OUTPUT_VARIABLE tvm_ffi_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
set(Python_EXECUTABLE ${Python3_EXECUTABLE})
find_package(tvm_ffi CONFIG REQUIRED)
enable_language(CXX)
include(CheckCXXCompilerFlag)
# For C hosts (tests/tvm_ffi/): tvm-ffi's C headers and library, without the
# C++17 requirement that tvm_ffi::shared carries.
add_library(img2gray_tvm_ffi_c INTERFACE)
target_include_directories(img2gray_tvm_ffi_c INTERFACE ${tvm_ffi_INCLUDE_DIR} ${tvm_ffi_DLPACK_INCLUDE_DIR})
target_link_libraries(img2gray_tvm_ffi_c INTERFACE ${tvm_ffi_LIB_FILES})

# generate_build_name: tvm-ffi + major and minor without the dot.
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _m "${_tvm_ffi_version}")
if(NOT _m)
  message(FATAL_ERROR "img2gray: cannot read the tvm-ffi version '${_tvm_ffi_version}'")
endif()
set(IMG2GRAY_TVM_FFI_TAG "tvm-ffi${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|amd64|AMD64)$")
  set(_tvm_ffi_cpu x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(_tvm_ffi_cpu aarch64)
else()
  set(_tvm_ffi_cpu ${IMG2GRAY_CPU})
endif()
message(STATUS "img2gray: tvm-ffi ${_tvm_ffi_version} (${IMG2GRAY_TVM_FFI_TAG}) from ${tvm_ffi_ROOT}")

# As for the torch modules: the shared libstdc++ that libtvm_ffi uses, never
# a second, static copy.
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
  OUTPUT_VARIABLE _stdcxx OUTPUT_STRIP_TRAILING_WHITESPACE)
set(_tvm_ffi_stdcxx "")
if(NOT IS_ABSOLUTE "${_stdcxx}" OR NOT EXISTS "${_stdcxx}")
  set(_tvm_ffi_stdcxx -l:libstdc++.so.6)
endif()
check_cxx_compiler_flag("-fno-gnu-unique" IMG2GRAY_CXX_HAS_NO_GNU_UNIQUE)

# One module: the binding, the C entry points, CUDA when cuda is ON.
function(img2gray_tvm_ffi_module target id cuda)
  set(srcs ${CMAKE_CURRENT_SOURCE_DIR}/tvm-ffi-ext/tvm_ffi_binding.cpp ${IMG2GRAY_SRC}/img2gray_cpu.c)
  if(cuda)
    list(APPEND srcs ${IMG2GRAY_SRC}/img2gray_cuda.cu)
  else()
    list(APPEND srcs ${IMG2GRAY_SRC}/img2gray_nocuda.c)
  endif()
  add_library(${target} SHARED ${srcs})
  target_include_directories(${target} PRIVATE ${IMG2GRAY_INC} ${IMG2GRAY_SRC})
  target_compile_definitions(${target} PRIVATE TVM_FFI_EXTENSION_NAME=${id} $<IF:$<BOOL:${cuda}>,CUDA_KERNEL,CPU_KERNEL>)
  tvm_ffi_configure_target(${target})
  target_link_libraries(${target} PRIVATE ${_tvm_ffi_stdcxx})
  if(IMG2GRAY_CXX_HAS_NO_GNU_UNIQUE)
    # Template statics of two kernels must not merge into one (kernel-builder does the same).
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-gnu-unique>)
  endif()
  set_target_properties(${target} PROPERTIES PREFIX "" OUTPUT_NAME ${id} SUFFIX ".so"
    CXX_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/${target}
    # A published module must not point at this machine's tvm_ffi: it uses
    # the libtvm_ffi already in the process (Python's, or the C host's).
    SKIP_BUILD_RPATH ON)
  if(cuda)
    target_include_directories(${target} SYSTEM PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
    # Static runtime: a C host needs only the driver (libcuda.so.1).
    set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Static CUDA_VISIBILITY_PRESET hidden)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra --Werror=all-warnings>)
  endif()
endfunction()

# Assembles the variant folder: module, Python package, metadata.json.
function(img2gray_tvm_ffi_variant variant id backend archs target)
  set(out ${IMG2GRAY_BUILD_DIR}/${variant})
  set(pkg ${CMAKE_CURRENT_SOURCE_DIR}/tvm-ffi-ext/img2gray)
  set(args assemble --out ${out} --name img2gray --id ${id} --major ${IMG2GRAY_MAJOR} --backend ${backend}
    --native $<TARGET_FILE:${target}>:${id}.so --python-package ${pkg})
  if(archs)
    list(APPEND args --archs ${archs})
  endif()
  file(GLOB py ${pkg}/*.py ${pkg}/*.py.in)
  add_custom_command(OUTPUT ${out}/metadata.json
    COMMAND ${Python3_EXECUTABLE} ${IMG2GRAY_VARIANT_SCRIPT} ${args}
    DEPENDS ${target} ${IMG2GRAY_VARIANT_SCRIPT} ${py} VERBATIM)
  add_custom_target(img2gray_variant_${variant} ALL DEPENDS ${out}/metadata.json)
  set_property(GLOBAL APPEND PROPERTY IMG2GRAY_VARIANTS ${variant})
endfunction()

set(_id _img2gray_cpu_${IMG2GRAY_SUFFIX})
img2gray_tvm_ffi_module(img2gray_tvm_ffi_cpu ${_id} OFF)
img2gray_tvm_ffi_variant(${IMG2GRAY_TVM_FFI_TAG}-cpu-${_tvm_ffi_cpu}-${IMG2GRAY_OS} ${_id} cpu "" img2gray_tvm_ffi_cpu)

if(IMG2GRAY_HAVE_CUDA)
  set(_id _img2gray_cuda_${IMG2GRAY_SUFFIX})
  img2gray_tvm_ffi_module(img2gray_tvm_ffi_cuda ${_id} ON)
  img2gray_tvm_ffi_variant(${IMG2GRAY_TVM_FFI_TAG}-${IMG2GRAY_CU}-${_tvm_ffi_cpu}-${IMG2GRAY_OS} ${_id} cuda
    "${IMG2GRAY_ARCHS}" img2gray_tvm_ffi_cuda)
else()
  message(STATUS "img2gray: tvm-ffi CUDA variant skipped (no nvcc)")
endif()

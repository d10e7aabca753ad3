# The libraries libkernels links for real. The CUDA driver is never linked:
# it is dlopen'ed at run time so CPU-only machines work.
find_package(PkgConfig REQUIRED)
# GLOBAL: a parent project (add_subdirectory, FetchContent) linking
# kernels::kernels_static needs to see it too.
pkg_check_modules(KERNELS_DEPS REQUIRED IMPORTED_TARGET GLOBAL
  libcurl>=7.68 libgit2>=1.1 jansson>=2.12 libarchive>=3.4 libcrypto>=1.1)
find_package(Threads REQUIRED)
# What a static link needs after libkernels.a, in pkg-config's words.
set(KERNELS_PC_REQUIRES_PRIVATE "libcurl libgit2 jansson libarchive libcrypto")
set(KERNELS_PC_LIBS_PRIVATE "-ldl -lpthread")

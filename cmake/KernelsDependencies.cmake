# The libraries libkernels links for real. The CUDA driver is never linked:
# it is dlopen'ed at run time so CPU-only machines work.
#
# Each is looked for on its own first, so that a build that lacks some (a
# `pip install` of the sdist on a machine no wheel fits, too) names the
# packages that bring their development files instead of pkg-config's bare
# "package not found". Fields: pkg-config module | Debian/Ubuntu | RHEL/Fedora.
set(KERNELS_DEPS_PACKAGES
  "libcurl>=7.68|libcurl4-openssl-dev|libcurl-devel"
  "libgit2>=1.1|libgit2-dev|libgit2-devel"
  "jansson>=2.12|libjansson-dev|jansson-devel"
  "libarchive>=3.4|libarchive-dev|libarchive-devel"
  "libcrypto>=1.1|libssl-dev|openssl-devel")
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "libkernels is built with pkg-config, which is not installed: apt-get install pkg-config "
    "(Debian, Ubuntu) or dnf install pkgconf-pkg-config (RHEL, Fedora)")
endif()
set(_kernels_missing_deb)
set(_kernels_missing_rpm)
set(_kernels_missing_mod)
foreach(_entry ${KERNELS_DEPS_PACKAGES})
  string(REPLACE "|" ";" _fields "${_entry}")
  list(GET _fields 0 _module)
  list(GET _fields 1 _deb)
  list(GET _fields 2 _rpm)
  string(MAKE_C_IDENTIFIER "KERNELS_PROBE_${_module}" _var)
  pkg_check_modules(${_var} QUIET "${_module}")
  if(NOT ${_var}_FOUND)
    list(APPEND _kernels_missing_mod "${_module}")
    list(APPEND _kernels_missing_deb "${_deb}")
    list(APPEND _kernels_missing_rpm "${_rpm}")
  endif()
endforeach()
if(_kernels_missing_mod)
  list(JOIN _kernels_missing_mod ", " _mods)
  list(JOIN _kernels_missing_deb " " _debs)
  list(JOIN _kernels_missing_rpm " " _rpms)
  message(FATAL_ERROR "libkernels needs the development files of ${_mods}, which pkg-config does not find. "
    "Install them: apt-get install ${_debs} (Debian, Ubuntu) or dnf install ${_rpms} (RHEL, Fedora); "
    "or set PKG_CONFIG_PATH to where their .pc files are. For Python, a manylinux wheel of libkernels needs "
    "none of them: see docs/python.md.")
endif()

# GLOBAL: a parent project (add_subdirectory, FetchContent) linking
# kernels::kernels_static needs to see it too.
pkg_check_modules(KERNELS_DEPS REQUIRED IMPORTED_TARGET GLOBAL
  libcurl>=7.68 libgit2>=1.1 jansson>=2.12 libarchive>=3.4 libcrypto>=1.1)
find_package(Threads REQUIRED)
# What a static link needs after libkernels.a, in pkg-config's words.
set(KERNELS_PC_REQUIRES_PRIVATE "libcurl libgit2 jansson libarchive libcrypto")
set(KERNELS_PC_LIBS_PRIVATE "-ldl -lpthread")

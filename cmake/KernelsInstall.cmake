include(CMakePackageConfigHelpers)

install(FILES include/kernels.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/kernels DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kernels kernels_static EXPORT kernelsTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT kernelsTargets NAMESPACE kernels:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kernels)

configure_package_config_file(cmake/kernelsConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/kernelsConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kernels)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/kernelsConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kernelsConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/kernelsConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/kernels)

# The .pc file finds its prefix relative to itself, so an installed tree
# can be moved (or installed with cmake --install --prefix) and still work.
file(RELATIVE_PATH KERNELS_PC_UP "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" KERNELS_PC_UP "${KERNELS_PC_UP}")
set(KERNELS_PC_PREFIX "\${pcfiledir}/${KERNELS_PC_UP}")
configure_file(cmake/kernels.pc.in ${CMAKE_CURRENT_BINARY_DIR}/kernels.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/kernels.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The Python wheel (bindings/python, built by scikit-build-core with
# install.components = ["python"]) bundles the shared library alone, under
# its SONAME: a wheel holds no symlinks. Not part of a plain install.
install(FILES $<TARGET_FILE:kernels> DESTINATION lib RENAME libkernels.so.${PROJECT_VERSION_MAJOR}
  COMPONENT python EXCLUDE_FROM_ALL)

# A man page per public function (section 3: `man kernels_get`), made at
# build time from the headers' doc comments by scripts/gen-man.py (standard
# library only), installed under share/man/man3 and by libkernels-dev.
# Off by default as a subproject (add_subdirectory, FetchContent): the
# parent's build needs no python3 for them, and installs no pages of ours.
option(KERNELS_MAN_PAGES "Make and install a man page per public function (needs python3)" ${PROJECT_IS_TOP_LEVEL})
if(KERNELS_MAN_PAGES)
  find_package(Python3 COMPONENTS Interpreter)
  if(NOT Python3_Interpreter_FOUND)
    message(FATAL_ERROR "the man pages need python3 (scripts/gen-man.py): install it, or configure with "
      "-DKERNELS_MAN_PAGES=OFF")
  endif()
  file(GLOB _kernels_headers CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/kernels/*.h)
  set(_man_dir ${PROJECT_BINARY_DIR}/man/man3)
  add_custom_command(OUTPUT ${PROJECT_BINARY_DIR}/man/man3.stamp
    COMMAND ${CMAKE_COMMAND} -E rm -rf ${_man_dir}
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen-man.py ${PROJECT_SOURCE_DIR}/include ${_man_dir}
      ${PROJECT_VERSION}
    COMMAND ${CMAKE_COMMAND} -E touch ${PROJECT_BINARY_DIR}/man/man3.stamp
    DEPENDS ${_kernels_headers} ${PROJECT_SOURCE_DIR}/scripts/gen-man.py
    COMMENT "man pages from include/kernels/*.h")
  add_custom_target(kernels_man ALL DEPENDS ${PROJECT_BINARY_DIR}/man/man3.stamp)
  install(DIRECTORY ${_man_dir} DESTINATION ${CMAKE_INSTALL_MANDIR})
endif()

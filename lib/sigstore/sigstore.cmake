# The sigstore verifier's sources, and sigstore's public-good trusted root
# built into the library (included from lib/CMakeLists.txt).
set(_ks_root ${CMAKE_CURRENT_SOURCE_DIR}/sigstore/trusted_root.json)
set(_ks_embedded ${CMAKE_CURRENT_BINARY_DIR}/sigstore_public_good_root.c)
add_custom_command(OUTPUT ${_ks_embedded}
  COMMAND ${CMAKE_COMMAND} -DIN=${_ks_root} -DOUT=${_ks_embedded} -P ${CMAKE_CURRENT_SOURCE_DIR}/sigstore/embed.cmake
  DEPENDS ${_ks_root} ${CMAKE_CURRENT_SOURCE_DIR}/sigstore/embed.cmake
  COMMENT "Embedding sigstore's public-good trusted_root.json")
file(GLOB KERNELS_SIGSTORE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/sigstore/*.c)
list(APPEND KERNELS_LIB_SOURCES ${KERNELS_SIGSTORE_SOURCES} ${_ks_embedded})

# cmake -DIN=trusted_root.json -DOUT=file.c -P embed.cmake: the JSON as a
# C array (ks_public_good_root, NUL-terminated; its size without the NUL).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" body "${body}")
file(WRITE ${OUT} "/* Generated from lib/sigstore/trusted_root.json by embed.cmake. */\n#include <stddef.h>\n"
  "const char ks_public_good_root[] = {\n${body}0x00 };\n"
  "const size_t ks_public_good_root_size = ${size};\n")

/* Internal: plain values read from Python source text, without running
 * Python: how system detection learns an installed torch's or tvm-ffi's
 * version from the files the package ships. */
#ifndef KERNELS_LIB_PYSOURCE_H
#define KERNELS_LIB_PYSOURCE_H

/* The string the top-level assignments of the Python source `text` give
 * `name` (`name = '1.0'`, annotated or chained; the last one wins, as when
 * the module runs), malloc'ed; NULL when there is none, or the value is
 * None, an expression or not a plain string literal. */
char *kernels__py_string_assignment(const char *text, const char *name);

#endif

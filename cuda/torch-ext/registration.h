/*
 * The registration glue of a kernel-builder torch extension, in our words:
 * the module is a Python extension (PyInit_<name> creates an empty module,
 * so `from . import <id>` in _ops.py works) whose static TORCH_LIBRARY
 * blocks register the ops with torch's dispatcher when the object is
 * loaded. PyInit references the Python C API strongly, exactly as Hub
 * builds do; C and C++ hosts without libpython load the module through
 * libkernels, which leaves those references unbound (nothing but an
 * interpreter calls PyInit).
 */
#pragma once

#include <Python.h>

#define KERNEL_CONCAT_(a, b) a##b
#define KERNEL_CONCAT(a, b) KERNEL_CONCAT_(a, b)
#define KERNEL_STRINGIFY_(a) #a
#define KERNEL_STRINGIFY(a) KERNEL_STRINGIFY_(a)

/* TORCH_LIBRARY and TORCH_LIBRARY_IMPL take the namespace as a token; the
 * _EXPAND forms expand a macro (TORCH_EXTENSION_NAME, the variant id) first. */
#define TORCH_LIBRARY_EXPAND(name, module) TORCH_LIBRARY(name, module)
#define TORCH_LIBRARY_IMPL_EXPAND(name, device, module) TORCH_LIBRARY_IMPL(name, device, module)
/* The same for the stable ABI's macros (torch/csrc/stable/library.h). */
#define STABLE_TORCH_LIBRARY_EXPAND(name, module) STABLE_TORCH_LIBRARY(name, module)
#define STABLE_TORCH_LIBRARY_IMPL_EXPAND(name, device, module) STABLE_TORCH_LIBRARY_IMPL(name, device, module)

/* PyInit_<name>: an empty module, so Python's import accepts the object. */
#define REGISTER_EXTENSION(name)                                                           \
  PyMODINIT_FUNC KERNEL_CONCAT(PyInit_, name)(void) {                                      \
    static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, KERNEL_STRINGIFY(name),     \
                                        nullptr, 0, nullptr, nullptr, nullptr, nullptr,    \
                                        nullptr};                                          \
    return PyModule_Create(&module);                                                       \
  }

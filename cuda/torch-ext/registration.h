/*
 * Glue that makes the torch binding a Python extension module as well as a
 * torch op library, the way Hub variants are built: `from . import _img2gray_x`
 * in the variant's _ops.py runs PyInit__img2gray_x, which only creates an
 * empty module; loading the shared object is what runs the static
 * TORCH_LIBRARY registrations. C and C++ hosts can dlopen the same object
 * without Python: nothing here runs at load time.
 */
#pragma once

#include <Python.h>

/* The only Python symbol used, and only inside PyInit (which only Python
 * calls): weak, so a C/C++ host without libpython can dlopen the module with
 * RTLD_NOW. Under Python it resolves to the interpreter's as usual. */
#pragma weak PyModule_Create2

#define IMG2GRAY_CONCAT_(a, b) a##b
#define IMG2GRAY_CONCAT(a, b) IMG2GRAY_CONCAT_(a, b)
#define IMG2GRAY_STR_(a) #a
#define IMG2GRAY_STR(a) IMG2GRAY_STR_(a)

/* TORCH_LIBRARY / TORCH_LIBRARY_IMPL take the namespace as a token; these
 * expand a macro (the variant id, a compile definition) first. */
#define IMG2GRAY_TORCH_LIBRARY(ns, m) TORCH_LIBRARY(ns, m)
#define IMG2GRAY_TORCH_LIBRARY_IMPL(ns, key, m) TORCH_LIBRARY_IMPL(ns, key, m)

/* Defines PyInit_<name>: an empty module, so `import` accepts the object. */
#define IMG2GRAY_PYTHON_MODULE(name)                                                        \
  extern "C" __attribute__((visibility("default"))) PyObject *IMG2GRAY_CONCAT(PyInit_, name)(void) { \
    static PyModuleDef def = {PyModuleDef_HEAD_INIT, IMG2GRAY_STR(name), nullptr, 0,      \
                              nullptr, nullptr, nullptr, nullptr, nullptr};               \
    return PyModule_Create(&def);                                                         \
  }

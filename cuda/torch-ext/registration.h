/*
 * Glue that makes the torch binding a Python extension module as well as a
 * torch op library, the way Hub variants are built: `from . import _img2gray_x`
 * in the variant's _ops.py runs PyInit__img2gray_x, which only creates an
 * empty module; loading the shared object is what runs the static
 * TORCH_LIBRARY registrations. C and C++ hosts can dlopen the same object
 * without Python: nothing here runs at load time.
 */
#pragma once

#if __has_include(<Python.h>) && !defined(IMG2GRAY_NO_PYTHON_H)
#include <Python.h>
#else
#include <sys/types.h>
/* No Python headers on this machine: the few declarations PyInit needs, from
 * the stable ABI (Py_LIMITED_API 3.9; these layouts are frozen by it). */
extern "C" {
typedef struct _object {
  ssize_t ob_refcnt;
  void *ob_type;
} PyObject;
typedef struct PyModuleDef_Base {
  PyObject ob_base;
  PyObject *(*m_init)(void);
  ssize_t m_index;
  PyObject *m_copy;
} PyModuleDef_Base;
typedef struct PyModuleDef {
  PyModuleDef_Base m_base;
  const char *m_name;
  const char *m_doc;
  ssize_t m_size;
  void *m_methods, *m_slots, *m_traverse, *m_clear, *m_free;
} PyModuleDef;
PyObject *PyModule_Create2(PyModuleDef *def, int apiver);
}
#define PyModuleDef_HEAD_INIT {{1, nullptr}, nullptr, 0, nullptr}
#define PyModule_Create(def) PyModule_Create2(def, 3 /* PYTHON_ABI_VERSION */)
#endif

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

/*
 * native.h: what every C file of the three extensions (rankgate._native._kernels, ._reader, ._remap) starts
 * from. Internal: no entry point.
 *
 *   the Python API (buffer protocol only: no numpy headers, so a C compiler is all the build needs) and
 *   the C library headers the files use;
 *   RG_HIDDEN, the linkage of a function one file of an extension gives another (not exported from the
 *   extension's shared object, whose only export is its PyInit_ function);
 *   get_buffer, a caller's buffer as C-contiguous items of one size.
 *
 * Floating point: setup.py compiles every file with -ffp-contract=off and without -ffast-math, so every
 * product and sum is one IEEE operation in a fixed order and the results do not depend on the machine.
 */
#ifndef RANKGATE_NATIVE_H
#define RANKGATE_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#define RG_HIDDEN __attribute__((visibility("hidden")))
#else
#define RG_HIDDEN
#endif

/* The buffer of obj as C-contiguous items of itemsize bytes (writable if asked); -1 with an exception
 * set (TypeError naming the argument when the items are of another size). */
static inline int get_buffer(PyObject *obj, Py_buffer *view, const char *name, Py_ssize_t itemsize, int writable) {
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        return -1;
    }
    if (view->itemsize != itemsize || view->len % itemsize != 0) {
        PyErr_Format(PyExc_TypeError, "%s: expected items of %zd bytes", name, itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

#endif

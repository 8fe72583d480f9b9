/*
 * csv.c (rankgate._native._kernels): a CSV table's body. Entry point:
 *
 *   csv_rows  the lines of text cells, coded cells and float64 values (repr; NaN an empty cell)
 *
 * The fallback, which writes the same text: rankgate.render.exports (Python's csv module and repr).
 */
#include "native.h"
#include "kernels.h"

/* ---------------------------------------------------------------------------------------------- */
/* csv_rows(columns, n) -> str: the lines of a CSV table's body, each "c0,c1,...\n".
 *
 * Each column is one of: a list of n str (cells written as they are: the caller has quoted them);
 * a tuple (table, codes): a list of str and n int64 positions in it (a column of few distinct values,
 * each formatted once); or n float64 values (a buffer), written as repr() writes a float, NaN as an
 * empty cell. Built in one growing buffer of UTF-8 and decoded once: no per-cell Python object. */

typedef struct {
    char *p;
    size_t len, cap;
} sbuf_t;

static int sbuf_put(sbuf_t *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (b->len + n + 1 > cap) cap *= 2;
        char *q = (char *)realloc(b->p, cap);
        if (!q) return -1;
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 0;
}

typedef struct {
    int kind; /* 0: list of str, 1: (table, codes), 2: float64 */
    PyObject *list;
    Py_buffer view;
    int has_view;
} csvcol_t;

static int put_str(sbuf_t *b, PyObject *s) {
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return -1;
    if (sbuf_put(b, u, (size_t)n) < 0) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* The repr of recent values, by a hash of their bits: a column of precision@10 or hit@10 holds a few
 * distinct values, and Python's shortest repr costs more than a copy (a slot holds one value; a value
 * that lands on another's slot takes it over). */
#define REPR_SLOTS_BITS 12
typedef struct {
    uint64_t bits;
    unsigned char len; /* 0: empty */
    char text[31];
} reprslot_t;

PyObject *rg_csv_rows(PyObject *self, PyObject *args) {
    PyObject *o_cols;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "O!n", &PyList_Type, &o_cols, &n)) return NULL;
    const Py_ssize_t m = PyList_GET_SIZE(o_cols);
    csvcol_t *cols = (csvcol_t *)calloc((size_t)(m ? m : 1), sizeof(csvcol_t));
    if (!cols) return PyErr_NoMemory();
    PyObject *result = NULL;
    sbuf_t b = {NULL, 0, 0};
    Py_ssize_t got = 0;
    reprslot_t *reprs = (reprslot_t *)calloc((size_t)1 << REPR_SLOTS_BITS, sizeof(reprslot_t));
    if (!reprs) {
        free(cols);
        return PyErr_NoMemory();
    }
    for (; got < m; got++) {
        PyObject *c = PyList_GET_ITEM(o_cols, got);
        csvcol_t *col = &cols[got];
        if (PyList_Check(c)) {
            col->kind = 0;
            col->list = c;
            if (PyList_GET_SIZE(c) != n) {
                PyErr_SetString(PyExc_ValueError, "csv_rows: a text column of another length");
                goto done;
            }
        } else if (PyTuple_Check(c) && PyTuple_GET_SIZE(c) == 2 && PyList_Check(PyTuple_GET_ITEM(c, 0))) {
            col->kind = 1;
            col->list = PyTuple_GET_ITEM(c, 0);
            if (get_buffer(PyTuple_GET_ITEM(c, 1), &col->view, "codes", 8, 0) < 0) goto done;
            col->has_view = 1;
            const int64_t *codes = (const int64_t *)col->view.buf;
            const Py_ssize_t size = PyList_GET_SIZE(col->list);
            if (col->view.len / 8 != n) {
                PyErr_SetString(PyExc_ValueError, "csv_rows: a coded column of another length");
                goto done;
            }
            for (Py_ssize_t i = 0; i < n; i++) {
                if (codes[i] < 0 || codes[i] >= size) {
                    PyErr_SetString(PyExc_ValueError, "csv_rows: a code outside its table");
                    goto done;
                }
            }
        } else {
            col->kind = 2;
            if (get_buffer(c, &col->view, "values", 8, 0) < 0) goto done;
            col->has_view = 1;
            if (col->view.len / 8 != n) {
                PyErr_SetString(PyExc_ValueError, "csv_rows: a number column of another length");
                goto done;
            }
        }
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        for (Py_ssize_t j = 0; j < m; j++) {
            csvcol_t *col = &cols[j];
            if (j && sbuf_put(&b, ",", 1) < 0) goto nomem;
            if (col->kind == 0) {
                PyObject *s = PyList_GET_ITEM(col->list, i);
                if (!PyUnicode_Check(s)) {
                    PyErr_SetString(PyExc_TypeError, "csv_rows: a text cell that is not a str");
                    goto done;
                }
                if (put_str(&b, s) < 0) goto done;
            } else if (col->kind == 1) {
                PyObject *s = PyList_GET_ITEM(col->list, ((const int64_t *)col->view.buf)[i]);
                if (!PyUnicode_Check(s)) {
                    PyErr_SetString(PyExc_TypeError, "csv_rows: a table cell that is not a str");
                    goto done;
                }
                if (put_str(&b, s) < 0) goto done;
            } else {
                const double x = ((const double *)col->view.buf)[i];
                if (isnan(x)) continue;
                uint64_t bits;
                memcpy(&bits, &x, 8);
                reprslot_t *slot = &reprs[(bits * 0x9E3779B97F4A7C15ULL) >> (64 - REPR_SLOTS_BITS)];
                if (!(slot->len && slot->bits == bits)) {
                    char *t = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
                    if (!t) goto done;
                    const size_t len = strlen(t);
                    if (len < sizeof slot->text) { /* (always: a repr has at most 24 characters) */
                        memcpy(slot->text, t, len);
                        slot->len = (unsigned char)len;
                        slot->bits = bits;
                        PyMem_Free(t);
                    } else {
                        const int rc = sbuf_put(&b, t, len);
                        PyMem_Free(t);
                        if (rc < 0) goto nomem;
                        continue;
                    }
                }
                if (sbuf_put(&b, slot->text, slot->len) < 0) goto nomem;
            }
        }
        if (sbuf_put(&b, "\n", 1) < 0) goto nomem;
    }
    result = PyUnicode_DecodeUTF8(b.p ? b.p : "", (Py_ssize_t)b.len, "strict");
    goto done;
nomem:
    PyErr_NoMemory();
done:
    for (Py_ssize_t j = 0; j < m; j++) { /* (calloc: columns not reached have no view) */
        if (cols[j].has_view) PyBuffer_Release(&cols[j].view);
    }
    free(cols);
    free(reprs);
    free(b.p);
    return result;
}

/*
 * reader_module.c: the module rankgate._native._reader, whitespace-separated TREC lines (runs and qrels) and JSON
 * lines of the common run and gold shape, read straight from a memory map. Its method table and PyInit__reader;
 * the entry points, each defined in the file named:
 *
 *   faults        guard.c
 *   shaped_items  jsonl.c
 *   item_shapes   jsonl.c
 *   set_baseline  reader_module.c (below)
 *   variant       reader_module.c (below)
 *   count_lines   lines.c
 *   read_lines    lines.c
 *   read_jsonl    jsonl.c
 *   FileCut       guard.c (an exception: the map of a file cut short while it was read)
 *
 * Positional arguments only; each docstring's first line gives them (tests/test_native_switch.py checks
 * _reader.pyi against it). The callers reach the module through rankgate._native (reader), and take the general
 * readers where it is not built or a file is not regular.
 */
#include "native.h"
#include "reader.h"

static int baseline_on = 0; /* set_baseline(True): RANKGATE_NATIVE=baseline */

/* set_baseline(on) -> whether it was on: no CPU-specific path (RANKGATE_NATIVE=baseline). The reader has
 * none, so this only records the request; it is here because the switch calls set_baseline on every
 * extension (an extension without it is taken as one built from an older source). */
static PyObject *set_baseline(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    const int before = baseline_on;
    baseline_on = on;
    return PyBool_FromLong(before);
}

/* variant() -> "plain": the reader has no CPU-specific path. */
static PyObject *variant(PyObject *self, PyObject *noargs) {
    return PyUnicode_FromString("plain");
}

static PyMethodDef methods[] = {
    {"faults", rg_faults, METH_NOARGS, "faults() -> SIGBUS faults of guarded scans caught so far (a file cut short while mapped; tests)"},
    {"shaped_items", rg_shaped_items, METH_NOARGS, "shaped_items() -> items read by their values alone since the last call (tests)"},
    {"item_shapes", rg_item_shapes, METH_VARARGS,
     "item_shapes(on) -> previous: read an item written as the first one by its values alone (tests)"},
    {"set_baseline", set_baseline, METH_VARARGS,
     "set_baseline(on) -> previous: no CPU-specific path (RANKGATE_NATIVE=baseline; the reader has none)"},
    {"variant", variant, METH_NOARGS, "variant() -> 'plain': the reader has no CPU-specific path"},
    {"count_lines", rg_count_lines, METH_VARARGS, "count_lines(buf, start, end) -> number of newlines"},
    {"read_lines", rg_read_lines, METH_VARARGS,
     "read_lines(buf, start, end, ncols, value_col, value_kind, delim, codes, values, offsets, data)"
     " -> (rows, data_bytes, query_ids) or None when the text is not regular"},
    {"read_jsonl", rg_read_jsonl, METH_VARARGS,
     "read_jsonl(buf, start, end, id_keys, list_keys, item_keys, value_keys, value_kind, values, offsets, data"
     "[, rank_keys, ranks, extras, null_keys, unkept_bits, text_bits])"
     " -> (items, data_bytes, newlines, query_ids, counts, lines, ranked, others, texts, line_spans) or None when a"
     " line is not of the shape"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_reader", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__reader(void) {
    rg_jsonl_init();
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (rg_guard_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

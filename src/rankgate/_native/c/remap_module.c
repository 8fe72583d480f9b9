/*
 * remap_module.c: the module rankgate._native._remap, gold remapping's inner loops (rankgate.goldset.remap). Its method
 * table and PyInit__remap; the entry points, each defined in the file named:
 *
 *   ascii_tokens  remap.c
 *   shingle_scan  remap.c
 *   pair_hits     remap.c
 *   pick_greedy   remap.c
 *   set_baseline  remap_module.c (below)
 *   variant       remap_module.c (below)
 *
 * Positional arguments only; each docstring's first line gives them (tests/test_native_switch.py checks _remap.pyi
 * against it). The callers reach the module through rankgate._native (remap), and take their arrow and numpy
 * fallbacks where it is not built.
 */
#include "native.h"
#include "remap.h"

static int baseline_on = 0; /* set_baseline(True): RANKGATE_NATIVE=baseline */

/* set_baseline(on) -> whether it was on. The remap kernels have no CPU-specific path, so this only records the
 * request; it is here because the switch calls set_baseline on every extension (one without it is taken as built
 * from an older source, and not loaded under baseline). */
static PyObject *set_baseline(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    const int before = baseline_on;
    baseline_on = on;
    return PyBool_FromLong(before);
}

/* variant() -> "plain": no CPU-specific path. */
static PyObject *variant(PyObject *self, PyObject *noargs) {
    return PyUnicode_FromString("plain");
}

static PyMethodDef methods[] = {
    {"ascii_tokens", rg_ascii_tokens, METH_VARARGS,
     "ascii_tokens(offsets, data, counts_out) -> (token_offsets, token_data): remap's tokens of ASCII texts"},
    {"shingle_scan", rg_shingle_scan, METH_VARARGS,
     "shingle_scan(offsets, data, vocab_offsets, vocab_data, V, uniq, tokens_out, found_out, df) -> bytes: "
     "remap's shingle keys of ASCII texts, or their positions in uniq"},
    {"pair_hits", rg_pair_hits, METH_VARARGS,
     "pair_hits(found, hit_pos, rare, old_inv, old_text, old_tokens, new_tokens, shingle, piece, pure) -> (old, new): "
     "remap's candidate pairs"},
    {"pick_greedy", rg_pick_greedy, METH_VARARGS,
     "pick_greedy(old_code, old_start, old_tokens, new_code, new_start, new_tokens, cand_start, cand, cand_order, "
     "same_doc, shingle, piece, pure, shared_out, covers_out, from_out, picked_out, have_out): remap's picking"},
    {"set_baseline", set_baseline, METH_VARARGS,
     "set_baseline(on) -> previous: no CPU-specific path (RANKGATE_NATIVE=baseline; the remap kernels have none)"},
    {"variant", variant, METH_NOARGS, "variant() -> 'plain': the remap kernels have no CPU-specific path"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_remap", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__remap(void) {
    rg_remap_init();
    return PyModule_Create(&module);
}

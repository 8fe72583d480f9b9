/*
 * kernels_module.c: the module rankgate._native._kernels, the inner loops of the engine and the bootstrap that numpy
 * cannot express without many full-size temporaries. Its method table and PyInit__kernels; the entry points, each
 * defined in the file named:
 *
 *   csv_rows               csv.c
 *   join_grades            rank.c
 *   segments_distinct      rank.c
 *   rank_metrics           rank.c
 *   bootstrap_sums         bootstrap.c
 *   bootstrap_sums_blocks  bootstrap.c
 *   fixed_width_numbers    rank.c
 *   rank_permutation       rank.c
 *   draw_indices           bootstrap.c
 *   set_baseline           bootstrap.c
 *   variant                bootstrap.c
 *   narrow_limit           bootstrap.c
 *
 * Every entry point works on caller-allocated buffers (buffer protocol) and takes positional arguments only; each
 * docstring's first line gives them (tests/test_native_switch.py checks _kernels.pyi against it). The callers reach
 * the module through rankgate._native (kernels), which falls back to numpy where it is not built.
 */
#include "native.h"
#include "kernels.h"

static PyMethodDef methods[] = {
    {"csv_rows", rg_csv_rows, METH_VARARGS,
     "csv_rows(columns, n) -> str: CSV lines of text cells, coded cells and float64 values (repr; NaN empty)"},
    {"join_grades", rg_join_grades, METH_VARARGS,
     "join_grades(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, out) -> matched rows"},
    {"segments_distinct", rg_segments_distinct, METH_VARARGS,
     "segments_distinct(codes, offsets) -> bool: no segment holds a code twice"},
    {"rank_metrics", rg_rank_metrics, METH_VARARGS,
     "rank_metrics(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, logs, gains, specs, ks, out, "
     "first_rel): hit, recall, precision, mrr, ndcg and map of every query in one pass"},
    {"bootstrap_sums", rg_bootstrap_sums, METH_VARARGS,
     "bootstrap_sums(sfc64_state, values, m, n_resamples, out): resampled column sums"},
    {"bootstrap_sums_blocks", rg_bootstrap_sums_blocks, METH_VARARGS,
     "bootstrap_sums_blocks(sfc64_state, stacks, n_resamples, outs, group): bootstrap_sums of column blocks, one draw"},
    {"fixed_width_numbers", rg_fixed_width_numbers, METH_VARARGS,
     "fixed_width_numbers(data, offsets, width, cut, out) -> bool: prefix + digits ids of one width as numbers"},
    {"rank_permutation", rg_rank_permutation, METH_VARARGS,
     "rank_permutation(query, n_queries, score, id_offsets, id_data, out): the ranking rule as a permutation"},
    {"draw_indices", rg_draw_indices, METH_VARARGS, "draw_indices(sfc64_state, n, out): the stream's first indices"},
    {"set_baseline", rg_set_baseline, METH_VARARGS,
     "set_baseline(on) -> previous: the bootstrap's plain variants only (RANKGATE_NATIVE=baseline), or the widest the "
     "CPU runs"},
    {"variant", rg_variant, METH_NOARGS, "variant() -> 'avx512f', 'avx2' or 'plain': the bootstrap's variant in use"},
    {"narrow_limit", rg_narrow_limit, METH_VARARGS,
     "narrow_limit(v) -> previous: the largest byte count of bootstrap_sums_blocks before it draws again (tests)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernels(void) {
    rg_bootstrap_init();
    return PyModule_Create(&module);
}

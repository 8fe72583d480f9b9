/*
 * kernels.h: what the files of rankgate._native._kernels give its module file (kernels_module.c, which
 * holds the method table). Internal: no entry point of its own; the entry points, by file:
 *
 *   rank.c       join_grades, rank_metrics, segments_distinct, fixed_width_numbers, rank_permutation
 *   bootstrap.c  bootstrap_sums, bootstrap_sums_blocks, draw_indices, set_baseline, variant, narrow_limit
 *   csv.c        csv_rows
 */
#ifndef RANKGATE_KERNELS_H
#define RANKGATE_KERNELS_H

#include "native.h"

RG_HIDDEN PyObject *rg_join_grades(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_rank_metrics(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_segments_distinct(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_fixed_width_numbers(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_rank_permutation(PyObject *self, PyObject *args);

RG_HIDDEN PyObject *rg_bootstrap_sums(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_bootstrap_sums_blocks(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_draw_indices(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_set_baseline(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_variant(PyObject *self, PyObject *noargs);
RG_HIDDEN PyObject *rg_narrow_limit(PyObject *self, PyObject *args);
/* The widest variants the CPU runs, chosen at import (before set_baseline). */
RG_HIDDEN void rg_bootstrap_init(void);

RG_HIDDEN PyObject *rg_csv_rows(PyObject *self, PyObject *args);

#endif

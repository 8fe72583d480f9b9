/*
 * remap.h: what remap.c gives the module file of rankgate._native._remap (remap_module.c, which holds the method
 * table). Internal: no entry point of its own; the entry points, all in remap.c: ascii_tokens, shingle_scan,
 * pair_hits, pick_greedy.
 */
#ifndef RANKGATE_REMAP_H
#define RANKGATE_REMAP_H

#include "native.h"

RG_HIDDEN PyObject *rg_ascii_tokens(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_shingle_scan(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_pair_hits(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_pick_greedy(PyObject *self, PyObject *args);
/* The tokeniser's byte classes, made at import. */
RG_HIDDEN void rg_remap_init(void);

#endif

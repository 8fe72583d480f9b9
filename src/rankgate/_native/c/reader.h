/*
 * reader.h: what the files of rankgate._native._reader give one another and its module file (reader_module.c,
 * which holds the method table). Internal: no entry point of its own; the entry points, by file:
 *
 *   lines.c   count_lines, read_lines
 *   jsonl.c   read_jsonl, item_shapes, shaped_items
 *   guard.c   faults, FileCut
 *   reader_module.c  set_baseline, variant
 */
#ifndef RANKGATE_READER_H
#define RANKGATE_READER_H

#include "native.h"

/* What a scan of a region says: every line read, a line the caller's other readers must take, no memory. */
enum { OK = 0, IRREGULAR = 1, NO_MEMORY = 2 };

/* guard.c: the SIGBUS guard around a scan of a memory map. guarded runs fn(arg) with the guard on (*cut = 1, and
 * -1 returned, when a SIGBUS ended it); guard_ready_or_error installs the guard (with the GIL held; -1 with an
 * exception set if it cannot); own_ids copies the ids a scan points at out of the map (under the guard), moving
 * the pointers to the copies in one allocation (*arena, to be freed); file_cut sets FileCut and returns NULL. */
typedef int (*scan_fn)(void *);
RG_HIDDEN int guarded(scan_fn fn, void *arg, int *cut);
RG_HIDDEN int guard_ready_or_error(void);
RG_HIDDEN int own_ids(const unsigned char **ids, const int32_t *lens, size_t n, unsigned char **arena);
RG_HIDDEN PyObject *file_cut(void);
RG_HIDDEN PyObject *rg_faults(PyObject *self, PyObject *noargs);
/* FileCut made and added to the module; -1 with an exception set. */
RG_HIDDEN int rg_guard_init(PyObject *module);

/* lines.c: regions, also read by jsonl.c (the numbers of both: decimal.h). lines_end: where the complete lines of
 * [p, end) end; tail_copy: a last line without a newline, copied with one added and
 * room for a 16-byte read (NULL: no memory); get_buffers: the buffers of objs[0..n), the first read-only, the
 * others writable, each a whole number of items of sizes[i] bytes (how many were taken: n, or fewer with an
 * exception set). */
RG_HIDDEN const unsigned char *lines_end(const unsigned char *p, const unsigned char *end);
RG_HIDDEN unsigned char *tail_copy(const unsigned char *last, size_t n);
RG_HIDDEN int get_buffers(PyObject **objs, Py_buffer *views, const Py_ssize_t *sizes, int n, const char *who);
RG_HIDDEN PyObject *rg_count_lines(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_read_lines(PyObject *self, PyObject *args);

/* jsonl.c */
RG_HIDDEN PyObject *rg_read_jsonl(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_item_shapes(PyObject *self, PyObject *args);
RG_HIDDEN PyObject *rg_shaped_items(PyObject *self, PyObject *noargs);
/* The bytes a JSON string may hold as they are, made at import. */
RG_HIDDEN void rg_jsonl_init(void);

/* Eight bytes at a time (lines.c's fields, jsonl.c's strings): in a word whose bytes are flagged by their high bit
 * (the first byte lowest), where the first flagged byte is. */
#define RG_ONES 0x0101010101010101ULL
#define RG_HIGHS 0x8080808080808080ULL

static inline const unsigned char *first_flagged(const unsigned char *p, uint64_t flags) {
#if defined(__GNUC__)
    return p + (__builtin_ctzll(flags) >> 3);
#else
    while (!(flags & 0x80)) {
        flags >>= 8;
        p++;
    }
    return p;
#endif
}

#endif

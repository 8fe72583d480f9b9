/*
 * lines.c (rankgate._native._reader): whitespace-separated TREC lines (runs and qrels) read straight from a
 * memory map. Entry points:
 *
 *   count_lines  the newlines of a region, so that callers can size the outputs
 *   read_lines   a region's TREC lines into caller-allocated arrays, or None when one is not regular
 *
 * and, for jsonl.c (reader.h): lines_end, tail_copy, get_buffers.
 *
 *   read_lines(buf, start, end, ncols, value_col, value_kind, delim,
 *              codes, values, offsets, data) -> (rows, data_bytes, query_ids) | None
 *
 * Parses buf[start:end) as lines of exactly `ncols` non-empty fields of ASCII bytes 0x21-0x7f (ids:
 * printable ASCII, 0x21-0x7e) separated by one `delim` byte (b' ' or b'\t'), ending in \n, \r\n or a
 * lone \r (a line end, as in the other readers); empty lines are skipped. Column 0 is the query id,
 * column 2 the item id, column `value_col` a number: value_kind 0 a decimal float (float64 out), 1 an
 * integer (int64 out). Outputs, caller-allocated: codes (int32, the query's index in the returned
 * list, in order of first appearance: idtable.h's iddict_t), values, offsets (int32, rows + 1; an arrow
 * string array's offsets into data) and data (the item ids' bytes, with 16 bytes of room at the end: short
 * ids are copied 16 bytes at a time). count_lines(buf, start, end) counts newlines, so that callers can
 * size the outputs (lines that end in a lone \r are not counted: a region of more rows than its outputs
 * hold returns None).
 *
 * It is deliberately narrow. Anything it does not accept in full (a comment line, a tab in a
 * space-separated file, a byte >= 0x80 in any field, a number in another notation, too many rows or
 * bytes for the buffers) makes it return None, and the caller reads the file with the general
 * readers (rankgate.io.trec: pyarrow's CSV reader, then the line-by-line reader), which name the bad
 * line. So on every file this reader accepts, the result is the one the general path gives.
 *
 * Numbers (decimal.h) are correctly rounded, like strtod: the usual short decimals (mantissa <= 2^53, exponent
 * within 10^+-22) with one IEEE division or product of exact operands; up to 19 significant digits
 * (Python's repr of a float has at most 17) with 128-bit integer division and round-half-even; anything
 * longer by Python's own PyOS_string_to_double. The GIL is released while the text is scanned, so two
 * threads can read two halves of one file. The scans are plain C, the same on every CPU: there is no
 * CPU-specific path. Every scan runs under the SIGBUS guard (guard.c).
 */
#include "native.h"
#include "idtable.h"
#include "reader.h"
#include "decimal.h"

/* ---------------------------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *p, *end;
    int ncols, value_col, value_kind;
    unsigned char delim;
    int32_t *codes;
    void *values;
    int32_t *offsets;
    unsigned char *data;
    Py_ssize_t max_rows, max_data;
    Py_ssize_t rows, data_len;
    const unsigned char *text_end; /* reads of the text stay below this */
    const unsigned char *prev_q;   /* the previous line's query id */
    int32_t prev_len, prev_code;
    unsigned char *tail;           /* a copy of a last line that has no newline */
    iddict_t qd;
    unsigned char *arena;          /* the query ids, copied out of the buffer once scanned */
    PyThreadState *thread; /* while the GIL is released */
} job_t;

/* Where a field that starts at p ends, eight bytes at a time while eight can be read before `limit`:
 * field_end at the first byte outside 0x21-0x7f, id_end at the first byte outside printable ASCII
 * (0x21-0x7e). In a word w (its first byte lowest), ((w - 0x21..21) | w) & 0x80..80 flags bytes
 * below 0x21 and from 0x80, and ((w & 0x7f..7f) + 0x01..01 | w) & 0x80..80 bytes above 0x7e; a
 * borrow or carry can only flag a byte after a flagged one, so the lowest flag is exactly the first
 * such byte (first_flagged, reader.h). The text ends in '\n', so the byte loop for the last few bytes
 * stops by itself. No field holds a byte >= 0x80 (one the general reader refuses as not UTF-8, or splits
 * at): where one ends a field, no separator or line end follows, and the line is irregular. */
static inline const unsigned char *field_end(const unsigned char *p, const unsigned char *limit) {
    for (; limit - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t flags = ((w - RG_ONES * 0x21) | w) & RG_HIGHS;
        if (flags) return first_flagged(p, flags);
    }
    while ((unsigned)(*p - 0x21) < 0x5fu) p++;
    return p;
}

static inline const unsigned char *id_end(const unsigned char *p, const unsigned char *limit) {
    for (; limit - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t flags = (((w - RG_ONES * 0x21) & ~w) | ((w & ~RG_HIGHS) + RG_ONES) | w) & RG_HIGHS;
        if (flags) return first_flagged(p, flags);
    }
    while ((unsigned)(*p - 0x21) < 0x5eu) p++;
    return p;
}

/* Lines of [p, end), which ends in '\n': every scan below stops at a byte <= 0x20 before `end`, so the
 * inner loops need no bounds checks. Continues the job's rows (it is called again for a last line
 * without a newline, copied out with one added). */
static int scan(job_t *job, const unsigned char *p, const unsigned char *const end) {
    const unsigned char delim = job->delim;
    const int ncols = job->ncols, vcol = job->value_col;
    const unsigned char *fields[8];
    int32_t lens[8];
    Py_ssize_t rows = job->rows, dl = job->data_len;
    const unsigned char *const text_end = job->text_end;
    while (p < end) {
        if (*p == '\n') {
            p++;
            continue;
        }
        if (*p == '\r') { /* an empty line ending in \r\n or a lone \r */
            p += p[1] == '\n' ? 2 : 1;
            continue;
        }
        if (*p == '#' || rows == job->max_rows) return IRREGULAR;
        for (int c = 0; c < ncols; c++) {
            const unsigned char *s = p;
            if (c == 0 || c == 2) { /* ids: printable ASCII */
                p = id_end(p, text_end);
            } else { /* the others: no byte >= 0x80 either */
                p = field_end(p, text_end);
            }
            if (p == s || p - s > INT32_MAX) return IRREGULAR;
            fields[c] = s;
            lens[c] = (int32_t)(p - s);
            if (c + 1 < ncols) {
                if (*p != delim) return IRREGULAR;
                p++;
            } else if (*p == '\n') {
                p++;
            } else if (*p == '\r') { /* \r\n, or a lone \r (p[1] is readable: the text ends in \n) */
                p += p[1] == '\n' ? 2 : 1;
            } else {
                return IRREGULAR;
            }
        }
        /* query: usually the previous line's */
        const unsigned char *q = fields[0];
        const int32_t ql = lens[0];
        if (!(ql == job->prev_len && memcmp(q, job->prev_q, (size_t)ql) == 0)) {
            job->prev_code = iddict_code(&job->qd, q, ql);
            if (job->prev_code < 0) return NO_MEMORY;
            job->prev_q = q;
            job->prev_len = ql;
        }
        job->codes[rows] = job->prev_code;
        /* item id: short ids are copied 16 bytes at a time (data has 16 bytes of room past max_data) */
        const int32_t dlen = lens[2];
        if (dl + dlen > job->max_data || dl + dlen > INT32_MAX) return IRREGULAR;
        if (dlen <= 16 && fields[2] + 16 <= job->text_end) {
            memcpy(job->data + dl, fields[2], 16);
        } else {
            memcpy(job->data + dl, fields[2], (size_t)dlen);
        }
        dl += dlen;
        job->offsets[rows + 1] = (int32_t)dl;
        /* value */
        if (job->value_kind == 0) {
            double v;
            int rc = parse_double(fields[vcol], lens[vcol], &v);
            if (rc == 1) rc = slow_double(&job->thread, fields[vcol], lens[vcol], &v);
            if (rc != 0) return IRREGULAR;
            ((double *)job->values)[rows] = v;
        } else {
            int64_t v;
            if (parse_int(fields[vcol], lens[vcol], &v) != 0) return IRREGULAR;
            ((int64_t *)job->values)[rows] = v;
        }
        rows++;
    }
    job->rows = rows;
    job->data_len = dl;
    return OK;
}

/* Where the complete lines of [p, end) end: a last line without a newline starts there. */
const unsigned char *lines_end(const unsigned char *p, const unsigned char *end) {
    while (end > p && end[-1] != '\n') end--;
    return end;
}

/* A copy of the n bytes of a last line without a newline, then '\n' and room for a 16-byte read
 * (n + 17 bytes, to be freed), or NULL when out of memory. */
unsigned char *tail_copy(const unsigned char *last, size_t n) {
    unsigned char *tail = (unsigned char *)malloc(n + 17);
    if (tail) {
        memcpy(tail, last, n);
        memset(tail + n, '\n', 17);
    }
    return tail;
}

/* The whole region: all complete lines in place, then a last line without a newline from a copy. */
static int scan_all(job_t *job);

/* scan_all, then the query ids copied out of the buffer (see own_ids). */
static int scan_lines_owned(void *arg) {
    job_t *job = (job_t *)arg;
    const int status = scan_all(job);
    if (status != OK) return status;
    return own_ids(job->qd.ids, job->qd.lens, job->qd.n, &job->arena) < 0 ? NO_MEMORY : OK;
}

static int scan_all(job_t *job) {
    const unsigned char *p = job->p, *end = job->end;
    const unsigned char *last = lines_end(p, end);
    job->text_end = end;
    int status = scan(job, p, last);
    if (status != OK || last == end) return status;
    const size_t n = (size_t)(end - last);
    if (!(job->tail = tail_copy(last, n))) return NO_MEMORY;
    job->text_end = job->tail + n + 17;
    return scan(job, job->tail, job->tail + n + 1);
}

/* The number of b'\n' in [p, end), eight bytes at a time: a byte of x = word ^ 0x0a..0a is zero exactly
 * where the word holds a newline, and ((x & 0x7f..7f) + 0x7f..7f) | x has its high bit clear exactly in
 * the zero bytes (the addition carries out of no byte, so the bytes do not disturb one another); one
 * multiply adds up the eight flags. A memchr per line costs more than this on lines of a few dozen bytes. */
static Py_ssize_t newlines(const unsigned char *p, const unsigned char *const end) {
    const uint64_t ones7 = 0x7f7f7f7f7f7f7f7fULL, nl = 0x0a0a0a0a0a0a0a0aULL;
    Py_ssize_t count = 0;
    for (; end - p >= 8; p += 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        const uint64_t x = w ^ nl;
        const uint64_t high = ~(((x & ones7) + ones7) | x) & ~ones7; /* 0x80 in each newline byte */
        count += (Py_ssize_t)(((high >> 7) * 0x0101010101010101ULL) >> 56); /* the bytes' sum: at most 8 */
    }
    for (; p < end; p++) count += *p == '\n';
    return count;
}

typedef struct {
    const unsigned char *from, *to;
    Py_ssize_t count;
} count_job_t;

static int count_scan(void *arg) {
    count_job_t *job = (count_job_t *)arg;
    job->count = newlines(job->from, job->to);
    return 0;
}

/* count_lines(buf, start, end) -> number of b'\n' in buf[start:end) */
PyObject *rg_count_lines(PyObject *self, PyObject *args) {
    PyObject *o_buf;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "Onn", &o_buf, &start, &stop)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(o_buf, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (start < 0 || stop < start || stop > view.len) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "count_lines: range outside the buffer");
        return NULL;
    }
    if (guard_ready_or_error() < 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    count_job_t job = {(const unsigned char *)view.buf + start, (const unsigned char *)view.buf + stop, 0};
    int cut;
    Py_BEGIN_ALLOW_THREADS
    guarded(count_scan, &job, &cut);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return cut ? file_cut() : PyLong_FromSsize_t(job.count);
}

/* The buffers of objs[0..n): the first read-only, the others writable, each a whole number of items
 * of sizes[i] bytes. Returns how many were taken: n, or fewer with an exception set (those taken are
 * views[0..returned), for the caller to release). */
int get_buffers(PyObject **objs, Py_buffer *views, const Py_ssize_t *sizes, int n, const char *who) {
    for (int i = 0; i < n; i++) {
        const int flags = PyBUF_C_CONTIGUOUS | (i ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(objs[i], &views[i], flags) < 0) return i;
        if (views[i].len % sizes[i] != 0) {
            PyBuffer_Release(&views[i]);
            PyErr_Format(PyExc_TypeError, "%s: buffer of the wrong item size", who);
            return i;
        }
    }
    return n;
}

PyObject *rg_read_lines(PyObject *self, PyObject *args) {
    PyObject *o_buf, *o_codes, *o_values, *o_offsets, *o_data;
    Py_ssize_t start, stop;
    int ncols, value_col, value_kind;
    char delim;
    if (!PyArg_ParseTuple(args, "OnniiicOOOO", &o_buf, &start, &stop, &ncols, &value_col, &value_kind, &delim,
                          &o_codes, &o_values, &o_offsets, &o_data))
        return NULL;
    if (ncols < 3 || ncols > 8 || value_col < 1 || value_col >= ncols || value_col == 2 || value_kind < 0 ||
        value_kind > 1 || (delim != ' ' && delim != '\t')) {
        PyErr_SetString(PyExc_ValueError, "read_lines: unsupported layout");
        return NULL;
    }
    Py_buffer views[5];
    PyObject *objs[5] = {o_buf, o_codes, o_values, o_offsets, o_data};
    const Py_ssize_t sizes[5] = {1, 4, 8, 4, 1};
    PyObject *result = NULL;
    int got = get_buffers(objs, views, sizes, 5, "read_lines");
    if (got < 5) goto done;
    if (start < 0 || stop < start || stop > views[0].len || views[1].len / 4 != views[2].len / 8 ||
        views[3].len / 4 != views[1].len / 4 + 1 || views[4].len < 16) {
        PyErr_SetString(PyExc_ValueError, "read_lines: inconsistent shapes");
        goto done;
    }
    job_t job;
    memset(&job, 0, sizeof(job));
    job.p = (const unsigned char *)views[0].buf + start;
    job.end = (const unsigned char *)views[0].buf + stop;
    job.ncols = ncols;
    job.value_col = value_col;
    job.value_kind = value_kind;
    job.delim = (unsigned char)delim;
    job.codes = (int32_t *)views[1].buf;
    job.values = views[2].buf;
    job.offsets = (int32_t *)views[3].buf;
    job.data = (unsigned char *)views[4].buf;
    job.max_rows = views[1].len / 4;
    job.max_data = views[4].len - 16;
    job.prev_len = -1;
    job.offsets[0] = 0;
    if (iddict_init(&job.qd) < 0) {
        iddict_free(&job.qd);
        PyErr_NoMemory();
        goto done;
    }
    if (guard_ready_or_error() < 0) {
        iddict_free(&job.qd);
        goto done;
    }
    int cut;
    job.thread = PyEval_SaveThread();
    const int status = guarded(scan_lines_owned, &job, &cut);
    PyEval_RestoreThread(job.thread);
    if (cut) {
        file_cut();
    } else if (status == NO_MEMORY) {
        PyErr_NoMemory();
    } else if (status == IRREGULAR) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        PyObject *ids = PyList_New((Py_ssize_t)job.qd.n);
        for (size_t i = 0; ids && i < job.qd.n; i++) {
            PyObject *s = PyUnicode_DecodeASCII((const char *)job.qd.ids[i], job.qd.lens[i], NULL);
            if (!s) {
                Py_CLEAR(ids);
                break;
            }
            PyList_SET_ITEM(ids, (Py_ssize_t)i, s);
        }
        if (ids) result = Py_BuildValue("nnN", job.rows, job.data_len, ids);
    }
    free(job.tail);
    free(job.arena);
    iddict_free(&job.qd);
done:
    while (got > 0) PyBuffer_Release(&views[--got]);
    return result;
}

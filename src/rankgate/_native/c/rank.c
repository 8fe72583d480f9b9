/*
 * rank.c (rankgate._native._kernels): the ranked rows of a run against its judgements. Entry points:
 *
 *   join_grades          the grade of every ranked row, one query at a time (its judgements in a small
 *                        table, idtable.h, which stays in L1 cache), NaN for rows without a judgement
 *   rank_metrics         hit, recall, precision, mrr, ndcg and map of every query in one pass over its
 *                        ranked ids, without the grade of every row
 *   segments_distinct    whether no query lists an id twice
 *   fixed_width_numbers  ids such as d000123 (one width, shared prefix, digits) as integers
 *   rank_permutation     the ranking rule for a run that is not in order: rows grouped by query, then
 *                        score descending, id descending (byte-wise), input order
 *
 * They work on caller-allocated buffers and release the GIL while they run. The fallbacks, which give the
 * same results (the tests compare them): rankgate.scoring.engine, rankgate.metrics.ranking and
 * rankgate.model.ids / rankgate.model.ranking.
 */
#include "native.h"
#include "idtable.h"
#include "kernels.h"

/* ---------------------------------------------------------------------------------------------- */
/* join_grades(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, out) -> matched: per query,
 * its judgements in a table (item code -> the judgement's grade and place in the query; the last judgement of
 * an id wins), probed by its rows. */

/* The least slots of a query's table (of its judgements, here and in rank_metrics; of its codes, segments_distinct):
 * one table for the longest list, emptied for each query. */
enum { QUERY_TABLE_LEAST = 8 };

/* A judgement's slot: its place in the query (value) and its grade (aux), or GRADE_ELSEWHERE for a grade a 32-bit
 * word cannot hold (then read from the judgements at that place): the usual lookup reads the slot alone. */
#define GRADE_ELSEWHERE INT32_MIN

static inline int32_t grade_word(int64_t grade) {
    return grade > INT32_MIN && grade <= INT32_MAX ? (int32_t)grade : GRADE_ELSEWHERE;
}

PyObject *rg_join_grades(PyObject *self, PyObject *args) {
    enum { ROFF, RCODE, JOFF, JCODE, JGRADE, OUT, NBUF };
    static const char *names[NBUF] = {"row_offsets", "row_codes", "judged_offsets", "judged_codes", "judged_grades", "out"};
    PyObject *objs[NBUF];
    Py_buffer v[NBUF];
    int got = 0;
    PyObject *result = NULL;
    idtable_t judged = {NULL, 0};
    if (!PyArg_ParseTuple(args, "OOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5])) return NULL;
    for (; got < NBUF; got++) {
        if (get_buffer(objs[got], &v[got], names[got], 8, got == OUT) < 0) goto done;
    }
    const Py_ssize_t nq = v[ROFF].len / 8 - 1;
    const Py_ssize_t nrows = v[RCODE].len / 8, nj = v[JCODE].len / 8;
    const int64_t *ro = (const int64_t *)v[ROFF].buf, *rc = (const int64_t *)v[RCODE].buf;
    const int64_t *jo = (const int64_t *)v[JOFF].buf, *jc = (const int64_t *)v[JCODE].buf;
    const int64_t *jg = (const int64_t *)v[JGRADE].buf;
    double *g = (double *)v[OUT].buf;
    if (nq < 0 || v[JOFF].len / 8 != nq + 1 || v[JGRADE].len != v[JCODE].len || v[OUT].len != v[RCODE].len) {
        PyErr_SetString(PyExc_ValueError, "join_grades: inconsistent lengths");
        goto done;
    }
    Py_ssize_t most = 0; /* the longest judgement list sizes the scratch table */
    for (Py_ssize_t q = 0; q < nq; q++) {
        if (ro[q] < 0 || ro[q] > ro[q + 1] || ro[q + 1] > nrows || jo[q] < 0 || jo[q] > jo[q + 1] || jo[q + 1] > nj) {
            PyErr_SetString(PyExc_ValueError, "join_grades: offsets out of range");
            goto done;
        }
        if (jo[q + 1] - jo[q] > most) most = jo[q + 1] - jo[q];
    }
    if (idt_alloc(&judged, (size_t)most, QUERY_TABLE_LEAST) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t matched = 0;
    const double nan = NAN;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t a = jo[q], b = jo[q + 1];
        const int64_t r0 = ro[q], r1 = ro[q + 1];
        if (b - a <= 4) { /* a handful of judgements (or none): compare directly */
            for (int64_t r = r0; r < r1; r++) {
                double x = nan;
                const int64_t c = rc[r];
                for (int64_t j = a; j < b; j++) {
                    if (jc[j] == c) {
                        x = (double)jg[j];
                        matched++;
                        break;
                    }
                }
                g[r] = x;
            }
            continue;
        }
        idt_reset(&judged, (size_t)(b - a), QUERY_TABLE_LEAST);
        for (int64_t j = a; j < b; j++) {
            const int64_t c = jc[j];
            if (c < 0) continue; /* a judged id that never occurs in the run */
            idslot_t *s = idt_place(&judged, c);
            s->key = c;
            s->value = (int32_t)(j - a);
            s->aux = grade_word(jg[j]);
        }
        for (int64_t r = r0; r < r1; r++) {
            const idslot_t *s = idt_find(&judged, rc[r]);
            double x = nan;
            if (s) {
                x = (double)(s->aux != GRADE_ELSEWHERE ? (int64_t)s->aux : jg[a + s->value]);
                matched++;
            }
            g[r] = x;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(matched);
done:
    idt_free(&judged);
    while (got > 0) PyBuffer_Release(&v[--got]);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* fixed_width_numbers(data, offsets, width, cut, out) -> bool: ids that are all `width` bytes long
 * (int32 arrow offsets step by width), share a prefix (the first id's first `cut` bytes) and then
 * hold only digits, as numbers; False (out undefined) if any id is not. */

/* One id byte by byte: its first `cut` bytes those of `first`, then digits (at most 18), as a number. */
static inline int id_number(const unsigned char *id, const unsigned char *first, Py_ssize_t cut, Py_ssize_t width,
                            int64_t *out) {
    for (Py_ssize_t k = 0; k < cut; k++) { /* prefixes are short: no call to memcmp */
        if (id[k] != first[k]) return 0;
    }
    int64_t v = 0;
    for (Py_ssize_t j = cut; j < width; j++) {
        const unsigned c = (unsigned)id[j] - 48u;
        if (c > 9u) return 0;
        v = v * 10 + (int64_t)c;
    }
    *out = v;
    return 1;
}

PyObject *rg_fixed_width_numbers(PyObject *self, PyObject *args) {
    PyObject *o_data, *o_off, *o_out;
    Py_ssize_t width, cut;
    if (!PyArg_ParseTuple(args, "OOnnO", &o_data, &o_off, &width, &cut, &o_out)) return NULL;
    Py_buffer data, off, out;
    if (get_buffer(o_data, &data, "data", 1, 0) < 0) return NULL;
    if (get_buffer(o_off, &off, "offsets", 4, 0) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    if (get_buffer(o_out, &out, "out", 8, 1) < 0) {
        PyBuffer_Release(&data);
        PyBuffer_Release(&off);
        return NULL;
    }
    const Py_ssize_t n = out.len / 8;
    PyObject *result = NULL;
    if (width < 1 || cut < 0 || cut >= width || width - cut > 18 || data.len != n * width || off.len / 4 != n + 1) {
        PyErr_SetString(PyExc_ValueError, "fixed_width_numbers: inconsistent shapes");
        goto done;
    }
    const unsigned char *d = (const unsigned char *)data.buf;
    const int32_t *o32 = (const int32_t *)off.buf;
    int64_t *o = (int64_t *)out.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* Eight bytes at a time where the loads stay inside the data (the ids in the middle; the first
     * and last few go through the loop below): the prefix as one masked word, the digits as one or
     * two words read back from the id's end, their bytes before the digits replaced by '0'. */
    const Py_ssize_t nd = width - cut;
    if (cut <= 8 && nd <= 16 && width >= 1 && n * width >= 16) {
        const uint64_t pmask = cut == 8 ? ~0ULL : (1ULL << (8 * cut)) - 1;
        uint64_t pref;
        memcpy(&pref, d, 8);
        pref &= pmask;
        const Py_ssize_t lo = (16 + width - 1) / width, hi = (n * width - 8) / width; /* loads in bounds */
        for (Py_ssize_t i = 0; i < n; i++) {
            if ((int64_t)o32[i + 1] - (int64_t)o32[i] != width) {
                ok = 0;
                break;
            }
        }
        for (Py_ssize_t i = lo; ok && i < hi; i++) {
            const unsigned char *id = d + i * width;
            uint64_t head;
            memcpy(&head, id, 8);
            if ((head & pmask) != pref) {
                ok = 0;
                break;
            }
            uint64_t v = 0;
            for (Py_ssize_t end = width, left = nd; left > 0; end -= 8, left -= 8) {
                const Py_ssize_t k = left < 8 ? left : 8; /* digits in this word */
                uint64_t x;
                memcpy(&x, id + end - 8, 8);
                if (k < 8) {
                    const uint64_t low = (1ULL << (8 * (8 - k))) - 1;
                    x = (x & ~low) | (0x3030303030303030ULL & low);
                }
                if (((x & 0xF0F0F0F0F0F0F0F0ULL) | (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) !=
                    0x3333333333333333ULL) {
                    ok = 0;
                    break;
                }
                x = ((x & 0x0F0F0F0F0F0F0F0FULL) * 2561) >> 8;
                x = ((x & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;
                x = ((x & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
                v = left > 8 ? x : (nd > 8 ? v + x * 100000000ULL : x); /* (the low word comes first) */
            }
            o[i] = (int64_t)v;
        }
        for (Py_ssize_t i = 0; ok && i < n; i++) { /* the edges */
            if (i == lo && lo < hi) i = hi;
            ok = id_number(d + i * width, d, cut, width, &o[i]);
        }
        goto finished;
    }
#endif
    for (Py_ssize_t i = 0; i < n && ok; i++) {
        if ((int64_t)o32[i + 1] - (int64_t)o32[i] != width) {
            ok = 0;
            break;
        }
        ok = id_number(d + i * width, d, cut, width, &o[i]);
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
finished:
#endif
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(ok);
done:
    PyBuffer_Release(&data);
    PyBuffer_Release(&off);
    PyBuffer_Release(&out);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* rank_permutation(query, n_queries, score, id_offsets, id_data, out) -> None: the ranking rule as a
 * permutation: rows grouped by query code (ascending; a counting sort), each query's rows by score
 * descending, then id descending byte-wise (as strcmp: a proper prefix sorts lower), then input
 * order. query: int32 or int64 codes in [0, n_queries); ids: an arrow string array's int32 offsets
 * and data. */

typedef struct {
    double score;
    const unsigned char *id;
    int32_t len;
    int64_t row;
} ranked_t;

static int ranked_cmp(const void *x, const void *y) {
    const ranked_t *a = (const ranked_t *)x, *b = (const ranked_t *)y;
    if (a->score > b->score) return -1;
    if (a->score < b->score) return 1;
    const int32_t m = a->len < b->len ? a->len : b->len;
    const int c = m ? memcmp(a->id, b->id, (size_t)m) : 0;
    if (c) return c > 0 ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

PyObject *rg_rank_permutation(PyObject *self, PyObject *args) {
    PyObject *o_q, *o_s, *o_off, *o_data, *o_out;
    Py_ssize_t nq;
    if (!PyArg_ParseTuple(args, "OnOOOO", &o_q, &nq, &o_s, &o_off, &o_data, &o_out)) return NULL;
    Py_buffer q, sc, off, data, out;
    int got = 0;
    PyObject *result = NULL;
    int64_t *start = NULL;
    ranked_t *scratch = NULL;
    if (PyObject_GetBuffer(o_q, &q, PyBUF_C_CONTIGUOUS) < 0) goto done;
    got = 1;
    if (q.itemsize != 4 && q.itemsize != 8) {
        PyErr_SetString(PyExc_TypeError, "rank_permutation: query codes must be int32 or int64");
        goto done;
    }
    if (get_buffer(o_s, &sc, "score", 8, 0) < 0) goto done;
    got = 2;
    if (get_buffer(o_off, &off, "id_offsets", 4, 0) < 0) goto done;
    got = 3;
    if (get_buffer(o_data, &data, "id_data", 1, 0) < 0) goto done;
    got = 4;
    if (get_buffer(o_out, &out, "out", 8, 1) < 0) goto done;
    got = 5;
    const Py_ssize_t n = q.len / q.itemsize;
    if (nq < 0 || sc.len / 8 != n || off.len / 4 != n + 1 || out.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "rank_permutation: inconsistent lengths");
        goto done;
    }
    const int32_t *o32 = (const int32_t *)off.buf;
    const int32_t *q32 = (const int32_t *)q.buf;
    const int64_t *q64 = (const int64_t *)q.buf;
    const double *s = (const double *)sc.buf;
    const unsigned char *d = (const unsigned char *)data.buf;
    int64_t *o = (int64_t *)out.buf;
    start = (int64_t *)calloc((size_t)nq + 1, sizeof(int64_t));
    if (!start) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        const int64_t c = q.itemsize == 4 ? (int64_t)q32[i] : q64[i];
        if (c < 0 || c >= nq || o32[i] < 0 || o32[i + 1] < o32[i] || (Py_ssize_t)o32[i + 1] > data.len) {
            PyErr_SetString(PyExc_ValueError, "rank_permutation: query code or id offsets out of range");
            goto done;
        }
        start[c + 1]++;
    }
    Py_ssize_t longest = 0;
    for (Py_ssize_t c = 0; c < nq; c++) {
        if (start[c + 1] > longest) longest = start[c + 1];
        start[c + 1] += start[c];
    }
    scratch = (ranked_t *)malloc((size_t)(longest ? longest : 1) * sizeof(ranked_t));
    if (!scratch) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) { /* stable scatter by query */
        const int64_t c = q.itemsize == 4 ? (int64_t)q32[i] : q64[i];
        o[start[c]++] = i;
    }
    int64_t lo = 0;
    for (Py_ssize_t c = 0; c < nq; c++) { /* start[c] is now the end of query c */
        const int64_t hi = start[c];
        for (int64_t k = lo; k < hi; k++) {
            const int64_t r = o[k];
            scratch[k - lo].score = s[r];
            scratch[k - lo].id = d + o32[r];
            scratch[k - lo].len = o32[r + 1] - o32[r];
            scratch[k - lo].row = r;
        }
        if (hi - lo > 1) qsort(scratch, (size_t)(hi - lo), sizeof(ranked_t), ranked_cmp);
        for (int64_t k = lo; k < hi; k++) o[k] = scratch[k - lo].row;
        lo = hi;
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    free(start);
    free(scratch);
    Py_buffer *views[5] = {&q, &sc, &off, &data, &out};
    while (got > 0) PyBuffer_Release(views[--got]);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* rank_metrics(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, logs, gains, specs, ks,
 *              out, first_rel)
 *
 * hit, recall, precision, mrr, ndcg and map of every query in one pass over its ranked rows, with the
 * same IEEE operations in the same order as the numpy kernels of rankgate.metrics.ranking (which the
 * tests compare it with): a row's grade is its judgement's (the last one for an id judged twice),
 * relevant when >= rel; rank is the row's 1-based place in its query. Only rows with a grade >= 1 add
 * to any of the six, so a row is first tested against a 256-bit filter of the query's ids judged >= 1
 * and looked up only when its bit is set.
 *
 *   logs   float64: logs[i] = log2(i) (the C library's, as Python's math.log2); long enough for every
 *          rank + 1 and ideal place + 1
 *   gains  float64, two rows of (top grade + 1): the gain of grades 0..top, linear then exp
 *   specs  int64, three per metric: kind (0 hit, 1 recall, 2 precision, 3 mrr, 4 ndcg, 5 map), rel (>= 1),
 *          gain row (ndcg: 0 linear, 1 exp)
 *   ks     int64, per metric then per query: the cutoff (rows past it are not read)
 *   out    float64, per metric then per query: the value before the metric's scope is applied
 *   first_rel  int64 per query: rank of the first row with a grade >= 1, 0 when none */

enum { RM_HIT, RM_RECALL, RM_PRECISION, RM_MRR, RM_NDCG, RM_MAP, RM_KINDS };

static inline uint64_t filter_hash(int64_t c) { return (uint64_t)c * 0x9E3779B97F4A7C15ULL; }

static int cmp_desc_i64(const void *x, const void *y) {
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a < b) - (a > b);
}

PyObject *rg_rank_metrics(PyObject *self, PyObject *args) {
    enum { ROFF, RCODE, JOFF, JCODE, JGRADE, LOGS, GAINS, SPECS, KS, OUT, FIRST, NBUF };
    static const char *names[NBUF] = {"row_offsets", "row_codes", "judged_offsets", "judged_codes", "judged_grades",
                                      "logs", "gains", "specs", "ks", "out", "first_rel"};
    PyObject *objs[NBUF];
    Py_buffer v[NBUF];
    int got = 0;
    PyObject *result = NULL;
    idtable_t judged = {NULL, 0};
    int64_t *hit_rank = NULL, *hit_grade = NULL, *ideal = NULL;
    double *prefix = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &objs[7], &objs[8], &objs[9], &objs[10]))
        return NULL;
    for (; got < NBUF; got++) {
        if (get_buffer(objs[got], &v[got], names[got], 8, got == OUT || got == FIRST) < 0) goto done;
    }
    const Py_ssize_t nq = v[ROFF].len / 8 - 1;
    const Py_ssize_t nrows = v[RCODE].len / 8, nj = v[JCODE].len / 8;
    const Py_ssize_t nlogs = v[LOGS].len / 8, ngain = v[GAINS].len / 16, m = v[SPECS].len / 24;
    const int64_t *ro = (const int64_t *)v[ROFF].buf, *rc = (const int64_t *)v[RCODE].buf;
    const int64_t *jo = (const int64_t *)v[JOFF].buf, *jc = (const int64_t *)v[JCODE].buf;
    const int64_t *jg = (const int64_t *)v[JGRADE].buf, *specs = (const int64_t *)v[SPECS].buf;
    const int64_t *ks = (const int64_t *)v[KS].buf;
    const double *logs = (const double *)v[LOGS].buf, *gains = (const double *)v[GAINS].buf;
    double *out = (double *)v[OUT].buf;
    int64_t *first_rel = (int64_t *)v[FIRST].buf;
    if (nq < 0 || v[JOFF].len / 8 != nq + 1 || v[JGRADE].len != v[JCODE].len || v[SPECS].len != m * 24 ||
        v[KS].len != m * nq * 8 || v[OUT].len != m * nq * 8 || v[FIRST].len != nq * 8 || v[GAINS].len != ngain * 16 ||
        ngain < 1) {
        PyErr_SetString(PyExc_ValueError, "rank_metrics: inconsistent lengths");
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        const int64_t kind = specs[3 * i], rel = specs[3 * i + 1], row = specs[3 * i + 2];
        if (kind < 0 || kind >= RM_KINDS || rel < 1 || row < 0 || row > 1) {
            PyErr_SetString(PyExc_ValueError, "rank_metrics: a metric spec out of range");
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < m * nq; i++) {
        if (ks[i] < 0) {
            PyErr_SetString(PyExc_ValueError, "rank_metrics: a negative cutoff");
            goto done;
        }
    }
    Py_ssize_t most = 0, most_rows = 0; /* the longest lists size the scratch space */
    for (Py_ssize_t q = 0; q < nq; q++) {
        if (ro[q] < 0 || ro[q] > ro[q + 1] || ro[q + 1] > nrows || jo[q] < 0 || jo[q] > jo[q + 1] || jo[q + 1] > nj) {
            PyErr_SetString(PyExc_ValueError, "rank_metrics: offsets out of range");
            goto done;
        }
        if (jo[q + 1] - jo[q] > most) most = jo[q + 1] - jo[q];
        if (ro[q + 1] - ro[q] > most_rows) most_rows = ro[q + 1] - ro[q];
    }
    if (nlogs < most_rows + 2 || nlogs < most + 2) {
        PyErr_SetString(PyExc_ValueError, "rank_metrics: logs too short");
        goto done;
    }
    for (Py_ssize_t j = 0; j < nj; j++) {
        if (jg[j] >= ngain) {
            PyErr_SetString(PyExc_ValueError, "rank_metrics: a grade past the gain table");
            goto done;
        }
    }
    const int have_table = idt_alloc(&judged, (size_t)most, QUERY_TABLE_LEAST) == 0;
    hit_rank = (int64_t *)malloc((size_t)(most_rows + 1) * sizeof(int64_t));
    hit_grade = (int64_t *)malloc((size_t)(most_rows + 1) * sizeof(int64_t));
    ideal = (int64_t *)malloc((size_t)(most + 1) * sizeof(int64_t));
    prefix = (double *)malloc((size_t)(most + 1) * 2 * sizeof(double));
    if (!have_table || !hit_rank || !hit_grade || !ideal || !prefix) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t a = jo[q], b = jo[q + 1];
        const int64_t r0 = ro[q], r1 = ro[q + 1];
        /* The query's judgements: a table of id -> judgement (the last judgement of an id wins, as in
         * join_grades), a filter of the ids judged >= 1, and the grades >= 1 for the ideal list. */
        idt_reset(&judged, (size_t)(b - a), QUERY_TABLE_LEAST);
        uint64_t filter[4] = {0, 0, 0, 0};
        Py_ssize_t npos = 0;
        for (int64_t j = a; j < b; j++) {
            const int64_t c = jc[j], grade = jg[j];
            if (grade >= 1) ideal[npos++] = grade;
            if (c < 0) continue; /* a judged id that never occurs in the rows */
            idslot_t *s = idt_place(&judged, c);
            s->key = c;
            s->value = (int32_t)(j - a);
            s->aux = grade_word(grade);
            if (grade >= 1) {
                const uint64_t f = filter_hash(c);
                filter[f >> 62] |= 1ULL << ((f >> 56) & 63);
            }
        }
        /* The rows with a grade >= 1, in rank order. */
        Py_ssize_t nhits = 0;
        for (int64_t r = r0; r < r1; r++) {
            const int64_t c = rc[r];
            const uint64_t f = filter_hash(c);
            if (!((filter[f >> 62] >> ((f >> 56) & 63)) & 1)) continue;
            const idslot_t *s = idt_find(&judged, c);
            if (!s) continue;
            const int64_t grade = s->aux != GRADE_ELSEWHERE ? (int64_t)s->aux : jg[a + s->value];
            if (grade >= 1) {
                hit_rank[nhits] = r - r0 + 1;
                hit_grade[nhits] = grade;
                nhits++;
            }
        }
        first_rel[q] = nhits ? hit_rank[0] : 0;
        int ideal_sorted = 0;
        int ideal_made[2] = {0, 0};
        for (Py_ssize_t i = 0; i < m; i++) {
            const int64_t kind = specs[3 * i], rel = specs[3 * i + 1], row = specs[3 * i + 2];
            const int64_t k = ks[i * nq + q];
            double value = 0.0;
            int64_t found = 0, first = 0;
            int64_t n = 0; /* judgements >= rel (also of ids the rows never hold) */
            if (kind == RM_RECALL || kind == RM_MAP) {
                for (int64_t j = a; j < b; j++) n += jg[j] >= rel;
            }
            if (kind == RM_NDCG) {
                const double *gain = gains + row * ngain;
                double dcg = 0.0;
                for (Py_ssize_t h = 0; h < nhits && hit_rank[h] <= k; h++) {
                    dcg += gain[hit_grade[h]] / logs[hit_rank[h] + 1];
                }
                if (!ideal_sorted) {
                    if (npos > 1) qsort(ideal, (size_t)npos, sizeof(int64_t), cmp_desc_i64);
                    ideal_sorted = 1;
                }
                double *pre = prefix + row * (most + 1);
                if (!ideal_made[row]) { /* pre[p]: the ideal sum of the first p places, added in place order */
                    pre[0] = 0.0;
                    for (Py_ssize_t p = 1; p <= npos; p++) pre[p] = pre[p - 1] + gain[ideal[p - 1]] / logs[p + 1];
                    ideal_made[row] = 1;
                }
                const double idcg = pre[npos < k ? npos : k];
                value = idcg > 0 ? dcg / idcg : 0.0;
            } else {
                double total = 0.0;
                for (Py_ssize_t h = 0; h < nhits && hit_rank[h] <= k; h++) {
                    if (hit_grade[h] < rel) continue;
                    found++;
                    if (!first) first = hit_rank[h];
                    if (kind == RM_MAP) total += (double)found / (double)hit_rank[h];
                }
                switch (kind) {
                case RM_HIT: value = found > 0 ? 1.0 : 0.0; break;
                case RM_RECALL: value = n > 0 ? (double)found / (double)n : 0.0; break;
                case RM_PRECISION: value = (double)found / (double)k; break;
                case RM_MRR: value = first ? 1.0 / (double)first : 0.0; break;
                default: value = n > 0 ? total / (double)n : 0.0; break;
                }
            }
            out[i * nq + q] = value;
        }
    }
    Py_END_ALLOW_THREADS
    Py_INCREF(Py_None);
    result = Py_None;
done:
    idt_free(&judged);
    free(hit_rank);
    free(hit_grade);
    free(ideal);
    free(prefix);
    while (got > 0) PyBuffer_Release(&v[--got]);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* segments_distinct(codes, offsets) -> bool: whether no segment (codes[offsets[i]:offsets[i+1]]) holds
 * a code twice; a tiny per-segment hash, as in join_grades. The rows of a repeat are found by the
 * caller (rankgate.model.ids.segment_duplicates) only when this says there is one. */

PyObject *rg_segments_distinct(PyObject *self, PyObject *args) {
    PyObject *o_codes, *o_off;
    if (!PyArg_ParseTuple(args, "OO", &o_codes, &o_off)) return NULL;
    Py_buffer vc, vo;
    if (get_buffer(o_codes, &vc, "codes", 8, 0) < 0) return NULL;
    if (get_buffer(o_off, &vo, "offsets", 8, 0) < 0) {
        PyBuffer_Release(&vc);
        return NULL;
    }
    PyObject *result = NULL;
    idtable_t seen_codes = {NULL, 0};
    const int64_t *c = (const int64_t *)vc.buf, *o = (const int64_t *)vo.buf;
    const Py_ssize_t n = vc.len / 8, ns = vo.len / 8 - 1;
    Py_ssize_t most = 0;
    if (ns < 0) goto bad;
    for (Py_ssize_t s = 0; s < ns; s++) {
        if (o[s] < 0 || o[s] > o[s + 1] || o[s + 1] > n) goto bad;
        if (o[s + 1] - o[s] > most) most = o[s + 1] - o[s];
    }
    int64_t lo = 0, hi = -1;
    for (Py_ssize_t r = 0; r < n; r++) {
        lo = c[r] < lo ? c[r] : lo;
        hi = c[r] > hi ? c[r] : hi;
    }
    int distinct = 1;
    if (lo >= 0 && hi < ((int64_t)1 << 26)) {
        /* Codes below 2^26 (most: item codes count the distinct ids): a bit per code, set as a
         * segment's codes are met and cleared after it (a word at a time), in the core's cache. */
        uint64_t *bits = (uint64_t *)calloc((size_t)(hi >> 6) + 1, sizeof(uint64_t));
        if (!bits) {
            PyErr_NoMemory();
            goto done;
        }
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t s = 0; s < ns && distinct; s++) {
            const int64_t a = o[s], b = o[s + 1];
            uint64_t seen = 0;
            for (int64_t r = a; r < b; r++) {
                const uint64_t k = (uint64_t)c[r], bit = 1ULL << (k & 63);
                seen |= bits[k >> 6] & bit;
                bits[k >> 6] |= bit;
            }
            for (int64_t r = a; r < b; r++) bits[(uint64_t)c[r] >> 6] = 0;
            distinct = !seen;
        }
        Py_END_ALLOW_THREADS
        free(bits);
        result = PyBool_FromLong(distinct);
        goto done;
    }
    if (idt_alloc(&seen_codes, (size_t)most, QUERY_TABLE_LEAST) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t s = 0; s < ns && distinct; s++) {
        const int64_t a = o[s], b = o[s + 1];
        if (b - a < 2) continue;
        idt_reset(&seen_codes, (size_t)(b - a), QUERY_TABLE_LEAST);
        for (int64_t r = a; r < b; r++) {
            idslot_t *slot = idt_place(&seen_codes, c[r]);
            if (slot->value != IDT_EMPTY) { /* met before in this segment */
                distinct = 0;
                break;
            }
            slot->key = c[r];
            slot->value = 0;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(distinct);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "segments_distinct: offsets out of range");
done:
    idt_free(&seen_codes);
    PyBuffer_Release(&vc);
    PyBuffer_Release(&vo);
    return result;
}

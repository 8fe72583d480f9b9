/*
 * rankgate._native._kernels: the two inner loops that numpy cannot express without many full-size temporaries.
 *
 *   join_grades      the grade of every ranked row, one query at a time (a tiny per-query hash of
 *                    its judgements, which stays in L1 cache), NaN for rows without a judgement;
 *   rank_metrics     hit, recall, precision, mrr, ndcg and map of every query in one pass over its
 *                    ranked ids, without the grade of every row;
 *   rank_permutation the ranking rule for a run that is not in order: rows grouped by query, then
 *                    score descending, id descending (byte-wise), input order;
 *   fixed_width_numbers  ids such as d000123 (one width, shared prefix, digits) as integers;
 *   bootstrap_sums   percentile-bootstrap resample sums of several columns at once: query indices
 *                    from an SFC64 stream (below) become per-query counts, and each column is summed
 *                    in query order.
 *
 * Both work on caller-allocated buffers (buffer protocol; no numpy C API, so nothing beyond a C
 * compiler is needed to build) and release the GIL while they run. Python fallbacks with the same
 * results live in rankgate.scoring.engine and rankgate.stats.bootstrap (see rankgate/_accel.py); the tests compare them.
 *
 * Floating point: compiled with -ffp-contract=off (no fused multiply-add), so every product and sum
 * is one IEEE operation in a fixed order and the results do not depend on the machine.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

static int get_buffer(PyObject *obj, Py_buffer *view, const char *name, Py_ssize_t itemsize, int writable) {
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

/* ---------------------------------------------------------------------------------------------- */
/* join_grades(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, out) -> matched */

static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* A per-query table (join_grades, rank_metrics, segments_distinct): the probe mask for `entries` keys
 * (at least 8 slots, at most half full), and the next stamp generation, a slot being in use when its
 * stamp is the query's (the stamps are cleared once every 2^32 queries). */
static inline size_t table_mask(int64_t entries) {
    size_t mask = 8;
    while (mask < (size_t)entries * 2) mask <<= 1;
    return mask - 1;
}

static inline uint32_t next_stamp(uint32_t gen, uint32_t *stamp, size_t cap) {
    if (++gen == 0) {
        memset(stamp, 0, cap * sizeof(uint32_t));
        gen = 1;
    }
    return gen;
}

static PyObject *join_grades(PyObject *self, PyObject *args) {
    enum { ROFF, RCODE, JOFF, JCODE, JGRADE, OUT, NBUF };
    static const char *names[NBUF] = {"row_offsets", "row_codes", "judged_offsets", "judged_codes", "judged_grades", "out"};
    PyObject *objs[NBUF];
    Py_buffer v[NBUF];
    int got = 0;
    PyObject *result = NULL;
    int64_t *keys = NULL, *vals = NULL;
    uint32_t *stamp = NULL;
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
    size_t cap = 8;
    while (cap < (size_t)most * 2) cap <<= 1;
    keys = (int64_t *)malloc(cap * sizeof(int64_t));
    vals = (int64_t *)malloc(cap * sizeof(int64_t));
    stamp = (uint32_t *)calloc(cap, sizeof(uint32_t));
    if (!keys || !vals || !stamp) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t matched = 0;
    const double nan = NAN;
    Py_BEGIN_ALLOW_THREADS
    uint32_t gen = 0;
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
        const size_t mask = table_mask(b - a);
        gen = next_stamp(gen, stamp, cap);
        for (int64_t j = a; j < b; j++) {
            const int64_t c = jc[j];
            if (c < 0) continue; /* a judged id that never occurs in the run */
            size_t h = (size_t)mix64((uint64_t)c) & mask;
            while (stamp[h] == gen && keys[h] != c) h = (h + 1) & mask;
            stamp[h] = gen;
            keys[h] = c;
            vals[h] = jg[j];
        }
        for (int64_t r = r0; r < r1; r++) {
            const int64_t c = rc[r];
            size_t h = (size_t)mix64((uint64_t)c) & mask;
            double x = nan;
            while (stamp[h] == gen) {
                if (keys[h] == c) {
                    x = (double)vals[h];
                    matched++;
                    break;
                }
                h = (h + 1) & mask;
            }
            g[r] = x;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(matched);
done:
    free(keys);
    free(vals);
    free(stamp);
    while (got > 0) PyBuffer_Release(&v[--got]);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* Resampling draws: SFC64 (the generator numpy ships as numpy.random.SFC64, same state layout
 * [a, b, c, counter]); each 64-bit output gives two 32-bit values, low half first; a value x maps to
 * the query index (x * n) >> 32, rejected (and skipped) when (x * n) mod 2^32 < 2^32 mod n, which
 * makes every index exactly equally likely (Lemire's method). rankgate.stats.bootstrap reproduces this stream
 * with numpy's own SFC64 when the kernels are not compiled. */

static inline uint64_t rotl64(uint64_t x, unsigned r) { return (x << r) | (x >> ((64 - r) & 63)); }

typedef struct {
    uint64_t s[4];
    uint32_t pending; /* the high half of the last word, not used yet */
    int has_pending;
    uint32_t n, threshold;
} draws_t;

/* Run `f` (which reads idx_) for each of the next k indices of the stream. The loop keeps the state in
 * locals (Python builds extensions with -fno-strict-aliasing, so a store through any pointer would
 * otherwise force the state back to memory) and takes one 64-bit word per turn, both halves; a half
 * left over at the end waits in d->pending for the next call. */
/* One 32-bit half as an index (Lemire: the high word of half * n, unless the low word falls under the
 * rejection threshold), counted in i_. Used inside FOR_EACH_DRAW only. */
#define DRAW_ACCEPT_(product, f)                                                          \
    do {                                                                                   \
        const uint64_t m_ = (product);                                                     \
        if ((uint32_t)m_ >= thr_) {                                                        \
            idx_ = (uint32_t)(m_ >> 32);                                                   \
            f;                                                                             \
            i_++;                                                                          \
        }                                                                                  \
    } while (0)

#define FOR_EACH_DRAW(d, k, f)                                                            \
    do {                                                                                   \
        uint64_t s0_ = (d)->s[0], s1_ = (d)->s[1], s2_ = (d)->s[2], s3_ = (d)->s[3];       \
        const uint64_t n_ = (d)->n;                                                        \
        const uint32_t thr_ = (d)->threshold;                                              \
        const Py_ssize_t k_ = (k);                                                         \
        Py_ssize_t i_ = 0;                                                                 \
        uint32_t idx_;                                                                     \
        if ((d)->has_pending && k_ > 0) {                                                  \
            (d)->has_pending = 0;                                                          \
            DRAW_ACCEPT_((uint64_t)(d)->pending * n_, f);                                  \
        }                                                                                  \
        while (i_ < k_) {                                                                  \
            const uint64_t w_ = s0_ + s1_ + s3_++;                                         \
            s0_ = s1_ ^ (s1_ >> 11);                                                       \
            s1_ = s2_ + (s2_ << 3);                                                        \
            s2_ = rotl64(s2_, 24) + w_;                                                    \
            const uint64_t lo_ = (uint64_t)(uint32_t)w_ * n_;                              \
            if ((uint32_t)lo_ >= thr_) {                                                   \
                idx_ = (uint32_t)(lo_ >> 32);                                              \
                f;                                                                         \
                if (++i_ == k_) {                                                          \
                    (d)->pending = (uint32_t)(w_ >> 32);                                   \
                    (d)->has_pending = 1;                                                  \
                    break;                                                                 \
                }                                                                          \
            }                                                                              \
            DRAW_ACCEPT_((w_ >> 32) * n_, f);                                              \
        }                                                                                  \
        (d)->s[0] = s0_, (d)->s[1] = s1_, (d)->s[2] = s2_, (d)->s[3] = s3_;                \
    } while (0)

static int read_state(PyObject *o_state, draws_t *d, Py_ssize_t n) {
    Py_buffer st;
    if (get_buffer(o_state, &st, "state", 8, 0) < 0) return -1;
    if (st.len != 32) {
        PyErr_SetString(PyExc_ValueError, "state: expected 4 uint64 words (SFC64 a, b, c, counter)");
        PyBuffer_Release(&st);
        return -1;
    }
    memcpy(d->s, st.buf, 32);
    PyBuffer_Release(&st);
    if (n < 1 || (uint64_t)n > 0xFFFFFFFFULL) {
        PyErr_SetString(PyExc_ValueError, "need 1 <= n < 2**32");
        return -1;
    }
    d->has_pending = 0;
    d->pending = 0;
    d->n = (uint32_t)n;
    d->threshold = (uint32_t)((0x100000000ULL - (uint64_t)n) % (uint64_t)n);
    return 0;
}

/* draw_indices(state, n, out_uint32): the first len(out) indices of the stream (for tests). */
static PyObject *draw_indices(PyObject *self, PyObject *args) {
    PyObject *o_state, *o_out;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "OnO", &o_state, &n, &o_out)) return NULL;
    draws_t d;
    if (read_state(o_state, &d, n) < 0) return NULL;
    Py_buffer out;
    if (get_buffer(o_out, &out, "out", 4, 1) < 0) return NULL;
    uint32_t *o = (uint32_t *)out.buf;
    Py_ssize_t pos = 0;
    FOR_EACH_DRAW(&d, out.len / 4, o[pos++] = idx_);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;
}

/* Sums of up to four columns (col .. col+w-1) of row-major values weighted by two resamples' counts
 * (c1 may be NULL), in row order: each of the up to eight sums is its own chain of additions in query
 * order, so the result does not depend on how resamples are paired. The accumulators are locals
 * (registers), and one pass over the values serves both resamples. */
#define SUMS_BODY(W)                                                                  \
    for (Py_ssize_t i = 0; i < n; i++, p += m) {                                      \
        const double x0 = (double)c0[i], x1 = c1 ? (double)c1[i] : 0.0;               \
        a0[0] += x0 * p[0];                                                            \
        b0[0] += x1 * p[0];                                                            \
        if (W > 1) { a0[1] += x0 * p[1]; b0[1] += x1 * p[1]; }                        \
        if (W > 2) { a0[2] += x0 * p[2]; b0[2] += x1 * p[2]; }                        \
        if (W > 3) { a0[3] += x0 * p[3]; b0[3] += x1 * p[3]; }                        \
    }

static void weighted_sums(const uint32_t *c0, const uint32_t *c1, const double *v, Py_ssize_t n, Py_ssize_t m,
                          Py_ssize_t col, int w, double *out0, double *out1) {
    double a0[4] = {0.0, 0.0, 0.0, 0.0}, b0[4] = {0.0, 0.0, 0.0, 0.0};
    const double *p = v + col;
    switch (w) {
        case 1: SUMS_BODY(1) break;
        case 2: SUMS_BODY(2) break;
        case 3: SUMS_BODY(3) break;
        default: SUMS_BODY(4)
    }
    for (int j = 0; j < w; j++) {
        out0[j] = a0[j];
        if (out1) out1[j] = b0[j];
    }
}

/* Sums of four columns (col .. col+3) weighted by the counts (as doubles) of up to four resamples (c[0..nr-1]), in
 * row order, added to out[r][0..3] (the sums of the rows before these, or zeros): the same chains of
 * additions as weighted_sums, one vector lane per column. Four columns
 * of four resamples are sixteen sums from one pass over the values, with four independent vector
 * accumulators to hide the adder's latency. Lane-wise vector multiplies and adds are the same IEEE
 * operations as the scalar ones (no fused multiply-add: -ffp-contract=off, and the AVX2 variant has no
 * FMA), so every result is bit for bit that of weighted_sums. On x86-64 Linux with GCC the function
 * is also built for AVX2 (and weighted_sums8 for AVX-512), and the module picks one variant at import
 * (pick_variant below). */
#if defined(__GNUC__)
#define RG_VECTORS 1
#define ROW_TILE 1024 /* rows per tile: a group's counts (32 resamples) and 8 columns of values stay in L2 while the other column groups of a wide bootstrap (a report's 49) go through */
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));
#if defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define RG_DISPATCH 1 /* variants for AVX2 and AVX-512 beside the plain one, chosen at run time */
#define RG_AVX2 __attribute__((target("avx2")))
#define RG_AVX512 __attribute__((target("avx512f")))
#endif

/* The body of weighted_sums4 / weighted_sums8 (vector type VT): columns col .. col+width-1 of rows
 * `stride` apart, four resamples' chains, each going on from where the previous row tile left it in
 * out. A vector times a scalar multiplies every lane by it: the same IEEE product as the scalar one. */
#define WEIGHTED_SUMS(NAME, VT, TARGET)                                                                  \
    TARGET static void NAME(const double *const *c, int nr, const double *v, Py_ssize_t n, Py_ssize_t stride, \
                            Py_ssize_t col, double *const *out) {                                        \
        VT a0, a1, a2, a3;                                                                               \
        memcpy(&a0, out[0], sizeof a0);                                                                  \
        memcpy(&a1, out[nr > 1 ? 1 : 0], sizeof a1);                                                     \
        memcpy(&a2, out[nr > 2 ? 2 : 0], sizeof a2);                                                     \
        memcpy(&a3, out[nr > 3 ? 3 : 0], sizeof a3);                                                     \
        const double *p = v + col;                                                                       \
        const double *c0 = c[0], *c1 = nr > 1 ? c[1] : c[0], *c2 = nr > 2 ? c[2] : c[0],                 \
                     *c3 = nr > 3 ? c[3] : c[0];                                                         \
        for (Py_ssize_t i = 0; i < n; i++, p += stride) {                                                \
            VT x;                                                                                        \
            memcpy(&x, p, sizeof x);                                                                     \
            a0 += x * c0[i];                                                                             \
            a1 += x * c1[i];                                                                             \
            a2 += x * c2[i];                                                                             \
            a3 += x * c3[i];                                                                             \
        }                                                                                                \
        const VT acc[4] = {a0, a1, a2, a3};                                                              \
        for (int r = 0; r < nr; r++) memcpy(out[r], &acc[r], sizeof acc[r]);                             \
    }

/* The counts of a row tile as doubles (exact). */
#define BYTES_TO_DOUBLES(NAME, TARGET)                                                                   \
    TARGET static void NAME(const uint8_t *src, double *dst, Py_ssize_t n) {                            \
        for (Py_ssize_t i = 0; i < n; i++) dst[i] = (double)src[i];                                     \
    }

typedef void (*weighted_sums_fn)(const double *const *, int, const double *, Py_ssize_t, Py_ssize_t, Py_ssize_t,
                                 double *const *);
typedef void (*bytes_to_doubles_fn)(const uint8_t *, double *, Py_ssize_t);

/* weighted_sums8 is weighted_sums4 eight columns wide (a block's own rows, or a tile copied into rows
 * of eight with the columns past the last ignored), into out[r][0..7]. Where the CPU has 512-bit
 * vectors (the AVX-512 variant) a row's four chains take four vector adds instead of eight, and the
 * adds' latency, not their number, bounds weighted_sums4. */
WEIGHTED_SUMS(weighted_sums4_plain, v4d, )
WEIGHTED_SUMS(weighted_sums8_plain, v8d, )
BYTES_TO_DOUBLES(bytes_to_doubles_plain, )
#ifdef RG_DISPATCH
WEIGHTED_SUMS(weighted_sums4_avx2, v4d, RG_AVX2)
WEIGHTED_SUMS(weighted_sums8_avx2, v8d, RG_AVX2)
BYTES_TO_DOUBLES(bytes_to_doubles_avx2, RG_AVX2)
WEIGHTED_SUMS(weighted_sums8_avx512, v8d, RG_AVX512)
BYTES_TO_DOUBLES(bytes_to_doubles_avx512, RG_AVX512)
#endif

/* The variants in use: the plain ones until pick_variant chooses (at import, and set_baseline). Every
 * variant computes the same IEEE operations in the same order, so they give the same bits. */
static weighted_sums_fn weighted_sums4 = weighted_sums4_plain;
static weighted_sums_fn weighted_sums8 = weighted_sums8_plain;
static bytes_to_doubles_fn bytes_to_doubles = bytes_to_doubles_plain;
#endif

static const char *variant_name = "plain"; /* "avx512f", "avx2" or "plain": what bootstrap_sums_blocks runs */

/* The widest variants the CPU runs, or the plain ones when `baseline` (RANKGATE_NATIVE=baseline). */
static void pick_variant(int baseline) {
    variant_name = "plain";
#ifdef RG_VECTORS
    weighted_sums4 = weighted_sums4_plain;
    weighted_sums8 = weighted_sums8_plain;
    bytes_to_doubles = bytes_to_doubles_plain;
#ifdef RG_DISPATCH
    if (baseline) return;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        weighted_sums4 = weighted_sums4_avx2;
        weighted_sums8 = weighted_sums8_avx512;
        bytes_to_doubles = bytes_to_doubles_avx512;
        variant_name = "avx512f";
    } else if (__builtin_cpu_supports("avx2")) {
        weighted_sums4 = weighted_sums4_avx2;
        weighted_sums8 = weighted_sums8_avx2;
        bytes_to_doubles = bytes_to_doubles_avx2;
        variant_name = "avx2";
    }
#endif
#endif
    (void)baseline;
}

/* set_baseline(on) -> whether it was on: the plain variants only (on), or the widest the CPU runs. */
static int baseline_on = 0;

static PyObject *set_baseline(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    const int before = baseline_on;
    baseline_on = on;
    pick_variant(on);
    return PyBool_FromLong(before);
}

static PyObject *variant(PyObject *self, PyObject *noargs) {
    return PyUnicode_FromString(variant_name);
}


/* bootstrap_sums(state, values, m, n_resamples, out): for each resample, n indices from the stream
 * become per-query counts; out[r, j] = sum over queries i, in order, of counts[i] * values[i, j]
 * (adding 0 * x for undrawn queries changes no sum, and no branch means no mispredictions). */
static PyObject *bootstrap_sums(PyObject *self, PyObject *args) {
    PyObject *o_state, *o_values, *o_out;
    Py_ssize_t m, nres;
    if (!PyArg_ParseTuple(args, "OOnnO", &o_state, &o_values, &m, &nres, &o_out)) return NULL;
    Py_buffer values, out;
    if (get_buffer(o_values, &values, "values", 8, 0) < 0) return NULL;
    if (get_buffer(o_out, &out, "out", 8, 1) < 0) {
        PyBuffer_Release(&values);
        return NULL;
    }
    draws_t d;
    uint32_t *counts = NULL;
    if (m < 1 || nres < 0 || values.len / 8 % m != 0 || out.len / 8 != nres * m) {
        PyErr_SetString(PyExc_ValueError, "bootstrap_sums: inconsistent shapes");
        goto fail;
    }
    const Py_ssize_t n = values.len / 8 / m;
    if (read_state(o_state, &d, n) < 0) goto fail;
    counts = (uint32_t *)malloc((size_t)n * 2 * sizeof(uint32_t)); /* two resamples at a time */
    if (!counts) {
        PyErr_NoMemory();
        goto fail;
    }
    const double *v = (const double *)values.buf;
    double *o = (double *)out.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < nres; r += 2) {
        const int two = r + 1 < nres;
        uint32_t *c0 = counts, *c1 = two ? counts + n : NULL;
        memset(counts, 0, (size_t)n * (two ? 2 : 1) * sizeof(uint32_t));
        FOR_EACH_DRAW(&d, n, c0[idx_]++); /* resample r's draws, then resample r + 1's */
        if (two) FOR_EACH_DRAW(&d, n, c1[idx_]++);
        for (Py_ssize_t j = 0; j < m; j += 4) {
            weighted_sums(c0, c1, v, n, m, j, (int)(m - j < 4 ? m - j : 4), o + r * m + j, two ? o + (r + 1) * m + j : NULL);
        }
    }
    Py_END_ALLOW_THREADS
    free(counts);
    PyBuffer_Release(&values);
    PyBuffer_Release(&out);
    Py_RETURN_NONE;

fail:
    free(counts);
    PyBuffer_Release(&values);
    PyBuffer_Release(&out);
    return NULL;
}

/* The sum of n bytes. */
static uint64_t byte_total(const uint8_t *b, Py_ssize_t n) {
    uint64_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) total += b[i];
    return total;
}

/* The largest count a byte holds before bootstrap_sums_blocks draws a group again in 32-bit counts:
 * 255, lowered by tests (narrow_limit(v)) to take the path that draws again. */
static int narrow_limit = 255;

static PyObject *set_narrow_limit(PyObject *self, PyObject *args) {
    int v;
    if (!PyArg_ParseTuple(args, "i", &v)) return NULL;
    if (v < 0 || v > 255) {
        PyErr_SetString(PyExc_ValueError, "narrow_limit: 0 to 255");
        return NULL;
    }
    const int before = narrow_limit;
    narrow_limit = v;
    return PyLong_FromLong(before);
}

/* Columns col .. col+width-1 of a block, summed `lanes` (8 or 4) at a time; acc_at: where its sums
 * start in the accumulators (times the group's resamples). */
typedef struct {
    Py_ssize_t block, col, width, lanes, acc_at;
} colgroup_t;

/* bootstrap_sums_blocks(state, stacks, n_resamples, outs, group): bootstrap_sums over column blocks
 * that share one stream. stacks[b] holds n rows of w_b values (row-major), outs[b] n_resamples rows
 * of w_b sums. The draws of `group` resamples (even) are counted once into a buffer, then every block
 * takes its sums from those counts: a block stays small enough for the cache while the resamples
 * read it, yet the indices are drawn once per resample instead of once per block. Each sum is the
 * same chain of additions in query order as bootstrap_sums computes, so the results are identical. */
static PyObject *bootstrap_sums_blocks(PyObject *self, PyObject *args) {
    PyObject *o_state, *o_stacks, *o_outs;
    Py_ssize_t nres, group;
    if (!PyArg_ParseTuple(args, "OOnOn", &o_state, &o_stacks, &nres, &o_outs, &group)) return NULL;
    PyObject *stacks = PySequence_Fast(o_stacks, "stacks: expected a sequence");
    if (!stacks) return NULL;
    PyObject *outs = PySequence_Fast(o_outs, "outs: expected a sequence");
    if (!outs) {
        Py_DECREF(stacks);
        return NULL;
    }
    const Py_ssize_t nb = PySequence_Fast_GET_SIZE(stacks);
    Py_buffer *views = NULL;
    Py_ssize_t *widths = NULL;
    uint32_t *counts = NULL;
    uint8_t *narrow = NULL; /* the vector path's counts, a byte each (see below) */
    int no_memory = 0;
    double *tile = NULL; /* the vector path's counts of one row tile, as doubles */
    double *padded = NULL, *rest = NULL;
    colgroup_t *cols = NULL; /* the vector path's column groups */
    Py_ssize_t got = 0, n = -1;
    PyObject *result = NULL;
    draws_t d;
    if (nb < 1 || PySequence_Fast_GET_SIZE(outs) != nb || nres < 0 || group < 2 || group % 2) {
        PyErr_SetString(PyExc_ValueError, "bootstrap_sums_blocks: need as many outs as stacks (>= 1), an even group");
        goto done;
    }
    views = (Py_buffer *)calloc((size_t)nb * 2, sizeof(Py_buffer));
    widths = (Py_ssize_t *)calloc((size_t)nb, sizeof(Py_ssize_t));
    if (!views || !widths) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t b = 0; b < nb; b++) {
        if (get_buffer(PySequence_Fast_GET_ITEM(stacks, b), &views[got], "stacks", 8, 0) < 0) goto done;
        got++;
        if (get_buffer(PySequence_Fast_GET_ITEM(outs, b), &views[got], "outs", 8, 1) < 0) goto done;
        got++;
        const Py_buffer *sv = &views[got - 2], *ov = &views[got - 1];
        const Py_ssize_t w = nres > 0 ? ov->len / 8 / nres : 0;
        if (nres < 1 || w < 1 || ov->len / 8 != nres * w || sv->len / 8 % w != 0 ||
            (n >= 0 && sv->len / 8 / w != n)) {
            PyErr_SetString(PyExc_ValueError, "bootstrap_sums_blocks: inconsistent shapes");
            goto done;
        }
        n = sv->len / 8 / w;
        widths[b] = w;
    }
    if (read_state(o_state, &d, n) < 0) goto done;
    if (group > nres + (nres & 1)) group = nres + (nres & 1);
#ifdef RG_VECTORS
    narrow = (uint8_t *)malloc((size_t)n * (size_t)group);
    /* Every block's columns in groups, each summed by one vector pass per tile: eight at a time
     * while five or more are left, then four; a group of eight read in place from the block's rows
     * when it has eight, else (5-7, or 1-3 of four) from a copy of the tile in rows of its width with
     * the columns past it left over. A group's sums are kept in acc until the resample group ends. */
    tile = (double *)malloc((size_t)ROW_TILE * (size_t)group * sizeof(double));
    Py_ssize_t ngroups = 0, lanes_all = 0;
    for (Py_ssize_t b = 0; b < nb; b++) ngroups += (widths[b] + 3) / 4; /* (at most) */
    cols = (colgroup_t *)calloc((size_t)ngroups, sizeof(colgroup_t));
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    ngroups = 0;
    for (Py_ssize_t b = 0; b < nb; b++) {
        for (Py_ssize_t j = 0; j < widths[b];) {
            const Py_ssize_t left = widths[b] - j;
            colgroup_t *cg = &cols[ngroups++];
            cg->block = b;
            cg->col = j;
            cg->lanes = left >= 5 ? 8 : 4;
            cg->width = left < cg->lanes ? left : cg->lanes;
            cg->acc_at = lanes_all;
            lanes_all += cg->lanes;
            j += cg->width;
        }
    }
    padded = (double *)calloc((size_t)ROW_TILE * 8, sizeof(double));
    rest = (double *)calloc((size_t)lanes_all * (size_t)group, sizeof(double));
    if (!tile || !padded || !rest) {
        PyErr_NoMemory();
        goto done;
    }
    if (!narrow) {
        PyErr_NoMemory();
        goto done;
    }
#else
    counts = (uint32_t *)malloc((size_t)n * (size_t)group * sizeof(uint32_t));
    if (!counts) {
        PyErr_NoMemory();
        goto done;
    }
#endif
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r0 = 0; r0 < nres; r0 += group) {
        const Py_ssize_t g = nres - r0 < group ? nres - r0 : group;
        int wide = 1;
#ifdef RG_VECTORS
        /* A query's count in a resample is counted in a byte: a million queries' counts then fit in
         * the core's cache, which the random increments need. A count past 255 (256 of n draws on one
         * query) wraps, and then the resample's bytes add up to less than its n draws (256 less per
         * wrap); the group is then drawn again from the same point of the stream into 32-bit counts,
         * so the sums are the same either way. (Checking each increment instead costs a quarter of
         * the draws' time.) */
        const draws_t start = d;
        int wrapped = 0;
        memset(narrow, 0, (size_t)n * (size_t)g);
        for (Py_ssize_t k = 0; k < g; k++) {
            uint8_t *c = narrow + k * n;
            FOR_EACH_DRAW(&d, n, c[idx_]++); /* resample r0 + k's draws, in order */
        }
        for (Py_ssize_t k = 0; k < g && !wrapped; k++) wrapped = byte_total(narrow + k * n, n) != (uint64_t)n;
        if (narrow_limit < 255) { /* (tests: a lower limit takes the path that draws again) */
            for (Py_ssize_t i = 0; i < n * g && !wrapped; i++) wrapped = narrow[i] > narrow_limit;
        }
        wide = wrapped;
        if (wrapped) {
            d = start;
            if (!counts && !(counts = (uint32_t *)malloc((size_t)n * (size_t)group * sizeof(uint32_t)))) {
                no_memory = 1;
                break;
            }
        }
#endif
        if (wide) {
            memset(counts, 0, (size_t)n * (size_t)g * sizeof(uint32_t));
            for (Py_ssize_t k = 0; k < g; k++) {
                uint32_t *c = counts + k * n;
                FOR_EACH_DRAW(&d, n, c[idx_]++); /* resample r0 + k's draws, in resample order */
            }
        }
#ifdef RG_VECTORS
        /* The vector path over rows in tiles: a tile's counts (as doubles, converted once for all
         * blocks) and values stay in the core's cache while every resample of the group reads them;
         * each sum's chain goes on across tiles unchanged. */
        memset(rest, 0, (size_t)lanes_all * (size_t)g * sizeof(double));
        for (Py_ssize_t t0 = 0; t0 < n; t0 += ROW_TILE) {
            const Py_ssize_t rows = n - t0 < ROW_TILE ? n - t0 : ROW_TILE;
            for (Py_ssize_t k = 0; k < g; k++) {
                double *dc = tile + k * ROW_TILE;
                if (wide) {
                    const uint32_t *src = counts + k * n + t0;
                    for (Py_ssize_t i = 0; i < rows; i++) dc[i] = (double)src[i];
                } else {
                    bytes_to_doubles(narrow + k * n + t0, dc, rows);
                }
            }
            for (Py_ssize_t q = 0; q < ngroups; q++) {
                const colgroup_t *cg = &cols[q];
                const Py_ssize_t m = widths[cg->block];
                const double *v = (const double *)views[2 * cg->block].buf + t0 * m;
                Py_ssize_t stride = m, col = cg->col;
                if (cg->width < cg->lanes) { /* a copy in rows of `lanes`, the columns past width left over */
                    for (Py_ssize_t i = 0; i < rows; i++) { /* (a few values a row: no memcpy call) */
                        const double *src = v + i * m + cg->col;
                        double *dst = padded + i * cg->lanes;
                        for (Py_ssize_t j = 0; j < cg->width; j++) dst[j] = src[j];
                    }
                    v = padded;
                    stride = cg->lanes;
                    col = 0;
                }
                double *acc = rest + cg->acc_at * g;
                for (Py_ssize_t k = 0; k < g; k += 4) {
                    const int nr = (int)(g - k < 4 ? g - k : 4);
                    const double *c[4];
                    double *dst[4];
                    for (int r = 0; r < nr; r++) {
                        c[r] = tile + (k + r) * ROW_TILE;
                        dst[r] = acc + (k + r) * cg->lanes;
                    }
                    if (cg->lanes == 8) {
                        weighted_sums8(c, nr, v, rows, stride, col, dst);
                    } else {
                        weighted_sums4(c, nr, v, rows, stride, col, dst);
                    }
                }
            }
        }
        for (Py_ssize_t q = 0; q < ngroups; q++) {
            const colgroup_t *cg = &cols[q];
            const Py_ssize_t m = widths[cg->block];
            double *o = (double *)views[2 * cg->block + 1].buf;
            const double *acc = rest + cg->acc_at * g;
            for (Py_ssize_t k = 0; k < g; k++)
                memcpy(o + (r0 + k) * m + cg->col, acc + k * cg->lanes, (size_t)cg->width * sizeof(double));
        }
#endif
        for (Py_ssize_t b = 0; b < nb; b++) { /* the columns left: the scalar path, two resamples at a time */
            const double *v = (const double *)views[2 * b].buf;
            double *o = (double *)views[2 * b + 1].buf;
            const Py_ssize_t m = widths[b];
#ifdef RG_VECTORS
            const Py_ssize_t j0 = m; /* (every column went through the vector path above) */
#else
            const Py_ssize_t j0 = 0;
#endif
            for (Py_ssize_t k = 0; k < g && j0 < m; k += 2) {
                const Py_ssize_t r = r0 + k;
                const int two = k + 1 < g;
                const uint32_t *c0 = counts + k * n, *c1 = two ? counts + (k + 1) * n : NULL;
                for (Py_ssize_t j = j0; j < m; j += 4) {
                    weighted_sums(c0, c1, v, n, m, j, (int)(m - j < 4 ? m - j : 4), o + r * m + j,
                                  two ? o + (r + 1) * m + j : NULL);
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (no_memory) {
        PyErr_NoMemory();
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    free(counts);
    free(narrow);
    free(tile);
    free(padded);
    free(rest);
    free(cols);
    while (got > 0) PyBuffer_Release(&views[--got]);
    free(views);
    free(widths);
    Py_DECREF(stacks);
    Py_DECREF(outs);
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

static PyObject *fixed_width_numbers(PyObject *self, PyObject *args) {
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

static PyObject *rank_permutation(PyObject *self, PyObject *args) {
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
/* gold remap (rankgate.goldset.remap): the tokens and shingles of ASCII texts, and the (old, new)
 * text pairs that share rare shingles.
 *
 * A text's tokens are its maximal runs of ASCII letters and digits, lower-cased. For a text whose
 * bytes are all ASCII that is exactly what remap's arrow path gives (utf8_lower, then a split at
 * [^\p{L}\p{N}]+, empty strings dropped: the only letters and digits below 0x80 are A-Z, a-z and
 * 0-9, and lower-casing ASCII changes only A-Z). A text holding any byte >= 0x80 is not read here:
 * its count is -1 and the caller tokenises it with arrow, whose Unicode rules stay the only ones.
 * Texts come as an arrow string array's int32 offsets (n + 1 of them; they need not start at 0) and
 * its data buffer; a null text must have been filled with "" by the caller. */

static unsigned char tok_class[256]; /* 0: separator; 1: a byte >= 0x80; else the byte lower-cased */

static void init_tok_class(void) {
    for (int c = 0; c < 256; c++) {
        if (c >= 0x80) tok_class[c] = 1;
        else if (c >= 'A' && c <= 'Z') tok_class[c] = (unsigned char)(c + 32);
        else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) tok_class[c] = (unsigned char)c;
        else tok_class[c] = 0;
    }
}

/* The texts' offsets and data; sets *n and *longest (bytes of the longest text). */
static int get_texts(PyObject *o_off, PyObject *o_data, Py_buffer *off, Py_buffer *data, Py_ssize_t *n,
                     Py_ssize_t *longest) {
    if (get_buffer(o_off, off, "offsets", 4, 0) < 0) return -1;
    if (get_buffer(o_data, data, "data", 1, 0) < 0) {
        PyBuffer_Release(off);
        return -1;
    }
    const int32_t *o = (const int32_t *)off->buf;
    *n = off->len / 4 - 1;
    *longest = 0;
    int ok = *n >= 0 && o[0] >= 0 && (Py_ssize_t)o[*n] <= data->len;
    for (Py_ssize_t i = 0; ok && i < *n; i++) {
        if (o[i + 1] < o[i]) ok = 0;
        else if (o[i + 1] - o[i] > *longest) *longest = o[i + 1] - o[i];
    }
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "texts: offsets out of range");
        PyBuffer_Release(off);
        PyBuffer_Release(data);
        return -1;
    }
    return 0;
}

/* ascii_tokens(offsets, data, counts_out) -> (token_offsets, token_data): the tokens of every ASCII
 * text, lower-cased, as the buffers of an arrow string array (int32 offsets, then bytes), in text
 * order; counts_out (int64, one per text) gets each text's number of tokens, -1 for a text that is
 * not ASCII (it adds no tokens). */
static PyObject *ascii_tokens(PyObject *self, PyObject *args) {
    PyObject *o_off, *o_data, *o_counts;
    if (!PyArg_ParseTuple(args, "OOO", &o_off, &o_data, &o_counts)) return NULL;
    Py_buffer off, data, counts;
    Py_ssize_t n, longest;
    if (get_texts(o_off, o_data, &off, &data, &n, &longest) < 0) return NULL;
    PyObject *toff = NULL, *tdata = NULL, *result = NULL;
    if (get_buffer(o_counts, &counts, "counts_out", 8, 1) < 0) goto release;
    if (counts.len / 8 != n) {
        PyErr_SetString(PyExc_ValueError, "ascii_tokens: counts_out must have one item per text");
        goto done;
    }
    const int32_t *o = (const int32_t *)off.buf;
    const unsigned char *d = (const unsigned char *)data.buf;
    int64_t *cnt = (int64_t *)counts.buf;
    const Py_ssize_t used = n ? (Py_ssize_t)o[n] - (Py_ssize_t)o[0] : 0;
    const Py_ssize_t most = used / 2 + n + 1; /* a token is at least one byte, then a separator or the end */
    toff = PyBytes_FromStringAndSize(NULL, (most + 1) * 4);
    tdata = PyBytes_FromStringAndSize(NULL, used);
    if (!toff || !tdata) goto done;
    int32_t *to = (int32_t *)PyBytes_AS_STRING(toff);
    unsigned char *td = (unsigned char *)PyBytes_AS_STRING(tdata);
    Py_ssize_t nt = 0;
    int32_t pos = 0;
    to[0] = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const Py_ssize_t nt0 = nt;
        const int32_t pos0 = pos;
        int in = 0, bad = 0;
        for (int32_t k = o[i]; k < o[i + 1]; k++) {
            const unsigned char c = tok_class[d[k]];
            if (c > 1) {
                td[pos++] = c;
                in = 1;
            } else if (c == 1) {
                bad = 1;
                break;
            } else if (in) {
                to[++nt] = pos;
                in = 0;
            }
        }
        if (bad) {
            nt = nt0;
            pos = pos0;
            cnt[i] = -1;
            continue;
        }
        if (in) to[++nt] = pos;
        cnt[i] = nt - nt0;
    }
    Py_END_ALLOW_THREADS
    if (_PyBytes_Resize(&toff, (nt + 1) * 4) < 0 || _PyBytes_Resize(&tdata, pos) < 0) goto done;
    result = PyTuple_Pack(2, toff, tdata);
done:
    PyBuffer_Release(&counts);
release:
    Py_XDECREF(toff);
    Py_XDECREF(tdata);
    PyBuffer_Release(&off);
    PyBuffer_Release(&data);
    return result;
}

/* A growing int64 array (for outputs whose length is known only at the end). */
typedef struct {
    int64_t *v;
    size_t n, cap;
} i64vec_t;

static int i64vec_push(i64vec_t *a, int64_t x) {
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 1024;
        int64_t *v = (int64_t *)realloc(a->v, cap * sizeof(int64_t));
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static PyObject *i64vec_bytes(i64vec_t *a) {
    return PyBytes_FromStringAndSize(a->v ? (const char *)a->v : "", (Py_ssize_t)(a->n * sizeof(int64_t)));
}

/* A token's first 8 bytes as one word (zero-padded), and a hash of all its bytes. tok_word reads
 * only the token; tok_word8 the same from a buffer with 8 readable bytes past the token. */
static inline uint64_t tok_word(const unsigned char *p, int32_t len) {
    uint64_t w = 0;
    for (int32_t k = 0; k < len && k < 8; k++) w |= (uint64_t)p[k] << (8 * k);
    return w;
}

static inline uint64_t tok_word8(const unsigned char *p, int32_t len) {
    uint64_t w = 0;
    for (int k = 0; k < 8; k++) w |= (uint64_t)p[k] << (8 * k); /* one load on little- and big-endian */
    return len >= 8 ? w : w & ((1ULL << (8 * len)) - 1);
}

static inline uint64_t tok_hash_of(uint64_t first, const unsigned char *p, int32_t len, int padded) {
    uint64_t h = mix64(first ^ ((uint64_t)len * 0x9E3779B97F4A7C15ULL));
    for (int32_t k = 8; k < len; k += 8) h = mix64(h ^ (padded ? tok_word8(p + k, len - k) : tok_word(p + k, len - k)));
    return h;
}

/* a bit of the filter: the top bits of another multiplicative hash (the tables use mix64's low bits) */
#define FILTER_BIT(h, shift) ((size_t)(((h) * 0x9E3779B97F4A7C15ULL) >> (64 - (shift))))

typedef struct {
    uint64_t word; /* the token's first 8 bytes */
    int32_t len;
    int32_t id; /* -1: empty */
} vocslot_t;

typedef struct {
    int64_t key;
    int32_t at; /* -1: empty */
    int32_t df; /* finds so far (kept here: the slot is in cache when a find counts) */
} keyslot_t;

/* A large table, on huge pages where the system gives them on request: a random read then rarely
 * misses the TLB, and the table takes fewer page faults. Freed with free(). */
static void *table_alloc(size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)1 << 21;
    if (bytes >= huge) {
        void *p = NULL;
        if (posix_memalign(&p, huge, (bytes + huge - 1) & ~(huge - 1)) != 0) return NULL;
        madvise(p, (bytes + huge - 1) & ~(huge - 1), MADV_HUGEPAGE);
        return p;
    }
#endif
    return malloc(bytes ? bytes : 1);
}

enum { SCAN_BLOCK_BYTES = 16384, SCAN_BLOCK_TEXTS = 1024 };

/* shingle_scan(offsets, data, vocab_offsets, vocab_data, V, uniq, tokens_out, found_out, df) -> bytes
 *
 * Every shingle of every ASCII text, keyed as remap's _keys keys it: tokens are numbered by the
 * vocabulary (an arrow string array's offsets and data, distinct strings; a token outside it is
 * V - 2), a shingle of tokens a, b, c is (a * V + b) * V + c, and a text of one or two tokens has one
 * shingle padded with V - 1. The caller ensures V**3 fits an int64. uniq None: the bytes hold every
 * shingle's key, in text order. uniq (int64 keys, distinct): they hold, for every shingle found in
 * uniq, its position there, in text order, and df (int64, one per uniq key, or None) gets each
 * key's finds added (at most 2**31 - 1 of them per call). tokens_out: each text's number of tokens (-1: not ASCII, not read); found_out: how many
 * values each text added.
 *
 * Texts are read a block (~16 KB) at a time, in phases (tokens, their numbers, shingle keys and the
 * filter, table lookups), each phase requesting (prefetching) the table entries the next one reads:
 * the lookups are independent, so the memory waits overlap instead of adding up. */
static PyObject *shingle_scan(PyObject *self, PyObject *args) {
    PyObject *o_off, *o_data, *o_voff, *o_vdata, *o_uniq, *o_tokens, *o_found, *o_df;
    long long V;
    if (!PyArg_ParseTuple(args, "OOOOLOOOO", &o_off, &o_data, &o_voff, &o_vdata, &V, &o_uniq, &o_tokens, &o_found,
                          &o_df))
        return NULL;
    Py_buffer off, data, voff, vdata, uniq, tokens, found, df;
    Py_ssize_t n, longest, nv, vlongest;
    int have_uniq = o_uniq != Py_None, have_df = o_df != Py_None;
    int got = 0; /* views held beyond the texts: 1 vocab, 2 uniq, 3 tokens, 4 found, 5 df */
    PyObject *result = NULL;
    vocslot_t *vslots = NULL;
    keyslot_t *kslots = NULL;
    uint64_t *bits = NULL, *th = NULL, *sh = NULL;
    int64_t *ids = NULL, *keys = NULL, *tstart = NULL, *sstart = NULL;
    int32_t *tpos = NULL, *tlen = NULL;
    unsigned char *lower = NULL;
    PyObject *outb = NULL; /* the result, allocated for every shingle there can be, cut to size at the end */
    if (get_texts(o_off, o_data, &off, &data, &n, &longest) < 0) return NULL;
    if (get_texts(o_voff, o_vdata, &voff, &vdata, &nv, &vlongest) < 0) goto done;
    got = 1;
    if (have_uniq) {
        if (get_buffer(o_uniq, &uniq, "uniq", 8, 0) < 0) goto done;
    }
    got = 2;
    if (get_buffer(o_tokens, &tokens, "tokens_out", 8, 1) < 0) goto done;
    got = 3;
    if (get_buffer(o_found, &found, "found_out", 8, 1) < 0) goto done;
    got = 4;
    if (have_df) {
        if (get_buffer(o_df, &df, "df", 8, 1) < 0) goto done;
    }
    got = 5;
    const Py_ssize_t nu = have_uniq ? uniq.len / 8 : 0;
    if (tokens.len / 8 != n || found.len / 8 != n || (have_df && (!have_uniq || df.len / 8 != nu)) || V < nv + 2 ||
        V > 2097151 || nv >= INT32_MAX || nu >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "shingle_scan: inconsistent shapes or V");
        goto done;
    }
    const int32_t *o = (const int32_t *)off.buf, *vo = (const int32_t *)voff.buf;
    const unsigned char *d = (const unsigned char *)data.buf, *vd = (const unsigned char *)vdata.buf;
    const int64_t *uk = have_uniq ? (const int64_t *)uniq.buf : NULL;
    int64_t *tok_n = (int64_t *)tokens.buf, *found_n = (int64_t *)found.buf;
    int64_t *dfv = have_df ? (int64_t *)df.buf : NULL;
    const int64_t foreign = V - 2, pad = V - 1;
    /* the vocabulary: open addressing on the token hash, each slot holding the token's first 8 bytes */
    size_t vmask = 16;
    while (vmask < (size_t)nv * 2) vmask <<= 1;
    vmask -= 1;
    /* the keys to find: open addressing on mix64, behind a bit filter (8 bits per key) that rules
     * most absent keys out with one read of a smaller table */
    size_t kmask = 16;
    int fshift = 6; /* the filter has 2**fshift bits */
    if (have_uniq) {
        while (kmask < (size_t)nu * 2) kmask <<= 1;
        while (((size_t)1 << fshift) < (size_t)nu * 8) fshift++;
    }
    kmask -= 1;
    /* a block: texts until SCAN_BLOCK_BYTES are passed (or SCAN_BLOCK_TEXTS texts); a text of L bytes
     * has at most (L + 1) / 2 tokens and no more shingles than tokens */
    const size_t block_bytes = (size_t)SCAN_BLOCK_BYTES + (size_t)longest;
    const size_t most = block_bytes / 2 + SCAN_BLOCK_TEXTS + 2;
    vslots = (vocslot_t *)table_alloc((vmask + 1) * sizeof(vocslot_t));
    ids = (int64_t *)malloc(most * sizeof(int64_t));
    keys = (int64_t *)malloc(most * sizeof(int64_t));
    th = (uint64_t *)malloc(most * sizeof(uint64_t));
    sh = (uint64_t *)malloc(most * sizeof(uint64_t));
    tpos = (int32_t *)malloc(most * sizeof(int32_t));
    tlen = (int32_t *)malloc(most * sizeof(int32_t));
    tstart = (int64_t *)malloc((SCAN_BLOCK_TEXTS + 1) * sizeof(int64_t));
    sstart = (int64_t *)malloc((SCAN_BLOCK_TEXTS + 1) * sizeof(int64_t));
    lower = (unsigned char *)calloc(block_bytes + 8, 1);
    if (have_uniq) {
        kslots = (keyslot_t *)table_alloc((kmask + 1) * sizeof(keyslot_t));
        bits = (uint64_t *)calloc(((size_t)1 << fshift) / 64, sizeof(uint64_t));
    }
    /* every shingle there can be; pages never written are never mapped */
    const Py_ssize_t bound = n ? ((Py_ssize_t)o[n] - (Py_ssize_t)o[0] + n) / 2 + n : 0;
    outb = PyBytes_FromStringAndSize(NULL, bound * 8);
    if (!outb) goto done;
    int64_t *outv = (int64_t *)PyBytes_AS_STRING(outb);
    Py_ssize_t n_out = 0;
    if (!vslots || !ids || !keys || !th || !sh || !tpos || !tlen || !tstart || !sstart || !lower ||
        (have_uniq && (!kslots || !bits))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (size_t q = 0; q <= vmask; q++) vslots[q].id = -1;
    for (Py_ssize_t v = 0; v < nv; v++) {
        const int32_t len = vo[v + 1] - vo[v];
        const uint64_t first = tok_word(vd + vo[v], len);
        size_t q = (size_t)tok_hash_of(first, vd + vo[v], len, 0) & vmask;
        while (vslots[q].id >= 0) q = (q + 1) & vmask;
        vslots[q].word = first;
        vslots[q].len = len;
        vslots[q].id = (int32_t)v;
    }
    if (have_uniq) {
        for (size_t q = 0; q <= kmask; q++) kslots[q].at = -1;
        for (Py_ssize_t u = 0; u < nu; u++) {
            const uint64_t h = mix64((uint64_t)uk[u]);
            const size_t f = FILTER_BIT(h, fshift);
            bits[f >> 6] |= 1ULL << (f & 63);
            size_t q = (size_t)h & kmask;
            while (kslots[q].at >= 0 && kslots[q].key != uk[u]) q = (q + 1) & kmask;
            kslots[q].key = uk[u];
            kslots[q].at = (int32_t)u;
            kslots[q].df = 0;
        }
    }
    for (Py_ssize_t i0 = 0, i1; i0 < n; i0 = i1) {
        /* 1. the block's tokens, lower-cased into `lower`, and their hashes; vocabulary slots requested */
        Py_ssize_t t = 0;
        int32_t at = 0;
        for (i1 = i0; i1 < n && i1 - i0 < SCAN_BLOCK_TEXTS && (size_t)at < SCAN_BLOCK_BYTES; i1++) {
            const Py_ssize_t t0 = t;
            const int32_t at0 = at;
            int32_t len = 0;
            int ascii = 1;
            tstart[i1 - i0] = t;
            for (int32_t k = o[i1];; k++) {
                const unsigned char c = k < o[i1 + 1] ? tok_class[d[k]] : 0;
                if (c > 1) {
                    lower[at + len++] = c;
                    continue;
                }
                if (c == 1) {
                    ascii = 0;
                    break;
                }
                if (len) {
                    tpos[t] = at;
                    tlen[t] = len;
                    th[t] = tok_hash_of(tok_word8(lower + at, len), lower + at, len, 1);
                    __builtin_prefetch(&vslots[th[t] & vmask]);
                    t++;
                    at += len;
                    len = 0;
                }
                if (k >= o[i1 + 1]) break;
            }
            if (!ascii) { /* not read here: the caller's arrow path */
                t = t0;
                at = at0;
                tok_n[i1] = -1;
            } else {
                tok_n[i1] = t - t0;
            }
        }
        tstart[i1 - i0] = t;
        /* 2. their numbers in the vocabulary */
        for (Py_ssize_t s = 0; s < t; s++) {
            const unsigned char *w = lower + tpos[s];
            const int32_t l = tlen[s];
            const uint64_t word = tok_word8(w, l);
            int64_t id = foreign;
            for (size_t q = th[s] & vmask; vslots[q].id >= 0; q = (q + 1) & vmask) {
                const vocslot_t *e = &vslots[q];
                if (e->word == word && e->len == l && (l <= 8 || memcmp(vd + vo[e->id] + 8, w + 8, (size_t)l - 8) == 0)) {
                    id = e->id;
                    break;
                }
            }
            ids[s] = id;
        }
        /* 3. the shingles' keys, text by text; with uniq, their hashes, filter words requested */
        Py_ssize_t ns = 0;
        for (Py_ssize_t k = 0; k < i1 - i0; k++) {
            sstart[k] = ns;
            const int64_t *x = ids + tstart[k];
            const Py_ssize_t tn = tstart[k + 1] - tstart[k];
            const Py_ssize_t n_sh = tn >= 3 ? tn - 2 : (tn > 0);
            for (Py_ssize_t s = 0; s < n_sh; s++) {
                const int64_t a = x[s], b = s + 1 < tn ? x[s + 1] : pad, c = s + 2 < tn ? x[s + 2] : pad;
                keys[ns] = (a * V + b) * V + c;
                if (have_uniq) {
                    sh[ns] = mix64((uint64_t)keys[ns]);
                    __builtin_prefetch(&bits[FILTER_BIT(sh[ns], fshift) >> 6]);
                }
                ns++;
            }
        }
        sstart[i1 - i0] = ns;
        if (!have_uniq) {
            for (Py_ssize_t k = 0; k < i1 - i0; k++) found_n[i0 + k] = sstart[k + 1] - sstart[k];
            memcpy(outv + n_out, keys, (size_t)ns * sizeof(int64_t));
            n_out += ns;
            continue;
        }
        /* 4. the filter; table slots of the shingles that pass requested (sh[s] = 0 marks a miss) */
        for (Py_ssize_t s = 0; s < ns; s++) {
            const size_t f = FILTER_BIT(sh[s], fshift);
            if ((bits[f >> 6] >> (f & 63)) & 1) {
                sh[s] = ((size_t)sh[s] & kmask) + 1;
                __builtin_prefetch(&kslots[sh[s] - 1]);
            } else {
                sh[s] = 0;
            }
        }
        /* 5. the lookups, in text order */
        for (Py_ssize_t k = 0; k < i1 - i0; k++) {
            const Py_ssize_t before = n_out;
            for (Py_ssize_t s = sstart[k]; s < sstart[k + 1]; s++) {
                if (!sh[s]) continue;
                for (size_t q = (size_t)sh[s] - 1; kslots[q].at >= 0; q = (q + 1) & kmask) {
                    if (kslots[q].key == keys[s]) {
                        outv[n_out++] = kslots[q].at;
                        if (kslots[q].df < INT32_MAX) kslots[q].df++; /* only df <= MAX_DF matters */
                        break;
                    }
                }
            }
            found_n[i0 + k] = n_out - before;
        }
    }
    if (dfv) {
        for (size_t q = 0; q <= kmask; q++) {
            if (kslots[q].at >= 0) dfv[kslots[q].at] += kslots[q].df;
        }
    }
    Py_END_ALLOW_THREADS
    if (_PyBytes_Resize(&outb, n_out * 8) == 0) { /* a shrink: the allocator keeps the pages in place */
        result = outb;
        outb = NULL;
    }
done:
    free(vslots);
    free(kslots);
    free(bits);
    free(th);
    free(sh);
    free(ids);
    free(keys);
    free(tstart);
    free(sstart);
    free(tpos);
    free(tlen);
    free(lower);
    Py_XDECREF(outb);
    if (got >= 5 && have_df) PyBuffer_Release(&df);
    if (got >= 4) PyBuffer_Release(&found);
    if (got >= 3) PyBuffer_Release(&tokens);
    if (got >= 2 && have_uniq) PyBuffer_Release(&uniq);
    if (got >= 1) {
        PyBuffer_Release(&voff);
        PyBuffer_Release(&vdata);
    }
    PyBuffer_Release(&off);
    PyBuffer_Release(&data);
    return result;
}

/* pair_hits(found, hit_pos, rare, old_inv, old_text, old_tokens, new_tokens, shingle, piece, pure)
 *   -> (old, new) bytes (int64)
 *
 * The (old text, new text) pairs that share rare shingles at enough positions to be candidates:
 * with hits the number of pairs of their positions holding the same rare shingle, a pair is kept when
 * shingle * hits >= piece * old_tokens[old] or shingle * hits >= pure * new_tokens[new] (remap's
 * _enough, compared in double precision as numpy compares them). found (int64, one per new text) says
 * how many of hit_pos (positions of shingles in uniq, in text order, as shingle_scan gives them)
 * belong to each new text; rare (uint8, one per uniq shingle) marks the shingles to follow; old_inv
 * and old_text hold, for every shingle position of the old texts, its shingle (position in uniq) and
 * its old text. Pairs come new text by new text, each new text's in no particular order. */
static PyObject *pair_hits(PyObject *self, PyObject *args) {
    enum { FOUND, POS, RARE, INV, OTEXT, OTOK, NTOK, NBUF };
    PyObject *objs[NBUF];
    long long shingle;
    double piece, pure;
    if (!PyArg_ParseTuple(args, "OOOOOOOLdd", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5], &objs[6],
                          &shingle, &piece, &pure))
        return NULL;
    static const char *names[NBUF] = {"found", "hit_pos", "rare", "old_inv", "old_text", "old_tokens", "new_tokens"};
    Py_buffer v[NBUF];
    int got = 0;
    PyObject *result = NULL, *a = NULL, *b = NULL;
    typedef struct {
        int32_t text; /* the new text whose pairs are being counted */
        int32_t hits;
    } count_t;
    int64_t *start = NULL, *post = NULL, *touched = NULL, *ranges = NULL;
    count_t *stamp = NULL;
    i64vec_t po = {NULL, 0, 0}, pn = {NULL, 0, 0};
    for (; got < NBUF; got++) {
        if (get_buffer(objs[got], &v[got], names[got], got == RARE ? 1 : 8, 0) < 0) goto done;
    }
    const int64_t *fnd = (const int64_t *)v[FOUND].buf, *hp = (const int64_t *)v[POS].buf;
    const unsigned char *rare = (const unsigned char *)v[RARE].buf;
    const int64_t *inv = (const int64_t *)v[INV].buf, *otx = (const int64_t *)v[OTEXT].buf;
    const int64_t *otok = (const int64_t *)v[OTOK].buf, *ntok = (const int64_t *)v[NTOK].buf;
    const Py_ssize_t n_new = v[FOUND].len / 8, nh = v[POS].len / 8, nu = v[RARE].len, m = v[INV].len / 8;
    const Py_ssize_t n_old = v[OTOK].len / 8;
    int ok = v[OTEXT].len / 8 == m && v[NTOK].len / 8 == n_new && n_new < INT32_MAX && m < INT32_MAX;
    Py_ssize_t total = 0, most = 0;
    for (Py_ssize_t j = 0; ok && j < n_new; j++) {
        ok = fnd[j] >= 0;
        total += fnd[j];
        if (fnd[j] > most) most = fnd[j];
    }
    ok = ok && total == nh;
    for (Py_ssize_t h = 0; ok && h < nh; h++) ok = hp[h] >= 0 && hp[h] < nu;
    for (Py_ssize_t k = 0; ok && k < m; k++) ok = inv[k] >= 0 && inv[k] < nu && otx[k] >= 0 && otx[k] < n_old;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "pair_hits: inconsistent shapes or values out of range");
        goto done;
    }
    start = (int64_t *)calloc((size_t)nu + 1, sizeof(int64_t));
    post = (int64_t *)malloc(((size_t)m + 1) * sizeof(int64_t));
    stamp = (count_t *)malloc(((size_t)n_old + 1) * sizeof(count_t));
    touched = (int64_t *)malloc(((size_t)n_old + 1) * sizeof(int64_t));
    ranges = (int64_t *)malloc(((size_t)most + 1) * 2 * sizeof(int64_t));
    if (!start || !post || !stamp || !touched || !ranges) {
        PyErr_NoMemory();
        goto done;
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    /* the old texts of each rare shingle (a counting sort of the old positions by shingle) */
    for (Py_ssize_t k = 0; k < m; k++) {
        if (rare[inv[k]]) start[inv[k] + 1]++;
    }
    for (Py_ssize_t u = 0; u < nu; u++) start[u + 1] += start[u];
    for (Py_ssize_t k = 0; k < m; k++) {
        if (rare[inv[k]]) post[start[inv[k]]++] = otx[k];
    }
    for (Py_ssize_t u = nu; u > 0; u--) start[u] = start[u - 1]; /* back to the starts */
    start[0] = 0;
    for (Py_ssize_t o = 0; o < n_old; o++) stamp[o].text = -1;
    Py_ssize_t at = 0;
    for (Py_ssize_t j = 0; j < n_new && !bad; j++) {
        /* the postings of this text's rare shingles: their bounds requested, then read */
        const int64_t *hj = hp + at;
        const Py_ssize_t nh_j = fnd[j];
        at += nh_j;
        for (Py_ssize_t h = 0; h < nh_j; h++) __builtin_prefetch(&start[hj[h]]);
        Py_ssize_t nr = 0;
        for (Py_ssize_t h = 0; h < nh_j; h++) {
            const int64_t lo = start[hj[h]], hi = start[hj[h] + 1];
            if (lo == hi) continue; /* not rare (or in no old text) */
            __builtin_prefetch(&post[lo]);
            ranges[2 * nr] = lo;
            ranges[2 * nr + 1] = hi;
            nr++;
        }
        Py_ssize_t nt = 0;
        for (Py_ssize_t r = 0; r < nr; r++) {
            for (int64_t k = ranges[2 * r]; k < ranges[2 * r + 1]; k++) {
                const int64_t o = post[k];
                if (stamp[o].text != (int32_t)j) {
                    stamp[o].text = (int32_t)j;
                    stamp[o].hits = 0;
                    touched[nt++] = o;
                }
                if (stamp[o].hits < INT32_MAX) stamp[o].hits++; /* capped: far past any threshold */
            }
        }
        const double by_new = pure * (double)ntok[j];
        for (Py_ssize_t k = 0; k < nt; k++) {
            const int64_t o = touched[k];
            const double carried = (double)(shingle * (int64_t)stamp[o].hits);
            if (!(carried >= piece * (double)otok[o] || carried >= by_new)) continue;
            if (i64vec_push(&po, o) < 0 || i64vec_push(&pn, (int64_t)j) < 0) {
                bad = 1;
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_NoMemory();
        goto done;
    }
    a = i64vec_bytes(&po);
    b = i64vec_bytes(&pn);
    if (a && b) result = PyTuple_Pack(2, a, b);
done:
    Py_XDECREF(a);
    Py_XDECREF(b);
    free(start);
    free(post);
    free(stamp);
    free(touched);
    free(ranges);
    free(po.v);
    free(pn.v);
    while (got > 0) PyBuffer_Release(&v[--got]);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* pick_greedy(old_code, old_start, old_tokens, new_code, new_start, new_tokens, cand_start, cand,
 *             cand_order, same_doc, shingle, piece, pure, shared_out, covers_out, from_out, picked_out,
 *             have_out) -> None
 *
 * remap's _pick for every old text at once, on integer shingle codes (int64 arrays; text i's items
 * are x[start[i]:start[i + 1]]). Old text i's candidates are cand[cand_start[i]:cand_start[i + 1]]
 * (positions among the new texts), in new-corpus order; cand_order gives each one's place in the new
 * corpus (ties go to the lower) and same_doc (uint8) whether it is in the old text's document. Per
 * candidate: shared_out, the distinct shingles it shares with the old text; covers_out, the old
 * text's tokens lying in a shingle it has; from_out, its tokens lying in a shingle the old text has;
 * picked_out, 0 or the turn (1, 2, ...) in which it was picked. have_out: per old text, the tokens
 * the picked candidates carry. The rule (see the module docs of rankgate.goldset.remap) is the one
 * _pick applies; the comparisons with piece and pure are made in double precision, as Python makes
 * them for integers below 2**53. An old text without shingles is left alone (all outputs 0). */

static int cmp_i64(const void *x, const void *y) {
    const int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* sorts x[0:n] and removes repeats; returns the distinct count */
static Py_ssize_t sort_unique(int64_t *x, Py_ssize_t n) {
    if (n < 2) return n;
    if (n <= 48) { /* chunk-sized texts: an insertion sort beats qsort's calls */
        for (Py_ssize_t k = 1; k < n; k++) {
            const int64_t key = x[k];
            Py_ssize_t m = k;
            while (m > 0 && x[m - 1] > key) {
                x[m] = x[m - 1];
                m--;
            }
            x[m] = key;
        }
    } else {
        qsort(x, (size_t)n, sizeof(int64_t), cmp_i64);
    }
    Py_ssize_t u = 1;
    for (Py_ssize_t k = 1; k < n; k++) {
        if (x[k] != x[u - 1]) x[u++] = x[k];
    }
    return u;
}

static int contains_i64(const int64_t *sorted, Py_ssize_t n, int64_t key) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && sorted[lo] == key;
}

/* remap's covered(): the tokens of a text of `tokens` tokens and n shingles lying in at least one
 * shingle marked in `mark` */
static int64_t covered_tokens(const unsigned char *mark, Py_ssize_t n, int64_t tokens, int64_t shingle) {
    if (n == 1 && tokens < shingle) return mark[0] ? tokens : 0;
    int64_t total = 0;
    Py_ssize_t prev = -1;
    for (Py_ssize_t p = 0; p < n; p++) {
        if (!mark[p]) continue;
        total += prev < 0 ? shingle : (p - prev < shingle ? p - prev : shingle);
        prev = p;
    }
    return total;
}

static PyObject *pick_greedy(PyObject *self, PyObject *args) {
    enum { OCODE, OSTART, OTOK, NCODE, NSTART, NTOK, CSTART, CAND, CORDER, SAME, SHARED, COVERS, FROM, PICKED, HAVE, NBUF };
    static const char *names[NBUF] = {"old_code", "old_start", "old_tokens", "new_code", "new_start", "new_tokens",
                                      "cand_start", "cand", "cand_order", "same_doc", "shared_out", "covers_out",
                                      "from_out", "picked_out", "have_out"};
    PyObject *objs[NBUF];
    long long shingle;
    double piece, pure;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOLddOOOOO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &objs[5],
                          &objs[6], &objs[7], &objs[8], &objs[9], &shingle, &piece, &pure, &objs[10], &objs[11],
                          &objs[12], &objs[13], &objs[14]))
        return NULL;
    Py_buffer v[NBUF];
    int got = 0;
    PyObject *result = NULL;
    int64_t *so = NULL, *sj = NULL;
    unsigned char *marks = NULL, *nmark = NULL, *uni = NULL, *pool = NULL;
    for (; got < NBUF; got++) {
        if (get_buffer(objs[got], &v[got], names[got], got == SAME ? 1 : 8, got >= SHARED) < 0) goto done;
    }
#define I64(k) ((int64_t *)v[k].buf)
    const Py_ssize_t n_old = v[OTOK].len / 8, n_new = v[NTOK].len / 8, n_cand = v[CAND].len / 8;
    const int64_t *ocode = I64(OCODE), *ostart = I64(OSTART), *otok = I64(OTOK);
    const int64_t *ncode = I64(NCODE), *nstart = I64(NSTART), *ntok = I64(NTOK);
    const int64_t *cstart = I64(CSTART), *cand = I64(CAND), *corder = I64(CORDER);
    const unsigned char *same = (const unsigned char *)v[SAME].buf;
    int64_t *shared = I64(SHARED), *covers = I64(COVERS), *from = I64(FROM), *picked = I64(PICKED), *have_out = I64(HAVE);
#undef I64
    int ok = shingle > 0 && v[OSTART].len / 8 == n_old + 1 && v[NSTART].len / 8 == n_new + 1 &&
             v[CSTART].len / 8 == n_old + 1 && v[CORDER].len / 8 == n_cand && v[SAME].len == n_cand &&
             v[SHARED].len / 8 == n_cand && v[COVERS].len / 8 == n_cand && v[FROM].len / 8 == n_cand &&
             v[PICKED].len / 8 == n_cand && v[HAVE].len / 8 == n_old && ostart[0] == 0 && nstart[0] == 0 &&
             cstart[0] == 0 && ostart[n_old] == v[OCODE].len / 8 && nstart[n_new] == v[NCODE].len / 8 &&
             cstart[n_old] == n_cand;
    Py_ssize_t most_old = 0, most_new = 0, most_cand = 0;
    for (Py_ssize_t i = 0; ok && i < n_old; i++) {
        ok = ostart[i + 1] >= ostart[i] && cstart[i + 1] >= cstart[i];
        if (ostart[i + 1] - ostart[i] > most_old) most_old = ostart[i + 1] - ostart[i];
        if (cstart[i + 1] - cstart[i] > most_cand) most_cand = cstart[i + 1] - cstart[i];
    }
    for (Py_ssize_t w = 0; ok && w < n_new; w++) {
        ok = nstart[w + 1] >= nstart[w] && ntok[w] > 0;
        if (nstart[w + 1] - nstart[w] > most_new) most_new = nstart[w + 1] - nstart[w];
    }
    for (Py_ssize_t p = 0; ok && p < n_cand; p++) ok = cand[p] >= 0 && cand[p] < n_new;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "pick_greedy: inconsistent shapes or values out of range");
        goto done;
    }
    so = (int64_t *)malloc(((size_t)most_old + 1) * sizeof(int64_t));
    sj = (int64_t *)malloc(((size_t)most_new + 1) * sizeof(int64_t));
    size_t marks_cap = 1 << 16; /* one mark per old shingle per candidate: grown for the largest text */
    marks = (unsigned char *)malloc(marks_cap);
    nmark = (unsigned char *)malloc((size_t)most_new + 1);
    uni = (unsigned char *)malloc((size_t)most_old + 1);
    pool = (unsigned char *)malloc((size_t)most_cand + 1);
    if (!so || !sj || !marks || !nmark || !uni || !pool) {
        PyErr_NoMemory();
        goto done;
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_old && !bad; i++) {
        const int64_t *K = ocode + ostart[i];
        const Py_ssize_t L = ostart[i + 1] - ostart[i], c0 = cstart[i], nc = cstart[i + 1] - c0;
        const int64_t n_tok = otok[i];
        have_out[i] = 0;
        for (Py_ssize_t p = c0; p < c0 + nc; p++) shared[p] = covers[p] = from[p] = picked[p] = 0;
        if (L == 0) continue;
        if ((size_t)L * (size_t)nc > marks_cap) {
            while ((size_t)L * (size_t)nc > marks_cap) marks_cap *= 2;
            unsigned char *grown = (unsigned char *)realloc(marks, marks_cap);
            if (!grown) {
                bad = 1;
                break;
            }
            marks = grown;
        }
        memcpy(so, K, (size_t)L * sizeof(int64_t));
        const Py_ssize_t us = sort_unique(so, L), dup_old = L - us;
        for (Py_ssize_t c = 0; c < nc; c++) {
            const Py_ssize_t p = c0 + c, w = (Py_ssize_t)cand[p];
            const int64_t *Kj = ncode + nstart[w];
            const Py_ssize_t Lj = nstart[w + 1] - nstart[w];
            memcpy(sj, Kj, (size_t)Lj * sizeof(int64_t));
            const Py_ssize_t uj = sort_unique(sj, Lj);
            Py_ssize_t a = 0, b = 0, sh = 0;
            while (a < us && b < uj) {
                if (so[a] < sj[b]) a++;
                else if (so[a] > sj[b]) b++;
                else sh++, a++, b++;
            }
            shared[p] = sh;
            unsigned char *mark = marks + (size_t)c * (size_t)L;
            for (Py_ssize_t q = 0; q < L; q++) mark[q] = (unsigned char)contains_i64(sj, uj, K[q]);
            for (Py_ssize_t q = 0; q < Lj; q++) nmark[q] = (unsigned char)contains_i64(so, us, Kj[q]);
            covers[p] = covered_tokens(mark, L, n_tok, shingle);
            from[p] = covered_tokens(nmark, Lj, ntok[w], shingle);
            /* upper bounds first (as _pick: a candidate past them is never measured there, but the
             * measures are the same), then the pool's rule */
            const int viable = (double)(shingle * (sh + dup_old)) >= piece * (double)n_tok ||
                               (double)(shingle * (sh + Lj - uj)) >= pure * (double)ntok[w];
            pool[c] = viable && ((double)covers[p] >= piece * (double)n_tok || (double)from[p] >= pure * (double)ntok[w]);
        }
        memset(uni, 0, (size_t)L);
        int64_t have = 0, turn = 0;
        for (;;) {
            if (have >= n_tok) break;
            Py_ssize_t best = -1;
            int64_t best_gain = 0;
            for (Py_ssize_t c = 0; c < nc; c++) {
                if (!pool[c]) continue;
                const Py_ssize_t p = c0 + c;
                int64_t gain;
                if (!turn) {
                    gain = covers[p];
                } else {
                    const unsigned char *mark = marks + (size_t)c * (size_t)L;
                    int64_t total = 0;
                    Py_ssize_t prev = -1;
                    if (L == 1 && n_tok < shingle) {
                        total = (uni[0] | mark[0]) ? n_tok : 0;
                    } else {
                        for (Py_ssize_t q = 0; q < L; q++) {
                            if (!(uni[q] | mark[q])) continue;
                            total += prev < 0 ? shingle : (q - prev < shingle ? q - prev : shingle);
                            prev = q;
                        }
                    }
                    gain = total - have;
                }
                if (best < 0 || gain > best_gain ||
                    (gain == best_gain && (same[p] > same[c0 + best] ||
                                           (same[p] == same[c0 + best] && corder[p] < corder[c0 + best])))) {
                    best = c;
                    best_gain = gain;
                }
            }
            if (best < 0) break; /* the pool is empty */
            const Py_ssize_t p = c0 + best;
            const Py_ssize_t w = (Py_ssize_t)cand[p];
            if (best_gain <= 0 ||
                !((double)best_gain >= piece * (double)n_tok || (double)from[p] >= pure * (double)ntok[w]))
                break;
            picked[p] = ++turn;
            const unsigned char *mark = marks + (size_t)best * (size_t)L;
            for (Py_ssize_t q = 0; q < L; q++) uni[q] |= mark[q];
            have += best_gain;
            pool[best] = 0;
        }
        have_out[i] = have;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_NoMemory();
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;
done:
    free(so);
    free(sj);
    free(marks);
    free(nmark);
    free(uni);
    free(pool);
    while (got > 0) PyBuffer_Release(&v[--got]);
    return result;
}

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

static PyObject *csv_rows(PyObject *self, PyObject *args) {
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

static PyObject *rank_metrics(PyObject *self, PyObject *args) {
    enum { ROFF, RCODE, JOFF, JCODE, JGRADE, LOGS, GAINS, SPECS, KS, OUT, FIRST, NBUF };
    static const char *names[NBUF] = {"row_offsets", "row_codes", "judged_offsets", "judged_codes", "judged_grades",
                                      "logs", "gains", "specs", "ks", "out", "first_rel"};
    PyObject *objs[NBUF];
    Py_buffer v[NBUF];
    int got = 0;
    PyObject *result = NULL;
    int64_t *keys = NULL, *vals = NULL, *hit_rank = NULL, *hit_grade = NULL, *ideal = NULL;
    uint32_t *stamp = NULL;
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
    size_t cap = 8;
    while (cap < (size_t)most * 2) cap <<= 1;
    keys = (int64_t *)malloc(cap * sizeof(int64_t));
    vals = (int64_t *)malloc(cap * sizeof(int64_t));
    stamp = (uint32_t *)calloc(cap, sizeof(uint32_t));
    hit_rank = (int64_t *)malloc((size_t)(most_rows + 1) * sizeof(int64_t));
    hit_grade = (int64_t *)malloc((size_t)(most_rows + 1) * sizeof(int64_t));
    ideal = (int64_t *)malloc((size_t)(most + 1) * sizeof(int64_t));
    prefix = (double *)malloc((size_t)(most + 1) * 2 * sizeof(double));
    if (!keys || !vals || !stamp || !hit_rank || !hit_grade || !ideal || !prefix) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    uint32_t gen = 0;
    for (Py_ssize_t q = 0; q < nq; q++) {
        const int64_t a = jo[q], b = jo[q + 1];
        const int64_t r0 = ro[q], r1 = ro[q + 1];
        /* The query's judgements: a table of id -> grade (the last judgement of an id wins, as in
         * join_grades), a filter of the ids judged >= 1, and the grades >= 1 for the ideal list. */
        const size_t mask = table_mask(b - a);
        gen = next_stamp(gen, stamp, cap);
        uint64_t filter[4] = {0, 0, 0, 0};
        Py_ssize_t npos = 0;
        for (int64_t j = a; j < b; j++) {
            const int64_t c = jc[j], grade = jg[j];
            if (grade >= 1) ideal[npos++] = grade;
            if (c < 0) continue; /* a judged id that never occurs in the rows */
            size_t h = (size_t)mix64((uint64_t)c) & mask;
            while (stamp[h] == gen && keys[h] != c) h = (h + 1) & mask;
            stamp[h] = gen;
            keys[h] = c;
            vals[h] = grade;
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
            size_t h = (size_t)mix64((uint64_t)c) & mask;
            while (stamp[h] == gen) {
                if (keys[h] == c) {
                    if (vals[h] >= 1) {
                        hit_rank[nhits] = r - r0 + 1;
                        hit_grade[nhits] = vals[h];
                        nhits++;
                    }
                    break;
                }
                h = (h + 1) & mask;
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
    free(keys);
    free(vals);
    free(stamp);
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

static PyObject *segments_distinct(PyObject *self, PyObject *args) {
    PyObject *o_codes, *o_off;
    if (!PyArg_ParseTuple(args, "OO", &o_codes, &o_off)) return NULL;
    Py_buffer vc, vo;
    if (get_buffer(o_codes, &vc, "codes", 8, 0) < 0) return NULL;
    if (get_buffer(o_off, &vo, "offsets", 8, 0) < 0) {
        PyBuffer_Release(&vc);
        return NULL;
    }
    PyObject *result = NULL;
    int64_t *keys = NULL;
    uint32_t *stamp = NULL;
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
    size_t cap = 8;
    while (cap < (size_t)most * 2) cap <<= 1;
    keys = (int64_t *)malloc(cap * sizeof(int64_t));
    stamp = (uint32_t *)calloc(cap, sizeof(uint32_t));
    if (!keys || !stamp) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    uint32_t gen = 0;
    for (Py_ssize_t s = 0; s < ns && distinct; s++) {
        const int64_t a = o[s], b = o[s + 1];
        if (b - a < 2) continue;
        const size_t mask = table_mask(b - a);
        gen = next_stamp(gen, stamp, cap);
        for (int64_t r = a; r < b; r++) {
            const int64_t k = c[r];
            size_t h = (size_t)mix64((uint64_t)k) & mask;
            while (stamp[h] == gen) {
                if (keys[h] == k) {
                    distinct = 0;
                    break;
                }
                h = (h + 1) & mask;
            }
            if (!distinct) break;
            stamp[h] = gen;
            keys[h] = k;
        }
    }
    Py_END_ALLOW_THREADS
    result = PyBool_FromLong(distinct);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "segments_distinct: offsets out of range");
done:
    free(keys);
    free(stamp);
    PyBuffer_Release(&vc);
    PyBuffer_Release(&vo);
    return result;
}

static PyMethodDef methods[] = {
    {"csv_rows", csv_rows, METH_VARARGS,
     "csv_rows(columns, n) -> str: CSV lines of text cells, coded cells and float64 values (repr; NaN empty)"},
    {"join_grades", join_grades, METH_VARARGS,
     "join_grades(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, out) -> matched rows"},
    {"segments_distinct", segments_distinct, METH_VARARGS,
     "segments_distinct(codes, offsets) -> bool: no segment holds a code twice"},
    {"rank_metrics", rank_metrics, METH_VARARGS,
     "rank_metrics(row_offsets, row_codes, judged_offsets, judged_codes, judged_grades, logs, gains, specs, ks, out, "
     "first_rel): hit, recall, precision, mrr, ndcg and map of every query in one pass"},
    {"bootstrap_sums", bootstrap_sums, METH_VARARGS,
     "bootstrap_sums(sfc64_state, values, m, n_resamples, out): resampled column sums"},
    {"bootstrap_sums_blocks", bootstrap_sums_blocks, METH_VARARGS,
     "bootstrap_sums_blocks(sfc64_state, stacks, n_resamples, outs, group): bootstrap_sums of column blocks, one draw"},
    {"fixed_width_numbers", fixed_width_numbers, METH_VARARGS,
     "fixed_width_numbers(data, offsets, width, cut, out) -> bool: prefix + digits ids of one width as numbers"},
    {"rank_permutation", rank_permutation, METH_VARARGS,
     "rank_permutation(query, n_queries, score, id_offsets, id_data, out): the ranking rule as a permutation"},
    {"draw_indices", draw_indices, METH_VARARGS, "draw_indices(sfc64_state, n, out): the stream's first indices"},
    {"set_baseline", set_baseline, METH_VARARGS,
     "set_baseline(on) -> previous: the bootstrap's plain variants only (RANKGATE_NATIVE=baseline), or the widest the "
     "CPU runs"},
    {"variant", variant, METH_NOARGS, "variant() -> 'avx512f', 'avx2' or 'plain': the bootstrap's variant in use"},
    {"narrow_limit", set_narrow_limit, METH_VARARGS,
     "narrow_limit(v) -> previous: the largest byte count of bootstrap_sums_blocks before it draws again (tests)"},
    {"ascii_tokens", ascii_tokens, METH_VARARGS,
     "ascii_tokens(offsets, data, counts_out) -> (token_offsets, token_data): remap's tokens of ASCII texts"},
    {"shingle_scan", shingle_scan, METH_VARARGS,
     "shingle_scan(offsets, data, vocab_offsets, vocab_data, V, uniq, tokens_out, found_out, df) -> bytes: "
     "remap's shingle keys of ASCII texts, or their positions in uniq"},
    {"pair_hits", pair_hits, METH_VARARGS,
     "pair_hits(found, hit_pos, rare, old_inv, old_text, old_tokens, new_tokens, shingle, piece, pure) -> (old, new): "
     "remap's candidate pairs"},
    {"pick_greedy", pick_greedy, METH_VARARGS,
     "pick_greedy(old_code, old_start, old_tokens, new_code, new_start, new_tokens, cand_start, cand, cand_order, "
     "same_doc, shingle, piece, pure, shared_out, covers_out, from_out, picked_out, have_out): remap's picking"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__kernels(void) {
    init_tok_class();
    pick_variant(0);
    return PyModule_Create(&module);
}

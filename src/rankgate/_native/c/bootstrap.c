/*
 * bootstrap.c (rankgate._native._kernels): percentile-bootstrap resample sums, and their CPU dispatch. Entry points:
 *
 *   bootstrap_sums         resample sums of several columns at once: query indices from an SFC64 stream
 *                          (below) become per-query counts, and each column is summed in query order
 *   bootstrap_sums_blocks  bootstrap_sums over column blocks that share one stream (the counts drawn once)
 *   draw_indices           the stream's first indices (tests)
 *   set_baseline           the plain variants only (RANKGATE_NATIVE=baseline), or the widest the CPU runs
 *   variant                the variant in use: 'avx512f', 'avx2' or 'plain'
 *   narrow_limit           the largest byte count before bootstrap_sums_blocks draws a group again (tests)
 *
 * The fallback draws the same queries with numpy's own SFC64 and adds the same products in the same order
 * (rankgate.stats.bootstrap._chained_sums): the same bits. Every variant (plain, AVX2, AVX-512) is the
 * same IEEE operations in the same order, so they give the same bits.
 */
#include "native.h"
#include "kernels.h"

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
PyObject *rg_draw_indices(PyObject *self, PyObject *args) {
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

PyObject *rg_set_baseline(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    const int before = baseline_on;
    baseline_on = on;
    pick_variant(on);
    return PyBool_FromLong(before);
}

PyObject *rg_variant(PyObject *self, PyObject *noargs) {
    return PyUnicode_FromString(variant_name);
}


/* bootstrap_sums(state, values, m, n_resamples, out): for each resample, n indices from the stream
 * become per-query counts; out[r, j] = sum over queries i, in order, of counts[i] * values[i, j]
 * (adding 0 * x for undrawn queries changes no sum, and no branch means no mispredictions). */
PyObject *rg_bootstrap_sums(PyObject *self, PyObject *args) {
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

PyObject *rg_narrow_limit(PyObject *self, PyObject *args) {
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
PyObject *rg_bootstrap_sums_blocks(PyObject *self, PyObject *args) {
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

void rg_bootstrap_init(void) { pick_variant(0); }

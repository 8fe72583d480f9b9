/*
 * rankgate._native._reader: whitespace-separated TREC lines (runs and qrels), and JSON lines of the common run
 * and gold shape, read straight from a memory map.
 *
 *   read_lines(buf, start, end, ncols, value_col, value_kind, delim,
 *              codes, values, offsets, data) -> (rows, data_bytes, query_ids) | None
 *
 * Parses buf[start:end) as lines of exactly `ncols` non-empty fields of ASCII bytes 0x21-0x7f (ids:
 * printable ASCII, 0x21-0x7e) separated by one `delim` byte (b' ' or b'\t'), ending in \n, \r\n or a
 * lone \r (a line end, as in the other readers); empty lines are skipped. Column 0 is the query id,
 * column 2 the item id, column `value_col` a number: value_kind 0 a decimal float (float64 out), 1 an
 * integer (int64 out). Outputs, caller-allocated: codes (int32, the query's index in the returned
 * list, in order of first appearance), values, offsets (int32, rows + 1; an arrow string array's
 * offsets into data) and data (the item ids' bytes, with 16 bytes of room at the end: short ids are
 * copied 16 bytes at a time). count_lines(buf, start, end) counts newlines, so that callers can size
 * the outputs (lines that end in a lone \r are not counted: a region of more rows than its outputs
 * hold returns None).
 *
 * It is deliberately narrow. Anything it does not accept in full (a comment line, a tab in a
 * space-separated file, a byte >= 0x80 in any field, a number in another notation, too many rows or
 * bytes for the buffers) makes it return None, and the caller reads the file with the general
 * readers, which name the bad line. So on every file this reader accepts, the result is the one the
 * general path gives.
 *
 * Numbers are correctly rounded, like strtod: the usual short decimals (mantissa <= 2^53, exponent
 * within 10^+-22) with one IEEE division or product of exact operands; up to 19 significant digits
 * (Python's repr of a float has at most 17) with 128-bit integer division and round-half-even; anything
 * longer by Python's own PyOS_string_to_double. The GIL is released while the text is scanned, so two
 * threads can read two halves of one file. The scans are plain C, the same on every CPU: there is no
 * CPU-specific path (variant() says "plain"; set_baseline, which RANKGATE_NATIVE=baseline calls, changes
 * nothing here).
 *
 *   read_jsonl(buf, start, end, id_keys, list_keys, item_keys, value_keys, value_kind, values, offsets,
 *              data[, rank_keys, ranks, extras, null_keys])
 *       -> (items, data_bytes, newlines, query_ids, counts, lines, ranked, others) | None
 *
 * Parses buf[start:end) as JSON lines of one shape: {"<id key>": "<id>", "<list key>": [{"<item key>":
 * "<id>", "<value key>": <number>}, ...]}, each key one of its tuple (of str), each exactly once in
 * its object, no other key, in any order; JSON whitespace between tokens; blank lines (spaces, tabs,
 * \r) skipped. Ids are non-empty strings of printable ASCII without escapes. value_kind 0 reads any
 * finite JSON number as Python's float(json.loads(text)) gives it (an integer literal's zero is +0.0),
 * 1 an integer literal of at most 18 digits as int64. Outputs: values and offsets/data (the item ids,
 * as read_lines writes them; offsets one longer than values); returned: per query (in line order) its
 * id, its number of items (counts, int64 bytes) and its 1-based line within the region (lines, int64
 * bytes); newlines, the region's line breaks. Anything else returns None: the caller's other readers
 * take the file. Repeated query ids are for the caller to find. With ranks (float64, as long as values),
 * an item may also hold one rank key (rank_keys), any finite number read as value_kind 0 reads it,
 * into ranks; an item without one gets NaN; ranked counts the items with one. With extras, a line's
 * object may hold other keys of any value: each is passed over (json_skip), and others is (records,
 * names, values): per key met, in order, its query and its name's code (int64 bytes, two each), the
 * names by code (in order of first appearance), and the values' text joined by ',' (for the caller to
 * decode with Python's json module as one array). An item may also hold a key of null_keys whose value
 * is null (what a run writes for a chunk without a text or version); another value of such a key
 * returns None. Items of a scan give the bytes around their values (item_shape_t, up to ITEM_SHAPES of
 * them); an item whose bytes around its values are one of those is read by matching them and reading
 * its values alone, any other key by key, with the same result.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------- */
/* The guard around a scan of a memory map. A file that another process cuts short while it is mapped
 * makes a read of a page past its new end raise SIGBUS, which would end the process. A scan runs
 * under guarded(): a SIGBUS in the thread of a guarded scan jumps back out of the scan, which then
 * reports FileCut (the caller says "changed while it was read"); any other SIGBUS goes to the handler
 * that was there before (by default: the process ends, as it did). The scans only read the map:
 * nothing they hold is left half-written by the jump, and the caller frees what they allocated. */

static PyObject *FileCut; /* rankgate._native._reader.FileCut (an OSError) */
static unsigned long faults_caught = 0; /* (tests: faults() counts the jumps) */

#if defined(__unix__) || defined(__APPLE__)
#include <setjmp.h>
#include <signal.h>
#define RG_GUARD 1

static _Thread_local sigjmp_buf *guard_jump = NULL;
static struct sigaction before_bus;
static int guard_ready = 0;

static void on_bus(int sig, siginfo_t *info, void *context) {
    sigjmp_buf *jump = guard_jump;
    if (jump != NULL) { /* (also a SIGBUS re-raised by a handler installed after this one, such as faulthandler's) */
        guard_jump = NULL;
        faults_caught++;
        siglongjmp(*jump, 1);
    }
    if (before_bus.sa_flags & SA_SIGINFO) {
        if (before_bus.sa_sigaction != NULL) before_bus.sa_sigaction(sig, info, context);
        return;
    }
    if (before_bus.sa_handler == SIG_IGN) return;
    if (before_bus.sa_handler == SIG_DFL) {
        signal(sig, SIG_DFL); /* (the fault happens again on return, with the default action) */
        return;
    }
    before_bus.sa_handler(sig);
}

/* Installed once, at the first guarded scan (with the GIL held: no two threads get here at once). */
static int guard_install(void) {
    if (guard_ready) return 0;
    struct sigaction act;
    memset(&act, 0, sizeof(act));
    act.sa_sigaction = on_bus;
    act.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGBUS, &act, &before_bus) != 0) return -1;
    guard_ready = 1;
    return 0;
}
#endif

typedef int (*scan_fn)(void *);

/* fn(arg) with the guard on; *cut = 1 (and -1 returned) when a SIGBUS ended it. Not inlined: no
 * variable of the caller lives across the jump. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noinline))
#endif
static int guarded(scan_fn fn, void *arg, int *cut) {
    *cut = 0;
#ifdef RG_GUARD
    if (!guard_ready) return fn(arg); /* (guard_install failed: unguarded, as before) */
    sigjmp_buf jump;
    if (sigsetjmp(jump, 1) != 0) {
        *cut = 1;
        return -1;
    }
    guard_jump = &jump;
    const int status = fn(arg);
    guard_jump = NULL;
    return status;
#else
    return fn(arg);
#endif
}

/* Call with the GIL held before a guarded scan; -1 with an exception set if the guard is not there. */
static int guard_ready_or_error(void) {
#ifdef RG_GUARD
    if (guard_install() != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
#endif
    return 0;
}

/* The ids a scan points at (in the buffer, which may be a map) copied into one allocation, the
 * pointers moved to the copies: made under the guard, so that the ids are decoded (with the GIL held,
 * where no jump may land) from memory no other process can take away. */
static int own_ids(const unsigned char **ids, const int32_t *lens, size_t n, unsigned char **arena) {
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += (size_t)lens[i];
    unsigned char *a = (unsigned char *)malloc(total ? total : 1);
    if (!a) return -1;
    *arena = a;
    for (size_t i = 0, at = 0; i < n; i++) {
        memcpy(a + at, ids[i], (size_t)lens[i]);
        ids[i] = a + at;
        at += (size_t)lens[i];
    }
    return 0;
}

static PyObject *file_cut(void) {
    PyErr_SetString(FileCut, "the mapped file is shorter than when it was mapped (a read past its end raised SIGBUS)");
    return NULL;
}

/* ---------------------------------------------------------------------------------------------- */
/* Query ids: an open-addressing table of (bytes, length) -> code over the mapped text itself. */

typedef struct {
    const unsigned char *p;
    int32_t len;
    int32_t code; /* -1: empty slot */
} slot_t;

typedef struct {
    slot_t *slots;
    size_t mask;
    const unsigned char **ids; /* by code */
    int32_t *lens;
    size_t n, cap;
} qdict_t;

static uint64_t hash_bytes(const unsigned char *p, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static int qdict_init(qdict_t *d) {
    d->mask = 1023;
    d->slots = (slot_t *)malloc((d->mask + 1) * sizeof(slot_t));
    d->cap = 512;
    d->n = 0;
    d->ids = (const unsigned char **)malloc(d->cap * sizeof(*d->ids));
    d->lens = (int32_t *)malloc(d->cap * sizeof(*d->lens));
    if (!d->slots || !d->ids || !d->lens) return -1;
    for (size_t i = 0; i <= d->mask; i++) d->slots[i].code = -1;
    return 0;
}

static void qdict_free(qdict_t *d) {
    free(d->slots);
    free(d->ids);
    free(d->lens);
}

static int qdict_grow(qdict_t *d) {
    const size_t size = (d->mask + 1) * 2;
    slot_t *slots = (slot_t *)malloc(size * sizeof(slot_t));
    if (!slots) return -1;
    for (size_t i = 0; i < size; i++) slots[i].code = -1;
    for (size_t i = 0; i <= d->mask; i++) {
        const slot_t s = d->slots[i];
        if (s.code < 0) continue;
        size_t j = hash_bytes(s.p, (size_t)s.len) & (size - 1);
        while (slots[j].code >= 0) j = (j + 1) & (size - 1);
        slots[j] = s;
    }
    free(d->slots);
    d->slots = slots;
    d->mask = size - 1;
    return 0;
}

/* The code of p[0:len), adding it if new; -1 when out of memory or past int32. */
static int32_t qdict_code(qdict_t *d, const unsigned char *p, int32_t len) {
    size_t j = hash_bytes(p, (size_t)len) & d->mask;
    while (d->slots[j].code >= 0) {
        const slot_t *s = &d->slots[j];
        if (s->len == len && memcmp(s->p, p, (size_t)len) == 0) return s->code;
        j = (j + 1) & d->mask;
    }
    if (d->n >= (size_t)INT32_MAX) return -1;
    if (d->n == d->cap) {
        const size_t cap = d->cap * 2;
        const unsigned char **ids = (const unsigned char **)realloc(d->ids, cap * sizeof(*ids));
        if (!ids) return -1;
        d->ids = ids;
        int32_t *lens = (int32_t *)realloc(d->lens, cap * sizeof(*lens));
        if (!lens) return -1;
        d->lens = lens;
        d->cap = cap;
    }
    const int32_t code = (int32_t)d->n;
    d->slots[j].p = p;
    d->slots[j].len = len;
    d->slots[j].code = code;
    d->ids[d->n] = p;
    d->lens[d->n] = len;
    d->n++;
    if (d->n * 2 > d->mask + 1 && qdict_grow(d) < 0) return -1;
    return code;
}

/* ---------------------------------------------------------------------------------------------- */
/* Decimal text to double, correctly rounded. */

static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

static int bit_length128(u128 q) {
    const uint64_t hi = (uint64_t)(q >> 64), lo = (uint64_t)q;
    if (hi) return 128 - __builtin_clzll(hi);
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* (q + f) * 2^b rounded to the nearest double, ties to even, where 0 <= f < 1 and `sticky` says f > 0.
 * Callers guarantee q has at least 55 bits whenever sticky is set, and a normal result. */
static double round_scaled(u128 q, int sticky, int b) {
    const int len = bit_length128(q);
    if (len <= 53) return ldexp((double)(uint64_t)q, b);
    const int shift = len - 53;
    uint64_t top = (uint64_t)(q >> shift);
    const u128 rest = q & (((u128)1 << shift) - 1);
    const u128 half = (u128)1 << (shift - 1);
    if (rest > half || (rest == half && (sticky || (top & 1)))) top++;
    return ldexp((double)top, b + shift);
}

static uint64_t pow5_u64[28];
static uint64_t pow10_u64[20];
#endif

/* 0: parsed into *out; 1: valid but needs the general conversion; -1: not a number of the accepted
 * form ([+-] digits [. digits] [e [+-] digits], at least one digit). */
static int parse_double(const unsigned char *s, int32_t n, double *out) {
    int32_t i = 0;
    int neg = 0;
    if (i < n && (s[i] == '-' || s[i] == '+')) neg = s[i++] == '-';
    uint64_t m = 0;
    int sig = 0, digits = 0, slow = 0;
    int64_t e10 = 0;
    for (; i < n && (unsigned)(s[i] - '0') < 10u; i++, digits++) {
        const unsigned c = (unsigned)(s[i] - '0');
        if (m == 0 && c == 0) continue;
        if (sig == 19) {
            slow = 1;
            continue;
        }
        m = m * 10 + c;
        sig++;
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && (unsigned)(s[i] - '0') < 10u; i++, digits++) {
            const unsigned c = (unsigned)(s[i] - '0');
            if (m == 0 && c == 0) {
                e10--;
                continue;
            }
            if (sig == 19) {
                slow = 1;
                continue;
            }
            m = m * 10 + c;
            sig++;
            e10--;
        }
    }
    if (digits == 0) return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '-' || s[i] == '+')) eneg = s[i++] == '-';
        int64_t x = 0;
        int ed = 0;
        for (; i < n && (unsigned)(s[i] - '0') < 10u; i++, ed++) {
            if (x < 100000) x = x * 10 + (s[i] - '0');
        }
        if (ed == 0) return -1;
        e10 += eneg ? -x : x;
    }
    if (i != n) return -1;
    if (slow) return 1;
    double v;
    if (m == 0) {
        v = 0.0;
    } else if (m <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
        v = e10 < 0 ? (double)m / exact_pow10[-e10] : (double)m * exact_pow10[e10];
    }
#ifdef __SIZEOF_INT128__
    else if (e10 < 0 && e10 >= -27) {
        /* m / 10^k = (m << s) / 5^k * 2^-(s+k): a quotient of at least 64 bits and a sticky remainder */
        const int k = (int)-e10;
        const int s_ = 127 - (64 - __builtin_clzll(m));
        const u128 num = (u128)m << s_;
        const u128 q = num / pow5_u64[k];
        const int sticky = (num % pow5_u64[k]) != 0;
        v = round_scaled(q, sticky, -(s_ + k));
    } else if (e10 >= 0 && e10 <= 19) {
        v = round_scaled((u128)m * pow10_u64[e10], 0, 0);
    }
#endif
    else {
        return 1;
    }
    *out = neg ? -v : v;
    return 0;
}

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
    qdict_t qd;
    unsigned char *arena;          /* the query ids, copied out of the buffer once scanned */
    PyThreadState *thread; /* while the GIL is released */
} job_t;

enum { OK = 0, IRREGULAR = 1, NO_MEMORY = 2 };

/* The general conversion, for the rare long decimal: takes the GIL for the call. */
static int slow_double(PyThreadState **thread, const unsigned char *s, int32_t n, double *out) {
    char text[72];
    if (n >= (int32_t)sizeof(text)) return -1;
    memcpy(text, s, (size_t)n);
    text[n] = 0;
    PyEval_RestoreThread(*thread);
    char *endp = NULL;
    const double v = PyOS_string_to_double(text, &endp, NULL);
    int rc = 0;
    if (PyErr_Occurred() || endp != text + n) {
        PyErr_Clear();
        rc = -1;
    }
    *thread = PyEval_SaveThread();
    *out = v;
    return rc;
}

static int parse_int(const unsigned char *s, int32_t n, int64_t *out) {
    int32_t i = 0;
    int neg = 0;
    if (s[0] == '-') {
        neg = 1;
        i = 1;
    }
    if (i == n || n - i > 18) return -1;
    int64_t v = 0;
    for (; i < n; i++) {
        const unsigned c = (unsigned)(s[i] - '0');
        if (c > 9u) return -1;
        v = v * 10 + (int64_t)c;
    }
    *out = neg ? -v : v;
    return 0;
}

/* Where a field that starts at p ends, eight bytes at a time while eight can be read before `limit`:
 * field_end at the first byte outside 0x21-0x7f, id_end at the first byte outside printable ASCII
 * (0x21-0x7e). In a word w (its first byte lowest), ((w - 0x21..21) | w) & 0x80..80 flags bytes
 * below 0x21 and from 0x80, and ((w & 0x7f..7f) + 0x01..01 | w) & 0x80..80 bytes above 0x7e; a
 * borrow or carry can only flag a byte after a flagged one, so the lowest flag is exactly the first
 * such byte. The text ends in '\n', so the byte loop for the last few bytes stops by itself. No
 * field holds a byte >= 0x80 (one the general reader refuses as not UTF-8, or splits at): where one
 * ends a field, no separator or line end follows, and the line is irregular. */
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
            job->prev_code = qdict_code(&job->qd, q, ql);
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
static const unsigned char *lines_end(const unsigned char *p, const unsigned char *end) {
    while (end > p && end[-1] != '\n') end--;
    return end;
}

/* A copy of the n bytes of a last line without a newline, then '\n' and room for a 16-byte read
 * (n + 17 bytes, to be freed), or NULL when out of memory. */
static unsigned char *tail_copy(const unsigned char *last, size_t n) {
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
static PyObject *count_lines(PyObject *self, PyObject *args) {
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
static int get_buffers(PyObject **objs, Py_buffer *views, const Py_ssize_t *sizes, int n, const char *who) {
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

static PyObject *read_lines(PyObject *self, PyObject *args) {
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
    if (qdict_init(&job.qd) < 0) {
        qdict_free(&job.qd);
        PyErr_NoMemory();
        goto done;
    }
    if (guard_ready_or_error() < 0) {
        qdict_free(&job.qd);
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
    qdict_free(&job.qd);
done:
    while (got > 0) PyBuffer_Release(&views[--got]);
    return result;
}

/* ---------------------------------------------------------------------------------------------- */
/* JSON lines of one shape: {"<id key>": "<id>", "<list key>": [{"<item key>": "<id>", "<value key>": <number>}, ...]} */

#define MAX_KEYS 16

typedef struct {
    int n;
    const char *s[MAX_KEYS];
    Py_ssize_t len[MAX_KEYS];
} keys_t;

/* The index of the key [s, s + n) in k, or -1. */
static int key_at(const keys_t *k, const unsigned char *s, Py_ssize_t n) {
    for (int i = 0; i < k->n; i++) {
        if (k->len[i] != n) continue;
        const unsigned char *t = (const unsigned char *)k->s[i];
        Py_ssize_t c = 0;
        while (c < n && t[c] == s[c]) c++; /* (keys are short: no call to memcmp) */
        if (c == n) return i;
    }
    return -1;
}

static inline int key_in(const keys_t *k, const unsigned char *s, Py_ssize_t n) { return key_at(k, s, n) >= 0; }

/* The bytes a string may hold as they are, here: printable ASCII but '"' and '\\' (no escapes, no
 * control or non-ASCII byte, and never '\n', so every scan stops at a line's end). */
static unsigned char plain[256];

/* An item's bytes as one item of a scan wrote them, around its values: lit[0], value 0, lit[1], value 1,
 * ..., lit[n] (which ends with the item's '}'). A value is the id string's characters (the quotes are
 * in the literals), the score, the rank, or a text string passed over (kind SLOT_ID, SLOT_VALUE,
 * SLOT_RANK, SLOT_TEXT); a null text or version is part of a literal. A scan learns up to ITEM_SHAPES
 * shapes from the items of its first SHAPE_TRIES that no shape matched. Producers write their items
 * alike, so an item whose bytes around its values are a shape's literals is read by matching them and
 * reading the values alone; any other item is read key by key (json_items). Literals the key-by-key
 * reading would read the same way give the same values. */
enum { SLOT_ID, SLOT_VALUE, SLOT_RANK, SLOT_TEXT };
#define SHAPE_SLOTS 4
#define SHAPE_BYTES 72
#define SHAPE_TRIES 64
#define ITEM_SHAPES 2 /* e.g. rankgate retrieve's items with a text, and those with none */
typedef struct {
    int n; /* values */
    int kind[SHAPE_SLOTS];
    int key[SHAPE_SLOTS]; /* SLOT_TEXT: its key's place in nkeys */
    int len[SHAPE_SLOTS + 1];
    unsigned char lit[SHAPE_SLOTS + 1][SHAPE_BYTES + 16]; /* (16 bytes of zeros past each: word reads) */
} item_shape_t;

typedef struct {
    keys_t qkeys, lkeys, ikeys, vkeys, rkeys, nkeys; /* nkeys: item keys taken as null (no value kept) */
    unsigned unkept;     /* bit i: nkeys[i] may also hold a string, passed over (checked) and not kept */
    unsigned counted;    /* bit i: nkeys[i] is one of an item's text keys, at most one in an item; */
    Py_ssize_t texts;    /* items whose text key holds a string */
    int value_kind; /* 0: any JSON number, as a double; 1: an integer literal, as int64 */
    void *values;
    double *ranks;       /* an item's rank (rkeys), NaN where it has none; NULL: no rank key is read */
    Py_ssize_t ranked;   /* items with a rank */
    int extras;          /* other keys of a line's object taken (recorded), not refused */
    int64_t *ex;         /* per other key met: its query, and the key's code in kd */
    Py_ssize_t nex, excap;
    qdict_t kd;          /* the other keys' names, coded in order of first appearance (kd.slots NULL: none yet) */
    unsigned char *vals; /* the other keys' values as they are written, one ',' between two */
    size_t vlen, vcap;
    int32_t *offsets;
    unsigned char *data;
    Py_ssize_t max_items, max_data;
    Py_ssize_t items, data_len;
    const unsigned char *text_end; /* reads of the text stay below this */
    const unsigned char **qids;    /* per query, grown as needed */
    int32_t *qlens;
    int64_t *counts, *lines;
    int64_t *spans;                /* per query: its line's first byte and its '\n', as offsets in the buffer */
    const unsigned char *region;   /* where the bytes being scanned start, at offset `shift` in the buffer */
    Py_ssize_t shift;
    Py_ssize_t queries, qcap;
    int64_t newlines;
    unsigned char *tail; /* a copy of a last line that has no newline */
    PyThreadState *thread;
    item_shape_t shapes[ITEM_SHAPES]; /* the bytes around the values of items written alike */
    int nshapes, shape_tries, last_shape; /* shapes learned; items looked at for one; the last matched */
    Py_ssize_t shaped;   /* items read by their values alone */
    unsigned char *arena, *karena; /* the query ids and other keys, copied out of the buffer once scanned */
    const unsigned char *from, *to; /* the bytes to scan (for jscan_owned) */
} jjob_t;

#define SKIP_WS(p)                                        \
    while (*(p) == ' ' || *(p) == '\t' || *(p) == '\r') \
    (p)++

static int jjob_grow(jjob_t *j) {
    const Py_ssize_t cap = j->qcap ? j->qcap * 2 : 4096;
    const unsigned char **qids = (const unsigned char **)realloc(j->qids, (size_t)cap * sizeof(*qids));
    if (!qids) return -1;
    j->qids = qids;
    int32_t *qlens = (int32_t *)realloc(j->qlens, (size_t)cap * sizeof(*qlens));
    if (!qlens) return -1;
    j->qlens = qlens;
    int64_t *counts = (int64_t *)realloc(j->counts, (size_t)cap * sizeof(*counts));
    if (!counts) return -1;
    j->counts = counts;
    int64_t *lines = (int64_t *)realloc(j->lines, (size_t)cap * sizeof(*lines));
    if (!lines) return -1;
    j->lines = lines;
    int64_t *spans = (int64_t *)realloc(j->spans, (size_t)cap * 2 * sizeof(*spans));
    if (!spans) return -1;
    j->spans = spans;
    j->qcap = cap;
    return 0;
}

static void jjob_free(jjob_t *j) {
    free(j->ex);
    free(j->vals);
    if (j->kd.slots) qdict_free(&j->kd);
    free(j->qids);
    free(j->qlens);
    free(j->counts);
    free(j->lines);
    free(j->spans);
    free(j->tail);
    free(j->arena);
    free(j->karena);
}

/* The JSON number at *pp into *out (kind 0: a double, 1: an int64); *pp moves past it. What Python's json module gives, then
 * float() (runs) or int() (grades): correctly rounded; an integer literal's zero is +0.0 ("-0" is
 * the int 0); not finite, another notation, or (value_kind 1) not an integer of at most 18 digits:
 * IRREGULAR. */
static int json_number(jjob_t *j, const unsigned char **pp, int kind, void *out) {
    const unsigned char *p = *pp, *const s = p;
    int is_int = 1;
    uint64_t whole = 0; /* the integer part's value while it has at most 15 digits */
    if (*p == '-') p++;
    const unsigned char *const digits = p;
    if (*p == '0') {
        p++;
    } else if ((unsigned)(*p - '1') < 9u) {
        do whole = whole * 10 + (uint64_t)(*p++ - '0');
        while ((unsigned)(*p - '0') < 10u && p - digits < 15);
        while ((unsigned)(*p - '0') < 10u) p++;
    } else {
        return IRREGULAR;
    }
    if (*p == '.') {
        p++;
        if ((unsigned)(*p - '0') >= 10u) return IRREGULAR;
        do p++;
        while ((unsigned)(*p - '0') < 10u);
        is_int = 0;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if ((unsigned)(*p - '0') >= 10u) return IRREGULAR;
        do p++;
        while ((unsigned)(*p - '0') < 10u);
        is_int = 0;
    }
    if (p - s > 64) return IRREGULAR;
    const int32_t n = (int32_t)(p - s);
    *pp = p;
    if (kind == 0 && is_int && p - digits <= 15) { /* (a rank, an integer score) exact as a double: no parse */
        *(double *)out = *s == '-' && whole ? -(double)whole : (double)whole; /* ("-0" is the int 0: +0.0) */
        return OK;
    }
    if (kind == 0) {
        double v;
        int rc = parse_double(s, n, &v);
        if (rc == 1) rc = slow_double(&j->thread, s, n, &v);
        if (rc != 0 || !isfinite(v)) return IRREGULAR;
        if (is_int && v == 0.0) v = 0.0;
        *(double *)out = v;
    } else {
        int64_t v;
        if (!is_int || parse_int(s, n, &v) != 0) return IRREGULAR;
        *(int64_t *)out = v;
    }
    return OK;
}

/* A key at *pp ('"' expected): its bytes, then past the ':' and the spaces after it. */
static int json_key(const unsigned char **pp, const unsigned char **key, Py_ssize_t *len) {
    const unsigned char *p = *pp;
    if (*p != '"') return IRREGULAR;
    const unsigned char *const k = ++p;
    while (plain[*p]) p++;
    if (*p != '"') return IRREGULAR;
    *key = k;
    *len = p - k;
    p++;
    SKIP_WS(p);
    if (*p != ':') return IRREGULAR;
    p++;
    SKIP_WS(p);
    *pp = p;
    return OK;
}

/* After a member or element: past a ',' (1) or the closing byte (0); anything else: -1. */
static int json_next(const unsigned char **pp, unsigned char close) {
    const unsigned char *p = *pp;
    SKIP_WS(p);
    if (*p == ',') {
        p++;
        SKIP_WS(p);
        *pp = p;
        return 1;
    }
    if (*p != close) return -1;
    *pp = p + 1;
    return 0;
}

/* The value of the 4 hex digits at p, or -1 (stops at the first byte that is not one: never past a line). */
static inline int hex4(const unsigned char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        const unsigned h = p[i], l = h | 0x20u;
        if (h - '0' < 10u) {
            v = v * 16 + (int)(h - '0');
        } else if (l - 'a' < 6u) {
            v = v * 16 + (int)(l - 'a' + 10);
        } else {
            return -1;
        }
    }
    return v;
}

/* Past the JSON string at *pp ('"' expected), which is not kept: checked as Python's json module reads
 * it (a valid escape, no control byte; UTF-8 as Python's decoder takes it: no overlong form, no
 * surrogate, nothing past U+10FFFF). A \u escape of half a surrogate pair without its other half is
 * IRREGULAR too (no UTF-8 text holds it: the parser names it). Runs of plain bytes are passed 8 at a
 * time below `limit`. */
static int json_string_pass(const unsigned char **pp, const unsigned char *limit) {
    const unsigned char *p = *pp;
    if (*p != '"') return IRREGULAR;
    p++;
    for (;;) {
        for (; limit - p >= 8; p += 8) { /* (a byte < 0x20, '"', '\\' or >= 0x80 stops the run) */
            uint64_t w;
            memcpy(&w, p, 8);
            const uint64_t quote = w ^ (RG_ONES * 0x22), slash = w ^ (RG_ONES * 0x5c);
            /* (the first flagged byte is exact: a borrow only flags bytes after it) */
            const uint64_t stop = (((w - RG_ONES * 0x20) & ~w) | ((quote - RG_ONES) & ~quote) |
                                   ((slash - RG_ONES) & ~slash) | w) & RG_HIGHS;
            if (stop) {
                p = first_flagged(p, stop);
                break;
            }
        }
        const unsigned char c = *p;
        if (c == '"') break;
        if (c == '\\') {
            const unsigned char e = p[1];
            if (e == 'u') {
                const int v = hex4(p + 2);
                if (v < 0) return IRREGULAR;
                if (v >= 0xD800 && v <= 0xDBFF) { /* a surrogate pair is one character; a lone half is not */
                    const int w = p[6] == '\\' && p[7] == 'u' ? hex4(p + 8) : -1;
                    if (w < 0xDC00 || w > 0xDFFF) return IRREGULAR;
                    p += 12;
                    continue;
                }
                if (v >= 0xDC00 && v <= 0xDFFF) return IRREGULAR;
                p += 6;
            } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
            } else {
                return IRREGULAR;
            }
        } else if (c < 0x20) {
            return IRREGULAR; /* (a line's end among them) */
        } else if (c < 0x80) {
            p++;
        } else { /* one UTF-8 sequence; a continuation byte is 0x80-0xBF, so a line end stops it */
            int more;
            unsigned lo = 0x80, hi = 0xBF;
            if (c >= 0xC2 && c <= 0xDF) {
                more = 1;
            } else if (c >= 0xE0 && c <= 0xEF) {
                more = 2;
                if (c == 0xE0) lo = 0xA0;
                if (c == 0xED) hi = 0x9F;
            } else if (c >= 0xF0 && c <= 0xF4) {
                more = 3;
                if (c == 0xF0) lo = 0x90;
                if (c == 0xF4) hi = 0x8F;
            } else {
                return IRREGULAR;
            }
            if (p[1] < lo || p[1] > hi) return IRREGULAR;
            for (int i = 2; i <= more; i++) {
                if ((p[i] & 0xC0) != 0x80) return IRREGULAR;
            }
            p += more + 1;
        }
    }
    *pp = p + 1;
    return OK;
}

static int use_shapes = 1; /* item_shapes(False): every item key by key (tests compare the two) */
static Py_ssize_t shaped_total = 0; /* items read by their values alone (with the GIL: after a scan) */

/* Whether the n bytes at t are lit's (lit has 16 zero bytes past its n), reading no byte past end. */
static inline int same_bytes(const unsigned char *t, const unsigned char *lit, int n, const unsigned char *end) {
    if (end - t < n) return 0;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_BIG_ENDIAN__ /* (the masks take the first byte lowest) */
    if (n <= 16 && end - t >= 16) { /* two words, the bytes past n masked off */
        uint64_t a0, a1, b0, b1;
        memcpy(&a0, t, 8);
        memcpy(&a1, t + 8, 8);
        memcpy(&b0, lit, 8);
        memcpy(&b1, lit + 8, 8);
        const uint64_t m0 = n >= 8 ? ~0ULL : (1ULL << (8 * n)) - 1;
        const uint64_t m1 = n >= 16 ? ~0ULL : n <= 8 ? 0 : (1ULL << (8 * (n - 8))) - 1;
        return ((a0 ^ b0) & m0) == 0 && ((a1 ^ b1) & m1) == 0;
    }
#endif
    return memcmp(t, lit, (size_t)n) == 0;
}

/* The shape's literal i: the bytes [from, to), before a value of `kind` (the last literal: no value);
 * 0 when they are too many to keep (the first item then gives no shape). */
static int shape_literal(item_shape_t *sh, int i, int kind, const unsigned char *from, const unsigned char *to) {
    if (i > SHAPE_SLOTS || to - from > SHAPE_BYTES) return 0;
    sh->len[i] = (int)(to - from);
    memset(sh->lit[i], 0, sizeof sh->lit[i]);
    memcpy(sh->lit[i], from, (size_t)(to - from));
    if (i < SHAPE_SLOTS) sh->kind[i] = kind;
    return 1;
}

/* What matching an item against a shape read: its end, the id, the rank, and whether a counted text
 * string was passed over. */
typedef struct {
    const unsigned char *end, *id;
    Py_ssize_t idlen;
    double rank;
    int ranked, text;
} shaped_t;

/* The item at p read by shape sh (its value into the job's values[row], its other values into *o), as
 * json_items reads it key by key; 0 when its bytes around the values are not the shape's, or a value is
 * not one the key-by-key reading takes (which then reads the item, and says so). */
static inline int match_shape(jjob_t *j, const item_shape_t *sh, const unsigned char *p, Py_ssize_t row,
                              Py_ssize_t dl, shaped_t *o) {
    const unsigned char *t = p;
    o->id = NULL;
    o->idlen = 0;
    o->rank = NAN;
    o->ranked = o->text = 0;
    for (int i = 0; i <= sh->n; i++) {
        if (!same_bytes(t, sh->lit[i], sh->len[i], j->text_end)) return 0;
        t += sh->len[i];
        if (i == sh->n) break;
        switch (sh->kind[i]) {
        case SLOT_ID:
            o->id = t;
            while (plain[*t]) t++;
            o->idlen = t - o->id; /* (the next literal starts with the closing quote) */
            if (o->idlen == 0 || dl + o->idlen > j->max_data || dl + o->idlen > INT32_MAX) return 0;
            break;
        case SLOT_VALUE:
            if (json_number(j, &t, j->value_kind,
                            j->value_kind == 0 ? (void *)((double *)j->values + row)
                                               : (void *)((int64_t *)j->values + row)) != OK)
                return 0;
            break;
        case SLOT_RANK:
            if (json_number(j, &t, 0, &o->rank) != OK) return 0;
            o->ranked = 1;
            break;
        default: /* SLOT_TEXT: a string, as the key-by-key reading passes over it */
            if (*t != '"' || !((j->unkept >> sh->key[i]) & 1u) || json_string_pass(&t, j->text_end) != OK) return 0;
            o->text = (int)((j->counted >> sh->key[i]) & 1u);
        }
    }
    o->end = t;
    return 1;
}

/* The list at *pp ('[' expected) of item objects: each exactly one id key (a non-empty string) and
 * one value key (a number), in either order. */
static int json_items(jjob_t *j, const unsigned char **pp, int64_t *count) {
    const unsigned char *p = *pp;
    if (*p != '[') return IRREGULAR;
    p++;
    SKIP_WS(p);
    Py_ssize_t row = j->items, dl = j->data_len;
    const Py_ssize_t first = row;
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            if (*p != '{' || row >= j->max_items) return IRREGULAR;
            if (j->nshapes) { /* an item written as one before it: its values alone */
                shaped_t o;
                int matched = 0;
                for (int k = 0; k < j->nshapes && !matched; k++) {
                    const int at = (j->last_shape + k) % j->nshapes; /* (the last matched first) */
                    if (match_shape(j, &j->shapes[at], p, row, dl, &o)) {
                        matched = 1;
                        j->last_shape = at;
                    }
                }
                if (matched) {
                    if (o.idlen <= 16 && o.id + 16 <= j->text_end) { /* (data has 16 bytes of room past max_data) */
                        memcpy(j->data + dl, o.id, 16);
                    } else {
                        memcpy(j->data + dl, o.id, (size_t)o.idlen);
                    }
                    dl += o.idlen;
                    if (j->ranks) j->ranks[row] = o.rank;
                    j->ranked += o.ranked;
                    j->texts += o.text;
                    j->shaped++;
                    j->offsets[++row] = (int32_t)dl;
                    p = o.end;
                    const int more = json_next(&p, ']');
                    if (more < 0) return IRREGULAR;
                    if (!more) break;
                    continue;
                } /* else: read key by key, from the item's start (which sets every value again) */
            }
            /* while learning a shape: where the literal before the next value starts, and the values so far */
            item_shape_t *const sh = &j->shapes[j->nshapes < ITEM_SHAPES ? j->nshapes : 0];
            const unsigned char *lit_from = p;
            int learn = j->nshapes < ITEM_SHAPES && j->shape_tries < SHAPE_TRIES && use_shapes, slots = 0;
            j->shape_tries += learn;
            p++;
            SKIP_WS(p);
            int have_id = 0, have_value = 0, have_rank = 0, have_text = 0, more, ki;
            if (j->ranks) j->ranks[row] = NAN;
            do {
                const unsigned char *k;
                Py_ssize_t kl;
                if (json_key(&p, &k, &kl) != OK) return IRREGULAR;
                if (key_in(&j->vkeys, k, kl)) {
                    if (have_value) return IRREGULAR;
                    have_value = 1;
                    if (learn) learn = shape_literal(sh, slots++, SLOT_VALUE, lit_from, p);
                    const int rc = json_number(j, &p, j->value_kind,
                                               j->value_kind == 0 ? (void *)((double *)j->values + row)
                                                                  : (void *)((int64_t *)j->values + row));
                    if (rc != OK) return rc;
                    lit_from = p;
                } else if (j->ranks && key_in(&j->rkeys, k, kl)) { /* a rank: any number, as float() gives it */
                    if (have_rank) return IRREGULAR;
                    have_rank = 1;
                    if (learn) learn = shape_literal(sh, slots++, SLOT_RANK, lit_from, p);
                    const int rc = json_number(j, &p, 0, j->ranks + row);
                    if (rc != OK) return rc;
                    j->ranked++;
                    lit_from = p;
                } else if (j->nkeys.n && (ki = key_at(&j->nkeys, k, kl)) >= 0) { /* e.g. "doc_version": null */
                    /* (byte by byte: the comparison stops at the line's end; a value: for the other readers) */
                    const int null = p[0] == 'n' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l';
                    if (learn && !null) { /* (a null is part of the bytes around the values; a string is a value) */
                        sh->key[slots < SHAPE_SLOTS ? slots : 0] = ki;
                        learn = shape_literal(sh, slots++, SLOT_TEXT, lit_from, p);
                    }
                    if (null) {
                        p += 4;
                    } else if (!((j->unkept >> ki) & 1u) || json_string_pass(&p, j->text_end) != OK) {
                        return IRREGULAR;
                    }
                    if (!null) lit_from = p; /* (past the string's closing quote) */
                    if ((j->counted >> ki) & 1u) { /* (two text keys in one item: which one counts is the parser's) */
                        if (have_text) return IRREGULAR;
                        have_text = null ? 1 : 2;
                    }
                } else if (key_in(&j->ikeys, k, kl)) {
                    if (have_id || *p != '"') return IRREGULAR;
                    have_id = 1;
                    if (learn) learn = shape_literal(sh, slots++, SLOT_ID, lit_from, p + 1); /* (with the opening quote) */
                    const unsigned char *const s = ++p;
                    while (plain[*p]) p++;
                    const Py_ssize_t len = p - s;
                    if (*p != '"' || len == 0 || dl + len > j->max_data || dl + len > INT32_MAX) return IRREGULAR;
                    p++;
                    if (len <= 16 && s + 16 <= j->text_end) { /* (data has 16 bytes of room past max_data) */
                        memcpy(j->data + dl, s, 16);
                    } else {
                        memcpy(j->data + dl, s, (size_t)len);
                    }
                    dl += len;
                    lit_from = p - 1; /* (the closing quote starts the next literal) */
                } else {
                    return IRREGULAR;
                }
                more = json_next(&p, '}');
                if (more < 0) return IRREGULAR;
            } while (more);
            if (!have_id || !have_value) return IRREGULAR;
            if (learn && shape_literal(sh, slots, 0, lit_from, p)) { /* (its last literal: to its '}') */
                sh->n = slots;
                j->nshapes++;
            }
            j->texts += have_text == 2;
            j->offsets[++row] = (int32_t)dl;
            more = json_next(&p, ']');
            if (more < 0) return IRREGULAR;
            if (!more) break;
        }
    }
    *count = row - first;
    j->items = row;
    j->data_len = dl;
    *pp = p;
    return OK;
}

#define MAX_SKIP_DEPTH 64 /* other values nest at most this deep here (deeper lines: the parser's to read) */

/* Past the JSON value at *pp, not checked beyond its extent: the caller decodes it with Python's
 * json module, which refuses what is not one value. Strings are passed with their escapes; a byte
 * below 0x20 inside one (a line end among them), nesting past MAX_SKIP_DEPTH or a byte that no value
 * holds outside strings: IRREGULAR. The value ends before spaces and the ',' or '}' after it. */
static int json_skip(const unsigned char **pp) {
    const unsigned char *p = *pp, *last = NULL; /* the value's last byte so far */
    int depth = 0;
    for (;;) {
        const unsigned char c = *p;
        if (c == '"') {
            p++;
            for (;;) {
                if (*p == '\\') {
                    if (p[1] < 0x20) return IRREGULAR;
                    p += 2;
                } else if (*p == '"') {
                    break;
                } else if (*p < 0x20) {
                    return IRREGULAR;
                } else {
                    p++;
                }
            }
            last = p++;
        } else if (c == '[' || c == '{') {
            if (++depth > MAX_SKIP_DEPTH) return IRREGULAR;
            last = p++;
        } else if (c == ']' || c == '}') {
            if (depth == 0) break;
            depth--;
            last = p++;
        } else if (c == ',') {
            if (depth == 0) break;
            p++;
        } else if (c == ' ' || c == '\t' || c == '\r') {
            p++;
        } else if (c == ':' || c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
                   (c >= 'A' && c <= 'Z')) {
            last = p++;
        } else {
            return IRREGULAR; /* (a line end, a control byte, anything else outside a string) */
        }
    }
    if (!last || depth != 0) return IRREGULAR;
    *pp = last + 1;
    return OK;
}

/* Another key of query q's object: its name [k, k + kl) (coded) and its value's text [v, ve) (kept). */
static int record_extra(jjob_t *j, Py_ssize_t q, const unsigned char *k, Py_ssize_t kl, const unsigned char *v,
                        const unsigned char *ve) {
    if (j->nex == j->excap) {
        const Py_ssize_t cap = j->excap ? j->excap * 2 : 1024;
        int64_t *ex = (int64_t *)realloc(j->ex, (size_t)cap * 2 * sizeof(int64_t));
        if (!ex) return NO_MEMORY;
        j->ex = ex;
        j->excap = cap;
    }
    if (!j->kd.slots && qdict_init(&j->kd) < 0) return NO_MEMORY;
    const int32_t code = kl > INT32_MAX ? -1 : qdict_code(&j->kd, k, (int32_t)kl);
    if (code < 0) return NO_MEMORY;
    const size_t n = (size_t)(ve - v), need = j->vlen + n + 1;
    if (need > j->vcap) {
        size_t cap = j->vcap ? j->vcap : 1 << 16;
        while (cap < need) cap *= 2;
        unsigned char *vals = (unsigned char *)realloc(j->vals, cap);
        if (!vals) return NO_MEMORY;
        j->vals = vals;
        j->vcap = cap;
    }
    if (j->vlen) j->vals[j->vlen++] = ',';
    memcpy(j->vals + j->vlen, v, n);
    j->vlen += n;
    int64_t *e = j->ex + 2 * j->nex++;
    e[0] = q;
    e[1] = code;
    return OK;
}

/* Lines of [p, end), which ends in '\n' (see scan). */
static int jscan(jjob_t *j, const unsigned char *p, const unsigned char *const end) {
    while (p < end) {
        const unsigned char *const line = p;
        SKIP_WS(p);
        if (*p == '\n') { /* a blank line */
            p++;
            j->newlines++;
            continue;
        }
        if (*p != '{') return IRREGULAR;
        if (j->queries == j->qcap && jjob_grow(j) < 0) return NO_MEMORY;
        const Py_ssize_t q = j->queries;
        p++;
        SKIP_WS(p);
        int have_q = 0, have_l = 0, more;
        int64_t count = 0;
        do {
            const unsigned char *k;
            Py_ssize_t kl;
            if (json_key(&p, &k, &kl) != OK) return IRREGULAR;
            if (key_in(&j->qkeys, k, kl)) {
                if (have_q || *p != '"') return IRREGULAR;
                have_q = 1;
                const unsigned char *const s = ++p;
                while (plain[*p]) p++;
                if (*p != '"' || p == s || p - s > INT32_MAX) return IRREGULAR;
                j->qids[q] = s;
                j->qlens[q] = (int32_t)(p - s);
                p++;
            } else if (key_in(&j->lkeys, k, kl)) {
                if (have_l) return IRREGULAR;
                have_l = 1;
                const int rc = json_items(j, &p, &count);
                if (rc != OK) return rc;
            } else if (j->extras) {
                const unsigned char *const v = p;
                int rc = json_skip(&p);
                if (rc == OK) rc = record_extra(j, q, k, kl, v, p);
                if (rc != OK) return rc;
            } else {
                return IRREGULAR;
            }
            more = json_next(&p, '}');
            if (more < 0) return IRREGULAR;
        } while (more);
        if (!have_q || !have_l) return IRREGULAR;
        SKIP_WS(p);
        if (*p != '\n') return IRREGULAR;
        j->counts[q] = count;
        j->lines[q] = j->newlines + 1;
        j->spans[2 * q] = j->shift + (line - j->region);
        j->spans[2 * q + 1] = j->shift + (p - j->region);
        j->queries = q + 1;
        p++;
        j->newlines++;
    }
    return OK;
}

/* The whole region: all complete lines in place, then a last line without a newline from a copy. */
static int jscan_all(jjob_t *j, const unsigned char *p, const unsigned char *end);

/* jscan_all over [j->from, j->to), then the query ids and other keys copied out of the buffer (see own_ids). */
static int jscan_owned(void *arg) {
    jjob_t *j = (jjob_t *)arg;
    const int status = jscan_all(j, j->from, j->to);
    if (status != OK) return status;
    if (own_ids(j->qids, j->qlens, (size_t)j->queries, &j->arena) < 0) return NO_MEMORY;
    if (j->kd.slots && own_ids(j->kd.ids, j->kd.lens, j->kd.n, &j->karena) < 0) return NO_MEMORY;
    return OK;
}

static int jscan_all(jjob_t *j, const unsigned char *p, const unsigned char *end) {
    const unsigned char *last = lines_end(p, end);
    j->text_end = end;
    int status = jscan(j, p, last);
    if (status != OK || last == end) return status;
    const size_t n = (size_t)(end - last);
    if (!(j->tail = tail_copy(last, n))) return NO_MEMORY;
    j->shift += last - j->region; /* (the copy's bytes stand at the last line's offset) */
    j->region = j->tail;
    j->text_end = j->tail + n + 17;
    status = jscan(j, j->tail, j->tail + n + 1);
    j->newlines--; /* (the '\n' added to the copy) */
    return status;
}

static int parse_keys(PyObject *tuple, keys_t *keys) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) < 1 || PyTuple_GET_SIZE(tuple) > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "read_jsonl: keys must be a tuple of 1 to 16 strings");
        return -1;
    }
    keys->n = (int)PyTuple_GET_SIZE(tuple);
    for (int i = 0; i < keys->n; i++) {
        PyObject *o = PyTuple_GET_ITEM(tuple, i);
        if (!PyUnicode_Check(o)) {
            PyErr_SetString(PyExc_TypeError, "read_jsonl: keys must be strings");
            return -1;
        }
        keys->s[i] = PyUnicode_AsUTF8AndSize(o, &keys->len[i]); /* (valid while the tuple lives) */
        if (!keys->s[i]) return -1;
    }
    return 0;
}

static PyObject *read_jsonl(PyObject *self, PyObject *args) {
    PyObject *o_buf, *o_keys[4], *o_values, *o_offsets, *o_data, *o_rkeys = NULL, *o_ranks = Py_None, *o_nkeys = NULL;
    Py_ssize_t start, stop;
    int value_kind, extras = 0;
    unsigned int unkept = 0, counted = 0;
    if (!PyArg_ParseTuple(args, "OnnOOOOiOOO|OOpOII", &o_buf, &start, &stop, &o_keys[0], &o_keys[1], &o_keys[2],
                          &o_keys[3], &value_kind, &o_values, &o_offsets, &o_data, &o_rkeys, &o_ranks, &extras,
                          &o_nkeys, &unkept, &counted))
        return NULL;
    jjob_t job;
    memset(&job, 0, sizeof(job));
    keys_t *keys[4] = {&job.qkeys, &job.lkeys, &job.ikeys, &job.vkeys};
    for (int i = 0; i < 4; i++)
        if (parse_keys(o_keys[i], keys[i]) < 0) return NULL;
    if (o_nkeys && o_nkeys != Py_None && parse_keys(o_nkeys, &job.nkeys) < 0) return NULL;
    const int with_ranks = o_ranks != Py_None;
    if (with_ranks && (!o_rkeys || parse_keys(o_rkeys, &job.rkeys) < 0)) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "read_jsonl: ranks need rank keys");
        return NULL;
    }
    if (value_kind < 0 || value_kind > 1) {
        PyErr_SetString(PyExc_ValueError, "read_jsonl: value_kind is 0 (float64) or 1 (int64)");
        return NULL;
    }
    Py_buffer views[5];
    PyObject *objs[5] = {o_buf, o_values, o_offsets, o_data, o_ranks};
    const Py_ssize_t sizes[5] = {1, 8, 4, 1, 8};
    const int nviews = with_ranks ? 5 : 4;
    PyObject *result = NULL;
    int got = get_buffers(objs, views, sizes, nviews, "read_jsonl");
    if (got < nviews) goto done;
    if (start < 0 || stop < start || stop > views[0].len || views[2].len / 4 != views[1].len / 8 + 1 ||
        views[3].len < 16 || (with_ranks && views[4].len != views[1].len)) {
        PyErr_SetString(PyExc_ValueError, "read_jsonl: inconsistent shapes");
        goto done;
    }
    job.value_kind = value_kind;
    job.values = views[1].buf;
    job.offsets = (int32_t *)views[2].buf;
    job.data = (unsigned char *)views[3].buf;
    job.max_items = views[1].len / 8;
    job.max_data = views[3].len - 16;
    job.ranks = with_ranks ? (double *)views[4].buf : NULL;
    job.extras = extras;
    job.unkept = unkept;
    job.counted = counted;
    job.offsets[0] = 0;
    job.region = (const unsigned char *)views[0].buf + start;
    job.shift = start;
    if (guard_ready_or_error() < 0) {
        jjob_free(&job);
        goto done;
    }
    job.from = (const unsigned char *)views[0].buf + start;
    job.to = (const unsigned char *)views[0].buf + stop;
    int cut;
    job.thread = PyEval_SaveThread();
    const int status = guarded(jscan_owned, &job, &cut);
    PyEval_RestoreThread(job.thread);
    shaped_total += job.shaped;
    if (cut) {
        file_cut();
    } else if (status == NO_MEMORY) {
        PyErr_NoMemory();
    } else if (status == IRREGULAR) {
        result = Py_None;
        Py_INCREF(result);
    } else {
        const Py_ssize_t nq = job.queries;
        PyObject *ids = PyList_New(nq);
        for (Py_ssize_t i = 0; ids && i < nq; i++) {
            PyObject *s = PyUnicode_DecodeASCII((const char *)job.qids[i], job.qlens[i], NULL);
            if (!s) {
                Py_CLEAR(ids);
                break;
            }
            PyList_SET_ITEM(ids, i, s);
        }
        const Py_ssize_t nk = job.kd.slots ? (Py_ssize_t)job.kd.n : 0;
        PyObject *keys = ids ? PyList_New(nk) : NULL;
        for (Py_ssize_t i = 0; keys && i < nk; i++) {
            PyObject *s = PyUnicode_DecodeASCII((const char *)job.kd.ids[i], job.kd.lens[i], NULL);
            if (!s) {
                Py_CLEAR(keys);
                break;
            }
            PyList_SET_ITEM(keys, i, s);
        }
        if (!keys) {
            Py_XDECREF(ids);
        } else { /* (no query: empty bytes, not the None that y# makes of a NULL pointer) */
            result = Py_BuildValue("nnLNy#y#n(y#Ny#)ny#", job.items, job.data_len, (long long)job.newlines, ids,
                                   nq ? (const char *)job.counts : "", (Py_ssize_t)(nq * 8),
                                   nq ? (const char *)job.lines : "", (Py_ssize_t)(nq * 8), job.ranked,
                                   job.nex ? (const char *)job.ex : "", (Py_ssize_t)(job.nex * 2 * 8), keys,
                                   job.vlen ? (const char *)job.vals : "", (Py_ssize_t)job.vlen, job.texts,
                                   nq ? (const char *)job.spans : "", (Py_ssize_t)(nq * 16));
        }
    }
    jjob_free(&job); /* (after the ids: one may live in the copied line) */
done:
    while (got > 0) PyBuffer_Release(&views[--got]);
    return result;
}

static int baseline_on = 0; /* set_baseline(True): RANKGATE_NATIVE=baseline */

/* set_baseline(on) -> whether it was on: no CPU-specific path (RANKGATE_NATIVE=baseline). The reader has
 * none, so this only records the request; it is here because the switch calls set_baseline on both
 * extensions (an extension without it is taken as one built from an older source). */
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

/* item_shapes(on) -> whether it was on: read_jsonl reads an item written as the scan's first one by
 * its values alone (on by default); off: every item key by key (tests compare the two). */
static PyObject *item_shapes(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    const int before = use_shapes;
    use_shapes = on;
    return PyBool_FromLong(before);
}

/* shaped_items() -> the items read by their values alone since the last call (tests). */
static PyObject *shaped_items(PyObject *self, PyObject *args) {
    const Py_ssize_t n = shaped_total;
    shaped_total = 0;
    return PyLong_FromSsize_t(n);
}

static PyObject *faults(PyObject *self, PyObject *noargs) {
    return PyLong_FromUnsignedLong(faults_caught);
}

static PyMethodDef methods[] = {
    {"faults", faults, METH_NOARGS, "faults() -> SIGBUS faults of guarded scans caught so far (a file cut short while mapped; tests)"},
    {"shaped_items", shaped_items, METH_NOARGS, "shaped_items() -> items read by their values alone since the last call (tests)"},
    {"item_shapes", item_shapes, METH_VARARGS,
     "item_shapes(on) -> previous: read an item written as the first one by its values alone (tests)"},
    {"set_baseline", set_baseline, METH_VARARGS,
     "set_baseline(on) -> previous: no CPU-specific path (RANKGATE_NATIVE=baseline; the reader has none)"},
    {"variant", variant, METH_NOARGS, "variant() -> 'plain': the reader has no CPU-specific path"},
    {"count_lines", count_lines, METH_VARARGS, "count_lines(buf, start, end) -> number of newlines"},
    {"read_lines", read_lines, METH_VARARGS,
     "read_lines(buf, start, end, ncols, value_col, value_kind, delim, codes, values, offsets, data)"
     " -> (rows, data_bytes, query_ids) or None when the text is not regular"},
    {"read_jsonl", read_jsonl, METH_VARARGS,
     "read_jsonl(buf, start, end, id_keys, list_keys, item_keys, value_keys, value_kind, values, offsets, data"
     "[, rank_keys, ranks, extras, null_keys, unkept_bits, text_bits])"
     " -> (items, data_bytes, newlines, query_ids, counts, lines, ranked, others, texts, line_spans) or None when a"
     " line is not of the shape"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_reader", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__reader(void) {
    for (int c = 0x20; c < 0x7f; c++) plain[c] = c != '"' && c != '\\';
#ifdef __SIZEOF_INT128__
    pow5_u64[0] = 1;
    for (int i = 1; i < 28; i++) pow5_u64[i] = pow5_u64[i - 1] * 5;
    pow10_u64[0] = 1;
    for (int i = 1; i < 20; i++) pow10_u64[i] = pow10_u64[i - 1] * 10;
#endif
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    FileCut = PyErr_NewException("rankgate._native._reader.FileCut", PyExc_OSError, NULL);
    if (!FileCut || PyModule_AddObjectRef(m, "FileCut", FileCut) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

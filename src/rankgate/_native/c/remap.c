/*
 * remap.c (rankgate._native._remap): gold remapping's inner loops (rankgate.goldset.remap). Entry points:
 *
 *   ascii_tokens  the tokens of every ASCII text, lower-cased, as an arrow string array's buffers
 *   shingle_scan  every shingle key of every ASCII text, or the positions of those found among given keys
 *   pair_hits     the (old text, new text) pairs that share rare shingles at enough positions
 *   pick_greedy   remap's greedy picking of new chunks for every old text at once
 *
 * The fallbacks, which give the same tokens, keys, candidates and picks (tests/test_remap_kernels.py compares
 * them): arrow's Unicode tokeniser, numpy's keys and joins, and remap's Python _pick.
 */
#include "native.h"
#include "idtable.h"
#include "remap.h"

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

void rg_remap_init(void) {
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
PyObject *rg_ascii_tokens(PyObject *self, PyObject *args) {
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
    uint64_t h = idt_mix64(first ^ ((uint64_t)len * 0x9E3779B97F4A7C15ULL));
    for (int32_t k = 8; k < len; k += 8)
        h = idt_mix64(h ^ (padded ? tok_word8(p + k, len - k) : tok_word(p + k, len - k)));
    return h;
}

/* a bit of the filter: the top bits of another multiplicative hash (the tables use idt_mix64's low bits) */
#define FILTER_BIT(h, shift) ((size_t)(((h) * 0x9E3779B97F4A7C15ULL) >> (64 - (shift))))

/* shingle_scan's two tables (idtable.h), of at least TABLE_LEAST slots. The vocabulary: a token's slot holds its
 * first 8 bytes (key), its number (value) and its length (aux), at the place of its tok_hash_of. The keys to find:
 * a key's slot holds it (key), its position in uniq (value) and its finds so far (aux: kept in the slot, which is
 * in cache when a find counts). Both are large: on huge pages where the system gives them (idt_alloc). */
enum { TABLE_LEAST = 16 };

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
PyObject *rg_shingle_scan(PyObject *self, PyObject *args) {
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
    idtable_t vocab = {NULL, 0}, wanted = {NULL, 0};
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
    /* the keys to find are behind a bit filter (8 bits per key) that rules most absent keys out with one
     * read of a smaller table */
    int fshift = 6; /* the filter has 2**fshift bits */
    if (have_uniq) {
        while (((size_t)1 << fshift) < (size_t)nu * 8) fshift++;
    }
    /* a block: texts until SCAN_BLOCK_BYTES are passed (or SCAN_BLOCK_TEXTS texts); a text of L bytes
     * has at most (L + 1) / 2 tokens and no more shingles than tokens */
    const size_t block_bytes = (size_t)SCAN_BLOCK_BYTES + (size_t)longest;
    const size_t most = block_bytes / 2 + SCAN_BLOCK_TEXTS + 2;
    const int have_vocab = idt_alloc(&vocab, (size_t)nv, TABLE_LEAST) == 0;
    ids = (int64_t *)malloc(most * sizeof(int64_t));
    keys = (int64_t *)malloc(most * sizeof(int64_t));
    th = (uint64_t *)malloc(most * sizeof(uint64_t));
    sh = (uint64_t *)malloc(most * sizeof(uint64_t));
    tpos = (int32_t *)malloc(most * sizeof(int32_t));
    tlen = (int32_t *)malloc(most * sizeof(int32_t));
    tstart = (int64_t *)malloc((SCAN_BLOCK_TEXTS + 1) * sizeof(int64_t));
    sstart = (int64_t *)malloc((SCAN_BLOCK_TEXTS + 1) * sizeof(int64_t));
    lower = (unsigned char *)calloc(block_bytes + 8, 1);
    const int have_wanted = !have_uniq || idt_alloc(&wanted, (size_t)nu, TABLE_LEAST) == 0;
    if (have_uniq) {
        bits = (uint64_t *)calloc(((size_t)1 << fshift) / 64, sizeof(uint64_t));
    }
    /* every shingle there can be; pages never written are never mapped */
    const Py_ssize_t bound = n ? ((Py_ssize_t)o[n] - (Py_ssize_t)o[0] + n) / 2 + n : 0;
    outb = PyBytes_FromStringAndSize(NULL, bound * 8);
    if (!outb) goto done;
    int64_t *outv = (int64_t *)PyBytes_AS_STRING(outb);
    Py_ssize_t n_out = 0;
    if (!have_vocab || !ids || !keys || !th || !sh || !tpos || !tlen || !tstart || !sstart || !lower ||
        !have_wanted || (have_uniq && !bits)) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    idt_reset(&vocab, (size_t)nv, TABLE_LEAST);
    for (Py_ssize_t v = 0; v < nv; v++) { /* (distinct tokens: each takes the first empty slot from its place) */
        const int32_t len = vo[v + 1] - vo[v];
        const uint64_t first = tok_word(vd + vo[v], len);
        size_t q = idt_start(&vocab, tok_hash_of(first, vd + vo[v], len, 0));
        while (vocab.slots[q].value != IDT_EMPTY) q = idt_next(&vocab, q);
        vocab.slots[q].key = (int64_t)first;
        vocab.slots[q].value = (int32_t)v;
        vocab.slots[q].aux = len;
    }
    if (have_uniq) {
        idt_reset(&wanted, (size_t)nu, TABLE_LEAST);
        for (Py_ssize_t u = 0; u < nu; u++) {
            const uint64_t h = idt_mix64((uint64_t)uk[u]);
            const size_t f = FILTER_BIT(h, fshift);
            bits[f >> 6] |= 1ULL << (f & 63);
            idslot_t *slot = idt_place(&wanted, uk[u]);
            slot->key = uk[u];
            slot->value = (int32_t)u;
            slot->aux = 0;
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
                    __builtin_prefetch(&vocab.slots[idt_start(&vocab, th[t])]);
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
            for (size_t q = idt_start(&vocab, th[s]); vocab.slots[q].value != IDT_EMPTY; q = idt_next(&vocab, q)) {
                const idslot_t *e = &vocab.slots[q];
                if ((uint64_t)e->key == word && e->aux == l &&
                    (l <= 8 || memcmp(vd + vo[e->value] + 8, w + 8, (size_t)l - 8) == 0)) {
                    id = e->value;
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
                    sh[ns] = idt_mix64((uint64_t)keys[ns]);
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
                sh[s] = idt_start(&wanted, sh[s]) + 1;
                __builtin_prefetch(&wanted.slots[sh[s] - 1]);
            } else {
                sh[s] = 0;
            }
        }
        /* 5. the lookups, in text order */
        for (Py_ssize_t k = 0; k < i1 - i0; k++) {
            const Py_ssize_t before = n_out;
            for (Py_ssize_t s = sstart[k]; s < sstart[k + 1]; s++) {
                if (!sh[s]) continue;
                for (size_t q = (size_t)sh[s] - 1; wanted.slots[q].value != IDT_EMPTY; q = idt_next(&wanted, q)) {
                    idslot_t *e = &wanted.slots[q];
                    if (e->key == keys[s]) {
                        outv[n_out++] = e->value;
                        if (e->aux < INT32_MAX) e->aux++; /* only df <= MAX_DF matters */
                        break;
                    }
                }
            }
            found_n[i0 + k] = n_out - before;
        }
    }
    if (dfv) {
        for (size_t q = 0; q <= wanted.mask; q++) {
            if (wanted.slots[q].value != IDT_EMPTY) dfv[wanted.slots[q].value] += wanted.slots[q].aux;
        }
    }
    Py_END_ALLOW_THREADS
    if (_PyBytes_Resize(&outb, n_out * 8) == 0) { /* a shrink: the allocator keeps the pages in place */
        result = outb;
        outb = NULL;
    }
done:
    idt_free(&vocab);
    idt_free(&wanted);
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
PyObject *rg_pair_hits(PyObject *self, PyObject *args) {
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

PyObject *rg_pick_greedy(PyObject *self, PyObject *args) {
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

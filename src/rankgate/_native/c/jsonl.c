/*
 * jsonl.c (rankgate._native._reader): JSON lines of the common run and gold shape, read straight from a
 * memory map. Entry points:
 *
 *   read_jsonl    a region's JSON lines into caller-allocated arrays, or None when a line is not of the shape
 *   item_shapes   whether read_jsonl reads an item written as one before it by its values alone (tests)
 *   shaped_items  the items read by their values alone since the last call (tests)
 *
 *   read_jsonl(buf, start, end, id_keys, list_keys, item_keys, value_keys, value_kind, values, offsets,
 *              data[, rank_keys, ranks, extras, null_keys, unkept_bits, text_bits])
 *       -> (items, data_bytes, newlines, query_ids, counts, lines, ranked, others, texts, line_spans) | None
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
 * (rankgate.io: Python's json module) take the file. Repeated query ids are for the caller to find. With
 * ranks (float64, as long as values), an item may also hold one rank key (rank_keys), any finite number read
 * as value_kind 0 reads it, into ranks; an item without one gets NaN; ranked counts the items with one. With
 * extras, a line's object may hold other keys of any value: each is passed over (json_skip), and others is
 * (records, names, values): per key met, in order, its query and its name's code (int64 bytes, two each;
 * idtable.h's iddict_t), the names by code (in order of first appearance), and the values' text joined by
 * '\n', a value a line (no value holds a line break: the caller cuts them apart there, or decodes them with
 * Python's json module as one array, ',' for '\n'). An item may also hold a key of
 * null_keys whose value is null (what a run writes for a chunk without a text or version); another value of
 * such a key returns None. Items of a scan give the bytes around their values (item_shape_t, up to
 * ITEM_SHAPES of them); an item whose bytes around its values are one of those is read by matching them and
 * reading its values alone, any other key by key, with the same result. Numbers: decimal.h's parse_double.
 * Every scan runs under the SIGBUS guard (guard.c); the scan is plain C, the same on every CPU.
 */
#include "native.h"
#include "idtable.h"
#include "reader.h"
#include "decimal.h"

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
    iddict_t kd;         /* the other keys' names, coded in order of first appearance (kd.cap 0: none yet) */
    unsigned char *vals; /* the other keys' values as they are written, one '\n' between two */
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
    if (j->kd.cap) iddict_free(&j->kd);
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
    if (!j->kd.cap && iddict_init(&j->kd) < 0) return NO_MEMORY;
    const int32_t code = kl > INT32_MAX ? -1 : iddict_code(&j->kd, k, (int32_t)kl);
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
    if (j->vlen) j->vals[j->vlen++] = '\n'; /* (no value holds one: a value lies within its line) */
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
    if (j->kd.cap && own_ids(j->kd.ids, j->kd.lens, j->kd.n, &j->karena) < 0) return NO_MEMORY;
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

PyObject *rg_read_jsonl(PyObject *self, PyObject *args) {
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
        const Py_ssize_t nk = job.kd.cap ? (Py_ssize_t)job.kd.n : 0;
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

/* item_shapes(on) -> whether it was on: read_jsonl reads an item written as the scan's first one by
 * its values alone (on by default); off: every item key by key (tests compare the two). */
PyObject *rg_item_shapes(PyObject *self, PyObject *args) {
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    const int before = use_shapes;
    use_shapes = on;
    return PyBool_FromLong(before);
}

/* shaped_items() -> the items read by their values alone since the last call (tests). */
PyObject *rg_shaped_items(PyObject *self, PyObject *args) {
    const Py_ssize_t n = shaped_total;
    shaped_total = 0;
    return PyLong_FromSsize_t(n);
}

void rg_jsonl_init(void) {
    for (int c = 0x20; c < 0x7f; c++) plain[c] = c != '"' && c != '\\';
}

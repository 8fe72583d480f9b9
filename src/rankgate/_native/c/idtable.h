/*
 * idtable.h: the one hash table of ids in rankgate's compiled code, shared by the three extensions.
 * Internal: no entry point. Its users:
 *
 *   rank.c    join_grades, rank_metrics: a query's judgements (item code -> its place and grade), and
 *             segments_distinct: a segment's codes met so far; one small table, emptied for each query
 *             (it stays in the core's L1 cache);
 *   lines.c, jsonl.c  query ids, and the other keys of JSON lines (bytes -> a code in order of first
 *             appearance: iddict_t below), one table that grows;
 *   remap.c   shingle_scan's vocabulary (token -> its number) and the shingle keys it looks for (key ->
 *             position, with the key's finds counted in its slot), two large tables built once.
 *
 * Open addressing with linear probing over one array of 16-byte slots (four to a cache line): an id
 * starts at its hash masked to the table's size (a power of two, at least twice the ids, so at most
 * half full) and goes to the first empty slot from there. A slot holds a 64-bit key, a value (>= 0; -1
 * marks an empty slot) and a second 32-bit word that its user gives a meaning (a grade, a length, a count).
 * Integer ids are their own key and hash with idt_mix64 (idt_find, idt_place). Byte ids hash with
 * idt_hash_bytes and keep the hash as key and their length in aux, their bytes being compared through
 * the value (iddict_t); remap's tokens hash their own way (remap.c: tok_hash_of) and keep their first 8
 * bytes as key. Where an id lands never changes what a lookup finds: no result depends on the hash.
 */
#ifndef RANKGATE_IDTABLE_H
#define RANKGATE_IDTABLE_H

#include "native.h"
#if defined(__linux__)
#include <sys/mman.h>
#endif

typedef struct {
    int64_t key;
    int32_t value; /* what the id maps to (>= 0); IDT_EMPTY: no id */
    int32_t aux;   /* the user's: a length, a count */
} idslot_t;

#define IDT_EMPTY (-1) /* (all bits set: idt_reset empties a table with one memset) */

typedef struct {
    idslot_t *slots;
    size_t mask; /* the slots in use, minus one (a power of two minus one) */
} idtable_t;

/* The hash of an integer id (the finaliser of MurmurHash3: every bit of x moves the low bits). */
static inline uint64_t idt_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

/* The hash of a byte id, eight bytes at a time. */
static inline uint64_t idt_hash_bytes(const unsigned char *p, size_t n) {
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

/* The mask of a table for `entries` ids: at least `least` slots (a power of two) and twice the ids. */
static inline size_t idt_mask_for(size_t entries, size_t least) {
    size_t size = least;
    while (size < entries * 2) size <<= 1;
    return size - 1;
}

/* Room for up to `entries` ids (and at least `least` slots), to be emptied by idt_reset before use; 0, or -1 when
 * out of memory (also for more ids than a value can number). A table of 2 MiB or more is on huge pages where the
 * system gives them on request: a random probe then rarely misses the TLB, and the table takes fewer page faults. */
static inline int idt_alloc(idtable_t *t, size_t entries, size_t least) {
    t->slots = NULL;
    t->mask = 0;
    if (entries > (size_t)INT32_MAX) return -1;
    const size_t bytes = (idt_mask_for(entries, least) + 1) * sizeof(idslot_t);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    const size_t huge = (size_t)1 << 21;
    if (bytes >= huge) {
        void *p = NULL;
        if (posix_memalign(&p, huge, (bytes + huge - 1) & ~(huge - 1)) != 0) return -1;
        madvise(p, (bytes + huge - 1) & ~(huge - 1), MADV_HUGEPAGE);
        t->slots = (idslot_t *)p;
        return 0;
    }
#endif
    t->slots = (idslot_t *)malloc(bytes);
    return t->slots ? 0 : -1;
}

static inline void idt_free(idtable_t *t) {
    free(t->slots);
    t->slots = NULL;
}

/* An empty table for `entries` ids (at most those idt_alloc made room for, with the same `least`): its slots set to
 * all ones, so that a query's small table is emptied by one memset of a few hundred bytes. */
static inline void idt_reset(idtable_t *t, size_t entries, size_t least) {
    t->mask = idt_mask_for(entries, least);
    memset(t->slots, 0xff, (t->mask + 1) * sizeof(idslot_t)); /* (every word -1: value IDT_EMPTY) */
}

/* Where an id of hash h starts, and the slot probed after q. */
static inline size_t idt_start(const idtable_t *t, uint64_t h) { return (size_t)h & t->mask; }

static inline size_t idt_next(const idtable_t *t, size_t q) { return (q + 1) & t->mask; }

/* The slot of integer id `key`, or NULL. */
static inline idslot_t *idt_find(const idtable_t *t, int64_t key) {
    for (size_t q = idt_start(t, idt_mix64((uint64_t)key));; q = idt_next(t, q)) {
        idslot_t *s = &t->slots[q];
        if (s->value == IDT_EMPTY) return NULL;
        if (s->key == key) return s;
    }
}

/* The slot of integer id `key`, or the empty slot where it goes (value IDT_EMPTY: the caller sets key and value;
 * the table must have room for it). */
static inline idslot_t *idt_place(idtable_t *t, int64_t key) {
    size_t q = idt_start(t, idt_mix64((uint64_t)key));
    while (t->slots[q].value != IDT_EMPTY && t->slots[q].key != key) q = idt_next(t, q);
    return &t->slots[q];
}

/* ---------------------------------------------------------------------------------------------- */
/* Byte ids -> codes 0, 1, 2, ... in order of first appearance, in a table that doubles as it fills (its slots:
 * the bytes' hash as key, the code as value, the length as aux; the bytes are the caller's, by code).
 *
 * Its functions run once per new query or key, not per row, and are kept out of line (IDT_OUT_OF_LINE): inlined
 * into the readers' scanning loops they would take the registers those loops keep their pointers in. */

#if defined(__GNUC__) || defined(__clang__)
#define IDT_OUT_OF_LINE __attribute__((noinline, unused)) static
#else
#define IDT_OUT_OF_LINE static
#endif

typedef struct {
    idtable_t table;
    const unsigned char **ids; /* by code */
    int32_t *lens;
    size_t n, cap;
} iddict_t;

IDT_OUT_OF_LINE int iddict_init(iddict_t *d) {
    d->n = 0;
    d->cap = 512;
    d->ids = (const unsigned char **)malloc(d->cap * sizeof(*d->ids));
    d->lens = (int32_t *)malloc(d->cap * sizeof(*d->lens));
    if (idt_alloc(&d->table, 512, 1024) < 0 || !d->ids || !d->lens) return -1;
    idt_reset(&d->table, 512, 1024);
    return 0;
}

IDT_OUT_OF_LINE void iddict_free(iddict_t *d) {
    idt_free(&d->table);
    free(d->ids);
    free(d->lens);
}

/* The table twice as large, every id moved to its place there (its hash is its key). */
IDT_OUT_OF_LINE int iddict_grow(iddict_t *d) {
    idtable_t grown;
    const size_t entries = d->table.mask + 1;
    if (idt_alloc(&grown, entries, 1024) < 0) return -1;
    idt_reset(&grown, entries, 1024);
    for (size_t i = 0; i <= d->table.mask; i++) {
        const idslot_t s = d->table.slots[i];
        if (s.value == IDT_EMPTY) continue;
        size_t q = idt_start(&grown, (uint64_t)s.key);
        while (grown.slots[q].value != IDT_EMPTY) q = idt_next(&grown, q);
        grown.slots[q] = s;
    }
    idt_free(&d->table);
    d->table = grown;
    return 0;
}

/* The code of p[0:len), adding it if new; -1 when out of memory or past int32. */
IDT_OUT_OF_LINE int32_t iddict_code(iddict_t *d, const unsigned char *p, int32_t len) {
    const uint64_t h = idt_hash_bytes(p, (size_t)len);
    size_t q = idt_start(&d->table, h);
    for (; d->table.slots[q].value != IDT_EMPTY; q = idt_next(&d->table, q)) {
        const idslot_t *s = &d->table.slots[q];
        if ((uint64_t)s->key == h && s->aux == len && memcmp(d->ids[s->value], p, (size_t)len) == 0) return s->value;
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
    d->table.slots[q].key = (int64_t)h;
    d->table.slots[q].value = code;
    d->table.slots[q].aux = len;
    d->ids[d->n] = p;
    d->lens[d->n] = len;
    d->n++;
    if (d->n * 2 > d->table.mask + 1 && iddict_grow(d) < 0) return -1;
    return code;
}

#endif

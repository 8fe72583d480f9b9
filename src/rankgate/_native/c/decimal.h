/*
 * decimal.h: decimal text to numbers, for both readers of rankgate._native._reader (lines.c: TREC columns, jsonl.c:
 * JSON numbers). Internal: no entry point. parse_double: 0 parsed into *out (correctly rounded, as strtod and
 * Python's float() round), 1 valid but for the general conversion, -1 not a number of the form [+-] digits
 * [. digits] [e [+-] digits]; slow_double: that general conversion, Python's own (it takes the GIL from *thread for
 * the call); parse_int: an integer of at most 18 digits (0, else -1). Static inline: each reader compiles them
 * beside its scan (called from another file, they made the JSON scan about 4% slower).
 */
#ifndef RANKGATE_DECIMAL_H
#define RANKGATE_DECIMAL_H

#include "native.h"

/* ---------------------------------------------------------------------------------------------- */
/* Decimal text to double, correctly rounded. */

static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

/* 5^k and 10^k as integers, for the quotients below */
static const uint64_t pow5_u64[28] = {
    1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL, 9765625ULL,
    48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL, 152587890625ULL, 762939453125ULL,
    3814697265625ULL, 19073486328125ULL, 95367431640625ULL, 476837158203125ULL, 2384185791015625ULL,
    11920928955078125ULL, 59604644775390625ULL, 298023223876953125ULL, 1490116119384765625ULL,
    7450580596923828125ULL};
static const uint64_t pow10_u64[20] = {
    1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL, 100000000ULL, 1000000000ULL,
    10000000000ULL, 100000000000ULL, 1000000000000ULL, 10000000000000ULL, 100000000000000ULL,
    1000000000000000ULL, 10000000000000000ULL, 100000000000000000ULL, 1000000000000000000ULL,
    10000000000000000000ULL};

static inline int bit_length128(u128 q) {
    const uint64_t hi = (uint64_t)(q >> 64), lo = (uint64_t)q;
    if (hi) return 128 - __builtin_clzll(hi);
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* (q + f) * 2^b rounded to the nearest double, ties to even, where 0 <= f < 1 and `sticky` says f > 0.
 * Callers guarantee q has at least 55 bits whenever sticky is set, and a normal result. */
static inline double round_scaled(u128 q, int sticky, int b) {
    const int len = bit_length128(q);
    if (len <= 53) return ldexp((double)(uint64_t)q, b);
    const int shift = len - 53;
    uint64_t top = (uint64_t)(q >> shift);
    const u128 rest = q & (((u128)1 << shift) - 1);
    const u128 half = (u128)1 << (shift - 1);
    if (rest > half || (rest == half && (sticky || (top & 1)))) top++;
    return ldexp((double)top, b + shift);
}

#endif

/* 0: parsed into *out; 1: valid but needs the general conversion; -1: not a number of the accepted
 * form ([+-] digits [. digits] [e [+-] digits], at least one digit). */
static inline int parse_double(const unsigned char *s, int32_t n, double *out) {
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

/* The general conversion, for the rare long decimal: takes the GIL for the call. */
static inline int slow_double(PyThreadState **thread, const unsigned char *s, int32_t n, double *out) {
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

static inline int parse_int(const unsigned char *s, int32_t n, int64_t *out) {
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

#endif

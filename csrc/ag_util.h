/*
 * ag_util.h - what every engine file uses (ag_util.c): error reporting, growable
 * arrays, bitsets and the clock. Internal; the public surface is agentgrammar.h.
 */
#ifndef AG_UTIL_H
#define AG_UTIL_H

#include "agentgrammar.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------ */

/* Fills err (when not NULL) and returns status. */
ag_status ag_fail(ag_error *err, ag_status status, int32_t rule, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- growable arrays ----------------------------------------------------
 * A vector is {T *data; size_t len, cap;}. ag_vec_reserve returns false on
 * allocation failure (or size overflow) and leaves the vector unchanged.
 */
bool ag_grow(void **data, size_t *cap, size_t need, size_t elem_size);

#define AG_VEC(T) \
  struct {        \
    T *data;      \
    size_t len;   \
    size_t cap;   \
  }
#define ag_vec_reserve(v, n) \
  ((n) <= (v)->cap || ag_grow((void **)&(v)->data, &(v)->cap, (n), sizeof(*(v)->data)))
#define ag_vec_push(v, x) \
  (ag_vec_reserve((v), (v)->len + 1) ? ((v)->data[(v)->len++] = (x), true) : false)
#define ag_vec_free(v) (free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)

/* Three-way comparison of uint64_t values, for qsort. */
int ag_cmp_u64(const void *a, const void *b);
int ag_cmp_int32(const void *a, const void *b);

/* ---- bitsets over token ids or sorted positions, 32 per word ----------- */

static inline bool ag_bit(const uint32_t *bits, int32_t i) { return (bits[i >> 5] >> (i & 31)) & 1u; }
static inline void ag_bit_set(uint32_t *bits, int32_t i) { bits[i >> 5] |= 1u << (i & 31); }
static inline void ag_bit_clear(uint32_t *bits, int32_t i) { bits[i >> 5] &= ~(1u << (i & 31)); }
/* The first position in [i, n) whose bit is set, or n. */
static inline int32_t ag_next_bit(const uint32_t *bits, int32_t i, int32_t n) {
  while (i < n) {
    uint32_t word = bits[i >> 5] >> (i & 31);
    if (word) {
      i += __builtin_ctz(word);
      return i < n ? i : n;
    }
    i = (i | 31) + 1;
  }
  return n;
}

/* Sets bytes lo..hi of a 256-bit byte set (8 words), a word at a time. */
static inline void ag_byteset_add_range(uint32_t *s, unsigned lo, unsigned hi) {
  for (unsigned w = lo >> 5; w <= hi >> 5; w++) {
    unsigned a = w == lo >> 5 ? lo & 31 : 0, b = w == hi >> 5 ? hi & 31 : 31;
    uint32_t bits = b == 31 ? ~0u : (1u << (b + 1)) - 1;
    s[w] |= bits & ~((1u << a) - 1);
  }
}

/* ---- time budgets ------------------------------------------------------ */

/* Seconds on a wall clock. */
double ag_now(void);
/* AG_ERR_TIMEOUT when a deadline (0: none) has passed. */
ag_status ag_check_deadline(double deadline, ag_error *err);

#endif /* AG_UTIL_H */

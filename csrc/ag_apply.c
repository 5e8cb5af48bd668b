/* ag_apply.c - masking a row of logits with a token bitmask.
 *
 * Done in C because the tensor-library way (unpack the bits into a boolean
 * row, then a masked fill) allocates and passes over the 128k-entry row
 * several times per decoding step; here it is one pass, and a word of 32
 * allowed tokens (most of a free-text step) is skipped whole. */
#include "ag_util.h"

#include <stdbool.h>
#include <string.h>

/* -infinity's bit pattern in each element type (IEEE sign, all-ones exponent). */
#define AG_NEG_INF_F64 UINT64_C(0xFFF0000000000000)
#define AG_NEG_INF_F32 UINT32_C(0xFF800000)
#define AG_NEG_INF_F16 UINT16_C(0xFC00)
#define AG_NEG_INF_BF16 UINT16_C(0xFF80)

/* Sets element i of the row to -infinity. The row is written through the
 * unsigned integer type of its element's size: only the bits matter. */
static void ag_set_neg_inf(void *row, int kind, size_t i) {
  switch (kind) {
  case AG_LOGITS_F64:
    ((uint64_t *)row)[i] = AG_NEG_INF_F64;
    break;
  case AG_LOGITS_F32:
    ((uint32_t *)row)[i] = AG_NEG_INF_F32;
    break;
  case AG_LOGITS_F16:
    ((uint16_t *)row)[i] = AG_NEG_INF_F16;
    break;
  default:
    ((uint16_t *)row)[i] = AG_NEG_INF_BF16;
    break;
  }
}

/* Masks elements [lo, hi) of the row off, all of them: one element written,
 * then copied over doubling spans. memcpy is vectorized where a plain store
 * loop is not at -O2; a state that allows a few tokens masks off most of a
 * 128k row in such runs, and this makes that about a plain fill's cost. */
static void ag_set_neg_inf_range(void *row, int kind, size_t lo, size_t hi) {
  if (lo >= hi) return;
  size_t size = kind == AG_LOGITS_F64 ? 8 : kind == AG_LOGITS_F32 ? 4 : 2;
  uint8_t *dst = (uint8_t *)row + lo * size;
  size_t total = (hi - lo) * size, done = size;
  ag_set_neg_inf(row, kind, lo);
  while (done < total) {
    size_t k = done < total - done ? done : total - done;
    memcpy(dst + done, dst, k);
    done += k;
  }
}

ag_status ag_apply_mask(void *logits, int kind, size_t n_logits, const uint32_t *mask,
                        size_t n_words, size_t limit, ag_error *err) {
  if (kind < AG_LOGITS_F32 || kind > AG_LOGITS_F64)
    return ag_fail(err, AG_ERR_INVALID, -1, "unknown logits element kind %d", kind);
  if (n_logits > 0 && !logits)
    return ag_fail(err, AG_ERR_INVALID, -1, "the logits row is NULL");
  if (n_words > 0 && !mask) return ag_fail(err, AG_ERR_INVALID, -1, "the mask is NULL");
  /* Tokens past the mask's bits or the limit are never allowed. */
  size_t covered = n_words > SIZE_MAX / 32 ? SIZE_MAX : n_words * 32;
  size_t end = limit < n_logits ? limit : n_logits;
  if (covered < end) end = covered;
  size_t run = 0; /* where the pending run of masked-off tokens starts, when in_run */
  bool in_run = false;
  for (size_t w = 0; w * 32 < end; w++) {
    uint32_t off = ~mask[w];
    size_t base = w * 32, stop = end - base < 32 ? end - base : 32;
    if (off == UINT32_MAX) { /* 32 masked off: most words of a constrained step */
      if (!in_run) run = base, in_run = true;
      continue;
    }
    if (in_run) ag_set_neg_inf_range(logits, kind, run, base), in_run = false;
    for (; off != 0; off &= off - 1) {
      unsigned bit = (unsigned)__builtin_ctz(off);
      if (bit >= stop) break;
      ag_set_neg_inf(logits, kind, base + bit);
    }
  }
  /* the pending run, then what lies past the mask or the limit */
  ag_set_neg_inf_range(logits, kind, in_run ? run : end, n_logits);
  return AG_OK;
}

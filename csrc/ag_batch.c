/*
 * ag_batch.c - filling a serving batch's token masks in parallel.
 *
 * Each matcher is one task on the pool. Matchers are per sequence and compiled
 * grammars are safe to share (their mask caches are lock-free), so tasks need
 * no locking except to keep the first failure's message.
 */
#define _POSIX_C_SOURCE 200809L
#include "ag_pool.h"
#include "ag_util.h"

#include <pthread.h>

typedef struct ag_batch {
  ag_matcher *const *matchers;
  const int32_t *rows;
  uint32_t *masks;
  size_t row_words;
  int32_t *results;
  pthread_mutex_t lock; /* guards the fields below */
  int32_t failed;       /* lowest failed task, or -1 */
  ag_error *err;
} ag_batch;

static void ag_batch_task(void *ctx, int32_t i) {
  ag_batch *b = ctx;
  ag_error local;
  int all = 0;
  uint32_t *row = b->masks + (size_t)b->rows[i] * b->row_words;
  ag_status st = ag_matcher_fill_mask(b->matchers[i], row, b->row_words, &all, &local);
  b->results[i] = st == AG_OK ? all : -(int32_t)st;
  if (st == AG_OK) return;
  pthread_mutex_lock(&b->lock);
  if (b->failed < 0 || i < b->failed) {
    b->failed = i;
    if (b->err) {
      ag_fail(b->err, st, local.rule, "matcher %d (row %d): %s", (int)i, (int)b->rows[i],
              local.message);
    }
  }
  pthread_mutex_unlock(&b->lock);
}

/* Whether the n values are pairwise distinct (sorted copies, so O(n log n)). */
static ag_status ag_all_distinct(const uint64_t *values, int32_t n, bool *distinct,
                                 ag_error *err) {
  *distinct = true;
  if (n < 2) return AG_OK;
  uint64_t *copy = malloc((size_t)n * sizeof *copy);
  if (!copy) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory checking a batch");
  memcpy(copy, values, (size_t)n * sizeof *copy);
  qsort(copy, (size_t)n, sizeof *copy, ag_cmp_u64);
  for (int32_t i = 1; i < n && *distinct; i++) *distinct = copy[i] != copy[i - 1];
  free(copy);
  return AG_OK;
}

/* Rows in range, and neither a matcher nor a row twice (two threads would share it). */
static ag_status ag_batch_check(ag_matcher *const *matchers, const int32_t *rows, int32_t n,
                                size_t n_rows, ag_error *err) {
  uint64_t *keys = malloc((size_t)n * 2 * sizeof *keys);
  if (!keys) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory checking a batch");
  ag_status st = AG_OK;
  for (int32_t i = 0; i < n && !st; i++) {
    if (!matchers[i]) st = ag_fail(err, AG_ERR_INVALID, -1, "matcher %d is NULL", (int)i);
    else if (rows[i] < 0 || (size_t)rows[i] >= n_rows)
      st = ag_fail(err, AG_ERR_RANGE, -1, "matcher %d: row %d is out of range for %zu rows",
                   (int)i, (int)rows[i], n_rows);
    else {
      keys[i] = (uint64_t)(uintptr_t)matchers[i];
      keys[n + i] = (uint64_t)rows[i];
    }
  }
  bool distinct = true;
  if (!st) st = ag_all_distinct(keys, n, &distinct, err);
  if (!st && !distinct)
    st = ag_fail(err, AG_ERR_INVALID, -1, "the batch holds one matcher twice");
  if (!st) st = ag_all_distinct(keys + n, n, &distinct, err);
  if (!st && !distinct) st = ag_fail(err, AG_ERR_INVALID, -1, "the batch writes one row twice");
  free(keys);
  return st;
}

ag_status ag_batch_fill_masks(ag_pool *pool, ag_matcher *const *matchers, const int32_t *rows,
                              int32_t n, uint32_t *masks, size_t n_rows, size_t row_words,
                              int32_t *results, ag_error *err) {
  if (!pool || n < 0 || (n > 0 && (!matchers || !rows || !masks || !results)))
    return ag_fail(err, AG_ERR_INVALID, -1, "bad batch arguments");
  if (n_rows > SIZE_MAX / (row_words ? row_words : 1) / sizeof *masks)
    return ag_fail(err, AG_ERR_INVALID, -1, "the bitmask is too large");
  ag_status st = ag_batch_check(matchers, rows, n, n_rows, err);
  if (st) return st;
  ag_batch b = {matchers, rows, masks, row_words, results, .failed = -1, .err = err};
  pthread_mutex_init(&b.lock, NULL);
  ag_pool_run(pool, ag_batch_task, &b, n);
  pthread_mutex_destroy(&b.lock);
  return b.failed < 0 ? AG_OK : (ag_status)-results[b.failed];
}

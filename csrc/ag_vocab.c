/* ag_vocab.c - the token vocabulary: exact token bytes, kinds, and a
 * byte-sorted order with common-prefix lengths so mask walks share prefixes. */
#include "ag_vocab.h"
#include "ag_plain_tokens.h"

#include <stddef.h>

typedef struct ag_sort_entry {
  const uint8_t *bytes;
  uint32_t len;
  int32_t id;
} ag_sort_entry;

static int ag_sort_cmp(const void *a, const void *b) {
  const ag_sort_entry *x = a, *y = b;
  uint32_t n = x->len < y->len ? x->len : y->len;
  int c = n ? memcmp(x->bytes, y->bytes, n) : 0;
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id); /* stable order for duplicates */
}

static ag_status ag_vocab_check(const uint32_t *offsets, const uint8_t *kinds, int32_t n_tokens,
                                int32_t mask_size, ag_error *err) {
  if (n_tokens < 0) return ag_fail(err, AG_ERR_INVALID, -1, "negative token count %d", n_tokens);
  if (mask_size < n_tokens)
    return ag_fail(err, AG_ERR_INVALID, -1, "mask size %d is smaller than the token count %d",
                   mask_size, n_tokens);
  if (offsets[0] != 0) return ag_fail(err, AG_ERR_INVALID, -1, "offsets[0] must be 0");
  for (int32_t i = 0; i < n_tokens; i++) {
    if (offsets[i + 1] < offsets[i])
      return ag_fail(err, AG_ERR_INVALID, -1, "token %d has a negative length", i);
    if (kinds[i] > AG_TOKEN_STOP)
      return ag_fail(err, AG_ERR_INVALID, -1, "token %d has unknown kind %u", i, kinds[i]);
  }
  return AG_OK;
}

static ag_status ag_vocab_sort(ag_vocab *v, ag_error *err) {
  int32_t n = 0;
  for (int32_t i = 0; i < v->n_tokens; i++)
    if (v->kinds[i] == AG_TOKEN_NORMAL && v->offsets[i + 1] > v->offsets[i]) n++;
  ag_sort_entry *e = malloc(sizeof *e * (size_t)(n ? n : 1));
  v->sorted_ids = malloc(sizeof *v->sorted_ids * (size_t)(n ? n : 1));
  v->lcp = malloc(sizeof *v->lcp * (size_t)(n ? n : 1));
  if (!e || !v->sorted_ids || !v->lcp) {
    free(e);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory sorting the vocabulary");
  }
  int32_t k = 0;
  for (int32_t i = 0; i < v->n_tokens; i++) {
    uint32_t len;
    const uint8_t *b = ag_vocab_token(v, i, &len);
    if (v->kinds[i] == AG_TOKEN_NORMAL && len > 0) e[k++] = (ag_sort_entry){b, len, i};
    if (len > v->max_token_len) v->max_token_len = len;
  }
  qsort(e, (size_t)n, sizeof *e, ag_sort_cmp);
  for (int32_t i = 0; i < n; i++) {
    uint32_t l = 0;
    if (i > 0) {
      uint32_t m = e[i].len < e[i - 1].len ? e[i].len : e[i - 1].len;
      while (l < m && e[i].bytes[l] == e[i - 1].bytes[l]) l++;
    }
    v->sorted_ids[i] = e[i].id;
    v->lcp[i] = (uint16_t)(l > UINT16_MAX ? UINT16_MAX : l); /* capping only costs re-scanning */
  }
  v->n_sorted = n;
  free(e);
  return AG_OK;
}

/* lcp_next (see ag_vocab): the next smaller LCP of each position, from the
 * back. The chain from k + 1 is exactly what a stack of candidates would hold,
 * and each link skipped here is never followed again, so this is linear. */
static ag_status ag_vocab_index_runs(ag_vocab *v, ag_error *err) {
  int32_t n = v->n_sorted;
  v->lcp_next = malloc(sizeof *v->lcp_next * (size_t)(n ? n : 1));
  if (!v->lcp_next) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  for (int32_t k = n - 1; k >= 0; k--) {
    int32_t j = k + 1;
    while (j < n && v->lcp[j] >= v->lcp[k]) j = v->lcp_next[j];
    v->lcp_next[k] = j;
  }
  return AG_OK;
}

/* sorted_blob, sorted_offsets, first_byte_pos and pair_pos (see ag_vocab). */
static ag_status ag_vocab_index_sorted_bytes(ag_vocab *v, ag_error *err) {
  int32_t n = v->n_sorted;
  size_t total = 0;
  for (int32_t i = 0; i < n; i++) total += v->offsets[v->sorted_ids[i] + 1] - v->offsets[v->sorted_ids[i]];
  v->sorted_blob = malloc(total ? total : 1);
  v->sorted_offsets = malloc(sizeof *v->sorted_offsets * ((size_t)n + 1));
  v->first_byte_pos = malloc(sizeof *v->first_byte_pos * 257);
  v->pair_pos = malloc(256 * 256 * sizeof *v->pair_pos);
  if (!v->sorted_blob || !v->sorted_offsets || !v->first_byte_pos || !v->pair_pos)
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  memset(v->pair_pos, 0xff, 256 * 256 * sizeof *v->pair_pos); /* -1: no token begins with the pair yet */
  uint32_t at = 0;
  int b = 0;
  for (int32_t i = 0; i < n; i++) {
    uint32_t len;
    const uint8_t *t = ag_vocab_token(v, v->sorted_ids[i], &len);
    memcpy(v->sorted_blob + at, t, len);
    v->sorted_offsets[i] = at;
    at += len;
    for (; b <= t[0]; b++) v->first_byte_pos[b] = i; /* sorted tokens are non-empty */
    if (len >= 2 && v->pair_pos[t[0] * 256 + t[1]] < 0) v->pair_pos[t[0] * 256 + t[1]] = i; /* its first */
  }
  v->sorted_offsets[n] = at;
  for (; b <= 256; b++) v->first_byte_pos[b] = n;
  /* a pair no token begins with is where it would sort: the next pair's, or the first byte's end */
  for (int c0 = 255; c0 >= 0; c0--)
    for (int c1 = 255, next = v->first_byte_pos[c0 + 1]; c1 >= 0; c1--) {
      if (v->pair_pos[c0 * 256 + c1] >= 0) next = v->pair_pos[c0 * 256 + c1];
      else v->pair_pos[c0 * 256 + c1] = next;
    }
  return AG_OK;
}

/* sorted_by_id (see ag_vocab). */
static ag_status ag_vocab_index_ids(ag_vocab *v, ag_error *err) {
  if (!(v->sorted_by_id = calloc(ag_mask_words(v), sizeof *v->sorted_by_id)))
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  for (int32_t i = 0; i < v->n_sorted; i++) ag_bit_set(v->sorted_by_id, v->sorted_ids[i]);
  return AG_OK;
}

/* by_len and n_longer (see ag_vocab): a counting sort of sorted positions by length;
 * then long_level and long_sorted. */
static ag_status ag_vocab_index_lengths(ag_vocab *v, ag_error *err) {
  uint32_t max = v->max_token_len;
  int32_t *count = calloc((size_t)max + 2, sizeof *count); /* then: the next slot per length */
  v->n_longer = calloc((size_t)max + 1, sizeof *v->n_longer);
  v->by_len = malloc(sizeof *v->by_len * (size_t)(v->n_sorted ? v->n_sorted : 1));
  if (!count || !v->n_longer || !v->by_len) {
    free(count);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  }
  for (int32_t i = 0; i < v->n_sorted; i++) count[ag_vocab_sorted_len(v, i)]++;
  for (int64_t l = (int64_t)max - 1; l >= 0; l--) v->n_longer[l] = v->n_longer[l + 1] + count[l + 1];
  for (uint32_t l = 1; l <= max; l++) count[l] = v->n_longer[l]; /* longer tokens come first */
  for (int32_t i = 0; i < v->n_sorted; i++) v->by_len[count[ag_vocab_sorted_len(v, i)]++] = i;
  free(count);
  uint32_t l = 1;
  while (l < max && v->n_longer[l] > v->n_sorted / 8) l++;
  v->long_level = l;
  int32_t n_long = l <= max ? v->n_longer[l] : 0;
  if (!(v->long_sorted = malloc(sizeof *v->long_sorted * (size_t)(n_long ? n_long : 1))))
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  for (int32_t i = 0, k = 0; i < v->n_sorted; i++)
    if (ag_vocab_sorted_len(v, i) > l) v->long_sorted[k++] = i;
  return AG_OK;
}

static ag_status ag_vocab_index_ascii(ag_vocab *v, ag_error *err) {
  v->ascii_sets = calloc(2 * (size_t)(v->n_sorted ? v->n_sorted : 1), sizeof *v->ascii_sets);
  v->has_wide = calloc(ag_pos_words(v), sizeof *v->has_wide);
  if (!v->ascii_sets || !v->has_wide)
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  for (int32_t i = 0; i < v->n_sorted; i++) {
    uint32_t n;
    const uint8_t *tok = ag_vocab_sorted_token(v, i, &n);
    uint64_t *set = v->ascii_sets + 2 * (size_t)i;
    for (uint32_t k = 0; k < n; k++) {
      if (tok[k] >= 0x80) ag_bit_set(v->has_wide, i);
      else set[tok[k] >> 6] |= (uint64_t)1 << (tok[k] & 63);
    }
  }
  return AG_OK;
}

static ag_status ag_vocab_collect_stops(ag_vocab *v, ag_error *err) {
  int32_t n = 0;
  for (int32_t i = 0; i < v->n_tokens; i++) n += v->kinds[i] == AG_TOKEN_STOP;
  v->stop_ids = malloc(sizeof *v->stop_ids * (size_t)(n ? n : 1));
  if (!v->stop_ids) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  for (int32_t i = 0; i < v->n_tokens; i++)
    if (v->kinds[i] == AG_TOKEN_STOP) v->stop_ids[v->n_stop++] = i;
  return AG_OK;
}

/* A vocabulary with empty caches (every cache field zero or its default). */
static ag_vocab *ag_vocab_alloc(void) {
  ag_vocab *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  atomic_init(&v->refs, 1);
  atomic_init(&v->cache, NULL);
  atomic_init(&v->cache_entries, NULL);
  atomic_init(&v->shared_bytes, 0);
  atomic_init(&v->shared_limit, AG_DEFAULT_SHARED_CACHE_BYTES);
  atomic_init(&v->cache_bytes, 0);
  return v;
}

ag_status ag_vocab_new(const uint8_t *blob, const uint32_t *offsets, const uint8_t *kinds,
                       int32_t n_tokens, int32_t mask_size, ag_vocab **out, ag_error *err) {
  *out = NULL;
  if (!offsets || (n_tokens > 0 && (!kinds || !blob)))
    return ag_fail(err, AG_ERR_INVALID, -1, "null vocabulary arrays");
  ag_status st = ag_vocab_check(offsets, kinds, n_tokens, mask_size, err);
  if (st) return st;
  ag_vocab *v = ag_vocab_alloc();
  if (!v) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  v->n_tokens = n_tokens;
  v->mask_size = mask_size;
  size_t blob_len = offsets[n_tokens];
  v->blob = malloc(blob_len ? blob_len : 1);
  v->offsets = malloc(sizeof *v->offsets * ((size_t)n_tokens + 1));
  v->kinds = malloc((size_t)n_tokens + 1);
  if (!v->blob || !v->offsets || !v->kinds) {
    ag_vocab_free(v);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory copying the vocabulary");
  }
  if (blob_len) memcpy(v->blob, blob, blob_len);
  memcpy(v->offsets, offsets, sizeof *v->offsets * ((size_t)n_tokens + 1));
  if (n_tokens) memcpy(v->kinds, kinds, (size_t)n_tokens);
  if ((st = ag_vocab_sort(v, err)) || (st = ag_vocab_index_sorted_bytes(v, err)) ||
      (st = ag_vocab_index_runs(v, err)) ||
      (st = ag_vocab_index_lengths(v, err)) ||
      (st = ag_plain_tokens_index(v, &v->plain, &v->plain_skip, err)) ||
      (st = ag_plain_chars_index(v, err)) || (st = ag_vocab_index_ascii(v, err)) ||
      (st = ag_vocab_index_ids(v, err)) || (st = ag_vocab_collect_stops(v, err))) {
    ag_vocab_free(v);
    return st;
  }
  *out = v;
  return AG_OK;
}

ag_status ag_vocab_share_tables(ag_vocab *vocab, ag_vocab **out, ag_error *err) {
  if (!out) return ag_fail(err, AG_ERR_INVALID, -1, "ag_vocab_share_tables: out is NULL");
  *out = NULL;
  if (!vocab) return ag_fail(err, AG_ERR_INVALID, -1, "null vocabulary");
  ag_vocab *owner = vocab->tables_of ? vocab->tables_of : vocab, *v = ag_vocab_alloc();
  if (!v) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  /* The token tables are one block of plain fields, n_tokens to sorted_by_id. */
  size_t begin = offsetof(ag_vocab, n_tokens);
  size_t end = offsetof(ag_vocab, sorted_by_id) + sizeof owner->sorted_by_id;
  memcpy((char *)v + begin, (const char *)owner + begin, end - begin);
  ag_vocab_retain(owner);
  v->tables_of = owner;
  *out = v;
  return AG_OK;
}

void ag_vocab_retain(ag_vocab *v) { atomic_fetch_add(&v->refs, 1); }

void ag_vocab_free(ag_vocab *v) {
  if (!v || atomic_fetch_sub(&v->refs, 1) != 1) return;
  ag_vcache_free(v);
  if (v->tables_of) { /* the owner frees the tables, once nothing shares them */
    ag_vocab_free(v->tables_of);
    free(v);
    return;
  }
  free(v->blob);
  free(v->offsets);
  free(v->kinds);
  free(v->sorted_ids);
  free(v->sorted_blob);
  free(v->sorted_offsets);
  free(v->first_byte_pos);
  free(v->pair_pos);
  free(v->lcp);
  free(v->lcp_next);
  free(v->by_len);
  free(v->n_longer);
  free(v->long_sorted);
  free(v->plain);
  free(v->plain_skip);
  free(v->chars);
  free(v->plain_by_chars);
  free(v->plain_chars_first);
  free(v->ascii_sets);
  free(v->has_wide);
  free(v->sorted_by_id);
  free(v->stop_ids);
  free(v);
}

int32_t ag_vocab_num_tokens(const ag_vocab *v) { return v->n_tokens; }
int32_t ag_vocab_mask_size(const ag_vocab *v) { return v->mask_size; }

size_t ag_vocab_cache_bytes(const ag_vocab *vocab) {
  return atomic_load(&((ag_vocab *)vocab)->cache_bytes);
}

size_t ag_vocab_shared_cache_bytes(const ag_vocab *vocab) {
  return atomic_load(&((ag_vocab *)vocab)->shared_bytes);
}

void ag_vocab_set_shared_cache_limit(ag_vocab *vocab, size_t bytes) {
  atomic_store(&vocab->shared_limit, bytes);
}

/* ag_matcher.c - token-level matching: accept, masks, rollback, jump-forward.
 *
 * The matcher drives one Earley parser. Each accepted step (a token, a byte
 * string, or a stop token) records how many Earley sets existed before it, so
 * rollback is popping sets. Masks walk the byte-sorted vocabulary: a token
 * reuses the sets of the prefix it shares with the previous token, and once a
 * byte is rejected every following token with that same prefix is skipped. */
#include "ag_earley.h"

typedef struct ag_step {
  uint32_t n_sets; /* Earley sets before this step */
  bool stop;       /* the step accepted a stop token */
} ag_step;

struct ag_matcher {
  ag_compiled *compiled;
  ag_parser parser;
  AG_VEC(ag_step) steps;
  int32_t *stop_ids;
  int32_t n_stop;
  bool terminate_without_stop;
  bool stopped; /* a stop token was accepted */
};

static bool ag_is_stop(const ag_matcher *m, int32_t id) {
  for (int32_t i = 0; i < m->n_stop; i++)
    if (m->stop_ids[i] == id) return true;
  return false;
}

static ag_status ag_copy_stops(ag_matcher *m, const int32_t *ids, int32_t n, ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  if (n < 0) {
    ids = v->stop_ids;
    n = v->n_stop;
  }
  m->stop_ids = malloc(sizeof *m->stop_ids * (size_t)(n ? n : 1));
  if (!m->stop_ids) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= v->mask_size)
      return ag_fail(err, AG_ERR_RANGE, -1, "stop token id %d is outside the vocabulary [0, %d)",
                     ids[i], v->mask_size);
    if (!ag_is_stop(m, ids[i])) m->stop_ids[m->n_stop++] = ids[i]; /* drop duplicates */
  }
  return AG_OK;
}

ag_status ag_matcher_new(ag_compiled *compiled, const int32_t *stop_ids, int32_t n_stop,
                         int terminate_without_stop, ag_matcher **out, ag_error *err) {
  *out = NULL;
  if (!compiled) return ag_fail(err, AG_ERR_INVALID, -1, "null compiled grammar");
  if (n_stop > 0 && !stop_ids) return ag_fail(err, AG_ERR_INVALID, -1, "null stop token ids");
  ag_matcher *m = calloc(1, sizeof *m);
  if (!m) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  ag_compiled_retain(compiled);
  m->compiled = compiled;
  m->terminate_without_stop = terminate_without_stop != 0;
  ag_status st = ag_copy_stops(m, stop_ids, n_stop, err);
  if (!st) st = ag_parser_init(&m->parser, compiled->grammar, err);
  if (st) {
    ag_matcher_free(m);
    return st;
  }
  *out = m;
  return AG_OK;
}

void ag_matcher_free(ag_matcher *m) {
  if (!m) return;
  ag_parser_free(&m->parser);
  ag_vec_free(&m->steps);
  free(m->stop_ids);
  ag_compiled_free(m->compiled);
  free(m);
}

int ag_matcher_can_end(const ag_matcher *m) { return ag_parser_can_end(&m->parser); }

int ag_matcher_is_terminated(const ag_matcher *m) {
  if (m->stopped) return 1;
  return m->terminate_without_stop && ag_parser_can_end(&m->parser);
}

int32_t ag_matcher_num_steps(const ag_matcher *m) { return (int32_t)m->steps.len; }

void ag_matcher_reset(ag_matcher *m) {
  ag_parser_truncate(&m->parser, 1);
  m->steps.len = 0;
  m->stopped = false;
}

/* Scans bytes; on rejection restores the parser and sets *ok = false. */
static ag_status ag_scan_all(ag_matcher *m, const uint8_t *bytes, size_t len, bool *ok,
                             ag_error *err) {
  uint32_t before = ag_parser_num_sets(&m->parser);
  *ok = true;
  for (size_t i = 0; i < len && *ok; i++) {
    ag_status st = ag_parser_scan(&m->parser, bytes[i], ok, err);
    if (st) *ok = false;
    if (st || !*ok) {
      ag_parser_truncate(&m->parser, before);
      return st;
    }
  }
  return AG_OK;
}

static ag_status ag_check_live(const ag_matcher *m, ag_error *err) {
  if (ag_matcher_is_terminated(m))
    return ag_fail(err, AG_ERR_STATE, -1,
                   "the matcher has terminated; roll back or reset it before accepting more");
  return AG_OK;
}

static ag_status ag_push_step(ag_matcher *m, uint32_t n_sets, bool stop, ag_error *err) {
  if (!ag_vec_push(&m->steps, ((ag_step){n_sets, stop})))
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  return AG_OK;
}

ag_status ag_matcher_accept_token(ag_matcher *m, int32_t id, int *accepted, ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  *accepted = 0;
  if (id < 0 || id >= v->mask_size)
    return ag_fail(err, AG_ERR_RANGE, -1, "token id %d is outside the vocabulary [0, %d)", id,
                   v->mask_size);
  ag_status st = ag_check_live(m, err);
  if (st) return st;
  uint32_t before = ag_parser_num_sets(&m->parser);
  if (ag_is_stop(m, id)) {
    if (!ag_parser_can_end(&m->parser)) return AG_OK;
    if ((st = ag_push_step(m, before, true, err))) return st;
    m->stopped = true;
    *accepted = 1;
    return AG_OK;
  }
  if (id >= v->n_tokens || v->kinds[id] != AG_TOKEN_NORMAL) return AG_OK;
  uint32_t len;
  const uint8_t *bytes = ag_vocab_token(v, id, &len);
  if (len == 0) return AG_OK; /* an empty token would make no progress */
  bool ok;
  if ((st = ag_scan_all(m, bytes, len, &ok, err)) || !ok) return st;
  if ((st = ag_push_step(m, before, false, err))) {
    ag_parser_truncate(&m->parser, before);
    return st;
  }
  *accepted = 1;
  return AG_OK;
}

ag_status ag_matcher_accept_bytes(ag_matcher *m, const uint8_t *bytes, size_t len, int *accepted,
                                  ag_error *err) {
  *accepted = 0;
  if (len && !bytes) return ag_fail(err, AG_ERR_INVALID, -1, "null bytes");
  ag_status st = ag_check_live(m, err);
  if (st) return st;
  uint32_t before = ag_parser_num_sets(&m->parser);
  bool ok;
  if ((st = ag_scan_all(m, bytes, len, &ok, err)) || !ok) return st;
  if ((st = ag_push_step(m, before, false, err))) {
    ag_parser_truncate(&m->parser, before);
    return st;
  }
  *accepted = 1;
  return AG_OK;
}

ag_status ag_matcher_rollback(ag_matcher *m, int32_t n, ag_error *err) {
  if (n < 0 || (size_t)n > m->steps.len)
    return ag_fail(err, AG_ERR_RANGE, -1, "cannot roll back %d steps: %zu accepted", n,
                   m->steps.len);
  if (n == 0) return AG_OK;
  ag_step first = m->steps.data[m->steps.len - (size_t)n];
  m->steps.len -= (size_t)n;
  ag_parser_truncate(&m->parser, first.n_sets);
  m->stopped = false; /* only the last step can be a stop, and it is gone */
  return AG_OK;
}

static void ag_set_bit(uint32_t *mask, int32_t id) { mask[id >> 5] |= 1u << (id & 31); }

/* Returns the index of the first token after i that does not start with the
 * first depth+1 bytes of token i. */
static int32_t ag_skip_subtree(const ag_vocab *v, int32_t i, uint32_t depth) {
  int32_t j = i + 1;
  while (j < v->n_sorted && v->lcp[j] > depth) j++;
  return j;
}

/* Marks every normal token that the grammar allows next. */
static ag_status ag_walk_vocab(ag_matcher *m, uint32_t *mask, int32_t *n_allowed, ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  ag_parser *p = &m->parser;
  uint32_t base = ag_parser_num_sets(p), depth = 0;
  ag_status st = AG_OK;
  int32_t i = 0;
  while (i < v->n_sorted) {
    uint32_t len, l = v->lcp[i];
    const uint8_t *tok = ag_vocab_token(v, v->sorted_ids[i], &len);
    if (l < depth) {
      ag_parser_truncate(p, base + l);
      depth = l;
    }
    bool ok = true;
    while (depth < len && ok) {
      if ((st = ag_parser_scan(p, tok[depth], &ok, err))) goto done;
      depth += ok;
    }
    if (!ok) { /* byte tok[depth] failed: so does every token sharing tok[0..depth] */
      i = ag_skip_subtree(v, i, depth);
      continue;
    }
    ag_set_bit(mask, v->sorted_ids[i]);
    ++*n_allowed;
    i++;
  }
done:
  ag_parser_truncate(p, base);
  return st;
}

ag_status ag_matcher_fill_mask(ag_matcher *m, uint32_t *mask, size_t n_words, int *all_allowed,
                               ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  size_t need = ((size_t)v->mask_size + 31) / 32;
  *all_allowed = 0;
  if (!mask || n_words < need)
    return ag_fail(err, AG_ERR_INVALID, -1, "bitmask has %zu words; %zu are needed", n_words, need);
  memset(mask, 0, n_words * sizeof *mask);
  int32_t n_allowed = 0;
  bool terminated = ag_matcher_is_terminated(m);
  if (!terminated) {
    ag_status st = ag_walk_vocab(m, mask, &n_allowed, err);
    if (st) return st;
  }
  /* Stop tokens are decided by whether the grammar can end, never by their text. */
  bool can_stop = terminated || ag_parser_can_end(&m->parser);
  for (int32_t i = 0; i < m->n_stop; i++) {
    int32_t id = m->stop_ids[i];
    uint32_t bit = 1u << (id & 31);
    bool was_set = (mask[id >> 5] & bit) != 0;
    n_allowed += (int32_t)can_stop - (int32_t)was_set;
    mask[id >> 5] = can_stop ? (mask[id >> 5] | bit) : (mask[id >> 5] & ~bit);
  }
  *all_allowed = n_allowed == v->mask_size;
  return AG_OK;
}

ag_status ag_matcher_jump_forward(ag_matcher *m, uint8_t *buf, size_t cap, size_t *len,
                                  ag_error *err) {
  ag_parser *p = &m->parser;
  uint32_t base = ag_parser_num_sets(p);
  ag_status st = AG_OK;
  *len = 0;
  if (ag_matcher_is_terminated(m)) return AG_OK;
  while (*len < cap && !ag_parser_can_end(p)) {
    uint32_t bits[8];
    if (ag_parser_next_bytes(p, bits) != 1) break;
    int b = 0;
    while (!(bits[b >> 5] & (1u << (b & 31)))) b++;
    bool ok;
    if ((st = ag_parser_scan(p, (uint8_t)b, &ok, err)) || !ok) break;
    buf[(*len)++] = (uint8_t)b;
  }
  ag_parser_truncate(p, base);
  return st;
}

/* ag_class_tokens.c - a state's loop class and the tokens made of it (see the header). */
#include "ag_class_tokens.h"

#include "ag_dispatch.h"

/* The bytes of state s's byte edges into cls; with self_only, of those back to s. */
static void ag_edge_bytes(const ag_grammar *g, int32_t s, bool self_only, uint32_t cls[8]) {
  memset(cls, 0, 8 * sizeof *cls);
  const ag_state *st = &g->states[s];
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *be = &g->byte_edges[e];
    if (!self_only || be->target == s) ag_byteset_add_range(cls, be->lo, be->hi);
  }
}

/* How many sorted tokens start with a byte of state s's edges (with
 * self_only, of those back to s): the first test, before any set is made. */
static int32_t ag_edge_first_tokens(const ag_grammar *g, const ag_vocab *v, int32_t s,
                                    bool self_only) {
  const ag_state *st = &g->states[s];
  int32_t n = 0;
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *be = &g->byte_edges[e];
    if (!self_only || be->target == s) n += v->first_byte_pos[be->hi + 1] - v->first_byte_pos[be->lo];
  }
  return n;
}

/* How many sorted tokens start with a byte of cls. */
static int32_t ag_class_first_tokens(const ag_vocab *v, const uint32_t cls[8]) {
  int32_t n = 0;
  for (int k = 0; k < 8; k++)
    for (uint32_t word = cls[k]; word; word &= word - 1) {
      int c = k * 32 + __builtin_ctz(word);
      n += v->first_byte_pos[c + 1] - v->first_byte_pos[c];
    }
  return n;
}

static bool ag_class_empty(const uint32_t cls[8]) {
  uint32_t any = 0;
  for (int k = 0; k < 8; k++) any |= cls[k];
  return any == 0;
}

/* The closure's visited states, each with the depth it was first reached at
 * (breadth first: the least) and the bytes of the class that lead into it
 * from the states expanded so far, and a set of them by open addressing. */
typedef struct ag_class_sim {
  int32_t queue[AG_CLASS_MAX_STATES];
  uint32_t depth[AG_CLASS_MAX_STATES];
  uint32_t enter[AG_CLASS_MAX_STATES][8];
  int32_t n;
  int32_t seen[2 * AG_CLASS_MAX_STATES]; /* queue index + 1; 0: empty */
} ag_class_sim;

/* Queues s at depth d unless seen, and adds `bytes` (of the class) to those
 * that enter it; false when the bound is passed. */
static bool ag_class_push(ag_class_sim *x, int32_t s, uint32_t d, const uint32_t bytes[8]) {
  uint32_t i = ((uint32_t)s * 2654435761u) & (2 * AG_CLASS_MAX_STATES - 1);
  while (x->seen[i] && x->queue[x->seen[i] - 1] != s) i = (i + 1) & (2 * AG_CLASS_MAX_STATES - 1);
  int32_t k = x->seen[i] - 1;
  if (k < 0) {
    if (x->n >= AG_CLASS_MAX_STATES) return false;
    k = x->n++;
    x->seen[i] = k + 1;
    x->queue[k] = s;
    x->depth[k] = d;
    memset(x->enter[k], 0, sizeof x->enter[k]);
  }
  for (int w = 0; w < 8; w++) x->enter[k][w] |= bytes[w];
  return true;
}

static int ag_class_count(const uint32_t cls[8]) {
  int n = 0;
  for (int k = 0; k < 8; k++) n += __builtin_popcount(cls[k]);
  return n;
}

/* One breadth-first pass from `state` over the bytes of cls, to states first
 * reached within *depth bytes. At the first such state that lacks an edge on
 * some bytes of cls, the pass stops (*narrowed says so, to run it again) and
 * gives up the least: the fewer of the missing bytes and the bytes that lead
 * into the state, where that is at most a quarter of the class (an escape's
 * backslash; a quote that only the state's own loop leaves out), else the
 * depth from that state on (the end of a counted label). False when the bound
 * on states is passed. */
static bool ag_class_pass(const ag_grammar *g, ag_class_sim *x, int32_t state, uint32_t *depth,
                          uint32_t cls[8], bool *narrowed) {
  memset(x->seen, 0, sizeof x->seen);
  x->n = 0;
  *narrowed = false;
  static const uint32_t none[8] = {0};
  if (!ag_class_push(x, state, 0, none)) return false;
  for (int32_t head = 0; head < x->n; head++) {
    int32_t s = x->queue[head];
    if (x->depth[head] >= *depth) continue;
    uint32_t have[8], missing[8];
    ag_edge_bytes(g, s, false, have);
    for (int k = 0; k < 8; k++) missing[k] = cls[k] & ~have[k];
    if (!ag_class_empty(missing)) {
      *narrowed = true;
      int n_cls = ag_class_count(cls), n_missing = ag_class_count(missing);
      int n_enter = head > 0 ? ag_class_count(x->enter[head]) : n_cls;
      bool by_enter = n_enter < n_missing;
      const uint32_t *drop = by_enter ? x->enter[head] : missing;
      if (4 * (by_enter ? n_enter : n_missing) <= n_cls || head == 0) {
        for (int k = 0; k < 8; k++) cls[k] &= ~drop[k];
      } else {
        *depth = x->depth[head];
      }
      return true;
    }
    const ag_state *st = &g->states[s];
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
      const ag_byte_edge *be = &g->byte_edges[e];
      uint32_t in[8] = {0}; /* the edge's bytes of the class */
      ag_byteset_add_range(in, be->lo, be->hi);
      for (int k = 0; k < 8; k++) in[k] &= cls[k];
      if (!ag_class_empty(in) && !ag_class_push(x, be->target, x->depth[head] + 1, in)) return false;
    }
  }
  return true;
}

/* The largest class the state's byte edges keep closed, narrowed from all of
 * the state's bytes, and the depth within which they do (at most *depth, the
 * longest token); false when none is left of at least AG_CLASS_MIN_DEPTH
 * bytes, or the bounds are passed. */
static bool ag_closed_class(const ag_grammar *g, int32_t state, uint32_t *depth, uint32_t cls[8]) {
  ag_class_sim *x = malloc(sizeof *x);
  if (!x) return false; /* out of memory: the ordinary walk is always right */
  ag_edge_bytes(g, state, false, cls);
  bool narrowed = true, ok = true;
  for (int round = 0; ok && narrowed && round < 32; round++) {
    ok = !ag_class_empty(cls) && *depth >= AG_CLASS_MIN_DEPTH;
    if (ok) ok = ag_class_pass(g, x, state, depth, cls, &narrowed);
  }
  free(x);
  return ok && !narrowed;
}

uint32_t ag_class_depth(const ag_grammar *g, const ag_vocab *v, int32_t state, uint32_t max_len,
                        uint32_t cls[8]) {
  const ag_state *st = &g->states[state];
  if (st->byte_begin == st->byte_end || max_len == 0) return 0;
  uint32_t self[8], closed[8];
  int32_t n_self = 0, n_closed = 0;
  if (ag_edge_first_tokens(g, v, state, true) >= AG_CLASS_MIN_TOKENS) { /* a loop on itself */
    ag_edge_bytes(g, state, true, self);
    n_self = ag_class_first_tokens(v, self);
  }
  /* The closed class is within the state's bytes: a state with a few edges
   * (a literal's next byte, most of an agent's grammar) stops here. */
  uint32_t closed_depth = max_len;
  if (ag_edge_first_tokens(g, v, state, false) < AG_CLASS_MIN_TOKENS ||
      !ag_closed_class(g, state, &closed_depth, closed))
    closed_depth = 0;
  else
    n_closed = ag_class_first_tokens(v, closed);
  if (n_self >= n_closed && n_self >= AG_CLASS_MIN_TOKENS) {
    memcpy(cls, self, sizeof self);
    return max_len;
  }
  if (closed_depth && n_closed >= AG_CLASS_MIN_TOKENS) {
    memcpy(cls, closed, sizeof closed);
    return closed_depth;
  }
  return 0;
}

/* Sets in bits (positions, then ids) the tokens of at most len bytes, all in
 * cls, among those that start with byte c. Each token scans only the bytes past
 * the prefix it shares with the last one scanned and known to be in cls; a
 * byte out of the class rejects every token that shares the prefix up to it. */
static void ag_class_scan(const ag_vocab *v, const uint32_t cls[8], uint32_t len, int c,
                          uint32_t *bits) {
  uint32_t *ids = bits + ag_pos_words(v);
  int32_t end = v->first_byte_pos[c + 1], last = -1;
  uint32_t good = 0; /* leading bytes of token `last` in cls */
  for (int32_t i = v->first_byte_pos[c]; i < end;) {
    uint32_t n, shared = last < 0 ? 0 : ag_vocab_common_prefix(v, last, i);
    const uint8_t *tok = ag_vocab_sorted_token(v, i, &n);
    uint32_t d = shared < good ? shared : good;
    while (d < n && ag_bit(cls, tok[d])) d++;
    last = i;
    good = d;
    if (d == n) {
      if (n <= len) {
        ag_bit_set(bits, i);
        ag_bit_set(ids, v->sorted_ids[i]);
      }
      i++;
    } else {
      i = ag_vocab_prefix_end(v, i, d + 1);
    }
  }
}

/* The vocabulary's shared-cache key of (cls, len, plain_only). */
static bool ag_class_key(const uint32_t cls[8], uint32_t len, bool plain_only, ag_vcache_key *key) {
  key->n = 10;
  if (!(key->words = malloc(key->n * sizeof *key->words))) return false;
  memcpy(key->words, cls, 8 * sizeof *cls);
  key->words[8] = len;
  key->words[9] = plain_only;
  ag_vcache_key_seal(key);
  return true;
}

/* A class, a length and whether only plain tokens count: what ag_make_class
 * fills a set with. */
typedef struct ag_class_ask {
  const uint32_t *cls;
  uint32_t len;
  bool plain_only;
} ag_class_ask;

/* Sets in bits the tokens of at most len bytes whose ASCII bytes all lie in
 * cls and that are plain (plain_only) or hold no byte from 0x80 up: one pass
 * over each token's byte set (ag_vocab.ascii_sets). */
static void ag_class_by_sets(const ag_vocab *v, const uint32_t cls[8], uint32_t len, bool plain_only,
                             uint32_t *bits) {
  uint32_t *ids = bits + ag_pos_words(v);
  uint64_t out0 = ~((uint64_t)cls[1] << 32 | cls[0]), out1 = ~((uint64_t)cls[3] << 32 | cls[2]);
  for (int32_t i = 0; i < v->n_sorted; i++) {
    const uint64_t *set = v->ascii_sets + 2 * (size_t)i;
    if ((set[0] & out0) | (set[1] & out1)) continue;
    if (plain_only ? !ag_bit(v->plain, i) : ag_bit(v->has_wide, i)) continue;
    uint32_t n = ag_vocab_sorted_len(v, i);
    if (n == 0 || n > len) continue;
    ag_bit_set(bits, i);
    ag_bit_set(ids, v->sorted_ids[i]);
  }
}

/* The tokens of ctx's class and length, positions then ids (ag_vcache_make). */
static ag_status ag_make_class(const ag_vocab *v, const void *ctx, uint32_t *bits, ag_error *err) {
  (void)err;
  const ag_class_ask *ask = ctx;
  bool wide = (ask->cls[4] | ask->cls[5] | ask->cls[6] | ask->cls[7]) != 0;
  if (ask->plain_only || !wide) { /* (a plain class holds every byte from 0x80 up) */
    ag_class_by_sets(v, ask->cls, ask->len, ask->plain_only, bits);
    return AG_OK;
  }
  for (int c = 0; c < 256; c++)
    if (ag_bit(ask->cls, c)) ag_class_scan(v, ask->cls, ask->len, c, bits);
  return AG_OK;
}

ag_status ag_vocab_class_tokens(const ag_vocab *v, const uint32_t cls[8], uint32_t len,
                                bool plain_only, const uint32_t **out, uint32_t **owned,
                                ag_error *err) {
  ag_vcache_key key;
  ag_class_ask ask = {cls, len, plain_only};
  *owned = NULL;
  if (!ag_class_key(cls, len, plain_only, &key))
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory finding a class's tokens");
  ag_vcache_maker maker = {ag_safe_words(v), ag_make_class, &ask};
  return ag_vcache_bits(v, AG_VCACHE_CLASS_TOKENS, &key, &maker, out, owned, err);
}

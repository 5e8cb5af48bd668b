/* ag_plain_tokens.c - plain tokens and the states that take them all (see the header). */
#include "ag_plain_tokens.h"

#include "ag_dispatch.h"

/* The plain-character automaton: state 0 is between characters (the only
 * accepting one); the others are inside a multi-byte character. */
enum { AG_PLAIN_STATES = 8 };

typedef struct ag_plain_edge {
  uint8_t lo, hi, to;
} ag_plain_edge;

static const ag_plain_edge ag_plain_edges[] = {
    /* 0: a character starts */
    {0x20, 0x21, 0}, {0x23, 0x5B, 0}, {0x5D, 0x7F, 0}, {0xC2, 0xDF, 1}, {0xE0, 0xE0, 4},
    {0xE1, 0xEC, 2}, {0xED, 0xED, 5}, {0xEE, 0xEF, 2}, {0xF0, 0xF0, 6}, {0xF1, 0xF3, 3},
    {0xF4, 0xF4, 7},
    /* 1: one continuation byte left */
    {0x80, 0xBF, 0},
    /* 2: two left */
    {0x80, 0xBF, 1},
    /* 3: three left */
    {0x80, 0xBF, 2},
    /* 4: after E0 (no overlong forms) */
    {0xA0, 0xBF, 1},
    /* 5: after ED (no surrogates) */
    {0x80, 0x9F, 1},
    /* 6: after F0 (no overlong forms) */
    {0x90, 0xBF, 2},
    /* 7: after F4 (nothing past U+10FFFF) */
    {0x80, 0x8F, 2},
};
/* Where each state's edges begin in ag_plain_edges. */
static const uint8_t ag_plain_at[AG_PLAIN_STATES + 1] = {0, 11, 12, 13, 14, 15, 16, 17, 18};

/* The plain-automaton state after byte c from u, or -1. */
static int ag_plain_step(int u, uint8_t c) {
  for (int e = ag_plain_at[u]; e < ag_plain_at[u + 1]; e++)
    if (c >= ag_plain_edges[e].lo && c <= ag_plain_edges[e].hi) return ag_plain_edges[e].to;
  return -1;
}

ag_status ag_plain_tokens_index(const ag_vocab *v, uint32_t **plain, uint32_t **skip,
                                ag_error *err) {
  uint32_t *bits = calloc(ag_safe_words(v), sizeof *bits);
  uint32_t *skips = calloc(ag_pos_words(v), sizeof *skips);
  if (!bits || !skips) {
    free(bits);
    free(skips);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  }
  uint32_t *ids = bits + ag_pos_words(v);
  for (int32_t i = 0; i < v->n_sorted; i++) {
    uint32_t len, k = 0;
    const uint8_t *tok = ag_vocab_sorted_token(v, i, &len);
    int u = 0;
    for (; k < len && u >= 0 && !(u == 0 && tok[k] < 0x20); k++) u = ag_plain_step(u, tok[k]);
    if (k == len && u >= 0) { /* whole characters, the last one possibly cut short */
      ag_bit_set(bits, i);
      ag_bit_set(ids, v->sorted_ids[i]);
      ag_bit_set(skips, i);
    } else if (k < len && u == 0) { /* stopped between characters: at a control byte */
      ag_bit_set(skips, i);
    }
  }
  *plain = bits;
  *skip = skips;
  return AG_OK;
}

/* The bytes of tok[0 .. len) that begin a UTF-8 character (not 10xxxxxx). */
static uint32_t ag_char_starts(const uint8_t *tok, uint32_t len) {
  uint32_t k = 0, cont = 0;
  for (; k + 8 <= len; k += 8) { /* eight at a time: bit 7 set, bit 6 clear */
    uint64_t x;
    memcpy(&x, tok + k, 8);
    cont += (uint32_t)__builtin_popcountll(x & ~(x << 1) & 0x8080808080808080ull);
  }
  for (; k < len; k++) cont += (tok[k] & 0xC0) == 0x80;
  return len - cont;
}

ag_status ag_plain_chars_index(ag_vocab *v, ag_error *err) {
  int32_t n = v->n_sorted, n_plain = 0, max = 0;
  v->chars = malloc(((size_t)n + 1) * sizeof *v->chars);
  if (!v->chars) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  for (int32_t i = 0; i < n; i++) {
    uint32_t len;
    const uint8_t *tok = ag_vocab_sorted_token(v, i, &len);
    uint32_t k = ag_char_starts(tok, len);
    v->chars[i] = (uint16_t)(k < UINT16_MAX ? k : UINT16_MAX);
    if (ag_bit(v->plain, i)) {
      n_plain++;
      if (v->chars[i] > max) max = v->chars[i];
    }
  }
  v->max_plain_chars = max;
  v->plain_chars_first = calloc((size_t)max + 2, sizeof *v->plain_chars_first);
  v->plain_by_chars = malloc(((size_t)n_plain + 1) * sizeof *v->plain_by_chars);
  if (!v->plain_chars_first || !v->plain_by_chars)
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  for (int32_t i = 0; i < n; i++)
    if (ag_bit(v->plain, i)) v->plain_chars_first[v->chars[i] + 1]++;
  for (int32_t k = 0; k <= max; k++) v->plain_chars_first[k + 1] += v->plain_chars_first[k];
  int32_t *next = malloc(((size_t)max + 1) * sizeof *next);
  if (!next) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory indexing the vocabulary");
  memcpy(next, v->plain_chars_first, ((size_t)max + 1) * sizeof *next);
  for (int32_t i = 0; i < n; i++)
    if (ag_bit(v->plain, i)) v->plain_by_chars[next[v->chars[i]]++] = i;
  free(next);
  return AG_OK;
}

/* A visited pair of the simulation: a grammar state and a plain-automaton state. */
typedef struct ag_plain_pair {
  int32_t state;
  int32_t u;
} ag_plain_pair;

/* The simulation's queue and seen set start small and double up to the bound:
 * most simulations meet a few dozen pairs, and a table sized for the bound
 * (112 KB, zeroed) cost more than the simulation. */
#define AG_PLAIN_FIRST_PAIRS 64

typedef struct ag_plain_sim {
  ag_plain_pair *queue; /* [cap] */
  uint32_t *depth;      /* [cap] */
  int32_t n, cap;
  uint64_t *seen; /* [2 * cap] open addressing; 0: empty (keys are + 1) */
} ag_plain_sim;

static void ag_plain_sim_free(ag_plain_sim *x) {
  free(x->queue);
  free(x->depth);
  free(x->seen);
}

static uint32_t ag_plain_slot(uint64_t key, int32_t cap) {
  return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40) & (2 * (uint32_t)cap - 1);
}

/* Doubles the room for pairs (the seen set rehashed); false when out of memory. */
static bool ag_plain_sim_grow(ag_plain_sim *x, int32_t cap) {
  ag_plain_pair *queue = realloc(x->queue, (size_t)cap * sizeof *queue);
  if (queue) x->queue = queue;
  uint32_t *depth = realloc(x->depth, (size_t)cap * sizeof *depth);
  if (depth) x->depth = depth;
  uint64_t *seen = calloc(2 * (size_t)cap, sizeof *seen);
  if (!queue || !depth || !seen) {
    free(seen);
    return false;
  }
  for (int32_t k = 0; k < 2 * x->cap; k++) {
    if (!x->seen[k]) continue;
    uint32_t i = ag_plain_slot(x->seen[k], cap);
    while (seen[i]) i = (i + 1) & (2 * (uint32_t)cap - 1);
    seen[i] = x->seen[k];
  }
  free(x->seen);
  x->seen = seen;
  x->cap = cap;
  return true;
}

/* An empty simulation with room for AG_PLAIN_FIRST_PAIRS pairs; false (nothing
 * left to free) when out of memory. */
static bool ag_plain_sim_init(ag_plain_sim *x) {
  *x = (ag_plain_sim){NULL, NULL, 0, 0, NULL};
  if (ag_plain_sim_grow(x, AG_PLAIN_FIRST_PAIRS)) return true;
  ag_plain_sim_free(x);
  return false;
}

/* Queues (s, u) at depth d unless seen (breadth first: seen at a depth no
 * larger, whose check covers this one). False when the bound is passed (or
 * memory runs out, which ends the simulation as the bound does). */
static bool ag_plain_push(ag_plain_sim *x, int32_t s, int u, uint32_t d) {
  uint64_t key = ((uint64_t)(uint32_t)s << 3 | (uint64_t)u) + 1;
  uint32_t i = ag_plain_slot(key, x->cap);
  for (; x->seen[i]; i = (i + 1) & (2 * (uint32_t)x->cap - 1))
    if (x->seen[i] == key) return true;
  if (x->n >= AG_PLAIN_MAX_PAIRS) return false;
  if (x->n == x->cap) {
    if (!ag_plain_sim_grow(x, 2 * x->cap)) return false;
    for (i = ag_plain_slot(key, x->cap); x->seen[i]; i = (i + 1) & (2 * (uint32_t)x->cap - 1))
      continue;
  }
  x->seen[i] = key;
  x->queue[x->n] = (ag_plain_pair){s, u};
  x->depth[x->n++] = d;
  return true;
}

/* Whether state s of g has byte edges over all of [lo, hi] (edges sorted,
 * disjoint). With x, each piece's target is queued with plain state `to` at
 * depth d (and a full queue fails); without, it is only a check. */
static bool ag_plain_covers(const ag_grammar *g, ag_plain_sim *x, int32_t s, unsigned lo,
                            unsigned hi, int to, uint32_t d) {
  const ag_state *st = &g->states[s];
  unsigned next = lo; /* the first byte not yet covered */
  for (uint32_t e = st->byte_begin; e < st->byte_end && next <= hi; e++) {
    const ag_byte_edge *be = &g->byte_edges[e];
    if (be->hi < next) continue;
    if (be->lo > next) return false; /* a gap */
    if (x && !ag_plain_push(x, be->target, to, d)) return false;
    next = (unsigned)be->hi + 1;
  }
  return next > hi;
}

/* ag_plain_covers over the bytes of [lo, hi] that lie in `only` (NULL: all of
 * them), each run of such bytes checked. */
static bool ag_plain_covers_only(const ag_grammar *g, ag_plain_sim *x, int32_t s, unsigned lo,
                                 unsigned hi, int to, uint32_t d, const uint32_t *only) {
  if (!only) return ag_plain_covers(g, x, s, lo, hi, to, d);
  for (unsigned c = lo; c <= hi; c++) {
    if (!ag_bit(only, (int32_t)c)) continue;
    unsigned end = c;
    while (end < hi && ag_bit(only, (int32_t)end + 1)) end++;
    if (!ag_plain_covers(g, x, s, c, end, to, d)) return false;
    c = end;
  }
  return true;
}

/* Whether state s has byte edges over every byte in `only` (NULL: all) that may
 * start a plain character: the test most states fail, made before anything is
 * allocated. */
static bool ag_plain_first_bytes(const ag_grammar *g, int32_t s, const uint32_t *only) {
  for (int e = ag_plain_at[0]; e < ag_plain_at[1]; e++)
    if (!ag_plain_covers_only(g, NULL, s, ag_plain_edges[e].lo, ag_plain_edges[e].hi, 0, 0, only))
      return false;
  return true;
}

/* Whether state s, reached between characters, refuses a control byte outright
 * (see ag_plain_depth's `refuses`); byte edges are sorted, so the first one tells. */
static bool ag_plain_refuses_control(const ag_grammar *g, int32_t s) {
  const ag_state *st = &g->states[s];
  if (st->accepting || st->rule_begin != st->rule_end) return false;
  return st->byte_begin == st->byte_end || g->byte_edges[st->byte_begin].lo >= 0x20;
}

/* ag_plain_depth over the plain strings whose bytes lie in `only` (NULL: all). */
static uint32_t ag_plain_depth_in(const ag_grammar *g, int32_t state, uint32_t depth, bool *refuses,
                                  const uint32_t *only) {
  if (refuses) *refuses = false;
  if (depth > 0 && !ag_plain_first_bytes(g, state, only)) return 0;
  ag_plain_sim sim, *x = &sim;
  if (!ag_plain_sim_init(x)) return 0; /* out of memory: the ordinary walk is always right */
  /* Breadth first: when the pair at the head fails (or the bound is passed),
   * every pair of a smaller depth has passed, so every plain string of the
   * head's depth is consumed. */
  uint32_t found = depth;
  bool ok = ag_plain_push(x, state, 0, 0);
  for (int32_t head = 0; ok && head < x->n; head++) {
    ag_plain_pair p = x->queue[head];
    if (x->depth[head] >= depth) continue;
    for (int e = ag_plain_at[p.u]; ok && e < ag_plain_at[p.u + 1]; e++)
      ok = ag_plain_covers_only(g, x, p.state, ag_plain_edges[e].lo, ag_plain_edges[e].hi,
                                ag_plain_edges[e].to, x->depth[head] + 1, only);
    if (!ok) found = x->depth[head];
  }
  /* Every pair met (a superset of those within the depth found) between characters. */
  bool all = found == depth;
  for (int32_t k = 0; all && refuses && k < x->n; k++)
    if (x->queue[k].u == 0 && !ag_plain_refuses_control(g, x->queue[k].state)) all = false;
  if (refuses) *refuses = all;
  ag_plain_sim_free(x);
  return found;
}

uint32_t ag_plain_depth(const ag_grammar *g, int32_t state, uint32_t depth, bool *refuses) {
  return ag_plain_depth_in(g, state, depth, refuses, NULL);
}

/* In cls, the plain ASCII bytes of state s's byte edges (with self_only, of
 * those back to s) and every byte from 0x80 up; false when no ASCII byte is in. */
static bool ag_plain_class_of(const ag_grammar *g, int32_t s, bool self_only, uint32_t cls[8]) {
  uint32_t have[8] = {0};
  const ag_state *st = &g->states[s];
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *be = &g->byte_edges[e];
    if (!self_only || be->target == s) ag_byteset_add_range(have, be->lo, be->hi);
  }
  memset(cls, 0, 8 * sizeof *cls);
  for (int e = ag_plain_at[0]; e < ag_plain_at[1]; e++) /* the plain automaton's ASCII edges */
    for (unsigned c = ag_plain_edges[e].lo; c <= ag_plain_edges[e].hi && c < 0x80; c++)
      if (ag_bit(have, (int32_t)c)) ag_bit_set(cls, (int32_t)c);
  bool any = (cls[0] | cls[1] | cls[2] | cls[3]) != 0;
  ag_byteset_add_range(cls, 0x80, 0xFF);
  return any;
}

bool ag_plain_loop_class(const ag_grammar *g, int32_t state, uint32_t cls[8]) {
  if (g->states[state].counted) return false; /* the parser bounds a counted rule's loop */
  /* all the state's plain ASCII bytes (a class's first character, whose next state
   * loops), else those of its own loop (a loop that a few bytes leave) */
  for (int self_only = 0; self_only < 2; self_only++)
    if (ag_plain_class_of(g, state, self_only, cls) &&
        ag_plain_depth_in(g, state, UINT32_MAX, NULL, cls) == UINT32_MAX)
      return true;
  return false;
}

uint32_t *ag_plain_tokens_upto(const ag_vocab *v, uint32_t len) {
  uint32_t *bits = malloc(ag_safe_words(v) * sizeof *bits);
  if (!bits) return NULL;
  memcpy(bits, v->plain, ag_safe_words(v) * sizeof *bits);
  uint32_t *ids = bits + ag_pos_words(v);
  int32_t n_long = len >= v->max_token_len ? 0 : v->n_longer[len];
  for (int32_t k = 0; k < n_long; k++) {
    ag_bit_clear(bits, v->by_len[k]);
    ag_bit_clear(ids, v->sorted_ids[v->by_len[k]]);
  }
  return bits;
}

bool ag_plain_chars_are_copies(const ag_grammar *g, int32_t state) {
  ag_plain_sim sim, *x = &sim;
  if (!ag_plain_sim_init(x)) return false; /* out of memory: the walk of every token is always right */
  bool ok = ag_plain_push(x, state, 0, 0);
  for (int32_t head = 0; ok && head < x->n; head++) {
    ag_plain_pair p = x->queue[head];
    /* the rule's start (a first copy's, never entered again) need not accept */
    bool start = head == 0 && state == g->rule_start[g->state_rule[state]];
    if (!start && g->states[p.state].accepting != (p.u == 0)) ok = false;
    for (int e = ag_plain_at[p.u]; ok && e < ag_plain_at[p.u + 1]; e++)
      ok = ag_plain_covers(g, x, p.state, ag_plain_edges[e].lo, ag_plain_edges[e].hi, ag_plain_edges[e].to, 0);
  }
  ag_plain_sim_free(x);
  return ok;
}

bool ag_plain_may_follow(const uint32_t follow[8]) {
  if (!follow) return true;
  for (int e = ag_plain_at[0]; e < ag_plain_at[1]; e++)
    for (unsigned c = ag_plain_edges[e].lo; c <= ag_plain_edges[e].hi; c++)
      if (ag_bit(follow, (int32_t)c)) return true;
  return false;
}

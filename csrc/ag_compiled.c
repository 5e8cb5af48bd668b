/* ag_compiled.c - a grammar bound to a vocabulary: what matchers run on, with the
 * per-state token-mask cache that every matcher of the grammar shares (and, for
 * a linked grammar, the compiled parts whose caches serve the part states). */
#include "ag_compiled.h"
#include "ag_background.h"
#include "ag_deferred.h"

/* The grammar's automata, which a compiled grammar holds (parts' automata are
 * copied into a linked grammar, so they count again there). */
static size_t ag_grammar_bytes(const ag_grammar *g) {
  size_t n = sizeof *g;
  n += (size_t)g->n_states * (sizeof(ag_state) + sizeof(int32_t));
  n += (size_t)g->n_rules * (sizeof(int32_t) + 2 * sizeof(bool) + sizeof(ag_repeat_bounds));
  return n + g->n_byte_edges * sizeof(ag_byte_edge) + g->n_rule_edges * sizeof(ag_rule_edge);
}

/* What the grammar adds to its vocabulary's count (ag_vocab_cache_bytes): its own
 * automata and cache; the same sum is taken off when it is freed. */
static size_t ag_compiled_counted_bytes(const ag_compiled *c) {
  return sizeof *c + ag_grammar_bytes(c->grammar) + ag_mask_cache_bytes(c->cache);
}

static ag_status ag_compiled_make(ag_grammar *grammar, ag_vocab *vocab, ag_compiled **out,
                                  ag_error *err) {
  *out = NULL;
  ag_compiled *c = calloc(1, sizeof *c);
  if (!c) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  atomic_init(&c->refs, 1);
  atomic_init(&c->background, NULL);
  ag_status st = ag_mask_cache_new(grammar, &c->cache, err);
  if (!st && grammar->n_parts && !(c->parts = calloc((size_t)grammar->n_parts, sizeof *c->parts)))
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  if (st) {
    ag_mask_cache_free(c->cache);
    free(c);
    return st;
  }
  ag_grammar_retain(grammar);
  ag_vocab_retain(vocab);
  c->grammar = grammar;
  c->vocab = vocab;
  ag_vocab_count(vocab, ag_compiled_counted_bytes(c));
  *out = c;
  return AG_OK;
}

ag_status ag_compiled_new(ag_grammar *grammar, ag_vocab *vocab, ag_compiled **out, ag_error *err) {
  if (out) *out = NULL;
  if (!grammar || !vocab || !out)
    return ag_fail(err, AG_ERR_INVALID, -1, "null grammar, vocabulary or out");
  if (grammar->n_parts)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "the grammar links %d parts: compile it with ag_compiled_new_linked",
                   grammar->n_parts);
  return ag_compiled_make(grammar, vocab, out, err);
}

ag_status ag_compiled_new_linked(ag_grammar *grammar, ag_vocab *vocab, ag_compiled *const *parts,
                                 int32_t n_parts, ag_compiled **out, ag_error *err) {
  if (out) *out = NULL;
  if (!grammar || !vocab || !out || (n_parts > 0 && !parts))
    return ag_fail(err, AG_ERR_INVALID, -1, "null grammar, vocabulary, parts or out");
  if (n_parts != grammar->n_parts)
    return ag_fail(err, AG_ERR_INVALID, -1, "the grammar links %d parts, %d were given",
                   grammar->n_parts, n_parts);
  for (int32_t k = 0; k < n_parts; k++)
    if (!parts[k] || parts[k]->grammar != grammar->parts[k] || parts[k]->vocab != vocab)
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "compiled part %d is not the grammar's part %d compiled for this vocabulary",
                     k, k);
  ag_status st = ag_compiled_make(grammar, vocab, out, err);
  if (st) return st;
  for (int32_t k = 0; k < n_parts; k++) {
    ag_compiled_retain(parts[k]);
    (*out)->parts[k] = parts[k];
  }
  return AG_OK;
}

void ag_compiled_retain(ag_compiled *c) { atomic_fetch_add(&c->refs, 1); }

void ag_compiled_free(ag_compiled *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  ag_background *b = atomic_load_explicit(&c->background, memory_order_acquire);
  if (b && !ag_background_release(b)) return; /* its worker destroys c after the slice */
  ag_compiled_destroy(c);
}

void ag_compiled_destroy(ag_compiled *c) {
  if (c->parts)
    for (int32_t k = 0; k < c->grammar->n_parts; k++) ag_compiled_free(c->parts[k]);
  free(c->parts);
  ag_deferred_free(c->deferred);
  ag_vocab_uncount(c->vocab, ag_compiled_counted_bytes(c));
  ag_mask_cache_free(c->cache);
  ag_grammar_free(c->grammar);
  ag_vocab_free(c->vocab);
  free(c);
}

/* The compiled grammar whose cache holds *state (a part, or c itself), with
 * *state made its own id there. */
static ag_compiled *ag_compiled_holder(ag_compiled *c, int32_t *state) {
  for (;;) {
    const ag_grammar *g = c->grammar;
    if (!g->n_parts || *state >= g->part_state_begin[g->n_parts]) return c;
    int32_t lo = 0, hi = g->n_parts - 1; /* the last part beginning at or before state */
    while (lo < hi) {
      int32_t mid = lo + (hi - lo + 1) / 2;
      if (g->part_state_begin[mid] <= *state) lo = mid;
      else hi = mid - 1;
    }
    *state -= g->part_state_begin[lo];
    c = c->parts[lo];
  }
}

ag_status ag_compiled_state_masks(ag_compiled *c, int32_t state, double deadline,
                                  const ag_state_masks **out, ag_error *err) {
  ag_compiled *h = ag_compiled_holder(c, &state);
  return ag_mask_cache_get(h->cache, h->grammar, h->vocab, state, deadline, false, NULL, out, err);
}

ag_status ag_compiled_state_masks_lock_free(ag_compiled *c, int32_t state, const atomic_bool *stop,
                                            const ag_state_masks **out, ag_error *err) {
  ag_compiled *h = ag_compiled_holder(c, &state);
  return ag_mask_cache_get(h->cache, h->grammar, h->vocab, state, 0, true, stop, out, err);
}

ag_status ag_compiled_state_copies(ag_compiled *c, int32_t state, const struct ag_copies **out,
                                   ag_error *err) {
  ag_compiled *h = ag_compiled_holder(c, &state);
  return ag_mask_cache_copies(h->cache, h->grammar, h->vocab, state, out, err);
}

const ag_state_masks *ag_compiled_state_peek(ag_compiled *c, int32_t state) {
  ag_compiled *h = ag_compiled_holder(c, &state);
  return ag_mask_cache_peek(h->cache, state);
}

/* Where the words of trie rule t first differ: from its start, along the
 * states that take one byte to one state (the prefix every word shares);
 * bounded, the trie being acyclic. */
static int32_t ag_trie_branch(const ag_grammar *g, int32_t t) {
  int32_t s = g->rule_start[t];
  for (int steps = 0; steps < 256; steps++) {
    const ag_state *st = &g->states[s];
    if (st->accepting || st->rule_begin != st->rule_end || st->byte_end - st->byte_begin != 1) break;
    const ag_byte_edge *e = &g->byte_edges[st->byte_begin];
    if (e->lo != e->hi) break;
    s = e->target;
  }
  return s;
}

ag_status ag_compiled_prepare_triggers(ag_compiled *c, ag_error *err) {
  if (!c) return ag_fail(err, AG_ERR_INVALID, -1, "null compiled grammar");
  const ag_grammar *g = c->grammar;
  if (!g->rule_dispatch) return AG_OK;
  int32_t own = g->n_parts ? g->part_state_begin[g->n_parts] : 0;
  bool *seen = calloc((size_t)g->n_rules, sizeof *seen);
  if (!seen) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  ag_status st = AG_OK;
  /* A trigger is a rule edge of its dispatch rule's automaton (ag_fsm.c). */
  for (int32_t s = own; s < g->n_states && !st; s++) {
    if (!g->rule_dispatch[g->state_rule[s]]) continue;
    for (uint32_t e = g->states[s].rule_begin; e < g->states[s].rule_end && !st; e++) {
      int32_t t = g->rule_edges[e].rule;
      if (seen[t] || !g->rule_trie[t] || g->rule_start[t] < own) continue; /* parts stay lazy */
      seen[t] = true;
      const ag_state_masks *masks;
      st = ag_compiled_state_masks(c, ag_trie_branch(g, t), 0, &masks, err);
    }
  }
  free(seen);
  return st;
}

size_t ag_compiled_memory_bytes(const ag_compiled *c) {
  const ag_vocab *v = c->vocab;
  size_t n = ag_compiled_counted_bytes(c) + sizeof *v;
  const ag_compiled *full = c->deferred ? ag_deferred_ready(c->deferred) : NULL;
  if (full) n += ag_compiled_counted_bytes(full);
  n += v->offsets[v->n_tokens] + (size_t)v->n_tokens * (sizeof(uint32_t) + 1);
  n += ((size_t)v->max_token_len + 1) * sizeof *v->n_longer; /* the index by length */
  n += (2 * ag_pos_words(v) + ag_mask_words(v)) * sizeof *v->plain; /* the plain tokens, and to skip */
  /* the characters of each token, the plain ones by characters (ag_vocab.chars) */
  n += (size_t)v->n_sorted * (sizeof *v->chars + sizeof *v->plain_by_chars) +
       ((size_t)v->max_plain_chars + 2) * sizeof *v->plain_chars_first;
  return n + (size_t)v->n_sorted * (2 * sizeof(int32_t) + sizeof(uint16_t));
}

/* Adds compiled grammar c's stats, its parts' included, to *out. */
static void ag_compiled_add_stats(const ag_compiled *c, ag_cache_stats *out) {
  ag_cache_stats own;
  ag_compiled_cache_stats(c, &own);
  out->walked += own.walked;
  out->derived += own.derived;
  out->shared += own.shared;
  out->plain += own.plain;
  out->classed += own.classed;
}

void ag_compiled_cache_stats(const ag_compiled *c, ag_cache_stats *out) {
  memset(out, 0, sizeof *out);
  ag_mask_cache_add_stats(c->cache, out);
  for (int32_t k = 0; c->parts && k < c->grammar->n_parts; k++) ag_compiled_add_stats(c->parts[k], out);
  const ag_compiled *full = c->deferred ? ag_deferred_ready(c->deferred) : NULL;
  if (full) ag_compiled_add_stats(full, out); /* the grammar the first masks stood for */
}

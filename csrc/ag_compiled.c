/* ag_compiled.c - a grammar bound to a vocabulary: what matchers run on, with the
 * per-state token-mask cache that every matcher of the grammar shares. */
#include "ag_mask_cache.h"

ag_status ag_compiled_new(ag_grammar *grammar, ag_vocab *vocab, ag_compiled **out, ag_error *err) {
  *out = NULL;
  if (!grammar || !vocab) return ag_fail(err, AG_ERR_INVALID, -1, "null grammar or vocabulary");
  ag_compiled *c = calloc(1, sizeof *c);
  if (!c) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  atomic_init(&c->refs, 1);
  ag_status st = ag_mask_cache_new(grammar, &c->cache, err);
  if (st) {
    free(c);
    return st;
  }
  ag_grammar_retain(grammar);
  ag_vocab_retain(vocab);
  c->grammar = grammar;
  c->vocab = vocab;
  *out = c;
  return AG_OK;
}

void ag_compiled_retain(ag_compiled *c) { atomic_fetch_add(&c->refs, 1); }

void ag_compiled_free(ag_compiled *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  ag_mask_cache_free(c->cache);
  ag_grammar_free(c->grammar);
  ag_vocab_free(c->vocab);
  free(c);
}

size_t ag_compiled_memory_bytes(const ag_compiled *c) {
  const ag_grammar *g = c->grammar;
  const ag_vocab *v = c->vocab;
  size_t n = sizeof *c + sizeof *g + sizeof *v;
  n += (size_t)g->n_states * (sizeof(ag_state) + sizeof(int32_t));
  n += (size_t)g->n_rules * (sizeof(int32_t) + sizeof(bool));
  n += g->n_byte_edges * sizeof(ag_byte_edge) + g->n_rule_edges * sizeof(ag_rule_edge);
  n += v->offsets[v->n_tokens] + (size_t)v->n_tokens * (sizeof(uint32_t) + 1);
  n += (size_t)v->n_sorted * (sizeof(int32_t) + sizeof(uint16_t));
  return n + ag_mask_cache_bytes(c->cache);
}

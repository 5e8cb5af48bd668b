/*
 * ag_follow.c - the bytes that may follow each rule (FOLLOW sets).
 *
 * A token that runs past the end of a rule inside the rule's own walk is only
 * uncertain when the byte after the end may follow the rule somewhere in the
 * grammar. Inside a JSON string, '"' then a letter can never follow (a string
 * value is followed by ',', '}', ']', ':' or whitespace), so the thousands of
 * tokens like '"s' are rejected when the state is classified instead of being
 * checked by the parser at every mask.
 *
 * The sets are over-approximations (more bytes is always sound): nullable
 * chains are followed to a bounded depth, the rules of linked parts count as
 * "anything", and the root may be followed by anything (a grammar compiled on
 * its own may be linked into another as a part).
 */
#include "ag_follow.h"

#define AG_FOLLOW_DEPTH 4   /* nullable rule edges followed; past it, every byte */
#define AG_FOLLOW_ROUNDS 64 /* fixpoint rounds; past it, every rule may be followed by anything */

static void ag_set_all(uint32_t *s) { memset(s, 0xff, 8 * sizeof *s); }

static bool ag_or_into(uint32_t *dst, const uint32_t *src) {
  bool changed = false;
  for (int k = 0; k < 8; k++) {
    uint32_t n = dst[k] | src[k];
    changed |= n != dst[k];
    dst[k] = n;
  }
  return changed;
}

typedef struct ag_follow_ctx {
  const ag_grammar *g;
  int32_t part_rules; /* rules below this id belong to linked parts */
  uint32_t *first;    /* [n_rules * 8] */
} ag_follow_ctx;

/* The bytes a derivation from state t can scan first, added to out. */
static void ag_state_first(const ag_follow_ctx *x, int32_t t, int depth, uint32_t *out) {
  const ag_grammar *g = x->g;
  const ag_state *st = &g->states[t];
  if (depth > AG_FOLLOW_DEPTH) {
    ag_set_all(out);
    return;
  }
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++)
    ag_byteset_add_range(out, g->byte_edges[e].lo, g->byte_edges[e].hi);
  for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
    int32_t r = g->rule_edges[e].rule;
    if (r < x->part_rules) {
      ag_set_all(out);
      return;
    }
    ag_or_into(out, x->first + (size_t)r * 8);
    if (g->rule_nullable[r]) ag_state_first(x, g->rule_edges[e].target, depth + 1, out);
  }
}

/* Whether a derivation from state t can end its rule without scanning a byte. */
static bool ag_state_can_end(const ag_grammar *g, int32_t t, int depth) {
  const ag_state *st = &g->states[t];
  if (st->accepting || depth > AG_FOLLOW_DEPTH) return true;
  for (uint32_t e = st->rule_begin; e < st->rule_end; e++)
    if (g->rule_nullable[g->rule_edges[e].rule] &&
        ag_state_can_end(g, g->rule_edges[e].target, depth + 1))
      return true;
  return false;
}

/* FIRST of the grammar's own rules, to a fixpoint; false when it took too many rounds. */
static bool ag_first_sets(const ag_follow_ctx *x) {
  const ag_grammar *g = x->g;
  for (int round = 0; round < AG_FOLLOW_ROUNDS; round++) {
    bool changed = false;
    for (int32_t r = x->part_rules; r < g->n_rules; r++) {
      uint32_t tmp[8] = {0};
      ag_state_first(x, g->rule_start[r], 0, tmp);
      changed |= ag_or_into(x->first + (size_t)r * 8, tmp);
    }
    if (!changed) return true;
  }
  return false;
}

/* A rule edge of the grammar's own states and what may come after it. */
typedef struct ag_follow_edge {
  int32_t rule, from; /* the edge's rule, and the rule of the state it leaves */
  bool can_end;       /* from its target, `from` can end without a byte */
  uint32_t first[8];  /* the bytes its target can scan first */
} ag_follow_edge;

/* FOLLOW of the grammar's own rules, to a fixpoint; false when it took too many
 * rounds or memory ran out. FIRST is final by now, so what comes after each
 * rule edge is found once; the rounds revisit the edges alone, not every state
 * (a request's name trie has thousands, and its rule edges wait at the leaves). */
static bool ag_follow_sets(const ag_follow_ctx *x, int32_t first_state, uint32_t *follow) {
  const ag_grammar *g = x->g;
  AG_VEC(ag_follow_edge) edges = {0};
  bool ok = true;
  for (int32_t s = first_state; s < g->n_states && ok; s++) {
    const ag_state *st = &g->states[s];
    for (uint32_t e = st->rule_begin; e < st->rule_end && ok; e++) {
      int32_t r = g->rule_edges[e].rule, t = g->rule_edges[e].target;
      if (r < x->part_rules) continue; /* a part's masks come from its own grammar */
      ag_follow_edge fe = {r, g->state_rule[s], ag_state_can_end(g, t, 0), {0}};
      ag_state_first(x, t, 0, fe.first);
      ok = ag_vec_push(&edges, fe);
    }
  }
  bool settled = false;
  for (int round = 0; ok && round < AG_FOLLOW_ROUNDS && !settled; round++) {
    settled = true;
    for (size_t k = 0; k < edges.len; k++) {
      const ag_follow_edge *fe = &edges.data[k];
      uint32_t tmp[8];
      memcpy(tmp, fe->first, sizeof tmp);
      if (fe->can_end) ag_or_into(tmp, follow + (size_t)fe->from * 8);
      if (ag_or_into(follow + (size_t)fe->rule * 8, tmp)) settled = false;
    }
  }
  ag_vec_free(&edges);
  return ok && settled;
}

ag_status ag_grammar_follow(const ag_grammar *g, uint32_t **out, ag_error *err) {
  size_t words = (size_t)g->n_rules * 8;
  ag_follow_ctx x = {g, g->n_parts ? g->part_rule_begin[g->n_parts] : 0, calloc(words, 4)};
  uint32_t *follow = calloc(words ? words : 1, 4);
  *out = NULL;
  if (!x.first || !follow) {
    free(x.first);
    free(follow);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory computing follow sets");
  }
  for (int32_t r = 0; r < x.part_rules; r++) ag_set_all(follow + (size_t)r * 8);
  if (g->root >= 0 && g->root < g->n_rules) ag_set_all(follow + (size_t)g->root * 8);
  int32_t first_state = g->n_parts ? g->part_state_begin[g->n_parts] : 0;
  if (!ag_first_sets(&x) || !ag_follow_sets(&x, first_state, follow))
    memset(follow, 0xff, words * 4); /* gave up: anything may follow anything */
  free(x.first);
  *out = follow;
  return AG_OK;
}

/*
 * ag_minimize.c - merging the equivalent states of the rule just built.
 *
 * Subset construction leaves equivalent states behind, e.g. one state per
 * UTF-8 byte sequence of a class even where the sequences share their tails,
 * and downstream work (Earley items, per-state token masks) scales with the
 * state count. States with the same acceptance and the same edges, up to
 * targets already merged, are merged until a round changes nothing. Each
 * merge preserves every state's language, so this is always sound. It
 * reaches the minimal automaton on acyclic parts, in one round there: states
 * are visited in depth-first postorder, every target before its sources but
 * where a cycle closes (reverse breadth-first order, used before, met a
 * target first only along tree edges and took three or four rounds where
 * paths of different lengths join). Equivalent states on distinct cycles may
 * stay apart, which is harmless.
 */
#include "ag_fsm_builder.h"

static int32_t ag_min_find(int32_t *rep, int32_t s) {
  while (rep[s] != s) s = rep[s] = rep[rep[s]]; /* path halving */
  return s;
}

/* Appends local state s's signature to b->sig: acceptance, the byte edges
 * with each target replaced by its class (re-merging ranges that now meet),
 * a -1 separator (no byte is negative), then the rule edges likewise. */
static ag_status ag_min_signature(ag_builder *b, int32_t s, uint32_t *len) {
  const ag_state *st = &b->states.data[b->base + s];
  size_t need = 2 + 3 * (size_t)(st->byte_end - st->byte_begin) +
                2 * (size_t)(st->rule_end - st->rule_begin);
  if (!ag_vec_reserve(&b->sig, b->sig.len + need)) return ag_builder_nomem(b);
  int32_t *w = b->sig.data + b->sig.len, *rep = b->rep.data, *rank = b->rank.data;
  uint32_t *watch = b->watch.data, gen = b->min_gen;
  size_t n = 0;
  w[n++] = st->accepting;
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *be = &b->byte_edges.data[e];
    int32_t t = ag_min_find(rep, be->target - b->base);
    if (rank[t] > rank[s]) watch[t] = gen;
    if (n > 1 && w[n - 1] == t && w[n - 2] + 1 == be->lo) {
      w[n - 2] = be->hi;
    } else {
      w[n++] = be->lo;
      w[n++] = be->hi;
      w[n++] = t;
    }
  }
  w[n++] = -1;
  for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
    int32_t t = ag_min_find(rep, b->rule_edges.data[e].target - b->base);
    if (rank[t] > rank[s]) watch[t] = gen;
    w[n++] = b->rule_edges.data[e].rule;
    w[n++] = t;
  }
  *len = (uint32_t)n;
  b->sig.len += n;
  return AG_OK;
}

/* The table slot holding a representative with the signature w, or the
 * empty slot where it belongs. */
static size_t ag_min_lookup(const ag_builder *b, const int32_t *w, uint32_t n, uint32_t h) {
  size_t mask = b->table_cap - 1, i = h & mask;
  for (; b->table[i].gen == b->table_gen; i = (i + 1) & mask) {
    const ag_min_sig *o = &b->sigs.data[b->table[i].id];
    if (o->hash == h && o->len == n && ag_words_equal(b->sig.data + o->at, w, n)) break;
  }
  return i;
}

/* One round over the k states: each representative either joins an earlier
 * one with the same signature or becomes a class of its own. With `only`, the
 * states it marks 0 (known to be equivalent to no other) are left as they are.
 * `again` says whether another round may merge more: only when a state merged
 * after a signature read its class (watch). Otherwise every signature of this
 * round still holds, and those of the classes left all differ. */
static ag_status ag_min_round(ag_builder *b, int32_t k, const uint8_t *only, bool *merged,
                              bool *again) {
  b->table_gen++;
  b->sig.len = 0;
  if (++b->min_gen == 0) { /* wrapped: forget every old mark */
    memset(b->watch.data, 0, b->watch.len * sizeof *b->watch.data);
    b->min_gen = 1;
  }
  for (int32_t i = 0; i < k; i++) {
    int32_t s = b->post.data[i];
    if (b->rep.data[s] != s || (only && !only[s])) continue;
    size_t at = b->sig.len;
    uint32_t n = 0;
    ag_status st = ag_min_signature(b, s, &n);
    if (st) return st;
    uint32_t h = ag_set_hash(b->sig.data + at, n);
    size_t i = ag_min_lookup(b, b->sig.data + at, n, h);
    if (b->table[i].gen == b->table_gen) {
      b->rep.data[s] = b->table[i].id;
      b->sig.len = at;
      *merged = true;
      *again |= b->watch.data[s] == b->min_gen;
    } else {
      b->table[i].gen = b->table_gen;
      b->table[i].id = s;
      b->sigs.data[s] = (ag_min_sig){at, n, h};
    }
  }
  return AG_OK;
}

/* Gives the class of old global state t the next new id, once. */
static void ag_min_visit(ag_builder *b, int32_t t) {
  int32_t c = ag_min_find(b->rep.data, t - b->base);
  if (b->new_id.data[c] >= 0) return;
  b->new_id.data[c] = (int32_t)b->order.len;
  b->order.data[b->order.len++] = c;
}

/* Numbers the classes breadth-first from the start's class, byte edges
 * before rule edges like the subset construction: the numbering stays
 * canonical and the start stays first. Every class is reached, since every
 * DFA state was reachable from the start. */
static void ag_min_order(ag_builder *b, int32_t k) {
  for (int32_t s = 0; s < k; s++) b->new_id.data[s] = -1;
  b->order.len = 0;
  ag_min_visit(b, b->base);
  for (size_t i = 0; i < b->order.len; i++) {
    const ag_state *st = &b->states.data[b->base + b->order.data[i]];
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++)
      ag_min_visit(b, b->byte_edges.data[e].target);
    for (uint32_t e = st->rule_begin; e < st->rule_end; e++)
      ag_min_visit(b, b->rule_edges.data[e].target);
  }
}

/* The new global id of the class of old global state t. */
static int32_t ag_min_target(ag_builder *b, int32_t t) {
  return b->base + b->new_id.data[ag_min_find(b->rep.data, t - b->base)];
}

/* Writes class s (old local id) as a state into the tmp arrays, with
 * retargeted edges and re-merged byte ranges. */
static ag_status ag_min_emit(ag_builder *b, int32_t s, uint32_t first_b, uint32_t first_r) {
  const ag_state *old = &b->states.data[b->base + s];
  ag_state ns = {first_b + (uint32_t)b->tmp_bytes.len, 0, first_r + (uint32_t)b->tmp_rules.len, 0,
                 old->accepting, false, false, 0};
  size_t b0 = b->tmp_bytes.len;
  for (uint32_t e = old->byte_begin; e < old->byte_end; e++) {
    ag_byte_edge be = b->byte_edges.data[e];
    be.target = ag_min_target(b, be.target);
    ag_byte_edge *last = b->tmp_bytes.len > b0 ? &b->tmp_bytes.data[b->tmp_bytes.len - 1] : 0;
    if (last && last->target == be.target && last->hi + 1 == be.lo)
      last->hi = be.hi;
    else if (!ag_vec_push(&b->tmp_bytes, be))
      return ag_builder_nomem(b);
  }
  for (uint32_t e = old->rule_begin; e < old->rule_end; e++) {
    ag_rule_edge re = b->rule_edges.data[e];
    re.target = ag_min_target(b, re.target);
    if (!ag_vec_push(&b->tmp_rules, re)) return ag_builder_nomem(b);
  }
  ns.byte_end = first_b + (uint32_t)b->tmp_bytes.len;
  ns.rule_end = first_r + (uint32_t)b->tmp_rules.len;
  return ag_vec_push(&b->tmp_states, ns) ? AG_OK : ag_builder_nomem(b);
}

/* Replaces the rule's states and edges (the tails of the output arrays) by
 * the quotient automaton. It is never larger, so copying back cannot fail. */
static ag_status ag_min_rebuild(ag_builder *b, int32_t k) {
  uint32_t first_b = b->states.data[b->base].byte_begin;
  uint32_t first_r = b->states.data[b->base].rule_begin;
  b->tmp_states.len = b->tmp_bytes.len = b->tmp_rules.len = 0;
  ag_min_order(b, k);
  for (size_t i = 0; i < b->order.len; i++) {
    ag_status st = ag_min_emit(b, b->order.data[i], first_b, first_r);
    if (st) return st;
  }
  memcpy(b->states.data + b->base, b->tmp_states.data, b->tmp_states.len * sizeof(ag_state));
  b->states.len = b->state_rule.len = (size_t)b->base + b->tmp_states.len;
  if (b->tmp_bytes.len)
    memcpy(b->byte_edges.data + first_b, b->tmp_bytes.data, b->tmp_bytes.len * sizeof(ag_byte_edge));
  b->byte_edges.len = first_b + b->tmp_bytes.len;
  if (b->tmp_rules.len)
    memcpy(b->rule_edges.data + first_r, b->tmp_rules.data, b->tmp_rules.len * sizeof(ag_rule_edge));
  b->rule_edges.len = first_r + b->tmp_rules.len;
  return AG_OK;
}

/* Grows the interning table to at least 2 * k slots (load factor <= 1/2). */
static ag_status ag_min_table(ag_builder *b, size_t k) {
  size_t cap = b->table_cap;
  while (cap < 2 * k) cap *= 2;
  if (cap == b->table_cap) return AG_OK;
  ag_dfa_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_builder_nomem(b);
  free(b->table);
  b->table = t;
  b->table_cap = cap;
  return AG_OK;
}

/* The target of edge i of local state s (byte edges, then rule edges), local;
 * -1 past its last edge. */
static int32_t ag_min_edge(const ag_builder *b, int32_t s, uint32_t i) {
  const ag_state *st = &b->states.data[b->base + s];
  uint32_t nb = st->byte_end - st->byte_begin;
  if (i < nb) return b->byte_edges.data[st->byte_begin + i].target - b->base;
  if (i - nb >= st->rule_end - st->rule_begin) return -1;
  return b->rule_edges.data[st->rule_begin + i - nb].target - b->base;
}

/* Runs the depth-first search on b->dfs to its end, appending each state to
 * post (and its rank) once every edge out of it is done. */
static void ag_min_dfs(ag_builder *b) {
  int32_t *rank = b->rank.data;
  while (b->dfs.len) {
    uint64_t top = b->dfs.data[b->dfs.len - 1];
    int32_t s = (int32_t)(top >> 32), t;
    uint32_t i = (uint32_t)top;
    while ((t = ag_min_edge(b, s, i)) >= 0 && rank[t] != -1) i++;
    if (t < 0) { /* every edge done: s is finished */
      b->dfs.len--;
      rank[s] = (int32_t)b->post.len;
      b->post.data[b->post.len++] = s;
      continue;
    }
    b->dfs.data[b->dfs.len - 1] = ((uint64_t)s << 32) | (i + 1);
    rank[t] = -2;
    b->dfs.data[b->dfs.len++] = (uint64_t)t << 32;
  }
}

/* Orders the k local states in depth-first postorder (post), each with its
 * index (rank): from the start, which reaches every state, then from any
 * state left, to be safe. */
static ag_status ag_min_postorder(ag_builder *b, int32_t k) {
  if (!ag_vec_reserve(&b->post, (size_t)k) || !ag_vec_reserve(&b->rank, (size_t)k) ||
      !ag_vec_reserve(&b->dfs, (size_t)k))
    return ag_builder_nomem(b);
  int32_t *rank = b->rank.data;
  for (int32_t s = 0; s < k; s++) rank[s] = -1; /* -1 unseen, -2 on the stack */
  b->post.len = b->dfs.len = 0;
  for (int32_t root = 0; root < k; root++) {
    if (rank[root] != -1) continue;
    rank[root] = -2;
    b->dfs.data[b->dfs.len++] = (uint64_t)root << 32;
    ag_min_dfs(b);
  }
  return AG_OK;
}

/* Minimizes the rule just determinized (states base .. end of the arrays), in
 * at most max_rounds rounds, merging only states that `only` marks (NULL: all). */
ag_status ag_min_rule(ag_builder *b, int max_rounds, const uint8_t *only) {
  size_t k = b->states.len - (size_t)b->base;
  if (k < 2) return AG_OK;
  if (!ag_vec_reserve(&b->rep, k) || !ag_vec_reserve(&b->sigs, k) ||
      !ag_vec_reserve(&b->order, k) || !ag_vec_reserve(&b->new_id, k))
    return ag_builder_nomem(b);
  if (b->watch.len < k) { /* new marks start unset: below every generation */
    if (!ag_vec_reserve(&b->watch, k)) return ag_builder_nomem(b);
    memset(b->watch.data + b->watch.len, 0, (k - b->watch.len) * sizeof *b->watch.data);
    b->watch.len = k;
  }
  ag_status st = ag_min_table(b, k);
  if (!st) st = ag_min_postorder(b, (int32_t)k);
  for (size_t s = 0; s < k; s++) b->rep.data[s] = (int32_t)s;
  bool any = false, again = true;
  for (int round = 0; !st && again && round < max_rounds; round++) {
    bool merged = false;
    again = false;
    st = ag_min_round(b, (int32_t)k, only, &merged, &again);
    any |= merged;
  }
  return st || !any ? st : ag_min_rebuild(b, (int32_t)k);
}


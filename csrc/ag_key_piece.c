/*
 * ag_key_piece.c - the part of a key trie's automaton that its names do not
 * change (the rest of a key after a character that continues no name): kept
 * in the build cache by the first load that builds it, copied by later ones.
 */
#include "ag_fsm_builder.h"

#include "ag_build_cache.h"

/* Past a trie node, the automaton of a key trie is its ways out (the tail,
 * `other` and `any`), the same in every trie whose ways are written alike: the
 * JSON converter writes them alike in every object of every schema. The first
 * load builds such a rule the general way and keeps that part (ag_key_piece_keep);
 * later loads build the trie's own states and copy the rest (ag_key_rule_cached).
 * The result is the automaton the general way gives: the ways' states are
 * minimal on their own, and no trie node's state is equivalent to one of them
 * (a trie node still reaches a name, which the ways never do) nor to another
 * node's (ag_key_merge gave each subtrie one state). */

/* Words of a way's canonical form at most: larger ways are built each time. */
#define AG_KEY_CANON_MAX 16384
#define AG_KEY_CANON_DEPTH 64

static bool ag_canon_push(ag_builder *b, int32_t w) { return ag_vec_push(&b->key_canon, w); }

/* Appends node's canonical form to b->key_canon: its kind and payload with its
 * children in place, and for a reference the body it inlines. False when the
 * node cannot be kept so: a rule edge (a reference not inlined, or to a part),
 * a dispatch, a nested trie, or too large. */
static bool ag_key_canon(ag_builder *b, int32_t node, int depth) {
  if (depth > AG_KEY_CANON_DEPTH || b->key_canon.len > AG_KEY_CANON_MAX) return false;
  const int32_t *p = ag_ir_node(b->ir, node);
  switch (p[0]) {
  case AG_NODE_LITERAL:
  case AG_NODE_BYTES: {
    int32_t n = p[0] == AG_NODE_LITERAL ? p[1] : 2 * p[1];
    if (b->key_canon.len + (size_t)n > AG_KEY_CANON_MAX) return false;
    for (int32_t i = 0; i < n + 2; i++)
      if (!ag_canon_push(b, p[i])) return false;
    return true;
  }
  case AG_NODE_SEQ:
  case AG_NODE_CHOICE:
    if (!ag_canon_push(b, p[0]) || !ag_canon_push(b, p[1])) return false;
    for (int32_t k = 0; k < p[1]; k++)
      if (!ag_key_canon(b, p[2 + k], depth + 1)) return false;
    return true;
  case AG_NODE_RULEREF:
    /* inlined exactly when ag_inline_cost allows: a bytes-only body, so the
     * walk through it meets no reference */
    if (p[1] >= b->ir->n_rules || !ag_inline_cost(b, p[1])) return false;
    return ag_canon_push(b, p[0]) && ag_key_canon(b, b->ir->body[p[1]], depth + 1);
  case AG_NODE_REPEAT:
    if (!ag_canon_push(b, p[0]) || !ag_canon_push(b, p[2]) || !ag_canon_push(b, p[3]) ||
        !ag_canon_push(b, b->counted[node] | b->loop_counted[node] << 1))
      return false;
    return ag_key_canon(b, p[1], depth + 1);
  default:
    return false;
  }
}

/* The KEYTRIE of rule body `node`, with the literal before it (*lit, else
 * NULL), or NULL when the body is not of that shape. */
static const int32_t *ag_key_rule_shape(const ag_builder *b, int32_t node, const int32_t **lit) {
  const int32_t *p = ag_ir_node(b->ir, node);
  *lit = NULL;
  if (p[0] == AG_NODE_KEYTRIE) return p;
  if (p[0] != AG_NODE_SEQ || p[1] != 2) return NULL;
  const int32_t *a = ag_ir_node(b->ir, p[2]), *k = ag_ir_node(b->ir, p[3]);
  if (a[0] != AG_NODE_LITERAL || a[1] < 1 || k[0] != AG_NODE_KEYTRIE) return NULL;
  *lit = a;
  return k;
}

/* The piece's key in b->key_canon: the three ways' canonical forms and the raw
 * ranges (a trie node's own edges are cut from them). False when not kept. */
static bool ag_key_piece_key(ag_builder *b, const int32_t *p) {
  b->key_canon.len = 0;
  for (int k = 1; k <= 3; k++)
    if (!ag_key_canon(b, p[k], 0)) return false;
  for (int32_t i = 0; i <= 2 * p[4]; i++)
    if (!ag_canon_push(b, p[4 + i])) return false;
  return true;
}

static bool ag_byte_in(const uint64_t *set, int c) { return set[c >> 6] >> (c & 63) & 1; }

/* The raw bytes of KEYTRIE p as a set (ASCII without the quote: ag_ir.c checks);
 * false when the backslash is among them (then a node's own edges could meet
 * its way's). */
static bool ag_key_raw_set(const int32_t *p, uint64_t raw[4]) {
  memset(raw, 0, 4 * sizeof *raw);
  for (int32_t k = 0; k < p[4]; k++)
    for (int c = p[5 + 2 * k]; c <= p[6 + 2 * k]; c++) raw[c >> 6] |= (uint64_t)1 << (c & 63);
  return !ag_byte_in(raw, '\\');
}

/* The state of a rule built so far reached from s on byte c, or -1. */
static int32_t ag_built_step(const ag_builder *b, int32_t s, int c) {
  const ag_state *st = &b->states.data[s];
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *x = &b->byte_edges.data[e];
    if (c >= x->lo && c <= x->hi) return x->target;
  }
  return -1;
}

/* The edges of state s on the bytes outside `skip` (every byte when NULL), in
 * fresh *v (*n of them), each run of bytes to one target; the bytes they take
 * join row_bytes. False when out of memory. */
static bool ag_key_row_from(const ag_builder *b, int32_t s, const uint64_t *skip, ag_byte_edge **v,
                            uint32_t *n, uint64_t row_bytes[4]) {
  ag_byte_edge buf[256];
  uint32_t m = 0;
  for (int c = 0; c < 256; c++) {
    if (skip && ag_byte_in(skip, c)) continue;
    int32_t t = ag_built_step(b, s, c);
    if (t < 0) continue;
    row_bytes[c >> 6] |= (uint64_t)1 << (c & 63);
    if (m && buf[m - 1].target == t && buf[m - 1].hi + 1 == c) buf[m - 1].hi = (uint8_t)c;
    else {
      ag_byte_edge e = {(uint8_t)c, (uint8_t)c, t};
      buf[m++] = e;
    }
  }
  *v = malloc((m ? m : 1) * sizeof **v);
  if (!*v) return false;
  memcpy(*v, buf, m * sizeof *buf);
  *n = m;
  return true;
}

/* The rule just built (states b->base on) with KEYTRIE p after literal lit:
 * its root, end and tail states, checked to be as the construction makes them,
 * and a mark on the states of the literal and the trie; false when they are not. */
static bool ag_key_built_parts(const ag_builder *b, const int32_t *p, const int32_t *lit,
                               const uint64_t raw[4], uint8_t *trie, int32_t *root, int32_t *end,
                               int32_t *tail, int32_t *leaf) {
  int32_t s = b->base, base = b->base;
  for (int32_t i = 0; lit && i < lit[1] && s >= 0; i++) {
    trie[s - base] = 1;
    s = ag_built_step(b, s, lit[2 + i]);
  }
  if (s < 0) return false;
  *root = s;
  *end = ag_built_step(b, s, '"');
  if (*end < 0) return false;
  const ag_state *e = &b->states.data[*end];
  if (!e->accepting || e->byte_begin != e->byte_end || e->rule_begin != e->rule_end) return false;
  const int32_t *names = p + 5 + 2 * p[4], *w = names + 1;
  uint64_t first[4] = {0, 0, 0, 0};
  for (int32_t k = 0; k < names[0]; w += 1 + w[0], k++) {
    first[w[1] >> 6] |= (uint64_t)1 << (w[1] & 63);
    int32_t x = *root;
    for (int32_t i = 0; i < w[0] && x >= 0; i++) {
      trie[x - base] = 1;
      x = ag_built_step(b, x, w[1 + i]);
    }
    if (x < 0) return false;
    trie[x - base] = 1;
    *leaf = x; /* the last name (in byte order) is no other's prefix */
  }
  *tail = -1;
  for (int c = 0; c < 256; c++) { /* every raw byte that starts no name leads to the tail */
    if (!ag_byte_in(raw, c) || ag_byte_in(first, c)) continue;
    int32_t t = ag_built_step(b, *root, c);
    if (t < 0 || (*tail >= 0 && t != *tail)) return false;
    *tail = t;
  }
  return *tail >= 0 && !trie[*tail - base] && *tail != *end;
}

/* The states of the piece: from the tail and the rows' targets, breadth first,
 * numbered in local[] (the rule's end -1); false when one is no plain byte
 * state of the ways (a trie state, a rule edge, acceptance, a count). */
static bool ag_key_piece_states(const ag_builder *b, ag_key_piece *pc, const uint8_t *trie,
                                int32_t end, int32_t *local, int32_t *order, int32_t *n) {
  int32_t base = b->base;
  *n = 0;
  local[pc->tail - base] = (*n)++;
  order[0] = pc->tail;
  const ag_byte_edge *rows[2] = {pc->other_row, pc->any_row};
  uint32_t n_rows[2] = {pc->n_other, pc->n_any};
  for (int r = 0; r < 2; r++)
    for (uint32_t i = 0; i < n_rows[r]; i++) {
      int32_t t = rows[r][i].target;
      if (t != end && local[t - base] < 0) {
        local[t - base] = *n;
        order[(*n)++] = t;
      }
    }
  for (int32_t q = 0; q < *n; q++) {
    const ag_state *s = &b->states.data[order[q]];
    if (trie[order[q] - base] || order[q] == end || s->accepting || s->counted ||
        s->rule_begin != s->rule_end)
      return false;
    for (uint32_t e = s->byte_begin; e < s->byte_end; e++) {
      int32_t t = b->byte_edges.data[e].target;
      if (t != end && local[t - base] < 0) {
        local[t - base] = *n;
        order[(*n)++] = t;
      }
    }
  }
  return true;
}

/* Renumbers edges to the piece's local ids (the rule's end -1). */
static void ag_key_local(ag_byte_edge *v, uint32_t n, const int32_t *local, int32_t base, int32_t end) {
  for (uint32_t i = 0; i < n; i++) v[i].target = v[i].target == end ? -1 : local[v[i].target - base];
}

/* Takes the piece of the rule just built and minimized (body `node`, a key
 * trie whose key ag_key_rule_cached left in b->key_canon: building the rule
 * the general way writes none) into the cache. A rule not as expected is left
 * out: later loads build it the general way too. */
ag_status ag_key_piece_keep(ag_builder *b, int32_t node) {
  const int32_t *lit, *p = ag_key_rule_shape(b, node, &lit);
  uint64_t raw[4];
  if (!p || !ag_key_raw_set(p, raw)) return AG_OK;
  int32_t n_rule = (int32_t)b->states.len - b->base, root, end, leaf = -1, n = 0;
  uint8_t *trie = calloc((size_t)n_rule, 1);
  int32_t *local = malloc(sizeof *local * (size_t)n_rule), *order = malloc(sizeof *order * (size_t)n_rule);
  ag_key_piece *pc = calloc(1, sizeof *pc);
  if (!trie || !local || !order || !pc) {
    free(trie);
    free(local);
    free(order);
    free(pc);
    return ag_builder_nomem(b);
  }
  for (int32_t i = 0; i < n_rule; i++) local[i] = -1;
  uint64_t skip[4], any_bytes[4] = {0, 0, 0, 0}; /* a name's end takes `any` alone */
  for (int i = 0; i < 4; i++) skip[i] = raw[i];
  skip['"' >> 6] |= (uint64_t)1 << ('"' & 63);
  bool ok = ag_key_built_parts(b, p, lit, raw, trie, &root, &end, &pc->tail, &leaf) &&
            ag_key_row_from(b, root, skip, &pc->other_row, &pc->n_other, pc->row_bytes) &&
            ag_key_row_from(b, leaf, NULL, &pc->any_row, &pc->n_any, any_bytes) &&
            !(pc->row_bytes[0] & skip[0]) && !(pc->row_bytes[1] & skip[1]) &&
            !(pc->row_bytes[2] & skip[2]) && !(pc->row_bytes[3] & skip[3]) &&
            ag_key_piece_states(b, pc, trie, end, local, order, &n);
  if (ok) {
    uint32_t n_edges = 0;
    for (int32_t q = 0; q < n; q++)
      n_edges += b->states.data[order[q]].byte_end - b->states.data[order[q]].byte_begin;
    pc->n_states = n;
    pc->edge_begin = malloc(sizeof *pc->edge_begin * (size_t)(n + 1));
    pc->edges = malloc(sizeof *pc->edges * (n_edges ? n_edges : 1));
    ok = pc->edge_begin && pc->edges;
    for (int32_t q = 0, at = 0; ok && q < n; q++) {
      const ag_state *s = &b->states.data[order[q]];
      pc->edge_begin[q] = (uint32_t)at;
      for (uint32_t e = s->byte_begin; e < s->byte_end; e++) pc->edges[at++] = b->byte_edges.data[e];
      pc->edge_begin[q + 1] = (uint32_t)at;
    }
    if (ok) {
      ag_key_local(pc->edges, n_edges, local, b->base, end);
      ag_key_local(pc->other_row, pc->n_other, local, b->base, end);
      ag_key_local(pc->any_row, pc->n_any, local, b->base, end);
      pc->tail = local[pc->tail - b->base];
    }
  }
  free(trie);
  free(local);
  free(order);
  if (!ok) {
    ag_key_piece_free(pc);
    return AG_OK;
  }
  ag_build_cache_put(b->cache, b->key_canon.data, b->key_canon.len, pc);
  return AG_OK;
}

/* The own edges of trie node k into b->key_own: its names' next bytes to their
 * nodes' states, the quote to the end unless a name ends there, and the raw
 * bytes that continue no name to the tail unless it takes `any`. */
static ag_status ag_key_own_edges(ag_builder *b, const int32_t *p, const ag_key_node *keys, int32_t k,
                                  const int32_t *node_state, int32_t end, int32_t tail) {
  const ag_key_node *key = &keys[k];
  b->key_own.len = 0;
  for (int32_t c = key->kid; c >= 0; c = keys[c].sibling) {
    ag_byte_edge e = {keys[c].byte, keys[c].byte, node_state[keys[c].canon]};
    if (!ag_vec_push(&b->key_own, e)) return ag_builder_nomem(b);
  }
  if (!key->terminal) {
    ag_byte_edge e = {'"', '"', end};
    if (!ag_vec_push(&b->key_own, e)) return ag_builder_nomem(b);
  }
  bool leaf = !key->next[0] && !key->next[1];
  for (int32_t r = 0; !(leaf && key->terminal) && r < p[4]; r++) {
    for (int c = p[5 + 2 * r], hi = p[6 + 2 * r]; c <= hi;) {
      while (c <= hi && ag_byte_in(key->next, c)) c++;
      int lo = c;
      while (c <= hi && !ag_byte_in(key->next, c)) c++;
      ag_byte_edge e = {(uint8_t)lo, (uint8_t)(c - 1), tail};
      if (lo < c && !ag_vec_push(&b->key_own, e)) return ag_builder_nomem(b);
    }
  }
  ag_sort_edges_by_lo(b->key_own.data, b->key_own.len);
  return AG_OK;
}

/* Appends a state of the rule being built whose byte edges begin at `first`. */
static ag_status ag_key_push_state(ag_builder *b, uint32_t first, bool accepting) {
  uint32_t nr = (uint32_t)b->rule_edges.len;
  ag_state s = {first, (uint32_t)b->byte_edges.len, nr, nr, accepting, false, false, 0};
  if (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, b->rule_id)) return ag_builder_nomem(b);
  return AG_OK;
}

/* The rule from piece pc: the literal's states, one state per distinct
 * subtrie (root first), the piece's states, then the end. */
static ag_status ag_key_rule_from(ag_builder *b, const int32_t *p, const int32_t *lit,
                                  const ag_key_piece *pc) {
  ag_key_node *keys;
  int32_t n_keys, n_lit = lit ? lit[1] : 0, n_nodes = 0;
  b->work = 0; /* as ag_nfa_build starts a rule */
  ag_status st = ag_key_trie_of(b, p, &keys, &n_keys);
  int32_t *node_state = st ? NULL : malloc(sizeof *node_state * (size_t)n_keys);
  if (!st && !node_state) st = ag_builder_nomem(b);
  b->base = (int32_t)b->states.len;
  for (int32_t k = 0; !st && k < n_keys; k++)
    if (keys[k].canon == k) node_state[k] = b->base + n_lit + n_nodes++;
  int64_t total = (int64_t)n_lit + n_nodes + pc->n_states + 1;
  if (!st && total > AG_MAX_STATES - (int64_t)b->base)
    st = ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata need more than %d states",
                 AG_MAX_STATES);
  int32_t piece = b->base + n_lit + n_nodes, end = piece + pc->n_states, tail = piece + pc->tail;
  for (int32_t i = 0; !st && i < n_lit; i++) {
    uint32_t first = (uint32_t)b->byte_edges.len;
    st = ag_emit_byte_edge(b, first, lit[2 + i], lit[2 + i], i + 1 < n_lit ? b->base + i + 1 : node_state[0]);
    if (!st) st = ag_key_push_state(b, first, false);
  }
  for (int32_t k = 0; !st && k < n_keys; k++) {
    if (keys[k].canon != k) continue;
    st = ag_key_own_edges(b, p, keys, k, node_state, end, tail);
    bool any = keys[k].terminal && !keys[k].next[0] && !keys[k].next[1];
    const ag_byte_edge *row = any ? pc->any_row : pc->other_row, *e;
    size_t n_row = any ? pc->n_any : pc->n_other, i = 0, j = 0;
    uint32_t first = (uint32_t)b->byte_edges.len;
    while (!st && (e = ag_key_next(b->key_own.data, b->key_own.len, &i, row, n_row, &j))) {
      bool own = e >= b->key_own.data && e < b->key_own.data + b->key_own.len;
      st = ag_emit_byte_edge(b, first, e->lo, e->hi, own ? e->target : e->target < 0 ? end : piece + e->target);
    }
    if (!st) st = ag_key_push_state(b, first, false);
  }
  for (int32_t q = 0; !st && q < pc->n_states; q++) {
    uint32_t first = (uint32_t)b->byte_edges.len;
    for (uint32_t x = pc->edge_begin[q]; !st && x < pc->edge_begin[q + 1]; x++) {
      const ag_byte_edge *e = &pc->edges[x];
      st = ag_emit_byte_edge(b, first, e->lo, e->hi, e->target < 0 ? end : piece + e->target);
    }
    if (!st) st = ag_key_push_state(b, first, false);
  }
  if (!st) st = ag_key_push_state(b, (uint32_t)b->byte_edges.len, true);
  free(keys);
  free(node_state);
  return st;
}

/* Whether KEYTRIE nodes q (or NULL) and p of one buffer have the same ways out
 * and raw ranges, so the same piece. */
static bool ag_key_same_ways(const int32_t *q, const int32_t *p) {
  if (!q || q[1] != p[1] || q[2] != p[2] || q[3] != p[3] || q[4] != p[4]) return false;
  return ag_words_equal(q + 5, p + 5, 2 * (size_t)p[4]);
}

ag_status ag_key_rule_cached(ag_builder *b, int32_t node, bool *done, bool *keep) {
  const int32_t *lit, *p = ag_key_rule_shape(b, node, &lit);
  uint64_t raw[4];
  *done = *keep = false;
  if (!p || !ag_key_raw_set(p, raw)) return AG_OK;
  const ag_key_piece *pc = ag_key_same_ways(b->key_found_trie, p) ? b->key_found : NULL;
  if (!pc) {
    if (!ag_key_piece_key(b, p)) return AG_OK;
    pc = ag_build_cache_find(b->cache, b->key_canon.data, b->key_canon.len);
    if (!pc) {
      *keep = true;
      return AG_OK;
    }
    b->key_found = pc;
    b->key_found_trie = p;
  }
  ag_status st = ag_key_rule_from(b, p, lit, pc);
  *done = !st;
  return st;
}

/*
 * ag_key_trie.c - KEYTRIE nodes (ag_ir.h): the rest of a JSON key that spells
 * none of the names, as one NFA state per distinct subtrie of the names, and
 * the DFA states of those trie nodes, built without the general sweep (the
 * piece of them that later loads copy: ag_key_piece.c).
 */
#include "ag_fsm_builder.h"

/* ---- key tries: the NFA ------------------------------------------------- */

/* The trie of KEYTRIE node p's names (sorted, ag_ir.c) into keys[0 ..
 * *n_keys): each name shares the path of its common prefix with the name
 * before it, so one pass with a stack of that path builds it. */
static void ag_key_trie(const int32_t *names, ag_key_node *keys, int32_t *path, int32_t *n_keys) {
  const int32_t *w = names + 1, *prev = NULL;
  int32_t n = 1, prev_len = 0;
  ag_key_node fresh = {-1, false, {0, 0}, -1, -1, -1, 0};
  keys[0] = fresh;
  path[0] = 0;
  for (int32_t k = 0; k < names[0]; prev = w + 1, prev_len = w[0], w += 1 + w[0], k++) {
    int32_t d = 0;
    while (d < prev_len && d < w[0] && prev[d] == w[1 + d]) d++;
    for (; d < w[0]; d++) {
      int c = w[1 + d];
      ag_key_node *parent = &keys[path[d]];
      parent->next[c >> 6] |= (uint64_t)1 << (c & 63);
      keys[n] = fresh;
      keys[n].byte = (uint8_t)c;
      keys[n].sibling = parent->kid; /* prepended: children in descending byte order */
      parent->kid = n;
      path[d + 1] = n;
      n++;
    }
    keys[path[w[0]]].terminal = true;
  }
  *n_keys = n;
}

/* A hash of node k's subtrie: whether a name ends there, and its children by
 * byte and by the node that stands for them. */
static uint32_t ag_key_hash(const ag_key_node *keys, int32_t k) {
  uint32_t h = keys[k].terminal ? 0x9e3779b1u : 0x85ebca6bu;
  for (int32_t c = keys[k].kid; c >= 0; c = keys[c].sibling)
    h = (h ^ ((uint32_t)keys[c].byte << 24 ^ (uint32_t)keys[c].canon)) * 0x9e3779b1u;
  return h ^ (h >> 15);
}

/* Whether nodes j and k, their children merged already, have the same subtrie. */
static bool ag_key_same(const ag_key_node *keys, int32_t j, int32_t k) {
  if (keys[j].terminal != keys[k].terminal) return false;
  int32_t a = keys[j].kid, c = keys[k].kid;
  for (; a >= 0 && c >= 0; a = keys[a].sibling, c = keys[c].sibling)
    if (keys[a].byte != keys[c].byte || keys[a].canon != keys[c].canon) return false;
  return a < 0 && c < 0;
}

/* Gives each of the n trie nodes the first node (in merge order) with the same
 * subtrie, bottom up: children come after their parent, so they are merged
 * first. Nodes with the same subtrie accept the same rest of a key (they allow
 * the quote alike, continue names alike and leave the trie by the same way),
 * so they are one DFA state; merging them here, on small signatures, is what
 * minimization would do on their DFA states, each carrying a way's thirty-odd
 * byte ranges. `table` has cap (a power of two, at least 2n) slots. */
static void ag_key_merge(ag_key_node *keys, int32_t n, int32_t *table, size_t cap) {
  for (size_t i = 0; i < cap; i++) table[i] = -1;
  for (int32_t k = n - 1; k >= 0; k--) {
    size_t i = ag_key_hash(keys, k) & (cap - 1);
    while (table[i] >= 0 && !ag_key_same(keys, table[i], k)) i = (i + 1) & (cap - 1);
    if (table[i] < 0) table[i] = k;
    keys[k].canon = table[i];
  }
}

/* The raw ASCII ranges from `state` to `to`, less the bytes in `skip`. */
static ag_status ag_key_other(ag_builder *b, const int32_t *ranges, int32_t n_ranges,
                              const uint64_t skip[2], int32_t state, int32_t to) {
  ag_status st = AG_OK;
  for (int32_t k = 0; !st && k < n_ranges; k++) {
    for (int c = ranges[2 * k], hi = ranges[2 * k + 1]; !st && c <= hi;) {
      while (c <= hi && (skip[c >> 6] >> (c & 63) & 1)) c++;
      int lo = c;
      while (c <= hi && !(skip[c >> 6] >> (c & 63) & 1)) c++;
      if (lo < c) st = ag_nfa_edge_add(b, state, to, AG_NFA_BYTES, (uint8_t)lo, (uint8_t)(c - 1), -1);
    }
  }
  return st;
}

/* The trie of KEYTRIE p in fresh arrays (*keys, *n_keys: the caller frees
 * keys), its subtries merged; its construction spent from the rule's work. */
ag_status ag_key_trie_of(ag_builder *b, const int32_t *p, ag_key_node **keys, int32_t *n_keys) {
  const int32_t *names = p + 5 + 2 * p[4], *w = names + 1;
  int64_t bytes = 0, longest = 0;
  for (int32_t k = 0; k < names[0]; w += 1 + w[0], k++) {
    bytes += w[0];
    if (w[0] > longest) longest = w[0];
  }
  *keys = NULL;
  *n_keys = 0;
  ag_status st = ag_nfa_spend(b, (uint64_t)(bytes + 1) * (4 + (uint64_t)p[4]));
  if (st) return st;
  size_t cap = 2;
  while (cap < 2 * (size_t)(bytes + 1)) cap *= 2;
  *keys = malloc(sizeof **keys * (size_t)(bytes + 1));
  int32_t *path = malloc(sizeof *path * (size_t)(longest + 1));
  int32_t *table = malloc(sizeof *table * cap);
  st = *keys && path && table ? AG_OK : ag_builder_nomem(b);
  if (!st) {
    ag_key_trie(names, *keys, path, n_keys);
    ag_key_merge(*keys, *n_keys, table, cap);
  }
  free(path);
  free(table);
  return st;
}

/* KEYTRIE: one state per prefix of the names (prefixes with the same rest of
 * the trie share one, ag_key_merge). A prefix that is no name may
 * close the key with the quote; any prefix may take a name's next byte (to
 * its child), or a character that continues no name (a raw byte outside the
 * next ones, or `other`: a wide or escaped one) and then `tail`, the rest of
 * any string. Past a name that no other continues, any character (any_char)
 * then the tail. The tail and the two ways into it are built once, each
 * entered from every prefix, as the IR trie the node replaces shared them. */
ag_status ag_nfa_keytrie(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_key_node *keys;
  int32_t n_keys, tail = -1, other = -1, any = -1;
  ag_status st = ag_key_trie_of(b, p, &keys, &n_keys);
  for (int32_t k = 0; !st && k < n_keys; k++) /* one NFA state per distinct subtrie */
    if (keys[k].canon == k) st = ag_nfa_state(b, &keys[k].state);
  for (int32_t k = 0; !st && k < n_keys; k++)
    for (int32_t c = keys[k].canon == k ? keys[k].kid : -1; !st && c >= 0; c = keys[c].sibling)
      st = ag_nfa_edge_add(b, keys[k].state, keys[keys[c].canon].state, AG_NFA_BYTES, keys[c].byte,
                           keys[c].byte, -1);
  if (!st) st = ag_nfa_eps(b, from, keys[0].state);
  if (!st) st = ag_nfa_star_entry(b, p[1], to, &tail);
  if (!st) st = ag_nfa_entry(b, p[2], tail, &other);
  if (!st) st = ag_nfa_entry(b, p[3], tail, &any);
  size_t way = b->key_ways.len; /* other, then any */
  ag_key_way w_other = {other, 0, 0, 0, 0, 0}, w_any = {any, 0, 0, 0, 0, 0};
  if (!st && (!ag_vec_push(&b->key_ways, w_other) || !ag_vec_push(&b->key_ways, w_any)))
    st = ag_builder_nomem(b);
  for (int32_t k = 0; !st && k < n_keys; k++) {
    const ag_key_node *key = &keys[k];
    if (key->canon != k) continue;
    bool leaf = !key->next[0] && !key->next[1];
    uint64_t node = (uint64_t)(uint32_t)key->state << 32 | (uint32_t)(way + (leaf && key->terminal));
    if (!ag_vec_push(&b->key_nodes, node)) st = ag_builder_nomem(b);
    if (!st && !key->terminal) st = ag_nfa_edge_add(b, key->state, to, AG_NFA_BYTES, '"', '"', -1);
    if (!st && leaf && key->terminal) st = ag_nfa_eps(b, key->state, any);
    else if (!st) {
      st = ag_key_other(b, p + 5, p[4], key->next, key->state, tail);
      if (!st) st = ag_nfa_eps(b, key->state, other);
    }
  }
  free(keys);
  return st;
}

/* ---- key tries: the DFA states of trie nodes ---------------------------- */

/* Sweeps way w's closure once: its byte edges, with their DFA targets, into
 * key_rows (interning the targets, as the first trie state's sweep would). A
 * way with rule edges is left to the general path. */
static ag_status ag_key_way_row(ag_builder *b, size_t w) {
  ag_status st = ag_dfa_closure(b, &b->key_ways.data[w].entry, 1);
  size_t at = b->key_sets.len, n = b->closure.len;
  if (!st && !ag_vec_reserve(&b->key_sets, at + n)) st = ag_builder_nomem(b);
  if (st) return st;
  memcpy(b->key_sets.data + at, b->closure.data, n * sizeof *b->closure.data);
  b->key_sets.len = at + n;
  bool accepting = false;
  st = ag_collect_set(b, b->key_sets.data + at, n, &accepting);
  if (st) return st;
  ag_key_way *way = &b->key_ways.data[w];
  way->set_at = (uint32_t)at;
  way->set_n = (uint32_t)n;
  if (b->moves.len || accepting) {
    way->ready = -1;
    return AG_OK;
  }
  size_t first = b->byte_edges.len;
  st = ag_dfa_bytes(b, (uint32_t)first);
  size_t m = b->byte_edges.len - first, row = b->key_rows.len;
  if (!st && !ag_vec_reserve(&b->key_rows, row + m)) st = ag_builder_nomem(b);
  if (st) return st;
  memcpy(b->key_rows.data + row, b->byte_edges.data + first, m * sizeof *b->byte_edges.data);
  b->key_rows.len = row + m;
  b->byte_edges.len = first;
  way = &b->key_ways.data[w];
  way->row_at = (uint32_t)row;
  way->row_n = (uint32_t)m;
  way->ready = 1;
  return AG_OK;
}

/* The trie node u of DFA state k's set when the set is exactly u and the
 * closure of u's way out (*way), else -1. */
static int32_t ag_key_node_of(ag_builder *b, int32_t k, int32_t *way) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1];
  int32_t u = -1;
  for (size_t i = lo; i < hi; i++) {
    int32_t x = b->pool.data[i];
    if (b->nfa_way.data[x] < 0) continue;
    if (u >= 0) return -1; /* two trie nodes: some other path joined */
    u = x;
  }
  if (u >= 0) *way = b->nfa_way.data[u];
  return u;
}

static bool ag_key_set_is(ag_builder *b, int32_t k, int32_t u, const ag_key_way *w) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1];
  if (hi - lo != (size_t)w->set_n + 1) return false;
  uint32_t gen = ag_mark_next(b);
  for (uint32_t i = 0; i < w->set_n; i++) b->mark.data[b->key_sets.data[w->set_at + i]] = gen;
  for (size_t i = lo; i < hi; i++)
    if (b->pool.data[i] != u && b->mark.data[b->pool.data[i]] != gen) return false;
  return true;
}

const ag_byte_edge *ag_key_next(const ag_byte_edge *a, size_t n_a, size_t *i, const ag_byte_edge *b,
                                size_t n_b, size_t *j) {
  if (*i < n_a && (*j == n_b || a[*i].lo < b[*j].lo)) return &a[(*i)++];
  return *j < n_b ? &b[(*j)++] : NULL;
}

/* The byte edges of DFA state k when it is a trie node's (ag_key_node_of): the
 * node's own (name bytes to its children, the quote, raw bytes to the tail),
 * each to the DFA state of its one target, beside the way's row, in byte order.
 * The two are disjoint (a name byte is plain ASCII; a way starts with a wide
 * byte or a backslash), so the sweep would find exactly these; *done false
 * leaves k to it. */
ag_status ag_key_state(ag_builder *b, int32_t k, uint32_t first, bool *done) {
  int32_t w = -1, u = ag_key_node_of(b, k, &w);
  *done = false;
  if (u < 0) return AG_OK;
  ag_status st = b->key_ways.data[w].ready == 0 ? ag_key_way_row(b, (size_t)w) : AG_OK;
  if (st || b->key_ways.data[w].ready < 0 || !ag_key_set_is(b, k, u, &b->key_ways.data[w])) return st;
  b->key_own.len = 0;
  for (uint32_t e = b->csr_begin.data[u]; e < b->csr_begin.data[u + 1]; e++) {
    const ag_nfa_edge *ed = &b->csr.data[e];
    if (ed->kind == AG_NFA_RULE) return AG_OK;
    ag_byte_edge own = {ed->lo, ed->hi, ed->to};
    if (ed->kind == AG_NFA_BYTES && !ag_vec_push(&b->key_own, own)) return ag_builder_nomem(b);
  }
  ag_byte_edge *own = b->key_own.data;
  size_t n_own = b->key_own.len, i = 0, j = 0;
  const ag_key_way *way = &b->key_ways.data[w];
  const ag_byte_edge *row = b->key_rows.data + way->row_at, *e;
  ag_sort_edges_by_lo(own, n_own);
  /* disjoint (checked before anything is interned), else the sweep decides */
  for (int prev_hi = -1; (e = ag_key_next(own, n_own, &i, row, way->row_n, &j)); prev_hi = e->hi)
    if (e->lo <= prev_hi) return AG_OK;
  st = ag_dfa_spend(b, (uint64_t)way->set_n + 1 + n_own + way->row_n);
  for (i = 0; !st && i < n_own; i++) {
    int32_t seed = own[i].target; /* the NFA state the edge leads to */
    st = ag_dfa_target(b, &seed, 1, &own[i].target);
  }
  for (i = j = 0; !st && (e = ag_key_next(own, n_own, &i, row, way->row_n, &j));)
    st = ag_emit_byte_edge(b, first, e->lo, e->hi, e->target);
  *done = !st;
  return st;
}

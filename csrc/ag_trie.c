/*
 * ag_trie.c - the automaton of a choice of literals, built as a trie (ag_trie.h).
 *
 * The entries are sorted, so the literals sharing a prefix form one range and
 * a state is a range with a depth: its byte edges split the range by the byte
 * at that depth. A range whose literals all end at the depth (an "end") has
 * no byte edge; what tells two ends apart is only their acceptance and the
 * rules after them, so ends are interned by those and share a state.
 */
#include "ag_trie.h"

#include "ag_grammar.h"

/* Entries in byte order, a literal before its extensions, then by rule (-1 first). */
static int ag_trie_cmp(const void *pa, const void *pb) {
  const ag_trie_entry *a = pa, *b = pb;
  int32_t n = a->len < b->len ? a->len : b->len;
  for (int32_t i = 0; i < n; i++)
    if (a->bytes[i] != b->bytes[i]) return a->bytes[i] < b->bytes[i] ? -1 : 1;
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  return (a->rule > b->rule) - (a->rule < b->rule);
}

static ag_status ag_trie_nomem(ag_error *err) {
  return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a literal trie");
}

/* The next distinct rule of an end's entries [lo, hi) at or after *i, or -1 when
 * none is left. The entries of an end differ only in rule, sorted, -1 first. */
static int32_t ag_trie_next_rule(const ag_trie *t, int32_t lo, int32_t hi, int32_t *i) {
  const ag_trie_entry *e = t->entries.data;
  while (*i < hi && (e[*i].rule < 0 || (*i > lo && e[*i - 1].rule == e[*i].rule))) (*i)++;
  return *i < hi ? e[(*i)++].rule : -1;
}

/* Acceptance and the distinct rules: what an end is interned by. lo == hi is
 * the state after a rule edge (accepting, no rule), which literals ending
 * alone share. */
static bool ag_trie_end_accepts(const ag_trie *t, int32_t lo, int32_t hi) {
  return lo == hi || t->entries.data[lo].rule < 0;
}

static uint32_t ag_trie_end_hash(const ag_trie *t, int32_t lo, int32_t hi) {
  uint32_t h = ag_trie_end_accepts(t, lo, hi) ? 0x9e3779b1u : 0x85ebca6bu;
  for (int32_t i = lo, r; (r = ag_trie_next_rule(t, lo, hi, &i)) >= 0;) {
    h = (h ^ (uint32_t)r) * 0x27d4eb2fu;
    h ^= h >> 15;
  }
  return h;
}

static bool ag_trie_end_equal(const ag_trie *t, const ag_trie_state *s, int32_t lo, int32_t hi) {
  if (ag_trie_end_accepts(t, s->lo, s->hi) != ag_trie_end_accepts(t, lo, hi)) return false;
  for (int32_t i = s->lo, j = lo;;) {
    int32_t a = ag_trie_next_rule(t, s->lo, s->hi, &i), b = ag_trie_next_rule(t, lo, hi, &j);
    if (a != b) return false;
    if (a < 0) return true;
  }
}

/* Where a build may fail: past its state bound, an error naming its rule. */
typedef struct ag_trie_bound {
  int32_t max_states;
  int32_t rule;
  ag_error *err; /* the caller's */
} ag_trie_bound;

/* Appends the state of entries [lo, hi) at depth; its edges come when it is processed. */
static ag_status ag_trie_push(ag_trie *t, int32_t lo, int32_t hi, int32_t depth,
                              const ag_trie_bound *bound, int32_t *id) {
  if (t->states.len >= (size_t)bound->max_states)
    return ag_fail(bound->err, AG_ERR_LIMIT, bound->rule, "the grammar's automata need more than %d states",
                   AG_MAX_STATES);
  ag_trie_state s = {0, 0, 0, 0, false, lo, hi, depth};
  if (!ag_vec_push(&t->states, s)) return ag_trie_nomem(bound->err);
  *id = (int32_t)t->states.len - 1;
  return AG_OK;
}

/* The state of the end [lo, hi) at depth: an earlier one with the same key, else a new one. */
static ag_status ag_trie_end(ag_trie *t, int32_t lo, int32_t hi, int32_t depth,
                             const ag_trie_bound *bound, int32_t *id) {
  size_t mask = t->table_cap - 1, i = ag_trie_end_hash(t, lo, hi) & mask;
  for (; t->table[i] >= 0; i = (i + 1) & mask) {
    if (ag_trie_end_equal(t, &t->states.data[t->table[i]], lo, hi)) {
      *id = t->table[i];
      return AG_OK;
    }
  }
  ag_status st = ag_trie_push(t, lo, hi, depth, bound, id);
  if (!st) t->table[i] = *id;
  return st;
}

/* Sorts the entries and makes the table of ends (at most one per entry, plus
 * the state after a rule edge) at most half full. */
static ag_status ag_trie_prepare(ag_trie *t, ag_error *err) {
  qsort(t->entries.data, t->entries.len, sizeof *t->entries.data, ag_trie_cmp);
  size_t cap = 16;
  while (cap < 2 * (t->entries.len + 2)) cap *= 2;
  if (cap > t->table_cap) {
    int32_t *table = realloc(t->table, cap * sizeof *table);
    if (!table) return ag_trie_nomem(err);
    t->table = table;
    t->table_cap = cap;
  }
  memset(t->table, 0xff, t->table_cap * sizeof *t->table); /* -1: empty */
  t->states.len = t->edges.len = t->rules.len = 0;
  t->final = -1;
  return AG_OK;
}

/* The edges of state k: rule edges of the literals ending here, byte edges to
 * the states of the ranges the next byte splits the rest into. */
static ag_status ag_trie_expand(ag_trie *t, size_t k, const ag_trie_bound *bound) {
  ag_error *err = bound->err;
  const ag_trie_entry *e = t->entries.data;
  ag_trie_state s = t->states.data[k]; /* a copy: pushing states may move them */
  uint32_t edge_begin = (uint32_t)t->edges.len, rule_begin = (uint32_t)t->rules.len;
  bool accepting = s.lo == s.hi; /* the state after a rule edge */
  int32_t i = s.lo, d = s.depth;
  ag_status st = AG_OK;
  for (; i < s.hi && e[i].len == d; i++) { /* a literal sorts before its extensions */
    if (e[i].rule < 0)
      accepting = true;
    else if ((t->rules.len == rule_begin || t->rules.data[t->rules.len - 1] != e[i].rule) &&
             !ag_vec_push(&t->rules, e[i].rule))
      return ag_trie_nomem(err);
  }
  while (!st && i < s.hi) {
    int32_t c = e[i].bytes[d], j = i + 1, target = -1;
    while (j < s.hi && e[j].bytes[d] == c) j++;
    if (e[j - 1].len == d + 1) /* every literal of the range ends after c */
      st = ag_trie_end(t, i, j, d + 1, bound, &target);
    else
      st = ag_trie_push(t, i, j, d + 1, bound, &target);
    ag_trie_edge edge = {(uint8_t)c, target};
    if (!st && !ag_vec_push(&t->edges, edge)) st = ag_trie_nomem(err);
    i = j;
  }
  if (!st && t->rules.len > rule_begin && t->final < 0)
    st = ag_trie_end(t, 0, 0, 0, bound, &t->final);
  if (st) return st;
  ag_trie_state *out = &t->states.data[k];
  out->edge_begin = edge_begin;
  out->edge_end = (uint32_t)t->edges.len;
  out->rule_begin = rule_begin;
  out->rule_end = (uint32_t)t->rules.len;
  out->accepting = accepting;
  return AG_OK;
}

/* Fills may_merge (ag_trie.h): an end (no byte edge) whose in-degree by byte
 * edges is two or more, then, children before parents (breadth-first ids grow
 * downwards; ends are already set), a state whose byte edges all lead to such. */
static ag_status ag_trie_may_merge(ag_trie *t, ag_error *err) {
  size_t n = t->states.len;
  uint8_t *m;
  if (!ag_vec_reserve(&t->may_merge, n)) return ag_trie_nomem(err);
  m = t->may_merge.data;
  t->may_merge.len = n;
  memset(m, 0, n);
  for (size_t e = 0; e < t->edges.len; e++) {
    int32_t to = t->edges.data[e].target;
    const ag_trie_state *s = &t->states.data[to];
    if (s->edge_begin == s->edge_end && m[to] < 2) m[to]++; /* count to two */
  }
  for (size_t k = 0; k < n; k++)
    if (t->states.data[k].edge_begin == t->states.data[k].edge_end) m[k] = m[k] >= 2;
  for (size_t k = n; k-- > 0;) {
    const ag_trie_state *s = &t->states.data[k];
    if (s->edge_begin == s->edge_end) continue;
    bool all = true;
    for (uint32_t e = s->edge_begin; all && e < s->edge_end; e++) all = m[t->edges.data[e].target];
    m[k] = all;
  }
  return AG_OK;
}

ag_status ag_trie_build(ag_trie *t, int32_t max_states, int32_t rule, ag_error *err) {
  ag_trie_bound bound = {max_states, rule, err};
  int32_t start = -1;
  ag_status st = ag_trie_prepare(t, err);
  if (!st) st = ag_trie_push(t, 0, (int32_t)t->entries.len, 0, &bound, &start);
  for (size_t k = 0; !st && k < t->states.len; k++) st = ag_trie_expand(t, k, &bound);
  return st ? st : ag_trie_may_merge(t, err);
}

void ag_trie_free(ag_trie *t) {
  ag_vec_free(&t->entries);
  ag_vec_free(&t->states);
  ag_vec_free(&t->edges);
  ag_vec_free(&t->rules);
  ag_vec_free(&t->may_merge);
  free(t->table);
  t->table = NULL;
  t->table_cap = 0;
}

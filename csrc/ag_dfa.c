/*
 * ag_dfa.c - subset construction: the current rule's NFA determinized into
 * DFA states appended to the builder's global arrays. Ids are assigned in
 * breadth-first order with byte edges before rule edges, so the numbering
 * depends only on the grammar, never on NFA numbering or hash order.
 */
#include "ag_fsm_builder.h"

/* Bounds the NFA-state sets stored for one rule's DFA states, in words, and
 * the work of determinizing it: nested nullable repeats such as ("a"?){0,n}
 * make every DFA state hold O(n) NFA states, and some alternatives make
 * exponentially many states; these turn that blow-up into a prompt error. The
 * work counts what the time goes into (ag_dfa_spend). How the bounds were
 * sized: docs/engine.md, "Automaton construction bounds". */
#define AG_DFA_MAX_SET_WORDS ((size_t)1 << 22)
#define AG_DFA_MAX_WORK ((uint64_t)1 << 28)

static int ag_cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Sorting. Most sets here have a handful of elements, where insertion sort
 * beats qsort's call overhead; up to a few hundred, Shell sort (Ciura's gaps)
 * still does (qsort calls a comparison function for every step, and subset
 * construction sorts a set for every DFA edge). An empty vector's data may be
 * NULL, which qsort forbids. */
#define AG_INSERTION_SORT(T, v, n)                                   \
  for (size_t i_ = 1; i_ < (n); i_++) {                              \
    T x_ = (v)[i_];                                                  \
    size_t j_ = i_;                                                  \
    for (; j_ > 0 && (v)[j_ - 1] > x_; j_--) (v)[j_] = (v)[j_ - 1]; \
    (v)[j_] = x_;                                                    \
  }

#define AG_SHELL_SORT_MAX 512
static const size_t ag_shell_gaps[] = {132, 57, 23, 10, 4, 1};

#define AG_SHELL_SORT(T, v, n)                                                        \
  for (size_t g_ = 0; g_ < sizeof ag_shell_gaps / sizeof *ag_shell_gaps; g_++) {     \
    size_t gap_ = ag_shell_gaps[g_];                                                  \
    for (size_t i_ = gap_; i_ < (n); i_++) {                                          \
      T x_ = (v)[i_];                                                                 \
      size_t j_ = i_;                                                                 \
      for (; j_ >= gap_ && (v)[j_ - gap_] > x_; j_ -= gap_) (v)[j_] = (v)[j_ - gap_]; \
      (v)[j_] = x_;                                                                   \
    }                                                                                 \
  }

static void ag_sort_i32(int32_t *v, size_t n) {
  if (n <= 16) {
    AG_INSERTION_SORT(int32_t, v, n)
  } else if (n <= AG_SHELL_SORT_MAX) {
    AG_SHELL_SORT(int32_t, v, n)
  } else {
    qsort(v, n, sizeof *v, ag_cmp_i32);
  }
}

static void ag_sort_u64(uint64_t *v, size_t n) {
  if (n <= 16) {
    AG_INSERTION_SORT(uint64_t, v, n)
  } else if (n <= AG_SHELL_SORT_MAX) {
    AG_SHELL_SORT(uint64_t, v, n)
  } else {
    qsort(v, n, sizeof *v, ag_cmp_u64);
  }
}

/* ---- subset construction ------------------------------------------------ */

/* A closure's sets are kept in the order the closure found them, not sorted:
 * sorting one for every DFA edge was the largest cost of determinizing big
 * sets. So the hash ignores order (a sum and a xor of mixed ids), and
 * equality asks whether the stored set has the closure's size and every
 * element marked by it (ag_dfa_closure marks exactly its states, once each). */
static uint32_t ag_closure_hash(const int32_t *set, size_t n) {
  uint32_t sum = 0, x = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t h = (uint32_t)set[i] * 0x9e3779b1u;
    h ^= h >> 15;
    sum += h;
    x ^= h * 0x85ebca6bu;
  }
  return (sum ^ (x >> 7) ^ x << 13) * 0x27d4eb2fu ^ (uint32_t)n;
}

static bool ag_closure_equal(const ag_builder *b, int32_t id, size_t n) {
  size_t lo = b->set_begin.data[id], hi = b->set_begin.data[id + 1];
  if (hi - lo != n) return false;
  for (size_t i = lo; i < hi; i++)
    if (b->mark.data[b->pool.data[i]] != b->mark_gen) return false;
  return true;
}

/* Sorts NFA-state ids. A set can hold thousands of states (nested nullable
 * repeats); a linear radix sort keeps those cheap. */
static ag_status ag_sort_states(ag_builder *b, int32_t *v, size_t n) {
  if (n < 256) {
    ag_sort_i32(v, n);
    return AG_OK;
  }
  if (!ag_vec_reserve(&b->radix, n)) return ag_builder_nomem(b);
  uint32_t *src = (uint32_t *)v, *dst = (uint32_t *)b->radix.data, *tmp;
  uint32_t top = (uint32_t)b->n_nfa - 1; /* ids are below n_nfa: skip zero digits */
  for (unsigned shift = 0; shift < 32 && (top >> shift) != 0; shift += 8) {
    size_t cnt[257] = {0};
    for (size_t i = 0; i < n; i++) cnt[(src[i] >> shift & 255) + 1]++;
    for (size_t d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
    for (size_t i = 0; i < n; i++) dst[cnt[src[i] >> shift & 255]++] = src[i];
    tmp = src, src = dst, dst = tmp;
  }
  if (src != (uint32_t *)v) memcpy(v, src, n * sizeof *v);
  return AG_OK;
}

ag_status ag_dfa_spend(ag_builder *b, uint64_t units) {
  b->dfa_work += units;
  if (b->dfa_work > AG_DFA_MAX_WORK)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "determinizing the rule takes over %llu steps (deeply nested optional "
                   "repeats, or alternatives with exponentially many combinations?)",
                   (unsigned long long)AG_DFA_MAX_WORK);
  return AG_OK;
}

/* A fresh mark generation: every old mark is below it. */
uint32_t ag_mark_next(ag_builder *b) {
  if (++b->mark_gen == 0) { /* wrapped: forget every old mark */
    memset(b->mark.data, 0, (size_t)b->n_nfa * sizeof *b->mark.data);
    b->mark_gen = 1;
  }
  return b->mark_gen;
}

/* The epsilon closure of seeds (duplicates allowed) into b->closure, each
 * state visited marked (see ag_closure_hash). Only the states that act are
 * kept: those with a byte or rule edge, and the accepting one (1). A state
 * whose edges are all epsilon adds nothing its successors do not, and keeping
 * it would tell apart equal sets: the state before a `ws*` and the state that
 * loops in it, one DFA state for minimization to merge at every `ws`. */
ag_status ag_dfa_closure(ag_builder *b, const int32_t *seeds, size_t n) {
  uint32_t gen = ag_mark_next(b), *mark = b->mark.data;
  uint64_t scanned = 0; /* edges looked at */
  b->closure.len = b->stack.len = 0;
  for (size_t i = 0; i < n; i++) {
    if (mark[seeds[i]] == gen) continue;
    mark[seeds[i]] = gen;
    if (!ag_vec_push(&b->stack, seeds[i])) return ag_builder_nomem(b);
  }
  while (b->stack.len > 0) {
    int32_t u = b->stack.data[--b->stack.len];
    bool acts = u == 1;
    scanned += b->csr_begin.data[u + 1] - b->csr_begin.data[u];
    for (uint32_t e = b->csr_begin.data[u]; e < b->csr_begin.data[u + 1]; e++) {
      const ag_nfa_edge *ed = &b->csr.data[e];
      if (ed->kind != AG_NFA_EPS) {
        acts = true;
        continue;
      }
      if (mark[ed->to] == gen) continue;
      mark[ed->to] = gen;
      if (!ag_vec_push(&b->stack, ed->to)) return ag_builder_nomem(b);
    }
    if (acts && !ag_vec_push(&b->closure, u)) return ag_builder_nomem(b);
  }
  /* the seeds, the states and edges visited, and hashing and comparing the
   * set when it is interned */
  return ag_dfa_spend(b, n + 2 * (uint64_t)b->closure.len + scanned);
}

static ag_status ag_table_grow(ag_builder *b) {
  size_t cap = b->table_cap * 2;
  ag_dfa_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_builder_nomem(b);
  for (size_t id = 0; id < b->set_hash.len; id++) {
    size_t i = b->set_hash.data[id] & (cap - 1);
    while (t[i].gen == b->table_gen) i = (i + 1) & (cap - 1);
    t[i].gen = b->table_gen;
    t[i].id = (int32_t)id;
  }
  free(b->table);
  b->table = t;
  b->table_cap = cap;
  return AG_OK;
}

static ag_status ag_dfa_add_set(ag_builder *b, uint32_t h, size_t slot, int32_t *id) {
  size_t n = b->closure.len, k = b->set_hash.len;
  if ((size_t)b->base + k >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the grammar's automata need more than %d states", AG_MAX_STATES);
  if (b->pool.len + n > AG_DFA_MAX_SET_WORDS)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "determinizing the rule needs more than %zu words of state sets (deeply "
                   "nested optional repeats?)",
                   AG_DFA_MAX_SET_WORDS);
  if (!ag_vec_reserve(&b->pool, b->pool.len + n) || !ag_vec_push(&b->set_hash, h))
    return ag_builder_nomem(b);
  memcpy(b->pool.data + b->pool.len, b->closure.data, n * sizeof *b->closure.data);
  b->pool.len += n;
  if (!ag_vec_push(&b->set_begin, b->pool.len)) {
    b->pool.len -= n;
    b->set_hash.len--;
    return ag_builder_nomem(b);
  }
  b->table[slot].gen = b->table_gen;
  b->table[slot].id = (int32_t)k;
  *id = (int32_t)k;
  /* Keep the load factor at most 1/2 so probe chains stay short. */
  return (k + 1) * 2 > b->table_cap ? ag_table_grow(b) : AG_OK;
}

/* The local DFA id of the set in b->closure, adding it when new. */
static ag_status ag_dfa_intern(ag_builder *b, int32_t *id) {
  const int32_t *set = b->closure.data;
  size_t n = b->closure.len, mask = b->table_cap - 1;
  uint32_t h = ag_closure_hash(set, n);
  size_t i = h & mask;
  for (; b->table[i].gen == b->table_gen; i = (i + 1) & mask) {
    int32_t k = b->table[i].id;
    if (b->set_hash.data[k] == h && ag_closure_equal(b, k, n)) {
      *id = k;
      return AG_OK;
    }
  }
  return ag_dfa_add_set(b, h, i, id);
}

static ag_status ag_seed_grow(ag_builder *b) {
  size_t cap = b->seed_cap ? b->seed_cap * 2 : 64;
  ag_seed_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_builder_nomem(b);
  for (size_t k = 0; k < b->seed_cap; k++) {
    ag_seed_slot o = b->seed_table[k];
    if (o.gen != b->seed_gen) continue;
    size_t i = o.hash & (cap - 1);
    while (t[i].gen == b->seed_gen) i = (i + 1) & (cap - 1);
    t[i] = o;
  }
  free(b->seed_table);
  b->seed_table = t;
  b->seed_cap = cap;
  return AG_OK;
}

/* Remembers that `seeds` lead to local DFA state id. */
static ag_status ag_seed_add(ag_builder *b, const int32_t *seeds, size_t n, uint32_t h, int32_t id) {
  ag_status st = (b->seed_len + 1) * 2 > b->seed_cap ? ag_seed_grow(b) : AG_OK;
  if (st) return st;
  if (!ag_vec_reserve(&b->seed_pool, b->seed_pool.len + n)) return ag_builder_nomem(b);
  size_t mask = b->seed_cap - 1, i = h & mask;
  while (b->seed_table[i].gen == b->seed_gen) i = (i + 1) & mask;
  ag_seed_slot slot = {b->seed_gen, h, id, (uint32_t)n, (uint32_t)b->seed_pool.len};
  memcpy(b->seed_pool.data + b->seed_pool.len, seeds, n * sizeof *seeds);
  b->seed_pool.len += n;
  b->seed_table[i] = slot;
  b->seed_len++;
  return AG_OK;
}

/* The global DFA state reached from the NFA states `seeds` (sorted by the
 * callers, so equal sets look alike). States reach the same seeds over and
 * over (every prefix of a key trie leaves it for the same rest of the string,
 * every state of a string for the same escapes), so the target of seeds met
 * before is looked up instead of closed and interned again. */
ag_status ag_dfa_target(ag_builder *b, const int32_t *seeds, size_t n, int32_t *target) {
  uint32_t h = ag_set_hash(seeds, n);
  ag_status st = ag_dfa_spend(b, n);
  if (st) return st;
  for (size_t mask = b->seed_cap - 1, i = b->seed_cap ? h & mask : 0;
       b->seed_cap && b->seed_table[i].gen == b->seed_gen; i = (i + 1) & mask) {
    const ag_seed_slot *slot = &b->seed_table[i];
    if (slot->hash == h && slot->n == n &&
        ag_words_equal(b->seed_pool.data + slot->at, seeds, n)) {
      *target = b->base + slot->id;
      return AG_OK;
    }
  }
  int32_t id = -1;
  st = ag_dfa_closure(b, seeds, n);
  if (!st) st = ag_dfa_intern(b, &id);
  if (!st) st = ag_seed_add(b, seeds, n, h, id);
  if (!st) *target = b->base + id;
  return st;
}

/* Gathers the byte-range events and rule moves of the NFA states set[0 .. n). */
ag_status ag_collect_set(ag_builder *b, const int32_t *set, size_t n, bool *accepting) {
  b->events.len = b->moves.len = 0;
  *accepting = false;
  ag_status st = ag_dfa_spend(b, n);
  for (size_t i = 0; !st && i < n; i++)
    st = ag_dfa_spend(b, b->csr_begin.data[set[i] + 1] - b->csr_begin.data[set[i]]);
  if (st) return st;
  for (size_t i = 0; i < n; i++) {
    int32_t u = set[i];
    *accepting |= u == 1;
    for (uint32_t e = b->csr_begin.data[u]; e < b->csr_begin.data[u + 1]; e++) {
      const ag_nfa_edge *ed = &b->csr.data[e];
      uint64_t to = (uint32_t)ed->to;
      bool ok = true;
      if (ed->kind == AG_NFA_BYTES)
        ok = ag_vec_push(&b->events, (uint64_t)ed->lo << 33 | to) &&
             ag_vec_push(&b->events, (uint64_t)(ed->hi + 1) << 33 | (uint64_t)1 << 32 | to);
      else if (ed->kind == AG_NFA_RULE)
        ok = ag_vec_push(&b->moves, (uint64_t)(uint32_t)ed->rule << 32 | to);
      if (!ok) return ag_builder_nomem(b);
    }
  }
  return AG_OK;
}

/* ag_collect_set of DFA state k. This reads the pool, so it runs before
 * anything can be interned (which may move it). */
static ag_status ag_dfa_collect(ag_builder *b, int32_t k, bool *accepting) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1];
  return ag_collect_set(b, b->pool.data + lo, hi - lo, accepting);
}

ag_status ag_emit_byte_edge(ag_builder *b, uint32_t first, int lo, int hi, int32_t target) {
  ag_byte_edge *last = b->byte_edges.len > first ? &b->byte_edges.data[b->byte_edges.len - 1] : 0;
  if (last && last->target == target && last->hi + 1 == lo) {
    last->hi = (uint8_t)hi; /* adjacent, same target: one range */
    return AG_OK;
  }
  if (b->byte_edges.len >= UINT32_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  ag_byte_edge e = {(uint8_t)lo, (uint8_t)hi, target};
  return ag_vec_push(&b->byte_edges, e) ? AG_OK : ag_builder_nomem(b);
}

static ag_status ag_emit_rule_edge(ag_builder *b, int32_t rule, int32_t target) {
  if (b->rule_edges.len >= UINT32_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  ag_rule_edge e = {rule, target};
  return ag_vec_push(&b->rule_edges, e) ? AG_OK : ag_builder_nomem(b);
}

/* Applies the events at one sweep position: a range opening (+1) or closing
 * (-1) for its target. Openings sort first at a position, so a target cannot
 * close and reopen within one; b->active holds each target at most once. */
static ag_status ag_sweep_apply(ag_builder *b, uint64_t ev) {
  int32_t target = (int32_t)(uint32_t)ev;
  if (ev >> 32 & 1) {
    b->count.data[target]--;
    return AG_OK;
  }
  if (b->count.data[target]++ > 0) return AG_OK;
  return ag_vec_push(&b->active, target) ? AG_OK : ag_builder_nomem(b);
}

/* Drops closed targets from b->active and sorts it. */
static ag_status ag_sweep_compact(ag_builder *b) {
  size_t j = 0;
  for (size_t i = 0; i < b->active.len; i++)
    if (b->count.data[b->active.data[i]] > 0) b->active.data[j++] = b->active.data[i];
  b->active.len = j;
  return ag_sort_states(b, b->active.data, j);
}

static bool ag_sweep_same(const ag_builder *b) {
  return b->prev.len == b->active.len &&
         memcmp(b->prev.data, b->active.data, b->active.len * sizeof *b->active.data) == 0;
}

/* Sorts the sweep events by position, openings first. Only the order of the
 * (position, is_end) key matters, and it has 514 values (10 bits): past a
 * handful of events, two counting passes of 5 bits each sort in linear time,
 * without the mispredicted compares of a comparison sort. */
static ag_status ag_sort_events(ag_builder *b) {
  uint64_t *ev = b->events.data;
  size_t n = b->events.len;
  if (n <= 16) {
    AG_INSERTION_SORT(uint64_t, ev, n)
    return AG_OK;
  }
  if (!ag_vec_reserve(&b->events_tmp, n)) return ag_builder_nomem(b);
  uint64_t *tmp = b->events_tmp.data;
  for (unsigned shift = 32; shift < 42; shift += 5) {
    size_t cnt[33] = {0};
    for (size_t i = 0; i < n; i++) cnt[(ev[i] >> shift & 31) + 1]++;
    for (size_t k = 0; k < 32; k++) cnt[k + 1] += cnt[k];
    for (size_t i = 0; i < n; i++) tmp[cnt[ev[i] >> shift & 31]++] = ev[i];
    uint64_t *t = ev;
    ev = tmp, tmp = t;
  }
  return AG_OK; /* two passes: the sorted events are back in b->events */
}

/* Emits the byte edges of the current DFA state. The range ends split the
 * byte alphabet into intervals on which the set of NFA targets is constant;
 * a sweep over the sorted ends yields each interval's set in O(E log E). */
ag_status ag_dfa_bytes(ag_builder *b, uint32_t first) {
  uint64_t *ev = b->events.data;
  size_t n = b->events.len, i = 0;
  int32_t prev_target = -1;
  ag_status st = ag_dfa_spend(b, n);
  if (!st) st = ag_sort_events(b);
  if (st) return st;
  b->active.len = b->prev.len = 0;
  while (i < n) {
    int pos = (int)(ev[i] >> 33);
    for (; i < n && (int)(ev[i] >> 33) == pos; i++)
      if ((st = ag_sweep_apply(b, ev[i]))) return st;
    if (i == n) break; /* position 256 or the last end: everything closed */
    int next = (int)(ev[i] >> 33);
    if ((st = ag_dfa_spend(b, b->active.len)) || (st = ag_sweep_compact(b))) return st;
    if (b->active.len == 0) continue;
    /* Neighbouring intervals often have the same targets (a class whose
     * ranges all lead to one state): reuse instead of a new closure. */
    if (prev_target < 0 || !ag_sweep_same(b)) {
      if ((st = ag_dfa_target(b, b->active.data, b->active.len, &prev_target))) return st;
      b->prev.len = 0;
      if (!ag_vec_reserve(&b->prev, b->active.len)) return ag_builder_nomem(b);
      memcpy(b->prev.data, b->active.data, b->active.len * sizeof *b->active.data);
      b->prev.len = b->active.len;
    }
    if ((st = ag_emit_byte_edge(b, first, pos, next - 1, prev_target))) return st;
  }
  return AG_OK;
}

/* Emits the rule edges of the current DFA state, one per rule, sorted by rule. */
static ag_status ag_dfa_rules(ag_builder *b) {
  uint64_t *mv = b->moves.data;
  size_t n = b->moves.len, i = 0;
  ag_sort_u64(mv, n);
  while (i < n) {
    uint32_t rule = (uint32_t)(mv[i] >> 32);
    b->active.len = 0;
    for (; i < n && (uint32_t)(mv[i] >> 32) == rule; i++)
      if (!ag_vec_push(&b->active, (int32_t)(uint32_t)mv[i])) return ag_builder_nomem(b);
    int32_t target = -1;
    ag_status st = ag_dfa_target(b, b->active.data, b->active.len, &target);
    if (!st) st = ag_emit_rule_edge(b, (int32_t)rule, target);
    if (st) return st;
  }
  return AG_OK;
}

/* The most edges ag_disjoint_state takes: past it, the sweep. */
#define AG_DISJOINT_MAX_EDGES 12

/* The edges of DFA state k when its NFA states' byte ranges are disjoint and
 * they have at most one rule edge: each edge then leads to the DFA state of
 * its own target. Most states of a schema's automaton are like this: inside
 * a literal (a key, a colon), one byte to the next; in a string, its
 * character ranges beside the closing quote. The sweep, sorting events and
 * target sets, would find exactly these edges. Targets are interned in the
 * sweep's order (bytes by position, then the rule), so the automaton is the
 * same state for state. Epsilon edges are skipped: a closure holds their
 * targets already. *done false leaves k to the sweep. */
static ag_status ag_disjoint_state(ag_builder *b, int32_t k, ag_state *s, bool *done) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1], n = 0;
  ag_byte_edge own[AG_DISJOINT_MAX_EDGES];
  const ag_nfa_edge *rule = NULL;
  bool accepting = false;
  uint64_t scanned = hi - lo;
  *done = false;
  for (size_t i = lo; i < hi; i++) {
    int32_t u = b->pool.data[i];
    uint32_t e0 = b->csr_begin.data[u], e1 = b->csr_begin.data[u + 1];
    accepting |= u == 1; /* the NFA's accepting state */
    scanned += e1 - e0;
    for (uint32_t e = e0; e < e1; e++) {
      const ag_nfa_edge *ed = &b->csr.data[e];
      if (ed->kind == AG_NFA_RULE) {
        if (rule) return AG_OK; /* two rule edges: the sweep groups them by rule */
        rule = ed;
      } else if (ed->kind == AG_NFA_BYTES) {
        if (n == AG_DISJOINT_MAX_EDGES) return AG_OK;
        own[n++] = (ag_byte_edge){ed->lo, ed->hi, ed->to};
      }
    }
  }
  ag_sort_edges_by_lo(own, n);
  for (size_t i = 1; i < n; i++)
    if (own[i].lo <= own[i - 1].hi) return AG_OK; /* overlapping: the sweep splits them */
  ag_status st = ag_dfa_spend(b, scanned); /* as ag_collect_set counts */
  for (size_t i = 0; !st && i < n; i++) {
    int32_t seed = own[i].target, target = -1;
    st = ag_dfa_target(b, &seed, 1, &target);
    if (!st) st = ag_emit_byte_edge(b, s->byte_begin, own[i].lo, own[i].hi, target);
  }
  if (!st && rule) {
    int32_t seed = rule->to, target = -1;
    st = ag_dfa_target(b, &seed, 1, &target);
    if (!st) st = ag_emit_rule_edge(b, rule->rule, target);
  }
  s->accepting = accepting;
  *done = !st;
  return st;
}

/* Computes the edges of local DFA state k and appends the state. States are
 * processed in id order, so state k's edges are contiguous. */
static ag_status ag_dfa_state(ag_builder *b, int32_t k) {
  ag_state s = {(uint32_t)b->byte_edges.len, 0, (uint32_t)b->rule_edges.len, 0, false, false, false, 0};
  bool done = false, disjoint = false;
  ag_status st = b->key_ways.len ? ag_key_state(b, k, s.byte_begin, &done) : AG_OK;
  if (!st && !done) st = ag_disjoint_state(b, k, &s, &disjoint);
  if (!st && !done && !disjoint) {
    st = ag_dfa_collect(b, k, &s.accepting);
    if (!st) st = ag_dfa_bytes(b, s.byte_begin);
    if (!st) st = ag_dfa_rules(b);
  }
  if (st) return st;
  s.byte_end = (uint32_t)b->byte_edges.len;
  s.rule_end = (uint32_t)b->rule_edges.len;
  if (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, b->rule_id)) return ag_builder_nomem(b);
  if (b->key_ways.len && !ag_vec_push(&b->key_merge, (uint8_t)!done)) return ag_builder_nomem(b);
  return AG_OK;
}

/* Determinizes the current NFA; the start state gets the global id b->base. */
ag_status ag_dfa_build(ag_builder *b) {
  int32_t start = 0, target;
  b->base = (int32_t)b->states.len;
  b->pool.len = b->set_hash.len = b->set_begin.len = b->key_merge.len = 0;
  b->dfa_work = 0;
  b->table_gen++;
  b->seed_len = b->seed_pool.len = 0;
  if (++b->seed_gen == 0) { /* wrapped: forget every old slot */
    if (b->seed_table) memset(b->seed_table, 0, b->seed_cap * sizeof *b->seed_table);
    b->seed_gen = 1;
  }
  if (!ag_vec_push(&b->set_begin, (size_t)0)) return ag_builder_nomem(b);
  ag_status st = ag_dfa_target(b, &start, 1, &target);
  for (size_t k = 0; !st && k < b->set_hash.len; k++) st = ag_dfa_state(b, (int32_t)k);
  return st;
}


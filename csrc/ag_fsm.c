/*
 * ag_fsm.c - one deterministic automaton per grammar rule: the driver.
 *
 * Each rule body is turned into an epsilon-NFA by Thompson construction
 * (ag_nfa.c), determinized by subset construction (ag_dfa.c), then shrunk by
 * merging equivalent states (ag_minimize.c); a rule that is a choice of
 * literals is built as a trie instead (ag_trie.h). This file decides which
 * rules are built, in what order, and hands the finished arrays to the grammar.
 */
#include "ag_build_cache.h"
#include "ag_fsm_builder.h"

/* Minimization rounds per rule. Usually two suffice (one merging, one
 * confirming); merging is optional, so a pathological rule just stops early. */
#define AG_MIN_MAX_ROUNDS 64

/* A repeat of a bytes-only child that unrolling would make into more than this
 * many states (copies times the child's, less the one where the next copy
 * starts) is counted in the child's own automaton instead, when the child
 * allows (ag_counted_inline): a `maxLength: 255` JSON
 * string was 5,104 states and most of its grammar's build, counted it is 26,
 * and its masks are the counted loop's (docs/engine.md, counted repetition).
 * Smaller repeats (a date's `[0-9]{4}`, an email's 63-character labels) stay
 * unrolled: counted, a class that is not every plain character makes the first
 * mask inside it walk the vocabulary for its table of copies (ag_copies.c),
 * 4 ms for an email; unrolled, its states classify as usual. */
#define AG_UNROLL_STATES 4096

ag_status ag_builder_nomem(ag_builder *b) {
  return ag_fail(b->err, AG_ERR_NOMEM, b->rule, "out of memory while building the automaton");
}

/* ---- driver ------------------------------------------------------------- */

/* The builder's scratch vectors. Each build fills what it reads (a vector
 * starts empty, its memory unset), so one may start with the memory that the
 * last build grew (ag_build_cache_keep_scratch): no regrowing and no zeroing
 * of the tables on every load. */
#define AG_SCRATCH_VECS(X)                                                                  \
  X(hidden) X(bounds) X(touched) X(tasks) X(edges) X(csr) X(csr_begin) X(pool) X(set_begin) \
  X(set_hash) X(seed_pool) X(mark) X(count) X(stack) X(closure) X(radix) X(active) X(prev)  \
  X(events) X(events_tmp) X(moves) X(rep) X(watch) X(sig) X(sigs) X(order) X(post) X(rank)  \
  X(dfs) X(new_id) X(tmp_states) X(tmp_bytes) X(tmp_rules) X(key_ways) X(key_nodes)         \
  X(nfa_way) X(key_sets) X(key_rows) X(key_own) X(key_merge) X(key_canon) X(trie_rules)

void ag_builder_free(ag_builder *b) {
  free(b->inline_cost);
  free(b->node_size);
  free(b->counted);
  free(b->loop_counted);
  free(b->node_rule);
  free(b->hub);
  free(b->stub);
  free(b->share);
  free(b->table);
  free(b->seed_table);
#define AG_FREE_VEC(f) ag_vec_free(&b->f);
  AG_SCRATCH_VECS(AG_FREE_VEC)
#undef AG_FREE_VEC
  ag_trie_free(&b->trie);
  /* the output, when no grammar took it (a build that failed) */
  ag_vec_free(&b->rule_start);
  ag_vec_free(&b->states);
  ag_vec_free(&b->state_rule);
  ag_vec_free(&b->byte_edges);
  ag_vec_free(&b->rule_edges);
}

/* Shrinks a finished output array to its length; keeps the old block when
 * realloc fails, since it is still valid. */
static void *ag_shrink(void *data, size_t len, size_t elem) {
  if (!data || len == 0) {
    free(data);
    return NULL;
  }
  void *p = realloc(data, len * elem);
  return p ? p : data;
}

/* Moves the finished arrays into g; the builder no longer owns them. */
static ag_status ag_builder_hand_over(ag_builder *b, ag_grammar *g) {
  size_t n_rules = b->rule_start.len, n_ir = (size_t)b->ir->n_rules;
  g->rule_nullable = calloc(n_rules, sizeof *g->rule_nullable);
  g->rule_repeat = calloc(n_rules, sizeof *g->rule_repeat);
  g->rule_trie = calloc(n_rules ? n_rules : 1, sizeof *g->rule_trie);
  g->rule_stub = calloc(n_rules ? n_rules : 1, sizeof *g->rule_stub);
  if (!g->rule_nullable || !g->rule_repeat || !g->rule_trie || !g->rule_stub) return ag_builder_nomem(b);
  for (size_t k = 0; k < b->trie_rules.len; k++) g->rule_trie[b->trie_rules.data[k]] = true;
  if (n_ir) memcpy(g->rule_stub, b->stub, n_ir * sizeof *g->rule_stub);
  if (b->bounds.len) memcpy(g->rule_repeat + n_ir, b->bounds.data, b->bounds.len * sizeof *b->bounds.data);
  g->n_rules = (int32_t)n_rules;
  g->n_ir_rules = (int32_t)n_ir;
  g->rule_start = b->rule_start.data;
  g->n_states = (int32_t)b->states.len;
  g->states = ag_shrink(b->states.data, b->states.len, sizeof *b->states.data);
  g->state_rule = ag_shrink(b->state_rule.data, b->state_rule.len, sizeof *b->state_rule.data);
  g->n_byte_edges = (uint32_t)b->byte_edges.len;
  g->byte_edges = ag_shrink(b->byte_edges.data, b->byte_edges.len, sizeof *b->byte_edges.data);
  g->n_rule_edges = (uint32_t)b->rule_edges.len;
  g->rule_edges = ag_shrink(b->rule_edges.data, b->rule_edges.len, sizeof *b->rule_edges.data);
  memset(&b->rule_start, 0, sizeof b->rule_start);
  memset(&b->states, 0, sizeof b->states);
  memset(&b->state_rule, 0, sizeof b->state_rule);
  memset(&b->byte_edges, 0, sizeof b->byte_edges);
  memset(&b->rule_edges, 0, sizeof b->rule_edges);
  return AG_OK;
}

/* Appends one state of the counted rule being built: no byte edge, one rule
 * edge over the child to `target`. */
static ag_status ag_counted_state(ag_builder *b, bool accepting, int32_t child, int32_t target) {
  if (b->states.len >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the grammar's automata need more than %d states", AG_MAX_STATES);
  if (b->rule_edges.len >= UINT32_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  uint32_t nb = (uint32_t)b->byte_edges.len, nr = (uint32_t)b->rule_edges.len;
  ag_state s = {nb, nb, nr, nr + 1, accepting, true, false, 0};
  ag_rule_edge e = {child, target};
  if (!ag_vec_push(&b->rule_edges, e) || !ag_vec_push(&b->states, s) ||
      !ag_vec_push(&b->state_rule, b->rule_id))
    return ag_builder_nomem(b);
  return AG_OK;
}

static ag_status ag_rule_build(ag_builder *b, int32_t node);

/* Whether the child's automaton, just built from b->base, can be counted in its
 * own states: bytes only, not nullable, prefix-free (no accepting state goes on)
 * and never back at its start. Then every copy ends at an accepting state and
 * the next byte starts the next copy, so a copy boundary is a byte automaton's
 * state and the count changes on its edges (ag_earley.c, ag_repeat_bounds). */
static bool ag_countable_child(const ag_builder *b) {
  size_t n = b->states.len;
  if (b->states.data[b->base].accepting) return false;
  for (size_t s = (size_t)b->base; s < n; s++) {
    const ag_state *st = &b->states.data[s];
    if (st->rule_begin != st->rule_end || (st->accepting && st->byte_begin != st->byte_end)) return false;
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++)
      if (b->byte_edges.data[e].target == b->base) return false;
  }
  return true;
}

/* A counted repeat of a bytes-only child as one byte automaton (C+, whose
 * accepting states take the start's edges): its items count the copies, and the
 * mask cache classifies its states as it would an unbounded repeat's (the
 * matcher drops the tokens that would pass the bound: ag_copies.h). *done is
 * false, and nothing is kept, when the child does not fit (ag_countable_child). */
static ag_status ag_counted_inline(ag_builder *b, int32_t child_node, int32_t min, bool *done) {
  size_t n_states = b->states.len, n_bytes = b->byte_edges.len, n_rules = b->rule_edges.len;
  size_t n_tries = b->trie_rules.len;
  *done = false;
  ag_status st = ag_rule_build(b, child_node);
  if (st) return st;
  if (!ag_countable_child(b)) {
    b->states.len = b->state_rule.len = n_states;
    b->byte_edges.len = n_bytes;
    b->rule_edges.len = n_rules;
    b->trie_rules.len = n_tries;
    return AG_OK;
  }
  /* The accepting states take the start's edges. Edges stay laid out in state
   * order (trimming compacts them in place), so the rule's are written anew. */
  ag_state *states = b->states.data;
  states[b->base].accepting = min == 0;
  uint32_t first = states[b->base].byte_begin, sb = first, se = states[b->base].byte_end;
  size_t n_new = 0;
  for (size_t s = (size_t)b->base; s < b->states.len; s++) {
    if (states[s].byte_begin < first) first = states[s].byte_begin;
    if (states[s].accepting && (int32_t)s != b->base) n_new += se - sb;
  }
  size_t n_old = b->byte_edges.len - first;
  n_new += n_old;
  ag_byte_edge *old = malloc((n_old ? n_old : 1) * sizeof *old);
  if (!old || !ag_vec_reserve(&b->byte_edges, first + n_new)) {
    free(old);
    return ag_builder_nomem(b);
  }
  memcpy(old, b->byte_edges.data + first, n_old * sizeof *old);
  uint32_t w = first;
  for (size_t s = (size_t)b->base; s < b->states.len; s++) {
    ag_state *x = &b->states.data[s];
    bool loops = x->accepting && (int32_t)s != b->base;
    uint32_t from = loops ? sb : x->byte_begin, to = loops ? se : x->byte_end;
    x->counted = true;
    x->boundary = x->accepting || (int32_t)s == b->base; /* where a byte begins a copy */
    x->byte_begin = w;
    for (uint32_t e = from; e < to; e++) b->byte_edges.data[w++] = old[e - first];
    x->byte_end = w;
  }
  b->byte_edges.len = w;
  free(old);
  /* With min 0 the start accepts too, with the same edges as the accepting states:
   * they are one state, the start (a byte from an accepting state begins a copy
   * whatever the count), so the loop's first position is the loop itself. */
  if (min == 0)
    for (uint32_t e = first; e < w; e++)
      if (b->states.data[b->byte_edges.data[e].target].accepting) b->byte_edges.data[e].target = b->base;
  *done = true;
  return AG_OK;
}

/* The counted rule of repeat node `node` (see ag_repeat_bounds): the child's own
 * automaton looping when it allows (ag_counted_inline); else C* as one state
 * when min is 0, or C+ as a start and a looping accepting state. */
static ag_status ag_counted_build(ag_builder *b, int32_t node) {
  const int32_t *p = ag_ir_node(b->ir, node);
  const int32_t *c = ag_ir_node(b->ir, p[1]);
  int32_t child = c[1], min = p[2];
  ag_repeat_bounds bounds = {min, p[3], 0};
  bool done = false;
  b->base = (int32_t)b->states.len;
  if (b->inline_cost[p[1]] || (c[0] == AG_NODE_RULEREF && ag_inline_cost(b, c[1]))) {
    ag_status st = ag_counted_inline(b, p[1], min, &done);
    if (!st && done && !ag_vec_push(&b->bounds, bounds)) st = ag_builder_nomem(b);
    if (st || done) return st;
  }
  ag_status st = c[0] == AG_NODE_RULEREF ? AG_OK : ag_hidden_rule(b, p[1], &child);
  if (!st && !ag_vec_push(&b->bounds, bounds)) st = ag_builder_nomem(b);
  b->base = (int32_t)b->states.len;
  if (!st) st = ag_counted_state(b, min == 0, child, min == 0 ? b->base : b->base + 1);
  if (!st && min > 0) st = ag_counted_state(b, true, child, b->base + 1);
  return st;
}

/* The states of child node's own automaton, and whether it can be counted in
 * them (ag_countable_child): built and dropped again, before any rule is. */
static ag_status ag_child_states(ag_builder *b, int32_t child, size_t *n_states, bool *countable) {
  size_t n = b->states.len, n_bytes = b->byte_edges.len, n_rules = b->rule_edges.len;
  size_t n_tries = b->trie_rules.len;
  b->base = (int32_t)n;
  ag_status st = ag_rule_build(b, child);
  if (!st) {
    *n_states = b->states.len - n;
    *countable = ag_countable_child(b);
  }
  b->states.len = b->state_rule.len = n;
  b->byte_edges.len = n_bytes;
  b->rule_edges.len = n_rules;
  b->trie_rules.len = n_tries;
  return st;
}

/* Marks the repeats that unrolling would make larger than AG_UNROLL_STATES and
 * whose child can be counted in its own automaton (b->loop_counted), then sizes
 * the nodes again: a marked repeat is one rule edge. The child is built once
 * here to know; a repeat whose pieces are few is not (a state needs a piece). */
static ag_status ag_count_large_unrolls(ag_builder *b) {
  int32_t n = b->ir->n_nodes;
  bool any = false;
  b->loop_counted = calloc((size_t)(n ? n : 1), sizeof *b->loop_counted);
  if (!b->loop_counted) return ag_builder_nomem(b);
  b->rule = b->rule_id = -1; /* no rule is being built: every small rule inlines */
  for (int32_t i = 0; i < n; i++) {
    const int32_t *p = ag_ir_node(b->ir, i);
    if (p[0] != AG_NODE_REPEAT || b->counted[i]) continue;
    uint64_t copies = p[3] < 0 ? (uint64_t)p[2] : (uint64_t)p[3];
    uint64_t size = ag_bytes_child_size(b, p[1]);
    if (copies <= 1 || size == 0 || copies * size <= AG_UNROLL_STATES) continue;
    size_t n_child = 0;
    bool countable = false;
    ag_status st = ag_child_states(b, p[1], &n_child, &countable);
    if (st) return st;
    /* a countable child's accepting states are where the next copy starts */
    if (countable && copies * (n_child - 1) > AG_UNROLL_STATES) {
      b->loop_counted[i] = 1;
      any = true;
    }
  }
  if (any) ag_node_sizes_again(b);
  return AG_OK;
}

/* ---- literal tries ------------------------------------------------------ */

/* Alternative `node` as a trie entry: a literal, alone or followed by a rule
 * edge (a reference that is not inlined). False for any other shape. */
static bool ag_trie_entry_of(const ag_builder *b, int32_t node, ag_trie_entry *out) {
  const int32_t *p = ag_ir_node(b->ir, node), *ref = NULL;
  if (p[0] == AG_NODE_SEQ) {
    if (p[1] != 2) return false;
    ref = ag_ir_node(b->ir, p[3]);
    p = ag_ir_node(b->ir, p[2]);
    if (ref[0] != AG_NODE_RULEREF || ag_inline_cost(b, ref[1])) return false;
  }
  if (p[0] != AG_NODE_LITERAL || p[1] < 1) return false;
  ag_trie_entry e = {p + 2, p[1], ref ? ref[1] : -1};
  *out = e;
  return true;
}

/* Whether body `node` is a choice of two or more trie entries; fills b->trie.entries
 * (the builder keeps their memory from rule to rule). */
static ag_status ag_trie_shape(ag_builder *b, int32_t node, bool *is_trie) {
  const int32_t *p = ag_ir_node(b->ir, node);
  ag_trie_entry e;
  *is_trie = false;
  if (p[0] == AG_NODE_SWITCH && p[1] >= 2) { /* words are non-empty (ag_ir.c) */
    b->trie.entries.len = 0;
    const int32_t *w = p + 2;
    for (int32_t k = 0; k < p[1]; k++, w += 2 + w[1]) {
      if (ag_inline_cost(b, w[0])) return AG_OK;
      ag_trie_entry we = {w + 2, w[1], w[0]};
      if (!ag_vec_push(&b->trie.entries, we)) return ag_builder_nomem(b);
    }
    *is_trie = true;
    return AG_OK;
  }
  if (p[0] != AG_NODE_CHOICE || p[1] < 2) return AG_OK;
  b->trie.entries.len = 0;
  for (int32_t k = 0; k < p[1]; k++) {
    if (!ag_trie_entry_of(b, p[2 + k], &e)) return AG_OK;
    if (!ag_vec_push(&b->trie.entries, e)) return ag_builder_nomem(b);
  }
  *is_trie = true;
  return AG_OK;
}

/* Builds the rule from b->trie.entries: the states that subset construction
 * of their NFA would give (ag_trie.h), so minimization merges the rest. */
static ag_status ag_trie_rule(ag_builder *b) {
  ag_trie *t = &b->trie;
  b->base = (int32_t)b->states.len;
  ag_status st = ag_trie_build(t, AG_MAX_STATES - b->base, b->rule, b->err);
  if (!st && b->rule_edges.len + t->rules.len >= UINT32_MAX)
    st = ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  for (size_t k = 0; !st && k < t->states.len; k++) {
    const ag_trie_state *ts = &t->states.data[k];
    ag_state s = {(uint32_t)b->byte_edges.len, 0, (uint32_t)b->rule_edges.len, 0, ts->accepting, false, false, 0};
    for (uint32_t e = ts->edge_begin; !st && e < ts->edge_end; e++) {
      const ag_trie_edge *te = &t->edges.data[e];
      st = ag_emit_byte_edge(b, s.byte_begin, te->byte, te->byte, b->base + te->target);
    }
    for (uint32_t r = ts->rule_begin; !st && r < ts->rule_end; r++) {
      ag_rule_edge re = {t->rules.data[r], b->base + t->final};
      if (!ag_vec_push(&b->rule_edges, re)) st = ag_builder_nomem(b);
    }
    s.byte_end = (uint32_t)b->byte_edges.len;
    s.rule_end = (uint32_t)b->rule_edges.len;
    if (!st && (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, b->rule_id)))
      st = ag_builder_nomem(b);
  }
  return st;
}

/* Builds rule body `node` into states, its start at b->base. */
static ag_status ag_rule_build(ag_builder *b, int32_t node) {
  bool is_trie = false, cached = false, keep = false;
  ag_status st = b->cache ? ag_key_rule_cached(b, node, &cached, &keep) : AG_OK;
  if (st || cached) return st;
  st = ag_trie_shape(b, node, &is_trie);
  if (is_trie) {
    /* One round is exact: visited in postorder, a trie state's byte edges
     * lead to states merged already, or to ends, which never merge
     * (each has its own rules or acceptance, and no byte edge). Only the
     * states that may have another's language are compared (ag_trie.h). */
    if (!st) st = ag_trie_rule(b);
    if (!st && !ag_vec_push(&b->trie_rules, b->rule_id)) st = ag_builder_nomem(b);
    if (!st && memchr(b->trie.may_merge.data, 1, b->trie.may_merge.len))
      st = ag_min_rule(b, 1, b->trie.may_merge.data);
  } else if (!st) {
    st = ag_nfa_build(b, node);
    if (!st) st = ag_nfa_index(b);
    if (!st) st = ag_dfa_build(b);
    /* A trie node's state is the only one with its subtrie (ag_key_merge) and
     * has a way's many edges: not compared, it saves most of minimizing a key trie. */
    if (!st) st = ag_min_rule(b, AG_MIN_MAX_ROUNDS, b->key_ways.len ? b->key_merge.data : NULL);
    if (!st && keep) st = ag_key_piece_keep(b, node);
  }
  return st;
}

/* Whether the states from `from` on have no rule edge. */
static bool ag_bytes_only(const ag_builder *b, size_t from) {
  for (size_t s = from; s < b->states.len; s++)
    if (b->states.data[s].rule_begin != b->states.data[s].rule_end) return false;
  return true;
}

/* A counted text (AG_NODE_COUNTED_TEXT): its body's automaton, where each rule
 * referenced in a last position is entered once (b->linear: a pattern's states),
 * and its character's, combined into one counted rule (ag_counted_text.c). */
static ag_status ag_counted_text_build(ag_builder *b, int32_t node) {
  const int32_t *p = ag_ir_node(b->ir, node);
  size_t n_states = b->states.len, n_bytes = b->byte_edges.len, n_tries = b->trie_rules.len;
  ag_repeat_bounds bounds = {p[3], p[4], 0};
  if (!b->hub) {
    size_t size = (size_t)(b->ir->n_rules ? b->ir->n_rules : 1) * sizeof *b->hub;
    if (!(b->hub = malloc(size))) return ag_builder_nomem(b);
    memset(b->hub, 0xff, size); /* -1: no copy yet */
  }
  b->base = (int32_t)n_states;
  b->linear = true;
  ag_status st = ag_rule_build(b, p[1]);
  b->linear = false;
  for (size_t k = 0; k < b->touched.len; k++) b->hub[b->touched.data[k]] = -1;
  b->touched.len = 0;
  if (!st && !ag_bytes_only(b, n_states))
    st = ag_fail(b->err, AG_ERR_INVALID, b->rule,
                 "a counted text's body must be bytes, or references in last positions to rules of bytes");
  int32_t chr = (int32_t)b->states.len;
  b->base = chr;
  if (!st) st = ag_rule_build(b, p[2]);
  if (!st && !ag_countable_child(b))
    st = ag_fail(b->err, AG_ERR_INVALID, b->rule,
                 "a counted text's character must be bytes, prefix-free and not empty");
  b->trie_rules.len = n_tries;
  if (!st) st = ag_counted_text_make(b, (int32_t)n_states, chr, n_bytes, &bounds);
  if (!st && !ag_vec_push(&b->bounds, bounds)) st = ag_builder_nomem(b);
  b->base = (int32_t)n_states;
  return st;
}

/* Builds hidden rule k (its id follows the IR rules'). */
static ag_status ag_hidden_one(ag_builder *b, size_t k) {
  ag_hidden h = b->hidden.data[k];
  ag_repeat_bounds none = {0, 0, 0};
  b->rule = h.owner;
  b->rule_id = b->ir->n_rules + (int32_t)k;
  ag_status st;
  if (ag_ir_node(b->ir, h.node)[0] == AG_NODE_COUNTED_TEXT) {
    st = ag_counted_text_build(b, h.node);
  } else if (b->counted[h.node]) {
    st = ag_counted_build(b, h.node);
  } else {
    st = ag_rule_build(b, h.node);
    if (!st && !ag_vec_push(&b->bounds, none)) st = ag_builder_nomem(b);
  }
  if (!st && !ag_vec_push(&b->rule_start, b->base)) st = ag_builder_nomem(b);
  return st;
}

/* Queues the IR rules that the rule edges from index `from` on name, each once
 * (rule_start -2: queued). Part rules and hidden rules are labelled past the
 * IR rules: the former are built already, the latter in order of creation. */
static void ag_queue_named(ag_builder *b, size_t from, int32_t *queue, size_t *tail) {
  for (size_t e = from; e < b->rule_edges.len; e++) {
    int32_t r = b->rule_edges.data[e].rule;
    if (r < b->ir->n_rules && b->rule_start.data[r] == -1) {
      b->rule_start.data[r] = -2;
      queue[(*tail)++] = r;
    }
  }
}

/* A rule that no automaton names gets a bare start state and no automaton. */
static ag_status ag_stub_rule(ag_builder *b, int32_t r) {
  if (b->states.len >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, r, "the grammar's automata need more than %d states",
                   AG_MAX_STATES);
  uint32_t nb = (uint32_t)b->byte_edges.len, nr = (uint32_t)b->rule_edges.len;
  ag_state s = {nb, nb, nr, nr, false, false, false, 0};
  b->rule_start.data[r] = (int32_t)b->states.len;
  b->stub[r] = true;
  if (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, r)) return ag_builder_nomem(b);
  return AG_OK;
}

/* Builds the rules the root needs: the root, every rule an automaton built so
 * far names (a rule edge), and the hidden rules they make. A small rule made of
 * bytes alone is inlined wherever it is referenced (ag_nfa_ruleref), so no edge
 * may name it: a JSON string's characters, its escapes, whitespace, a number.
 * Its own automaton would serve nothing (docs/engine.md: what building them
 * cost); it keeps a bare start (b->stub), which analysis finds unproductive and
 * nothing reaches. */
static ag_status ag_rules_build(ag_builder *b) {
  int32_t n = b->ir->n_rules;
  int32_t *queue = malloc(sizeof *queue * (size_t)(n ? n : 1));
  b->stub = calloc((size_t)(n ? n : 1), sizeof *b->stub);
  if (!queue || !b->stub || !ag_vec_reserve(&b->rule_start, (size_t)n)) {
    free(queue);
    return ag_builder_nomem(b);
  }
  for (int32_t r = 0; r < n; r++) b->rule_start.data[r] = -1;
  b->rule_start.len = (size_t)n;
  size_t head = 0, tail = 0, hidden = 0;
  ag_status st = AG_OK;
  b->rule_start.data[b->ir->root] = -2;
  queue[tail++] = b->ir->root;
  while (!st && (head < tail || hidden < b->hidden.len)) {
    size_t first_edge = b->rule_edges.len;
    if (head < tail) {
      int32_t r = queue[head++];
      b->rule = b->rule_id = r;
      st = ag_rule_build(b, b->ir->body[r]);
      if (!st) b->rule_start.data[r] = b->base;
    } else {
      st = ag_hidden_one(b, hidden++);
    }
    if (!st) ag_queue_named(b, first_edge, queue, &tail);
  }
  for (int32_t r = 0; !st && r < n; r++)
    if (b->rule_start.data[r] == -1) st = ag_stub_rule(b, r);
  free(queue);
  return st;
}

/* Room for a typical grammar in the vectors every rule uses, which grown from
 * nothing reallocate over and over. The output arrays are shrunk to their
 * length when handed over. */
static ag_status ag_builder_reserve(ag_builder *b) {
  const size_t n = 256, out = 1024;
  bool ok = ag_vec_reserve(&b->tasks, n) && ag_vec_reserve(&b->edges, n) &&
            ag_vec_reserve(&b->csr, n) && ag_vec_reserve(&b->csr_begin, n) &&
            ag_vec_reserve(&b->pool, n) && ag_vec_reserve(&b->set_begin, n) &&
            ag_vec_reserve(&b->set_hash, n) && ag_vec_reserve(&b->mark, n) &&
            ag_vec_reserve(&b->count, n) && ag_vec_reserve(&b->stack, n) &&
            ag_vec_reserve(&b->closure, n) && ag_vec_reserve(&b->active, n) &&
            ag_vec_reserve(&b->prev, n) && ag_vec_reserve(&b->events, n) &&
            ag_vec_reserve(&b->events_tmp, n) && ag_vec_reserve(&b->moves, n) &&
            ag_vec_reserve(&b->rep, n) && ag_vec_reserve(&b->sig, n) && ag_vec_reserve(&b->sigs, n) &&
            ag_vec_reserve(&b->order, n) && ag_vec_reserve(&b->post, n) &&
            ag_vec_reserve(&b->rank, n) && ag_vec_reserve(&b->dfs, n) &&
            ag_vec_reserve(&b->new_id, n) && ag_vec_reserve(&b->tmp_states, n) &&
            ag_vec_reserve(&b->tmp_bytes, n) && ag_vec_reserve(&b->states, out) &&
            ag_vec_reserve(&b->state_rule, out) && ag_vec_reserve(&b->byte_edges, out) &&
            ag_vec_reserve(&b->rule_edges, n);
  return ok ? AG_OK : ag_builder_nomem(b);
}

void ag_builder_move_scratch(ag_builder *to, ag_builder *from) {
#define AG_MOVE_VEC(f)         \
  to->f.data = from->f.data;   \
  to->f.cap = from->f.cap;     \
  to->f.len = 0;               \
  from->f.data = NULL;         \
  from->f.len = from->f.cap = 0;
  AG_SCRATCH_VECS(AG_MOVE_VEC)
#undef AG_MOVE_VEC
  /* The hash tables keep their slots and generations: every slot is stale once
   * the next rule bumps its table's generation, as between two rules. */
  to->table = from->table;
  to->table_cap = from->table_cap;
  to->table_gen = from->table_gen;
  to->seed_table = from->seed_table;
  to->seed_cap = from->seed_cap;
  to->seed_gen = from->seed_gen;
  to->share = from->share;
  to->share_cap = from->share_cap;
  to->share_gen = from->share_gen;
  from->table = NULL;
  from->seed_table = NULL;
  from->share = NULL;
  from->table_cap = from->seed_cap = from->share_cap = 0;
}

size_t ag_builder_scratch_bytes(const ag_builder *b) {
  size_t n = b->table_cap * sizeof *b->table + b->seed_cap * sizeof *b->seed_table +
             b->share_cap * sizeof *b->share;
#define AG_VEC_BYTES(f) n += b->f.cap * sizeof *b->f.data;
  AG_SCRATCH_VECS(AG_VEC_BYTES)
#undef AG_VEC_BYTES
  return n;
}

/* A builder for ir, with the scratch memory the cache kept, if any. */
static ag_status ag_builder_init(ag_builder *b, const ag_ir *ir, ag_build_cache *cache, ag_error *err) {
  memset(b, 0, sizeof *b);
  if (cache) ag_build_cache_take_scratch(cache, b);
  b->ir = ir;
  b->cache = cache;
  b->err = err;
  b->rule = -1;
  /* The DFA table's generation has no wrap check of its own (a build bumps it a
   * few times a rule): with memory lent from build to build, it is reset, slots
   * and all, long before it could wrap. */
  if (b->table && b->table_gen > UINT32_MAX / 2) {
    memset(b->table, 0, b->table_cap * sizeof *b->table);
    b->table_gen = 0;
  }
  if (!b->table) {
    b->table_cap = 64;
    b->table = calloc(b->table_cap, sizeof *b->table);
  }
  return b->table ? AG_OK : ag_builder_nomem(b);
}

ag_status ag_fsm_build(const ag_ir *ir, ag_grammar *g, ag_build_cache *cache, ag_error *err) {
  ag_builder b;
  ag_status st = ag_builder_init(&b, ir, cache, err);
  if (!st) st = ag_builder_reserve(&b);
  if (!st) st = ag_node_sizes(&b);
  if (!st) st = ag_count_large_unrolls(&b);
  if (!st) st = ag_rules_build(&b);
  if (!st) st = ag_builder_hand_over(&b, g);
  if (!st && cache) ag_build_cache_keep_scratch(cache, &b);
  ag_builder_free(&b);
  return st;
}

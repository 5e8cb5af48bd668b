/*
 * ag_grammar.c - loading a grammar: validate the IR (ag_ir.c), build the
 * per-rule automata (ag_fsm.c), then analyse them as a whole:
 *
 *   productive rules  a rule derives at least one finite string;
 *   live states       a state can reach an accepting state through byte edges
 *                     and rule edges whose rule is productive;
 *   nullable rules    a rule derives the empty string.
 *
 * Dead states, edges into them and edges over unproductive rules are
 * removed, so every state reachable from a rule's start can still complete,
 * which the matcher relies on. The only dead states left are the starts of
 * unproductive rules, which nothing refers to.
 */
#include "ag_dispatch.h"
#include "ag_fsm.h"
#include "agentgrammar_testing.h"

/*
 * Reverse view of the automata for the fixed points: the edges into each
 * state, and the rule edges grouped by the rule they reference.
 */
typedef struct ag_rev {
  uint32_t *in_begin; /* [n_states + 1] into in_src/in_rule */
  int32_t *in_src;    /* source state of each incoming edge */
  int32_t *in_rule;   /* its rule, or -1 for a byte edge */
  uint32_t *by_rule_begin; /* [n_rules + 1] into by_rule_edge */
  uint32_t *by_rule_edge;  /* indices into g->rule_edges */
  int32_t *edge_src;       /* [n_rule_edges] source state of each rule edge */
  int32_t *queue;          /* [n_states] */
} ag_rev;

static void ag_rev_free(ag_rev *r) {
  free(r->in_begin);
  free(r->in_src);
  free(r->in_rule);
  free(r->by_rule_begin);
  free(r->by_rule_edge);
  free(r->edge_src);
  free(r->queue);
}

/* calloc that never sees 0 (some libcs return NULL for it). */
static void *ag_zalloc(size_t n, size_t size) { return calloc(n ? n : 1, size); }

static void ag_rev_add_in(ag_rev *r, int32_t src, int32_t target, int32_t rule) {
  uint32_t at = r->in_begin[target]++;
  r->in_src[at] = src;
  r->in_rule[at] = rule;
}

/* Counting sorts by target state and by referenced rule. */
static void ag_rev_fill(const ag_grammar *g, ag_rev *r) {
  size_t ns = (size_t)g->n_states, nr = (size_t)g->n_rules;
  for (uint32_t e = 0; e < g->n_byte_edges; e++) r->in_begin[g->byte_edges[e].target + 1]++;
  for (uint32_t e = 0; e < g->n_rule_edges; e++) {
    r->in_begin[g->rule_edges[e].target + 1]++;
    r->by_rule_begin[g->rule_edges[e].rule + 1]++;
  }
  for (size_t s = 0; s < ns; s++) r->in_begin[s + 1] += r->in_begin[s];
  for (size_t k = 0; k < nr; k++) r->by_rule_begin[k + 1] += r->by_rule_begin[k];
  for (int32_t s = 0; s < g->n_states; s++) {
    const ag_state *st = &g->states[s];
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++)
      ag_rev_add_in(r, s, g->byte_edges[e].target, -1);
    for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
      ag_rev_add_in(r, s, g->rule_edges[e].target, g->rule_edges[e].rule);
      r->edge_src[e] = s;
      r->by_rule_edge[r->by_rule_begin[g->rule_edges[e].rule]++] = e;
    }
  }
  /* The fills above used the begins as cursors: shift them back. */
  memmove(r->in_begin + 1, r->in_begin, ns * sizeof *r->in_begin);
  r->in_begin[0] = 0;
  memmove(r->by_rule_begin + 1, r->by_rule_begin, nr * sizeof *r->by_rule_begin);
  r->by_rule_begin[0] = 0;
}

static ag_status ag_rev_build(const ag_grammar *g, ag_rev *r, ag_error *err) {
  size_t ns = (size_t)g->n_states, nr = (size_t)g->n_rules;
  size_t ne = (size_t)g->n_byte_edges + g->n_rule_edges;
  memset(r, 0, sizeof *r);
  r->in_begin = ag_zalloc(ns + 1, sizeof *r->in_begin);
  r->in_src = ag_zalloc(ne, sizeof *r->in_src);
  r->in_rule = ag_zalloc(ne, sizeof *r->in_rule);
  r->by_rule_begin = ag_zalloc(nr + 1, sizeof *r->by_rule_begin);
  r->by_rule_edge = ag_zalloc(g->n_rule_edges, sizeof *r->by_rule_edge);
  r->edge_src = ag_zalloc(g->n_rule_edges, sizeof *r->edge_src);
  r->queue = ag_zalloc(ns, sizeof *r->queue);
  if (!r->in_begin || !r->in_src || !r->in_rule || !r->by_rule_begin || !r->by_rule_edge ||
      !r->edge_src || !r->queue) {
    ag_rev_free(r);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory while analysing the grammar");
  }
  ag_rev_fill(g, r);
  return AG_OK;
}

/* Sets ok[s] and queues s, once. */
static void ag_mark(const ag_rev *r, bool *ok, size_t *tail, int32_t s) {
  if (ok[s]) return;
  ok[s] = true;
  r->queue[(*tail)++] = s;
}

/*
 * One least fixed point, used twice:
 *   ok[s]       s reaches an accepting state using byte edges (when
 *               with_bytes) and rule edges whose rule has rule_ok set;
 *   rule_ok[k]  ok[rule_start[k]].
 * With bytes this is liveness / productivity; without, "derives the empty
 * string from here" / nullability. It is a worklist over the reverse edges,
 * linear in the automata: a state is queued once, and a rule edge is
 * re-examined once more when its rule turns ok.
 */
static void ag_fixpoint(const ag_grammar *g, const ag_rev *r, bool with_bytes, bool *ok,
                        bool *rule_ok) {
  size_t head = 0, tail = 0;
  for (int32_t s = 0; s < g->n_states; s++)
    if (g->states[s].accepting) ag_mark(r, ok, &tail, s);
  while (head < tail) {
    int32_t s = r->queue[head++], k = g->state_rule[s];
    if (g->rule_start[k] == s && !rule_ok[k]) {
      rule_ok[k] = true; /* rule k completes: revisit the edges over it */
      for (uint32_t i = r->by_rule_begin[k]; i < r->by_rule_begin[k + 1]; i++) {
        uint32_t e = r->by_rule_edge[i];
        if (ok[g->rule_edges[e].target]) ag_mark(r, ok, &tail, r->edge_src[e]);
      }
    }
    for (uint32_t i = r->in_begin[s]; i < r->in_begin[s + 1]; i++) {
      int32_t rule = r->in_rule[i];
      if (rule < 0 ? with_bytes : rule_ok[rule]) ag_mark(r, ok, &tail, r->in_src[i]);
    }
  }
}

/*
 * Drops dead states and every edge into a dead state or over an unproductive
 * rule, renumbering the rest in order. A dead rule start (an unproductive
 * rule) is kept so that rule_start stays valid, but it loses its edges and
 * nothing refers to it. Compaction is in place: new ids and write positions
 * never pass the read positions.
 */
static ag_status ag_trim(ag_grammar *g, const bool *live, const bool *productive, ag_error *err) {
  int32_t *id = malloc((size_t)g->n_states * sizeof *id), n = 0;
  if (!id) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory while analysing the grammar");
  for (int32_t s = 0; s < g->n_states; s++)
    id[s] = live[s] || g->rule_start[g->state_rule[s]] == s ? n++ : -1;
  uint32_t wb = 0, wr = 0;
  for (int32_t s = 0; s < g->n_states; s++) {
    if (id[s] < 0) continue;
    ag_state st = g->states[s], *out = &g->states[id[s]];
    out->accepting = st.accepting;
    out->counted = st.counted;
    out->boundary = st.boundary;
    out->rest = st.rest;
    out->byte_begin = wb;
    for (uint32_t e = st.byte_begin; e < st.byte_end; e++) {
      ag_byte_edge be = g->byte_edges[e];
      if (!live[be.target]) continue;
      be.target = id[be.target];
      g->byte_edges[wb++] = be;
    }
    out->byte_end = wb;
    out->rule_begin = wr;
    for (uint32_t e = st.rule_begin; e < st.rule_end; e++) {
      ag_rule_edge re = g->rule_edges[e];
      if (!live[re.target] || !productive[re.rule]) continue;
      re.target = id[re.target];
      g->rule_edges[wr++] = re;
    }
    out->rule_end = wr;
    g->state_rule[id[s]] = g->state_rule[s];
  }
  for (int32_t r = 0; r < g->n_rules; r++) g->rule_start[r] = id[g->rule_start[r]];
  g->n_states = n;
  g->n_byte_edges = wb;
  g->n_rule_edges = wr;
  free(id);
  return AG_OK;
}

/*
 * A counted rule whose child derives the empty string gets min 0: empty copies
 * fill any minimum, and the parser never counts them (ag_earley.c). Its start
 * then accepts. Neither changes the analysis: such a rule was nullable anyway.
 */
static void ag_counted_normalize(ag_grammar *g) {
  for (int32_t r = 0; r < g->n_rules; r++) {
    ag_state *s0 = &g->states[g->rule_start[r]];
    if (!s0->counted || s0->rule_begin == s0->rule_end) continue; /* no child left: trimmed */
    if (g->rule_nullable[g->rule_edges[s0->rule_begin].rule]) {
      g->rule_repeat[r].min = 0;
      s0->accepting = true;
    }
  }
}

/*
 * Productivity, liveness and nullability, then trimming. Both fixed points
 * run on the untrimmed automata: trimming only removes edges that no
 * completing path uses, so it cannot change either result.
 */
ag_status ag_grammar_analyze(ag_grammar *g, ag_error *err) {
  ag_rev rev;
  ag_status st = ag_rev_build(g, &rev, err);
  if (st) return st;
  bool *live = ag_zalloc((size_t)g->n_states, sizeof *live);
  bool *productive = ag_zalloc((size_t)g->n_rules, sizeof *productive);
  bool *scratch = ag_zalloc((size_t)g->n_states, sizeof *scratch);
  if (!live || !productive || !scratch) {
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory while analysing the grammar");
  } else {
    ag_fixpoint(g, &rev, true, live, productive);
    ag_fixpoint(g, &rev, false, scratch, g->rule_nullable);
    if (!productive[g->root])
      st = ag_fail(err, AG_ERR_INVALID, g->root,
                   "the root rule derives no finite string (every alternative needs an "
                   "unsatisfiable part, an empty class or endless recursion)");
    else
      st = ag_trim(g, live, productive, err);
    if (!st) ag_counted_normalize(g);
  }
  free(live);
  free(productive);
  free(scratch);
  ag_rev_free(&rev);
  return st;
}

/* Keeps the words of every rule whose body is a dispatch node (see rule_dispatch). */
ag_status ag_grammar_keep_dispatches(ag_grammar *g, const ag_ir *ir, int32_t first_rule,
                                     ag_error *err) {
  for (int32_t r = 0; r < ir->n_rules; r++) {
    const int32_t *body = ag_ir_node(ir, ir->body[r]);
    if (body[0] != AG_NODE_DISPATCH) continue;
    if (!g->rule_dispatch && !(g->rule_dispatch = calloc((size_t)g->n_rules, sizeof *g->rule_dispatch)))
      return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory loading the grammar");
    ag_status st = ag_dispatch_from_ir(body, &g->rule_dispatch[first_rule + r], err);
    if (st) return st;
  }
  return AG_OK;
}

void ag_grammar_destroy(ag_grammar *g) {
  if (g->rule_dispatch)
    for (int32_t r = 0; r < g->n_rules; r++) ag_dispatch_free(g->rule_dispatch[r]);
  free(g->rule_dispatch);
  for (int32_t k = 0; k < g->n_parts; k++) ag_grammar_free(g->parts[k]);
  free(g->parts);
  free(g->part_rule_begin);
  free(g->part_hidden_begin);
  free(g->part_state_begin);
  free(g->rule_start);
  free(g->rule_nullable);
  free(g->rule_repeat);
  free(g->rule_trie);
  free(g->rule_stub);
  free(g->states);
  free(g->state_rule);
  free(g->byte_edges);
  free(g->rule_edges);
  free(g);
}

ag_status ag_grammar_load(const int32_t *words, size_t n_words, ag_grammar **out, ag_error *err) {
  return ag_grammar_load_cached(words, n_words, NULL, out, err);
}

ag_status ag_grammar_load_cached(const int32_t *words, size_t n_words, ag_build_cache *cache,
                                 ag_grammar **out, ag_error *err) {
  if (!out) return ag_fail(err, AG_ERR_INVALID, -1, "ag_grammar_load: out is NULL");
  *out = NULL;
  ag_ir ir;
  ag_status st = ag_ir_parse(words, n_words, 0, &ir, err);
  if (st) return st;
  ag_grammar *g = calloc(1, sizeof *g);
  if (!g) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory loading the grammar");
  atomic_init(&g->refs, 1);
  g->root = ir.root;
  g->holds_ff = ir.holds_ff;
  st = ag_fsm_build(&ir, g, cache, err);
  if (!st) st = ag_grammar_analyze(g, err);
  if (!st) st = ag_grammar_keep_dispatches(g, &ir, 0, err);
  if (st) {
    ag_grammar_destroy(g);
    return st;
  }
  *out = g;
  return AG_OK;
}

void ag_grammar_retain(ag_grammar *g) {
  /* Relaxed suffices: the caller already holds a reference. */
  if (g) atomic_fetch_add_explicit(&g->refs, 1, memory_order_relaxed);
}

void ag_grammar_free(ag_grammar *g) {
  /* acq_rel: the last owner must see every other owner's writes before freeing. */
  if (g && atomic_fetch_sub_explicit(&g->refs, 1, memory_order_acq_rel) == 1)
    ag_grammar_destroy(g);
}

int32_t ag_grammar_num_rules(const ag_grammar *g) { return g ? g->n_rules : 0; }

int32_t ag_grammar_num_states(const ag_grammar *g) { return g ? g->n_states : 0; }

int32_t ag_grammar_holds_ff(const ag_grammar *g) { return g && g->holds_ff; }

/* ---- testing ------------------------------------------------------------ */

static uint64_t ag_shape_mix(uint64_t h, int64_t x) { return (h ^ (uint64_t)x) * 1099511628211ull; }

/* Numbers state s in the order it is first met, and queues it. */
static void ag_shape_visit(int32_t *local, int32_t *queue, int32_t *m, int32_t s) {
  if (local[s] >= 0) return;
  local[s] = *m;
  queue[(*m)++] = s;
}

uint64_t ag_grammar_testing_shape(const ag_grammar *g) {
  if (!g) return 0;
  size_t n = (size_t)g->n_states ? (size_t)g->n_states : 1;
  int32_t *local = malloc(n * sizeof *local), *queue = malloc(n * sizeof *queue);
  if (!local || !queue) {
    free(local);
    free(queue);
    return 0;
  }
  for (size_t i = 0; i < (size_t)g->n_states; i++) local[i] = -1;
  uint64_t h = ag_shape_mix(1469598103934665603ull, g->n_rules);
  for (int32_t r = 0; r < g->n_rules; r++) {
    int32_t m = 0;
    queue[m++] = g->rule_start[r];
    local[g->rule_start[r]] = 0;
    for (int32_t q = 0; q < m; q++) { /* breadth first: the order is the edges' */
      const ag_state *s = &g->states[queue[q]];
      h = ag_shape_mix(h, s->accepting | s->counted << 1);
      h = ag_shape_mix(h, (int64_t)(s->byte_end - s->byte_begin) << 32 | (s->rule_end - s->rule_begin));
      for (uint32_t e = s->byte_begin; e < s->byte_end; e++) {
        const ag_byte_edge *x = &g->byte_edges[e];
        ag_shape_visit(local, queue, &m, x->target);
        h = ag_shape_mix(h, (int64_t)x->lo << 40 | (int64_t)x->hi << 32 | local[x->target]);
      }
      for (uint32_t e = s->rule_begin; e < s->rule_end; e++) {
        const ag_rule_edge *x = &g->rule_edges[e];
        ag_shape_visit(local, queue, &m, x->target);
        h = ag_shape_mix(h, (int64_t)x->rule << 32 | local[x->target]);
      }
    }
    h = ag_shape_mix(h, g->rule_nullable[r] | (int64_t)g->rule_repeat[r].min << 8);
    h = ag_shape_mix(h, g->rule_repeat[r].max);
    for (int32_t q = 0; q < m; q++) local[queue[q]] = -1;
  }
  free(local);
  free(queue);
  return h;
}

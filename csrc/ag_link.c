/*
 * ag_link.c - a grammar built on already loaded grammars ("parts").
 *
 * A request grammar for 500 tools is mostly the tools' argument grammars, the
 * same from one request to the next. Each is loaded once as a part; a request
 * builds automata only for its own few rules and copies the parts' automata in
 * front of them, renumbered. Part states keep their relative numbering, so a
 * compiled part's token-mask cache serves every grammar that links it
 * (ag_compiled.c). That is sound because a state's token classes depend only on
 * its rule and the rules it reaches, and a part reaches only its own rules.
 *
 * Rules are numbered so that IR buffers keep their numbering: first the parts'
 * IR-numbered rules (ag_grammar.n_ir_rules) in order, then the own IR rules,
 * then the parts' hidden rules (counted repeats) in order, then the own ones.
 */
#include "ag_fsm.h"

/* Sizes of the parts together. */
typedef struct ag_link_sizes {
  int64_t rules, ir_rules, states, byte_edges, rule_edges;
} ag_link_sizes;

static ag_status ag_link_measure(ag_grammar *const *parts, int32_t n_parts, ag_link_sizes *z,
                                 ag_error *err) {
  memset(z, 0, sizeof *z);
  if (n_parts < 0 || (n_parts > 0 && !parts))
    return ag_fail(err, AG_ERR_INVALID, -1, "bad parts: %d of them, array %s", n_parts,
                   parts ? "given" : "NULL");
  for (int32_t k = 0; k < n_parts; k++) {
    if (!parts[k]) return ag_fail(err, AG_ERR_INVALID, -1, "part %d is NULL", k);
    z->rules += parts[k]->n_rules;
    z->ir_rules += parts[k]->n_ir_rules;
    z->states += parts[k]->n_states;
    z->byte_edges += parts[k]->n_byte_edges;
    z->rule_edges += parts[k]->n_rule_edges;
  }
  if (z->rules > AG_MAX_RULES || z->states > AG_MAX_STATES)
    return ag_fail(err, AG_ERR_LIMIT, -1,
                   "the parts have %lld rules and %lld states; the limits are %d and %d",
                   (long long)z->rules, (long long)z->states, AG_MAX_RULES, AG_MAX_STATES);
  return AG_OK;
}

static ag_status ag_link_alloc(ag_grammar *g, const ag_grammar *own, const ag_link_sizes *z,
                               int32_t n_parts, ag_error *err) {
  size_t rules = (size_t)z->rules + (size_t)own->n_rules;
  if (rules > AG_MAX_RULES)
    return ag_fail(err, AG_ERR_LIMIT, -1, "the linked grammar has %zu rules; the limit is %d",
                   rules, AG_MAX_RULES);
  size_t states = (size_t)z->states + (size_t)own->n_states;
  size_t bytes = (size_t)z->byte_edges + own->n_byte_edges;
  size_t redges = (size_t)z->rule_edges + own->n_rule_edges;
  if (states > AG_MAX_STATES)
    return ag_fail(err, AG_ERR_LIMIT, -1, "the linked grammar has %zu states; the limit is %d",
                   states, AG_MAX_STATES);
  g->n_rules = (int32_t)rules;
  g->n_ir_rules = (int32_t)z->ir_rules + own->n_ir_rules;
  g->n_states = (int32_t)states;
  g->n_byte_edges = (uint32_t)bytes;
  g->n_rule_edges = (uint32_t)redges;
  g->rule_start = calloc(rules, sizeof *g->rule_start);
  g->rule_nullable = calloc(rules, sizeof *g->rule_nullable);
  g->rule_repeat = calloc(rules, sizeof *g->rule_repeat);
  g->states = calloc(states ? states : 1, sizeof *g->states);
  g->state_rule = calloc(states ? states : 1, sizeof *g->state_rule);
  g->byte_edges = calloc(bytes ? bytes : 1, sizeof *g->byte_edges);
  g->rule_edges = calloc(redges ? redges : 1, sizeof *g->rule_edges);
  g->parts = calloc((size_t)(n_parts ? n_parts : 1), sizeof *g->parts);
  g->part_rule_begin = calloc((size_t)n_parts + 1, sizeof *g->part_rule_begin);
  g->part_hidden_begin = calloc((size_t)n_parts + 1, sizeof *g->part_hidden_begin);
  g->part_state_begin = calloc((size_t)n_parts + 1, sizeof *g->part_state_begin);
  if (!g->rule_start || !g->rule_nullable || !g->rule_repeat || !g->states || !g->state_rule ||
      !g->byte_edges || !g->rule_edges || !g->parts || !g->part_rule_begin ||
      !g->part_hidden_begin || !g->part_state_begin)
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory linking the grammar");
  return AG_OK;
}

/* Where the next automaton is copied to: its first IR-numbered rule, first
 * hidden rule, first state and first edges. */
typedef struct ag_link_at {
  int32_t rule, hidden, state;
  uint32_t byte_edge, rule_edge;
} ag_link_at;

/* The linked id of rule r of an automaton copied at `at` with n_ir IR-numbered rules. */
static int32_t ag_link_rule(const ag_link_at *at, int32_t n_ir, int32_t r) {
  return r < n_ir ? at->rule + r : at->hidden + (r - n_ir);
}

/* The linked id of rule label r of the own automaton (ag_fsm_build's labels:
 * own IR rules, then the parts' IR-numbered rules, then own hidden rules). */
static int32_t ag_link_own_label(const ag_link_at *at, int32_t n_own, int32_t n_part_ir,
                                 int32_t r) {
  if (r < n_own) return at->rule + r;
  if (r < n_own + n_part_ir) return r - n_own; /* the parts' IR rules come first, in order */
  return at->hidden + (r - n_own - n_part_ir);
}

/* Copies grammar a to position *at: a part (own false, rule labels are its ids)
 * or the own automaton (own true, ag_fsm_build's labels). */
static void ag_link_copy(ag_grammar *g, const ag_grammar *a, ag_link_at *at, int32_t n_part_ir,
                         bool own) {
  int32_t n_ir = a->n_ir_rules;
  for (int32_t r = 0; r < a->n_rules; r++) {
    int32_t id = ag_link_rule(at, n_ir, r);
    g->rule_start[id] = a->rule_start[r] + at->state;
    g->rule_repeat[id] = a->rule_repeat[r];
  }
  for (int32_t s = 0; s < a->n_states; s++) {
    ag_state st = a->states[s];
    st.byte_begin += at->byte_edge;
    st.byte_end += at->byte_edge;
    st.rule_begin += at->rule_edge;
    st.rule_end += at->rule_edge;
    g->states[at->state + s] = st;
    g->state_rule[at->state + s] = ag_link_rule(at, n_ir, a->state_rule[s]);
  }
  for (uint32_t e = 0; e < a->n_byte_edges; e++) {
    ag_byte_edge be = a->byte_edges[e];
    be.target += at->state;
    g->byte_edges[at->byte_edge + e] = be;
  }
  for (uint32_t e = 0; e < a->n_rule_edges; e++) {
    ag_rule_edge re = a->rule_edges[e];
    re.target += at->state;
    re.rule = own ? ag_link_own_label(at, n_ir, n_part_ir, re.rule) : ag_link_rule(at, n_ir, re.rule);
    g->rule_edges[at->rule_edge + e] = re;
  }
  at->rule += n_ir;
  at->hidden += a->n_rules - n_ir;
  at->state += a->n_states;
  at->byte_edge += a->n_byte_edges;
  at->rule_edge += a->n_rule_edges;
}

/* Trimming must leave every part where it was: parts are closed and already
 * trimmed, so it does; this guards the invariant the shared caches rely on. */
static ag_status ag_link_check_parts_kept(const ag_grammar *g, ag_error *err) {
  for (int32_t k = 0; k < g->n_parts; k++) {
    const ag_grammar *p = g->parts[k];
    ag_link_at at = {g->part_rule_begin[k], g->part_hidden_begin[k], 0, 0, 0};
    for (int32_t r = 0; r < p->n_rules; r++)
      if (g->rule_start[ag_link_rule(&at, p->n_ir_rules, r)] != p->rule_start[r] + g->part_state_begin[k])
        return ag_fail(err, AG_ERR_INVALID, -1, "part %d changed while linking", k);
  }
  return AG_OK;
}

static ag_status ag_link_build(ag_grammar *g, const ag_ir *ir, ag_grammar *const *parts,
                               int32_t n_parts, const ag_link_sizes *z, ag_error *err) {
  ag_grammar *own = calloc(1, sizeof *own);
  if (!own) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory linking the grammar");
  ag_status st = ag_fsm_build(ir, own, err);
  if (!st) st = ag_link_alloc(g, own, z, n_parts, err);
  if (!st) {
    int32_t n_ir = (int32_t)z->ir_rules;
    ag_link_at at = {0, n_ir + ir->n_rules, 0, 0, 0};
    for (int32_t k = 0; k < n_parts; k++) {
      g->part_rule_begin[k] = at.rule;
      g->part_hidden_begin[k] = at.hidden;
      g->part_state_begin[k] = at.state;
      ag_link_copy(g, parts[k], &at, n_ir, false);
      ag_grammar_retain(parts[k]);
      g->parts[k] = parts[k];
      g->n_parts = k + 1;
    }
    g->part_rule_begin[n_parts] = at.rule;
    g->part_hidden_begin[n_parts] = at.hidden;
    g->part_state_begin[n_parts] = at.state;
    ag_link_copy(g, own, &at, n_ir, true);
    g->root = n_ir + ir->root;
  }
  ag_grammar_destroy(own);
  return st;
}

ag_status ag_grammar_link(const int32_t *words, size_t n_words, ag_grammar *const *parts,
                          int32_t n_parts, ag_grammar **out, ag_error *err) {
  if (!out) return ag_fail(err, AG_ERR_INVALID, -1, "ag_grammar_link: out is NULL");
  *out = NULL;
  ag_link_sizes z;
  ag_status st = ag_link_measure(parts, n_parts, &z, err);
  if (st) return st;
  ag_ir ir;
  if ((st = ag_ir_parse(words, n_words, (int32_t)z.ir_rules, &ir, err))) return st;
  ag_grammar *g = calloc(1, sizeof *g);
  if (!g) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory linking the grammar");
  atomic_init(&g->refs, 1);
  st = ag_link_build(g, &ir, parts, n_parts, &z, err);
  if (!st) st = ag_grammar_analyze(g, err);
  if (!st) st = ag_link_check_parts_kept(g, err);
  if (!st) st = ag_grammar_keep_dispatches(g, &ir, (int32_t)z.ir_rules, err);
  if (st) {
    ag_grammar_destroy(g);
    return st;
  }
  *out = g;
  return AG_OK;
}

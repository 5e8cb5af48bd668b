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
  /* Not zeroed: ag_link_copy writes every rule, state and edge (zeroing them cost
   * as much as copying the parts). */
  g->rule_start = malloc((rules ? rules : 1) * sizeof *g->rule_start);
  g->rule_nullable = malloc((rules ? rules : 1) * sizeof *g->rule_nullable);
  g->rule_repeat = malloc((rules ? rules : 1) * sizeof *g->rule_repeat);
  g->rule_trie = malloc((rules ? rules : 1) * sizeof *g->rule_trie);
  g->rule_stub = malloc((rules ? rules : 1) * sizeof *g->rule_stub);
  g->states = malloc((states ? states : 1) * sizeof *g->states);
  g->state_rule = malloc((states ? states : 1) * sizeof *g->state_rule);
  g->byte_edges = malloc((bytes ? bytes : 1) * sizeof *g->byte_edges);
  g->rule_edges = malloc((redges ? redges : 1) * sizeof *g->rule_edges);
  g->parts = calloc((size_t)(n_parts ? n_parts : 1), sizeof *g->parts);
  g->part_rule_begin = calloc((size_t)n_parts + 1, sizeof *g->part_rule_begin);
  g->part_hidden_begin = calloc((size_t)n_parts + 1, sizeof *g->part_hidden_begin);
  g->part_state_begin = calloc((size_t)n_parts + 1, sizeof *g->part_state_begin);
  if (!g->rule_start || !g->rule_nullable || !g->rule_repeat || !g->rule_trie || !g->rule_stub ||
      !g->states || !g->state_rule || !g->byte_edges || !g->rule_edges || !g->parts ||
      !g->part_rule_begin || !g->part_hidden_begin || !g->part_state_begin)
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
    g->rule_nullable[id] = a->rule_nullable[r];
    g->rule_repeat[id] = a->rule_repeat[r];
    g->rule_trie[id] = a->rule_trie && a->rule_trie[r];
    g->rule_stub[id] = a->rule_stub && a->rule_stub[r];
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

/* The productivity and nullability of a part's rule r, as a stub (see below):
 * 1 state (nullable, or unproductive) or 2 (productive only). */
static int32_t ag_link_stub_states(const ag_grammar *p, int32_t r, bool *nullable,
                                   bool *productive) {
  const ag_state *s0 = &p->states[p->rule_start[r]];
  /* Parts are trimmed: a rule start with no edge that does not accept is the
   * start of an unproductive rule; every other state can complete. */
  *nullable = p->rule_nullable[r];
  *productive = s0->accepting || s0->byte_begin != s0->byte_end || s0->rule_begin != s0->rule_end;
  return *productive && !*nullable ? 2 : 1;
}

/* Grows *data (n elements of size elem) to n + extra elements. */
static bool ag_link_grow(void **data, size_t n, size_t extra, size_t elem) {
  void *p = realloc(*data, (n + extra ? n + extra : 1) * elem);
  if (!p) return false;
  *data = p;
  return true;
}

/* Rule arrays of the analysis, in label numbering (own IR rules, the parts' IR
 * rules, own hidden rules), made from own's (own IR rules, own hidden rules). */
typedef struct ag_link_labels {
  int32_t *rule_start;
  bool *rule_nullable;
  ag_repeat_bounds *rule_repeat;
} ag_link_labels;

/* Which part IR rules own's rule edges name (labels n_ir .. n_ir + n_ext - 1):
 * a request names the roots of its parts, a few of the thousands of rules. */
static bool *ag_link_used_labels(const ag_grammar *own, int32_t n_ir, int32_t n_ext) {
  bool *used = calloc((size_t)(n_ext ? n_ext : 1), sizeof *used);
  if (!used) return NULL;
  for (uint32_t e = 0; e < own->n_rule_edges; e++) {
    int32_t label = own->rule_edges[e].rule;
    if (label >= n_ir && label < n_ir + n_ext) used[label - n_ir] = true;
  }
  return used;
}

static ag_status ag_link_stubs(ag_grammar *own, int32_t n_ir, ag_grammar *const *parts,
                               int32_t n_parts, int32_t n_ext, ag_link_labels *lab,
                               ag_error *err) {
  int32_t n_hidden = own->n_rules - n_ir;
  size_t n_labels = (size_t)n_ir + (size_t)n_ext + (size_t)n_hidden;
  bool *used = ag_link_used_labels(own, n_ir, n_ext);
  if (!used) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory linking the grammar");
  /* The rules no own edge names share one bare stub (first), which nothing reaches. */
  size_t more_states = 0, more_bytes = 0;
  bool nullable, productive, any_unused = false;
  for (int32_t k = 0, label = 0; k < n_parts; k++)
    for (int32_t r = 0; r < parts[k]->n_ir_rules; r++, label++) {
      if (!used[label]) {
        any_unused = true;
        continue;
      }
      if (parts[k]->rule_stub && parts[k]->rule_stub[r]) {
        free(used);
        return ag_fail(err, AG_ERR_INVALID, -1,
                       "the grammar names rule %d of part %d, which the part only inlines "
                       "(it has no automaton): name a part's root or a rule its own edges name",
                       r, k);
      }
      int32_t n = ag_link_stub_states(parts[k], r, &nullable, &productive);
      more_states += (size_t)n;
      more_bytes += (size_t)(n - 1);
    }
  more_states += any_unused;
  if ((size_t)own->n_states + more_states > AG_MAX_STATES) {
    free(used);
    return ag_fail(err, AG_ERR_LIMIT, -1, "the linked grammar has too many states; the limit is %d",
                   AG_MAX_STATES);
  }
  lab->rule_start = calloc(n_labels ? n_labels : 1, sizeof *lab->rule_start);
  lab->rule_nullable = calloc(n_labels ? n_labels : 1, sizeof *lab->rule_nullable);
  lab->rule_repeat = calloc(n_labels ? n_labels : 1, sizeof *lab->rule_repeat);
  if (!lab->rule_start || !lab->rule_nullable || !lab->rule_repeat ||
      !ag_link_grow((void **)&own->states, (size_t)own->n_states, more_states, sizeof *own->states) ||
      !ag_link_grow((void **)&own->state_rule, (size_t)own->n_states, more_states,
                    sizeof *own->state_rule) ||
      !ag_link_grow((void **)&own->byte_edges, own->n_byte_edges, more_bytes, sizeof *own->byte_edges)) {
    free(used);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory linking the grammar");
  }
  for (int32_t r = 0; r < own->n_rules; r++) {
    int32_t label = r < n_ir ? r : r + n_ext;
    lab->rule_start[label] = own->rule_start[r];
    lab->rule_repeat[label] = own->rule_repeat[r];
  }
  for (int32_t s = 0; s < own->n_states; s++)
    if (own->state_rule[s] >= n_ir) own->state_rule[s] += n_ext;
  int32_t label = n_ir, s = own->n_states, unused = -1;
  uint32_t b = own->n_byte_edges, re = own->n_rule_edges;
  for (int32_t k = 0; k < n_parts; k++)
    for (int32_t r = 0; r < parts[k]->n_ir_rules; r++, label++) {
      if (!used[label - n_ir]) {
        if (unused < 0) { /* the shared bare stub: no edge, not accepting */
          own->states[s] = (ag_state){b, b, re, re, false, false, false, 0};
          own->state_rule[s] = label;
          unused = s++;
        }
        lab->rule_start[label] = unused;
        continue;
      }
      int32_t n = ag_link_stub_states(parts[k], r, &nullable, &productive);
      lab->rule_start[label] = s;
      if (n == 2) {
        ag_state s0 = {b, b + 1, re, re, false, false, false, 0}, s1 = {b + 1, b + 1, re, re, true, false, false, 0};
        ag_byte_edge e = {0, 0, s + 1};
        own->byte_edges[b++] = e;
        own->states[s] = s0;
        own->states[s + 1] = s1;
      } else {
        ag_state s0 = {b, b, re, re, nullable, false, false, 0};
        own->states[s] = s0;
      }
      for (int32_t i = 0; i < n; i++) own->state_rule[s + i] = label;
      s += n;
    }
  own->n_states = s;
  own->n_byte_edges = b;
  free(used);
  return AG_OK;
}

/*
 * Analyses the own automaton alone (ag_grammar_analyze) before it is copied.
 * Parts are closed and already analysed and trimmed, so linking changes
 * nothing in them, and an own edge over a part's rule depends only on that
 * rule's productivity and nullability. Each part IR rule that an own edge names
 * gets a stub rule with the same two properties (an accepting start: nullable;
 * a start with one byte edge to an accepting state: productive only; a bare
 * start: neither), and the others share one bare start, so own plus the stubs
 * analyses to what the whole linked grammar did for own, in time proportional
 * to own rather than to all the parts (whose memory is not even read for the
 * rules own does not name). The stubs, last in every array, are then dropped,
 * and own goes back to its own rule numbering.
 */
static ag_status ag_link_analyze_own(ag_grammar *own, const ag_ir *ir, ag_grammar *const *parts,
                                     int32_t n_parts, int32_t n_ext, ag_error *err) {
  int32_t n_ir = ir->n_rules, n_rules = own->n_rules;
  ag_link_labels lab = {NULL, NULL, NULL};
  ag_status st = ag_link_stubs(own, n_ir, parts, n_parts, n_ext, &lab, err);
  if (!st) {
    int32_t *rule_start = own->rule_start;
    bool *rule_nullable = own->rule_nullable;
    ag_repeat_bounds *rule_repeat = own->rule_repeat;
    own->rule_start = lab.rule_start;
    own->rule_nullable = lab.rule_nullable;
    own->rule_repeat = lab.rule_repeat;
    own->n_rules = n_rules + n_ext;
    own->root = ir->root;
    st = ag_grammar_analyze(own, err);
    /* Back to own numbering, whatever the outcome (own's arrays are freed with it). The
     * stubs come after own's states, the first of them the start of some part rule. */
    int32_t stubs = own->n_states;
    for (int32_t l = n_ir; l < n_ir + n_ext; l++)
      if (own->rule_start[l] < stubs) stubs = own->rule_start[l];
    if (!st && stubs < own->n_states) {
      own->n_byte_edges = own->states[stubs].byte_begin;
      own->n_rule_edges = own->states[stubs].rule_begin;
    }
    if (!st) own->n_states = stubs;
    for (int32_t r = 0; r < n_rules; r++) {
      int32_t label = r < n_ir ? r : r + n_ext;
      rule_start[r] = lab.rule_start[label];
      rule_nullable[r] = lab.rule_nullable[label];
      rule_repeat[r] = lab.rule_repeat[label];
    }
    for (int32_t s = 0; s < own->n_states; s++)
      if (own->state_rule[s] >= n_ir + n_ext) own->state_rule[s] -= n_ext;
    own->rule_start = rule_start;
    own->rule_nullable = rule_nullable;
    own->rule_repeat = rule_repeat;
    own->n_rules = n_rules;
  }
  free(lab.rule_start);
  free(lab.rule_nullable);
  free(lab.rule_repeat);
  return st;
}

static ag_status ag_link_build(ag_grammar *g, const ag_ir *ir, ag_grammar *const *parts,
                               int32_t n_parts, const ag_link_sizes *z, ag_build_cache *cache,
                               ag_error *err) {
  ag_grammar *own = calloc(1, sizeof *own);
  if (!own) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory linking the grammar");
  ag_status st = ag_fsm_build(ir, own, cache, err);
  if (!st) st = ag_link_analyze_own(own, ir, parts, n_parts, (int32_t)z->ir_rules, err);
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
  return ag_grammar_link_cached(words, n_words, parts, n_parts, NULL, out, err);
}

ag_status ag_grammar_link_cached(const int32_t *words, size_t n_words, ag_grammar *const *parts,
                                 int32_t n_parts, ag_build_cache *cache, ag_grammar **out,
                                 ag_error *err) {
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
  g->holds_ff = ir.holds_ff;
  st = ag_link_build(g, &ir, parts, n_parts, &z, cache, err); /* analysed as it is built */
  if (!st) st = ag_link_check_parts_kept(g, err);
  if (!st) st = ag_grammar_keep_dispatches(g, &ir, (int32_t)z.ir_rules, err);
  if (st) {
    ag_grammar_destroy(g);
    return st;
  }
  *out = g;
  return AG_OK;
}

/*
 * ag_ir_survey.c - what an IR buffer's rules reach and derive, read from the
 * words alone (no automaton is built): whether every rule is reachable from
 * the root, and whether the root derives some finite string.
 *
 * The Python front-ends write their rules for the loader anyway; asking this
 * of the words spares the walk of every rule body that checking them in
 * Python took (grammar/checked_words.py). The answer about the root is sound,
 * not complete: a node whose strings depend on more than its children (a
 * DISPATCH or SWITCH) counts as deriving nothing, and a fixed point that does
 * not settle within a bound of passes leaves the flag unset; the caller then
 * checks the rules the slower way.
 */
#include "ag_ir.h"

#include <inttypes.h>

/* Passes of the productivity fixed point before it gives up (a flag unset). */
#define AG_SURVEY_MAX_PASSES 64

/* Node i's children and the rules it references pushed on `stack` (nodes
 * below n_nodes, rules as n_nodes + rule), each once (`seen`). */
static void ag_survey_push(const ag_ir *ir, int32_t item, bool *seen, int32_t *stack, int32_t *top) {
  if (item < ir->n_nodes + ir->n_rules && !seen[item]) {
    seen[item] = true;
    stack[(*top)++] = item;
  }
}

/* The rule references of the words of a DISPATCH (n words from w) or SWITCH. */
static void ag_survey_words(const ag_ir *ir, const int32_t *w, int32_t n, bool *seen, int32_t *stack,
                            int32_t *top) {
  for (int32_t k = 0; k < n; k++, w += 2 + w[1])
    if (w[0] >= 0) ag_survey_push(ir, ir->n_nodes + w[0], seen, stack, top);
}

static void ag_survey_node(const ag_ir *ir, int32_t i, bool *seen, int32_t *stack, int32_t *top) {
  const int32_t *p = ag_ir_node(ir, i);
  switch (p[0]) {
    case AG_NODE_SEQ:
    case AG_NODE_CHOICE:
      for (int32_t k = 0; k < p[1]; k++) ag_survey_push(ir, p[2 + k], seen, stack, top);
      break;
    case AG_NODE_REPEAT:
      ag_survey_push(ir, p[1], seen, stack, top);
      break;
    case AG_NODE_RULEREF: /* a linked part's rule (past n_rules) is not this buffer's */
      ag_survey_push(ir, ir->n_nodes + p[1], seen, stack, top);
      break;
    case AG_NODE_KEYTRIE:
      for (int32_t k = 1; k <= 3; k++) ag_survey_push(ir, p[k], seen, stack, top);
      break;
    case AG_NODE_COUNTED_TEXT:
      ag_survey_push(ir, p[1], seen, stack, top);
      ag_survey_push(ir, p[2], seen, stack, top);
      break;
    case AG_NODE_DISPATCH:
      ag_survey_words(ir, p + 3, p[2], seen, stack, top);
      break;
    case AG_NODE_SWITCH:
      ag_survey_words(ir, p + 2, p[1], seen, stack, top);
      break;
    default: /* LITERAL, BYTES: no children */
      break;
  }
}

/* Whether every rule is reachable from the root; `seen` and `stack` have room
 * for n_nodes + n_rules items. */
static bool ag_survey_reach(const ag_ir *ir, bool *seen, int32_t *stack) {
  int32_t top = 0, rules = 0;
  ag_survey_push(ir, ir->n_nodes + ir->root, seen, stack, &top);
  while (top > 0) {
    int32_t item = stack[--top];
    if (item >= ir->n_nodes) {
      rules++;
      ag_survey_push(ir, ir->body[item - ir->n_nodes], seen, stack, &top);
    } else {
      ag_survey_node(ir, item, seen, stack, &top);
    }
  }
  return rules == ir->n_rules;
}

/* Whether node i derives some finite string, given its children's answers
 * (`node`, below i) and the rules' known so far (`rule`). */
static bool ag_survey_derives(const ag_ir *ir, int32_t i, const bool *node, const bool *rule) {
  const int32_t *p = ag_ir_node(ir, i);
  switch (p[0]) {
    case AG_NODE_LITERAL:
    case AG_NODE_KEYTRIE: /* the empty prefix is no name (names are non-empty): a key may end */
      return true;
    case AG_NODE_BYTES:
      return p[1] > 0;
    case AG_NODE_SEQ:
      for (int32_t k = 0; k < p[1]; k++)
        if (!node[p[2 + k]]) return false;
      return true;
    case AG_NODE_CHOICE:
      for (int32_t k = 0; k < p[1]; k++)
        if (node[p[2 + k]]) return true;
      return false;
    case AG_NODE_REPEAT:
      return p[2] == 0 || node[p[1]];
    case AG_NODE_RULEREF: /* a linked part is a loaded grammar: it derives some string */
      return p[1] >= ir->n_rules || rule[p[1]];
    case AG_NODE_COUNTED_TEXT: /* as the Python check: its body and character */
      return node[p[1]] && node[p[2]];
    default: /* DISPATCH, SWITCH: left to the slower check */
      return false;
  }
}

/* Whether the root derives some finite string, as far as AG_SURVEY_MAX_PASSES
 * passes over the nodes (children first) tell. `body_of` lists each node's
 * rules: rule r is at body_next[r] chained from body_head[node]. */
static bool ag_survey_finishes(const ag_ir *ir, bool *node, bool *rule, const int32_t *body_head,
                               const int32_t *body_next) {
  for (int pass = 0; pass < AG_SURVEY_MAX_PASSES; pass++) {
    bool changed = false;
    for (int32_t i = 0; i < ir->n_nodes; i++) {
      if (node[i] || !ag_survey_derives(ir, i, node, rule)) continue;
      node[i] = true;
      for (int32_t r = body_head[i]; r >= 0; r = body_next[r]) {
        rule[r] = true;
        changed = true;
      }
    }
    if (rule[ir->root]) return true;
    if (!changed) return false;
  }
  return false;
}

ag_status ag_ir_survey(const int32_t *words, size_t n_words, int32_t n_external, int32_t *flags,
                       ag_error *err) {
  if (!flags) return ag_fail(err, AG_ERR_INVALID, -1, "flags is NULL");
  *flags = 0;
  ag_ir ir;
  ag_status st = ag_ir_parse(words, n_words, n_external, &ir, err);
  if (st) return st;
  if ((int64_t)ir.n_nodes + ir.n_rules > INT32_MAX)
    return ag_fail(err, AG_ERR_LIMIT, -1, "grammar has %" PRId32 " nodes, too many to survey",
                   ir.n_nodes);
  size_t items = (size_t)ir.n_nodes + (size_t)ir.n_rules;
  bool *seen = calloc(items, sizeof *seen); /* reachability, then node / rule answers */
  int32_t *stack = malloc(items * sizeof *stack);
  int32_t *chain = malloc(items * sizeof *chain); /* body_head[n_nodes], body_next[n_rules] */
  if (!seen || !stack || !chain) {
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory surveying the grammar");
  } else {
    if (ag_survey_reach(&ir, seen, stack)) *flags |= AG_IR_ALL_REACHABLE;
    memset(seen, 0, items * sizeof *seen);
    int32_t *body_head = chain, *body_next = chain + ir.n_nodes;
    for (int32_t i = 0; i < ir.n_nodes; i++) body_head[i] = -1;
    for (int32_t r = ir.n_rules - 1; r >= 0; r--) {
      body_next[r] = body_head[ir.body[r]];
      body_head[ir.body[r]] = r;
    }
    if (ag_survey_finishes(&ir, seen, seen + ir.n_nodes, body_head, body_next))
      *flags |= AG_IR_ROOT_FINISHES;
  }
  free(seen);
  free(stack);
  free(chain);
  return st;
}

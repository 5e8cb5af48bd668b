/*
 * ag_nfa.c - Thompson construction: a rule's IR body as an epsilon-NFA over
 * bytes and rule references (a rule edge means "a complete match of that
 * rule"), and the sizes that decide what is inlined, unrolled or counted.
 */
#include "ag_fsm_builder.h"

#include "ag_dispatch.h"

/* Bounds the Thompson expansion of one rule. Node sharing in the IR makes the
 * expansion of a rule exponential in the worst case (a chain of CHOICE(x, x)
 * nodes), and such an expansion need not create states, so the state limit
 * alone would not stop it. Legitimate rules stay far below this. */
#define AG_NFA_MAX_WORK ((uint64_t)AG_MAX_STATES * 4)

/* A reference to a small rule made of bytes alone (no rule reference, no
 * dispatch) is expanded in place instead of becoming a rule edge, so rules such
 * as a JSON string's character class end up as one byte automaton, which the
 * mask cache classifies without the Earley parser. AG_INLINE_MAX bounds the
 * size of an inlined body; AG_INLINE_BUDGET the construction work one rule may
 * spend on inlining (a counted repeat of an inlined rule would multiply it),
 * past which references stay rule edges. */
#define AG_INLINE_MAX 512
#define AG_INLINE_BUDGET 65536

/* Repeats are unrolled while small. An unrolled repeat of bytes becomes part of
 * a byte automaton: determinized, and each position gets its own token classes
 * (shared across grammars), so a token spanning copies is classified once and
 * for all; in a counted rule of rule edges such a token runs past the end of the
 * child, which makes it uncertain, checked against the parser at every mask (a
 * prefix-free bytes-only child is counted in its own automaton instead: ag_fsm.c,
 * ag_counted_inline). So a repeat of a bytes-only child is unrolled up to
 * AG_UNROLL_MAX copies; a child with rule
 * edges gains nothing from copies (its tokens past the child's end are
 * uncertain either way), so past AG_UNROLL_MAX_REF copies it is counted. Copies
 * adding more than AG_UNROLL_BUDGET automaton pieces (ag_builder.node_size) are
 * counted too: a counted rule is one or two states whatever the bound. So are
 * fewer copies of a prefix-free child that unrolled would pass AG_UNROLL_STATES
 * states (ag_fsm.c: a JSON string's character, 20 states, 255 times). */
#define AG_UNROLL_MAX 256
#define AG_UNROLL_MAX_REF 16
#define AG_UNROLL_BUDGET 65536

/* A subtree of at least AG_SHARE_MIN automaton pieces (ag_builder.node_size)
 * that is expanded several times into the same end state is built once (see
 * ag_nfa_shared). */
#define AG_SHARE_MIN 4

/* ---- Thompson construction ---------------------------------------------- */

ag_status ag_nfa_spend(ag_builder *b, uint64_t units) {
  b->work += units;
  if (b->work > AG_NFA_MAX_WORK)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the rule expands to too large an automaton (over %llu construction steps)",
                   (unsigned long long)AG_NFA_MAX_WORK);
  return AG_OK;
}

ag_status ag_nfa_state(ag_builder *b, int32_t *out) {
  if (b->n_nfa >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the rule's automaton needs more than %d NFA states", AG_MAX_STATES);
  *out = b->n_nfa++;
  return AG_OK;
}

ag_status ag_nfa_edge_add(ag_builder *b, int32_t from, int32_t to, uint8_t kind,
                                 uint8_t lo, uint8_t hi, int32_t rule) {
  ag_nfa_edge e = {from, to, rule, kind, lo, hi};
  return ag_vec_push(&b->edges, e) ? AG_OK : ag_builder_nomem(b);
}

ag_status ag_nfa_eps(ag_builder *b, int32_t from, int32_t to) {
  return ag_nfa_edge_add(b, from, to, AG_NFA_EPS, 0, 0, -1);
}

static ag_status ag_nfa_push(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  ag_nfa_task t = {node, from, to};
  return ag_vec_push(&b->tasks, t) ? AG_OK : ag_builder_nomem(b);
}

/* Whether copies of node are worth sharing: a sequence, choice or unrolled
 * repeat with states of its own (a byte class or a reference is one edge). */
static bool ag_nfa_shareable(const ag_builder *b, int32_t node) {
  int kind = ag_ir_node(b->ir, node)[0];
  if (kind != AG_NODE_SEQ && kind != AG_NODE_CHOICE && kind != AG_NODE_REPEAT) return false;
  return !b->counted[node] && b->node_size[node] >= AG_SHARE_MIN;
}

static uint32_t ag_share_hash(int32_t node, int32_t to) {
  uint32_t h = ((uint32_t)node * 0x9e3779b1u) ^ ((uint32_t)to * 0x85ebca6bu);
  return h ^ (h >> 16);
}

static ag_status ag_share_grow(ag_builder *b) {
  size_t cap = b->share_cap ? b->share_cap * 2 : 64;
  ag_share_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_builder_nomem(b);
  for (size_t k = 0; k < b->share_cap; k++) {
    ag_share_slot o = b->share[k];
    if (o.gen != b->share_gen) continue;
    size_t i = ag_share_hash(o.node, o.to) & (cap - 1);
    while (t[i].gen == b->share_gen) i = (i + 1) & (cap - 1);
    t[i] = o;
  }
  free(b->share);
  b->share = t;
  b->share_cap = cap;
  return AG_OK;
}

/* The state from which node, built once, leads to `to`: the start of the one
 * copy of node that ends at `to`, made with a fresh state on first use. A
 * shared IR subtree (a JSON string's character class after each of a thousand
 * trie states, say) then adds its states to the NFA once instead of once per
 * use, and determinizing meets one set of states where it met a thousand
 * equivalent ones, which minimization merged only afterwards. Sound because
 * no construction adds an edge out of its `to` state or into its `from` state
 * (see ag_nfa_choice): a path entering the copy from whichever state leaves it
 * only at `to`, by node. */
ag_status ag_nfa_entry(ag_builder *b, int32_t node, int32_t to, int32_t *out) {
  ag_status st = ag_nfa_spend(b, 1);
  if (!st && (b->share_len + 1) * 2 > b->share_cap) st = ag_share_grow(b);
  if (st) return st;
  size_t mask = b->share_cap - 1, i = ag_share_hash(node, to) & mask;
  for (; b->share[i].gen == b->share_gen; i = (i + 1) & mask) {
    if (b->share[i].node == node && b->share[i].to == to) {
      *out = b->share[i].start;
      return AG_OK;
    }
  }
  if ((st = ag_nfa_state(b, out)) || (st = ag_nfa_push(b, node, *out, to))) return st;
  ag_share_slot slot = {b->share_gen, node, to, *out};
  b->share[i] = slot;
  b->share_len++;
  return AG_OK;
}

/* Connects `from` to `to` by node through its one copy that ends at `to`. */
static ag_status ag_nfa_shared(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  int32_t start = -1;
  ag_status st = ag_nfa_entry(b, node, to, &start);
  return st ? st : ag_nfa_eps(b, from, start);
}

static ag_status ag_nfa_task_add(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  ag_status st = ag_nfa_spend(b, 1);
  if (st) return st;
  return ag_nfa_shareable(b, node) ? ag_nfa_shared(b, node, from, to) : ag_nfa_push(b, node, from, to);
}

/* The entry of node (leading to `to`) when node is x* y: the state that loops
 * on x itself, not a state before it. A way into it that ends with an x
 * (ag_nfa_keytrie: a character, then the rest of the key) then ends in the
 * same state as the loop's own x, so ag_nfa_entry builds that x once for both
 * instead of a copy for each that minimization would merge. Any other node:
 * ag_nfa_entry. The state is fresh and begins no other construction (edges
 * only lead into it), so the loop on it cannot leak into a sibling
 * alternative (see ag_nfa_star). */
ag_status ag_nfa_star_entry(ag_builder *b, int32_t node, int32_t to, int32_t *out) {
  const int32_t *p = ag_ir_node(b->ir, node);
  const int32_t *r = p[0] == AG_NODE_SEQ && p[1] == 2 ? ag_ir_node(b->ir, p[2]) : NULL;
  if (!r || r[0] != AG_NODE_REPEAT || b->counted[p[2]] || r[2] != 0 || r[3] != -1)
    return ag_nfa_entry(b, node, to, out);
  int32_t rest = -1;
  ag_status st = ag_nfa_entry(b, p[3], to, &rest);
  if (!st) st = ag_nfa_state(b, out);
  if (!st) st = ag_nfa_eps(b, *out, rest);
  if (!st) st = ag_nfa_task_add(b, r[1], *out, *out);
  return st;
}

/* Picks the state after item k of n: fresh in between, `to` after the last. */
static ag_status ag_nfa_next(ag_builder *b, int64_t k, int64_t n, int32_t to, int32_t *out) {
  if (k == n - 1) {
    *out = to;
    return AG_OK;
  }
  return ag_nfa_state(b, out);
}

static ag_status ag_nfa_literal(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  int32_t len = p[1], cur = from, next = -1;
  ag_status st = ag_nfa_spend(b, (uint64_t)len);
  if (st) return st;
  if (len == 0) return ag_nfa_eps(b, from, to);
  for (int32_t k = 0; k < len; k++, cur = next) {
    uint8_t c = (uint8_t)p[2 + k];
    if ((st = ag_nfa_next(b, k, len, to, &next))) return st;
    if ((st = ag_nfa_edge_add(b, cur, next, AG_NFA_BYTES, c, c, -1))) return st;
  }
  return AG_OK;
}

/* Zero ranges add no edge: an empty class matches nothing. */
static ag_status ag_nfa_bytes(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_status st = ag_nfa_spend(b, (uint64_t)p[1]);
  for (int32_t k = 0; !st && k < p[1]; k++)
    st = ag_nfa_edge_add(b, from, to, AG_NFA_BYTES, (uint8_t)p[2 + 2 * k], (uint8_t)p[3 + 2 * k],
                         -1);
  return st;
}

/* The states between the items are entries (ag_nfa_entry), made from the
 * end: the state before item k is where items k.. lead to `to`, so sequences
 * that end alike (every trie state's "other character, then the rest of the
 * string") share their tails, from the state before the common part on. */
static ag_status ag_nfa_seq(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  int32_t n = p[1], next = to;
  if (n == 0) return ag_nfa_eps(b, from, to);
  for (int32_t k = n - 1; k > 0; k--) {
    ag_status st = ag_nfa_entry(b, p[2 + k], next, &next);
    if (st) return st;
  }
  return ag_nfa_task_add(b, p[2], from, next);
}

/* Alternatives share both end states. That is sound because no construction
 * adds an edge into its `from` state (unless from == to, a star loop) or out
 * of its `to` state, so a path entering one alternative stays in it until
 * `to`. Zero alternatives add nothing: the choice matches nothing. */
static ag_status ag_nfa_choice(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_status st = AG_OK;
  for (int32_t k = 0; !st && k < p[1]; k++) st = ag_nfa_task_add(b, p[2 + k], from, to);
  return st;
}

/* x* as from -> m, m -x-> m, m -> to with a fresh m: looping on `from`
 * itself would let a sibling alternative start after some x's. */
static ag_status ag_nfa_star(ag_builder *b, int32_t child, int32_t from, int32_t to) {
  int32_t m = -1;
  ag_status st = ag_nfa_state(b, &m);
  if (!st) st = ag_nfa_eps(b, from, m);
  if (!st) st = ag_nfa_eps(b, m, to);
  if (!st) st = ag_nfa_task_add(b, child, m, m);
  return st;
}

/* x{min,} with min >= 1: min - 1 copies in a chain, then the last copy looping
 * back through fresh states m and n (from m, x to n, n back to m or on to `to`).
 * Not x{min} x*: nested x+ would double the automaton at every level. */
static ag_status ag_nfa_plus(ag_builder *b, int32_t child, int32_t min, int32_t from, int32_t to) {
  int32_t cur = from, next = -1, m = -1, n = -1;
  ag_status st = AG_OK;
  for (int32_t k = 0; !st && k < min - 1; k++, cur = next)
    if (!(st = ag_nfa_state(b, &next))) st = ag_nfa_task_add(b, child, cur, next);
  if (!st) st = ag_nfa_state(b, &m);
  if (!st) st = ag_nfa_state(b, &n);
  if (!st) st = ag_nfa_eps(b, cur, m);
  if (!st) st = ag_nfa_task_add(b, child, m, n);
  if (!st) st = ag_nfa_eps(b, n, m);
  if (!st) st = ag_nfa_eps(b, n, to);
  return st;
}

/* x{min,max}: min mandatory copies in a chain, then (max - min) optional
 * copies, each able to skip to `to`; x* is a star, and x{min,} with min >= 1
 * ag_nfa_plus. Only small repeats get here (ag_node_sizes): both bounds are at
 * most AG_UNROLL_MAX. */
static ag_status ag_nfa_repeat(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  int32_t child = p[1], min = p[2], max = p[3], cur = from, next = -1;
  ag_status st = AG_OK;
  if (max == 0) return ag_nfa_eps(b, from, to);
  if (max == -1 && min > 0) return ag_nfa_plus(b, child, min, from, to);
  /* With optional copies to follow, the last mandatory copy ends in a fresh
   * state, hence the n of min + 1. */
  int64_t n_chain = max == min ? min : (int64_t)min + 1;
  for (int32_t k = 0; k < min; k++, cur = next) {
    if ((st = ag_nfa_next(b, k, n_chain, to, &next))) return st;
    if ((st = ag_nfa_task_add(b, child, cur, next))) return st;
  }
  if (max == min) return AG_OK;
  if (max == -1) return ag_nfa_star(b, child, cur, to);
  for (int32_t k = min; k < max; k++, cur = next) {
    if ((st = ag_nfa_eps(b, cur, to))) return st;
    if ((st = ag_nfa_next(b, k, max, to, &next))) return st;
    if ((st = ag_nfa_task_add(b, child, cur, next))) return st;
  }
  return AG_OK;
}

/* Whether a trigger or a stop ends at automaton state q and no exclude does:
 * an exclude ending at the same byte wins, as in xgrammar (the text dies). */
static bool ag_nfa_dispatch_matched(const ag_dispatch *d, const ag_ac *ac, int32_t q) {
  bool word = false;
  for (uint32_t j = ac->out_begin[q]; j < ac->out_begin[q + 1]; j++) {
    if (d->rules[ac->out[j]] == AG_DISPATCH_EXCLUDE) return false;
    word = true;
  }
  return word;
}

/* A free-text state's byte edges, consecutive bytes with one target merged, and
 * its way out when the node may end in free text. */
static ag_status ag_nfa_dispatch_free(ag_builder *b, const ag_dispatch *d, const ag_ac *ac,
                                      const int32_t *id, int32_t q, int32_t to) {
  const int32_t *row = ac->delta + (size_t)q * 256;
  ag_status st = AG_OK;
  for (int lo = 0, hi; !st && lo < 256; lo = hi + 1) {
    for (hi = lo; hi < 255 && row[hi + 1] == row[lo]; hi++) continue;
    int32_t t = row[lo];
    if (!ag_ac_hit(ac, t) || ag_nfa_dispatch_matched(d, ac, t))
      st = ag_nfa_edge_add(b, id[q], id[t], AG_NFA_BYTES, (uint8_t)lo, (uint8_t)hi, -1);
  }
  if (!st && (d->flags & AG_DISPATCH_END_IN_TEXT)) st = ag_nfa_eps(b, id[q], to);
  return st;
}

/* A matched state: each trigger's rule, then the start again (LOOP) or the end;
 * each stop ends the node. */
static ag_status ag_nfa_dispatch_matches(ag_builder *b, const ag_dispatch *d, const ag_ac *ac,
                                         const int32_t *id, int32_t q, int32_t to) {
  int32_t after = (d->flags & AG_DISPATCH_LOOP) ? id[0] : to;
  ag_status st = AG_OK;
  for (uint32_t j = ac->out_begin[q]; !st && j < ac->out_begin[q + 1]; j++) {
    int32_t rule = d->rules[ac->out[j]];
    if (rule >= 0) st = ag_nfa_edge_add(b, id[q], after, AG_NFA_RULE, 0, 0, rule);
    else if (rule == AG_DISPATCH_STOP) st = ag_nfa_eps(b, id[q], to);
  }
  return st;
}

/* TagDispatch (ag_dispatch.h): one NFA state per Aho–Corasick state. A state
 * where no word ends is free text; one where a word ends has no byte edge, so
 * only the first occurrence of any word counts. */
static ag_status ag_nfa_dispatch(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_dispatch *d = NULL;
  ag_ac ac;
  memset(&ac, 0, sizeof ac);
  int32_t *id = NULL;
  ag_status st = ag_dispatch_from_ir(p, &d, b->err);
  if (!st) st = ag_ac_build(d, &ac, b->err);
  if (!st) st = ag_nfa_spend(b, (uint64_t)ac.n_states * 16);
  if (!st && !(id = malloc(sizeof *id * (size_t)ac.n_states))) st = ag_builder_nomem(b);
  for (int32_t q = 0; !st && q < ac.n_states; q++) st = ag_nfa_state(b, &id[q]);
  if (!st) st = ag_nfa_eps(b, from, id[0]);
  for (int32_t q = 0; !st && q < ac.n_states; q++)
    st = ag_ac_hit(&ac, q) ? ag_nfa_dispatch_matches(b, d, &ac, id, q, to)
                           : ag_nfa_dispatch_free(b, d, &ac, id, q, to);
  free(id);
  ag_ac_free(&ac);
  ag_dispatch_free(d);
  return st;
}

uint64_t ag_bytes_child_size(const ag_builder *b, int32_t child) {
  const int32_t *c = ag_ir_node(b->ir, child);
  if (b->inline_cost[child]) return b->node_size[child];
  if (c[0] != AG_NODE_RULEREF || c[1] >= b->ir->n_rules) return 0;
  uint32_t cost = b->inline_cost[b->ir->body[c[1]]];
  return cost && cost <= AG_INLINE_MAX ? b->node_size[b->ir->body[c[1]]] : 0;
}

/* Whether repeat node i, p (children already sized) is too large to unroll. */
static bool ag_repeat_is_counted(const ag_builder *b, int32_t i, const int32_t *p) {
  uint64_t copies = p[3] < 0 ? (uint64_t)p[2] : (uint64_t)p[3];
  if (copies <= 1) return false; /* x?, x*, x+: no copy to save */
  /* marked while its child was bytes-only; a child that a marked repeat inside
   * it turned into a rule edge is sized as any other */
  if (b->loop_counted && b->loop_counted[i] && ag_bytes_child_size(b, p[1])) return true;
  uint64_t most = b->inline_cost[p[1]] ? AG_UNROLL_MAX : AG_UNROLL_MAX_REF;
  return copies > most || copies * b->node_size[p[1]] > AG_UNROLL_BUDGET;
}

/* The automaton pieces node i adds (saturated), whether it is a counted repeat,
 * and its inline cost: the size of a bytes-only subtree, 0 for one with a rule
 * edge (a reference, a dispatch or a counted repeat). */
static void ag_node_size(ag_builder *b, int32_t i) {
  const int32_t *p = ag_ir_node(b->ir, i);
  uint64_t cost = 0, size = 1;
  switch (p[0]) {
    case AG_NODE_LITERAL: cost = size = 1 + (uint64_t)p[1]; break;
    case AG_NODE_BYTES: cost = 1, size = 1 + (uint64_t)p[1]; break;
    case AG_NODE_SEQ:
    case AG_NODE_CHOICE:
      cost = 1;
      for (int32_t k = 0; k < p[1]; k++) {
        cost = cost && b->inline_cost[p[2 + k]] ? cost + b->inline_cost[p[2 + k]] : 0;
        size += b->node_size[p[2 + k]];
      }
      break;
    case AG_NODE_REPEAT: {
      if ((b->counted[i] = ag_repeat_is_counted(b, i, p))) break; /* one rule edge */
      uint64_t copies = (uint64_t)p[p[3] < 0 ? 2 : 3]; /* x{min,}: min copies, the last looping */
      if (copies == 0) copies = 1;
      cost = b->inline_cost[p[1]] ? 1 + b->inline_cost[p[1]] * copies : 0;
      size = 1 + b->node_size[p[1]] * copies;
      break;
    }
    case AG_NODE_DISPATCH: size = AG_UNROLL_BUDGET + 1; break; /* never copied */
    case AG_NODE_COUNTED_TEXT: b->counted[i] = 1; break; /* one rule edge */
    case AG_NODE_SWITCH: /* rule edges: cost 0 */
      for (int32_t k = 0, at = 2; k < p[1] && size <= AG_UNROLL_BUDGET; k++, at += 2 + p[at + 1])
        size += 1 + (uint64_t)p[at + 1];
      break;
    case AG_NODE_KEYTRIE: { /* one state per name byte, each with a few edges */
      const int32_t *w = p + 6 + 2 * p[4];
      cost = 1;
      for (int32_t k = 0; k < p[5 + 2 * p[4]] && size <= AG_UNROLL_BUDGET; w += 1 + w[0], k++)
        size += 4 * (uint64_t)w[0];
      for (int32_t k = 1; k <= 3; k++) {
        cost = cost && b->inline_cost[p[k]] ? cost + b->inline_cost[p[k]] : 0;
        size += b->node_size[p[k]];
      }
      if (cost) cost += size;
      break;
    }
    default: break; /* a rule reference: one edge */
  }
  b->inline_cost[i] = (uint32_t)(cost > AG_INLINE_MAX ? AG_INLINE_MAX + 1 : cost);
  b->node_size[i] = (uint32_t)(size > AG_UNROLL_BUDGET ? AG_UNROLL_BUDGET + 1 : size);
}

/* A repeat of a reference to a small bytes-only rule is unrolled as one of
 * bytes, since ag_nfa_ruleref inlines such a rule. Whether a body is bytes-only
 * never depends on this decision (a body holding any repeat of a reference is
 * not), so it runs after every inline cost is known. */
static void ag_repeat_of_inlined(ag_builder *b, int32_t i) {
  const int32_t *p = ag_ir_node(b->ir, i), *c;
  if (p[0] != AG_NODE_REPEAT || (c = ag_ir_node(b->ir, p[1]))[0] != AG_NODE_RULEREF ||
      c[1] >= b->ir->n_rules)
    return;
  uint64_t cost = b->inline_cost[b->ir->body[c[1]]];
  uint64_t copies = p[3] < 0 ? (uint64_t)p[2] : (uint64_t)p[3];
  if (cost && cost <= AG_INLINE_MAX && copies > 1)
    b->counted[i] = (b->loop_counted && b->loop_counted[i]) || copies > AG_UNROLL_MAX ||
                    copies * cost > AG_UNROLL_BUDGET;
}

/* Sizes every node in one pass: children come before parents. */
ag_status ag_node_sizes(ag_builder *b) {
  size_t n = (size_t)(b->ir->n_nodes ? b->ir->n_nodes : 1);
  b->inline_cost = calloc(n, sizeof *b->inline_cost);
  b->node_size = calloc(n, sizeof *b->node_size);
  b->counted = calloc(n, sizeof *b->counted);
  b->node_rule = malloc(n * sizeof *b->node_rule);
  if (!b->inline_cost || !b->node_size || !b->counted || !b->node_rule) return ag_builder_nomem(b);
  for (int32_t i = 0; i < b->ir->n_nodes; i++) b->node_rule[i] = -1;
  ag_node_sizes_again(b);
  return AG_OK;
}

/* The sizing pass itself, first with no repeat marked, then once
 * ag_count_large_unrolls has marked some (b->loop_counted). */
void ag_node_sizes_again(ag_builder *b) {
  for (int32_t i = 0; i < b->ir->n_nodes; i++) {
    b->counted[i] = 0;
    ag_node_size(b, i);
  }
  for (int32_t i = 0; i < b->ir->n_nodes; i++) ag_repeat_of_inlined(b, i);
}

/* The rule label of the hidden rule for node (made on first use): the counted
 * rule of a counted repeat, else a rule whose body is the node. Hidden labels
 * follow the IR's own and external ones; ids (state_rule) follow the own ones. */
ag_status ag_hidden_rule(ag_builder *b, int32_t node, int32_t *label) {
  const ag_ir *ir = b->ir;
  if (b->node_rule[node] < 0) {
    if ((int64_t)ir->n_rules + ir->n_external + (int64_t)b->hidden.len >= AG_MAX_RULES)
      return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                     "the grammar needs more than %d rules with those its counted repeats add",
                     AG_MAX_RULES);
    ag_hidden h = {node, b->rule};
    if (!ag_vec_push(&b->hidden, h)) return ag_builder_nomem(b);
    b->node_rule[node] = (int32_t)b->hidden.len - 1;
  }
  *label = ir->n_rules + ir->n_external + b->node_rule[node];
  return AG_OK;
}

/* A counted repeat: one edge over its counted rule. */
static ag_status ag_nfa_counted(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  int32_t label = -1;
  ag_status st = ag_hidden_rule(b, node, &label);
  return st ? st : ag_nfa_edge_add(b, from, to, AG_NFA_RULE, 0, 0, label);
}

/* The size of rule r's body when a reference to it may be inlined (small and
 * bytes-only, not the rule being built), else 0. */
uint32_t ag_inline_cost(const ag_builder *b, int32_t r) {
  if (r >= b->ir->n_rules || r == b->rule_id) return 0;
  uint32_t cost = b->inline_cost[b->ir->body[r]];
  return cost <= AG_INLINE_MAX ? cost : 0;
}

/* In a counted text's body (b->linear), a reference in a last position to a
 * rule that is not inlined: an epsilon edge into the rule's one copy, built
 * on first use. Such rules reach each other so (the states of a pattern's
 * automaton), and the whole body becomes one byte automaton. */
static ag_status ag_nfa_linear_ref(ag_builder *b, int32_t r, int32_t from) {
  int32_t hub = b->hub[r];
  if (hub < 0) {
    ag_status st = ag_nfa_state(b, &hub);
    if (!st && !ag_vec_push(&b->touched, r)) st = ag_builder_nomem(b);
    if (st) return st;
    b->hub[r] = hub;
    if ((st = ag_nfa_task_add(b, b->ir->body[r], hub, 1))) return st;
  }
  return ag_nfa_eps(b, from, hub);
}

/* A reference to rule r: its body in place when small and bytes-only, else a rule edge. */
static ag_status ag_nfa_ruleref(ag_builder *b, int32_t r, int32_t from, int32_t to) {
  /* a counted text's body inlines every rule of bytes, however large (a wide class's
   * characters with their escapes): it must be one byte automaton */
  uint32_t cost = b->linear && r < b->ir->n_rules ? b->inline_cost[b->ir->body[r]] : ag_inline_cost(b, r);
  if (cost && (b->linear || b->inlined + cost <= AG_INLINE_BUDGET)) {
    b->inlined += cost;
    return ag_nfa_task_add(b, b->ir->body[r], from, to);
  }
  if (b->linear && to == 1 && r < b->ir->n_rules) return ag_nfa_linear_ref(b, r, from);
  return ag_nfa_edge_add(b, from, to, AG_NFA_RULE, 0, 0, r);
}

/* Each word as a chain of bytes to a fresh state, then its rule. */
static ag_status ag_nfa_switch(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_status st = AG_OK;
  const int32_t *w = p + 2; /* laid out as a LITERAL node after its rule: w[1] bytes from w + 2 */
  for (int32_t k = 0; !st && k < p[1]; k++, w += 2 + w[1]) {
    int32_t mid = -1;
    st = ag_nfa_state(b, &mid);
    if (!st) st = ag_nfa_literal(b, w, from, mid);
    if (!st) st = ag_nfa_ruleref(b, w[0], mid, to);
  }
  return st;
}


static ag_status ag_nfa_expand(ag_builder *b, ag_nfa_task t) {
  const int32_t *p = ag_ir_node(b->ir, t.node);
  switch (p[0]) {
    case AG_NODE_LITERAL: return ag_nfa_literal(b, p, t.from, t.to);
    case AG_NODE_BYTES: return ag_nfa_bytes(b, p, t.from, t.to);
    case AG_NODE_SEQ: return ag_nfa_seq(b, p, t.from, t.to);
    case AG_NODE_CHOICE: return ag_nfa_choice(b, p, t.from, t.to);
    case AG_NODE_RULEREF: return ag_nfa_ruleref(b, p[1], t.from, t.to);
    case AG_NODE_REPEAT:
      return b->counted[t.node] ? ag_nfa_counted(b, t.node, t.from, t.to)
                                : ag_nfa_repeat(b, p, t.from, t.to);
    case AG_NODE_DISPATCH: return ag_nfa_dispatch(b, p, t.from, t.to);
    case AG_NODE_SWITCH: return ag_nfa_switch(b, p, t.from, t.to);
    case AG_NODE_KEYTRIE: return ag_nfa_keytrie(b, p, t.from, t.to);
    case AG_NODE_COUNTED_TEXT: return ag_nfa_counted(b, t.node, t.from, t.to);
    default: /* ag_ir_parse rejected every other kind */
      return ag_fail(b->err, AG_ERR_INVALID, b->rule, "node %d: unknown kind", (int)t.node);
  }
}

/* Builds the rule's NFA. Tasks are independent of each other (each only adds
 * states and edges), so an explicit stack replaces recursion: a deeply nested
 * buffer cannot overflow the C stack. */
ag_status ag_nfa_build(ag_builder *b, int32_t body) {
  b->n_nfa = 2;
  b->work = 0;
  b->inlined = 0;
  b->edges.len = 0;
  b->tasks.len = 0;
  b->share_len = 0;
  b->key_ways.len = b->key_nodes.len = b->key_sets.len = b->key_rows.len = 0;
  if (++b->share_gen == 0) { /* wrapped: forget every old slot */
    if (b->share) memset(b->share, 0, b->share_cap * sizeof *b->share);
    b->share_gen = 1;
  }
  ag_status st = ag_nfa_task_add(b, body, 0, 1);
  while (!st && b->tasks.len > 0) st = ag_nfa_expand(b, b->tasks.data[--b->tasks.len]);
  return st;
}

/* Groups the edges by source state (counting sort) and resets the per-NFA-state
 * scratch arrays. */
ag_status ag_nfa_index(ag_builder *b) {
  size_t n = (size_t)b->n_nfa, m = b->edges.len;
  if (!ag_vec_reserve(&b->csr_begin, n + 1) || !ag_vec_reserve(&b->csr, m) ||
      !ag_vec_reserve(&b->mark, n) || !ag_vec_reserve(&b->count, n))
    return ag_builder_nomem(b);
  uint32_t *begin = b->csr_begin.data;
  memset(begin, 0, (n + 1) * sizeof *begin);
  for (size_t i = 0; i < m; i++) begin[b->edges.data[i].from + 1]++;
  for (size_t s = 0; s < n; s++) begin[s + 1] += begin[s];
  /* Place using begin[from] as a cursor, then shift back by one state. */
  for (size_t i = 0; i < m; i++) b->csr.data[begin[b->edges.data[i].from]++] = b->edges.data[i];
  memmove(begin + 1, begin, n * sizeof *begin);
  begin[0] = 0;
  b->csr_begin.len = n + 1;
  b->csr.len = m;
  memset(b->mark.data, 0, n * sizeof *b->mark.data);
  memset(b->count.data, 0, n * sizeof *b->count.data);
  b->mark_gen = 0;
  if (b->key_ways.len) {
    if (!ag_vec_reserve(&b->nfa_way, n)) return ag_builder_nomem(b);
    for (size_t u = 0; u < n; u++) b->nfa_way.data[u] = -1;
    for (size_t i = 0; i < b->key_nodes.len; i++)
      b->nfa_way.data[b->key_nodes.data[i] >> 32] = (int32_t)(uint32_t)b->key_nodes.data[i];
    b->nfa_way.len = n;
  }
  return AG_OK;
}

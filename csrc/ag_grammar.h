/*
 * ag_grammar.h - a loaded grammar: one deterministic automaton per rule, all
 * rules' states in shared arrays (built by ag_fsm.c, checked and trimmed by
 * ag_grammar.c, combined by ag_link.c). Internal.
 */
#ifndef AG_GRAMMAR_H
#define AG_GRAMMAR_H

#include "ag_util.h"

#include <stdatomic.h>

struct ag_dispatch;
struct ag_ir;

/* ---- limits ------------------------------------------------------------ */

#define AG_MAX_STATES (1 << 24)   /* automaton states in one grammar */
#define AG_MAX_RULES (1 << 20)    /* rules in one grammar */
/* The largest {m,n} bound. Small repeats are unrolled into the rule's automaton
 * (ag_nfa.c bounds that); larger ones become counted rules whose items carry the
 * count, so the bound costs no states and any int32 bound is accepted. */
#define AG_MAX_REPEAT INT32_MAX

/* ---- grammar automata ---------------------------------------------------
 * Every rule is a deterministic automaton over bytes and rule references.
 * All rules' states live in one array with global ids; state_rule[s] says
 * which rule a state belongs to. A state's byte edges are sorted by lo and do
 * not overlap; its rule edges have distinct rules. Every state that an edge
 * points to can reach an accepting state, and no edge names a rule that derives
 * no finite string (such rules stay only as unreferenced start states; a root
 * like that is an error at load). So a non-empty Earley set is a viable prefix.
 */
typedef struct ag_byte_edge {
  uint8_t lo, hi;
  int32_t target;
} ag_byte_edge;

typedef struct ag_rule_edge {
  int32_t rule;
  int32_t target;
} ag_rule_edge;

typedef struct ag_state {
  uint32_t byte_begin, byte_end; /* range in grammar->byte_edges */
  uint32_t rule_begin, rule_end; /* range in grammar->rule_edges */
  bool accepting;
  bool counted; /* a state of a counted rule: see ag_repeat_bounds */
  /* A counted rule's byte automaton: a byte from this state begins a copy of
   * the child (ag_copy_count). Else false. */
  bool boundary;
  /* A counted text's state (AG_NODE_COUNTED_TEXT): the fewest copies that
   * still begin before the rule can end. 0 for every other state. */
  uint8_t rest;
} ag_state;

/*
 * A counted rule is x{min,max} (max -1: unbounded) of a child rule C, made for a
 * repeat too large to unroll. Its automaton is C* or C+ (start state s0, then s1
 * after one C, looping on C), which is exact for productivity, nullability and
 * liveness; the bounds are enforced by the parser, whose items in a counted rule
 * carry how many C's they have matched (ag_earley.c). A child that derives the
 * empty string gets min 0 at load (empty copies fill any minimum), so the parser
 * never needs to count empty matches. A repeat of a bytes-only child that is
 * prefix-free is instead the child's own automaton looping (its accepting states
 * take the start's edges), whose items count the copies begun (ag_earley.c); its
 * states are counted and have byte edges, the others' only a rule edge. A
 * counted text (ag_counted_text.c) is a byte automaton of the same kind whose
 * copies are the characters of a longer text, such as a pattern's: its items
 * also count the copies begun, and stay where count + rest <= max.
 */
typedef struct ag_repeat_bounds {
  int32_t min, max;
  /* The largest ag_state.rest among the rule's states: a counted text's (a
   * pattern's automaton whose characters are counted: ag_counted_text.c), 0
   * for a repeat. An item is viable while count + rest <= max. */
  int32_t rest_max;
} ag_repeat_bounds;

struct ag_grammar {
  atomic_int refs;
  int32_t n_rules;
  /* Rules 0 .. n_ir_rules - 1 are the ones IR buffers number (a linked
   * grammar's: its parts' such rules, in order, then its own); the rest are
   * hidden rules the loader made (counted repeats and their children). */
  int32_t n_ir_rules;
  int32_t root;
  int32_t *rule_start;   /* [n_rules] start state of each rule */
  bool *rule_nullable;   /* [n_rules] the rule derives the empty string */
  ag_repeat_bounds *rule_repeat; /* [n_rules] bounds of the counted rules (see ag_state.counted) */
  /* [n_rules] built as a literal trie (ag_trie.h): a request's tool names. Its
   * states are not compared for depth equivalence (ag_depth_equiv.h): apart
   * from what minimization merged, hardly two agree for long, and the notes
   * cost most of each first visit of a large trie (its survey does not fit). */
  bool *rule_trie;
  /* [n_rules] has no automaton, only a bare start: an IR rule that every
   * reference inlines, which no edge names (ag_fsm.c, ag_rules_build). A grammar
   * that links this one may name its root and the rules its edges name, not these. */
  bool *rule_stub;
  /* Its own IR (not its parts') holds byte 0xFF (ag_ir.holds_ff). */
  bool holds_ff;
  int32_t n_states;
  ag_state *states;      /* [n_states] */
  int32_t *state_rule;   /* [n_states] */
  ag_byte_edge *byte_edges;
  uint32_t n_byte_edges;
  ag_rule_edge *rule_edges;
  uint32_t n_rule_edges;
  /* [n_rules] a rule whose whole body is a dispatch node keeps its words here,
   * for the mask cache's free-text fast path; NULL for other rules. The array
   * itself is NULL when no rule is a dispatch. */
  struct ag_dispatch **rule_dispatch;
  /* A linked grammar (ag_grammar_link) begins with copies of its parts' states,
   * in order and unchanged: part k's states start at part_state_begin[k], the
   * grammar's own follow. Its rules are the parts' IR-numbered rules (part k's
   * from part_rule_begin[k]), its own IR rules, then the hidden rules of the
   * parts (part k's from part_hidden_begin[k]) and its own, so IR buffers keep
   * their numbering. Masks of part states come from the part's compiled grammar. */
  int32_t n_parts;
  ag_grammar **parts;         /* [n_parts], retained */
  int32_t *part_rule_begin;   /* [n_parts + 1] */
  int32_t *part_hidden_begin; /* [n_parts + 1] */
  int32_t *part_state_begin;  /* [n_parts + 1] */
};

void ag_grammar_retain(ag_grammar *g);

/* ---- loading (ag_grammar.c) ---------------------------------------------
 * The whole-grammar steps after the automata are built (ag_fsm.h), shared by
 * ag_grammar_load and ag_grammar_link. */
ag_status ag_grammar_analyze(ag_grammar *g, ag_error *err);
/* Keeps the words of own rule r's dispatch body at rule id first_rule + r. */
ag_status ag_grammar_keep_dispatches(ag_grammar *g, const struct ag_ir *ir, int32_t first_rule,
                                     ag_error *err);
void ag_grammar_destroy(ag_grammar *g);

/* The state reached from s on byte c, or -1 (a state's byte edges are sorted and disjoint). */
static inline int32_t ag_state_step(const ag_grammar *g, int32_t s, uint8_t c) {
  uint32_t lo = g->states[s].byte_begin, hi = g->states[s].byte_end;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const ag_byte_edge *e = &g->byte_edges[mid];
    if (c < e->lo) hi = mid;
    else if (c > e->hi) lo = mid + 1;
    else return e->target;
  }
  return -1;
}

#endif /* AG_GRAMMAR_H */

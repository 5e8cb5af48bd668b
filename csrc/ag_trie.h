/*
 * ag_trie.h - the automaton of a choice of literals, built as a trie.
 *
 * A request's tool names are one rule: "name1" part1 | "name2" part2 | ...,
 * hundreds of literals each followed by a rule reference. Thompson
 * construction and subset construction spend most of a warm request's link
 * on it, though the result is known in advance: a trie, the states after
 * each literal merged by what follows them. This builds that automaton
 * directly (ag_fsm.c emits it and minimizes it as any other rule).
 * Internal; not part of the public surface.
 */
#ifndef AG_TRIE_H
#define AG_TRIE_H

#include "ag_util.h"

/* One alternative: a literal, then one rule edge (rule >= 0) or the rule's end (rule -1). */
typedef struct ag_trie_entry {
  const int32_t *bytes; /* one byte per word, as in the IR */
  int32_t len;          /* at least 1 */
  int32_t rule;
} ag_trie_entry;

typedef struct ag_trie_edge {
  uint8_t byte;
  int32_t target; /* a state id of the trie */
} ag_trie_edge;

/* A state: its byte edges (in byte order) and the rules of its rule edges
 * (sorted, distinct), each of which leads to ag_trie.final. */
typedef struct ag_trie_state {
  uint32_t edge_begin, edge_end;
  uint32_t rule_begin, rule_end;
  bool accepting;
  int32_t lo, hi, depth; /* the sorted entries [lo, hi) that share its prefix of length depth */
} ag_trie_state;

typedef struct ag_trie {
  AG_VEC(ag_trie_entry) entries; /* the input, filled by the caller (sorted in place) */
  AG_VEC(ag_trie_state) states;  /* the output: state 0 is the start */
  AG_VEC(ag_trie_edge) edges;
  AG_VEC(int32_t) rules;
  int32_t final;  /* the accepting state with no edge after a rule edge, -1 if none */
  AG_VEC(uint8_t) may_merge; /* [states] 0: no other state has its language (see ag_trie_build) */
  int32_t *table; /* ends interned by what follows them (ag_trie_end) */
  size_t table_cap;
} ag_trie;

/*
 * Builds the automaton of the entries, numbered as subset construction of
 * their Thompson NFA numbers its states: breadth first from the start, byte
 * edges in byte order, then rule edges. Like that construction, it gives one
 * state to every prefix that some literal continues, and one state to all the
 * prefixes that end literals alone with the same rules after them and the
 * same acceptance (subset construction keeps two such apart when their rule
 * references are distinct IR nodes; minimization merges them there). At most
 * max_states states, else AG_ERR_LIMIT naming rule.
 *
 * may_merge tells minimization which states can be equivalent to another. Two
 * states with the same language lie in disjoint subtrees (an ancestor's longest
 * word is longer) and reach the same ends, so every end below either is reached
 * by two byte edges at least. Tools with distinct arguments share no end: the
 * trie is then minimal but for a few states above the ends they share.
 */
ag_status ag_trie_build(ag_trie *t, int32_t max_states, int32_t rule, ag_error *err);
void ag_trie_free(ag_trie *t);

#endif /* AG_TRIE_H */

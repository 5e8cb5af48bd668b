/*
 * ag_copies.h - how many copies of a counted rule's child each token begins
 * from one state of the rule's byte automaton (ag_fsm.c, ag_counted_inline).
 * Internal.
 *
 * A state's cached classes know nothing of the count: they are those of an
 * unbounded repeat. A token read wholly inside the rule begins at most one copy
 * a byte, so while the room left below max is at least the longest token, the
 * classes serve as they are; closer, the matcher takes from them only the
 * tokens that begin no more copies than the room (the table's order by copies
 * makes that a prefix), and checks with the parser the few that might also
 * leave the rule within themselves (the "exits").
 */
#ifndef AG_COPIES_H
#define AG_COPIES_H

#include "ag_grammar.h"
#include "ag_vocab.h"

#define AG_COPIES_NONE UINT16_MAX /* not read inside the rule, or as many copies or more */

typedef struct ag_copies {
  /* Where the plain characters are copies (ag_plain_chars_are_copies) and none
   * may leave the rule, the plain tokens are the vocabulary's, by characters
   * (ag_vocab.plain_by_chars), each beginning its characters less `adj` copies;
   * the lists below then hold the other tokens only. Else NULL. */
  const uint32_t *plain;
  uint32_t adj;
  int32_t n_inside;   /* the (other) tokens read wholly inside the rule from the state */
  int32_t max_copies; /* the most copies one of them begins */
  int32_t *pos;       /* [n_inside] their sorted positions, by copies begun */
  int32_t *first;     /* [max_copies + 2] pos[first[j] .. first[j + 1]) begin j copies */
  uint16_t *copies_at; /* [n_sorted] copies begun by the (other) token at a position, or AG_COPIES_NONE */
  int32_t n_exits;
  int32_t *exits;     /* [n_exits] inside tokens that pass an accepting state before a byte
                       * that may follow the rule: they may leave it too */
  size_t bytes;
} ag_copies;

/* The copies the token at sorted position i begins, or AG_COPIES_NONE. */
static inline uint32_t ag_copies_at(const ag_copies *c, const ag_vocab *v, int32_t i) {
  if (c->plain && ag_bit(c->plain, i)) return v->chars[i] > c->adj ? v->chars[i] - c->adj : 0;
  return c->copies_at[i];
}

/* The table of state `state` (a counted rule's byte automaton), with `follow` the
 * rule's FOLLOW set (8 words; NULL: any byte). */
ag_status ag_copies_build(const ag_grammar *g, const ag_vocab *v, int32_t state, const uint32_t *follow,
                          ag_copies **out, ag_error *err);
void ag_copies_free(ag_copies *c);

#endif /* AG_COPIES_H */

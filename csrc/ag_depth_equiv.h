/*
 * ag_depth_equiv.h - which states of a rule agree on every string of up to L
 * bytes (level-L equivalence, Moore's partition refinement stopped at L).
 *
 * Two states equivalent at level L classify every token of at most L bytes the
 * same way. The walk of such a token sees only the accepting flags, rule edges
 * and byte edges of the states it passes within L bytes; past a rule edge the
 * Earley parser continues from the edge's target, which both share (rule edges
 * must be identical, targets included), and the rule's FOLLOW set is the
 * same. So the classes of a state can be derived from those of an L-equivalent
 * state classified before, re-walking only the tokens longer than L
 * (ag_vocab.long_sorted): a few hundred of a 128k vocabulary for L = 32.
 *
 * Why: the positions of a length-bounded JSON string ("maxLength": 255) are a
 * chain of distinct automaton states, each equivalent to the next up to its
 * distance from the bound. Each used to cost a walk of the whole vocabulary
 * (about 17 ms on Llama-3.2) the first time a string reached it.
 *
 * Classes are computed lazily, per state and level, by hash-consing: a state's
 * class at level j is the id of its signature (accepting, rule edges, and per
 * byte range the class of its target at level j - 1), so only the states
 * within L bytes of the states asked about are ever looked at.
 */
#ifndef AG_DEPTH_EQUIV_H
#define AG_DEPTH_EQUIV_H

#include "ag_grammar.h"

/* The deepest level compared, and the bounds on the rules compared at all. */
#define AG_DEPTH_EQUIV_MAX_LEVEL 32
#define AG_DEPTH_EQUIV_MIN_STATES 16 /* fewer states: few first visits to save */
#define AG_DEPTH_EQUIV_MAX_STATES (1 << 14)
/* Classes one find or note may compute. Within L bytes of a chain there are
 * a few hundred, a thousand and more where each position may be a JSON escape
 * ("\u" and four hex digits: a pattern string's character); within L bytes of
 * the start of a trie of 500 tool names, tens of thousands, for states that are
 * equivalent to nothing anyway. At 1024, a pattern string of 60 characters had
 * each position walked (17 fills along one value: 17 ms on Llama-3.2, 6.6 ms
 * derived). */
#define AG_DEPTH_EQUIV_WORK 4096
/* A rule whose finds have missed more than twice their hits plus this many is
 * given up on: its states are classified by a walk, as without this file. So
 * is a rule where one lookup runs out of work before its deepest level: the
 * neighbourhood is too wide (a trie) for a chain of equivalent states. */
#define AG_DEPTH_EQUIV_MISSES 8
/* Classes a rule's survey may compute (every state at the shallowest level a
 * find accepts): a state equivalent there to no other is never found or noted,
 * and a rule of such states only (literals, tries) is not compared at all. A
 * note cost up to a work budget of classes at each first visit until the rule
 * was given up on: most of a literal's first visit. */
#define AG_DEPTH_EQUIV_SURVEY 4096 /* about four notes: over it, the misses judge */

typedef struct ag_depth_equiv ag_depth_equiv;

/* The comparison of `rule`'s states at levels up to max_level, finds looking no
 * shallower than min_level (the classes are computed as they are asked for,
 * after a survey at min_level where it fits AG_DEPTH_EQUIV_SURVEY); *out = NULL
 * (and AG_OK) for a rule not worth it or not fit for it: counted states, a
 * number of states outside the bounds above, or no two states equivalent at
 * min_level. */
ag_status ag_depth_equiv_build(const ag_grammar *g, int32_t rule, uint32_t max_level,
                               uint32_t min_level, ag_depth_equiv **out, ag_error *err);
void ag_depth_equiv_free(ag_depth_equiv *q);
/* The bytes q has come to hold since the last call (classes are computed lazily,
 * so it grows as states are asked about), for the owner's count. Thread-safe. */
size_t ag_depth_equiv_take_growth(ag_depth_equiv *q);
/* The states compared, [*begin, *begin + *n): for callers that note the
 * states classified before the object was built. */
void ag_depth_equiv_range(const ag_depth_equiv *q, int32_t *begin, int32_t *n);

/* A state already noted that is equivalent to `state` at the deepest level
 * (at least min_level): *rep, and in *level the level. *rep = -1 when there is
 * none, or memory ran out. Thread-safe. */
void ag_depth_equiv_find(ag_depth_equiv *q, int32_t state, uint32_t min_level, int32_t *rep,
                         uint32_t *level);
/* Records that `state`'s classes are published, so equivalent states may derive
 * from them. The first state noted per class stays its representative. Thread-safe. */
void ag_depth_equiv_note(ag_depth_equiv *q, int32_t state);

#endif /* AG_DEPTH_EQUIV_H */

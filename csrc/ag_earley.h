/*
 * ag_earley.h - an Earley recognizer over the per-rule automata.
 *
 * An item is (automaton state, origin set, count). The count is how many
 * copies of its child an item of a counted rule has matched (ag_repeat_bounds);
 * it is 0 in every other rule. The parser keeps every Earley set since the
 * start in one array, so popping sets is how both token-mask walks and
 * rollback undo input: exact and O(1).
 */
#ifndef AG_EARLEY_H
#define AG_EARLEY_H

#include "ag_grammar.h"

#define AG_MAX_SET_ITEMS (1 << 20) /* items in one Earley set (one step of the parser) */

typedef struct ag_item {
  int32_t state;
  int32_t origin;
  int32_t count;
} ag_item;

typedef struct ag_parser {
  const ag_grammar *g;
  AG_VEC(ag_item) items;     /* the items of all sets, set after set */
  AG_VEC(uint32_t) set_start; /* set k is items[set_start[k] .. set_start[k+1] or items.len) */
  /* Open-addressing index of the set being built, for de-duplication.
   * A slot is live when its stamp equals `stamp`; bumping stamp clears it. */
  uint32_t *slot_item;
  uint32_t *slot_stamp;
  uint32_t n_slots;
  uint32_t stamp;
  /* Completing into a large earlier set looks its waiting items up here instead
   * of scanning the set: the set's rule edges as (rule << 32 | item index),
   * sorted, for the last set asked for. Valid until that set is popped. */
  AG_VEC(uint64_t) wait;
  int32_t wait_origin;
  bool wait_valid;
  /* A time budget for scans: past `deadline` (0: none) a scan fails with
   * AG_ERR_TIMEOUT and leaves no new set. The clock is read once per
   * AG_PARSER_CLOCK_WORK units of work (items closed, waiting items advanced),
   * so an ambiguous grammar whose one byte takes seconds is stopped in time. */
  double deadline;
  uint64_t work, next_clock;
} ag_parser;

#define AG_PARSER_CLOCK_WORK 4096

ag_status ag_parser_init(ag_parser *p, const ag_grammar *g, ag_error *err);
void ag_parser_free(ag_parser *p);
/*
 * Starts a parser on one item alone: (state, origin 0) in set 1 after an empty
 * set 0. Everything predicted inside gets origin >= 1, so origin 0 marks the
 * item and what it became by scanning; the mask cache uses this to see what a
 * token does inside one rule, whatever the context.
 */
ag_status ag_parser_init_item(ag_parser *p, const ag_grammar *g, int32_t state, ag_error *err);
/* For a parser from ag_parser_init_item: the item's rule can end at this point. */
bool ag_parser_bottom_can_end(const ag_parser *p);
/* Drops all input: back to the single start set. */
void ag_parser_restart(ag_parser *p);
/* Scans one byte into a new set. Returns AG_OK with *ok = 0 (and no new set) on rejection;
 * past the parser's deadline, AG_ERR_TIMEOUT (and no new set). */
ag_status ag_parser_scan(ag_parser *p, uint8_t byte, bool *ok, ag_error *err);
/* Sets the deadline of the scans that follow (ag_now() seconds; 0: none). */
static inline void ag_parser_set_deadline(ag_parser *p, double deadline) {
  p->deadline = deadline;
  p->next_clock = p->work; /* read the clock at the first check */
}
/* Pops sets until n remain. */
void ag_parser_truncate(ag_parser *p, uint32_t n_sets);
static inline uint32_t ag_parser_num_sets(const ag_parser *p) { return (uint32_t)p->set_start.len; }
/* True when the input so far is a complete sentence of the root rule. */
bool ag_parser_can_end(const ag_parser *p);
/*
 * The bytes that may come next, as a 256-bit set. Returns the number of
 * distinct bytes allowed.
 */
int ag_parser_next_bytes(const ag_parser *p, uint32_t set_bits[8]);

#endif /* AG_EARLEY_H */

/*
 * ag_walk_rows.h - dense transition rows for one classification walk.
 *
 * A first-visit walk of the vocabulary steps a rule's automaton hundreds of
 * thousands of times, nearly all from a handful of states (a string body, a
 * number's digits). A byte edge found by binary search costs a few dozen
 * instructions per step; a row of 256 cells per state the walk visits makes a
 * step one load. A cell also carries what the walk needs to know about the
 * step besides its target (whether the rule could end before the byte, or the
 * target leaves the rule), so the walk's bookkeeping is one OR.
 *
 * A row is made for the walk's start state at once, and for another state the
 * AG_WALK_ROW_VISITS-th time the walk steps into it, up to AG_WALK_ROWS rows;
 * until then (or beyond the bound, or out of memory) a state is stepped by
 * binary search, with the same cells. A row (1 KiB) costs as much as a few
 * searches: the states of a string's body are stepped from thousands of times,
 * but a trie of tool names has hundreds of states that a few tokens each enter
 * (rows for all of them were most of the first visit of its root). Memory is
 * the walk's: freed with it.
 */
#ifndef AG_WALK_ROWS_H
#define AG_WALK_ROWS_H

#include "ag_grammar.h"

/* A cell: a target in the low bits, then flags. */
#define AG_CELL_TARGET ((1u << 27) - 1) /* a row, or with AG_CELL_STATE a state id */
#define AG_CELL_ENDS (1u << 27)         /* the rule could end before the byte, whatever follows */
#define AG_CELL_EXITED (1u << 28)       /* the step enters an exit (the caller's to define) */
#define AG_CELL_CAN_END (1u << 29)      /* the rule could end before the byte, or at the exit */
#define AG_CELL_STATE (1u << 30)        /* the target is a state that has no row (yet) */
#define AG_CELL_NONE (1u << 31)         /* no edge: only the end flags are meaningful */
_Static_assert(AG_MAX_STATES - 1 <= AG_CELL_TARGET, "state ids fit in a cell");

#define AG_WALK_ROWS 256       /* rows per walk at most: 256 KiB of cells */
#define AG_WALK_ROW_SLOTS 512  /* open addressing from state to row, twice the rows */
#define AG_WALK_ROW_VISITS 4   /* steps into a state before it gets a row */
#define AG_WALK_SEEN_SLOTS 1024 /* open addressing from state to its steps so far; half full: rows at once */

typedef struct ag_walk_rows {
  const ag_grammar *g;
  const uint32_t *follow; /* the bytes that may follow the rule (256 bits); NULL: any */
  uint32_t exit_flags;    /* the flags a step into a state with rule edges adds */
  uint32_t *cells;        /* [cap * 256] */
  int32_t n, cap;
  int32_t state[AG_WALK_ROWS];         /* the state of each row */
  uint16_t slot[AG_WALK_ROW_SLOTS];    /* 1 + a row, 0: empty */
  int32_t seen_state[AG_WALK_SEEN_SLOTS]; /* 1 + a state without a row, 0: empty */
  uint8_t seen_steps[AG_WALK_SEEN_SLOTS]; /* the steps into it so far */
  int32_t n_seen;
} ag_walk_rows;

/* Starts with no rows; `exit_flags` is what a step into a state with rule edges
 * adds (AG_CELL_CAN_END, AG_CELL_EXITED or 0). */
void ag_walk_rows_init(ag_walk_rows *r, const ag_grammar *g, const uint32_t *follow,
                       uint32_t exit_flags);
void ag_walk_rows_free(ag_walk_rows *r);

/* Where the walk is at state s: its row (made now when there is room), or ~s
 * (negative) for a state stepped by search. For the walk's start state. */
int32_t ag_walk_rows_at(ag_walk_rows *r, int32_t s);

/* The cell of a step by byte c from a state with no row (at = ~s), by search. */
uint32_t ag_walk_rows_search(const ag_walk_rows *r, int32_t at, uint8_t c);

/* A cell whose target is a state (AG_CELL_STATE) with that state's row put in,
 * and written back to the row it came from (at >= 0); unchanged when the state
 * has no row (yet: this counts a step into it). */
uint32_t ag_walk_rows_link(ag_walk_rows *r, int32_t at, uint8_t c, uint32_t cell);

/* The cell of the step by byte c from `at` (a row or ~state), as it stands: its
 * target may be a state that has a row not linked yet. Enough for its flags. */
static inline uint32_t ag_walk_rows_peek(const ag_walk_rows *r, int32_t at, uint8_t c) {
  return at >= 0 ? r->cells[(size_t)at * 256 + c] : ag_walk_rows_search(r, at, c);
}

/* The step by byte c from `at` (a row or ~state): the cell, with a row target
 * whenever the target has a row. */
static inline uint32_t ag_walk_rows_step(ag_walk_rows *r, int32_t at, uint8_t c) {
  uint32_t cell = ag_walk_rows_peek(r, at, c);
  if ((cell & (AG_CELL_NONE | AG_CELL_STATE)) == AG_CELL_STATE) cell = ag_walk_rows_link(r, at, c, cell);
  return cell;
}

/* Where the walk is after a step with this cell (not AG_CELL_NONE). */
static inline int32_t ag_walk_rows_target(uint32_t cell) {
  int32_t t = (int32_t)(cell & AG_CELL_TARGET);
  return cell & AG_CELL_STATE ? ~t : t;
}

#endif /* AG_WALK_ROWS_H */

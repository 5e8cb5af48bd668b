/* ag_walk_rows.c - dense transition rows for one classification walk (see the header). */
#include "ag_walk_rows.h"

void ag_walk_rows_init(ag_walk_rows *r, const ag_grammar *g, const uint32_t *follow,
                       uint32_t exit_flags) {
  r->g = g;
  r->follow = follow;
  r->exit_flags = exit_flags;
  r->cells = NULL;
  r->n = r->cap = 0;
  memset(r->slot, 0, sizeof r->slot);
  memset(r->seen_state, 0, sizeof r->seen_state);
  r->n_seen = 0;
}

void ag_walk_rows_free(ag_walk_rows *r) {
  free(r->cells);
  r->cells = NULL;
  r->n = r->cap = 0;
}

/* The flags that state u contributes to a step by byte c: the rule could end
 * at u, and c may follow it. */
static uint32_t ag_cell_end(const ag_walk_rows *r, int32_t u, uint8_t c) {
  if (!r->g->states[u].accepting) return 0;
  return AG_CELL_ENDS | (!r->follow || ag_bit(r->follow, c) ? AG_CELL_CAN_END : 0);
}

/* The cell of a step into state t, before the flags of the state it leaves. */
static uint32_t ag_cell_into(const ag_walk_rows *r, int32_t t) {
  const ag_state *st = &r->g->states[t];
  return AG_CELL_STATE | (uint32_t)t | (st->rule_begin != st->rule_end ? r->exit_flags : 0);
}

uint32_t ag_walk_rows_search(const ag_walk_rows *r, int32_t at, uint8_t c) {
  int32_t u = ~at, t = ag_state_step(r->g, u, c);
  return (t < 0 ? AG_CELL_NONE : ag_cell_into(r, t)) | ag_cell_end(r, u, c);
}

/* The slot of state s in the table from states to rows: its own, or the empty one to take. */
static uint32_t ag_row_slot(const ag_walk_rows *r, int32_t s) {
  uint32_t h = ((uint32_t)s * 2654435761u) >> 23; /* 9 bits: AG_WALK_ROW_SLOTS */
  while (r->slot[h] && r->state[r->slot[h] - 1] != s) h = (h + 1) & (AG_WALK_ROW_SLOTS - 1);
  return h;
}

/* Fills row k with the steps from state u: every byte without an edge first,
 * with the end flags (only an accepting state has any), then each edge's
 * range (edges are disjoint), the end flags kept. */
static void ag_row_fill(ag_walk_rows *r, int32_t k, int32_t u) {
  uint32_t *row = r->cells + (size_t)k * 256;
  const ag_state *st = &r->g->states[u];
  for (int c = 0; c < 256; c++) row[c] = AG_CELL_NONE;
  for (int c = 0; st->accepting && c < 256; c++) row[c] |= ag_cell_end(r, u, (uint8_t)c);
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *be = &r->g->byte_edges[e];
    uint32_t into = ag_cell_into(r, be->target);
    for (int c = be->lo; c <= be->hi; c++) row[c] = into | (row[c] & (AG_CELL_CAN_END | AG_CELL_ENDS));
  }
}

int32_t ag_walk_rows_at(ag_walk_rows *r, int32_t s) {
  uint32_t h = ag_row_slot(r, s);
  if (r->slot[h]) return r->slot[h] - 1;
  if (r->n == AG_WALK_ROWS) return ~s;
  if (r->n == r->cap) { /* rows double, up to the bound; without memory, search */
    size_t cap = r->cap ? 2 * (size_t)r->cap : 8;
    uint32_t *cells = realloc(r->cells, cap * 256 * sizeof *cells);
    if (!cells) return ~s;
    r->cells = cells;
    r->cap = (int32_t)cap;
  }
  int32_t k = r->n++;
  r->state[k] = s;
  r->slot[h] = (uint16_t)(k + 1);
  ag_row_fill(r, k, s);
  return k;
}

/* Counts a step into state s, which has no row; whether it is the one that earns
 * it a row (AG_WALK_ROW_VISITS). Once the table is half full, a new state earns one
 * at once. */
static bool ag_row_earned(ag_walk_rows *r, int32_t s) {
  uint32_t h = ((uint32_t)s * 2654435761u) >> 22; /* 10 bits: AG_WALK_SEEN_SLOTS */
  while (r->seen_state[h] && r->seen_state[h] != s + 1) h = (h + 1) & (AG_WALK_SEEN_SLOTS - 1);
  if (!r->seen_state[h]) {
    if (2 * r->n_seen >= AG_WALK_SEEN_SLOTS) return true;
    r->seen_state[h] = s + 1;
    r->seen_steps[h] = 0;
    r->n_seen++;
  }
  return ++r->seen_steps[h] >= AG_WALK_ROW_VISITS;
}

uint32_t ag_walk_rows_link(ag_walk_rows *r, int32_t at, uint8_t c, uint32_t cell) {
  int32_t s = (int32_t)(cell & AG_CELL_TARGET);
  uint32_t h = ag_row_slot(r, s);
  int32_t to = r->slot[h] ? r->slot[h] - 1 : ag_row_earned(r, s) ? ag_walk_rows_at(r, s) : ~s;
  if (to < 0) return cell;
  cell = (cell & ~(AG_CELL_STATE | AG_CELL_TARGET)) | (uint32_t)to;
  if (at >= 0) r->cells[(size_t)at * 256 + c] = cell;
  return cell;
}

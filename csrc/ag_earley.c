/* ag_earley.c - Earley recognition over per-rule deterministic automata.
 *
 * Prediction happens at rule edges, scanning at byte edges, completion at
 * accepting states. Nullable rules use the Aycock-Horspool rule: predicting a
 * nullable rule also steps over it at once, so completions never need to look
 * at the set that is still being built.
 *
 * Counted rules (ag_repeat_bounds): an item predicts the child only while its
 * count is below max, a completed child advances it with count + 1, and it
 * completes once its count reaches min. Counts above min of an unbounded repeat
 * are all alike, so they stop at min: an item's count never exceeds max(min,
 * max), and distinct counts are distinct items. Empty matches of the child are
 * never counted (no Aycock-Horspool step): the loader gave a nullable child min
 * 0, and then an item with a smaller count can do all that one with more can.
 * A counted rule of a bytes-only child is one byte automaton (ag_fsm.c,
 * ag_counted_inline): its items count the copies begun, and a byte from a
 * boundary state (the start, an accepting state) begins one (ag_copy_count).
 * So does a counted text's (ag_counted_text.c), whose items also keep room
 * for the copies their state still needs. */
#include "ag_earley.h"

static uint32_t ag_item_hash(ag_item it) {
  uint64_t h = ((uint64_t)(uint32_t)it.state << 32) | (uint32_t)it.origin;
  h ^= (uint64_t)(uint32_t)it.count * 0x9e3779b97f4a7c15ULL;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return (uint32_t)h;
}

/* Whether the item's rule is complete at the item. */
static inline bool ag_item_accepting(const ag_grammar *g, ag_item it) {
  const ag_state *s = &g->states[it.state];
  return s->accepting && (!s->counted || it.count >= g->rule_repeat[g->state_rule[it.state]].min);
}

/* Whether a counted item may match one more copy of its child (any other item: true). */
static inline bool ag_item_can_repeat(const ag_grammar *g, ag_item it) {
  if (!g->states[it.state].counted) return true;
  int32_t max = g->rule_repeat[g->state_rule[it.state]].max;
  return max < 0 || it.count < max;
}

/* The count after one more copy (ag_item_can_repeat holds, so it cannot overflow). */
static inline int32_t ag_item_next_count(const ag_grammar *g, ag_item it) {
  if (!g->states[it.state].counted) return 0;
  const ag_repeat_bounds *r = &g->rule_repeat[g->state_rule[it.state]];
  return r->max >= 0 || it.count < r->min ? it.count + 1 : it.count;
}

/* Item `it`'s count after scanning a byte from its state, which is a counted
 * rule's byte automaton, to state t; false when the byte would begin a copy
 * past max, or leave fewer copies than t still needs (ag_state.rest). */
static bool ag_copy_count(const ag_grammar *g, ag_item it, int32_t t, int32_t *count) {
  const ag_state *s = &g->states[it.state];
  const ag_repeat_bounds *r = &g->rule_repeat[g->state_rule[it.state]];
  *count = it.count;
  if (s->boundary) {
    if (r->max >= 0) {
      if (it.count >= r->max) return false;
      *count = it.count + 1;
    } else if (it.count < r->min) {
      *count = it.count + 1;
    }
  }
  return r->max < 0 || (int64_t)*count + g->states[t].rest <= r->max;
}

static uint32_t ag_current_start(const ag_parser *p) { return p->set_start.data[p->set_start.len - 1]; }

/* Sizes the de-duplication index for a set of n items (load factor <= 1/2). */
static bool ag_index_reserve(ag_parser *p, uint32_t n) {
  if (n * 2 < p->n_slots) return true;
  uint32_t slots = p->n_slots ? p->n_slots : 64;
  while (slots <= n * 2) {
    if (slots > (UINT32_MAX >> 2)) return false;
    slots *= 2;
  }
  uint32_t *item = malloc(sizeof *item * slots), *stamp = calloc(slots, sizeof *stamp);
  if (!item || !stamp) {
    free(item);
    free(stamp);
    return false;
  }
  free(p->slot_item);
  free(p->slot_stamp);
  p->slot_item = item;
  p->slot_stamp = stamp;
  p->n_slots = slots;
  p->stamp = 1;
  /* Re-index the items of the set being built. */
  for (uint32_t i = ag_current_start(p); i < p->items.len; i++) {
    uint32_t h = ag_item_hash(p->items.data[i]) & (slots - 1);
    while (p->slot_stamp[h] == p->stamp) h = (h + 1) & (slots - 1);
    p->slot_stamp[h] = p->stamp;
    p->slot_item[h] = i;
  }
  return true;
}

/* Starts indexing a fresh set. */
static void ag_index_clear(ag_parser *p) {
  if (++p->stamp == 0) { /* wrapped: really clear */
    memset(p->slot_stamp, 0, sizeof *p->slot_stamp * p->n_slots);
    p->stamp = 1;
  }
}

/* Adds an item to the set being built unless it is already there. */
static bool ag_add(ag_parser *p, ag_item it) {
  uint32_t n = (uint32_t)(p->items.len - ag_current_start(p));
  if (!ag_index_reserve(p, n + 1)) return false;
  uint32_t mask = p->n_slots - 1, h = ag_item_hash(it) & mask;
  while (p->slot_stamp[h] == p->stamp) {
    ag_item o = p->items.data[p->slot_item[h]];
    if (o.state == it.state && o.origin == it.origin && o.count == it.count) return true;
    h = (h + 1) & mask;
  }
  if (!ag_vec_push(&p->items, it)) return false;
  p->slot_stamp[h] = p->stamp;
  p->slot_item[h] = (uint32_t)(p->items.len - 1);
  return true;
}

static bool ag_predict(ag_parser *p, ag_item it, int32_t k) {
  const ag_grammar *g = p->g;
  const ag_state *s = &g->states[it.state];
  if (s->counted) /* the child, while the count allows; empty copies never count */
    return s->rule_begin == s->rule_end || !ag_item_can_repeat(g, it) ||
           ag_add(p, (ag_item){g->rule_start[g->rule_edges[s->rule_begin].rule], k, 0});
  for (uint32_t e = s->rule_begin; e < s->rule_end; e++) {
    const ag_rule_edge *re = &g->rule_edges[e];
    if (!ag_add(p, (ag_item){g->rule_start[re->rule], k, 0})) return false;
    if (g->rule_nullable[re->rule] && !ag_add(p, (ag_item){re->target, it.origin, 0})) return false;
  }
  return true;
}

/* Sets smaller than this are scanned; larger ones are indexed (a chain of n nested
 * rules completes n times into one set of n items: quadratic without it). */
#define AG_WAIT_INDEX_MIN 64

/* The waiting index of set `origin` (see ag_parser.wait), built if stale. */
static bool ag_wait_index(ag_parser *p, int32_t origin) {
  if (p->wait_valid && p->wait_origin == origin) return true;
  const ag_grammar *g = p->g;
  uint32_t begin = p->set_start.data[origin], end = p->set_start.data[origin + 1];
  p->wait.len = 0;
  for (uint32_t i = begin; i < end; i++) {
    const ag_state *s = &g->states[p->items.data[i].state];
    for (uint32_t e = s->rule_begin; e < s->rule_end; e++)
      if (!ag_vec_push(&p->wait, ((uint64_t)(uint32_t)g->rule_edges[e].rule << 32) | i)) return false;
  }
  qsort(p->wait.data, p->wait.len, sizeof *p->wait.data, ag_cmp_u64);
  p->work += end - begin; /* rebuilt whenever completions move to another origin: counted */
  p->wait_origin = origin;
  p->wait_valid = true;
  return true;
}

/* The target of state s's edge over `rule` (a state's rule edges have distinct rules). */
static int32_t ag_rule_target(const ag_grammar *g, int32_t s, int32_t rule) {
  for (uint32_t e = g->states[s].rule_begin; e < g->states[s].rule_end; e++)
    if (g->rule_edges[e].rule == rule) return g->rule_edges[e].target;
  return -1;
}

/* Advances waiting item w over its edge to `target`, counting a copy in a counted rule. */
static bool ag_advance(ag_parser *p, ag_item w, int32_t target) {
  if (!ag_item_can_repeat(p->g, w)) return true; /* at max: this copy does not fit */
  return ag_add(p, (ag_item){target, w.origin, ag_item_next_count(p->g, w)});
}

/* Advances every item of set `origin` that waits on `rule`. */
static bool ag_complete(ag_parser *p, int32_t rule, int32_t origin) {
  const ag_grammar *g = p->g;
  uint32_t begin = p->set_start.data[origin], end = p->set_start.data[origin + 1];
  if (end - begin >= AG_WAIT_INDEX_MIN) {
    if (!ag_wait_index(p, origin)) return false;
    uint64_t key = (uint64_t)(uint32_t)rule << 32;
    size_t lo = 0, hi = p->wait.len;
    while (lo < hi) { /* the first entry for `rule` */
      size_t mid = lo + (hi - lo) / 2;
      if (p->wait.data[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    size_t first = lo;
    for (; lo < p->wait.len && (p->wait.data[lo] >> 32) == (uint32_t)rule; lo++) {
      ag_item w = p->items.data[(uint32_t)p->wait.data[lo]];
      if (!ag_advance(p, w, ag_rule_target(g, w.state, rule))) return false;
    }
    p->work += lo - first; /* an ambiguous rule's completions are where the time goes */
    return true;
  }
  p->work += end - begin;
  for (uint32_t i = begin; i < end; i++) {
    ag_item w = p->items.data[i];
    const ag_state *s = &g->states[w.state];
    for (uint32_t e = s->rule_begin; e < s->rule_end; e++) {
      if (g->rule_edges[e].rule != rule) continue;
      if (!ag_advance(p, w, g->rule_edges[e].target)) return false;
    }
  }
  return true;
}

/* AG_ERR_TIMEOUT once the deadline has passed; the clock is read only every
 * AG_PARSER_CLOCK_WORK units of work. */
static ag_status ag_check_clock(ag_parser *p, ag_error *err) {
  if (p->work < p->next_clock) return AG_OK;
  p->next_clock = p->work + AG_PARSER_CLOCK_WORK;
  if (ag_now() <= p->deadline) return AG_OK;
  return ag_fail(err, AG_ERR_TIMEOUT, -1, "the parser ran past its time budget");
}

/* Runs prediction and completion to a fixed point over the newest set. */
static ag_status ag_closure(ag_parser *p, ag_error *err) {
  int32_t k = (int32_t)p->set_start.len - 1;
  for (uint32_t i = ag_current_start(p); i < p->items.len; i++) {
    if (p->items.len - ag_current_start(p) > AG_MAX_SET_ITEMS)
      return ag_fail(err, AG_ERR_LIMIT, -1,
                     "an Earley set grew past %d items: the grammar is too ambiguous at this point",
                     AG_MAX_SET_ITEMS);
    p->work++;
    ag_status st = p->deadline > 0 ? ag_check_clock(p, err) : AG_OK;
    if (st) return st;
    ag_item it = p->items.data[i];
    bool ok = ag_predict(p, it, k);
    /* origin == k means the rule matched nothing here: handled by ag_predict. */
    if (ok && it.origin < k && ag_item_accepting(p->g, it))
      ok = ag_complete(p, p->g->state_rule[it.state], it.origin);
    if (!ok) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory in the Earley parser");
  }
  return AG_OK;
}

ag_status ag_parser_init(ag_parser *p, const ag_grammar *g, ag_error *err) {
  memset(p, 0, sizeof *p);
  p->g = g;
  ag_parser_restart(p);
  return p->items.len ? AG_OK : ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
}

void ag_parser_restart(ag_parser *p) {
  p->items.len = 0;
  p->set_start.len = 0;
  p->wait_valid = false;
  if (!ag_vec_push(&p->set_start, 0)) return;
  ag_index_clear(p);
  if (!ag_add(p, (ag_item){p->g->rule_start[p->g->root], 0, 0})) return;
  if (ag_closure(p, NULL) != AG_OK) p->items.len = 0;
}

ag_status ag_parser_init_item(ag_parser *p, const ag_grammar *g, int32_t state, ag_error *err) {
  memset(p, 0, sizeof *p);
  p->g = g;
  /* Set 0 stays empty: completing the item's rule there advances nothing. */
  if (!ag_vec_push(&p->set_start, 0) || !ag_vec_push(&p->set_start, 0))
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  ag_index_clear(p);
  if (!ag_add(p, (ag_item){state, 0, 0})) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  return ag_closure(p, err);
}

bool ag_parser_bottom_can_end(const ag_parser *p) {
  for (uint32_t i = ag_current_start(p); i < p->items.len; i++) {
    ag_item it = p->items.data[i];
    if (it.origin == 0 && ag_item_accepting(p->g, it)) return true;
  }
  return false;
}

void ag_parser_free(ag_parser *p) {
  ag_vec_free(&p->items);
  ag_vec_free(&p->set_start);
  free(p->slot_item);
  free(p->slot_stamp);
  ag_vec_free(&p->wait);
  memset(p, 0, sizeof *p);
}

ag_status ag_parser_scan(ag_parser *p, uint8_t byte, bool *ok, ag_error *err) {
  uint32_t begin = ag_current_start(p), end = (uint32_t)p->items.len;
  if (!ag_vec_push(&p->set_start, end)) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  ag_index_clear(p);
  p->work += end - begin;
  for (uint32_t i = begin; i < end; i++) {
    ag_item it = p->items.data[i];
    int32_t t = ag_state_step(p->g, it.state, byte), count = it.count;
    if (t >= 0 && p->g->states[it.state].counted && !ag_copy_count(p->g, it, t, &count)) continue;
    if (t >= 0 && !ag_add(p, (ag_item){t, it.origin, count})) {
      ag_parser_truncate(p, (uint32_t)p->set_start.len - 1);
      return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory in the Earley parser");
    }
  }
  *ok = p->items.len > end;
  if (!*ok) {
    p->set_start.len--;
    return AG_OK;
  }
  ag_status st = ag_closure(p, err);
  if (st) ag_parser_truncate(p, (uint32_t)p->set_start.len - 1);
  return st;
}

void ag_parser_truncate(ag_parser *p, uint32_t n_sets) {
  if (n_sets == 0 || n_sets >= p->set_start.len) return;
  p->items.len = p->set_start.data[n_sets];
  p->set_start.len = n_sets;
  if (p->wait_valid && p->wait_origin >= (int32_t)n_sets) p->wait_valid = false; /* its set is gone */
}

bool ag_parser_can_end(const ag_parser *p) {
  const ag_grammar *g = p->g;
  for (uint32_t i = ag_current_start(p); i < p->items.len; i++) {
    ag_item it = p->items.data[i];
    if (it.origin == 0 && g->state_rule[it.state] == g->root && ag_item_accepting(g, it))
      return true;
  }
  return false;
}

int ag_parser_next_bytes(const ag_parser *p, uint32_t set_bits[8]) {
  const ag_grammar *g = p->g;
  memset(set_bits, 0, 8 * sizeof *set_bits);
  for (uint32_t i = ag_current_start(p); i < p->items.len; i++) {
    const ag_state *s = &g->states[p->items.data[i].state];
    int32_t count;
    for (uint32_t e = s->byte_begin; e < s->byte_end; e++)
      if (!s->counted || ag_copy_count(g, p->items.data[i], g->byte_edges[e].target, &count))
        ag_byteset_add_range(set_bits, g->byte_edges[e].lo, g->byte_edges[e].hi);
  }
  int n = 0;
  for (int w = 0; w < 8; w++) n += __builtin_popcount(set_bits[w]);
  return n;
}

/* ag_matcher.c - token-level matching: accept, masks, rollback, jump-forward.
 *
 * The matcher drives one Earley parser. Each accepted step (a token, a byte
 * string, or a stop token) records how many Earley sets existed before it, so
 * rollback is popping sets. Masks walk the byte-sorted vocabulary: a token
 * reuses the sets of the prefix it shares with the previous token, and once a
 * byte is rejected every following token with that same prefix is skipped. */
#include "ag_background.h"
#include "ag_compiled.h"
#include "ag_copies.h"
#include "ag_deferred.h"
#include "ag_earley.h"
#include "agentgrammar_testing.h"

#define AG_JUMP_FORWARD_WORK (1 << 22) /* the parser's work (ag_parser.work) in one jump-forward */

typedef struct ag_step {
  uint32_t n_sets; /* Earley sets before this step */
  bool stop;       /* the step accepted a stop token */
} ag_step;

/*
 * The uncertain tokens a mask resolved with the parser, kept for the next masks
 * of the same items. Whether the parser takes such a token depends only on the
 * items of the current set whose states leave tokens uncertain: on each one's
 * state, and past the end of its rule on what waits in its origin set and
 * earlier ones, which later input does not change (only rollback and reset pop
 * them). Every other scannable item's classes decide the token exactly: a token
 * they accept is marked before the parser runs, and one they reject has no path
 * through them. So the kept verdicts hold for the same items among the same
 * classes (which mark the same tokens first). An item of a counted rule's byte
 * automaton past its min and a token's length or more below its max is keyed
 * without its count, which then decides nothing (ag_key_count). The typical case
 * is a JSON string: each token inside it is masked from the same string state
 * and origin, and its uncertain tokens (those holding the closing quote and what
 * may follow) were resolved at every token.
 */
#define AG_VERDICT_SLOTS 8
#define AG_VERDICT_CLASSES 4 /* the most classes a kept verdict is compared on */
#define AG_VERDICT_ITEMS 4   /* the most items with uncertain tokens it is keyed on */
typedef struct ag_verdicts {
  bool valid;
  ag_item items[AG_VERDICT_ITEMS]; /* the items whose states leave tokens uncertain, in set order */
  size_t n_items;
  const ag_state_masks *classes[AG_VERDICT_CLASSES]; /* the current set's, in order */
  size_t n_classes;
  AG_VEC(int32_t) accepted; /* the token ids of the uncertain ones the parser took */
} ag_verdicts;

struct ag_matcher {
  ag_compiled *compiled;
  ag_parser parser;
  AG_VEC(ag_step) steps;
  int32_t *stop_ids;  /* distinct */
  int32_t n_stop;
  uint32_t *stop_bits; /* [ceil(n_tokens / 32)]: the stop ids as a set */
  bool terminate_without_stop;
  bool stopped; /* a stop token was accepted */
  double budget;        /* seconds a mask fill may take; 0: unbounded */
  double accept_budget; /* seconds an accept may take; 0: unbounded */
  double deadline;      /* of the fill in progress; 0: none */
  /* Scratch for masks: the uncertain sorted positions, and which states were seen. */
  uint32_t *pos_bits;     /* [ceil(n_sorted / 32)] */
  uint32_t *accepted_pos; /* [ceil(n_sorted / 32)] */
  uint32_t *state_stamp; /* [n_states] */
  uint32_t stamp;
  AG_VEC(const ag_state_masks *) classes; /* the current set's scannable states' classes */
  AG_VEC(int32_t) class_states;           /* the state of each */
  AG_VEC(int32_t) class_room;  /* the copies each may still begin (ag_copy_room), -1: any */
  uint32_t *scratch;           /* [mask words] one class's tokens near a counted max */
  ag_verdicts verdicts[AG_VERDICT_SLOTS];
};

static bool ag_is_stop(const ag_matcher *m, int32_t id) {
  return id < m->compiled->vocab->n_tokens && ag_bit(m->stop_bits, id);
}

/* The stop ids, checked and without duplicates, as a list and a set: a set so
 * that copying and looking up stay linear however many ids a caller passes. */
static ag_status ag_copy_stops(ag_matcher *m, const int32_t *ids, int32_t n, ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  if (n < 0) {
    ids = v->stop_ids;
    n = v->n_stop;
  }
  m->stop_ids = malloc(sizeof *m->stop_ids * (size_t)(n ? n : 1));
  m->stop_bits = calloc(((size_t)v->n_tokens + 31) / 32 + 1, sizeof *m->stop_bits);
  if (!m->stop_ids || !m->stop_bits) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  for (int32_t i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= v->n_tokens) /* past the tokens: padding, never allowed */
      return ag_fail(err, AG_ERR_RANGE, -1, "stop token id %d is outside the vocabulary's tokens [0, %d)",
                     ids[i], v->n_tokens);
    if (ag_bit(m->stop_bits, ids[i])) continue; /* a duplicate */
    ag_bit_set(m->stop_bits, ids[i]);
    m->stop_ids[m->n_stop++] = ids[i];
  }
  return AG_OK;
}

ag_status ag_matcher_new(ag_compiled *compiled, const int32_t *stop_ids, int32_t n_stop,
                         int terminate_without_stop, ag_matcher **out, ag_error *err) {
  *out = NULL;
  if (!compiled) return ag_fail(err, AG_ERR_INVALID, -1, "null compiled grammar");
  if (n_stop > 0 && !stop_ids) return ag_fail(err, AG_ERR_INVALID, -1, "null stop token ids");
  if (compiled->deferred && ag_deferred_ready(compiled->deferred))
    compiled = ag_deferred_ready(compiled->deferred); /* built already: start on it */
  ag_matcher *m = calloc(1, sizeof *m);
  if (!m) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  ag_compiled_retain(compiled);
  m->compiled = compiled;
  m->terminate_without_stop = terminate_without_stop != 0;
  ag_status st = ag_copy_stops(m, stop_ids, n_stop, err);
  if (!st) st = ag_parser_init(&m->parser, compiled->grammar, err);
  if (!st) {
    m->state_stamp = calloc((size_t)compiled->grammar->n_states + 1, sizeof *m->state_stamp);
    if (!m->state_stamp) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  if (st) {
    ag_matcher_free(m);
    return st;
  }
  *out = m;
  return AG_OK;
}

void ag_matcher_free(ag_matcher *m) {
  if (!m) return;
  ag_parser_free(&m->parser);
  ag_vec_free(&m->steps);
  free(m->state_stamp);
  free(m->pos_bits);
  free(m->accepted_pos);
  ag_vec_free(&m->classes);
  ag_vec_free(&m->class_states);
  ag_vec_free(&m->class_room);
  free(m->scratch);
  for (int k = 0; k < AG_VERDICT_SLOTS; k++) ag_vec_free(&m->verdicts[k].accepted);
  free(m->stop_ids);
  free(m->stop_bits);
  ag_compiled_free(m->compiled);
  free(m);
}

int ag_matcher_can_end(const ag_matcher *m) { return ag_parser_can_end(&m->parser); }

int ag_matcher_is_terminated(const ag_matcher *m) {
  if (m->stopped) return 1;
  return m->terminate_without_stop && ag_parser_can_end(&m->parser);
}

int32_t ag_matcher_num_steps(const ag_matcher *m) { return (int32_t)m->steps.len; }

void ag_matcher_set_time_budget(ag_matcher *m, double seconds) {
  m->budget = seconds > 0 ? seconds : 0;
}

void ag_matcher_set_accept_time_budget(ag_matcher *m, double seconds) {
  m->accept_budget = seconds > 0 ? seconds : 0;
}

/* Forgets the kept verdicts: their origin sets may be popped. */
static void ag_forget_verdicts(ag_matcher *m) {
  for (int k = 0; k < AG_VERDICT_SLOTS; k++) m->verdicts[k].valid = false;
}

/*
 * A matcher of a deferred grammar (ag_compiled_defer) moves to the whole
 * grammar before anything but a mask at the start: it is still at the start
 * there, with the same stop tokens, flags and budgets, and its own memory.
 */
static ag_status ag_matcher_settle(ag_matcher *m, ag_error *err) {
  ag_compiled *full;
  ag_status st = ag_deferred_get(m->compiled->deferred, m->compiled->vocab, &full, err);
  ag_matcher *fresh = NULL;
  if (!st) st = ag_matcher_new(full, m->stop_ids, m->n_stop, m->terminate_without_stop, &fresh, err);
  if (st) return st;
  fresh->budget = m->budget;
  fresh->accept_budget = m->accept_budget;
  ag_matcher old = *m;
  *m = *fresh;
  *fresh = old;
  ag_matcher_free(fresh); /* what the first grammar's matcher held */
  return AG_OK;
}

/* ag_matcher_settle where the matcher has not moved yet; otherwise a load and a branch. */
static inline ag_status ag_settled(ag_matcher *m, ag_error *err) {
  return m->compiled->deferred ? ag_matcher_settle(m, err) : AG_OK;
}

void ag_matcher_reset(ag_matcher *m) {
  ag_forget_verdicts(m);
  ag_parser_truncate(&m->parser, 1);
  m->steps.len = 0;
  m->stopped = false;
}

/* Scans bytes within the accept time budget; on rejection (or an error, such
 * as AG_ERR_TIMEOUT) restores the parser and sets *ok = false. */
static ag_status ag_scan_all(ag_matcher *m, const uint8_t *bytes, size_t len, bool *ok,
                             ag_error *err) {
  uint32_t before = ag_parser_num_sets(&m->parser);
  ag_status st = AG_OK;
  *ok = true;
  ag_parser_set_deadline(&m->parser, m->accept_budget > 0 ? ag_now() + m->accept_budget : 0);
  for (size_t i = 0; i < len && *ok && !st; i++) {
    st = ag_parser_scan(&m->parser, bytes[i], ok, err);
    if (st || !*ok) ag_parser_truncate(&m->parser, before);
  }
  ag_parser_set_deadline(&m->parser, 0);
  if (st) *ok = false;
  if (st == AG_ERR_TIMEOUT)
    ag_fail(err, st, -1, "accepting %zu bytes ran past the time budget of %g s; the matcher is unchanged",
            len, m->accept_budget);
  return st;
}

static ag_status ag_check_live(const ag_matcher *m, ag_error *err) {
  if (ag_matcher_is_terminated(m))
    return ag_fail(err, AG_ERR_STATE, -1,
                   "the matcher has terminated; roll back or reset it before accepting more");
  return AG_OK;
}

static ag_status ag_push_step(ag_matcher *m, uint32_t n_sets, bool stop, ag_error *err) {
  if (!ag_vec_push(&m->steps, ((ag_step){n_sets, stop})))
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  return AG_OK;
}

ag_status ag_matcher_accept_token(ag_matcher *m, int32_t id, int *accepted, ag_error *err) {
  *accepted = 0;
  ag_status st = ag_settled(m, err);
  if (st) return st;
  const ag_vocab *v = m->compiled->vocab;
  if (id < 0 || id >= v->mask_size)
    return ag_fail(err, AG_ERR_RANGE, -1, "token id %d is outside the vocabulary [0, %d)", id,
                   v->mask_size);
  if ((st = ag_check_live(m, err))) return st;
  uint32_t before = ag_parser_num_sets(&m->parser);
  if (ag_is_stop(m, id)) {
    if (!ag_parser_can_end(&m->parser)) return AG_OK;
    if ((st = ag_push_step(m, before, true, err))) return st;
    m->stopped = true;
    *accepted = 1;
    return AG_OK;
  }
  if (id >= v->n_tokens || v->kinds[id] != AG_TOKEN_NORMAL) return AG_OK;
  uint32_t len;
  const uint8_t *bytes = ag_vocab_token(v, id, &len);
  if (len == 0) return AG_OK; /* an empty token would make no progress */
  bool ok;
  if ((st = ag_scan_all(m, bytes, len, &ok, err)) || !ok) return st;
  if ((st = ag_push_step(m, before, false, err))) {
    ag_parser_truncate(&m->parser, before);
    return st;
  }
  *accepted = 1;
  return AG_OK;
}

ag_status ag_matcher_accept_bytes(ag_matcher *m, const uint8_t *bytes, size_t len, int *accepted,
                                  ag_error *err) {
  *accepted = 0;
  if (len && !bytes) return ag_fail(err, AG_ERR_INVALID, -1, "null bytes");
  ag_status st = ag_settled(m, err);
  if (!st) st = ag_check_live(m, err);
  if (st) return st;
  uint32_t before = ag_parser_num_sets(&m->parser);
  bool ok;
  if ((st = ag_scan_all(m, bytes, len, &ok, err)) || !ok) return st;
  if ((st = ag_push_step(m, before, false, err))) {
    ag_parser_truncate(&m->parser, before);
    return st;
  }
  *accepted = 1;
  return AG_OK;
}

ag_status ag_matcher_rollback(ag_matcher *m, int32_t n, ag_error *err) {
  if (n < 0 || (size_t)n > m->steps.len)
    return ag_fail(err, AG_ERR_RANGE, -1, "cannot roll back %d steps: %zu accepted", n,
                   m->steps.len);
  ag_status st = ag_settled(m, err);
  if (st || n == 0) return st;
  ag_step first = m->steps.data[m->steps.len - (size_t)n];
  m->steps.len -= (size_t)n;
  ag_forget_verdicts(m);
  ag_parser_truncate(&m->parser, first.n_sets);
  m->stopped = false; /* only the last step can be a stop, and it is gone */
  return AG_OK;
}


/* The sorted positions a mask walk checks: every one (both NULL), those set in
 * a bitset, or those of an ascending list. */
typedef struct ag_candidates {
  const uint32_t *bits;
  const int32_t *list;
  int32_t n_list, next; /* next: the first list entry not yet passed */
} ag_candidates;

/* The first candidate position >= i, or n. */
static int32_t ag_next_position(ag_candidates *c, int32_t i, int32_t n) {
  if (c->list) {
    while (c->next < c->n_list && c->list[c->next] < i) c->next++;
    return c->next < c->n_list ? c->list[c->next] : n;
  }
  return c->bits ? ag_next_bit(c->bits, i, n) : i;
}

/*
 * The scannable states of the parser's current set, at most AG_BYTE_PATHS of
 * them, as a mask walk tries them on the rest of a token (ag_stays_in_rule);
 * n < 0 until gathered for the set (a scan or truncation makes them stale).
 */
#define AG_BYTE_PATHS 8
typedef struct ag_byte_paths {
  int32_t states[AG_BYTE_PATHS];
  int n;
} ag_byte_paths;

static void ag_gather_byte_paths(const ag_parser *p, ag_byte_paths *b) {
  const ag_grammar *g = p->g;
  b->n = 0;
  for (uint32_t it = p->set_start.data[p->set_start.len - 1];
       it < p->items.len && b->n < AG_BYTE_PATHS; it++) {
    int32_t s = p->items.data[it].state;
    /* a counted rule's bytes may pass its max: only the parser knows */
    if (g->states[s].byte_begin == g->states[s].byte_end || g->states[s].counted) continue;
    bool seen = false;
    for (int k = 0; k < b->n && !seen; k++) seen = b->states[k] == s;
    if (!seen) b->states[b->n++] = s;
  }
}

/*
 * Whether some item of the parser's current set scans all of bytes[0..n) by
 * byte edges of its own rule. Such a chain of states is a path the parser takes
 * too (a scan steps each item's state and keeps its origin and count), so the
 * token is allowed without building its Earley sets: a few nanoseconds a byte
 * against the parser's hundred. False proves nothing (the path may need a
 * completion or a prediction): the parser decides then. This is what makes a
 * token that leaves a rule into free text cheap, as `>\n` after `</tool_call`
 * is: the bytes after the rule's end run inside the dispatch rule.
 */
static bool ag_stays_in_rule(const ag_parser *p, ag_byte_paths *b, const uint8_t *bytes,
                             uint32_t n) {
  if (b->n < 0) ag_gather_byte_paths(p, b);
  for (int k = 0; k < b->n; k++) {
    int32_t s = b->states[k];
    uint32_t i = 0;
    while (i < n && (s = ag_state_step(p->g, s, bytes[i])) >= 0) i++;
    if (i == n) return true;
  }
  return false;
}

/*
 * The state of the current set's only item when that item is all the set holds
 * after a byte of the state's self loop: no rule edge to predict by, no end to
 * complete, no count to raise. A token's leading bytes that loop so leave the
 * parser where it was, so the token's verdict is its rest's: inside a JSON
 * string, `abc",` is decided by `",` (the few hundred uncertain tokens that
 * close a string, checked at the first token of every string value).
 *
 * An item of a counted rule's byte automaton (a JSON string's length counted)
 * whose count decides nothing for a token (ag_key_count) is another such loop
 * when a byte of its self loop that no other item takes leaves the set's
 * scannable items as they were, its count aside (ag_loop_keeps_set): its end
 * completes what the set holds already. Then every such byte does, and the
 * rest decides. `other` gets the bytes the other items take (none for a lone item).
 */
/* The copies item `it` may still begin below `max`, those its token's last
 * state still needs included (ag_copy_count, ag_copies.h). */
static int64_t ag_item_room(int32_t max, ag_item it) { return (int64_t)max - it.count; }

/* The room at which a counted rule's cached classes serve as they are: the
 * longest token begins at most one copy a byte, and its last state may need
 * up to rest_max more. */
static int64_t ag_room_enough(const ag_matcher *m, const ag_repeat_bounds *r) {
  return (int64_t)m->compiled->vocab->max_token_len + r->rest_max;
}

/* An item's count as the kept verdicts key it: -1 where it decides nothing, in a
 * counted rule's byte automaton past min and room for the longest token below
 * max (a token leaving the rule then ends it past min; one inside fits). */
static int32_t ag_key_count(const ag_matcher *m, ag_item it) {
  const ag_grammar *g = m->compiled->grammar;
  const ag_state *st = &g->states[it.state];
  if (!st->counted || st->byte_begin == st->byte_end) return it.count;
  const ag_repeat_bounds *r = &g->rule_repeat[g->state_rule[it.state]];
  if (it.count < r->min) return it.count;
  return r->max >= 0 && ag_item_room(r->max, it) < ag_room_enough(m, r) ? it.count : -1;
}

#define AG_LOOP_ITEMS 16 /* the most scannable items ag_loop_keeps_set compares */

/* The current set's scannable items, counts as ag_key_count keys them; false past max. */
static bool ag_scannable_items(const ag_matcher *m, ag_item *out, size_t max, size_t *n) {
  const ag_parser *p = &m->parser;
  *n = 0;
  for (uint32_t it = p->set_start.data[p->set_start.len - 1]; it < p->items.len; it++) {
    ag_item item = p->items.data[it];
    const ag_state *st = &p->g->states[item.state];
    if (st->byte_begin == st->byte_end) continue;
    if (*n == max) return false;
    item.count = ag_key_count(m, item);
    out[(*n)++] = item;
  }
  return true;
}

/* Whether scanning byte c leaves the same scannable items (as sets). */
static bool ag_loop_keeps_set(ag_matcher *m, uint8_t c) {
  ag_item before[AG_LOOP_ITEMS], after[AG_LOOP_ITEMS];
  size_t nb, na;
  if (!ag_scannable_items(m, before, AG_LOOP_ITEMS, &nb)) return false;
  uint32_t base = ag_parser_num_sets(&m->parser);
  bool ok = false, same = false;
  ag_error err;
  if (ag_parser_scan(&m->parser, c, &ok, &err) != AG_OK || !ok) return false;
  if (ag_scannable_items(m, after, AG_LOOP_ITEMS, &na) && na == nb) {
    same = true;
    for (size_t i = 0; i < na && same; i++) {
      bool found = false;
      for (size_t j = 0; j < nb && !found; j++)
        found = after[i].state == before[j].state && after[i].origin == before[j].origin &&
                after[i].count == before[j].count;
      same = found;
    }
  }
  ag_parser_truncate(&m->parser, base);
  return same;
}

static int32_t ag_loop_state(ag_matcher *m, uint32_t other[8]) {
  const ag_parser *p = &m->parser;
  const ag_grammar *g = p->g;
  uint32_t begin = p->set_start.data[p->set_start.len - 1];
  memset(other, 0, 8 * sizeof *other);
  if (p->items.len - begin == 1) {
    int32_t s = p->items.data[begin].state;
    const ag_state *st = &g->states[s];
    return st->rule_begin == st->rule_end && !st->accepting && !st->counted ? s : -1;
  }
  int32_t loop = -1;
  for (uint32_t it = begin; it < p->items.len; it++) {
    ag_item item = p->items.data[it];
    const ag_state *o = &g->states[item.state];
    if (loop < 0 && o->counted && o->byte_begin != o->byte_end && ag_key_count(m, item) == -1) {
      loop = item.state;
      continue;
    }
    for (uint32_t e = o->byte_begin; e < o->byte_end; e++)
      ag_byteset_add_range(other, g->byte_edges[e].lo, g->byte_edges[e].hi);
  }
  if (loop < 0) return -1;
  for (int c = 0; c < 256; c++) /* the first byte of the loop that no other item takes */
    if (ag_state_step(g, loop, (uint8_t)c) == loop && !ag_bit(other, c))
      return ag_loop_keeps_set(m, (uint8_t)c) ? loop : -1;
  return -1;
}

/* The bytes of tok[0..len) that the loop state's self loop takes first, none of
 * them a byte another item takes (ag_loop_state). */
static uint32_t ag_loop_prefix(const ag_grammar *g, int32_t loop, const uint32_t other[8], const uint8_t *tok,
                               uint32_t len) {
  uint32_t k = 0;
  while (loop >= 0 && k < len && ag_state_step(g, loop, tok[k]) == loop && !ag_bit(other, tok[k])) k++;
  return k;
}

/*
 * Checks the tokens at the candidate sorted positions against the real parser
 * and marks the allowed ones; tokens already marked are skipped. A token reuses
 * the Earley sets of the bytes it shares with the previous one; once byte
 * `depth` fails, following tokens that share the first depth+1 bytes are
 * skipped (found with the vocabulary's LCP array). With `record`, the ids of
 * the tokens the walk allows are also appended to its list (ag_verdicts).
 * With `byte_paths`, a token whose rest stays inside one item's rule is taken
 * without the parser (ag_stays_in_rule), and a lone looping item's bytes are
 * not scanned (ag_lone_loop_state); the direct fill, the oracle of the cached
 * one, goes without both, so the property tests compare the two ways.
 */
static ag_status ag_walk_tokens(ag_matcher *m, ag_candidates *candidates, uint32_t *mask,
                                ag_verdicts *record, bool byte_paths, ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  ag_parser *p = &m->parser;
  uint32_t base = ag_parser_num_sets(p), depth = 0;
  ag_status st = AG_OK;
  int32_t n = v->n_sorted, walked = 0;
  uint32_t other[8];
  int32_t loop = byte_paths ? ag_loop_state(m, other) : -1;
  const uint8_t *held = NULL; /* the bytes the parser's sets past `base` hold: held[0..depth) */
  ag_byte_paths paths = {.n = -1};
  for (int32_t i = ag_next_position(candidates, 0, n), prev = -1; i < n;) {
    if (m->deadline > 0 && (++walked & 1023) == 0 && (st = ag_check_deadline(m->deadline, err)))
      goto done;
    if (ag_bit(mask, v->sorted_ids[i])) {
      i = ag_next_position(candidates, i + 1, n);
      continue;
    }
    uint32_t len;
    const uint8_t *full = ag_vocab_sorted_token(v, i, &len);
    uint32_t skip = ag_loop_prefix(p->g, loop, other, full, len), l = 0;
    const uint8_t *tok = full + skip; /* what the parser scans: the rest */
    len -= skip;
    if (loop < 0) {
      l = prev < 0 ? 0 : ag_vocab_common_prefix(v, prev, i);
    } else {
      while (held && l < depth && l < len && held[l] == tok[l]) l++;
    }
    if (l < depth) {
      ag_parser_truncate(p, base + l);
      depth = l;
      paths.n = -1;
    }
    prev = i;
    held = tok;
    /* At depth 0 the classes have decided every path inside a rule already. The
     * parser's sets stay at `depth` when the rest goes by bytes. */
    bool ok = true;
    bool by_bytes = byte_paths && depth > 0 && depth < len &&
                    ag_stays_in_rule(p, &paths, tok + depth, len - depth);
    while (!by_bytes && depth < len && ok) {
      if ((st = ag_parser_scan(p, tok[depth], &ok, err))) goto done;
      depth += ok;
      paths.n = -1;
    }
    int32_t j = i + 1;
    if (ok) ag_bit_set(mask, v->sorted_ids[i]);
    if (ok && record && !ag_vec_push(&record->accepted, v->sorted_ids[i])) {
      st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
      goto done;
    }
    if (!ok) /* byte full[skip + depth] failed: so does every token sharing the bytes up to it */
      j = ag_vocab_prefix_end(v, i, skip + depth + 1);
    i = ag_next_position(candidates, j, n);
  }
done:
  ag_parser_truncate(p, base);
  return st;
}

/* The position bitsets (pos_bits, accepted_pos), their first pos_words words
 * cleared for a walk. Made on first need: most matchers never walk the
 * uncertain tokens of several states, and for a large vocabulary the two are
 * tens of kilobytes to zero at every matcher's start. */
static ag_status ag_pos_sets_cleared(ag_matcher *m, size_t pos_words, ag_error *err) {
  if (m->pos_bits) {
    memset(m->pos_bits, 0, sizeof *m->pos_bits * pos_words);
    memset(m->accepted_pos, 0, sizeof *m->accepted_pos * pos_words);
    return AG_OK;
  }
  size_t all = ag_pos_words(m->compiled->vocab);
  m->pos_bits = calloc(all, sizeof *m->pos_bits);
  m->accepted_pos = calloc(all, sizeof *m->accepted_pos);
  if (m->pos_bits && m->accepted_pos) return AG_OK;
  free(m->pos_bits);
  free(m->accepted_pos);
  m->pos_bits = m->accepted_pos = NULL;
  return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
}

/* Marks a state's uncertain positions in the position bitset. */
static void ag_mark_uncertain(ag_matcher *m, const ag_state_masks *e) {
  if (e->uncertain_bits) {
    size_t words = ((size_t)m->compiled->vocab->n_sorted + 31) / 32;
    for (size_t w = 0; w < words; w++) m->pos_bits[w] |= e->uncertain_bits[w];
    return;
  }
  for (int32_t k = 0; k < e->n_uncertain; k++) {
    int32_t i = e->uncertain[k];
    ag_bit_set(m->pos_bits, i);
  }
}

/* dst |= src over n words. Apart, with restrict, so that it stays vectorized
 * whatever the compiler inlines into the caller: each fill ORs a 128k-token
 * vocabulary's 4k words per scannable state. */
static void ag_or_words(uint32_t *restrict dst, const uint32_t *restrict src, size_t n) {
  for (size_t w = 0; w < n; w++) dst[w] |= src[w];
}

/* The most copies a token may still begin from state s of a counted rule's byte
 * automaton, the largest over the current set's items in s; -1 (any) for other
 * states, an unbounded repeat, or room for the longest token (each byte begins
 * one copy at most; ag_item_room). */
static int32_t ag_copy_room(const ag_matcher *m, int32_t s) {
  const ag_grammar *g = m->compiled->grammar;
  const ag_repeat_bounds *r = &g->rule_repeat[g->state_rule[s]];
  if (!g->states[s].counted || r->max < 0) return -1;
  const ag_parser *p = &m->parser;
  int64_t room = -1;
  for (uint32_t it = p->set_start.data[p->set_start.len - 1]; it < p->items.len; it++) {
    ag_item item = p->items.data[it];
    if (item.state != s) continue;
    int64_t x = ag_item_room(r->max, item);
    if (x > room) room = x;
  }
  return room < 0 || room >= ag_room_enough(m, r) ? -1 : (int32_t)room;
}

/* Collects the classes of the distinct scannable states in the current Earley set. */
static ag_status ag_collect_classes(ag_matcher *m, bool *any_uncertain, ag_error *err) {
  const ag_grammar *g = m->compiled->grammar;
  const ag_parser *p = &m->parser;
  if (++m->stamp == 0) {
    memset(m->state_stamp, 0, sizeof *m->state_stamp * (size_t)g->n_states);
    m->stamp = 1;
  }
  m->classes.len = 0;
  m->class_states.len = 0;
  m->class_room.len = 0;
  *any_uncertain = false;
  /* Last items first: an item's predictions come after it, and a state's first
   * classification uses its predictions' classes when they are known. */
  uint32_t begin = p->set_start.data[p->set_start.len - 1];
  for (uint32_t it = p->items.len; it-- > begin;) {
    int32_t s = p->items.data[it].state;
    if (m->state_stamp[s] == m->stamp || g->states[s].byte_begin == g->states[s].byte_end) continue;
    m->state_stamp[s] = m->stamp;
    ag_background_note_visit(m->compiled, s); /* a tool's part entered: the worker goes there */
    const ag_state_masks *e;
    ag_status st = ag_compiled_state_masks(m->compiled, s, m->deadline, &e, err);
    if (st) return st;
    if (!ag_vec_push(&m->classes, e) || !ag_vec_push(&m->class_states, s) ||
        !ag_vec_push(&m->class_room, ag_copy_room(m, s)))
      return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
    *any_uncertain = *any_uncertain || e->n_uncertain > 0;
  }
  return AG_OK;
}

/* Whether state s's class (among the current ones) leaves tokens uncertain. */
static bool ag_state_uncertain(const ag_matcher *m, int32_t s) {
  for (size_t k = 0; k < m->classes.len; k++)
    if (m->class_states.data[k] == s) return m->classes.data[k]->n_uncertain > 0;
  return false;
}

/* The slot of the verdicts kept for the current set's items with uncertain
 * tokens among the current classes: a valid one to use, an emptied one to
 * record into, or NULL when they are not kept (too many items or classes). */
static ag_verdicts *ag_kept_verdicts(ag_matcher *m) {
  size_t n = m->classes.len, n_items = 0;
  if (n > AG_VERDICT_CLASSES) return NULL;
  const ag_parser *p = &m->parser;
  ag_item items[AG_VERDICT_ITEMS];
  uint32_t h = 0;
  for (uint32_t it = p->set_start.data[p->set_start.len - 1]; it < p->items.len; it++) {
    ag_item item = p->items.data[it];
    if (!ag_state_uncertain(m, item.state)) continue;
    if (n_items == AG_VERDICT_ITEMS) return NULL;
    item.count = ag_key_count(m, item);
    items[n_items++] = item;
    h = h * 31 + ((uint32_t)item.state * 2654435761u ^ (uint32_t)item.origin * 40503u ^ (uint32_t)item.count);
  }
  ag_verdicts *slot = &m->verdicts[h % AG_VERDICT_SLOTS];
  if (slot->valid && slot->n_items == n_items && slot->n_classes == n &&
      memcmp(slot->items, items, n_items * sizeof *items) == 0 &&
      memcmp(slot->classes, m->classes.data, n * sizeof *slot->classes) == 0)
    return slot;
  slot->valid = false; /* replaced: recorded into next */
  slot->n_items = n_items;
  memcpy(slot->items, items, n_items * sizeof *items);
  slot->n_classes = n;
  memcpy(slot->classes, m->classes.data, n * sizeof *slot->classes);
  slot->accepted.len = 0;
  return slot;
}

/* Checks the candidate tokens against the parser, through kept verdicts when
 * the current set's are known, else recording them when they may be kept. */
static ag_status ag_walk_kept(ag_matcher *m, ag_candidates *candidates, uint32_t *mask, ag_error *err) {
  ag_verdicts *kept = ag_kept_verdicts(m);
  if (kept && kept->valid) {
    for (size_t k = 0; k < kept->accepted.len; k++) ag_bit_set(mask, kept->accepted.data[k]);
    return AG_OK;
  }
  ag_status st = ag_walk_tokens(m, candidates, mask, kept, true, err);
  if (kept && !st) kept->valid = true;
  return st;
}

/* Adds what a class near its counted max allows: its accepted tokens that begin
 * at most `room` copies (ag_copies.h); the exits that begin more are left to
 * the parser, marked in pos_bits. */
static ag_status ag_add_bounded(ag_matcher *m, size_t k, uint32_t *mask, size_t words, ag_error *err) {
  const ag_state_masks *e = m->classes.data[k];
  const ag_vocab *v = m->compiled->vocab;
  int32_t room = m->class_room.data[k];
  const ag_copies *t;
  ag_status st = ag_compiled_state_copies(m->compiled, m->class_states.data[k], &t, err);
  if (st) return st;
  if (e->accepted) {
    if (!m->scratch && !(m->scratch = malloc(words * sizeof *m->scratch)))
      return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
    memcpy(m->scratch, e->accepted, words * sizeof *m->scratch);
    int32_t from = room < t->max_copies ? t->first[room + 1] : t->n_inside;
    for (int32_t q = from; q < t->n_inside; q++) ag_bit_clear(m->scratch, v->sorted_ids[t->pos[q]]);
    int64_t over = (int64_t)room + t->adj + 1; /* plain tokens of more characters begin too many */
    if (t->plain && over <= v->max_plain_chars)
      for (int32_t q = v->plain_chars_first[over]; q < v->plain_chars_first[v->max_plain_chars + 1]; q++)
        ag_bit_clear(m->scratch, v->sorted_ids[v->plain_by_chars[q]]);
    ag_or_words(mask, m->scratch, words);
  } else {
    for (int32_t j = 0; j < e->n_accepted_list; j++)
      if (ag_copies_at(t, v, e->accepted_list[j]) <= (uint32_t)room)
        ag_bit_set(mask, v->sorted_ids[e->accepted_list[j]]);
  }
  for (int32_t q = 0; q < t->n_exits; q++)
    if (t->copies_at[t->exits[q]] > (uint32_t)room) ag_bit_set(m->pos_bits, t->exits[q]);
  return AG_OK;
}

/* The mask when some class is near its counted max (ag_copy_room): the other
 * classes' accepted tokens, the bounded classes' that fit, then every uncertain
 * token and bounded exit checked against the parser (no kept verdicts: what the
 * bounded classes mark changes with the count). */
static ag_status ag_bounded_mask(ag_matcher *m, uint32_t *mask, size_t words, ag_error *err) {
  const int32_t *ids = m->compiled->vocab->sorted_ids;
  size_t pos_words = ((size_t)m->compiled->vocab->n_sorted + 31) / 32;
  memset(mask, 0, words * sizeof *mask);
  ag_status st = ag_pos_sets_cleared(m, pos_words, err);
  if (st) return st;
  for (size_t k = 0; k < m->classes.len; k++) {
    const ag_state_masks *e = m->classes.data[k];
    ag_mark_uncertain(m, e);
    if (m->class_room.data[k] >= 0) {
      if ((st = ag_add_bounded(m, k, mask, words, err))) return st;
    } else if (e->accepted) {
      ag_or_words(mask, e->accepted, words);
      for (size_t w = 0; w < pos_words; w++) m->accepted_pos[w] |= e->accepted_pos[w];
    } else {
      for (int32_t j = 0; j < e->n_accepted_list; j++) {
        ag_bit_set(mask, ids[e->accepted_list[j]]);
        ag_bit_set(m->accepted_pos, e->accepted_list[j]);
      }
    }
  }
  for (size_t w = 0; w < pos_words; w++) m->pos_bits[w] &= ~m->accepted_pos[w];
  ag_candidates bits = {m->pos_bits, NULL, 0, 0};
  return ag_walk_tokens(m, &bits, mask, NULL, true, err);
}

static bool ag_any_bounded(const ag_matcher *m) {
  for (size_t k = 0; k < m->class_room.len; k++)
    if (m->class_room.data[k] >= 0) return true;
  return false;
}

/* The union of the cached accepted sets of every scannable state in the current
 * Earley set, then the uncertain tokens checked against the parser. Without
 * uncertain tokens (the common case) the union is the whole answer. */
static ag_status ag_cached_mask(ag_matcher *m, uint32_t *mask, size_t words, ag_error *err) {
  bool any_uncertain;
  ag_status st = ag_collect_classes(m, &any_uncertain, err);
  if (!st && ag_any_bounded(m)) st = ag_bounded_mask(m, mask, words, err);
  if (st) { /* a first visit timed out, say: no token allowed, not the last mask's */
    memset(mask, 0, words * sizeof *mask);
    return st;
  }
  if (ag_any_bounded(m)) return AG_OK;
  /* The first class's bitset is copied over the mask, the others ORed in, and
   * listed tokens set one by one (ag_state_masks); without a first bitset to
   * copy, the mask is cleared first. */
  if (!m->classes.len || !m->classes.data[0]->accepted) memset(mask, 0, words * sizeof *mask);
  const int32_t *ids = m->compiled->vocab->sorted_ids;
  for (size_t k = 0; k < m->classes.len; k++) {
    const ag_state_masks *e = m->classes.data[k];
    if (!e->accepted) {
      for (int32_t j = 0; j < e->n_accepted_list; j++) ag_bit_set(mask, ids[e->accepted_list[j]]);
    } else if (k == 0) {
      memcpy(mask, e->accepted, words * sizeof *mask);
    } else {
      ag_or_words(mask, e->accepted, words);
    }
  }
  if (!any_uncertain) return AG_OK;
  /* One state with uncertain tokens, kept as a list (inside a JSON string: the
   * few hundred that close it): the list is walked as it is. The tokens other
   * states accept are marked already, and skipped. */
  const ag_state_masks *only = NULL;
  size_t n_with = 0;
  for (size_t k = 0; k < m->classes.len; k++)
    if (m->classes.data[k]->n_uncertain > 0) {
      only = m->classes.data[k];
      n_with++;
    }
  if (n_with == 1 && !only->uncertain_bits) { /* an ascending list (ag_mask_cache.h) */
    ag_candidates list = {NULL, only->uncertain, only->n_uncertain, 0};
    return ag_walk_kept(m, &list, mask, err);
  }
  size_t pos_words = ((size_t)m->compiled->vocab->n_sorted + 31) / 32;
  if ((st = ag_pos_sets_cleared(m, pos_words, err))) return st;
  for (size_t k = 0; k < m->classes.len; k++) {
    const ag_state_masks *e = m->classes.data[k];
    if (e->accepted) {
      for (size_t w = 0; w < pos_words; w++) m->accepted_pos[w] |= e->accepted_pos[w];
    } else {
      for (int32_t j = 0; j < e->n_accepted_list; j++) ag_bit_set(m->accepted_pos, e->accepted_list[j]);
    }
    ag_mark_uncertain(m, e);
  }
  /* A token that some state accepts needs no check, however uncertain elsewhere. */
  for (size_t w = 0; w < pos_words; w++) m->pos_bits[w] &= ~m->accepted_pos[w];
  ag_candidates bits = {m->pos_bits, NULL, 0, 0};
  return ag_walk_kept(m, &bits, mask, err);
}

/* Whether the first n bits of mask are all set; stops at the first block with a gap. */
static bool ag_all_set(const uint32_t *mask, int32_t n) {
  int32_t full = n / 32, w = 0;
  /* Free text allows nearly every token, so the gap comes late or never: the
   * words are ANDed 16 at a time (one vector step), then checked. */
  for (; w + 16 <= full; w += 16) {
    uint32_t all = ~0u;
    for (int k = 0; k < 16; k++) all &= mask[w + k];
    if (all != 0xffffffffu) return false;
  }
  for (; w < full; w++)
    if (mask[w] != 0xffffffffu) return false;
  if (n % 32 == 0) return true;
  uint32_t tail = (1u << (n % 32)) - 1;
  return (mask[full] & tail) == tail;
}

static ag_status ag_fill(ag_matcher *m, uint32_t *mask, size_t n_words, int *all_allowed,
                         bool cached, ag_error *err) {
  const ag_vocab *v = m->compiled->vocab;
  size_t need = ((size_t)v->mask_size + 31) / 32;
  *all_allowed = 0;
  if (!mask || n_words < need)
    return ag_fail(err, AG_ERR_INVALID, -1, "bitmask has %zu words; %zu are needed", n_words, need);
  /* The words past the vocabulary's are cleared here, the rest by the path that
   * fills them: a cached mask copies its first state's bitset over them. */
  memset(mask + need, 0, (n_words - need) * sizeof *mask);
  bool terminated = ag_matcher_is_terminated(m);
  if (terminated || !cached) memset(mask, 0, need * sizeof *mask);
  if (!terminated) {
    m->deadline = m->budget > 0 ? ag_now() + m->budget : 0;
    ag_parser_set_deadline(&m->parser, m->deadline); /* one token's scan may be slow too */
    ag_candidates every = {NULL, NULL, 0, 0};
    ag_status st =
        cached ? ag_cached_mask(m, mask, need, err) : ag_walk_tokens(m, &every, mask, NULL, false, err);
    ag_parser_set_deadline(&m->parser, 0);
    m->deadline = 0;
    if (st == AG_ERR_TIMEOUT)
      ag_fail(err, st, -1, "the token mask ran past its time budget of %g s; the matcher is unchanged",
              m->budget);
    if (st) return st;
  }
  /* Stop tokens are decided by whether the grammar can end, never by their text. */
  bool can_stop = terminated || ag_parser_can_end(&m->parser);
  for (int32_t i = 0; i < m->n_stop; i++) {
    int32_t id = m->stop_ids[i];
    uint32_t bit = 1u << (id & 31);
    mask[id >> 5] = can_stop ? (mask[id >> 5] | bit) : (mask[id >> 5] & ~bit);
  }
  *all_allowed = ag_all_set(mask, v->mask_size);
  return AG_OK;
}

ag_status ag_matcher_fill_mask(ag_matcher *m, uint32_t *mask, size_t n_words, int *all_allowed,
                               ag_error *err) {
  return ag_fill(m, mask, n_words, all_allowed, true, err);
}

ag_status ag_matcher_fill_mask_direct(ag_matcher *m, uint32_t *mask, size_t n_words,
                                      int *all_allowed, ag_error *err) {
  return ag_fill(m, mask, n_words, all_allowed, false, err);
}

ag_status ag_matcher_jump_forward(ag_matcher *m, uint8_t *buf, size_t cap, size_t *len,
                                  ag_error *err) {
  *len = 0;
  ag_status st = ag_settled(m, err);
  if (st) return st;
  ag_parser *p = &m->parser;
  uint32_t base = ag_parser_num_sets(p);
  if (ag_matcher_is_terminated(m)) return AG_OK;
  /* Each forced byte costs a scan of the whole Earley set and its closure, which
   * a counted repeat of an ambiguous child can make as large as the count: past a
   * budget of the parser's work (items scanned, closed and advanced), or past the
   * mask time budget, the prefix found so far is returned (still forced, only
   * shorter). */
  uint64_t start = p->work;
  ag_parser_set_deadline(p, m->budget > 0 ? ag_now() + m->budget : 0);
  while (*len < cap && !ag_parser_can_end(p) && p->work - start < AG_JUMP_FORWARD_WORK) {
    uint32_t bits[8];
    if (ag_parser_next_bytes(p, bits) != 1) break;
    int b = 0;
    while (!ag_bit(bits, b)) b++;
    bool ok;
    if ((st = ag_parser_scan(p, (uint8_t)b, &ok, err)) || !ok) break;
    buf[(*len)++] = (uint8_t)b;
  }
  ag_parser_set_deadline(p, 0);
  ag_parser_truncate(p, base);
  return st == AG_ERR_TIMEOUT ? AG_OK : st;
}

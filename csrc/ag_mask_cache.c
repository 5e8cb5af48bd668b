/* ag_mask_cache.c - computing and publishing per-state token classes (see the header). */
#include "ag_mask_cache.h"

#include "ag_class_tokens.h"
#include "ag_class_key.h"
#include "ag_depth_equiv.h"
#include "ag_dispatch.h"
#include "ag_earley.h"
#include "ag_follow.h"
#include "ag_plain_tokens.h"
#include "ag_walk_rows.h"

/* How a rule's states classify the vocabulary. Every mode walks the rule's own
 * byte automaton; they differ in what a rule edge reached after a byte means.
 *   BYTES     the rule has no rule edge.
 *   DISPATCH  a dispatch rule: its rule edges follow a complete trigger, so they
 *             are exits (a token failing past one is uncertain) and the classes
 *             depend on the rule alone: shared across grammars by key.
 *   HYBRID    any other rule: a token failing past a rule edge is resolved by the
 *             Earley parser from the item, so the classes are exact; only those
 *             tokens pay for the parser, every other one a byte step each. A
 *             state that can reach no rule edge walks as a BYTES state (keyed).
 * For DISPATCH a rule edge of the classified state itself is not an exit: its
 * rule's start is predicted into the same Earley set and classifies the tokens
 * that enter it. For HYBRID it is: resolving such tokens once here (a JSON
 * value followed by the parent's ',' or '}', as in '",') is what keeps them out
 * of the uncertain tokens that every mask of the state would check again. */
enum { AG_WALK_BYTES = 0, AG_WALK_DISPATCH = 1, AG_WALK_HYBRID = 2 };

struct ag_mask_cache {
  /* The states this cache holds: [first_state, n_states). A linked grammar's part
   * states come first and are served by the parts' own caches (ag_compiled.c), so
   * a request for 500 tools allocates entries for its own few states only. */
  int32_t first_state, n_states;
  _Atomic(ag_state_masks *) *entries; /* [n_states - first_state], NULL until computed */
  int32_t n_rules;
  /* [n_rules] a dispatch rule's safe tokens as a sorted-position bitset, NULL
   * until computed; the array is NULL when the grammar has no dispatch rule. */
  _Atomic(const uint32_t *) *safe;
  uint32_t **safe_owned; /* [n_rules] the sets this cache computed itself (the vocabulary's was full) */
  /* [n_rules] how the rule's states classify tokens (AG_WALK_*); the classes
   * of BYTES and DISPATCH rules are shared across grammars by key. */
  uint8_t *rule_walk;
  _Atomic(uint32_t *) follow; /* ag_grammar_follow, computed at the first classification */
  /* [n_rules] BYTES rules: how many of the rule's states have classes, and the
   * levels of equivalence of its states (ag_depth_equiv.h), built when a second
   * state of the rule is classified; NULL until then. */
  atomic_int *rule_classified;
  _Atomic(ag_depth_equiv *) *equiv;
  atomic_bool *equiv_none; /* [n_rules] the rule is not compared (ag_depth_equiv_build) */
  atomic_llong n_walked, n_derived, n_shared; /* published entries, by origin */
  atomic_llong n_plain; /* walks that took the plain tokens at once (ag_plain_tokens.h) */
  atomic_llong n_classed; /* walks that took their loop class's tokens at once (ag_class_tokens.h) */
  atomic_size_t bytes;
};

/* The entry of state s, NULL when s is not held here (a part's state). */
static _Atomic(ag_state_masks *) *ag_slot(ag_mask_cache *c, int32_t s) {
  return s >= c->first_state && s < c->n_states ? &c->entries[s - c->first_state] : NULL;
}

/* The published classes of state s, NULL when not computed or not held here. */
static const ag_state_masks *ag_entry(ag_mask_cache *c, int32_t s) {
  _Atomic(ag_state_masks *) *slot = ag_slot(c, s);
  return slot ? atomic_load_explicit(slot, memory_order_acquire) : NULL;
}

ag_status ag_mask_cache_new(const ag_grammar *g, ag_mask_cache **out, ag_error *err) {
  *out = NULL;
  int32_t first = g->n_parts ? g->part_state_begin[g->n_parts] : 0;
  int32_t n_own = g->n_states - first;
  ag_mask_cache *c = calloc(1, sizeof *c);
  if (!c) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  c->entries = malloc((size_t)(n_own ? n_own : 1) * sizeof *c->entries);
  c->rule_walk = malloc((size_t)g->n_rules);
  c->rule_classified = calloc((size_t)g->n_rules + 1, sizeof *c->rule_classified);
  c->equiv = calloc((size_t)g->n_rules + 1, sizeof *c->equiv);
  c->equiv_none = calloc((size_t)g->n_rules + 1, sizeof *c->equiv_none);
  if (g->rule_dispatch) {
    c->safe = calloc((size_t)g->n_rules, sizeof *c->safe);
    c->safe_owned = calloc((size_t)g->n_rules, sizeof *c->safe_owned);
  }
  if (!c->entries || !c->rule_walk || !c->rule_classified || !c->equiv || !c->equiv_none ||
      (g->rule_dispatch && (!c->safe || !c->safe_owned))) {
    free(c->rule_classified);
    free(c->equiv);
    free(c->equiv_none);
    free(c->entries);
    free(c->rule_walk);
    free(c->safe);
    free(c->safe_owned);
    free(c);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  for (int32_t r = 0; r < g->n_rules; r++)
    c->rule_walk[r] = g->rule_dispatch && g->rule_dispatch[r] ? AG_WALK_DISPATCH : AG_WALK_BYTES;
  /* Only the rules of own states are ever classified here (their walks read no
   * other rule's mode), so part rules keep BYTES. */
  for (int32_t s = first; s < g->n_states; s++) {
    int32_t r = g->state_rule[s];
    if (g->states[s].rule_begin != g->states[s].rule_end && c->rule_walk[r] == AG_WALK_BYTES)
      c->rule_walk[r] = AG_WALK_HYBRID;
  }
  c->first_state = first;
  c->n_states = g->n_states;
  c->n_rules = g->n_rules;
  for (int32_t i = 0; i < n_own; i++) atomic_init(&c->entries[i], NULL);
  atomic_init(&c->n_walked, 0);
  atomic_init(&c->n_derived, 0);
  atomic_init(&c->n_shared, 0);
  atomic_init(&c->n_plain, 0);
  atomic_init(&c->n_classed, 0);
  for (int32_t r = 0; r < c->n_rules; r++) {
    atomic_init(&c->rule_classified[r], 0);
    atomic_init(&c->equiv[r], NULL);
    atomic_init(&c->equiv_none[r], g->rule_trie && g->rule_trie[r]); /* see ag_grammar.rule_trie */
  }
  if (c->safe)
    for (int32_t r = 0; r < c->n_rules; r++) atomic_init(&c->safe[r], NULL);
  size_t safe_bytes = c->safe ? (size_t)c->n_rules * sizeof *c->safe : 0;
  size_t rule_bytes = (size_t)c->n_rules * (1 + sizeof *c->rule_classified + sizeof *c->equiv +
                                            sizeof *c->equiv_none);
  atomic_init(&c->bytes, sizeof *c + (size_t)n_own * sizeof *c->entries + safe_bytes + rule_bytes);
  *out = c;
  return AG_OK;
}

/* Frees an entry this grammar's cache owns (shared ones belong to the vocabulary). */
static void ag_state_masks_free(ag_state_masks *e) {
  if (e && !e->shared) ag_state_masks_destroy(e);
}

/* The vocabulary cache's destructor for shared classes. */
static void ag_destroy_shared_masks(void *e) { ag_state_masks_destroy(e); }

void ag_state_masks_destroy(ag_state_masks *e) {
  if (!e) return;
  free(e->accepted);
  free(e->accepted_pos);
  free(e->accepted_list);
  free(e->uncertain);
  free(e->uncertain_bits);
  free(e);
}

void ag_mask_cache_free(ag_mask_cache *c) {
  if (!c) return;
  for (int32_t i = 0; i < c->n_states - c->first_state; i++)
    ag_state_masks_free(atomic_load(&c->entries[i]));
  if (c->safe_owned)
    for (int32_t r = 0; r < c->n_rules; r++) free(c->safe_owned[r]);
  free(c->safe_owned);
  free(c->safe);
  free(atomic_load(&c->follow));
  for (int32_t r = 0; r < c->n_rules; r++) ag_depth_equiv_free(atomic_load(&c->equiv[r]));
  free(c->equiv);
  free(c->equiv_none);
  free(c->rule_classified);
  free(c->rule_walk);
  free(c->entries);
  free(c);
}

size_t ag_mask_cache_bytes(const ag_mask_cache *c) { return atomic_load(&((ag_mask_cache *)c)->bytes); }

void ag_mask_cache_add_stats(const ag_mask_cache *cache, ag_cache_stats *out) {
  ag_mask_cache *c = (ag_mask_cache *)cache; /* atomics are read through a mutable pointer */
  out->walked += atomic_load(&c->n_walked);
  out->derived += atomic_load(&c->n_derived);
  out->shared += atomic_load(&c->n_shared);
  out->plain += atomic_load(&c->n_plain);
  out->classed += atomic_load(&c->n_classed);
}

/* An entry of n bytes joins the cache: counted here and in the vocabulary's total. */
static void ag_cache_grow(ag_mask_cache *c, const ag_vocab *v, size_t n) {
  atomic_fetch_add(&c->bytes, n);
  ag_vocab_count(v, n);
}

/* Where the classification walk is after d bytes of the current token: the
 * automaton state (ag_walk_rows_at), and in `reach` AG_CELL_CAN_END (the rule
 * could end, or for DISPATCH an exit was passed, within d bytes), AG_CELL_ENDS
 * (the rule could end, whatever byte came next) and AG_CELL_EXITED (HYBRID: a
 * rule edge was passed). */
typedef struct ag_walk_depth {
  int32_t at;
  uint32_t reach;
} ag_walk_depth;

typedef struct ag_classify {
  const ag_grammar *g;
  int mode;
  ag_walk_rows rows;
  ag_walk_depth *path; /* [max_token_len + 1] */
  /* HYBRID: an Earley parser on the item, started on first need. It holds the
   * first pdepth bytes of the last token it resolved; pshared is the prefix that
   * token shares with the current one (least LCP since). */
  ag_parser parser;
  bool parser_ready;
  uint32_t parser_base, pdepth, pshared;
  uint32_t first[8]; /* the bytes the parser can scan first: others fail at once */
  /* HYBRID with rule edges on the state itself: the tokens some predicted state
   * (a scannable state of the item's closure) leaves uncertain, by position, when
   * every such state's classes are known already (covered). A token the state's
   * own bytes reject, and no predicted state leaves uncertain, cannot cross into
   * the state's rule: predicted states that accept it cover it in the union. */
  uint32_t *kunc;
  bool covered;
  bool own_exit; /* HYBRID, and the classified state has rule edges */
  bool *ecan_end; /* [max_token_len + 1] the item's rule could end, for the parser */
  const uint32_t *follow; /* the rule's FOLLOW set (256 bits); NULL: any byte */
  bool fail_end;          /* the last failed step could have ended the rule first */
  bool fail_ends;         /* ... had any byte been allowed to follow it */
  /* With record_any, the runs of tokens uncertain had any byte been allowed to
   * follow the rule, and not with its FOLLOW set, as (begin, end) positions:
   * with `uncertain`, the classes of the state's "any follow" entry. */
  bool record_any;
  bool skip_dead; /* a rejected run extends over the next bytes rejected alike (ag_skip_dead_bytes) */
  AG_VEC(int32_t) any_extra;
  size_t n_any_extra; /* tokens in those runs */
  int32_t state;
  double deadline; /* 0: none */
  AG_VEC(int32_t) uncertain;
  /* The accepted positions while there are at most AG_ACCEPTED_LIST_MAX and the
   * entry has no bitsets yet (ag_state_masks). */
  AG_VEC(int32_t) accepted;
  ag_state_masks *entry;
} ag_classify;

/* Gives w's entry its accepted bitsets, holding the listed tokens; false when
 * memory ran out. */
static bool ag_accepted_bitsets(ag_classify *w, const ag_vocab *v) {
  ag_state_masks *e = w->entry;
  if (e->accepted) return true;
  if (!(e->accepted = calloc(ag_mask_words(v), sizeof(uint32_t))) ||
      !(e->accepted_pos = calloc(ag_pos_words(v), sizeof(uint32_t))))
    return false;
  for (size_t k = 0; k < w->accepted.len; k++) {
    ag_bit_set(e->accepted, v->sorted_ids[w->accepted.data[k]]);
    ag_bit_set(e->accepted_pos, w->accepted.data[k]);
  }
  ag_vec_free(&w->accepted);
  return true;
}

/* Gives e (which has no accepted tokens yet) bitsets that are copies of `ids`
 * and `pos`: another entry's, or a safe set's (ag_dispatch.h's layout:
 * positions, then ids). Copied over uncleared memory, as both cover every word;
 * false when memory ran out. */
static bool ag_accepted_copy(ag_state_masks *e, const ag_vocab *v, const uint32_t *ids,
                             const uint32_t *pos) {
  if (!(e->accepted = malloc(ag_mask_words(v) * sizeof(uint32_t))) ||
      !(e->accepted_pos = malloc(ag_pos_words(v) * sizeof(uint32_t))))
    return false;
  memcpy(e->accepted, ids, ag_mask_words(v) * sizeof *ids);
  memcpy(e->accepted_pos, pos, ag_pos_words(v) * sizeof *pos);
  return true;
}

/* Marks sorted token i accepted; false when memory ran out. */
static inline bool ag_mark_accepted(ag_classify *w, const ag_vocab *v, int32_t i) {
  ag_state_masks *e = w->entry;
  if (!e->accepted && w->accepted.len < AG_ACCEPTED_LIST_MAX) return ag_vec_push(&w->accepted, i);
  if (!ag_accepted_bitsets(w, v)) return false;
  ag_bit_set(e->accepted, v->sorted_ids[i]);
  ag_bit_set(e->accepted_pos, i);
  return true;
}

/* The first sorted position in [lo, hi) whose byte `depth` is c or above, or hi;
 * the tokens there share their first depth bytes and are longer. */
static int32_t ag_first_byte_from(const ag_vocab *v, int32_t lo, int32_t hi, uint32_t depth,
                                  uint32_t c) {
  uint32_t len;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (ag_vocab_sorted_token(v, mid, &len)[depth] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/*
 * Where a rejected run that ends at `end` may extend to: token i was rejected at
 * byte `depth`, and the tokens after its run that share its first depth bytes
 * are sorted by their next byte. Those whose next byte has no edge from the
 * state there, which is not accepting (no end flag on any byte), are rejected
 * the same way, so the walk jumps over them by binary search instead of a step
 * per distinct byte: a state with a few edges among many tokens of its prefix
 * (the first letters of a request's tool names, past `"name": "`) is walked in
 * a few steps. Depth 0 is ag_dead_first_bytes's.
 */
static int32_t ag_skip_dead_bytes(const ag_classify *w, const ag_vocab *v, int32_t i, uint32_t depth,
                                  int32_t end) {
  int32_t at = w->path[depth].at, u = at >= 0 ? w->rows.state[at] : ~at;
  const ag_state *st = &w->g->states[u];
  /* an accepting state puts end flags on every byte (ag_walk_rows.c): its tokens may be
   * uncertain, so none is skipped */
  if (depth == 0 || st->accepting || end >= v->n_sorted) return end;
  int32_t run_end = ag_vocab_prefix_end(v, i, depth);
  if (end >= run_end) return end;
  uint32_t len, c = 256;
  const uint32_t first = ag_vocab_sorted_token(v, end, &len)[depth]; /* len > depth */
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) { /* edges in byte order */
    const ag_byte_edge *be = &w->g->byte_edges[e];
    if (be->hi >= first) {
      c = be->lo > first ? be->lo : first;
      break;
    }
  }
  if (c == first) return end;
  if (c == 256) return run_end;
  return ag_first_byte_from(v, end + 1, run_end, depth, c);
}

/*
 * Where a run of tokens the parser rejected may extend to: token i failed at
 * byte `at` > 0 of the parser's walk (ag_earley_resolve), and the tokens after
 * its run that share its first `at` bytes share the parser's sets too. Those
 * whose byte `at` no item of the last set can scan fail there the same way, so
 * the walk jumps over them by binary search instead of a parser resolution per
 * distinct byte: after `"arguments":` a space leads into the arguments' rule,
 * which takes `{` alone, and each of the 140-odd other bytes that follow a
 * space in Llama-3.2's tokens went to the parser, most of the state's first
 * visit, met once per tool called.
 */
static int32_t ag_skip_parser_dead(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t at,
                                   int32_t end) {
  if (at == 0 || end >= v->n_sorted) return end;
  int32_t run_end = ag_vocab_prefix_end(v, i, at);
  if (end >= run_end) return end;
  uint32_t next[8], len;
  ag_parser_next_bytes(&w->parser, next);
  const uint32_t first = ag_vocab_sorted_token(v, end, &len)[at]; /* len > at */
  uint32_t c = first;
  while (c < 256 && !ag_bit(next, (int32_t)c)) c++;
  if (c == first) return end;
  if (c == 256) return run_end;
  return ag_first_byte_from(v, end + 1, run_end, at, c);
}

/* Classifies sorted token i, which failed at byte `depth`, and (unless `single`)
 * every later token sharing its first depth+1 bytes (they fail there too, the
 * same way), or more when rejected (ag_skip_dead_bytes); returns the next
 * position. With `own` (the verdict is the state's own walk), a covered walk
 * stops at a token the cover leaves open: that one goes to the parser. */
static int32_t ag_classify_failed(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t depth,
                                  bool uncertain, bool own, bool single, bool *oom) {
  int32_t end = single ? i + 1 : ag_vocab_prefix_end(v, i, depth + 1);
  if (own && !uncertain && !single && w->skip_dead) end = ag_skip_dead_bytes(w, v, i, depth, end);
  if (!own && !single) end = ag_skip_parser_dead(w, v, i, depth, end);
  if (own && w->covered) end = ag_next_bit(w->kunc, i + 1, end);
  for (int32_t j = i; uncertain && j < end; j++)
    if (!ag_vec_push(&w->uncertain, j)) *oom = true;
  return end;
}

/* Steps the automaton by byte c after d bytes; false when it has no edge. The
 * rule could also end before c, which matters only when c may follow it. */
static bool ag_walk_scan(ag_classify *w, uint32_t d, uint8_t c) {
  uint32_t cell = ag_walk_rows_step(&w->rows, w->path[d].at, c);
  if (cell & AG_CELL_NONE) {
    w->fail_end = cell & AG_CELL_CAN_END;
    w->fail_ends = cell & AG_CELL_ENDS;
    return false;
  }
  w->path[d + 1].at = ag_walk_rows_target(cell);
  w->path[d + 1].reach = w->path[d].reach | (cell & (AG_CELL_CAN_END | AG_CELL_ENDS | AG_CELL_EXITED));
  return true;
}

/* HYBRID: starts the Earley parser on the item, the first time it is needed. */
static ag_status ag_parser_ready(ag_classify *w, ag_error *err) {
  if (w->parser_ready) return AG_OK;
  ag_status st = ag_parser_init_item(&w->parser, w->g, w->state, err);
  if (st) return st;
  w->parser_ready = true;
  ag_parser_set_deadline(&w->parser, w->deadline); /* one token's scan may be slow too */
  w->parser_base = ag_parser_num_sets(&w->parser);
  w->ecan_end[0] = ag_parser_bottom_can_end(&w->parser);
  w->pdepth = 0;
  ag_parser_next_bytes(&w->parser, w->first);
  return AG_OK;
}

/* HYBRID: runs a token through the Earley parser from the item, reusing the
 * prefix it shares with the last token resolved. *depth is where it failed, or
 * len when the whole token was consumed. */
static ag_status ag_earley_resolve(ag_classify *w, const uint8_t *tok, uint32_t len,
                                   uint32_t *depth, ag_error *err) {
  ag_status st = ag_parser_ready(w, err);
  if (st) return st;
  if (len > 0 && !ag_bit(w->first, tok[0])) { /* known without scanning the whole set */
    *depth = 0;
    return AG_OK;
  }
  uint32_t d = w->pshared < w->pdepth ? w->pshared : w->pdepth;
  ag_parser_truncate(&w->parser, w->parser_base + d);
  for (bool ok = true; d < len; d++) {
    st = ag_parser_scan(&w->parser, tok[d], &ok, err);
    if (st) return st;
    if (!ok) break;
    w->ecan_end[d + 1] = w->ecan_end[d] || ag_parser_bottom_can_end(&w->parser);
  }
  w->pdepth = *depth = d;
  w->pshared = UINT32_MAX;
  return AG_OK;
}

/* Fills w->kunc from the classes of the item's predicted scannable states, when
 * all are computed already (the matcher classifies an Earley set's later items,
 * the predicted ones, first). Otherwise leaves w->covered false. */
static ag_status ag_cover_by_predicted(ag_classify *w, ag_mask_cache *c, const ag_vocab *v,
                                       ag_error *err) {
  ag_status st = ag_parser_ready(w, err);
  if (st) return st;
  const ag_parser *p = &w->parser;
  size_t pos_words = ((size_t)v->n_sorted + 31) / 32;
  uint32_t *kunc = calloc(pos_words + 1, sizeof *kunc);
  if (!kunc) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  bool covered = true;
  for (uint32_t it = p->set_start.data[p->set_start.len - 1]; it < p->items.len && covered; it++) {
    int32_t s = p->items.data[it].state;
    const ag_state *st_s = &w->g->states[s];
    if (s == w->state || st_s->byte_begin == st_s->byte_end) continue;
    const ag_state_masks *e = ag_entry(c, s);
    if (!e) {
      covered = false;
    } else if (e->uncertain_bits) {
      for (size_t k = 0; k < pos_words; k++) kunc[k] |= e->uncertain_bits[k];
    } else {
      for (int32_t k = 0; k < e->n_uncertain; k++) ag_bit_set(kunc, e->uncertain[k]);
    }
  }
  if (covered) {
    w->kunc = kunc;
    w->covered = true;
  } else {
    free(kunc);
  }
  return AG_OK;
}

/* Classifies sorted token i, whose first *depth bytes the walk has in place
 * (the prefix it shares with the token walked last); returns the next position
 * to classify: i + 1, or past the run of tokens decided with i (with `single`,
 * always i + 1: the caller is classifying a scattered few). */
static ag_status ag_classify_token(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t *depth,
                                   bool single, int32_t *next, bool *oom, ag_error *err) {
  uint32_t len;
  const uint8_t *tok = ag_vocab_sorted_token(v, i, &len);
  bool ok = true;
  while (*depth < len && (ok = ag_walk_scan(w, *depth, tok[*depth]))) (*depth)++;
  if (ok) {
    if (!ag_mark_accepted(w, v, i)) *oom = true;
    *next = i + 1;
  } else if ((w->path[*depth].reach & AG_CELL_EXITED) ||
             (w->own_exit && (!w->covered || ag_bit(w->kunc, i)))) {
    uint32_t at;
    ag_status st = ag_earley_resolve(w, tok, len, &at, err);
    if (st) return st;
    if (at == len) {
      if (!ag_mark_accepted(w, v, i)) *oom = true;
      *next = i + 1;
    } else {
      *next = ag_classify_failed(w, v, i, at, w->ecan_end[at], false, single, oom);
    }
  } else {
    uint32_t reach = w->path[*depth].reach;
    bool can_end = (reach & AG_CELL_CAN_END) || w->fail_end;
    *next = ag_classify_failed(w, v, i, *depth, can_end, true, single, oom);
    if (w->record_any && !can_end && ((reach & AG_CELL_ENDS) || w->fail_ends)) {
      if (!ag_vec_push(&w->any_extra, i) || !ag_vec_push(&w->any_extra, *next)) *oom = true;
      w->n_any_extra += (size_t)(*next - i);
    }
  }
  return AG_OK;
}

/* The bytes no token may start with in the walk's state: no edge, and the rule
 * cannot end before them (else the verdict is uncertain, not a rejection).
 * Their tokens are rejected a whole first byte at a time, without a call per
 * run: most of a first visit to a state with a few edges (a literal's next
 * byte, say) went to the 200-odd first bytes it rejects. Where the state's own
 * rule edges may send a failed token to the parser, only when the cover by
 * predicted states is known, and then not the first bytes of the tokens it
 * leaves open (those go to the parser); without the cover, none. The cells are
 * peeked, not stepped: no row is built for a target. */
static void ag_dead_first_bytes(ag_classify *w, const ag_vocab *v, uint32_t dead[8]) {
  memset(dead, 0, 8 * sizeof *dead);
  if (w->own_exit && !w->covered) return;
  uint32_t ends = AG_CELL_CAN_END | (w->record_any ? AG_CELL_ENDS : 0);
  for (int c = 0; c < 256; c++) {
    uint32_t cell = ag_walk_rows_peek(&w->rows, w->path[0].at, (uint8_t)c);
    if (!(cell & AG_CELL_NONE) || (cell & ends)) continue;
    int32_t begin = v->first_byte_pos[c], end = v->first_byte_pos[c + 1];
    if (w->own_exit && begin < end && ag_next_bit(w->kunc, begin, end) < end) continue;
    dead[c >> 5] |= 1u << (c & 31);
  }
}

/* The next sorted position from i not in `safe` (NULL: i itself), or n. */
static int32_t ag_next_unsafe(const uint32_t *safe, int32_t i, int32_t n) {
  while (safe && i < n) {
    uint32_t word = ~safe[i >> 5] >> (i & 31);
    if (word) return i + __builtin_ctz(word) < n ? i + __builtin_ctz(word) : n;
    i = (i | 31) + 1;
  }
  return i < n ? i : n;
}

/* Classifies sorted token i, walked after `last` (-1: none) whose first *depth
 * bytes the path holds, and i's first `floor` bytes too: the walk reuses what
 * the two tokens share, and the parser's prefix (pshared) is the least shared
 * since its last token. */
static ag_status ag_classify_after(ag_classify *w, const ag_vocab *v, int32_t last, int32_t i,
                                   uint32_t floor, uint32_t *depth, int32_t *next, bool *oom,
                                   ag_error *err) {
  uint32_t shared = last < 0 ? 0 : ag_vocab_common_prefix(v, last, i);
  if (shared < *depth) *depth = shared;
  if (*depth < floor) *depth = floor;
  if (shared < w->pshared) w->pshared = shared;
  return ag_classify_token(w, v, i, depth, false, next, oom, err);
}

/* Walks the sorted vocabulary once, tokens in `safe` (may be NULL) accepted
 * without a walk (ag_compute copied them into the entry). The walk keeps the
 * path of the last token walked; the next one reuses the prefix they share.
 * Past a run the walk decided, or skipped safe tokens, the two tokens are
 * compared directly rather than taking the least LCP between: a plain-token
 * state skips 95% of the vocabulary, and a run cut short at a token the cover
 * leaves open may end where lcp[i] is above what the two share. */
static ag_status ag_classify_all(ag_classify *w, const ag_vocab *v, const uint32_t *safe,
                                 ag_error *err) {
  uint32_t depth = 0, dead[8];
  bool oom = false;
  w->pshared = UINT32_MAX;
  w->skip_dead = !w->record_any; /* a recorded run must be one failure's (ag_classify_token) */
  ag_dead_first_bytes(w, v, dead);
  int32_t last = -1, resume = 0, checked = 0, b = 0;
  for (int32_t i = ag_next_unsafe(safe, 0, v->n_sorted); i < v->n_sorted && !oom;
       i = ag_next_unsafe(safe, resume, v->n_sorted)) {
    if (w->deadline > 0 && i >= checked) { /* the clock, every 4096 tokens */
      ag_status st = ag_check_deadline(w->deadline, err);
      if (st) return st;
      checked = i + 4096;
    }
    while (v->first_byte_pos[b + 1] <= i) b++; /* the first byte of token i */
    if (ag_bit(dead, (uint32_t)b)) { /* its tokens, and the next dead bytes', rejected at once */
      while (b < 255 && ag_bit(dead, (uint32_t)b + 1)) b++;
      resume = v->first_byte_pos[b + 1];
      continue;
    }
    ag_status st = ag_classify_after(w, v, last, i, 0, &depth, &resume, &oom, err);
    if (st) return st;
    last = i;
  }
  return oom ? ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask") : AG_OK;
}

/* ---- a trie's walk, by ranges ----------------------------------------------
 * A trie rule (a request's tool names, ag_trie.h) has one path per prefix and
 * no loop, so the tokens that take an edge from a state are one sorted range,
 * found by binary search within the range of the path before it. The walk
 * descends the trie and the sorted vocabulary together and never looks at a
 * token whose next byte the trie rejects outright: the sorted walk looked at
 * each token that took a first byte, and a skip past each failure, some 900
 * tokens and 290k instructions for the root of a hundred names (30-100 us, on
 * the first token of every request's tool name). A token that may fail
 * otherwise (past an end, into a rule edge) is classified as the sorted walk
 * does, one at a time. Positions are classified in ascending order, as there. */
typedef struct ag_trie_walk {
  int32_t resume; /* the first position not classified yet */
  int32_t last;   /* the last position classified one at a time, -1: none */
  uint32_t depth; /* the bytes of `last` that the path still holds */
  bool oom;
} ag_trie_walk;

/* The first position in [lo, hi) whose byte d is c or above (hi past 255); the
 * tokens there share their first d bytes and are longer. */
static int32_t ag_trie_byte_from(const ag_vocab *v, int32_t lo, int32_t hi, uint32_t d, uint32_t c) {
  if (c > 255 || lo >= hi) return hi;
  if (d > 1) return ag_first_byte_from(v, lo, hi, d, c);
  uint32_t len;
  int32_t p = d == 0 ? v->first_byte_pos[c] /* the tables, not a search: the widest ranges */
                     : v->pair_pos[ag_vocab_sorted_token(v, lo, &len)[0] * 256 + c];
  return p < lo ? lo : p > hi ? hi : p;
}

/* Classifies positions [lo, hi) one at a time, as ag_classify_all does; they
 * share the d bytes the path holds. */
static ag_status ag_trie_each(ag_classify *w, const ag_vocab *v, ag_trie_walk *t, int32_t lo,
                              int32_t hi, uint32_t d, ag_error *err) {
  for (int32_t i = lo > t->resume ? lo : t->resume; i < hi && !t->oom; i = t->resume) {
    int32_t next;
    ag_status st = ag_classify_after(w, v, t->last, i, d, &t->depth, &next, &t->oom, err);
    if (st) return st;
    t->last = i;
    t->resume = next > i ? next : i + 1;
  }
  return AG_OK;
}

/* Classifies positions [lo, hi), the tokens that share the d bytes of the path
 * (path[d] is where they lead): one equal to them is taken whole; the others
 * by their next byte, down each edge's range, and those of the gaps between
 * edges rejected at once where nothing but an edge could take them. */
static ag_status ag_trie_node(ag_classify *w, const ag_vocab *v, ag_trie_walk *t, int32_t lo,
                              int32_t hi, uint32_t d, ag_error *err) {
  if (lo < t->resume) lo = t->resume;
  if (lo >= hi || t->oom) return AG_OK;
  uint32_t len;
  if (d > 0 && (ag_vocab_sorted_token(v, lo, &len), len == d)) { /* sorted first in its range */
    if (!ag_mark_accepted(w, v, lo)) t->oom = true;
    t->resume = ++lo;
  }
  int32_t at = w->path[d].at, u = at >= 0 ? w->rows.state[at] : ~at;
  const ag_state *s = &w->g->states[u];
  /* a failed token is rejected, as in ag_classify_token, unless the rule could
   * end (or for DISPATCH an exit was passed) or a rule edge was passed */
  bool dead = !(w->path[d].reach & (AG_CELL_EXITED | AG_CELL_CAN_END)) && !s->accepting;
  ag_status st = AG_OK;
  int32_t pos = lo;
  for (uint32_t e = s->byte_begin; e < s->byte_end && pos < hi && !st && !t->oom; e++) {
    const ag_byte_edge *be = &w->g->byte_edges[e];
    int32_t from = ag_trie_byte_from(v, pos, hi, d, be->lo);
    if (!dead) st = ag_trie_each(w, v, t, pos, from, d, err);
    for (pos = from; !st && pos < hi && !t->oom;) {
      uint32_t c = ag_vocab_sorted_token(v, pos, &len)[d];
      if (c > be->hi) break;
      int32_t end = ag_trie_byte_from(v, pos + 1, hi, d, c + 1);
      if (w->deadline > 0 && d == 0) st = ag_check_deadline(w->deadline, err);
      if (t->depth > d) t->depth = d; /* the path past d is about to change */
      if (!st && ag_walk_scan(w, d, (uint8_t)c)) st = ag_trie_node(w, v, t, pos, end, d + 1, err);
      else if (!st) st = ag_trie_each(w, v, t, pos, end, d, err); /* not taken after all */
      pos = end;
    }
  }
  if (!st && !dead) st = ag_trie_each(w, v, t, pos, hi, d, err);
  return st;
}

/* Classifies every token for a trie rule's state by ranges; the state has no
 * rule edge of its own (own_exit), no safe tokens, no "any follow" record. */
static ag_status ag_classify_trie(ag_classify *w, const ag_vocab *v, ag_error *err) {
  ag_trie_walk t = {0, -1, 0, false};
  w->pshared = UINT32_MAX;
  w->skip_dead = true;
  ag_status st = ag_trie_node(w, v, &t, 0, v->n_sorted, 0, err);
  if (!st && t.oom) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  return st;
}

/* Copies from's accepted tokens of at most `level` bytes into w's entry (all of
 * them with level UINT32_MAX), which has none yet, in from's form; false when
 * memory ran out. From bitsets, the longer ones are copied too: the caller
 * clears them. */
static bool ag_copy_accepted(ag_classify *w, const ag_state_masks *from, const ag_vocab *v,
                             uint32_t level) {
  if (from->accepted) return ag_accepted_copy(w->entry, v, from->accepted, from->accepted_pos);
  for (int32_t k = 0; k < from->n_accepted_list; k++)
    if (ag_vocab_sorted_len(v, from->accepted_list[k]) <= level &&
        !ag_vec_push(&w->accepted, from->accepted_list[k]))
      return false;
  return true;
}

/* Whether list[0..n) is in ascending order. */
static bool ag_ascending(const int32_t *list, size_t n) {
  for (size_t k = 1; k < n; k++)
    if (list[k - 1] > list[k]) return false;
  return true;
}

/* Keeps the uncertain positions as a list or a bitset, whichever is smaller. A
 * list is ascending (sorted here if a walk left it otherwise): the matcher walks
 * it in order. */
static ag_status ag_store_uncertain(ag_state_masks *e, const ag_vocab *v, void *list_vec,
                                    ag_error *err) {
  AG_VEC(int32_t) *list = list_vec;
  size_t bit_words = ((size_t)v->n_sorted + 31) / 32;
  if (list->len <= bit_words) {
    if (!ag_ascending(list->data, list->len))
      qsort(list->data, list->len, sizeof *list->data, ag_cmp_int32);
    e->uncertain = list->data; /* ownership moves to the entry */
    e->n_uncertain = (int32_t)list->len;
    e->bytes = list->cap * sizeof(int32_t);
    return AG_OK;
  }
  e->uncertain_bits = calloc(bit_words, sizeof *e->uncertain_bits);
  if (!e->uncertain_bits) {
    ag_vec_free(list);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  }
  for (size_t k = 0; k < list->len; k++)
    ag_bit_set(e->uncertain_bits, list->data[k]);
  e->n_uncertain = (int32_t)list->len;
  e->bytes = bit_words * sizeof(uint32_t);
  ag_vec_free(list);
  return AG_OK;
}

/* The safe tokens of dispatch rule r, computed now if no thread has yet. */
/* The safe tokens of dispatch rule r: the vocabulary's shared set for its words. */
static ag_status ag_safe_tokens(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                                int32_t r, const uint32_t **out, ag_error *err) {
  const uint32_t *bits = atomic_load_explicit(&c->safe[r], memory_order_acquire);
  if (bits) {
    *out = bits;
    return AG_OK;
  }
  uint32_t *owned = NULL;
  ag_status st = ag_vocab_safe_tokens(v, g->rule_dispatch[r], &bits, &owned, err);
  if (st) return st;
  const uint32_t *expected = NULL;
  if (atomic_compare_exchange_strong_explicit(&c->safe[r], &expected, bits, memory_order_acq_rel,
                                              memory_order_acquire)) {
    if (owned) {
      c->safe_owned[r] = owned; /* only the thread that published writes this slot */
      ag_cache_grow(c, v, ag_safe_words(v) * sizeof *owned);
    }
    *out = bits;
  } else {
    free(owned);
    *out = expected;
  }
  return AG_OK;
}

/* The grammar's FOLLOW sets, computed by the first thread that needs them. */
static ag_status ag_cache_follow(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                                 const uint32_t **out, ag_error *err) {
  uint32_t *f = atomic_load_explicit(&c->follow, memory_order_acquire);
  if (!f) {
    ag_status st = ag_grammar_follow(g, &f, err);
    if (st) return st;
    uint32_t *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(&c->follow, &expected, f, memory_order_acq_rel,
                                                memory_order_acquire)) {
      ag_cache_grow(c, v, (size_t)g->n_rules * 8 * sizeof *f);
    } else {
      free(f);
      f = expected;
    }
  }
  *out = f;
  return AG_OK;
}

/* The FOLLOW set a state's walk uses: its rule's, or NULL (any byte) for dispatch rules,
 * whose ends are stop strings and whose classes are shared by their words alone. */
static ag_status ag_state_follow(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                                 int32_t rule, const uint32_t **out, ag_error *err) {
  *out = NULL;
  if (c->rule_walk[rule] == AG_WALK_DISPATCH) return AG_OK;
  const uint32_t *f;
  ag_status st = ag_cache_follow(c, g, v, &f, err);
  if (!st) *out = f + (size_t)rule * 8;
  return st;
}

/* Sets up the classification of `state`: the walk's arrays, an empty entry,
 * and (HYBRID, rule edges on the state) the cover by predicted states. Whatever
 * the status, ag_classify_end releases it. */
static ag_status ag_classify_begin(ag_classify *w, ag_mask_cache *c, const ag_grammar *g,
                                   const ag_vocab *v, int32_t state, const uint32_t *follow,
                                   double deadline, ag_error *err) {
  size_t depths = (size_t)v->max_token_len + 1;
  memset(w, 0, sizeof *w);
  w->g = g;
  w->mode = c->rule_walk[g->state_rule[state]];
  w->follow = follow;
  w->state = state;
  w->deadline = deadline;
  w->entry = calloc(1, sizeof *w->entry);
  w->path = malloc(sizeof *w->path * depths);
  w->ecan_end = calloc(depths, sizeof *w->ecan_end);
  /* what a step into a state with rule edges means (see AG_WALK_*) */
  uint32_t exit_flags = w->mode == AG_WALK_DISPATCH ? AG_CELL_CAN_END
                        : w->mode == AG_WALK_HYBRID ? AG_CELL_EXITED
                                                    : 0;
  ag_walk_rows_init(&w->rows, g, follow, exit_flags);
  if (!w->entry || !w->ecan_end || !w->path)
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  /* reach is empty at 0: an end before byte d counts when d may follow */
  w->path[0] = (ag_walk_depth){ag_walk_rows_at(&w->rows, state), 0};
  const ag_state *s0 = &g->states[state];
  w->own_exit = w->mode == AG_WALK_HYBRID && s0->rule_begin != s0->rule_end; /* see AG_WALK_* */
  return w->own_exit ? ag_cover_by_predicted(w, c, v, err) : AG_OK;
}

/* Moves the accepted list, ascending, into the entry when it has no bitsets
 * (a derivation appends its long tokens after the copied ones). */
static void ag_store_accepted(ag_classify *w) {
  ag_state_masks *e = w->entry;
  if (e->accepted || !w->accepted.len) return;
  if (!ag_ascending(w->accepted.data, w->accepted.len))
    qsort(w->accepted.data, w->accepted.len, sizeof *w->accepted.data, ag_cmp_int32);
  e->accepted_list = w->accepted.data; /* ownership moves to the entry */
  e->n_accepted_list = (int32_t)w->accepted.len;
  e->bytes += w->accepted.cap * sizeof *w->accepted.data;
  memset(&w->accepted, 0, sizeof w->accepted);
}

/* Releases the walk; after a successful one, stores its uncertain tokens and
 * hands the entry over in *out, else frees it and returns st. */
static ag_status ag_classify_end(ag_classify *w, const ag_vocab *v, ag_status st,
                                 ag_state_masks **out, ag_error *err) {
  if (w->parser_ready) ag_parser_free(&w->parser);
  free(w->kunc);
  ag_walk_rows_free(&w->rows);
  free(w->path);
  free(w->ecan_end);
  ag_vec_free(&w->any_extra);
  if (!st) st = ag_store_uncertain(w->entry, v, &w->uncertain, err); /* it frees the list on failure */
  else ag_vec_free(&w->uncertain);
  if (!st) ag_store_accepted(w);
  ag_vec_free(&w->accepted);
  if (st) {
    ag_state_masks_free(w->entry);
    return st;
  }
  ag_state_masks *e = w->entry; /* a list's bytes are counted by ag_store_accepted */
  e->bytes += sizeof *e + (e->accepted ? (ag_mask_words(v) + ag_pos_words(v)) * sizeof(uint32_t) : 0);
  *out = e;
  return AG_OK;
}

/* After a walk with record_any: the state's classes had any byte been allowed
 * to follow its rule (the same accepted tokens; the uncertain ones and the
 * recorded runs), its uncertain tokens in the smaller form, as ag_store_uncertain. */
static ag_status ag_any_entry(const ag_classify *w, const ag_vocab *v, ag_state_masks **out,
                              ag_error *err) {
  *out = NULL;
  size_t na = w->uncertain.len, total = na + w->n_any_extra, bit_words = ag_pos_words(v);
  const int32_t *runs = w->any_extra.data;
  ag_state_masks *e = calloc(1, sizeof *e);
  bool ok = e != NULL;
  if (ok && w->entry->accepted) { /* the same accepted tokens, in the walk's form */
    ok = ag_accepted_copy(e, v, w->entry->accepted, w->entry->accepted_pos);
  } else if (ok && w->accepted.len) {
    ok = (e->accepted_list = malloc(w->accepted.len * sizeof *e->accepted_list)) != NULL;
    if (ok) memcpy(e->accepted_list, w->accepted.data, w->accepted.len * sizeof *e->accepted_list);
    e->n_accepted_list = (int32_t)w->accepted.len; /* ascending: a walk's, not a derivation's */
  }
  if (ok && total <= bit_words) { /* a sorted list: the uncertain tokens and the runs, merged */
    ok = (e->uncertain = malloc((total ? total : 1) * sizeof *e->uncertain)) != NULL;
    for (size_t i = 0, r = 0, n = 0; ok && (i < na || r < w->any_extra.len);) {
      if (r == w->any_extra.len || (i < na && w->uncertain.data[i] < runs[r])) {
        e->uncertain[n++] = w->uncertain.data[i++];
      } else {
        for (int32_t j = runs[r]; j < runs[r + 1]; j++) e->uncertain[n++] = j;
        r += 2;
      }
    }
    if (ok) e->bytes = (total ? total : 1) * sizeof *e->uncertain;
  } else if (ok) { /* a bitset: each run set a word at a time where it can */
    ok = (e->uncertain_bits = calloc(bit_words, sizeof *e->uncertain_bits)) != NULL;
    for (size_t i = 0; ok && i < na; i++) ag_bit_set(e->uncertain_bits, w->uncertain.data[i]);
    for (size_t r = 0; ok && r < w->any_extra.len; r += 2) {
      int32_t j = runs[r], end = runs[r + 1];
      for (; j < end && (j & 31); j++) ag_bit_set(e->uncertain_bits, j);
      for (; j + 32 <= end; j += 32) e->uncertain_bits[j >> 5] = ~0u;
      for (; j < end; j++) ag_bit_set(e->uncertain_bits, j);
    }
    if (ok) e->bytes = bit_words * sizeof(uint32_t);
  }
  if (!ok) {
    ag_state_masks_destroy(e);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  }
  e->n_uncertain = (int32_t)total;
  e->bytes += sizeof *e + (e->accepted ? (ag_mask_words(v) + ag_pos_words(v)) * sizeof(uint32_t)
                                       : (size_t)e->n_accepted_list * sizeof(int32_t));
  *out = e;
  return AG_OK;
}

/* A state's loop class (ag_class_tokens.h), found once per classification:
 * the derivation, the walk and the note after it all ask. */
typedef struct ag_loop_memo {
  bool known;
  uint32_t depth; /* 0: none */
  uint32_t cls[8];
} ag_loop_memo;

static uint32_t ag_loop_depth(const ag_grammar *g, const ag_vocab *v, int32_t state,
                              ag_loop_memo *m) {
  /* A trie's states never loop, and the closure that looks for a bounded class
   * visits its 512 states before it gives up: a tenth of a first visit to the
   * root of a hundred tool names. */
  bool trie = g->rule_trie && g->rule_trie[g->state_rule[state]];
  if (!m->known) m->depth = trie ? 0 : ag_class_depth(g, v, state, v->max_token_len, m->cls);
  m->known = true;
  return m->depth;
}

/* No plain depth computed yet (ag_compute's `plain`). */
#define AG_PLAIN_UNKNOWN UINT32_MAX

/* Walks the vocabulary for `state`'s classes; with `any` (not NULL), also its
 * "any follow" entry, from the same walk. `plain` is the state's plain depth
 * when the caller has it (and `refuses`, ag_plain_depth's), else
 * AG_PLAIN_UNKNOWN. */
static ag_status ag_compute(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                            int32_t state, const uint32_t *follow, double deadline, uint32_t plain,
                            bool refuses, ag_loop_memo *loop, ag_state_masks **out,
                            ag_state_masks **any, ag_error *err) {
  if (any) *any = NULL;
  const uint32_t *safe = NULL, *skip = NULL;
  uint32_t *owned = NULL;
  int32_t rule = g->state_rule[state];
  if (c->safe && g->rule_dispatch[rule]) {
    ag_status st = ag_safe_tokens(c, g, v, rule, &safe, err);
    if (st) return st;
  } else {
    uint32_t d = plain;
    if (d == AG_PLAIN_UNKNOWN) d = ag_plain_depth(g, state, v->max_token_len, &refuses);
    if (d >= v->max_token_len) {
      safe = v->plain; /* every plain token is consumed by the state's own bytes */
      if (refuses) skip = v->plain_skip; /* and those plain up to a control byte rejected */
    } else if (d > 0 && v->n_longer[d] < v->n_sorted / 2) {
      /* near a bound (a position of a bounded string): the plain tokens that fit */
      safe = owned = ag_plain_tokens_upto(v, d); /* out of memory: a walk of all */
    }
    if (safe) atomic_fetch_add(&c->n_plain, 1);
    uint32_t cd = safe ? 0 : ag_loop_depth(g, v, state, loop);
    if (cd) { /* a narrower loop: the tokens made of its class */
      ag_status st = ag_vocab_class_tokens(v, loop->cls, cd, &safe, &owned, err);
      if (st) return st;
      atomic_fetch_add(&c->n_classed, 1);
    }
  }
  ag_classify w;
  ag_status st = ag_classify_begin(&w, c, g, v, state, follow, deadline, err);
  w.record_any = any != NULL;
  if (!st && safe && !ag_accepted_copy(w.entry, v, safe + ag_pos_words(v), safe))
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  bool by_trie = !safe && !any && !w.own_exit && g->rule_trie && g->rule_trie[rule];
  if (!st) st = by_trie ? ag_classify_trie(&w, v, err) : ag_classify_all(&w, v, skip ? skip : safe, err);
  if (!st && any) st = ag_any_entry(&w, v, any, err);
  free(owned);
  st = ag_classify_end(&w, v, st, out, err);
  if (st && any) {
    ag_state_masks_destroy(*any);
    *any = NULL;
  }
  return st;
}

/* ---- classes derived from an equivalent state (ag_depth_equiv.h) ---------- */

/* The shallowest level worth deriving at: past it at most an eighth of the
 * vocabulary is longer, and re-walked. */
static uint32_t ag_derive_min_level(const ag_vocab *v) { return v->long_level; }

/* The uncertain tokens of `from` no longer than `level` bytes, into w's list. */
static void ag_keep_short_uncertain(ag_classify *w, const ag_vocab *v, const ag_state_masks *from,
                                    uint32_t level) {
  for (int32_t k = 0; k < from->n_uncertain && !from->uncertain_bits; k++)
    if (ag_vocab_sorted_len(v, from->uncertain[k]) <= level)
      w->uncertain.data[w->uncertain.len++] = from->uncertain[k];
  for (int32_t i = 0; from->uncertain_bits && i < v->n_sorted; i++)
    if (ag_bit(from->uncertain_bits, i) && ag_vocab_sorted_len(v, i) <= level)
      w->uncertain.data[w->uncertain.len++] = i;
}

/* The classes of `state` from those of `from`, a state of the same rule
 * equivalent at `level`: copied, then every token longer than level walked
 * again, with the parser where it leaves the rule, as ag_compute would. */
static ag_status ag_derive(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v, int32_t state,
                           const uint32_t *follow, const ag_state_masks *from, uint32_t level,
                           ag_state_masks **out, ag_error *err) {
  int32_t n_long = level >= v->max_token_len ? 0 : v->n_longer[level];
  ag_classify w;
  ag_status st = ag_classify_begin(&w, c, g, v, state, follow, 0, err);
  bool oom = !st && !ag_vec_reserve(&w.uncertain, (size_t)from->n_uncertain + (size_t)n_long);
  if (!st && !oom) {
    oom = !ag_copy_accepted(&w, from, v, level);
    ag_keep_short_uncertain(&w, v, from, level);
  }
  /* The long tokens in sorted order, so each shares the walk (and the parser's
   * prefix) with the one before it: those of the vocabulary's long tokens (in
   * sorted order already) longer than `level`, which is at least their level
   * (ag_try_derive), so they are all among them. */
  int32_t *order = n_long ? malloc(sizeof *order * (size_t)n_long) : NULL;
  if (n_long && !order) oom = true;
  for (int32_t k = 0, j = 0; order && j < n_long; k++)
    if (ag_vocab_sorted_len(v, v->long_sorted[k]) > level) order[j++] = v->long_sorted[k];
  uint32_t depth = 0, dead[8];
  if (!st) ag_dead_first_bytes(&w, v, dead); /* their long tokens are rejected, not walked */
  for (int32_t k = 0, last = -1; !st && !oom && k < n_long; k++) {
    int32_t i = order[k], next;
    if (w.entry->accepted) { /* copied from bitsets: walked again below */
      ag_bit_clear(w.entry->accepted, v->sorted_ids[i]);
      ag_bit_clear(w.entry->accepted_pos, i);
    }
    uint32_t len;
    if (ag_bit(dead, ag_vocab_sorted_token(v, i, &len)[0])) continue;
    uint32_t shared = last >= 0 ? ag_vocab_common_prefix(v, last, i) : 0;
    if (shared < depth) depth = shared;
    if (shared < w.pshared) w.pshared = shared; /* what the parser's token shares: the least since */
    st = ag_classify_token(&w, v, i, &depth, true, &next, &oom, err);
    last = i;
  }
  free(order);
  if (!st && oom) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  if (!st && n_long) qsort(w.uncertain.data, w.uncertain.len, sizeof *w.uncertain.data, ag_cmp_int32);
  return ag_classify_end(&w, v, st, out, err);
}

/* The comparison of rule r's states (ag_depth_equiv.h), built by the first
 * thread to ask, which notes the states classified before; NULL when the rule
 * is not compared. */
static ag_status ag_rule_equiv(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v, int32_t r,
                               ag_depth_equiv **out, ag_error *err) {
  ag_depth_equiv *q = atomic_load_explicit(&c->equiv[r], memory_order_acquire);
  if (!q && !atomic_load(&c->equiv_none[r])) {
    uint32_t max_level = v->max_token_len < AG_DEPTH_EQUIV_MAX_LEVEL ? v->max_token_len
                                                                     : AG_DEPTH_EQUIV_MAX_LEVEL;
    ag_status st = ag_depth_equiv_build(g, r, max_level, ag_derive_min_level(v), &q, err);
    if (st) return st;
    ag_depth_equiv *expected = NULL;
    if (!q) {
      atomic_store(&c->equiv_none[r], true);
    } else if (atomic_compare_exchange_strong_explicit(&c->equiv[r], &expected, q,
                                                       memory_order_acq_rel, memory_order_acquire)) {
      int32_t begin, n;
      ag_depth_equiv_range(q, &begin, &n);
      for (int32_t s = begin; s < begin + n; s++)
        if (ag_entry(c, s)) ag_depth_equiv_note(q, s);
      ag_cache_grow(c, v, ag_depth_equiv_take_growth(q));
    } else {
      ag_depth_equiv_free(q);
      q = expected;
    }
  }
  *out = q;
  return AG_OK;
}

/* The bytes that keep a walk going from state s: its edges', and those that may
 * follow the rule's end where s is accepting; with `enter`, also those the
 * start states of the rules its rule edges enter take (every byte where such a
 * start may end at once or enter a rule itself: not looked into further);
 * without, every byte when s has rule edges. */
static void ag_live_bytes(const ag_grammar *g, int32_t s, const uint32_t *follow, bool enter,
                          uint32_t live[8]) {
  const ag_state *st = &g->states[s];
  bool all = !enter && st->rule_begin != st->rule_end;
  for (int k = 0; k < 8; k++)
    live[k] = all ? ~0u : st->accepting ? (follow ? follow[k] : ~0u) : 0;
  for (uint32_t e = st->byte_begin; !all && e < st->byte_end; e++)
    ag_byteset_add_range(live, g->byte_edges[e].lo, g->byte_edges[e].hi);
  for (uint32_t e = st->rule_begin; !all && e < st->rule_end; e++) {
    uint32_t entered[8];
    ag_live_bytes(g, g->rule_start[g->rule_edges[e].rule], NULL, false, entered);
    for (int k = 0; k < 8; k++) live[k] |= entered[k];
  }
}

/* Whether a walk of `state` passes the second byte of far fewer tokens (an
 * eighth) than a derivation walks again (the tokens longer than the shallowest
 * level, one at a time): a walk rejects a dead first or second byte's tokens a
 * run at a time, so it costs about as much as the tokens whose first two bytes
 * the state takes. A state expecting `"` or ` "` takes a few hundred; deriving
 * it cost more than its walk (a find of its equivalent, a copy of the classes,
 * the long tokens one by one: 100-340 us against 50 on Llama-3.2). Its
 * equivalents agree on those bytes, so none of them is derived either. The
 * eighth keeps the derivations of broader states, which MaskBench's schemas
 * gain from as much as they lose. */
static bool ag_walk_is_narrow(const ag_grammar *g, const ag_vocab *v, int32_t state,
                              const uint32_t *follow) {
  int32_t n = 0, bound = v->long_level <= v->max_token_len ? v->n_longer[v->long_level] : 0;
  const ag_state *st = &g->states[state];
  uint32_t first[8];
  ag_live_bytes(g, state, follow, false, first);
  for (int b = 0; b < 256 && n < bound / 8; b++) {
    if (!ag_bit(first, (uint32_t)b)) continue;
    int32_t t = ag_state_step(g, state, (uint8_t)b), all = v->first_byte_pos[b + 1] - v->first_byte_pos[b];
    if (t < 0 || (st->accepting && (!follow || ag_bit(follow, (uint32_t)b)))) {
      n += all; /* past the rule's end: each token of the byte is looked at */
      continue;
    }
    uint32_t second[8];
    ag_live_bytes(g, t, follow, true, second);
    for (int c = 0; c < 256; c++)
      if (ag_bit(second, (uint32_t)c)) n += ag_vocab_pair_count(v, b, c);
    n += 1; /* the byte's own one-byte token, if any */
  }
  return n < bound / 8;
}

/* ag_walk_is_narrow, asked at most once per classification (a derivation and
 * the note after it both ask): *memo is -1 until then. */
static bool ag_narrow(const ag_grammar *g, const ag_vocab *v, int32_t state, const uint32_t *follow,
                      int8_t *memo) {
  if (*memo < 0) *memo = ag_walk_is_narrow(g, v, state, follow);
  return *memo;
}

/* A state's classes derived from an equivalent state's, when its rule has one
 * classified already; *out stays NULL when there is none. Not a state with a
 * loop class: its walk (the class's tokens copied, the others walked) costs
 * less than a derivation (a find, a copy, and every token longer than the
 * level walked again: an eighth of the vocabulary). On MaskBench's sample,
 * walk time per token fell by 5% with them walked. */
static ag_status ag_try_derive(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                               int32_t state, const uint32_t *follow, int8_t *narrow,
                               ag_loop_memo *loop, ag_state_masks **out, ag_error *err) {
  *out = NULL;
  int32_t r = g->state_rule[state];
  /* a rule not compared (a trie's, say) has no equivalent: not asked whether narrow */
  if (c->rule_walk[r] == AG_WALK_DISPATCH || atomic_load(&c->rule_classified[r]) == 0 ||
      atomic_load(&c->equiv_none[r]) || ag_narrow(g, v, state, follow, narrow) ||
      ag_loop_depth(g, v, state, loop))
    return AG_OK;
  ag_depth_equiv *q;
  ag_status st = ag_rule_equiv(c, g, v, r, &q, err);
  if (st || !q) return st;
  int32_t rep;
  uint32_t level;
  ag_depth_equiv_find(q, state, ag_derive_min_level(v), &rep, &level);
  if (rep < 0 || level < ag_derive_min_level(v)) return AG_OK; /* finds look no shallower */
  const ag_state_masks *from = ag_entry(c, rep);
  if (from) st = ag_derive(c, g, v, state, follow, from, level, out, err);
  ag_cache_grow(c, v, ag_depth_equiv_take_growth(q));
  return st;
}

/* ---- classes for another FOLLOW set ---------------------------------------
 * A BYTES state's classes depend on its rule's FOLLOW set only through the
 * tokens that fail after the rule could have ended: with any byte allowed to
 * follow, those are exactly its uncertain tokens. The same automaton in another
 * grammar (a string value in another tool's arguments) has another FOLLOW set,
 * so another key; its classes are those of the "any follow" entry, kept shared
 * under its own key, with only its uncertain tokens walked again. This is done
 * for the states that take every plain token (ag_plain_tokens.h: inside a JSON
 * string or key), where those tokens are few (the ones with a quote before
 * their end). The entry comes from the walk for the state's own FOLLOW set,
 * which records the runs of tokens it rejects only for the byte after the end
 * (AG_CELL_ENDS); keeping it still costs a first visit a copy of the classes,
 * which a grammar seen once (MaskBench's fresh compilers) never uses back, and
 * elsewhere it would not pay: a state that may end at once (after a number's
 * digit) leaves most of the vocabulary uncertain with any byte following. */
#define AG_ANY_FOLLOW_SHARE 16 /* derive when at most 1/16 of the vocabulary is uncertain */

static const uint32_t ag_any_follow[8] = {~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u};

static bool ag_follow_is_any(const uint32_t *follow) {
  return memcmp(follow, ag_any_follow, sizeof ag_any_follow) == 0;
}

static bool ag_any_follow_worth(const ag_state_masks *any, const ag_vocab *v) {
  return any->n_uncertain <= v->n_sorted / AG_ANY_FOLLOW_SHARE;
}

/* The classes of `state` for `follow` from `any`, the same state's with any byte
 * following: copied, then its uncertain tokens walked again in sorted order, a
 * run at a time: the tokens that share a failed token's bytes up to where it
 * failed fail there too, so they are all uncertain in `any` as well. */
static ag_status ag_follow_derive(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                                  int32_t state, const uint32_t *follow,
                                  const ag_state_masks *any, ag_state_masks **out, ag_error *err) {
  ag_classify w;
  ag_status st = ag_classify_begin(&w, c, g, v, state, follow, 0, err);
  bool oom = !st && !ag_vec_reserve(&w.uncertain, (size_t)any->n_uncertain);
  if (!st && !oom) oom = !ag_copy_accepted(&w, any, v, UINT32_MAX);
  uint32_t depth = 0;
  int32_t last = -1, k = 0, next = 0;
  while (!st && !oom) {
    int32_t i; /* the next uncertain position past the last run, from either form */
    if (any->uncertain_bits) {
      i = ag_next_bit(any->uncertain_bits, next, v->n_sorted);
      if (i >= v->n_sorted) break;
    } else {
      while (k < any->n_uncertain && any->uncertain[k] < next) k++;
      if (k == any->n_uncertain) break;
      i = any->uncertain[k++];
    }
    uint32_t shared = last < 0 ? 0 : ag_vocab_common_prefix(v, last, i);
    if (shared < depth) depth = shared;
    st = ag_classify_token(&w, v, i, &depth, false, &next, &oom, err);
    last = i;
  }
  if (!st && oom) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  return ag_classify_end(&w, v, st, out, err);
}

/* A BYTES state's classes for its FOLLOW set from the shared "any follow" entry
 * under any_key, when there is one with few uncertain tokens (*out stays NULL
 * otherwise); *found says whether there is one at all. */
static ag_status ag_by_any_follow(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                                  int32_t state, const uint32_t *follow,
                                  const ag_vcache_key *any_key, bool *found, ag_state_masks **out,
                                  ag_error *err) {
  *out = NULL;
  const ag_state_masks *any = ag_vcache_find(v, AG_VCACHE_CLASSES, any_key);
  *found = any != NULL;
  if (any && ag_any_follow_worth(any, v)) return ag_follow_derive(c, g, v, state, follow, any, out, err);
  return AG_OK;
}

/* Shares a state's "any follow" entry (ag_compute) with the vocabulary under
 * any_key (taken), or frees it when the vocabulary's cache is full. */
static void ag_share_any(const ag_vocab *v, ag_vcache_key *any_key, ag_state_masks *any) {
  any->shared = true; /* marked before it is published, as in ag_mask_cache_get */
  if (!ag_vcache_add(v, AG_VCACHE_CLASSES, any_key, any, any->bytes, ag_destroy_shared_masks))
    ag_state_masks_destroy(any);
}

/* After `state`'s classes are published: counted for its rule, and noted in the
 * rule's equivalence levels when they exist (not a narrow state's: no state
 * derives from it, see ag_walk_is_narrow). */
static void ag_note_classified(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                               int32_t state, const uint32_t *follow, int8_t *narrow) {
  int32_t r = g->state_rule[state];
  if (c->rule_walk[r] == AG_WALK_DISPATCH) return;
  atomic_fetch_add(&c->rule_classified[r], 1);
  ag_depth_equiv *q = atomic_load_explicit(&c->equiv[r], memory_order_acquire);
  if (q && !ag_narrow(g, v, state, follow, narrow)) {
    ag_depth_equiv_note(q, state);
    ag_cache_grow(c, v, ag_depth_equiv_take_growth(q));
  }
}

ag_status ag_mask_cache_get(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                            int32_t state, double deadline, const ag_state_masks **out,
                            ag_error *err) {
  _Atomic(ag_state_masks *) *slot = ag_slot(c, state);
  if (!slot)
    return ag_fail(err, AG_ERR_INVALID, -1, "state %d is not held by this cache (states %d to %d)",
                   state, c->first_state, c->n_states - 1);
  ag_state_masks *e = atomic_load_explicit(slot, memory_order_acquire);
  if (e) {
    *out = e;
    return AG_OK;
  }
  ag_vcache_key key;
  int32_t rule = g->state_rule[state];
  const ag_dispatch *d = g->rule_dispatch ? g->rule_dispatch[rule] : NULL;
  const uint32_t *follow; /* also part of a BYTES state's key */
  int8_t narrow = -1;      /* ag_narrow's, once asked */
  ag_loop_memo loop = {0};
  ag_status fst = ag_state_follow(c, g, v, rule, &follow, err);
  if (fst) return fst;
  /* A HYBRID state whose walk can pass no rule edge (what follows a JSON object's
   * last value, or a call's closing tag) walks as a BYTES state does: keyed, and
   * shared with every state of the same automaton and FOLLOW set. */
  bool hybrid = c->rule_walk[rule] == AG_WALK_HYBRID;
  bool keyed = ag_class_key_make(g, state, d, follow, hybrid, &key);
  if (keyed) e = ag_vcache_find(v, AG_VCACHE_CLASSES, &key);
  atomic_llong *origin = &c->n_shared;
  if (!e) {
    /* cheapest first: another FOLLOW set's classes, an equivalent state's, a walk */
    ag_vcache_key any_key = {0};
    /* Only a state that takes every plain token keeps an "any follow" entry
     * (ag_compute); equal keys are equal automata, so one found under the
     * state's key answers that without ag_plain_depth, a fifth of the first
     * visit of a string value in another tool's arguments. */
    bool by_follow = keyed && c->rule_walk[rule] != AG_WALK_DISPATCH && !ag_follow_is_any(follow) &&
                     ag_class_key_refollow(&key, ag_any_follow, &any_key);
    bool refuses = false, any_found = false;
    uint32_t plain = AG_PLAIN_UNKNOWN;
    ag_status st =
        by_follow ? ag_by_any_follow(c, g, v, state, follow, &any_key, &any_found, &e, err) : AG_OK;
    if (!st && by_follow && !any_found) {
      plain = ag_plain_depth(g, state, v->max_token_len, &refuses);
      by_follow = plain >= v->max_token_len;
    }
    if (!st && !e) st = ag_try_derive(c, g, v, state, follow, &narrow, &loop, &e, err);
    origin = &c->n_derived;
    if (!st && !e) {
      ag_state_masks *any = NULL; /* the walk also gives the "any follow" entry, when missing */
      st = ag_compute(c, g, v, state, follow, deadline, plain, refuses, &loop, &e,
                      by_follow && !any_found ? &any : NULL, err);
      if (any) ag_share_any(v, &any_key, any);
      origin = &c->n_walked;
    }
    ag_vcache_key_free(&any_key); /* when the cache took it, nothing is left to free */
    if (st) {
      if (keyed) ag_vcache_key_free(&key);
      return st;
    }
    /* Marked before it is published: a grammar that finds it must not free it. */
    e->shared = keyed;
    if (keyed && !ag_vcache_add(v, AG_VCACHE_CLASSES, &key, e, e->bytes, ag_destroy_shared_masks))
      e->shared = false;
  }
  if (keyed) ag_vcache_key_free(&key); /* when the cache took it, nothing is left to free */
  /* Two threads may compute the same state; the first to publish wins. */
  ag_state_masks *expected = NULL;
  if (atomic_compare_exchange_strong_explicit(slot, &expected, e,
                                              memory_order_acq_rel, memory_order_acquire)) {
    if (!e->shared) ag_cache_grow(c, v, e->bytes);
    atomic_fetch_add(origin, 1);
    ag_note_classified(c, g, v, state, follow, &narrow);
    *out = e;
  } else {
    ag_state_masks_free(e);
    *out = expected;
  }
  return AG_OK;
}

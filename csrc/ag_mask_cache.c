/* ag_mask_cache.c - computing and publishing per-state token classes (see the header). */
#include "ag_mask_cache.h"

#include "ag_class_tokens.h"
#include "ag_classify.h"
#include "ag_class_key.h"
#include "ag_depth_equiv.h"
#include "ag_dispatch.h"
#include "ag_copies.h"
#include "ag_follow.h"
#include "ag_plain_tokens.h"

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
  /* [n_states - first_state] a counted rule's state: its tokens' copies
   * (ag_copies.h), NULL until a matcher nears the rule's max there */
  _Atomic(ag_copies *) *copies;
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

const ag_state_masks *ag_mask_cache_peek(ag_mask_cache *c, int32_t s) {
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
  c->copies = malloc((size_t)(n_own ? n_own : 1) * sizeof *c->copies);
  c->rule_walk = malloc((size_t)g->n_rules);
  c->rule_classified = calloc((size_t)g->n_rules + 1, sizeof *c->rule_classified);
  c->equiv = calloc((size_t)g->n_rules + 1, sizeof *c->equiv);
  c->equiv_none = calloc((size_t)g->n_rules + 1, sizeof *c->equiv_none);
  if (g->rule_dispatch) {
    c->safe = calloc((size_t)g->n_rules, sizeof *c->safe);
    c->safe_owned = calloc((size_t)g->n_rules, sizeof *c->safe_owned);
  }
  if (!c->entries || !c->copies || !c->rule_walk || !c->rule_classified || !c->equiv || !c->equiv_none ||
      (g->rule_dispatch && (!c->safe || !c->safe_owned))) {
    free(c->rule_classified);
    free(c->equiv);
    free(c->equiv_none);
    free(c->entries);
    free(c->copies);
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
  for (int32_t i = 0; i < n_own; i++) {
    atomic_init(&c->entries[i], NULL);
    atomic_init(&c->copies[i], NULL);
  }
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
  atomic_init(&c->bytes, sizeof *c + (size_t)n_own * (sizeof *c->entries + sizeof *c->copies) +
                            safe_bytes + rule_bytes);
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
  for (int32_t i = 0; i < c->n_states - c->first_state; i++) {
    ag_state_masks_free(atomic_load(&c->entries[i]));
    ag_copies_free(atomic_load(&c->copies[i]));
  }
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
  free(c->copies);
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

ag_status ag_mask_cache_copies(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v, int32_t state,
                               const ag_copies **out, ag_error *err) {
  *out = NULL;
  if (state < c->first_state || state >= c->n_states)
    return ag_fail(err, AG_ERR_INVALID, -1, "state %d is not held by this cache", (int)state);
  _Atomic(ag_copies *) *slot = &c->copies[state - c->first_state];
  ag_copies *t = atomic_load_explicit(slot, memory_order_acquire);
  if (!t) {
    const uint32_t *follow;
    ag_status st = ag_state_follow(c, g, v, g->state_rule[state], &follow, err);
    if (!st) st = ag_copies_build(g, v, state, follow, &t, err);
    if (st) return st;
    ag_copies *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(slot, &expected, t, memory_order_acq_rel, memory_order_acquire)) {
      ag_cache_grow(c, v, t->bytes);
    } else {
      ag_copies_free(t);
      t = expected;
    }
  }
  *out = t;
  return AG_OK;
}

/* Whether job's state is a trie's: trie states never loop, and the searches for
 * a loop class would visit up to their bounds (512 states, 4,096 pairs) before
 * giving up (docs/engine.md). */
static bool ag_job_in_trie(const ag_masks_job *job) {
  return job->g->rule_trie && job->g->rule_trie[job->rule];
}

/* The state's loop class depth (0: none), found once per job. */
static uint32_t ag_loop_depth(ag_masks_job *job) {
  ag_loop_memo *m = &job->loop;
  if (!m->known)
    m->depth = ag_job_in_trie(job)
                   ? 0
                   : ag_class_depth(job->g, job->v, job->state, job->v->max_token_len, m->cls);
  m->known = true;
  return m->depth;
}

/* The tokens a walk of job's state may accept without walking them: a dispatch
 * rule's safe tokens, the plain tokens (all, those that fit a bound, or those
 * made of the characters it takes: ag_plain_loop_class), or those of its loop
 * class; NULL for none. *skip (may stay NULL) is what the walk skips instead of
 * *safe; *owned, the set when it is the caller's to free. */
static ag_status ag_walk_shortcut(ag_masks_job *job, const uint32_t **safe, const uint32_t **skip,
                                  uint32_t **owned, ag_error *err) {
  ag_mask_cache *c = job->cache;
  const ag_vocab *v = job->v;
  if (c->safe && job->g->rule_dispatch[job->rule])
    return ag_safe_tokens(c, job->g, v, job->rule, safe, err);
  if (job->plain == AG_PLAIN_UNKNOWN)
    job->plain = ag_plain_depth(job->g, job->state, v->max_token_len, &job->refuses);
  uint32_t d = job->plain;
  if (d >= v->max_token_len) {
    *safe = v->plain; /* every plain token is consumed by the state's own bytes */
    if (job->refuses) *skip = v->plain_skip; /* and those plain up to a control byte rejected */
  } else if (d > 0 && v->n_longer[d] < v->n_sorted / 2) {
    /* near a bound (a position of a bounded string): the plain tokens that fit */
    *safe = *owned = ag_plain_tokens_upto(v, d); /* out of memory: a walk of all */
  }
  if (*safe) {
    atomic_fetch_add(&c->n_plain, 1);
    return AG_OK;
  }
  uint32_t cls[8];
  bool plain_only = !ag_job_in_trie(job) && ag_plain_loop_class(job->g, job->state, cls);
  uint32_t cd = plain_only ? v->max_token_len : ag_loop_depth(job);
  if (cd) { /* a narrower loop: the tokens made of its class */
    ag_status st = ag_vocab_class_tokens(v, plain_only ? cls : job->loop.cls, cd, plain_only, safe,
                                         owned, err);
    if (st) return st;
    atomic_fetch_add(plain_only ? &c->n_plain : &c->n_classed, 1);
  }
  return AG_OK;
}

/* Walks the vocabulary for the job's state's classes; with `any` (not NULL),
 * also its "any follow" entry, from the same walk. */
static ag_status ag_compute(ag_masks_job *job, ag_state_masks **out, ag_state_masks **any,
                            ag_error *err) {
  if (any) *any = NULL;
  const ag_grammar *g = job->g;
  const ag_vocab *v = job->v;
  const uint32_t *safe = NULL, *skip = NULL;
  uint32_t *owned = NULL;
  ag_status st = ag_walk_shortcut(job, &safe, &skip, &owned, err);
  if (st) return st;
  ag_classify w;
  st = ag_classify_begin(&w, job, job->deadline, err);
  w.record_any = any != NULL;
  if (!st && safe && !ag_accepted_copy(w.entry, v, safe + ag_pos_words(v), safe))
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  bool by_trie = !safe && !any && !w.own_exit && g->rule_trie && g->rule_trie[job->rule];
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
static ag_status ag_derive(const ag_masks_job *job, const ag_state_masks *from, uint32_t level,
                           ag_state_masks **out, ag_error *err) {
  const ag_vocab *v = job->v;
  int32_t n_long = level >= v->max_token_len ? 0 : v->n_longer[level];
  ag_classify w;
  ag_status st = ag_classify_begin(&w, job, 0, err);
  w.oom = !st && !ag_vec_reserve(&w.uncertain, (size_t)from->n_uncertain + (size_t)n_long);
  if (!st && !w.oom) {
    w.oom = !ag_copy_accepted(&w, from, v, level);
    ag_keep_short_uncertain(&w, v, from, level);
  }
  /* The long tokens in sorted order, so each shares the walk (and the parser's
   * prefix) with the one before it: those of the vocabulary's long tokens (in
   * sorted order already) longer than `level`, which is at least their level
   * (ag_try_derive), so they are all among them. */
  int32_t *order = n_long ? malloc(sizeof *order * (size_t)n_long) : NULL;
  if (n_long && !order) w.oom = true;
  for (int32_t k = 0, j = 0; order && j < n_long; k++)
    if (ag_vocab_sorted_len(v, v->long_sorted[k]) > level) order[j++] = v->long_sorted[k];
  uint32_t depth = 0, dead[8];
  if (!st) ag_dead_first_bytes(&w, v, dead); /* their long tokens are rejected, not walked */
  for (int32_t k = 0, last = -1; !st && !w.oom && k < n_long; k++) {
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
    st = ag_classify_token(&w, v, i, &depth, true, &next, err);
    last = i;
  }
  free(order);
  if (!st && w.oom) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
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
        if (ag_mask_cache_peek(c, s)) ag_depth_equiv_note(q, s);
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
 * the state takes. A state expecting `"` or ` "` takes a few hundred, and
 * deriving it costs more than its walk (a find of its equivalent, a copy of the
 * classes, the long tokens one by one; docs/engine.md). Its equivalents agree on
 * those bytes, so none of them is derived either. The eighth keeps the
 * derivations of broader states. */
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
static bool ag_narrow(ag_masks_job *job) {
  if (job->narrow < 0) job->narrow = ag_walk_is_narrow(job->g, job->v, job->state, job->follow);
  return job->narrow;
}

/* A state's classes derived from an equivalent state's, when its rule has one
 * classified already; *out stays NULL when there is none. Not a state with a
 * loop class: its walk (the class's tokens copied, the others walked) costs
 * less than a derivation (a find, a copy, and every token longer than the
 * level walked again: an eighth of the vocabulary). */
static ag_status ag_try_derive(ag_masks_job *job, ag_state_masks **out, ag_error *err) {
  *out = NULL;
  ag_mask_cache *c = job->cache;
  const ag_vocab *v = job->v;
  int32_t r = job->rule;
  /* a rule not compared (a trie's, say) has no equivalent: not asked whether narrow */
  if (job->walk == AG_WALK_DISPATCH || atomic_load(&c->rule_classified[r]) == 0 ||
      atomic_load(&c->equiv_none[r]) || ag_narrow(job) || ag_loop_depth(job))
    return AG_OK;
  ag_depth_equiv *q;
  ag_status st = ag_rule_equiv(c, job->g, v, r, &q, err);
  if (st || !q) return st;
  int32_t rep;
  uint32_t level;
  ag_depth_equiv_find(q, job->state, ag_derive_min_level(v), &rep, &level);
  if (rep < 0 || level < ag_derive_min_level(v)) return AG_OK; /* finds look no shallower */
  const ag_state_masks *from = ag_mask_cache_peek(c, rep);
  if (from) st = ag_derive(job, from, level, out, err);
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
static ag_status ag_follow_derive(const ag_masks_job *job, const ag_state_masks *any,
                                  ag_state_masks **out, ag_error *err) {
  const ag_vocab *v = job->v;
  ag_classify w;
  ag_status st = ag_classify_begin(&w, job, 0, err);
  w.oom = !st && !ag_vec_reserve(&w.uncertain, (size_t)any->n_uncertain);
  if (!st && !w.oom) w.oom = !ag_copy_accepted(&w, any, v, UINT32_MAX);
  uint32_t depth = 0;
  int32_t last = -1, k = 0, next = 0;
  while (!st && !w.oom) {
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
    st = ag_classify_token(&w, v, i, &depth, false, &next, err);
    last = i;
  }
  if (!st && w.oom) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  return ag_classify_end(&w, v, st, out, err);
}

/* A BYTES state's classes for its FOLLOW set from the shared "any follow" entry
 * under any_key, when there is one with few uncertain tokens (*out stays NULL
 * otherwise); *found says whether there is one at all. */
static ag_status ag_by_any_follow(const ag_masks_job *job, const ag_vcache_key *any_key, bool *found,
                                  ag_state_masks **out, ag_error *err) {
  *out = NULL;
  const ag_state_masks *any = ag_vcache_find(job->v, AG_VCACHE_CLASSES, any_key);
  *found = any != NULL;
  if (any && ag_any_follow_worth(any, job->v)) return ag_follow_derive(job, any, out, err);
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
static void ag_note_classified(ag_masks_job *job) {
  ag_mask_cache *c = job->cache;
  int32_t r = job->rule;
  if (job->walk == AG_WALK_DISPATCH) return;
  atomic_fetch_add(&c->rule_classified[r], 1);
  ag_depth_equiv *q = atomic_load_explicit(&c->equiv[r], memory_order_acquire);
  if (q && !job->lock_free && !ag_narrow(job)) {
    ag_depth_equiv_note(q, job->state);
    ag_cache_grow(c, job->v, ag_depth_equiv_take_growth(q));
  }
}

ag_status ag_mask_cache_get(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                            int32_t state, double deadline, bool lock_free, const atomic_bool *stop,
                            const ag_state_masks **out, ag_error *err) {
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
  ag_masks_job job = {.cache = c, .g = g, .v = v, .state = state, .rule = rule,
                      .walk = c->rule_walk[rule], .deadline = deadline, .stop = stop, .narrow = -1,
                      .plain = AG_PLAIN_UNKNOWN, .lock_free = lock_free};
  ag_status fst = ag_state_follow(c, g, v, rule, &job.follow, err); /* also part of a BYTES state's key */
  if (fst) return fst;
  const uint32_t *follow = job.follow;
  /* A HYBRID state whose walk can pass no rule edge (what follows a JSON object's
   * last value, or a call's closing tag) walks as a BYTES state does: keyed, and
   * shared with every state of the same automaton and FOLLOW set. */
  bool hybrid = job.walk == AG_WALK_HYBRID;
  bool keyed = ag_class_key_make(g, state, d, follow, hybrid, &key);
  if (keyed) e = ag_vcache_find(v, AG_VCACHE_CLASSES, &key);
  atomic_llong *origin = &c->n_shared;
  if (!e) {
    /* cheapest first: another FOLLOW set's classes, an equivalent state's, a walk */
    ag_vcache_key any_key = {0};
    /* Only a state that takes every plain token keeps an "any follow" entry
     * (ag_compute); equal keys are equal automata, so one found under the
     * state's key answers that without ag_plain_depth (docs/engine.md). */
    bool by_follow = keyed && job.walk != AG_WALK_DISPATCH && !ag_follow_is_any(follow) &&
                     ag_class_key_refollow(&key, ag_any_follow, &any_key);
    bool any_found = false;
    ag_status st = by_follow ? ag_by_any_follow(&job, &any_key, &any_found, &e, err) : AG_OK;
    if (!st && by_follow && !any_found) {
      job.plain = ag_plain_depth(g, state, v->max_token_len, &job.refuses);
      by_follow = job.plain >= v->max_token_len;
    }
    if (!st && !e && !lock_free) st = ag_try_derive(&job, &e, err);
    origin = &c->n_derived;
    if (!st && !e) {
      ag_state_masks *any = NULL; /* the walk also gives the "any follow" entry, when missing */
      st = ag_compute(&job, &e, by_follow && !any_found ? &any : NULL, err);
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
    ag_note_classified(&job);
    *out = e;
  } else {
    ag_state_masks_free(e);
    *out = expected;
  }
  return AG_OK;
}

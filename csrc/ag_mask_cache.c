/* ag_mask_cache.c - computing and publishing per-state token classes (see the header). */
#include "ag_mask_cache.h"

#include "ag_dispatch.h"
#include "ag_earley.h"

struct ag_mask_cache {
  int32_t n_states;
  _Atomic(ag_state_masks *) *entries; /* [n_states], NULL until computed */
  int32_t n_rules;
  /* [n_rules] a dispatch rule's safe tokens as a sorted-position bitset, NULL
   * until computed; the array is NULL when the grammar has no dispatch rule. */
  _Atomic(const uint32_t *) *safe;
  uint32_t **safe_owned; /* [n_rules] the sets this cache computed itself (the vocabulary's was full) */
  /* [n_rules] 1 when the rule's states are classified by walking its byte
   * automaton alone, without the Earley parser: rules without rule edges, and
   * dispatch rules, whose rule edges (after a trigger) are exits (see
   * ag_exit_or_end). Their classes are shared across grammars by key. */
  uint8_t *rule_dfa;
  atomic_size_t bytes;
};

ag_status ag_mask_cache_new(const ag_grammar *g, ag_mask_cache **out, ag_error *err) {
  *out = NULL;
  int32_t n_states = g->n_states;
  ag_mask_cache *c = calloc(1, sizeof *c);
  if (!c) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  c->entries = calloc((size_t)(n_states ? n_states : 1), sizeof *c->entries);
  c->rule_dfa = malloc((size_t)g->n_rules);
  if (g->rule_dispatch) {
    c->safe = calloc((size_t)g->n_rules, sizeof *c->safe);
    c->safe_owned = calloc((size_t)g->n_rules, sizeof *c->safe_owned);
  }
  if (!c->entries || !c->rule_dfa || (g->rule_dispatch && (!c->safe || !c->safe_owned))) {
    free(c->entries);
    free(c->rule_dfa);
    free(c->safe);
    free(c->safe_owned);
    free(c);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  memset(c->rule_dfa, 1, (size_t)g->n_rules);
  for (int32_t s = 0; s < n_states; s++) {
    int32_t r = g->state_rule[s];
    if (g->states[s].rule_begin != g->states[s].rule_end && !(g->rule_dispatch && g->rule_dispatch[r]))
      c->rule_dfa[r] = 0;
  }
  c->n_states = n_states;
  c->n_rules = g->n_rules;
  for (int32_t s = 0; s < n_states; s++) atomic_init(&c->entries[s], NULL);
  if (c->safe)
    for (int32_t r = 0; r < c->n_rules; r++) atomic_init(&c->safe[r], NULL);
  size_t safe_bytes = c->safe ? (size_t)c->n_rules * sizeof *c->safe : 0;
  atomic_init(&c->bytes, sizeof *c + (size_t)n_states * sizeof *c->entries + safe_bytes);
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
  free(e->uncertain);
  free(e->uncertain_bits);
  free(e);
}

void ag_mask_cache_free(ag_mask_cache *c) {
  if (!c) return;
  for (int32_t s = 0; s < c->n_states; s++) ag_state_masks_free(atomic_load(&c->entries[s]));
  if (c->safe_owned)
    for (int32_t r = 0; r < c->n_rules; r++) free(c->safe_owned[r]);
  free(c->safe_owned);
  free(c->safe);
  free(c->rule_dfa);
  free(c->entries);
  free(c);
}

size_t ag_mask_cache_bytes(const ag_mask_cache *c) { return atomic_load(&((ag_mask_cache *)c)->bytes); }

/* An entry of n bytes joins the cache: counted here and in the vocabulary's total. */
static void ag_cache_grow(ag_mask_cache *c, const ag_vocab *v, size_t n) {
  atomic_fetch_add(&c->bytes, n);
  ag_vocab_count(v, n);
}

/* The classification walk's state: can_end[d] says whether the item's rule could
 * end after at most d bytes of the current token (a running OR by depth). */
typedef struct ag_classify {
  ag_parser parser;
  const ag_grammar *dfa; /* set when the rule has byte edges only: walk its automaton */
  int32_t *dfa_state;    /* [max_token_len + 1] the automaton state after d bytes */
  bool *can_end; /* [max_token_len + 1] */
  double deadline; /* 0: none */
  AG_VEC(int32_t) uncertain;
  ag_state_masks *entry;
} ag_classify;

static void ag_mark_accepted(ag_state_masks *e, const ag_vocab *v, int32_t i) {
  ag_bit_set(e->accepted, v->sorted_ids[i]);
  ag_bit_set(e->accepted_pos, i);
}

/* Classifies sorted token i, which failed at byte `depth`, and every later token
 * sharing its first depth+1 bytes (they fail there too); returns the next position. */
static int32_t ag_classify_failed(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t depth,
                                  bool *oom) {
  if (!w->can_end[depth]) return ag_vocab_prefix_end(v, i, depth + 1); /* all rejected */
  int32_t j = i;
  do {
    if (!ag_vec_push(&w->uncertain, j)) *oom = true;
    j++;
  } while (j < v->n_sorted && v->lcp[j] > depth);
  return j;
}


/* Back to the first `depth` bytes of the current token (base: the parser's sets before it). */
static void ag_walk_truncate(ag_classify *w, uint32_t base, uint32_t depth) {
  if (!w->dfa) ag_parser_truncate(&w->parser, base + depth);
}

/* Whether, walking a rule's automaton alone, the answer at state s may depend on
 * what lies outside the walk: the rule can end there, or a rule edge leaves it
 * (a dispatch's trigger opens its tag). A token the walk rejects after such a
 * state is uncertain, not rejected; one it consumes whole is accepted. */
static bool ag_exit_or_end(const ag_grammar *g, int32_t s) {
  const ag_state *st = &g->states[s];
  return st->accepting || st->rule_begin != st->rule_end;
}

/* Scans byte c after d bytes: *ok says whether it is allowed; sets can_end[d + 1]. */
static ag_status ag_walk_scan(ag_classify *w, uint32_t d, uint8_t c, bool *ok, ag_error *err) {
  if (w->dfa) {
    int32_t t = ag_state_step(w->dfa, w->dfa_state[d], c);
    *ok = t >= 0;
    if (*ok) {
      w->dfa_state[d + 1] = t;
      w->can_end[d + 1] = w->can_end[d] || ag_exit_or_end(w->dfa, t);
    }
    return AG_OK;
  }
  ag_status st = ag_parser_scan(&w->parser, c, ok, err);
  if (!st && *ok) w->can_end[d + 1] = w->can_end[d] || ag_parser_bottom_can_end(&w->parser);
  return st;
}

/* Walks the sorted vocabulary once, tokens in `safe` (may be NULL) accepted
 * without a walk. `shared` is the prefix the next token shares with the last
 * one walked: the least LCP since then. */
static ag_status ag_classify_all(ag_classify *w, const ag_vocab *v, const uint32_t *safe,
                                 ag_error *err) {
  const uint32_t base = w->dfa ? 0 : ag_parser_num_sets(&w->parser);
  uint32_t depth = 0, shared = UINT32_MAX;
  bool oom = false;
  /* The bytes that can start a token here: a token starting with any other fails
   * at its first byte, which is known without scanning it (with the Earley
   * parser, a scan costs the whole set, large in deeply nested rules). */
  uint32_t first[8];
  if (w->dfa) memset(first, 0xff, sizeof first);
  else ag_parser_next_bytes(&w->parser, first);
  for (int32_t i = 0, checked = 0; i < v->n_sorted && !oom;) {
    if (w->deadline > 0 && i >= checked) { /* the clock, every 4096 tokens */
      ag_status st = ag_check_deadline(w->deadline, err);
      if (st) return st;
      checked = i + 4096;
    }
    if (v->lcp[i] < shared) shared = v->lcp[i];
    if (safe && ag_bit(safe, i)) { /* already in the entry (ag_compute copied them) */
      i++;
      continue;
    }
    uint32_t len;
    const uint8_t *tok = ag_vocab_token(v, v->sorted_ids[i], &len);
    if (shared < depth) {
      ag_walk_truncate(w, base, shared);
      depth = shared;
    }
    shared = UINT32_MAX;
    bool ok = depth > 0 || ((first[tok[0] >> 5] >> (tok[0] & 31)) & 1u);
    while (depth < len && ok) {
      ag_status st = ag_walk_scan(w, depth, tok[depth], &ok, err);
      if (st) return st;
      depth += ok;
    }
    if (!ok) {
      i = ag_classify_failed(w, v, i, depth, &oom);
      continue;
    }
    ag_mark_accepted(w->entry, v, i);
    i++;
  }
  ag_walk_truncate(w, base, 0);
  return oom ? ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask") : AG_OK;
}

/* Keeps the uncertain positions as a list or a bitset, whichever is smaller. */
static ag_status ag_store_uncertain(ag_state_masks *e, const ag_vocab *v, void *list_vec,
                                    ag_error *err) {
  AG_VEC(int32_t) *list = list_vec;
  size_t bit_words = ((size_t)v->n_sorted + 31) / 32;
  if (list->len <= bit_words) {
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

static ag_status ag_compute(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                            int32_t state, double deadline, ag_state_masks **out, ag_error *err) {
  const uint32_t *safe = NULL;
  int32_t rule = g->state_rule[state];
  if (c->safe && g->rule_dispatch[rule]) {
    ag_status st = ag_safe_tokens(c, g, v, rule, &safe, err);
    if (st) return st;
  }
  size_t words = ((size_t)v->mask_size + 31) / 32;
  ag_classify w;
  memset(&w, 0, sizeof w);
  w.deadline = deadline;
  w.entry = calloc(1, sizeof *w.entry);
  w.can_end = malloc(sizeof *w.can_end * ((size_t)v->max_token_len + 1));
  if (c->rule_dfa[rule]) {
    w.dfa = g;
    w.dfa_state = malloc(sizeof *w.dfa_state * ((size_t)v->max_token_len + 1));
  }
  ag_status st = AG_OK;
  size_t pos_words = ((size_t)v->n_sorted + 31) / 32 + 1;
  if (!w.entry || !w.can_end || (w.dfa && !w.dfa_state) || !(w.entry->accepted = calloc(words + 1, sizeof(uint32_t))) ||
      !(w.entry->accepted_pos = calloc(pos_words, sizeof(uint32_t))))
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  if (!st && safe) { /* the safe tokens are accepted: both forms of the set, copied */
    memcpy(w.entry->accepted_pos, safe, ag_safe_pos_words(v) * sizeof *safe);
    memcpy(w.entry->accepted, safe + ag_safe_pos_words(v), (words + 1) * sizeof *safe);
  }
  if (!st && w.dfa) {
    w.dfa_state[0] = state;
    /* Not ag_exit_or_end: a rule edge of the state itself has its rule's start
     * predicted in the same Earley set, whose own classes decide the tokens that
     * enter it. Only rule edges reached after a byte are exits. */
    w.can_end[0] = g->states[state].accepting;
  } else if (!st) {
    st = ag_parser_init_item(&w.parser, g, state, err);
    if (!st) w.can_end[0] = ag_parser_bottom_can_end(&w.parser);
  }
  if (!st) st = ag_classify_all(&w, v, safe, err);
  ag_parser_free(&w.parser);
  free(w.dfa_state);
  free(w.can_end);
  if (st) {
    ag_vec_free(&w.uncertain);
    ag_state_masks_free(w.entry);
    return st;
  }
  st = ag_store_uncertain(w.entry, v, &w.uncertain, err);
  if (st) {
    ag_state_masks_free(w.entry);
    return st;
  }
  w.entry->bytes += sizeof *w.entry + (words + 1 + pos_words) * sizeof(uint32_t);
  *out = w.entry;
  return AG_OK;
}

ag_status ag_mask_cache_get(ag_mask_cache *c, const ag_grammar *g, const ag_vocab *v,
                            int32_t state, double deadline, const ag_state_masks **out,
                            ag_error *err) {
  ag_state_masks *e = atomic_load_explicit(&c->entries[state], memory_order_acquire);
  if (e) {
    *out = e;
    return AG_OK;
  }
  ag_vcache_key key;
  int32_t rule = g->state_rule[state];
  const ag_dispatch *d = g->rule_dispatch ? g->rule_dispatch[rule] : NULL;
  bool keyed = c->rule_dfa[rule] && ag_class_key_make(g, state, d, &key);
  if (keyed) e = ag_vcache_find(v, AG_VCACHE_CLASSES, &key);
  if (!e) {
    ag_status st = ag_compute(c, g, v, state, deadline, &e, err);
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
  if (atomic_compare_exchange_strong_explicit(&c->entries[state], &expected, e,
                                              memory_order_acq_rel, memory_order_acquire)) {
    if (!e->shared) ag_cache_grow(c, v, e->bytes);
    *out = e;
  } else {
    ag_state_masks_free(e);
    *out = expected;
  }
  return AG_OK;
}

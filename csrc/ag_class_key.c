/* ag_class_key.c - the canonical form of a state's byte automaton, the key under
 * which the vocabulary shares the state's token classes (see ag_mask_cache.h). */
#include "ag_dispatch.h"
#include "ag_class_key.h"

/* Bounds of what is shared: the automaton's size, and its key's. */
#define AG_CLASS_KEY_MAX_STATES 1024
#define AG_CLASS_KEY_MAX_WORDS (1 << 16)

/* An open-addressing map from state id to breadth-first order, of `cap` states
 * (2 * cap slots). Most automata keyed are a literal's or a key's few states:
 * a map of AG_CLASS_KEY_SMALL lives on the stack, and only an automaton that
 * outgrows it is keyed again with one of AG_CLASS_KEY_MAX_STATES. The large
 * one (24 KiB, and 16 KiB cleared) cost a malloc and a memset per first visit
 * of every state. */
#define AG_CLASS_KEY_SMALL 64
typedef struct ag_order_map {
  int32_t *state, *order, *queue; /* [2 * cap], [2 * cap], [cap] */
  int32_t cap, count;
  bool full; /* a state did not fit */
} ag_order_map;

/* The order of state s, giving it the next one when new; -1 when full. */
static int32_t ag_order_of(ag_order_map *m, int32_t s) {
  uint32_t mask = 2 * (uint32_t)m->cap - 1, i = ((uint32_t)s * 2654435761u) & mask;
  while (m->state[i] >= 0) {
    if (m->state[i] == s) return m->order[i];
    i = (i + 1) & mask;
  }
  if (m->count >= m->cap) {
    m->full = true;
    return -1;
  }
  m->state[i] = s;
  m->order[i] = m->count;
  m->queue[m->count] = s;
  return m->count++;
}

/* Appends w, growing the words to at most AG_CLASS_KEY_MAX_WORDS: most keys
 * are a few hundred words, and a buffer of the bound (256 KiB) would be mapped
 * and unmapped by the allocator at every state's first visit. */
static bool ag_key_push(ag_vcache_key *key, size_t *cap, uint32_t w) {
  if (key->n == *cap) {
    if (*cap >= AG_CLASS_KEY_MAX_WORDS) return false;
    uint32_t *words = realloc(key->words, 2 * *cap * sizeof *words);
    if (!words) return false;
    key->words = words;
    *cap *= 2;
  }
  key->words[key->n++] = w;
  return true;
}

/* Appends d's words: their count, each one's length and role, then the bytes. */
static bool ag_key_push_words(ag_vcache_key *key, size_t *cap, const ag_dispatch *d) {
  bool ok = ag_key_push(key, cap, (uint32_t)d->n_words) && ag_key_push(key, cap, (uint32_t)d->flags);
  for (int32_t k = 0; ok && k < d->n_words; k++)
    ok = ag_key_push(key, cap, d->offsets[k + 1] - d->offsets[k]) &&
         ag_key_push(key, cap, d->rules[k] < 0 ? (uint32_t)-d->rules[k] : 0);
  for (uint32_t b = 0; ok && b < d->offsets[d->n_words]; b++) ok = ag_key_push(key, cap, d->bytes[b]);
  return ok;
}

/* What a key describes: ag_class_key_make's arguments, all borrowed. */
typedef struct ag_key_source {
  const ag_grammar *g;
  int32_t state;
  const ag_dispatch *d;
  const uint32_t *follow;
  bool bytes_only;
} ag_key_source;

/* The key's words with map m, into key->words of room *cap (kept from a first
 * try); false when it failed (m->full: the map was too small). */
static bool ag_class_key_fill(const ag_key_source *src, ag_order_map *m, ag_vcache_key *key,
                              size_t *cap) {
  const ag_grammar *g = src->g;
  const ag_dispatch *d = src->d;
  const uint32_t *follow = src->follow;
  bool bytes_only = src->bytes_only;
  key->n = 0;
  memset(m->state, 0xff, sizeof *m->state * 2 * (size_t)m->cap); /* every slot -1: empty */
  m->count = 0;
  m->full = false;
  bool ok = ag_order_of(m, src->state) == 0;
  for (int32_t head = 0; ok && head < m->count; head++) {
    const ag_state *st = &g->states[m->queue[head]];
    uint32_t exits = st->accepting | (uint32_t)(st->rule_begin != st->rule_end) << 1;
    ok = !(bytes_only && (exits & 2)) && ag_key_push(key, cap, exits) &&
         ag_key_push(key, cap, st->byte_end - st->byte_begin);
    for (uint32_t e = st->byte_begin; ok && e < st->byte_end; e++) {
      const ag_byte_edge *be = &g->byte_edges[e];
      int32_t order = ag_order_of(m, be->target);
      ok = order >= 0 && ag_key_push(key, cap, be->lo) && ag_key_push(key, cap, be->hi) &&
           ag_key_push(key, cap, (uint32_t)order);
    }
  }
  ok = ok && ag_key_push(key, cap, (uint32_t)m->count);
  ok = ok && (!d || ag_key_push_words(key, cap, d));
  for (int k = 0; ok && follow && k < 8; k++) ok = ag_key_push(key, cap, follow[k]);
  return ok;
}

/* The most byte edges ag_meets_rule_edge follows. */
#define AG_RULE_EDGE_PROBE 64

/*
 * Whether a descent from `state` along byte edges meets a state with rule
 * edges within AG_RULE_EDGE_PROBE steps: then a key made with bytes_only fails,
 * and only after its breadth-first survey has reached that state. In a trie of
 * tool names the rule edges wait at the leaves, a name's length below the
 * root, past nearly every state: the survey cost a fifth of a first visit to
 * the root of a hundred names. The descent takes each state's first edge that
 * leaves it (a loop on itself would hold it); false proves nothing.
 */
static bool ag_meets_rule_edge(const ag_grammar *g, int32_t state) {
  for (int step = 0; step < AG_RULE_EDGE_PROBE; step++) {
    const ag_state *st = &g->states[state];
    if (st->rule_begin != st->rule_end) return true;
    int32_t next = -1;
    for (uint32_t e = st->byte_begin; e < st->byte_end && next < 0; e++)
      if (g->byte_edges[e].target != state) next = g->byte_edges[e].target;
    if (next < 0) return false;
    state = next;
  }
  return false;
}

bool ag_class_key_make(const ag_grammar *g, int32_t state, const ag_dispatch *d,
                       const uint32_t *follow, bool bytes_only, ag_vcache_key *key) {
  memset(key, 0, sizeof *key);
  if (bytes_only && ag_meets_rule_edge(g, state)) return false;
  size_t cap = 256;
  if (!(key->words = malloc(sizeof *key->words * cap))) return false;
  int32_t small_state[2 * AG_CLASS_KEY_SMALL], small_order[2 * AG_CLASS_KEY_SMALL],
      small_queue[AG_CLASS_KEY_SMALL];
  ag_order_map m = {small_state, small_order, small_queue, AG_CLASS_KEY_SMALL, 0, false};
  ag_key_source src = {g, state, d, follow, bytes_only};
  bool ok = ag_class_key_fill(&src, &m, key, &cap);
  if (!ok && m.full) {
    int32_t big = AG_CLASS_KEY_MAX_STATES;
    m = (ag_order_map){malloc(sizeof(int32_t) * 2 * big), malloc(sizeof(int32_t) * 2 * big),
                       malloc(sizeof(int32_t) * big), big, 0, false};
    ok = m.state && m.order && m.queue &&
         ag_class_key_fill(&src, &m, key, &cap);
    free(m.state);
    free(m.order);
    free(m.queue);
  }
  if (!ok) {
    ag_vcache_key_free(key);
    return false;
  }
  ag_vcache_key_seal(key);
  return true;
}

bool ag_class_key_refollow(const ag_vcache_key *key, const uint32_t *follow, ag_vcache_key *out) {
  memset(out, 0, sizeof *out);
  if (key->n < 8 || !(out->words = malloc(key->n * sizeof *out->words))) return false;
  out->n = key->n;
  memcpy(out->words, key->words, (key->n - 8) * sizeof *out->words);
  memcpy(out->words + key->n - 8, follow, 8 * sizeof *follow);
  ag_vcache_key_seal(out);
  return true;
}

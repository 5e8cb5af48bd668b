/* ag_class_cache.c - token classes shared by every grammar compiled for one
 * vocabulary, keyed by the canonical byte automaton of a state (see
 * ag_mask_cache.h). The cache is a fixed array of push-only, lock-free lists. */
#include "ag_mask_cache.h"

/* Bounds of what is shared: the automaton's size, and the entries per vocabulary
 * (each holds two 128k-bit sets for a Llama-3 vocabulary). */
#define AG_CLASS_KEY_MAX_STATES 1024
#define AG_CLASS_KEY_MAX_WORDS (1 << 16)
#define AG_CLASS_CACHE_MAX 2048

typedef struct ag_class_entry {
  struct ag_class_entry *next;
  ag_class_key key;
  ag_state_masks *masks;
} ag_class_entry;

/* A small open-addressing map from state id to breadth-first order. */
typedef struct ag_order_map {
  int32_t state[2 * AG_CLASS_KEY_MAX_STATES];
  int32_t order[2 * AG_CLASS_KEY_MAX_STATES];
} ag_order_map;

/* The order of state s, giving it the next one (*count) when new; -1 when full. */
static int32_t ag_order_of(ag_order_map *m, int32_t s, int32_t *queue, int32_t *count) {
  uint32_t mask = 2 * AG_CLASS_KEY_MAX_STATES - 1, i = ((uint32_t)s * 2654435761u) & mask;
  while (m->state[i] >= 0) {
    if (m->state[i] == s) return m->order[i];
    i = (i + 1) & mask;
  }
  if (*count >= AG_CLASS_KEY_MAX_STATES) return -1;
  m->state[i] = s;
  m->order[i] = *count;
  queue[*count] = s;
  return (*count)++;
}

static bool ag_key_push(ag_class_key *key, size_t cap, uint32_t w) {
  if (key->n >= cap) return false;
  key->words[key->n++] = w;
  return true;
}

bool ag_class_key_make(const ag_grammar *g, int32_t state, ag_class_key *key) {
  memset(key, 0, sizeof *key);
  ag_order_map *m = malloc(sizeof *m);
  int32_t *queue = malloc(sizeof *queue * AG_CLASS_KEY_MAX_STATES);
  key->words = malloc(sizeof *key->words * AG_CLASS_KEY_MAX_WORDS);
  bool ok = m && queue && key->words;
  if (ok) memset(m->state, 0xff, sizeof m->state); /* every slot -1: empty */
  int32_t count = 0;
  ok = ok && ag_order_of(m, state, queue, &count) == 0;
  for (int32_t head = 0; ok && head < count; head++) {
    const ag_state *st = &g->states[queue[head]];
    ok = ag_key_push(key, AG_CLASS_KEY_MAX_WORDS, st->accepting) &&
         ag_key_push(key, AG_CLASS_KEY_MAX_WORDS, st->byte_end - st->byte_begin);
    for (uint32_t e = st->byte_begin; ok && e < st->byte_end; e++) {
      const ag_byte_edge *be = &g->byte_edges[e];
      int32_t order = ag_order_of(m, be->target, queue, &count);
      ok = order >= 0 && ag_key_push(key, AG_CLASS_KEY_MAX_WORDS, be->lo) &&
           ag_key_push(key, AG_CLASS_KEY_MAX_WORDS, be->hi) &&
           ag_key_push(key, AG_CLASS_KEY_MAX_WORDS, (uint32_t)order);
    }
  }
  ok = ok && ag_key_push(key, AG_CLASS_KEY_MAX_WORDS, (uint32_t)count);
  free(m);
  free(queue);
  if (!ok) {
    ag_class_key_free(key);
    return false;
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < key->n; i++) h = (h ^ key->words[i]) * 1099511628211ull;
  key->hash = h;
  return true;
}

void ag_class_key_free(ag_class_key *key) {
  free(key->words);
  memset(key, 0, sizeof *key);
}

static _Atomic(struct ag_class_entry *) *ag_bucket(const ag_vocab *v, uint64_t hash) {
  return &((ag_vocab *)v)->class_cache[hash % AG_CLASS_BUCKETS];
}

const ag_state_masks *ag_class_cache_find(const ag_vocab *v, const ag_class_key *key) {
  for (const ag_class_entry *e = atomic_load_explicit(ag_bucket(v, key->hash), memory_order_acquire);
       e; e = e->next)
    if (e->key.hash == key->hash && e->key.n == key->n &&
        memcmp(e->key.words, key->words, key->n * sizeof *key->words) == 0)
      return e->masks;
  return NULL;
}

bool ag_class_cache_add(const ag_vocab *v, ag_class_key *key, ag_state_masks *masks) {
  ag_vocab *mv = (ag_vocab *)v; /* the caches are the only parts of a vocabulary that change */
  if (atomic_fetch_add(&mv->class_cache_len, 1) >= AG_CLASS_CACHE_MAX) return false;
  ag_class_entry *e = calloc(1, sizeof *e);
  if (!e) return false;
  e->key = *key;
  memset(key, 0, sizeof *key);
  e->masks = masks;
  masks->shared = true;
  _Atomic(struct ag_class_entry *) *bucket = ag_bucket(v, e->key.hash);
  e->next = atomic_load_explicit(bucket, memory_order_acquire);
  /* Two threads may add the same automaton: both entries stay, both are correct. */
  while (!atomic_compare_exchange_weak_explicit(bucket, &e->next, e, memory_order_acq_rel,
                                                memory_order_acquire))
    continue;
  return true;
}

void ag_class_cache_free(ag_vocab *v) {
  for (int b = 0; b < AG_CLASS_BUCKETS; b++) {
    ag_class_entry *e = atomic_load(&v->class_cache[b]);
    while (e) {
      ag_class_entry *next = e->next;
      ag_class_key_free(&e->key);
      ag_state_masks_destroy(e->masks);
      free(e);
      e = next;
    }
  }
}

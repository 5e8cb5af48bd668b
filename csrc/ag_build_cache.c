/*
 * ag_build_cache.c - pieces of automata kept across loads: a fixed number of
 * slots under a lock, each a key's words and its immutable piece, freed with
 * the cache; and the last build's scratch memory, lent to one build at a time.
 */
#include "ag_build_cache.h"
#include "ag_fsm_builder.h"
#include "agentgrammar_testing.h"

#include <pthread.h>

/* A process meets few distinct pieces: the JSON converter writes the same ways
 * out of every key trie, and other layouts add a few more. */
#define AG_BUILD_CACHE_SLOTS 16

typedef struct ag_piece_slot {
  int32_t *key;
  size_t n;
  uint32_t hash;
  ag_key_piece *piece;
} ag_piece_slot;

/* The most scratch memory kept between loads: a typical JSON Schema's build
 * grows tens of kilobytes; a large grammar's is freed rather than held. */
#define AG_SCRATCH_MAX_BYTES ((size_t)1 << 20)

struct ag_build_cache {
  pthread_mutex_t lock; /* guards n_slots, the slots and the scratch */
  int32_t n_slots;
  bool has_scratch;
  ag_builder scratch; /* the last build's scratch memory (ag_builder_move_scratch) */
  ag_piece_slot slots[AG_BUILD_CACHE_SLOTS];
};

ag_status ag_build_cache_new(ag_build_cache **out, ag_error *err) {
  if (!out) return ag_fail(err, AG_ERR_INVALID, -1, "ag_build_cache_new: out is NULL");
  ag_build_cache *c = calloc(1, sizeof *c);
  if (!c) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory making the build cache");
  if (pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c);
    return ag_fail(err, AG_ERR_NOMEM, -1, "could not make the build cache's lock");
  }
  *out = c;
  return AG_OK;
}

void ag_key_piece_free(ag_key_piece *piece) {
  if (!piece) return;
  free(piece->edge_begin);
  free(piece->edges);
  free(piece->other_row);
  free(piece->any_row);
  free(piece);
}

void ag_build_cache_free(ag_build_cache *c) {
  if (!c) return;
  for (int32_t k = 0; k < c->n_slots; k++) {
    free(c->slots[k].key);
    ag_key_piece_free(c->slots[k].piece);
  }
  ag_builder_free(&c->scratch);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

void ag_build_cache_take_scratch(ag_build_cache *c, ag_builder *b) {
  pthread_mutex_lock(&c->lock);
  if (c->has_scratch) ag_builder_move_scratch(b, &c->scratch);
  c->has_scratch = false;
  pthread_mutex_unlock(&c->lock);
}

void ag_build_cache_keep_scratch(ag_build_cache *c, ag_builder *b) {
  if (ag_builder_scratch_bytes(b) > AG_SCRATCH_MAX_BYTES) return;
  pthread_mutex_lock(&c->lock);
  if (!c->has_scratch) {
    ag_builder_move_scratch(&c->scratch, b);
    c->has_scratch = true;
  }
  pthread_mutex_unlock(&c->lock);
}

/* The slot holding key, or -1; under the lock. */
static int32_t ag_slot_of(const ag_build_cache *c, const int32_t *key, size_t n, uint32_t hash) {
  for (int32_t k = 0; k < c->n_slots; k++) {
    const ag_piece_slot *s = &c->slots[k];
    if (s->hash == hash && s->n == n && ag_words_equal(s->key, key, n)) return k;
  }
  return -1;
}

const ag_key_piece *ag_build_cache_find(ag_build_cache *c, const int32_t *key, size_t n) {
  uint32_t hash = ag_set_hash(key, n);
  pthread_mutex_lock(&c->lock);
  int32_t k = ag_slot_of(c, key, n, hash);
  const ag_key_piece *piece = k < 0 ? NULL : c->slots[k].piece;
  pthread_mutex_unlock(&c->lock);
  return piece; /* immutable, and freed only with the cache */
}

void ag_build_cache_put(ag_build_cache *c, const int32_t *key, size_t n, ag_key_piece *piece) {
  uint32_t hash = ag_set_hash(key, n);
  int32_t *copy = malloc((n ? n : 1) * sizeof *copy);
  pthread_mutex_lock(&c->lock);
  bool kept = copy && c->n_slots < AG_BUILD_CACHE_SLOTS && ag_slot_of(c, key, n, hash) < 0;
  if (kept) {
    memcpy(copy, key, n * sizeof *key);
    ag_piece_slot s = {copy, n, hash, piece};
    c->slots[c->n_slots++] = s;
  }
  pthread_mutex_unlock(&c->lock);
  if (!kept) {
    free(copy);
    ag_key_piece_free(piece);
  }
}

size_t ag_build_cache_testing_scratch_bytes(const ag_build_cache *c) {
  ag_build_cache *m = (ag_build_cache *)c; /* the lock is not part of its value */
  pthread_mutex_lock(&m->lock);
  size_t n = c->has_scratch ? ag_builder_scratch_bytes(&c->scratch) : 0;
  pthread_mutex_unlock(&m->lock);
  return n;
}

int32_t ag_build_cache_testing_size(const ag_build_cache *c) {
  ag_build_cache *m = (ag_build_cache *)c; /* the lock is not part of its value */
  pthread_mutex_lock(&m->lock);
  int32_t n = c->n_slots;
  pthread_mutex_unlock(&m->lock);
  return n;
}

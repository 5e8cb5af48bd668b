/* ag_vocab_cache.c - results kept with a vocabulary and shared by every grammar
 * compiled for it (see ag_vocab_cache.h): push-only, lock-free lists in a fixed
 * array of buckets, bounded in bytes (ag_vocab_set_shared_cache_limit).
 *
 * Why push-only and not LRU: readers hold entries without locks or reference
 * counts (a mask fill may be using one), so an entry can never be freed before
 * the vocabulary. The byte bound keeps that floor small; what does not fit is
 * kept per grammar, and goes with the grammar. */
#include "ag_vocab.h"

typedef struct ag_vcache_entry {
  struct ag_vcache_entry *next;
  ag_vcache_kind kind;
  ag_vcache_key key;
  void *value;
  void (*destroy)(void *);
} ag_vcache_entry;

void ag_vcache_key_seal(ag_vcache_key *key) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < key->n; i++) h = (h ^ key->words[i]) * 1099511628211ull;
  key->hash = h;
}

void ag_vcache_key_free(ag_vcache_key *key) {
  free(key->words);
  memset(key, 0, sizeof *key);
}

static _Atomic(struct ag_vcache_entry *) *ag_bucket(const ag_vocab *v, uint64_t hash) {
  return &((ag_vocab *)v)->cache[hash % AG_VCACHE_BUCKETS];
}

void *ag_vcache_find(const ag_vocab *v, ag_vcache_kind kind, const ag_vcache_key *key) {
  for (const ag_vcache_entry *e = atomic_load_explicit(ag_bucket(v, key->hash), memory_order_acquire);
       e; e = e->next)
    if (e->kind == kind && e->key.hash == key->hash && e->key.n == key->n &&
        memcmp(e->key.words, key->words, key->n * sizeof *key->words) == 0)
      return e->value;
  return NULL;
}

bool ag_vcache_add(const ag_vocab *v, ag_vcache_kind kind, ag_vcache_key *key, void *value,
                   size_t bytes, void (*destroy)(void *)) {
  ag_vocab *mv = (ag_vocab *)v; /* the caches are the only part of a vocabulary that changes */
  bytes += sizeof(ag_vcache_entry) + key->n * sizeof *key->words;
  size_t before = atomic_fetch_add(&mv->shared_bytes, bytes);
  if (before + bytes > atomic_load(&mv->shared_limit)) {
    atomic_fetch_sub(&mv->shared_bytes, bytes);
    return false;
  }
  ag_vcache_entry *e = calloc(1, sizeof *e);
  if (!e) {
    atomic_fetch_sub(&mv->shared_bytes, bytes);
    return false;
  }
  ag_vocab_count(v, bytes);
  e->kind = kind;
  e->key = *key;
  memset(key, 0, sizeof *key);
  e->value = value;
  e->destroy = destroy;
  _Atomic(struct ag_vcache_entry *) *bucket = ag_bucket(v, e->key.hash);
  e->next = atomic_load_explicit(bucket, memory_order_acquire);
  /* Two threads may add the same key: both entries stay, both are correct. */
  while (!atomic_compare_exchange_weak_explicit(bucket, &e->next, e, memory_order_acq_rel,
                                                memory_order_acquire))
    continue;
  return true;
}

void ag_vcache_free(ag_vocab *v) {
  for (int b = 0; b < AG_VCACHE_BUCKETS; b++) {
    ag_vcache_entry *e = atomic_load(&v->cache[b]);
    while (e) {
      ag_vcache_entry *next = e->next;
      ag_vcache_key_free(&e->key);
      e->destroy(e->value);
      free(e);
      e = next;
    }
  }
}

ag_status ag_vcache_bits(const ag_vocab *v, ag_vcache_kind kind, ag_vcache_key *key,
                         const ag_vcache_maker *maker, const uint32_t **out, uint32_t **owned,
                         ag_error *err) {
  size_t words = maker->words;
  *owned = NULL;
  if ((*out = ag_vcache_find(v, kind, key))) {
    ag_vcache_key_free(key);
    return AG_OK;
  }
  uint32_t *bits = calloc(words, sizeof *bits);
  ag_status st = bits ? maker->make(v, maker->ctx, bits, err)
                      : ag_fail(err, AG_ERR_NOMEM, -1, "out of memory finding a set of tokens");
  if (!st && !ag_vcache_add(v, kind, key, bits, words * sizeof *bits, free)) *owned = bits;
  ag_vcache_key_free(key); /* when the cache took it, nothing is left to free */
  if (st) {
    free(bits);
    return st;
  }
  *out = bits;
  return AG_OK;
}

/* ag_vocab_cache.c - results kept with a vocabulary and shared by every grammar
 * compiled for it (see ag_vocab_cache.h): push-only, lock-free lists in a fixed
 * array of buckets, made on the first add, bounded in bytes
 * (ag_vocab_set_shared_cache_limit).
 *
 * Why push-only and not LRU: readers hold entries without locks or reference
 * counts (a mask fill may be using one), so an entry can never be freed before
 * the vocabulary. The byte bound keeps that floor small; what does not fit is
 * kept per grammar, and goes with the grammar. */
#include "ag_vocab.h"

#include <stdatomic.h>

typedef struct ag_vcache_entry {
  struct ag_vcache_entry *next;  /* in its bucket */
  struct ag_vcache_entry *other; /* in the vocabulary's list of every entry */
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

/* calloc's zero bytes are NULL buckets: a lock-free atomic pointer is a plain
 * pointer, and the buckets' pages are only touched where entries land. */
_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "atomic pointers must be plain pointers");

/* The bucket of hash, or NULL while the vocabulary has no buckets. */
static ag_vcache_bucket *ag_bucket(const ag_vocab *v, uint64_t hash) {
  ag_vcache_bucket *all = atomic_load_explicit(&((ag_vocab *)v)->cache, memory_order_acquire);
  return all ? &all[hash % AG_VCACHE_BUCKETS] : NULL;
}

/* The bucket of hash, making the buckets on first use. Two threads may make
 * them at once: the first to publish wins and the other frees its copy. */
static ag_vcache_bucket *ag_bucket_make(ag_vocab *v, uint64_t hash) {
  ag_vcache_bucket *all = atomic_load_explicit(&v->cache, memory_order_acquire);
  if (!all) {
    ag_vcache_bucket *mine = calloc(AG_VCACHE_BUCKETS, sizeof *mine);
    if (!mine) return NULL;
    if (atomic_compare_exchange_strong_explicit(&v->cache, &all, mine, memory_order_acq_rel,
                                                memory_order_acquire))
      all = mine;
    else
      free(mine); /* `all` is the winner's */
  }
  return &all[hash % AG_VCACHE_BUCKETS];
}

void *ag_vcache_find(const ag_vocab *v, ag_vcache_kind kind, const ag_vcache_key *key) {
  ag_vcache_bucket *bucket = ag_bucket(v, key->hash);
  if (!bucket) return NULL;
  for (const ag_vcache_entry *e = atomic_load_explicit(bucket, memory_order_acquire); e; e = e->next)
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
  ag_vcache_bucket *bucket = ag_bucket_make(mv, key->hash);
  ag_vcache_entry *e = bucket ? calloc(1, sizeof *e) : NULL;
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
  e->next = atomic_load_explicit(bucket, memory_order_acquire);
  /* Two threads may add the same key: both entries stay, both are correct. */
  while (!atomic_compare_exchange_weak_explicit(bucket, &e->next, e, memory_order_acq_rel,
                                                memory_order_acquire))
    continue;
  e->other = atomic_load_explicit(&mv->cache_entries, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&mv->cache_entries, &e->other, e,
                                                memory_order_release, memory_order_relaxed))
    continue;
  return true;
}

void ag_vcache_free(ag_vocab *v) {
  ag_vcache_entry *e = atomic_load(&v->cache_entries);
  while (e) {
    ag_vcache_entry *other = e->other;
    ag_vcache_key_free(&e->key);
    e->destroy(e->value);
    free(e);
    e = other;
  }
  atomic_store(&v->cache_entries, NULL);
  free(atomic_load(&v->cache));
  atomic_store(&v->cache, NULL);
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

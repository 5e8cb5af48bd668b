/*
 * ag_vocab_cache.h - the vocabulary's shared caches (ag_vocab_cache.c): results
 * that depend only on the vocabulary and a key of words (a dispatch's words, the
 * canonical form of a byte automaton) are kept with the vocabulary, so every
 * grammar compiled for it (one Compiler) shares them. Thread-safe; values live
 * as long as the vocabulary. Internal.
 */
#ifndef AG_VOCAB_CACHE_H
#define AG_VOCAB_CACHE_H

#include "ag_util.h"

/* Buckets: one Compiler's shared classes grow with every tool and schema it
 * compiles, and a lookup follows one chain (docs/engine.md, shared caches). */
#define AG_VCACHE_BUCKETS (1 << 16)
/* One bucket: the head of a push-only list of entries. */
typedef _Atomic(struct ag_vcache_entry *) ag_vcache_bucket;
typedef enum ag_vcache_kind {
  AG_VCACHE_SAFE = 0,    /* a dispatch's safe tokens (ag_dispatch.h) */
  AG_VCACHE_CLASSES = 1, /* the token classes of a byte automaton (ag_mask_cache.c) */
  AG_VCACHE_BYTE = 2,    /* the tokens that contain one byte (ag_dispatch.c) */
  AG_VCACHE_CLASS_TOKENS = 3, /* the tokens made of a byte class (ag_class_tokens.h) */
  AG_VCACHE_KINDS = 4
} ag_vcache_kind;

typedef struct ag_vcache_key {
  uint32_t *words;
  size_t n;
  uint64_t hash; /* set by ag_vcache_key_seal */
} ag_vcache_key;

void ag_vcache_key_seal(ag_vcache_key *key);
void ag_vcache_key_free(ag_vcache_key *key);
/* The value of `kind` under key, or NULL. */
void *ag_vcache_find(const ag_vocab *v, ag_vcache_kind kind, const ag_vcache_key *key);
/* Adds value (holding `bytes`) under key, taking both (destroy frees the value
 * with the vocabulary), unless that would pass the vocabulary's shared-cache
 * byte limit: then it takes nothing and returns false. */
bool ag_vcache_add(const ag_vocab *v, ag_vcache_kind kind, ag_vcache_key *key, void *value,
                   size_t bytes, void (*destroy)(void *));
void ag_vcache_free(ag_vocab *v);

/* Fills bits (zeroed) with a set over the vocabulary; ctx is the maker's own. */
typedef ag_status (*ag_vcache_make)(const ag_vocab *v, const void *ctx, uint32_t *bits,
                                    ag_error *err);

/* How to make a set the cache lacks: `words` words, filled by make(v, ctx, ...). */
typedef struct ag_vcache_maker {
  size_t words;
  ag_vcache_make make;
  const void *ctx; /* borrowed */
} ag_vcache_maker;

/* The set of `kind` under key (which this frees), from the vocabulary's shared
 * cache, or made now by `maker` and added to it. When the cache is full the
 * set is the caller's to free: *owned is set to it (else NULL). */
ag_status ag_vcache_bits(const ag_vocab *v, ag_vcache_kind kind, ag_vcache_key *key,
                         const ag_vcache_maker *maker, const uint32_t **out, uint32_t **owned,
                         ag_error *err);

#endif /* AG_VOCAB_CACHE_H */

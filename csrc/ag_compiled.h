/*
 * ag_compiled.h - a grammar bound to a vocabulary (ag_compiled.c): what matchers
 * run on. Internal; the public handle is opaque (agentgrammar.h).
 */
#ifndef AG_COMPILED_H
#define AG_COMPILED_H

#include "ag_grammar.h"
#include "ag_mask_cache.h"
#include "ag_vocab.h"

struct ag_background;

struct ag_compiled {
  atomic_int refs;
  ag_grammar *grammar;
  ag_vocab *vocab;
  struct ag_mask_cache *cache; /* per-state token classes, filled on first use */
  ag_compiled **parts;         /* [grammar->n_parts] compiled parts, retained: their caches serve
                                * the part states, so every grammar linking a part shares them */
  /* Background classification (ag_background.h), NULL until started; owned, though
   * its pool may hold it queued: ag_background_release decides who frees what. */
  _Atomic(struct ag_background *) background;
  /* A grammar compiled for its first masks only, standing for a larger one built
   * when a matcher first needs more (ag_deferred.h); NULL for every other. Owned. */
  struct ag_deferred *deferred;
};

void ag_compiled_retain(ag_compiled *c);
/* Frees a compiled grammar whose last reference is gone, its background work
 * finished or cancelled (ag_compiled_free; ag_background.c when a slice ran on). */
void ag_compiled_destroy(ag_compiled *c);

/* The classes of a compiled grammar's state: from the part that owns the state
 * (ag_grammar_link), else from the grammar's own cache. Thread-safe. */
ag_status ag_compiled_state_masks(ag_compiled *c, int32_t state, double deadline,
                                  const ag_state_masks **out, ag_error *err);
/* The same for a background worker: lock-free, and given up once `stop` is set (ag_mask_cache_get). */
ag_status ag_compiled_state_masks_lock_free(ag_compiled *c, int32_t state, const atomic_bool *stop,
                                            const ag_state_masks **out,
                                            ag_error *err);

/* The copies each token begins from a counted rule's state (ag_copies.h),
 * wherever the state is held. Thread-safe. */
struct ag_copies;
ag_status ag_compiled_state_copies(ag_compiled *c, int32_t state, const struct ag_copies **out,
                                   ag_error *err);

/* The published classes of a state, wherever it is held; NULL when not computed yet. */
const ag_state_masks *ag_compiled_state_peek(ag_compiled *c, int32_t state);

#endif /* AG_COMPILED_H */

/*
 * ag_compiled.h - a grammar bound to a vocabulary (ag_compiled.c): what matchers
 * run on. Internal; the public handle is opaque (agentgrammar.h).
 */
#ifndef AG_COMPILED_H
#define AG_COMPILED_H

#include "ag_grammar.h"
#include "ag_mask_cache.h"
#include "ag_vocab.h"

struct ag_compiled {
  atomic_int refs;
  ag_grammar *grammar;
  ag_vocab *vocab;
  struct ag_mask_cache *cache; /* per-state token classes, filled on first use */
  ag_compiled **parts;         /* [grammar->n_parts] compiled parts, retained: their caches serve
                                * the part states, so every grammar linking a part shares them */
};

void ag_compiled_retain(ag_compiled *c);

/* The classes of a compiled grammar's state: from the part that owns the state
 * (ag_grammar_link), else from the grammar's own cache. Thread-safe. */
ag_status ag_compiled_state_masks(ag_compiled *c, int32_t state, double deadline,
                                  const ag_state_masks **out, ag_error *err);

#endif /* AG_COMPILED_H */

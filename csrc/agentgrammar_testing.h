/*
 * agentgrammar_testing.h - entry points for the engine's own tests. Not part of
 * the public surface (agentgrammar.h): they may change or go at any release.
 * agentgrammar/_build.py reads this header into the cffi module too, so the
 * Python tests reach them through the same `lib`.
 */
#ifndef AGENTGRAMMAR_TESTING_H
#define AGENTGRAMMAR_TESTING_H

#include "agentgrammar.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The mask ag_matcher_fill_mask computes, the slow, obviously correct way:
 * every token of the vocabulary run through the parser, no caches. The oracle
 * for tests.
 */
ag_status ag_matcher_fill_mask_direct(ag_matcher *m, uint32_t *mask, size_t n_words,
                                      int *all_allowed, ag_error *err);

/*
 * A hash of a grammar's automata that numbering does not change: each rule's
 * states in breadth-first order from its start (byte edges in order, rule
 * edges), their acceptance and counting. Equal automata hash alike.
 */
uint64_t ag_grammar_testing_shape(const ag_grammar *grammar);

/* The pieces a build cache holds (ag_build_cache_new). */
int32_t ag_build_cache_testing_size(const ag_build_cache *cache);
/* The bytes of a build's scratch memory the cache keeps for the next (0: none). */
size_t ag_build_cache_testing_scratch_bytes(const ag_build_cache *cache);

/*
 * While hold is set, the pool's workers wait at the start of each background
 * slice (a task taken, nothing done yet); ag_pool_testing_at_gate counts them.
 * Freeing the pool lets them go.
 */
void ag_pool_testing_hold(ag_pool *pool, int hold);
int32_t ag_pool_testing_at_gate(ag_pool *pool);
/* The workers waiting a tick at a time after background work (ag_pool.c: why
 * workers doze), whom a post does not wake. */
int32_t ag_pool_testing_dozing(ag_pool *pool);
/* The grammar's background work: 0 none, 1 queued, 2 in a slice, 3 finished;
 * *classified: the states its worker classified so far. */
int ag_compiled_testing_background(ag_compiled *compiled, int32_t *classified);
/* A deferred grammar's whole (ag_compiled_defer): 0 not deferred, 1 not built yet, 2 built. */
int ag_compiled_testing_deferred(ag_compiled *compiled);

#ifdef __cplusplus
}
#endif

#endif /* AGENTGRAMMAR_TESTING_H */

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

#ifdef __cplusplus
}
#endif

#endif /* AGENTGRAMMAR_TESTING_H */

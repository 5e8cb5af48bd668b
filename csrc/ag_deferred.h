/*
 * ag_deferred.h - a compiled grammar whose own automata are built after its
 * first mask (ag_deferred.c; the public entry point is ag_compiled_defer in
 * agentgrammar.h). Internal.
 */
#ifndef AG_DEFERRED_H
#define AG_DEFERRED_H

#include "ag_compiled.h"

typedef struct ag_deferred ag_deferred;

/* The grammar a deferred one stands for, built on the first call (by whichever
 * thread asks first; the others wait), then the same for every caller. An
 * error is kept and given to every caller. */
ag_status ag_deferred_get(ag_deferred *d, ag_vocab *vocab, ag_compiled **out, ag_error *err);
/* The grammar once built, else NULL; never waits. */
ag_compiled *ag_deferred_ready(ag_deferred *d);
void ag_deferred_free(ag_deferred *d);

#endif /* AG_DEFERRED_H */

/*
 * ag_background.h - classifying the states a matcher of a compiled grammar is
 * likely to reach, on a pool thread, while the model writes its first tokens
 * (ag_background.c). Internal; the entry point is public (agentgrammar.h).
 *
 * Masks never wait for it: a mask that needs a state the worker has not
 * published yet classifies it itself, as it would without a worker, and the
 * first of the two to publish wins (ag_mask_cache_get). So the worker changes
 * when a state's classes are computed, never what they are.
 */
#ifndef AG_BACKGROUND_H
#define AG_BACKGROUND_H

#include "ag_compiled.h"

typedef struct ag_background ag_background;

/*
 * The last reference to the compiled grammar that owns b is gone: true when it
 * may be destroyed now (b is freed here or by the pool), false when the worker
 * is in a slice of it and will destroy it (ag_compiled_destroy) when the slice
 * ends. Never waits.
 */
bool ag_background_release(ag_background *b);
/*
 * A matcher of c reached `state`: when it lies in a linked part (a tool's
 * arguments, once the model has picked the tool), the worker walks that part
 * next, before the rest of its plan, posting its task again if it had parked.
 * Never waits: atomics, and a try-lock of the pool that may fail (the next
 * mask there tries again). Called by every mask for each of its states.
 */
void ag_background_note_visit(ag_compiled *c, int32_t state);
/* 0: none started, 1: queued, 2: in a slice, 3: idle (finished, or parked). */
int ag_background_phase(const ag_background *b);
/* States the worker classified so far. */
int32_t ag_background_classified(const ag_background *b);

#endif /* AG_BACKGROUND_H */

/*
 * ag_pool.h - running a batch's tasks on the pool's threads (ag_pool.c).
 * Internal; the pool's lifecycle is public (agentgrammar.h).
 */
#ifndef AG_POOL_H
#define AG_POOL_H

#include "agentgrammar.h"

/* Runs fn(ctx, i) for i in [0, n_tasks) on the pool's threads and the caller,
 * and returns when every task has finished. */
typedef void (*ag_pool_fn)(void *ctx, int32_t task);
void ag_pool_run(ag_pool *pool, ag_pool_fn fn, void *ctx, int32_t n_tasks);

#endif /* AG_POOL_H */

/*
 * ag_pool.h - running a batch's tasks on the pool's threads, and background
 * work between batches (ag_pool.c). Internal; the pool's lifecycle is public
 * (agentgrammar.h).
 */
#ifndef AG_POOL_H
#define AG_POOL_H

#include "agentgrammar.h"

#include <stdbool.h>

/* Runs fn(ctx, i) for i in [0, n_tasks) on the pool's threads and the caller,
 * and returns when every task has finished. */
typedef void (*ag_pool_fn)(void *ctx, int32_t task);
void ag_pool_run(ag_pool *pool, ag_pool_fn fn, void *ctx, int32_t n_tasks);

/*
 * Background work: a task runs in slices on a worker that has no batch to
 * help with, the most recently posted task first. The task is the poster's:
 * the pool only links it (`next`, `order`) and calls it.
 */
typedef struct ag_pool_task ag_pool_task;
struct ag_pool_task {
  ag_pool_task *next; /* the pool's queue */
  uint64_t order;     /* set by ag_pool_post: newer tasks run first */
  /* One slice, on a worker thread; true to be queued again for another. */
  bool (*run)(ag_pool_task *task, ag_pool *pool);
  /* The pool is freed with the task queued: it will not run again. */
  void (*drop)(ag_pool_task *task);
};

/* Queues a task; false (nothing queued) when the pool has no worker thread or
 * is freed. ag_pool_try_post never waits: false too when the pool's lock is
 * taken (a worker taking or queueing a task), for callers on a mask's path. */
bool ag_pool_post(ag_pool *pool, ag_pool_task *task);
bool ag_pool_try_post(ag_pool *pool, ag_pool_task *task);
/* A task that may post itself later holds the pool: ag_pool_free stops the
 * threads and drops the queue, and the struct goes with its last holder. */
void ag_pool_retain(ag_pool *pool);
void ag_pool_release(ag_pool *pool);
/* Where a task's slice lets tests hold the worker (ag_pool_testing_hold). */
void ag_pool_gate(ag_pool *pool);

#endif /* AG_POOL_H */

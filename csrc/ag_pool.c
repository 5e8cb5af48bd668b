/*
 * ag_pool.c - a fixed pool of worker threads that run one batch job at a time.
 *
 * A job is n independent tasks fn(ctx, i). Tasks are handed out by an atomic
 * counter, so a slow task (a state's first mask walk) does not hold up the
 * others, and the calling thread works too: a pool of n threads starts n - 1.
 * Workers sleep on a condition variable between jobs; nothing spins.
 *
 * Why the `busy` count: a worker that wakes late may still be inside a job that
 * the caller already saw finish. A new job is only set up once no worker is
 * inside the old one, so its function and context are never read half-changed.
 *
 * Between jobs, workers run background tasks (ag_pool_post) a slice at a time,
 * newest task first: a slice is short (one state's classes), so a batch waits
 * at most that long for a worker, and the request that arrived last (whose
 * model is writing its first tokens) is served before older ones. A worker in
 * a slice is not `busy`: the job's caller never waits for it.
 *
 * Why workers doze: waking a sleeping thread costs the poster a futex call and,
 * on a virtual machine, an interrupt to another CPU (20-30 us on the two-core
 * one), which a compile posting its background work paid on the request's
 * critical path. For AG_POOL_DOZE_SECONDS after background work a worker waits
 * in ticks of AG_POOL_DOZE_TICK_NS instead, looking at the queue every tick: a
 * post that finds a worker dozing links the task without a wake, so a stream
 * of requests pays none, and the task begins within a tick. Batch jobs and
 * ag_pool_free still wake every worker at once.
 */
#define _GNU_SOURCE /* SCHED_IDLE (Linux) */
#include "ag_pool.h"
#include "ag_util.h"

#include <stdatomic.h>

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#define AG_POOL_MAX_THREADS 256
#define AG_POOL_DOZE_SECONDS 1.0
#define AG_POOL_DOZE_TICK_NS 500000L

struct ag_pool {
  pthread_mutex_t run; /* one job at a time, whatever thread submits it */
  pthread_mutex_t lock;
  pthread_cond_t wake; /* workers: a new job, or stop (CLOCK_MONOTONIC, for dozing) */
  pthread_cond_t idle; /* the submitter: the last worker left the job */
  pthread_t *threads;
  int32_t n_workers; /* threads started; the submitter is one more */
  uint64_t job;      /* bumped for every job */
  int32_t busy;      /* workers inside the current job */
  int32_t dozing;    /* workers waiting a tick at a time: a post needs no wake */
  bool stop;
  ag_pool_fn fn;
  void *ctx;
  int32_t n_tasks;
  atomic_int next; /* the next task to hand out */
  ag_pool_task *queue; /* background tasks, newest (highest order) first */
  uint64_t posted;     /* tasks posted so far: the next order */
  atomic_int refs;     /* the owner's (until ag_pool_free) and each parked task's */
  atomic_bool held;    /* tests: workers wait in ag_pool_gate */
  atomic_int at_gate;  /* workers waiting there */
};

/* Runs tasks of the current job until none is left. */
static void ag_pool_drain(ag_pool *pool, ag_pool_fn fn, void *ctx, int32_t n_tasks) {
  for (;;) {
    int i = atomic_fetch_add_explicit(&pool->next, 1, memory_order_relaxed);
    if (i >= n_tasks) return;
    fn(ctx, (int32_t)i);
  }
}

/* Links a background task in order (under the lock): after the newer ones. */
static void ag_pool_enqueue(ag_pool *pool, ag_pool_task *task) {
  ag_pool_task **at = &pool->queue;
  while (*at && (*at)->order > task->order) at = &(*at)->next;
  task->next = *at;
  *at = task;
}

/* Runs one slice of the newest background task (called and returns under the lock). */
static void ag_pool_background_slice(ag_pool *pool) {
  ag_pool_task *task = pool->queue;
  pool->queue = task->next;
  pthread_mutex_unlock(&pool->lock);
  bool more = task->run(task, pool);
  pthread_mutex_lock(&pool->lock);
  if (more) ag_pool_enqueue(pool, task); /* still linked if the pool stops: dropped at free */
}

static double ag_monotonic(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Waits for work (under the lock): a tick at a time until doze_until, then for a wake. */
static void ag_pool_wait(ag_pool *pool, double doze_until) {
  if (ag_monotonic() >= doze_until) {
    pthread_cond_wait(&pool->wake, &pool->lock);
    return;
  }
  struct timespec tick;
  clock_gettime(CLOCK_MONOTONIC, &tick);
  tick.tv_nsec += AG_POOL_DOZE_TICK_NS;
  if (tick.tv_nsec >= 1000000000L) {
    tick.tv_sec++;
    tick.tv_nsec -= 1000000000L;
  }
  pool->dozing++;
  pthread_cond_timedwait(&pool->wake, &pool->lock, &tick);
  pool->dozing--;
}

static void *ag_pool_worker(void *arg) {
  ag_pool *pool = arg;
  uint64_t seen = 0;
  double doze_until = 0; /* after background work: see "Why workers doze" */
  pthread_mutex_lock(&pool->lock);
  for (;;) {
    while (!pool->stop && pool->job == seen && !pool->queue) ag_pool_wait(pool, doze_until);
    if (pool->stop) break;
    if (pool->job == seen) { /* no new batch: background work */
      ag_pool_background_slice(pool);
      doze_until = ag_monotonic() + AG_POOL_DOZE_SECONDS;
      continue;
    }
    seen = pool->job;
    ag_pool_fn fn = pool->fn;
    void *ctx = pool->ctx;
    int32_t n_tasks = pool->n_tasks;
    pool->busy++;
    pthread_mutex_unlock(&pool->lock);
    ag_pool_drain(pool, fn, ctx, n_tasks);
    pthread_mutex_lock(&pool->lock);
    if (--pool->busy == 0) pthread_cond_broadcast(&pool->idle);
  }
  pthread_mutex_unlock(&pool->lock);
  return NULL;
}

/* Stops and joins the started workers. */
static void ag_pool_stop(ag_pool *pool) {
  atomic_store(&pool->held, false); /* a held worker would never be joined */
  pthread_mutex_lock(&pool->lock);
  pool->stop = true;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);
  for (int32_t t = 0; t < pool->n_workers; t++) pthread_join(pool->threads[t], NULL);
  pool->n_workers = 0;
}

/* Starts the workers with every signal blocked: signals belong to the host's threads. */
static ag_status ag_pool_start(ag_pool *pool, int32_t n_workers, ag_error *err) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  while (pool->n_workers < n_workers) {
    rc = pthread_create(&pool->threads[pool->n_workers], NULL, ag_pool_worker, pool);
    if (rc != 0) break;
    pool->n_workers++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0)
    return ag_fail(err, AG_ERR_NOMEM, -1, "could not start thread %d of the pool (error %d)",
                   (int)pool->n_workers + 1, rc);
  return AG_OK;
}

/* Drops the queued tasks once the workers are joined: they will not run. */
static void ag_pool_drop_queue(ag_pool *pool) {
  pthread_mutex_lock(&pool->lock);
  ag_pool_task *queue = pool->queue;
  pool->queue = NULL;
  pthread_mutex_unlock(&pool->lock);
  while (queue) {
    ag_pool_task *task = queue;
    queue = task->next;
    task->drop(task);
  }
}

static void ag_pool_destroy(ag_pool *pool) {
  pthread_cond_destroy(&pool->idle);
  pthread_cond_destroy(&pool->wake);
  pthread_mutex_destroy(&pool->lock);
  pthread_mutex_destroy(&pool->run);
  free(pool->threads);
  free(pool);
}

ag_status ag_pool_new(int32_t n_threads, ag_pool **out, ag_error *err) {
  *out = NULL;
  if (n_threads < 1 || n_threads > AG_POOL_MAX_THREADS)
    return ag_fail(err, AG_ERR_INVALID, -1, "a pool needs 1 to %d threads, got %d",
                   AG_POOL_MAX_THREADS, (int)n_threads);
  ag_pool *pool = calloc(1, sizeof *pool);
  if (!pool) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory for a thread pool");
  pool->threads = calloc((size_t)n_threads, sizeof *pool->threads);
  if (!pool->threads) {
    free(pool);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory for a thread pool");
  }
  pthread_mutex_init(&pool->run, NULL);
  pthread_mutex_init(&pool->lock, NULL);
  pthread_condattr_t monotonic;
  pthread_condattr_init(&monotonic);
  pthread_condattr_setclock(&monotonic, CLOCK_MONOTONIC);
  pthread_cond_init(&pool->wake, &monotonic);
  pthread_condattr_destroy(&monotonic);
  pthread_cond_init(&pool->idle, NULL);
  atomic_init(&pool->next, 0);
  atomic_init(&pool->refs, 1);
  atomic_init(&pool->held, false);
  atomic_init(&pool->at_gate, 0);
  ag_status st = ag_pool_start(pool, n_threads - 1, err);
  if (st != AG_OK) {
    ag_pool_stop(pool);
    ag_pool_release(pool);
    return st;
  }
  *out = pool;
  return AG_OK;
}

void ag_pool_free(ag_pool *pool) {
  if (!pool) return;
  ag_pool_stop(pool);
  ag_pool_drop_queue(pool);
  ag_pool_release(pool); /* the struct stays while parked tasks hold it; nothing runs */
}

void ag_pool_retain(ag_pool *pool) { atomic_fetch_add(&pool->refs, 1); }

void ag_pool_release(ag_pool *pool) {
  if (atomic_fetch_sub(&pool->refs, 1) == 1) ag_pool_destroy(pool);
}

int32_t ag_pool_num_threads(const ag_pool *pool) { return pool->n_workers + 1; }

void ag_pool_run(ag_pool *pool, ag_pool_fn fn, void *ctx, int32_t n_tasks) {
  if (n_tasks <= 0) return;
  pthread_mutex_lock(&pool->run);
  if (pool->n_workers == 0 || n_tasks == 1) {
    for (int32_t i = 0; i < n_tasks; i++) fn(ctx, i);
    pthread_mutex_unlock(&pool->run);
    return;
  }
  pthread_mutex_lock(&pool->lock);
  while (pool->busy > 0) pthread_cond_wait(&pool->idle, &pool->lock);
  pool->fn = fn;
  pool->ctx = ctx;
  pool->n_tasks = n_tasks;
  atomic_store_explicit(&pool->next, 0, memory_order_relaxed);
  pool->job++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->lock);

  ag_pool_drain(pool, fn, ctx, n_tasks);

  /* Every task is handed out; wait for the workers still running one. */
  pthread_mutex_lock(&pool->lock);
  while (pool->busy > 0) pthread_cond_wait(&pool->idle, &pool->lock);
  pthread_mutex_unlock(&pool->lock);
  pthread_mutex_unlock(&pool->run);
}

/* Links a new task (under the lock): false when no worker would run it. */
static bool ag_pool_link(ag_pool *pool, ag_pool_task *task) {
  if (pool->stop || pool->n_workers == 0) return false;
  task->order = ++pool->posted;
  ag_pool_enqueue(pool, task);
  if (pool->dozing == 0) pthread_cond_signal(&pool->wake); /* a dozing worker looks within a tick */
  return true;
}

bool ag_pool_post(ag_pool *pool, ag_pool_task *task) {
  pthread_mutex_lock(&pool->lock);
  bool linked = ag_pool_link(pool, task);
  pthread_mutex_unlock(&pool->lock);
  return linked;
}

bool ag_pool_try_post(ag_pool *pool, ag_pool_task *task) {
  if (pthread_mutex_trylock(&pool->lock) != 0) return false;
  bool linked = ag_pool_link(pool, task);
  pthread_mutex_unlock(&pool->lock);
  return linked;
}

void ag_pool_gate(ag_pool *pool) {
  if (!atomic_load_explicit(&pool->held, memory_order_acquire)) return;
  atomic_fetch_add(&pool->at_gate, 1);
  struct timespec pause = {0, 200000};
  while (atomic_load_explicit(&pool->held, memory_order_acquire)) nanosleep(&pause, NULL);
  atomic_fetch_sub(&pool->at_gate, 1);
}

void ag_pool_testing_hold(ag_pool *pool, int hold) { atomic_store(&pool->held, hold != 0); }

int32_t ag_pool_testing_at_gate(ag_pool *pool) { return atomic_load(&pool->at_gate); }

int32_t ag_pool_testing_dozing(ag_pool *pool) {
  pthread_mutex_lock(&pool->lock);
  int32_t n = pool->dozing;
  pthread_mutex_unlock(&pool->lock);
  return n;
}

void ag_pool_set_idle_priority(ag_pool *pool) {
#if defined(__linux__) && defined(SCHED_IDLE)
  struct sched_param lowest = {0};
  for (int32_t t = 0; t < pool->n_workers; t++)
    pthread_setschedparam(pool->threads[t], SCHED_IDLE, &lowest); /* lowering needs no privilege */
#else
  (void)pool;
#endif
}

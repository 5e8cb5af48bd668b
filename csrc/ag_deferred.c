/*
 * ag_deferred.c - building a large grammar's automata after its first mask.
 *
 * A matcher's first mask needs the automata of the few rules a first token can
 * reach; a large schema's other rules (hundreds of definitions) are most of its
 * compile. The caller compiles a small grammar whose first masks are those of
 * the whole (agentgrammar.h, ag_compiled_defer, says how it knows) and defers
 * the whole to here: the IR words are copied, the parts retained, and the
 * whole is built the first time a matcher needs more than its first mask
 * (ag_matcher.c, ag_matcher_settle), under a lock, once for every matcher; with
 * a pool, a worker starts building it at once (ag_deferred_post).
 */
#include "ag_deferred.h"
#include "ag_ir.h"
#include "ag_pool.h"
#include "agentgrammar_testing.h"

#include <pthread.h>

struct ag_deferred {
  pthread_mutex_t lock; /* guards the build and the fields below it */
  _Atomic(ag_compiled *) full; /* the whole, once built (owned) */
  int32_t *words;
  size_t n_words;
  ag_grammar **part_grammars; /* [n_parts] retained */
  ag_compiled **parts;        /* [n_parts] retained */
  int32_t n_parts;
  ag_pool *pool; /* retained, or NULL: no background classification of the whole */
  int32_t bg_states;
  double bg_seconds;
  ag_status failed; /* the build's error, kept for every later caller */
  ag_error error;
};

static void ag_deferred_drop_inputs(ag_deferred *d) {
  free(d->words);
  d->words = NULL;
  for (int32_t k = 0; k < d->n_parts; k++) {
    ag_grammar_free(d->part_grammars[k]);
    ag_compiled_free(d->parts[k]);
  }
  free(d->part_grammars);
  free(d->parts);
  d->part_grammars = NULL;
  d->parts = NULL;
  d->n_parts = 0;
}

void ag_deferred_free(ag_deferred *d) {
  if (!d) return;
  ag_deferred_drop_inputs(d);
  ag_compiled_free(atomic_load(&d->full));
  if (d->pool) ag_pool_release(d->pool);
  pthread_mutex_destroy(&d->lock);
  free(d);
}

ag_compiled *ag_deferred_ready(ag_deferred *d) {
  return atomic_load_explicit(&d->full, memory_order_acquire);
}

/* Builds the whole as the compiler would have: loaded or linked, compiled, its
 * trigger branches classified, its background work posted. */
static ag_status ag_deferred_build(ag_deferred *d, ag_vocab *vocab, ag_compiled **out, ag_error *err) {
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_status st = d->n_parts
                     ? ag_grammar_link_cached(d->words, d->n_words, d->part_grammars, d->n_parts, NULL, &g, err)
                     : ag_grammar_load_cached(d->words, d->n_words, NULL, &g, err);
  if (!st)
    st = d->n_parts ? ag_compiled_new_linked(g, vocab, d->parts, d->n_parts, &c, err)
                    : ag_compiled_new(g, vocab, &c, err);
  ag_grammar_free(g); /* the compiled grammar holds it */
  if (!st) st = ag_compiled_prepare_triggers(c, err);
  /* Classifying ahead only saves masks time: a pool freed since the grammar was
   * deferred (or short of memory) leaves the whole to its matchers' masks. */
  if (!st && d->pool) {
    ag_error ignored;
    (void)ag_compiled_classify_background(c, d->pool, d->bg_states, d->bg_seconds, &ignored);
  }
  if (st) {
    ag_compiled_free(c);
    return st;
  }
  *out = c;
  return AG_OK;
}

ag_status ag_deferred_get(ag_deferred *d, ag_vocab *vocab, ag_compiled **out, ag_error *err) {
  *out = ag_deferred_ready(d);
  if (*out) return AG_OK;
  pthread_mutex_lock(&d->lock);
  ag_compiled *c = atomic_load_explicit(&d->full, memory_order_relaxed);
  ag_status st = d->failed;
  if (!c && !st) {
    st = ag_deferred_build(d, vocab, &c, &d->error);
    if (st) {
      d->failed = st;
    } else {
      atomic_store_explicit(&d->full, c, memory_order_release);
      ag_deferred_drop_inputs(d); /* the whole holds what it needs */
    }
  }
  if (st && err) *err = d->error;
  pthread_mutex_unlock(&d->lock);
  *out = st ? NULL : c;
  return st;
}

/*
 * The whole built on a worker as soon as the grammar is deferred, while the
 * caller fills the first mask and the model runs its first forward pass: a
 * matcher's first step then finds it built, or waits for the rest of the build
 * rather than doing all of it. The task holds the grammar, and builds nothing
 * once it is its last holder.
 */
typedef struct ag_deferred_task {
  ag_pool_task task; /* first: the pool's view of it */
  ag_compiled *first; /* retained */
} ag_deferred_task;

static void ag_deferred_task_end(ag_pool_task *task) {
  ag_deferred_task *t = (ag_deferred_task *)task;
  ag_compiled_free(t->first);
  free(t);
}

static bool ag_deferred_task_run(ag_pool_task *task, ag_pool *pool) {
  ag_deferred_task *t = (ag_deferred_task *)task;
  ag_pool_gate(pool);
  if (atomic_load(&t->first->refs) > 1) { /* an error is kept for the matchers */
    ag_compiled *whole;
    (void)ag_deferred_get(t->first->deferred, t->first->vocab, &whole, NULL);
  }
  ag_deferred_task_end(task);
  return false;
}

/* Queues the build of first's whole on pool; nothing when the pool takes no task. */
static void ag_deferred_post(ag_compiled *first, ag_pool *pool) {
  ag_deferred_task *t = calloc(1, sizeof *t);
  if (!t) return; /* the first step builds it */
  t->task.run = ag_deferred_task_run;
  t->task.drop = ag_deferred_task_end;
  ag_compiled_retain(first);
  t->first = first;
  if (!ag_pool_post(pool, &t->task)) ag_deferred_task_end(&t->task);
}

static ag_status ag_deferred_new(const int32_t *words, size_t n_words, ag_grammar *const *part_grammars,
                                 ag_compiled *const *parts, int32_t n_parts, ag_deferred **out,
                                 ag_error *err) {
  ag_deferred *d = calloc(1, sizeof *d);
  if (!d) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  if (pthread_mutex_init(&d->lock, NULL) != 0) {
    free(d);
    return ag_fail(err, AG_ERR_NOMEM, -1, "could not make a lock");
  }
  atomic_init(&d->full, NULL);
  d->words = malloc((n_words ? n_words : 1) * sizeof *d->words);
  d->part_grammars = calloc((size_t)(n_parts ? n_parts : 1), sizeof *d->part_grammars);
  d->parts = calloc((size_t)(n_parts ? n_parts : 1), sizeof *d->parts);
  if (!d->words || !d->part_grammars || !d->parts) {
    ag_deferred_free(d);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  memcpy(d->words, words, n_words * sizeof *d->words);
  d->n_words = n_words;
  for (int32_t k = 0; k < n_parts; k++) {
    ag_grammar_retain(part_grammars[k]);
    ag_compiled_retain(parts[k]);
    d->part_grammars[k] = part_grammars[k];
    d->parts[k] = parts[k];
    d->n_parts = k + 1;
  }
  *out = d;
  return AG_OK;
}

ag_status ag_compiled_defer(ag_compiled *first, const int32_t *words, size_t n_words,
                            ag_grammar *const *part_grammars, ag_compiled *const *parts,
                            int32_t n_parts, ag_pool *pool, int32_t bg_states, double bg_seconds,
                            int *deferred, ag_error *err) {
  if (!first || !words || !deferred || n_parts < 0 || (n_parts > 0 && (!part_grammars || !parts)))
    return ag_fail(err, AG_ERR_INVALID, -1, "null compiled grammar, words, parts or out");
  *deferred = 0;
  int64_t n_external = 0;
  for (int32_t k = 0; k < n_parts; k++) {
    if (!part_grammars[k] || !parts[k] || parts[k]->grammar != part_grammars[k] ||
        parts[k]->vocab != first->vocab)
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "compiled part %d is not its grammar compiled for this vocabulary", k);
    n_external += part_grammars[k]->n_ir_rules;
  }
  if (n_external > AG_MAX_RULES)
    return ag_fail(err, AG_ERR_LIMIT, -1, "the parts have %lld rules; the limit is %d",
                   (long long)n_external, AG_MAX_RULES);
  ag_ir ir;
  ag_status st = ag_ir_parse(words, n_words, (int32_t)n_external, &ir, err);
  if (st) return st;
  if (ir.holds_ff) return AG_OK; /* special tokens: the compiler checks them at once */
  if (first->deferred)
    return ag_fail(err, AG_ERR_STATE, -1, "the compiled grammar is deferred already");
  if (pool && ag_pool_num_threads(pool) < 2)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "background classification needs a pool with a worker thread (2 threads or more)");
  ag_deferred *d = NULL;
  if ((st = ag_deferred_new(words, n_words, part_grammars, parts, n_parts, &d, err))) return st;
  if (pool && bg_states > 0 && bg_seconds > 0) {
    ag_pool_retain(pool);
    d->pool = pool;
    d->bg_states = bg_states;
    d->bg_seconds = bg_seconds;
  }
  first->deferred = d;
  *deferred = 1;
  if (pool) ag_deferred_post(first, pool);
  return AG_OK;
}

int ag_compiled_testing_deferred(ag_compiled *c) {
  if (!c->deferred) return 0;
  return ag_deferred_ready(c->deferred) ? 2 : 1;
}

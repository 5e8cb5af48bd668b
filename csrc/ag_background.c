/*
 * ag_background.c - classifying a compiled grammar's likely states on a pool
 * thread (see the header).
 *
 * The plan is a breadth-first walk of the grammar's states, from the start of
 * each linked part (a request's tools' arguments: new tools' states are the
 * first visits a request pays for) and then from the grammar's start; rule
 * edges lead to the rule's start and to the edge's target. Each slice walks
 * until it has classified one state nobody has classified yet, so a batch or
 * a newer request waits for the worker one classification at most; at most
 * `max_states` are classified, in at most `max_seconds` of classifying (a
 * state's classes cost microseconds to milliseconds: a count alone would not
 * bound a large schema's work). The states of the first mask (the start's and
 * the rules it predicts) are left to the caller, who needs them at once.
 *
 * Ownership, without locks: the compiled grammar owns its task, but does not
 * reference-count it, nor does the task hold the grammar, so freeing the last
 * matcher or handle frees the grammar at once. Who frees what is settled by
 * one atomic phase (compare-and-swap on both sides):
 *   QUEUED    linked in the pool;            grammar freed -> CANCELLED
 *   RUNNING   a worker is in a slice;        grammar freed -> ORPHANED
 *   IDLE      finished, or the pool was freed first: the grammar frees the task
 *   CANCELLED the grammar is gone: the pool frees the task when it unlinks it
 *   ORPHANED  the grammar's references are gone: the worker destroys it after
 *             the slice, then the task
 */
#include "ag_background.h"

#include "ag_pool.h"

enum { AG_BG_IDLE, AG_BG_QUEUED, AG_BG_RUNNING, AG_BG_CANCELLED, AG_BG_ORPHANED };

#define AG_BG_FIRST_SET 256 /* the most states of the first mask left to the caller */

struct ag_background {
  ag_pool_task task; /* first: the pool hands back this pointer */
  atomic_int phase;
  atomic_bool finished; /* the plan ran out (or failed), for tests */
  ag_compiled *compiled; /* not retained: see the phases */
  int32_t budget;        /* classifications left */
  double seconds_left;   /* of classification time */
  atomic_int classified;
  /* The walk, made in the first slice (on the worker, not in the compile). */
  int32_t *queue; /* [n_states] */
  int32_t head, tail;
  uint32_t *seen;  /* [n_states] bits: queued once */
  uint32_t *first; /* [n_states] bits: the first mask's states */
};

static void ag_background_free(ag_background *b) {
  free(b->queue);
  free(b->seen);
  free(b->first);
  free(b);
}

/* Frees the walk when it is done; the task stays until its grammar goes. */
static void ag_background_finish(ag_background *b) {
  free(b->queue);
  free(b->seen);
  free(b->first);
  b->queue = NULL;
  b->seen = b->first = NULL;
  atomic_store(&b->finished, true);
}

static void ag_push(ag_background *b, int32_t s) {
  if (ag_bit(b->seen, (uint32_t)s)) return;
  ag_bit_set(b->seen, (uint32_t)s);
  b->queue[b->tail++] = s;
}

/* Marks the states of the first Earley set: the start, the starts of the rules
 * it predicts, and past a nullable rule its edge's target (bounded). */
static void ag_mark_first(ag_background *b, const ag_grammar *g) {
  int32_t stack[AG_BG_FIRST_SET], n = 0, marked = 0;
  stack[n++] = g->rule_start[g->root];
  ag_bit_set(b->first, (uint32_t)stack[0]);
  while (n > 0 && marked < AG_BG_FIRST_SET) {
    const ag_state *st = &g->states[stack[--n]];
    marked++;
    for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
      const ag_rule_edge *re = &g->rule_edges[e];
      int32_t next[2] = {g->rule_start[re->rule], g->rule_nullable[re->rule] ? re->target : -1};
      for (int k = 0; k < 2; k++) {
        if (next[k] < 0 || ag_bit(b->first, (uint32_t)next[k]) || n == AG_BG_FIRST_SET) continue;
        ag_bit_set(b->first, (uint32_t)next[k]);
        stack[n++] = next[k];
      }
    }
  }
}

/* The walk's tables and its first states: each part's root start, then the grammar's. */
static bool ag_background_plan(ag_background *b) {
  const ag_grammar *g = b->compiled->grammar;
  size_t words = ((size_t)g->n_states + 31) / 32 + 1;
  b->queue = malloc((size_t)(g->n_states ? g->n_states : 1) * sizeof *b->queue);
  b->seen = calloc(words, sizeof *b->seen);
  b->first = calloc(words, sizeof *b->first);
  if (!b->queue || !b->seen || !b->first) return false;
  for (int32_t k = 0; k < g->n_parts; k++) {
    const ag_grammar *part = g->parts[k];
    ag_push(b, g->part_state_begin[k] + part->rule_start[part->root]);
  }
  ag_push(b, g->rule_start[g->root]);
  ag_mark_first(b, g);
  return true;
}

/* Queues the states a parser may reach from s next. */
static void ag_expand(ag_background *b, const ag_grammar *g, int32_t s) {
  const ag_state *st = &g->states[s];
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) ag_push(b, g->byte_edges[e].target);
  for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
    ag_push(b, g->rule_start[g->rule_edges[e].rule]);
    ag_push(b, g->rule_edges[e].target);
  }
}

/* Walks on until one state is classified: true when there is more to do. */
static bool ag_background_slice(ag_background *b) {
  ag_compiled *c = b->compiled;
  const ag_grammar *g = c->grammar;
  if (!b->queue && !ag_background_plan(b)) return false;
  while (b->head < b->tail && b->budget > 0 && b->seconds_left > 0) {
    int32_t s = b->queue[b->head++];
    ag_expand(b, g, s);
    const ag_state *st = &g->states[s];
    /* only states that scan bytes have classes (ag_collect_classes) */
    if (st->byte_begin == st->byte_end || ag_bit(b->first, (uint32_t)s) ||
        ag_compiled_state_peek(c, s))
      continue;
    const ag_state_masks *masks;
    ag_error err;
    double start = ag_now();
    if (ag_compiled_state_masks(c, s, 0, &masks, &err) != AG_OK) return false; /* out of memory */
    b->seconds_left -= ag_now() - start;
    b->budget--;
    atomic_fetch_add(&b->classified, 1);
    return b->head < b->tail && b->budget > 0 && b->seconds_left > 0;
  }
  return false;
}

static bool ag_background_run(ag_pool_task *task, ag_pool *pool) {
  ag_background *b = (ag_background *)task;
  int phase = AG_BG_QUEUED;
  if (!atomic_compare_exchange_strong(&b->phase, &phase, AG_BG_RUNNING)) {
    ag_background_free(b); /* CANCELLED: the grammar is gone, and the pool let go */
    return false;
  }
  ag_pool_gate(pool);
  bool more = atomic_load(&b->phase) == AG_BG_RUNNING && ag_background_slice(b);
  if (!more) ag_background_finish(b);
  phase = AG_BG_RUNNING;
  if (atomic_compare_exchange_strong(&b->phase, &phase, more ? AG_BG_QUEUED : AG_BG_IDLE))
    return more;
  /* ORPHANED: the grammar's last reference went during the slice */
  ag_compiled_destroy(b->compiled);
  ag_background_free(b);
  return false;
}

static void ag_background_drop(ag_pool_task *task) {
  ag_background *b = (ag_background *)task;
  int phase = AG_BG_QUEUED;
  if (atomic_compare_exchange_strong(&b->phase, &phase, AG_BG_IDLE)) {
    ag_background_finish(b); /* the grammar lives on, and frees the task */
    return;
  }
  ag_background_free(b); /* CANCELLED */
}

bool ag_background_release(ag_background *b) {
  for (;;) {
    int phase = atomic_load(&b->phase);
    if (phase == AG_BG_IDLE) {
      ag_background_free(b);
      return true;
    }
    int next = phase == AG_BG_QUEUED ? AG_BG_CANCELLED : AG_BG_ORPHANED;
    if (atomic_compare_exchange_strong(&b->phase, &phase, next)) return next == AG_BG_CANCELLED;
  }
}

int ag_background_phase(const ag_background *b) {
  ag_background *m = (ag_background *)b; /* atomics are read through a mutable pointer */
  int phase = atomic_load(&m->phase);
  if (phase == AG_BG_RUNNING) return 2;
  if (phase == AG_BG_QUEUED) return 1;
  return atomic_load(&m->finished) ? 3 : 1;
}

int32_t ag_background_classified(const ag_background *b) {
  return atomic_load(&((ag_background *)b)->classified);
}

ag_status ag_compiled_classify_background(ag_compiled *c, ag_pool *pool, int32_t max_states,
                                          double max_seconds, ag_error *err) {
  if (!c || !pool) return ag_fail(err, AG_ERR_INVALID, -1, "null compiled grammar or pool");
  if (max_states <= 0 || !(max_seconds > 0)) return AG_OK;
  if (ag_pool_num_threads(pool) < 2)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "background classification needs a pool with a worker thread (2 threads or more)");
  ag_background *b = calloc(1, sizeof *b);
  if (!b) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  b->task.run = ag_background_run;
  b->task.drop = ag_background_drop;
  b->compiled = c;
  b->budget = max_states;
  b->seconds_left = max_seconds;
  atomic_init(&b->phase, AG_BG_QUEUED);
  atomic_init(&b->finished, false);
  atomic_init(&b->classified, 0);
  ag_background *none = NULL;
  if (!atomic_compare_exchange_strong(&c->background, &none, b)) {
    free(b);
    return ag_fail(err, AG_ERR_STATE, -1, "the grammar's background classification was started already");
  }
  ag_pool_post(pool, &b->task); /* a worker exists: it is queued */
  return AG_OK;
}

int ag_compiled_testing_background(ag_compiled *c, int32_t *classified) {
  ag_background *b = atomic_load(&c->background);
  *classified = b ? ag_background_classified(b) : 0;
  return b ? ag_background_phase(b) : 0;
}

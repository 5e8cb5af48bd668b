/*
 * ag_background.c - classifying a compiled grammar's likely states on a pool
 * thread (see the header).
 *
 * The plan is a breadth-first walk of the grammar's states, from the start of
 * each linked part (a request's tools' arguments: new tools' states are the
 * first visits a request pays for) and then from the grammar's start; rule
 * edges lead to the rule's start and to the edge's target. A part a matcher
 * has entered (the model named the tool) is walked first, whole. Each slice
 * walks until it has classified one state nobody has classified yet, so a
 * batch or a newer request waits for the worker one classification at most.
 * The plan and the entered parts each classify at most `max_states` states in
 * at most `max_seconds` (a state's classes cost microseconds to milliseconds:
 * a count alone would not bound a large schema's work). The states of the
 * first mask (the start's and the rules it predicts) are left to the caller,
 * who needs them at once.
 *
 * Ownership, without locks: the compiled grammar owns its task, but does not
 * reference-count it, nor does the task hold the grammar, so freeing the last
 * matcher or handle frees the grammar at once. Who frees what is settled by
 * one atomic phase (compare-and-swap on both sides):
 *   QUEUED    linked in the pool;            grammar freed -> CANCELLED
 *   RUNNING   a worker is in a slice;        grammar freed -> ORPHANED
 *   PARKED    the plan is done; a matcher entering a part posts it again
 *   IDLE      finished, or the pool was freed first
 *   CANCELLED the grammar is gone: the pool frees the task when it unlinks it
 *   ORPHANED  the grammar's references are gone: the worker destroys it after
 *             the slice, then the task
 * The grammar frees a PARKED or IDLE task with itself. The task holds its
 * pool (ag_pool_retain) so that it can post itself again.
 */
#include "ag_background.h"

#include "ag_pool.h"

enum { AG_BG_IDLE, AG_BG_QUEUED, AG_BG_RUNNING, AG_BG_CANCELLED, AG_BG_ORPHANED, AG_BG_PARKED };

#define AG_BG_FIRST_SET 256 /* the most states of the first mask left to the caller */

struct ag_background {
  ag_pool_task task; /* first: the pool hands back this pointer */
  atomic_int phase;
  ag_compiled *compiled; /* not retained: see the phases */
  ag_pool *pool;         /* retained: a parked task posts itself again */
  int32_t budget;        /* the plan's classifications left */
  double seconds_left;   /* and its classification time */
  int32_t hint_budget;   /* the same for the parts matchers entered */
  double hint_seconds_left;
  atomic_int classified;
  atomic_bool abandoned; /* the grammar was freed during a slice: its walk gives up */
  /* The plan, made in the first slice (on the worker, not in the compile). */
  int32_t *queue; /* [n_states] */
  int32_t head, tail;
  uint32_t *seen;  /* [n_states] bits: queued once */
  uint32_t *first; /* [n_states] bits: the first mask's states */
  /* Parts a matcher entered (ag_background_note_visit), and those the worker
   * has walked or is walking: one bit per part. */
  int32_t n_parts;
  atomic_uint *wanted, *walked;
  int32_t part;     /* the part being walked, -1: none */
  int32_t *pqueue;  /* [its states] */
  int32_t phead, ptail;
  uint32_t *pseen; /* [n_states] bits: queued once by a part's walk (each part is walked once) */
};

static void ag_background_free_plan(ag_background *b) {
  free(b->queue);
  free(b->seen);
  free(b->first);
  b->queue = NULL;
  b->seen = b->first = NULL;
}

static void ag_background_free(ag_background *b) {
  ag_background_free_plan(b);
  free(b->pqueue);
  free(b->pseen);
  free(b->wanted);
  free(b->walked);
  ag_pool_release(b->pool);
  free(b);
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
  b->pseen = calloc(words, sizeof *b->pseen);
  if (!b->queue || !b->seen || !b->first || !b->pseen) return false;
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

/* The part k that holds state s of a linked grammar (s below its own states). */
static int32_t ag_part_of(const ag_grammar *g, int32_t s) {
  int32_t lo = 0, hi = g->n_parts - 1; /* the last part beginning at or before s */
  while (lo < hi) {
    int32_t mid = lo + (hi - lo + 1) / 2;
    if (g->part_state_begin[mid] <= s) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* A part's walk: its root's start first, breadth-first through its own states. */
static void ag_part_push(ag_background *b, int32_t s) {
  const ag_grammar *g = b->compiled->grammar;
  if (s < g->part_state_begin[b->part] || s >= g->part_state_begin[b->part + 1] ||
      ag_bit(b->pseen, (uint32_t)s))
    return;
  ag_bit_set(b->pseen, (uint32_t)s);
  b->pqueue[b->ptail++] = s;
}

/* Starts the walk of the first part a matcher entered and no walk has taken;
 * false when there is none (or no memory for it). */
static bool ag_part_begin(ag_background *b) {
  const ag_grammar *g = b->compiled->grammar;
  for (int32_t w = 0; w <= b->n_parts / 32; w++) {
    uint32_t todo = atomic_load(&b->wanted[w]) & ~atomic_load(&b->walked[w]);
    if (!todo) continue;
    int32_t k = w * 32 + __builtin_ctz(todo);
    atomic_fetch_or(&b->walked[w], 1u << (k % 32));
    free(b->pqueue);
    b->pqueue = malloc((size_t)(g->part_state_begin[k + 1] - g->part_state_begin[k]) * sizeof *b->pqueue);
    if (!b->pqueue) return false;
    b->part = k;
    b->phead = b->ptail = 0;
    ag_part_push(b, g->part_state_begin[k] + g->parts[k]->rule_start[g->parts[k]->root]);
    return true;
  }
  return false;
}

/* The next state to look at, its walk's successors queued: from the walk of a
 * part a matcher entered, else from the plan; -1 when neither has one left.
 * *hinted says which. */
static int32_t ag_next_state(ag_background *b, bool *hinted) {
  const ag_grammar *g = b->compiled->grammar;
  while (b->hint_budget > 0 && b->hint_seconds_left > 0 && (b->part >= 0 || ag_part_begin(b))) {
    if (b->phead < b->ptail) {
      int32_t s = b->pqueue[b->phead++];
      const ag_state *st = &g->states[s];
      for (uint32_t e = st->byte_begin; e < st->byte_end; e++) ag_part_push(b, g->byte_edges[e].target);
      for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
        ag_part_push(b, g->rule_start[g->rule_edges[e].rule]);
        ag_part_push(b, g->rule_edges[e].target);
      }
      *hinted = true;
      return s;
    }
    b->part = -1;
  }
  if (b->queue && b->head < b->tail && b->budget > 0 && b->seconds_left > 0) {
    int32_t s = b->queue[b->head++];
    ag_expand(b, g, s);
    *hinted = false;
    return s;
  }
  ag_background_free_plan(b);
  return -1;
}

/* Walks on until one state is classified: false when there was none left to. */
static bool ag_background_slice(ag_background *b) {
  ag_compiled *c = b->compiled;
  const ag_grammar *g = c->grammar;
  if (!b->pseen && !ag_background_plan(b)) return false;
  bool hinted;
  for (int32_t s; (s = ag_next_state(b, &hinted)) >= 0;) {
    const ag_state *st = &g->states[s];
    /* only states that scan bytes have classes (ag_collect_classes) */
    if (st->byte_begin == st->byte_end || (b->first && ag_bit(b->first, (uint32_t)s)) ||
        ag_compiled_state_peek(c, s))
      continue;
    const ag_state_masks *masks;
    ag_error err;
    double start = ag_now();
    if (ag_compiled_state_masks_lock_free(c, s, &b->abandoned, &masks, &err) != AG_OK)
      return false; /* out of memory, or the grammar was freed */
    double spent = ag_now() - start;
    *(hinted ? &b->hint_seconds_left : &b->seconds_left) -= spent;
    *(hinted ? &b->hint_budget : &b->budget) -= 1;
    atomic_fetch_add(&b->classified, 1);
    return true;
  }
  return false;
}

/* Whether a part a matcher entered waits for a walk. */
static bool ag_part_wanted(ag_background *b) {
  for (int32_t w = 0; w <= b->n_parts / 32 && b->hint_budget > 0 && b->hint_seconds_left > 0; w++)
    if (atomic_load(&b->wanted[w]) & ~atomic_load(&b->walked[w])) return true;
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
  bool more = atomic_load(&b->phase) == AG_BG_RUNNING && (ag_background_slice(b) || ag_part_wanted(b));
  /* With nothing to do, a linked grammar's task parks: a matcher entering a
   * part posts it again (ag_background_note_visit). A hint that comes as it
   * parks is taken by the next mask in that part. */
  phase = AG_BG_RUNNING;
  bool hints_left = b->n_parts && b->hint_budget > 0 && b->hint_seconds_left > 0;
  int next = more ? AG_BG_QUEUED : hints_left ? AG_BG_PARKED : AG_BG_IDLE;
  if (next == AG_BG_IDLE) ag_background_free_plan(b);
  if (atomic_compare_exchange_strong(&b->phase, &phase, next)) return more; /* b may be gone now */
  /* ORPHANED: the grammar's last reference went during the slice */
  ag_compiled_destroy(b->compiled);
  ag_background_free(b);
  return false;
}

static void ag_background_drop(ag_pool_task *task) {
  ag_background *b = (ag_background *)task;
  int phase = AG_BG_QUEUED;
  if (atomic_compare_exchange_strong(&b->phase, &phase, AG_BG_IDLE)) return; /* the grammar frees it */
  ag_background_free(b); /* CANCELLED */
}

bool ag_background_release(ag_background *b) {
  for (;;) {
    int phase = atomic_load(&b->phase);
    if (phase == AG_BG_IDLE || phase == AG_BG_PARKED) { /* no matcher is left to post it */
      ag_background_free(b);
      return true;
    }
    int next = phase == AG_BG_QUEUED ? AG_BG_CANCELLED : AG_BG_ORPHANED;
    /* b lives on: it is freed here (idle, parked), by the pool (cancelled) or by the worker (orphaned) */
    if (next == AG_BG_ORPHANED) atomic_store(&b->abandoned, true);
    if (atomic_compare_exchange_strong(&b->phase, &phase, next)) return next == AG_BG_CANCELLED;
  }
}

void ag_background_note_visit(ag_compiled *c, int32_t state) {
  ag_background *b = atomic_load_explicit(&c->background, memory_order_acquire);
  const ag_grammar *g = c->grammar;
  if (!b || !g->n_parts || state >= g->part_state_begin[g->n_parts]) return;
  int32_t k = ag_part_of(g, state);
  uint32_t bit = 1u << (k % 32);
  if (atomic_load_explicit(&b->walked[k / 32], memory_order_relaxed) & bit) return;
  if (!(atomic_load_explicit(&b->wanted[k / 32], memory_order_relaxed) & bit))
    atomic_fetch_or(&b->wanted[k / 32], bit);
  int phase = AG_BG_PARKED;
  if (atomic_load(&b->phase) == AG_BG_PARKED &&
      atomic_compare_exchange_strong(&b->phase, &phase, AG_BG_QUEUED) &&
      !ag_pool_try_post(b->pool, &b->task))
    atomic_store(&b->phase, AG_BG_PARKED); /* the lock was taken: the next mask tries again */
}

int ag_background_phase(const ag_background *b) {
  ag_background *m = (ag_background *)b; /* atomics are read through a mutable pointer */
  int phase = atomic_load(&m->phase);
  return phase == AG_BG_RUNNING ? 2 : phase == AG_BG_QUEUED ? 1 : 3;
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
  int32_t n_parts = c->grammar->n_parts, words = n_parts / 32 + 1;
  if (b) {
    b->wanted = calloc((size_t)words, sizeof *b->wanted);
    b->walked = calloc((size_t)words, sizeof *b->walked);
  }
  if (!b || !b->wanted || !b->walked) {
    if (b) free(b->wanted), free(b->walked);
    free(b);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  for (int32_t w = 0; w < words; w++) {
    atomic_init(&b->wanted[w], 0);
    atomic_init(&b->walked[w], 0);
  }
  b->task.run = ag_background_run;
  b->task.drop = ag_background_drop;
  b->compiled = c;
  b->pool = pool;
  ag_pool_retain(pool);
  b->budget = b->hint_budget = max_states;
  b->seconds_left = b->hint_seconds_left = max_seconds;
  b->n_parts = n_parts;
  b->part = -1;
  atomic_init(&b->phase, AG_BG_QUEUED);
  atomic_init(&b->classified, 0);
  atomic_init(&b->abandoned, false);
  ag_background *none = NULL;
  if (!atomic_compare_exchange_strong(&c->background, &none, b)) {
    ag_background_free(b);
    return ag_fail(err, AG_ERR_STATE, -1, "the grammar's background classification was started already");
  }
  if (!ag_pool_post(pool, &b->task)) atomic_store(&b->phase, AG_BG_IDLE); /* the pool is stopping */
  return AG_OK;
}

int ag_compiled_testing_background(ag_compiled *c, int32_t *classified) {
  ag_background *b = atomic_load(&c->background);
  *classified = b ? ag_background_classified(b) : 0;
  return b ? ag_background_phase(b) : 0;
}

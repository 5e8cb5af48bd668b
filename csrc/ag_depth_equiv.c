/* ag_depth_equiv.c - level-by-level equivalence of a byte-only rule's states (see the header). */
#include "ag_depth_equiv.h"

#include <pthread.h>

typedef AG_VEC(uint32_t) ag_words;

/* The rule's automaton with local state numbers. */
typedef struct ag_local_fsm {
  int32_t n;
  int32_t *states;     /* [n] ascending global ids */
  uint32_t *edge_at;   /* [n + 1] */
  ag_byte_edge *edges; /* targets as local numbers */
} ag_local_fsm;

/* A signature kept by the hash-consing table: its words in `sigs`, its class id. */
typedef struct ag_sig_slot {
  uint64_t hash;
  size_t at;
  uint32_t len;
  int32_t id; /* -1: an empty slot */
} ag_sig_slot;

struct ag_depth_equiv {
  const ag_grammar *g; /* borrowed: the mask cache that owns this outlives nothing of g */
  ag_local_fsm f;
  uint32_t levels;     /* levels 0 .. levels - 1 */
  pthread_mutex_t lock; /* guards everything below */
  int32_t *cls;        /* [levels * f.n] the class of a state at a level, -1 until computed */
  ag_words sigs;       /* the words of every signature seen */
  ag_words scratch;    /* the signature being looked up */
  ag_sig_slot *slots;  /* open addressing, a power of two */
  uint32_t n_slots, n_ids;
  AG_VEC(int32_t) reps; /* [n_ids] a noted state of the class, or -1 */
  size_t bytes;   /* held now */
  size_t counted; /* reported by ag_depth_equiv_take_growth */
};

static int32_t ag_local_of(const int32_t *states, int32_t n, int32_t s) {
  int32_t lo = 0, hi = n;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (states[mid] < s) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && states[lo] == s ? lo : -1;
}

/* An open-addressing set of state ids with room for the bound on a rule's states. */
#define AG_SEEN_SLOTS (2 * AG_DEPTH_EQUIV_MAX_STATES)

static bool ag_seen_add(int32_t *slots, int32_t s) {
  uint32_t i = ((uint32_t)s * 2654435761u) & (AG_SEEN_SLOTS - 1);
  while (slots[i] >= 0) {
    if (slots[i] == s) return false;
    i = (i + 1) & (AG_SEEN_SLOTS - 1);
  }
  slots[i] = s;
  return true;
}

/* Collects the states reachable from the rule's start into f->states (sorted).
 * False when the rule has counted states, passes the bounds, or
 * memory ran out (*oom); then f->states is NULL. */
static bool ag_local_collect(const ag_grammar *g, int32_t rule, ag_local_fsm *f, bool *oom) {
  AG_VEC(int32_t) queue = {0};
  int32_t *seen = malloc(sizeof *seen * AG_SEEN_SLOTS);
  bool ok = seen != NULL;
  if (ok) memset(seen, 0xff, sizeof *seen * AG_SEEN_SLOTS); /* every slot -1: empty */
  ok = ok && ag_vec_push(&queue, g->rule_start[rule]);
  if (ok) ag_seen_add(seen, g->rule_start[rule]);
  if (!ok) *oom = true;
  size_t n_edges = 0;
  for (size_t head = 0; ok && head < queue.len; head++) {
    const ag_state *st = &g->states[queue.data[head]];
    n_edges += st->byte_end - st->byte_begin;
    ok = !st->counted && n_edges <= AG_DEPTH_EQUIV_MAX_EDGES;
    /* byte edges, then rule edges' targets: both stay inside the rule */
    uint32_t n_out = st->byte_end - st->byte_begin + st->rule_end - st->rule_begin;
    for (uint32_t k = 0; ok && k < n_out; k++) {
      uint32_t nb = st->byte_end - st->byte_begin;
      int32_t t = k < nb ? g->byte_edges[st->byte_begin + k].target
                         : g->rule_edges[st->rule_begin + k - nb].target;
      if (!ag_seen_add(seen, t)) continue;
      if (queue.len >= AG_DEPTH_EQUIV_MAX_STATES) ok = false;
      else if (!ag_vec_push(&queue, t)) *oom = true, ok = false;
    }
  }
  free(seen);
  if (!ok || queue.len < AG_DEPTH_EQUIV_MIN_STATES) {
    ag_vec_free(&queue);
    return false;
  }
  f->n = (int32_t)queue.len;
  f->states = queue.data;
  qsort(f->states, queue.len, sizeof *f->states, ag_cmp_int32);
  return true;
}

/* Copies the rule's edges with local target numbers. */
static bool ag_local_edges(const ag_grammar *g, ag_local_fsm *f) {
  size_t n_edges = 0;
  for (int32_t i = 0; i < f->n; i++)
    n_edges += g->states[f->states[i]].byte_end - g->states[f->states[i]].byte_begin;
  f->edge_at = malloc(sizeof *f->edge_at * ((size_t)f->n + 1));
  f->edges = malloc(sizeof *f->edges * (n_edges ? n_edges : 1));
  if (!f->edge_at || !f->edges) return false;
  uint32_t k = 0;
  for (int32_t i = 0; i < f->n; i++) {
    const ag_state *st = &g->states[f->states[i]];
    f->edge_at[i] = k;
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++, k++) {
      f->edges[k] = g->byte_edges[e];
      f->edges[k].target = ag_local_of(f->states, f->n, g->byte_edges[e].target);
    }
  }
  f->edge_at[f->n] = k;
  return true;
}

static uint64_t ag_hash_words(const uint32_t *w, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  for (size_t k = 0; k < n; k++) h = (h ^ w[k]) * 1099511628211ull;
  return h ^ (h >> 29);
}

static bool ag_slots_grow(ag_depth_equiv *q) {
  uint32_t n = q->n_slots ? 2 * q->n_slots : 1024;
  ag_sig_slot *slots = malloc(sizeof *slots * n);
  if (!slots) return false;
  for (uint32_t k = 0; k < n; k++) slots[k].id = -1;
  for (uint32_t k = 0; k < q->n_slots; k++) {
    if (q->slots[k].id < 0) continue;
    uint32_t h = (uint32_t)q->slots[k].hash & (n - 1);
    while (slots[h].id >= 0) h = (h + 1) & (n - 1);
    slots[h] = q->slots[k];
  }
  q->bytes += sizeof *slots * (n - q->n_slots);
  free(q->slots);
  q->slots = slots;
  q->n_slots = n;
  return true;
}

/* The class id of the signature in q->scratch, a new one when unseen; -1 out of memory. */
static int32_t ag_intern(ag_depth_equiv *q) {
  if (2 * (q->n_ids + 1) > q->n_slots && !ag_slots_grow(q)) return -1;
  const uint32_t *w = q->scratch.data;
  size_t len = q->scratch.len;
  uint64_t hash = ag_hash_words(w, len);
  uint32_t h = (uint32_t)hash & (q->n_slots - 1);
  for (; q->slots[h].id >= 0; h = (h + 1) & (q->n_slots - 1)) {
    const ag_sig_slot *sl = &q->slots[h];
    if (sl->hash == hash && sl->len == len && !memcmp(q->sigs.data + sl->at, w, len * sizeof *w))
      return sl->id;
  }
  size_t cap_before = q->sigs.cap + q->reps.cap;
  if (!ag_vec_reserve(&q->sigs, q->sigs.len + len) || !ag_vec_push(&q->reps, -1)) return -1;
  q->bytes += (q->sigs.cap + q->reps.cap - cap_before) * sizeof(uint32_t);
  memcpy(q->sigs.data + q->sigs.len, w, len * sizeof *w);
  q->slots[h] = (ag_sig_slot){hash, q->sigs.len, (uint32_t)len, (int32_t)q->n_ids};
  q->sigs.len += len;
  return (int32_t)q->n_ids++;
}

/* The local number of a rule edge's target whose class a signature compares
 * (a non-nullable rule: the target is reached a byte or more later, so its
 * class a level down decides), or -1 when the target itself must match (a
 * nullable rule may be passed without a byte). */
static int32_t ag_rule_target(const ag_depth_equiv *q, const ag_rule_edge *re) {
  return q->g->rule_nullable[re->rule] ? -1 : ag_local_of(q->f.states, q->f.n, re->target);
}

/* Appends to the scratch signature: the level, accepting, the rule edges, and
 * for level > 0 the byte ranges with their targets' classes at level - 1,
 * adjacent ranges into one class merged. A rule edge is its rule and, for level
 * > 0, its target's class at level - 1 (or the target itself, see
 * ag_rule_target; also at level 0). */
static bool ag_signature(ag_depth_equiv *q, int32_t i, uint32_t level) {
  const ag_state *st = &q->g->states[q->f.states[i]];
  ag_words *sig = &q->scratch;
  size_t n = q->f.n;
  size_t need = 3 + 3 * (size_t)(st->rule_end - st->rule_begin) + 3 * (size_t)(st->byte_end - st->byte_begin);
  sig->len = 0;
  if (!ag_vec_reserve(sig, need)) return false;
  sig->data[sig->len++] = level;
  sig->data[sig->len++] = st->accepting;
  sig->data[sig->len++] = st->rule_end - st->rule_begin;
  for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
    const ag_rule_edge *re = &q->g->rule_edges[e];
    int32_t t = ag_rule_target(q, re);
    sig->data[sig->len++] = (uint32_t)re->rule;
    sig->data[sig->len++] = t < 0; /* compared: the target itself, or its class */
    if (t < 0) sig->data[sig->len++] = (uint32_t)re->target;
    else if (level > 0) sig->data[sig->len++] = (uint32_t)q->cls[(level - 1) * n + (size_t)t];
  }
  size_t first = sig->len;
  for (uint32_t e = q->f.edge_at[i]; level > 0 && e < q->f.edge_at[i + 1]; e++) {
    const ag_byte_edge *be = &q->f.edges[e];
    uint32_t c = (uint32_t)q->cls[(size_t)(level - 1) * n + be->target];
    if (sig->len > first && sig->data[sig->len - 1] == c && sig->data[sig->len - 2] + 1 == be->lo) {
      sig->data[sig->len - 2] = be->hi;
      continue;
    }
    sig->data[sig->len++] = be->lo;
    sig->data[sig->len++] = be->hi;
    sig->data[sig->len++] = c;
  }
  return true;
}

/* The class of local state i at `level`, computed (with what it needs: its
 * targets' classes a level down) if not yet; -1 out of memory. Recursion is at
 * most `levels` deep. */
static int32_t ag_class_at(ag_depth_equiv *q, int32_t i, uint32_t level) {
  int32_t *memo = &q->cls[(size_t)level * q->f.n + i];
  if (*memo >= 0) return *memo;
  if (level > 0) {
    for (uint32_t e = q->f.edge_at[i]; e < q->f.edge_at[i + 1]; e++)
      if (ag_class_at(q, q->f.edges[e].target, level - 1) < 0) return -1;
    const ag_state *st = &q->g->states[q->f.states[i]];
    for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
      int32_t t = ag_rule_target(q, &q->g->rule_edges[e]);
      if (t >= 0 && ag_class_at(q, t, level - 1) < 0) return -1;
    }
  }
  if (!ag_signature(q, i, level)) return -1;
  return *memo = ag_intern(q);
}

static void ag_local_free(ag_local_fsm *f) {
  free(f->states);
  free(f->edge_at);
  free(f->edges);
}

ag_status ag_depth_equiv_build(const ag_grammar *g, int32_t rule, uint32_t max_level,
                               ag_depth_equiv **out, ag_error *err) {
  *out = NULL;
  ag_local_fsm f = {0};
  bool oom = false;
  if (!ag_local_collect(g, rule, &f, &oom))
    return oom ? ag_fail(err, AG_ERR_NOMEM, rule, "out of memory comparing a rule's states") : AG_OK;
  ag_depth_equiv *q = calloc(1, sizeof *q);
  size_t n = (size_t)f.n, levels = (size_t)max_level + 1;
  if (q) q->f = f;
  if (!q || !ag_local_edges(g, &q->f) || !(q->cls = malloc(sizeof *q->cls * n * levels)) ||
      pthread_mutex_init(&q->lock, NULL)) {
    ag_local_free(q ? &q->f : &f);
    if (q) free(q->cls);
    free(q);
    return ag_fail(err, AG_ERR_NOMEM, rule, "out of memory comparing a rule's states");
  }
  q->g = g;
  q->levels = (uint32_t)levels;
  memset(q->cls, 0xff, sizeof *q->cls * n * levels); /* -1: not computed */
  q->bytes = sizeof *q + n * (sizeof *q->f.states + sizeof *q->f.edge_at + levels * sizeof *q->cls) +
             q->f.edge_at[n] * sizeof *q->f.edges;
  *out = q;
  return AG_OK;
}

void ag_depth_equiv_free(ag_depth_equiv *q) {
  if (!q) return;
  pthread_mutex_destroy(&q->lock);
  ag_local_free(&q->f);
  free(q->cls);
  ag_vec_free(&q->sigs);
  ag_vec_free(&q->scratch);
  ag_vec_free(&q->reps);
  free(q->slots);
  free(q);
}

size_t ag_depth_equiv_take_growth(ag_depth_equiv *q) {
  pthread_mutex_lock(&q->lock);
  size_t n = q->bytes - q->counted;
  q->counted = q->bytes;
  pthread_mutex_unlock(&q->lock);
  return n;
}

const int32_t *ag_depth_equiv_states(const ag_depth_equiv *q, int32_t *n) {
  *n = q->f.n;
  return q->f.states;
}

void ag_depth_equiv_find(ag_depth_equiv *q, int32_t state, uint32_t min_level, int32_t *rep,
                         uint32_t *level) {
  *rep = -1;
  int32_t i = ag_local_of(q->f.states, q->f.n, state);
  if (i < 0) return;
  pthread_mutex_lock(&q->lock);
  for (int64_t l = (int64_t)q->levels - 1; l >= (int64_t)min_level; l--) {
    int32_t c = ag_class_at(q, i, (uint32_t)l);
    if (c < 0) break;
    int32_t r = q->reps.data[c];
    if (r >= 0 && r != state) {
      *rep = r;
      *level = (uint32_t)l;
      break;
    }
  }
  pthread_mutex_unlock(&q->lock);
}

void ag_depth_equiv_note(ag_depth_equiv *q, int32_t state) {
  int32_t i = ag_local_of(q->f.states, q->f.n, state);
  if (i < 0) return;
  pthread_mutex_lock(&q->lock);
  for (uint32_t l = 0; l < q->levels; l++) {
    int32_t c = ag_class_at(q, i, l);
    if (c < 0) break;
    if (q->reps.data[c] < 0) q->reps.data[c] = state;
  }
  pthread_mutex_unlock(&q->lock);
}


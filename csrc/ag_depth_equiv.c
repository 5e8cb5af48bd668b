/* ag_depth_equiv.c - level-by-level equivalence of a rule's states (see the header). */
#include "ag_depth_equiv.h"

#include <pthread.h>

typedef AG_VEC(uint32_t) ag_words;

/* A signature kept by the hash-consing table: its words in `sigs`, its class id. */
typedef struct ag_sig_slot {
  uint64_t hash;
  size_t at;
  uint32_t len;
  int32_t id; /* -1: an empty slot */
} ag_sig_slot;

/* The states compared are the run of the rule's states from its start state:
 * the loader builds a rule's automaton in one piece, start first, and keeps
 * the order when it prunes. A state or target outside the run is compared by
 * identity (never derives, never wrongly). */
struct ag_depth_equiv {
  const ag_grammar *g; /* borrowed: the mask cache that owns this outlives nothing of g */
  int32_t begin, n;    /* the run of states, [begin, begin + n) */
  uint32_t levels;     /* levels 0 .. levels - 1 */
  pthread_mutex_t lock; /* guards everything below */
  /* 1 + the class of a state at a level, 0 until computed: in blocks of
   * AG_CLS_BLOCK states, all levels of a state together, each block allocated
   * when one of its states is first asked about. A dense [levels * n] array
   * was zeroed whole on the first find: 1 MB for a trie of 500 tool names, most
   * of a first visit's time, for the few hundred cells a find may fill. */
  int32_t **cls; /* [n_blocks] */
  int32_t n_blocks;
  ag_words sigs;       /* the words of every signature seen */
  ag_words scratch;    /* the signature being looked up */
  ag_sig_slot *slots;  /* open addressing, a power of two */
  uint32_t n_slots, n_ids;
  AG_VEC(int32_t) reps; /* [n_ids] a noted state of the class, or -1 */
  uint32_t min_level; /* finds look no shallower (ag_depth_equiv_build) */
  uint32_t *alone;    /* [n] bits: equivalent at min_level to no other state of the rule,
                       * so never found or noted; NULL when not worked out */
  int64_t budget; /* classes the current call may still compute */
  int32_t found, missed; /* finds so far, by outcome (see ag_depth_equiv_hopeless) */
  size_t bytes;   /* held now */
  size_t counted; /* reported by ag_depth_equiv_take_growth */
};

#define AG_CLS_BLOCK 64

/* The cell of local state i at `level` (computed or 0), or NULL when its block
 * is not allocated yet. */
static int32_t *ag_cls_cell(const ag_depth_equiv *q, int32_t i, uint32_t level) {
  int32_t *block = q->cls[i / AG_CLS_BLOCK];
  return block ? &block[(size_t)(i % AG_CLS_BLOCK) * q->levels + level] : NULL;
}

/* The cell of local state i at `level`, its block allocated if need be; NULL
 * out of memory. */
static int32_t *ag_cls_cell_new(ag_depth_equiv *q, int32_t i, uint32_t level) {
  int32_t **block = &q->cls[i / AG_CLS_BLOCK];
  if (!*block) {
    size_t size = sizeof **block * AG_CLS_BLOCK * q->levels;
    if (!(*block = calloc(1, size))) return NULL;
    q->bytes += size;
  }
  return ag_cls_cell(q, i, level);
}

/* The class of local state i at `level`, known to be computed. */
static uint32_t ag_cls_known(const ag_depth_equiv *q, int32_t i, uint32_t level) {
  return (uint32_t)*ag_cls_cell(q, i, level) - 1;
}

/* The local number of state s, or -1 outside the run. */
static int32_t ag_local(const ag_depth_equiv *q, int32_t s) {
  return s >= q->begin && s - q->begin < q->n ? s - q->begin : -1;
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
 * nullable rule may be passed without a byte; or the target is outside the run). */
static int32_t ag_rule_target(const ag_depth_equiv *q, const ag_rule_edge *re) {
  return q->g->rule_nullable[re->rule] ? -1 : ag_local(q, re->target);
}

/* Appends to the scratch signature: the level, accepting, the rule edges, and
 * for level > 0 the byte ranges with their targets' classes at level - 1,
 * adjacent ranges into one class merged. A rule edge is its rule and, for level
 * > 0, its target's class at level - 1 (or the target itself, see
 * ag_rule_target; also at level 0). */
static bool ag_signature(ag_depth_equiv *q, int32_t i, uint32_t level) {
  const ag_state *st = &q->g->states[q->begin + i];
  ag_words *sig = &q->scratch;
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
    else if (level > 0) sig->data[sig->len++] = ag_cls_known(q, t, level - 1);
  }
  size_t first = sig->len;
  for (uint32_t e = st->byte_begin; level > 0 && e < st->byte_end; e++) {
    const ag_byte_edge *be = &q->g->byte_edges[e];
    int32_t t = ag_local(q, be->target);
    /* a class below 2^31, or an outside target itself above it */
    uint32_t c = t < 0 ? 0x80000000u | (uint32_t)be->target : ag_cls_known(q, t, level - 1);
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
 * targets' classes a level down) if not yet; -1 out of memory or past the
 * call's work budget (what was computed stays: each class is exact). Recursion
 * is at most `levels` deep. */
static int32_t ag_class_at(ag_depth_equiv *q, int32_t i, uint32_t level) {
  int32_t *memo = ag_cls_cell(q, i, level);
  if (memo && *memo > 0) return *memo - 1;
  if (q->budget-- <= 0) return -1; /* see AG_DEPTH_EQUIV_WORK */
  const ag_state *st = &q->g->states[q->begin + i];
  if (level > 0) {
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
      int32_t t = ag_local(q, q->g->byte_edges[e].target);
      if (t >= 0 && ag_class_at(q, t, level - 1) < 0) return -1;
    }
    for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
      int32_t t = ag_rule_target(q, &q->g->rule_edges[e]);
      if (t >= 0 && ag_class_at(q, t, level - 1) < 0) return -1;
    }
  }
  if (!ag_signature(q, i, level)) return -1;
  int32_t c = ag_intern(q);
  /* the block may be new: the recursion above only allocated its targets' */
  if (c >= 0 && !(memo = ag_cls_cell_new(q, i, level))) return -1;
  if (c >= 0) *memo = c + 1;
  return c;
}

/* Works out which states are alone at min_level (see ag_depth_equiv.alone), when
 * classing every state there fits AG_DEPTH_EQUIV_SURVEY; false when every state
 * is alone: the rule is not worth comparing. True otherwise, or without the
 * survey (over the bound, out of memory): the finds and notes then judge. */
static bool ag_survey(ag_depth_equiv *q) {
  if ((size_t)q->n * (q->min_level + 1) > AG_DEPTH_EQUIV_SURVEY) return true;
  int32_t *cls = malloc(sizeof *cls * (size_t)q->n);
  q->budget = AG_DEPTH_EQUIV_SURVEY;
  for (int32_t i = 0; cls && i < q->n; i++)
    if ((cls[i] = ag_class_at(q, i, q->min_level)) < 0) {
      free(cls);
      cls = NULL;
    }
  uint32_t *count = cls ? calloc(q->n_ids, sizeof *count) : NULL;
  q->alone = count ? calloc(((size_t)q->n + 31) / 32, sizeof *q->alone) : NULL;
  bool shared = !q->alone;
  for (int32_t i = 0; q->alone && i < q->n; i++) count[cls[i]]++;
  for (int32_t i = 0; q->alone && i < q->n; i++) {
    if (count[cls[i]] == 1) ag_bit_set(q->alone, i);
    else shared = true;
  }
  if (q->alone) q->bytes += ((size_t)q->n + 31) / 32 * sizeof *q->alone;
  free(count);
  free(cls);
  return shared;
}

ag_status ag_depth_equiv_build(const ag_grammar *g, int32_t rule, uint32_t max_level,
                               uint32_t min_level, ag_depth_equiv **out, ag_error *err) {
  *out = NULL;
  int32_t begin = g->rule_start[rule], n = 0;
  while (begin + n < g->n_states && g->state_rule[begin + n] == rule && n <= AG_DEPTH_EQUIV_MAX_STATES) {
    if (g->states[begin + n].counted && g->states[begin + n].byte_begin == g->states[begin + n].byte_end)
      return AG_OK; /* a counted rule of rule edges: counts are not in the automaton */
    n++;
  }
  if (n < AG_DEPTH_EQUIV_MIN_STATES || n > AG_DEPTH_EQUIV_MAX_STATES) return AG_OK;
  size_t levels = (size_t)max_level + 1;
  int32_t n_blocks = (n + AG_CLS_BLOCK - 1) / AG_CLS_BLOCK;
  ag_depth_equiv *q = calloc(1, sizeof *q);
  if (!q || !(q->cls = calloc((size_t)n_blocks, sizeof *q->cls)) || pthread_mutex_init(&q->lock, NULL)) {
    if (q) free(q->cls);
    free(q);
    return ag_fail(err, AG_ERR_NOMEM, rule, "out of memory comparing a rule's states");
  }
  q->g = g;
  q->begin = begin;
  q->n = n;
  q->n_blocks = n_blocks;
  q->levels = (uint32_t)levels;
  q->min_level = min_level < max_level ? min_level : max_level;
  q->bytes = sizeof *q + (size_t)n_blocks * sizeof *q->cls;
  if (!ag_survey(q)) { /* no state has an equivalent to find */
    ag_depth_equiv_free(q);
    return AG_OK;
  }
  *out = q;
  return AG_OK;
}

void ag_depth_equiv_free(ag_depth_equiv *q) {
  if (!q) return;
  pthread_mutex_destroy(&q->lock);
  for (int32_t b = 0; b < q->n_blocks; b++) free(q->cls[b]);
  free(q->cls);
  free(q->alone);
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

void ag_depth_equiv_range(const ag_depth_equiv *q, int32_t *begin, int32_t *n) {
  *begin = q->begin;
  *n = q->n;
}

/* Whether finds in this rule keep finding nothing: a trie of names, say,
 * whose states are equivalent to none. Then finds and notes stop, since each
 * costs up to a work budget of class computations at every first visit. */
static bool ag_depth_equiv_hopeless(const ag_depth_equiv *q) {
  return q->missed > 2 * q->found + AG_DEPTH_EQUIV_MISSES;
}

void ag_depth_equiv_find(ag_depth_equiv *q, int32_t state, uint32_t min_level, int32_t *rep,
                         uint32_t *level) {
  *rep = -1;
  int32_t i = ag_local(q, state);
  if (i < 0 || (q->alone && ag_bit(q->alone, i))) return; /* alone: nothing to find */
  pthread_mutex_lock(&q->lock);
  if (ag_depth_equiv_hopeless(q)) {
    pthread_mutex_unlock(&q->lock);
    return;
  }
  q->budget = AG_DEPTH_EQUIV_WORK;
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
  if (*rep >= 0) q->found++;
  else q->missed += q->budget < 0 ? AG_DEPTH_EQUIV_MISSES + 1 : 1; /* too wide to compare: give up */
  pthread_mutex_unlock(&q->lock);
}

void ag_depth_equiv_note(ag_depth_equiv *q, int32_t state) {
  int32_t i = ag_local(q, state);
  if (i < 0 || (q->alone && ag_bit(q->alone, i))) return; /* alone: no state will find it */
  pthread_mutex_lock(&q->lock);
  q->budget = ag_depth_equiv_hopeless(q) ? 0 : AG_DEPTH_EQUIV_WORK;
  for (int64_t l = (int64_t)q->levels - 1; l >= 0; l--) { /* the deepest first: finds start there */
    int32_t c = ag_class_at(q, i, (uint32_t)l);
    if (c < 0 && q->budget < 0 && l == (int64_t)q->levels - 1)
      q->missed += AG_DEPTH_EQUIV_MISSES + 1; /* too wide to compare: give up */
    if (c < 0) break;
    if (q->reps.data[c] < 0) q->reps.data[c] = state;
  }
  pthread_mutex_unlock(&q->lock);
}

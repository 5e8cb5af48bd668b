/*
 * ag_counted_text.c - a counted text (AG_NODE_COUNTED_TEXT): the strings of a
 * body automaton, such as a pattern's, that are min..max copies of a character
 * automaton, as one counted rule whose size does not grow with the bounds.
 *
 * The rule's states are the pairs (body state, character state) reached from
 * the two starts, a finished character starting the next at once (the
 * character is prefix-free). Where the character is at its start, a copy has
 * ended and the next byte begins one (ag_state.boundary); a pair accepts where
 * the body accepts there. Each state keeps the fewest copies that must still
 * begin before the rule can end (ag_state.rest): an item whose count plus that
 * passes max can never finish, so the parser keeps only the others
 * (ag_copy_count). With min 0 that is exact: the shortest way to finish fits.
 * With a min, the count must also be able to reach it, which it can where every
 * longer way to finish exists too; so the rule is built only when from every
 * state some shortest way to finish passes a state that loops on one character
 * (ag_text_check_loops): the states of `.+@.+\..+` or `^[a-z0-9-]+:[a-z]+$`
 * do, `^(ab)+$`'s or `^a.*___$`'s do not.
 */
#include "ag_fsm_builder.h"

#define AG_TEXT_PAIRS_MAX ((size_t)1 << 26) /* body states times character states */
#define AG_TEXT_REST_MAX 255                /* ag_state.rest is a byte */

typedef AG_VEC(ag_byte_edge) ag_text_edges;

/* The product being built: state k is the pair pair[k], its edges
 * edges[begin[k] .. begin[k + 1]) (targets are state numbers). */
typedef struct ag_text {
  int32_t body, n_body, chr, n_chr; /* global ids of the two automata in b->states */
  int32_t *id;                      /* [n_body * n_chr] pair -> state, -1: not reached */
  AG_VEC(int64_t) pair;             /* body state << 32 | character state (local ids) */
  AG_VEC(uint32_t) begin;
  ag_text_edges edges;
  bool *accept;    /* [n] the body accepts between characters */
  int32_t *rest;   /* [n] copies that must still begin; INT32_MAX: never ends */
  bool *good;      /* [n] some shortest way to finish passes a one-character loop */
  uint32_t *rbeg;  /* [n + 1] reverse edges by target */
  int32_t *rsrc;   /* [edges] their sources */
} ag_text;

static void ag_text_free(ag_text *t) {
  free(t->id);
  ag_vec_free(&t->pair);
  ag_vec_free(&t->begin);
  ag_vec_free(&t->edges);
  free(t->accept);
  free(t->rest);
  free(t->good);
  free(t->rbeg);
  free(t->rsrc);
}

static bool ag_text_boundary(const ag_text *t, int32_t k) { return (int32_t)t->pair.data[k] == 0; }

/* The state of pair (d, c) in local ids, appended when first reached. */
static bool ag_text_state(ag_text *t, int32_t d, int32_t c, int32_t *out) {
  int32_t *slot = &t->id[(size_t)d * (size_t)t->n_chr + (size_t)c];
  if (*slot < 0) {
    *slot = (int32_t)t->pair.len;
    if (!ag_vec_push(&t->pair, (int64_t)d << 32 | (uint32_t)c)) return false;
  }
  *out = *slot;
  return true;
}

/* Appends an edge of the state being expanded, merged with the last one when
 * adjacent with the same target. */
static bool ag_text_edge(ag_text *t, uint32_t first, int lo, int hi, int32_t target) {
  if (t->edges.len > first) {
    ag_byte_edge *last = &t->edges.data[t->edges.len - 1];
    if (last->target == target && last->hi + 1 == lo) {
      last->hi = (uint8_t)hi;
      return true;
    }
  }
  ag_byte_edge e = {(uint8_t)lo, (uint8_t)hi, target};
  return ag_vec_push(&t->edges, e);
}

/* The edges of state k: the byte ranges both automata take (both lists are
 * sorted and disjoint, so one merge), a finished character going back to the
 * character's start. */
static bool ag_text_expand(ag_text *t, const ag_builder *b, int32_t k) {
  int32_t d = (int32_t)(t->pair.data[k] >> 32), c = (int32_t)t->pair.data[k];
  const ag_state *sd = &b->states.data[t->body + d], *sc = &b->states.data[t->chr + c];
  const ag_byte_edge *e = b->byte_edges.data;
  uint32_t x = sd->byte_begin, y = sc->byte_begin, first = (uint32_t)t->edges.len;
  while (x < sd->byte_end && y < sc->byte_end) {
    ag_byte_edge u = e[x], v = e[y];
    int lo = u.lo > v.lo ? u.lo : v.lo, hi = u.hi < v.hi ? u.hi : v.hi;
    if (lo <= hi) {
      int32_t nc = b->states.data[v.target].accepting ? 0 : v.target - t->chr, to;
      if (!ag_text_state(t, u.target - t->body, nc, &to) || !ag_text_edge(t, first, lo, hi, to))
        return false;
    }
    if (u.hi <= v.hi) x++;
    if (v.hi <= u.hi) y++;
  }
  return ag_vec_push(&t->begin, (uint32_t)t->edges.len);
}

/* Every pair reached from the two starts, breadth first. */
static ag_status ag_text_pairs(ag_text *t, ag_builder *b) {
  size_t n = (size_t)t->n_body * (size_t)t->n_chr;
  if (n > AG_TEXT_PAIRS_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "a counted text's automata are too large to combine (%d by %d states)", t->n_body,
                   t->n_chr);
  t->id = malloc(n * sizeof *t->id);
  int32_t start;
  if (!t->id || !ag_vec_push(&t->begin, 0)) return ag_builder_nomem(b);
  memset(t->id, 0xff, n * sizeof *t->id);
  if (!ag_text_state(t, 0, 0, &start)) return ag_builder_nomem(b);
  for (size_t k = 0; k < t->pair.len; k++) {
    if (t->pair.len >= AG_MAX_STATES)
      return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata need more than %d states",
                     AG_MAX_STATES);
    if (!ag_text_expand(t, b, (int32_t)k)) return ag_builder_nomem(b);
  }
  return AG_OK;
}

/* The reverse edges, grouped by target (a counting sort). */
static bool ag_text_reverse(ag_text *t) {
  size_t n = t->pair.len, m = t->edges.len;
  t->rbeg = calloc(n + 1, sizeof *t->rbeg);
  t->rsrc = malloc((m ? m : 1) * sizeof *t->rsrc);
  if (!t->rbeg || !t->rsrc) return false;
  for (size_t i = 0; i < m; i++) t->rbeg[t->edges.data[i].target + 1]++;
  for (size_t s = 0; s < n; s++) t->rbeg[s + 1] += t->rbeg[s];
  uint32_t *at = malloc((n ? n : 1) * sizeof *at);
  if (!at) return false;
  memcpy(at, t->rbeg, n * sizeof *at);
  for (size_t s = 0; s < n; s++)
    for (uint32_t i = t->begin.data[s]; i < t->begin.data[s + 1]; i++)
      t->rsrc[at[t->edges.data[i].target]++] = (int32_t)s;
  free(at);
  return true;
}

/* accept[k]: read before the two automata are replaced (ag_text_write). */
static bool ag_text_accepting(ag_text *t, const ag_builder *b) {
  size_t n = t->pair.len;
  t->accept = malloc((n ? n : 1) * sizeof *t->accept);
  if (!t->accept) return false;
  for (size_t k = 0; k < n; k++)
    t->accept[k] = ag_text_boundary(t, (int32_t)k) && b->states.data[t->body + (t->pair.data[k] >> 32)].accepting;
  return true;
}

/* rest[k]: a shortest way back from the accepting states, where an edge from
 * a boundary costs one copy and any other none (a double-ended queue: the
 * free edges go in front). */
static bool ag_text_rest(ag_text *t) {
  size_t n = t->pair.len;
  /* a state enters behind at most once (its first distance, or a seed) and in front at
   * most once (a free edge sets the distance being taken, which nothing lowers after) */
  int32_t *dq = malloc((2 * n + 1) * sizeof *dq);
  t->rest = malloc((n ? n : 1) * sizeof *t->rest);
  if (!dq || !t->rest) {
    free(dq);
    return false;
  }
  size_t head = n, tail = n; /* dq[head .. tail) */
  for (size_t k = 0; k < n; k++) {
    t->rest[k] = t->accept[k] ? 0 : INT32_MAX;
    if (t->accept[k]) dq[tail++] = (int32_t)k;
  }
  while (head < tail) {
    int32_t s = dq[head++];
    for (uint32_t i = t->rbeg[s]; i < t->rbeg[s + 1]; i++) {
      int32_t q = t->rsrc[i], cost = ag_text_boundary(t, q);
      if (t->rest[s] + cost >= t->rest[q]) continue;
      t->rest[q] = t->rest[s] + cost;
      if (cost) dq[tail++] = q;
      else dq[--head] = q;
    }
  }
  free(dq);
  return true;
}

/* Whether boundary state c comes back to itself within one character. */
static bool ag_text_loops(const ag_text *t, int32_t c, int32_t *stack, int32_t *seen, int32_t stamp) {
  size_t top = 0;
  stack[top++] = c;
  seen[c] = stamp;
  while (top) {
    int32_t s = stack[--top];
    for (uint32_t i = t->begin.data[s]; i < t->begin.data[s + 1]; i++) {
      int32_t to = t->edges.data[i].target;
      if (to == c) return true;
      if (seen[to] == stamp || ag_text_boundary(t, to)) continue;
      seen[to] = stamp;
      stack[top++] = to;
    }
  }
  return false;
}

/* good[k] for every state that can finish: the states with a one-character
 * loop, then backwards along the edges of shortest ways to finish. Only a min
 * needs it (ag_text_check). */
static bool ag_text_check_loops(ag_text *t) {
  size_t n = t->pair.len;
  int32_t *queue = malloc((n + 1) * sizeof *queue), *search = malloc((n + 1) * sizeof *search);
  int32_t *seen = calloc(n + 1, sizeof *seen);
  t->good = calloc(n + 1, sizeof *t->good);
  bool ok = queue && search && seen && t->good;
  size_t top = 0;
  for (size_t k = 0; ok && k < n; k++) {
    if (t->rest[k] == INT32_MAX || !ag_text_boundary(t, (int32_t)k)) continue;
    if (ag_text_loops(t, (int32_t)k, search, seen, (int32_t)k + 1)) {
      t->good[k] = true;
      queue[top++] = (int32_t)k;
    }
  }
  while (ok && top) {
    int32_t s = queue[--top];
    for (uint32_t i = t->rbeg[s]; i < t->rbeg[s + 1]; i++) {
      int32_t q = t->rsrc[i];
      if (t->good[q] || t->rest[q] != t->rest[s] + ag_text_boundary(t, q)) continue;
      t->good[q] = true;
      queue[top++] = q;
    }
  }
  free(queue);
  free(search);
  free(seen);
  return ok;
}

/* Whether state k stays: it can finish within max (-1: any count). */
static bool ag_text_kept(const ag_text *t, int32_t k, int32_t max) {
  return t->rest[k] != INT32_MAX && (max < 0 || t->rest[k] <= max);
}

/* Checks what the rule needs of the kept states (see the top of the file):
 * with min 0 the shortest way to finish is always one that fits. */
static ag_status ag_text_check(const ag_text *t, ag_builder *b, const ag_repeat_bounds *bounds) {
  for (size_t k = 0; k < t->pair.len; k++) {
    if (!ag_text_kept(t, (int32_t)k, bounds->max)) continue;
    if (t->rest[k] > AG_TEXT_REST_MAX)
      return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                     "a counted text needs more than %d characters after some position",
                     AG_TEXT_REST_MAX);
    if (bounds->min > 0 && !t->good[k])
      return ag_fail(b->err, AG_ERR_INVALID, b->rule,
                     "a counted text's shortest ways to finish must pass a state that loops on one "
                     "character (its lengths may have gaps)");
  }
  return AG_OK;
}

/* Appends one state of the rule: state k's edges to the kept states, renamed
 * by `out` (global ids). */
static ag_status ag_text_emit(const ag_text *t, ag_builder *b, int32_t k, bool accepting,
                              const int32_t *out) {
  uint32_t nb = (uint32_t)b->byte_edges.len, nr = (uint32_t)b->rule_edges.len;
  ag_state s = {nb, nb, nr, nr, accepting, true, ag_text_boundary(t, k), (uint8_t)t->rest[k]};
  for (uint32_t i = t->begin.data[k]; i < t->begin.data[k + 1]; i++) {
    ag_byte_edge e = t->edges.data[i];
    if (out[e.target] < 0) continue;
    e.target = out[e.target];
    if (!ag_vec_push(&b->byte_edges, e)) return ag_builder_nomem(b);
  }
  s.byte_end = (uint32_t)b->byte_edges.len;
  if (b->states.len >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata need more than %d states",
                   AG_MAX_STATES);
  if (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, b->rule_id))
    return ag_builder_nomem(b);
  return AG_OK;
}

/* Replaces the two automata (from t->body on) by the kept states, the start
 * first. With min > 0 the start must not accept; where it is entered again
 * (and accepts there), the rule begins at a copy of it that does not. A start
 * that cannot finish leaves the rule a bare start, which derives nothing. */
static ag_status ag_text_write(const ag_text *t, ag_builder *b, size_t n_bytes, ag_repeat_bounds *bounds) {
  size_t n = t->pair.len;
  int32_t base = t->body, *out = malloc((n ? n : 1) * sizeof *out);
  if (!out) return ag_builder_nomem(b);
  bool live = ag_text_kept(t, 0, bounds->max);
  bool split = live && t->accept[0] && bounds->min > 0 && t->rbeg[0] < t->rbeg[1];
  int32_t next = base + split;
  for (size_t k = 0; k < n; k++) {
    out[k] = live && ag_text_kept(t, (int32_t)k, bounds->max) ? next++ : -1;
    if (out[k] >= 0 && t->rest[k] > bounds->rest_max) bounds->rest_max = t->rest[k];
  }
  b->states.len = b->state_rule.len = (size_t)base; /* the two automata go */
  b->byte_edges.len = n_bytes;
  ag_status st = AG_OK;
  if (!live) {
    uint32_t nb = (uint32_t)b->byte_edges.len, nr = (uint32_t)b->rule_edges.len;
    ag_state s0 = {nb, nb, nr, nr, false, true, true, 0};
    if (!ag_vec_push(&b->states, s0) || !ag_vec_push(&b->state_rule, b->rule_id)) st = ag_builder_nomem(b);
  }
  if (!st && split) st = ag_text_emit(t, b, 0, false, out);
  for (size_t k = 0; !st && k < n; k++)
    if (out[k] >= 0) st = ag_text_emit(t, b, (int32_t)k, t->accept[k] && (k > 0 || split || bounds->min == 0), out);
  free(out);
  return st;
}

ag_status ag_counted_text_make(ag_builder *b, int32_t body, int32_t chr, size_t n_bytes,
                               ag_repeat_bounds *bounds) {
  ag_text t;
  memset(&t, 0, sizeof t);
  t.body = body;
  t.chr = chr;
  t.n_body = chr - body;
  t.n_chr = (int32_t)b->states.len - chr;
  ag_status st = ag_text_pairs(&t, b);
  if (!st && (!ag_text_accepting(&t, b) || !ag_text_reverse(&t) || !ag_text_rest(&t) ||
              (bounds->min > 0 && !ag_text_check_loops(&t))))
    st = ag_builder_nomem(b);
  if (!st) st = ag_text_check(&t, b, bounds);
  if (!st) st = ag_text_write(&t, b, n_bytes, bounds);
  ag_text_free(&t);
  return st;
}

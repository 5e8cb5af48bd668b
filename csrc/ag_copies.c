/* ag_copies.c - the copies of a counted rule's child each token begins (ag_copies.h). */
#include "ag_copies.h"

#include "ag_plain_tokens.h"

void ag_copies_free(ag_copies *c) {
  if (!c) return;
  free(c->pos);
  free(c->first);
  free(c->copies_at);
  free(c->exits);
  free(c);
}

/* The walk state after d bytes of the current token: the automaton's state,
 * the copies begun, and whether the token could have left the rule before. */
typedef struct ag_copy_step {
  int32_t state;
  uint16_t copies;
  bool exit;
} ag_copy_step;

/* The first sorted position >= i whose token is not in `plain` (NULL: i), or n. */
static int32_t ag_next_other(const uint32_t *plain, int32_t i, int32_t n) {
  if (!plain || i >= n) return i < n ? i : n;
  int32_t w = i >> 5;
  uint32_t bits = ~plain[w] & (~0u << (i & 31));
  while (!bits) {
    if ((++w << 5) >= n) return n;
    bits = ~plain[w];
  }
  int32_t at = (w << 5) + __builtin_ctz(bits);
  return at < n ? at : n;
}

typedef AG_VEC(int32_t) ag_positions;

/* Walks the tokens from `state`, each going on from the bytes it shares with
 * the one walked before: fills copies_at, and lists the inside tokens and the
 * exits. Where the plain characters are copies and none may leave the rule,
 * the plain tokens (nearly all of a vocabulary) are left to the vocabulary's
 * index (ag_copies.plain) and only the others are walked. */
static ag_status ag_copies_walk(ag_copies *c, const ag_grammar *g, const ag_vocab *v, int32_t state,
                                const uint32_t *follow, ag_positions *inside, ag_positions *exits,
                                ag_error *err) {
  /* where plain characters are copies, the states between them accept, so a plain
   * token's last state needs no rest, in a counted text too */
  const uint32_t *plain =
      v->plain && !ag_plain_may_follow(follow) && ag_plain_chars_are_copies(g, state) ? v->plain : NULL;
  c->plain = plain;
  c->adj = !g->states[state].boundary; /* inside a copy: the first is the count's (ag_copy_room) */
  ag_copy_step *at = malloc(((size_t)v->max_token_len + 1) * sizeof *at);
  if (!at) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  memset(c->copies_at, 0xff, (size_t)v->n_sorted * sizeof *c->copies_at); /* AG_COPIES_NONE */
  at[0] = (ag_copy_step){state, 0, false};
  uint32_t valid = 0; /* at[0 .. valid] hold the walk of token `last` */
  int32_t n = v->n_sorted;
  for (int32_t i = ag_next_other(plain, 0, n), last = -1; i < n;) {
    uint32_t len, d = last >= 0 ? ag_vocab_common_prefix(v, last, i) : 0;
    const uint8_t *tok = ag_vocab_sorted_token(v, i, &len);
    if (d > valid) d = valid;
    for (; d < len; d++) {
      const ag_copy_step *s = &at[d];
      int32_t t = ag_state_step(g, s->state, tok[d]);
      if (t < 0) break;
      const ag_state *from = &g->states[s->state];
      at[d + 1].state = t;
      at[d + 1].copies = (uint16_t)(s->copies + (from->boundary && s->copies < AG_COPIES_NONE - 1));
      at[d + 1].exit = s->exit || (from->accepting && d > 0 && (!follow || ag_bit(follow, tok[d])));
    }
    valid = d;
    last = i;
    if (d < len) { /* byte d has no edge: neither has any token sharing the bytes up to it */
      i = ag_next_other(plain, ag_vocab_prefix_end(v, i, d + 1), n);
      continue;
    }
    /* the copies begun, and those its last state still needs (ag_state.rest) */
    uint32_t need = (uint32_t)at[len].copies + g->states[at[len].state].rest;
    c->copies_at[i] = (uint16_t)(need < AG_COPIES_NONE - 1 ? need : AG_COPIES_NONE - 1);
    if (c->copies_at[i] > c->max_copies) c->max_copies = c->copies_at[i];
    if (!ag_vec_push(inside, i) || (at[len].exit && !ag_vec_push(exits, i))) {
      free(at);
      return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
    }
    i = ag_next_other(plain, i + 1, n);
  }
  free(at);
  return AG_OK;
}

/* Orders the inside tokens by copies begun (a counting sort). */
static ag_status ag_copies_order(ag_copies *c, const ag_positions *inside, ag_error *err) {
  c->n_inside = (int32_t)inside->len;
  c->first = calloc((size_t)c->max_copies + 2, sizeof *c->first);
  c->pos = malloc(((size_t)c->n_inside + 1) * sizeof *c->pos);
  int32_t *next = malloc(((size_t)c->max_copies + 1) * sizeof *next);
  if (!c->first || !c->pos || !next) {
    free(next);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  for (size_t k = 0; k < inside->len; k++) c->first[c->copies_at[inside->data[k]] + 1]++;
  for (int32_t j = 0; j <= c->max_copies; j++) c->first[j + 1] += c->first[j];
  memcpy(next, c->first, ((size_t)c->max_copies + 1) * sizeof *next);
  for (size_t k = 0; k < inside->len; k++) c->pos[next[c->copies_at[inside->data[k]]]++] = inside->data[k];
  free(next);
  return AG_OK;
}

ag_status ag_copies_build(const ag_grammar *g, const ag_vocab *v, int32_t state, const uint32_t *follow,
                          ag_copies **out, ag_error *err) {
  *out = NULL;
  ag_copies *c = calloc(1, sizeof *c);
  if (!c || !(c->copies_at = malloc(((size_t)v->n_sorted + 1) * sizeof *c->copies_at))) {
    free(c);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory");
  }
  ag_positions inside = {0}, exits = {0};
  ag_status st = ag_copies_walk(c, g, v, state, follow, &inside, &exits, err);
  if (!st) st = ag_copies_order(c, &inside, err);
  ag_vec_free(&inside);
  c->exits = exits.data; /* the table owns them now */
  c->n_exits = (int32_t)exits.len;
  if (st) {
    ag_copies_free(c);
    return st;
  }
  c->bytes = sizeof *c + (size_t)v->n_sorted * sizeof *c->copies_at +
             ((size_t)c->n_inside + (size_t)c->max_copies + 2 + (size_t)c->n_exits) * sizeof(int32_t);
  *out = c;
  return AG_OK;
}

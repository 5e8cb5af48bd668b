/* ag_classify.c - classifying the vocabulary for one state by walking it (see the header). */
#include "ag_classify.h"

/* Gives w's entry its accepted bitsets, holding the listed tokens; false when
 * memory ran out. */
static bool ag_accepted_bitsets(ag_classify *w, const ag_vocab *v) {
  ag_state_masks *e = w->entry;
  if (e->accepted) return true;
  if (!(e->accepted = calloc(ag_mask_words(v), sizeof(uint32_t))) ||
      !(e->accepted_pos = calloc(ag_pos_words(v), sizeof(uint32_t))))
    return false;
  for (size_t k = 0; k < w->accepted.len; k++) {
    ag_bit_set(e->accepted, v->sorted_ids[w->accepted.data[k]]);
    ag_bit_set(e->accepted_pos, w->accepted.data[k]);
  }
  ag_vec_free(&w->accepted);
  return true;
}

/* Gives e (which has no accepted tokens yet) bitsets that are copies of `ids`
 * and `pos`: another entry's, or a safe set's (ag_dispatch.h's layout:
 * positions, then ids). Copied over uncleared memory, as both cover every word;
 * false when memory ran out. */
bool ag_accepted_copy(ag_state_masks *e, const ag_vocab *v, const uint32_t *ids,
                             const uint32_t *pos) {
  if (!(e->accepted = malloc(ag_mask_words(v) * sizeof(uint32_t))) ||
      !(e->accepted_pos = malloc(ag_pos_words(v) * sizeof(uint32_t))))
    return false;
  memcpy(e->accepted, ids, ag_mask_words(v) * sizeof *ids);
  memcpy(e->accepted_pos, pos, ag_pos_words(v) * sizeof *pos);
  return true;
}

/* Marks sorted token i accepted; false when memory ran out. */
static inline bool ag_mark_accepted(ag_classify *w, const ag_vocab *v, int32_t i) {
  ag_state_masks *e = w->entry;
  if (!e->accepted && w->accepted.len < AG_ACCEPTED_LIST_MAX) return ag_vec_push(&w->accepted, i);
  if (!ag_accepted_bitsets(w, v)) return false;
  ag_bit_set(e->accepted, v->sorted_ids[i]);
  ag_bit_set(e->accepted_pos, i);
  return true;
}

/* The first sorted position in [lo, hi) whose byte `depth` is c or above, or hi;
 * the tokens there share their first depth bytes and are longer. */
static int32_t ag_first_byte_from(const ag_vocab *v, int32_t lo, int32_t hi, uint32_t depth,
                                  uint32_t c) {
  uint32_t len;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (ag_vocab_sorted_token(v, mid, &len)[depth] < c)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/*
 * Where a rejected run that ends at `end` may extend to: token i was rejected at
 * byte `depth`, and the tokens after its run that share its first depth bytes
 * are sorted by their next byte. Those whose next byte has no edge from the
 * state there, which is not accepting (no end flag on any byte), are rejected
 * the same way, so the walk jumps over them by binary search instead of a step
 * per distinct byte: a state with a few edges among many tokens of its prefix
 * (the first letters of a request's tool names, past `"name": "`) is walked in
 * a few steps. Depth 0 is ag_dead_first_bytes's.
 */
static int32_t ag_skip_dead_bytes(const ag_classify *w, const ag_vocab *v, int32_t i, uint32_t depth,
                                  int32_t end) {
  int32_t at = w->path[depth].at, u = at >= 0 ? w->rows.state[at] : ~at;
  const ag_state *st = &w->g->states[u];
  /* an accepting state puts end flags on every byte (ag_walk_rows.c): its tokens may be
   * uncertain, so none is skipped */
  if (depth == 0 || st->accepting || end >= v->n_sorted) return end;
  int32_t run_end = ag_vocab_prefix_end(v, i, depth);
  if (end >= run_end) return end;
  uint32_t len, c = 256;
  const uint32_t first = ag_vocab_sorted_token(v, end, &len)[depth]; /* len > depth */
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) { /* edges in byte order */
    const ag_byte_edge *be = &w->g->byte_edges[e];
    if (be->hi >= first) {
      c = be->lo > first ? be->lo : first;
      break;
    }
  }
  if (c == first) return end;
  if (c == 256) return run_end;
  return ag_first_byte_from(v, end + 1, run_end, depth, c);
}

/*
 * Where a run of tokens the parser rejected may extend to: token i failed at
 * byte `at` > 0 of the parser's walk (ag_earley_resolve), and the tokens after
 * its run that share its first `at` bytes share the parser's sets too. Those
 * whose byte `at` no item of the last set can scan fail there the same way, so
 * the walk jumps over them by binary search instead of a parser resolution per
 * distinct byte: after `"arguments":` a space leads into the arguments' rule,
 * which takes `{` alone, and each of the 140-odd other bytes that follow a
 * space in Llama-3.2's tokens went to the parser, most of the state's first
 * visit, met once per tool called.
 */
static int32_t ag_skip_parser_dead(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t at,
                                   int32_t end) {
  if (at == 0 || end >= v->n_sorted) return end;
  int32_t run_end = ag_vocab_prefix_end(v, i, at);
  if (end >= run_end) return end;
  uint32_t next[8], len;
  ag_parser_next_bytes(&w->parser, next);
  const uint32_t first = ag_vocab_sorted_token(v, end, &len)[at]; /* len > at */
  uint32_t c = first;
  while (c < 256 && !ag_bit(next, (int32_t)c)) c++;
  if (c == first) return end;
  if (c == 256) return run_end;
  return ag_first_byte_from(v, end + 1, run_end, at, c);
}

/* Classifies sorted token i, which failed at byte `depth`, and (unless `single`)
 * every later token sharing its first depth+1 bytes (they fail there too, the
 * same way), or more when rejected (ag_skip_dead_bytes); returns the next
 * position. With `own` (the verdict is the state's own walk), a covered walk
 * stops at a token the cover leaves open: that one goes to the parser. */
static int32_t ag_classify_failed(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t depth,
                                  bool uncertain, bool own, bool single) {
  int32_t end = single ? i + 1 : ag_vocab_prefix_end(v, i, depth + 1);
  if (own && !uncertain && !single && w->skip_dead) end = ag_skip_dead_bytes(w, v, i, depth, end);
  if (!own && !single) end = ag_skip_parser_dead(w, v, i, depth, end);
  if (own && w->covered) end = ag_next_bit(w->kunc, i + 1, end);
  for (int32_t j = i; uncertain && j < end; j++)
    if (!ag_vec_push(&w->uncertain, j)) w->oom = true;
  return end;
}

/* Steps the automaton by byte c after d bytes; false when it has no edge. The
 * rule could also end before c, which matters only when c may follow it. */
static bool ag_walk_scan(ag_classify *w, uint32_t d, uint8_t c) {
  uint32_t cell = ag_walk_rows_step(&w->rows, w->path[d].at, c);
  if (cell & AG_CELL_NONE) {
    w->fail_end = cell & AG_CELL_CAN_END;
    w->fail_ends = cell & AG_CELL_ENDS;
    return false;
  }
  w->path[d + 1].at = ag_walk_rows_target(cell);
  w->path[d + 1].reach = w->path[d].reach | (cell & (AG_CELL_CAN_END | AG_CELL_ENDS | AG_CELL_EXITED));
  return true;
}

/* Past the walk's deadline, or the job's stop set (a background worker's grammar freed). */
static ag_status ag_walk_check(const ag_classify *w, ag_error *err) {
  if (w->stop && atomic_load_explicit(w->stop, memory_order_relaxed))
    return ag_fail(err, AG_ERR_STATE, -1, "the compiled grammar was freed");
  return ag_check_deadline(w->deadline, err);
}

/* HYBRID: starts the Earley parser on the item, the first time it is needed. */
static ag_status ag_parser_ready(ag_classify *w, ag_error *err) {
  if (w->parser_ready) return AG_OK;
  ag_status st = ag_parser_init_item(&w->parser, w->g, w->state, err);
  if (st) return st;
  w->parser_ready = true;
  ag_parser_set_deadline(&w->parser, w->deadline); /* one token's scan may be slow too */
  w->parser_base = ag_parser_num_sets(&w->parser);
  w->ecan_end[0] = ag_parser_bottom_can_end(&w->parser);
  w->pdepth = 0;
  ag_parser_next_bytes(&w->parser, w->first);
  return AG_OK;
}

/* HYBRID: runs a token through the Earley parser from the item, reusing the
 * prefix it shares with the last token resolved. *depth is where it failed, or
 * len when the whole token was consumed. */
static ag_status ag_earley_resolve(ag_classify *w, const uint8_t *tok, uint32_t len,
                                   uint32_t *depth, ag_error *err) {
  ag_status st = ag_parser_ready(w, err);
  if (st) return st;
  if (len > 0 && !ag_bit(w->first, tok[0])) { /* known without scanning the whole set */
    *depth = 0;
    return AG_OK;
  }
  uint32_t d = w->pshared < w->pdepth ? w->pshared : w->pdepth;
  ag_parser_truncate(&w->parser, w->parser_base + d);
  for (bool ok = true; d < len; d++) {
    st = ag_parser_scan(&w->parser, tok[d], &ok, err);
    if (st) return st;
    if (!ok) break;
    w->ecan_end[d + 1] = w->ecan_end[d] || ag_parser_bottom_can_end(&w->parser);
  }
  w->pdepth = *depth = d;
  w->pshared = UINT32_MAX;
  return AG_OK;
}

/* Fills w->kunc from the classes of the item's predicted scannable states, when
 * all are computed already (the matcher classifies an Earley set's later items,
 * the predicted ones, first). Otherwise leaves w->covered false. */
static ag_status ag_cover_by_predicted(ag_classify *w, ag_mask_cache *c, const ag_vocab *v,
                                       ag_error *err) {
  ag_status st = ag_parser_ready(w, err);
  if (st) return st;
  const ag_parser *p = &w->parser;
  size_t pos_words = ((size_t)v->n_sorted + 31) / 32;
  uint32_t *kunc = calloc(pos_words + 1, sizeof *kunc);
  if (!kunc) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  bool covered = true;
  for (uint32_t it = p->set_start.data[p->set_start.len - 1]; it < p->items.len && covered; it++) {
    int32_t s = p->items.data[it].state;
    const ag_state *st_s = &w->g->states[s];
    if (s == w->state || st_s->byte_begin == st_s->byte_end) continue;
    const ag_state_masks *e = ag_mask_cache_peek(c, s);
    if (!e) {
      covered = false;
    } else if (e->uncertain_bits) {
      for (size_t k = 0; k < pos_words; k++) kunc[k] |= e->uncertain_bits[k];
    } else {
      for (int32_t k = 0; k < e->n_uncertain; k++) ag_bit_set(kunc, e->uncertain[k]);
    }
  }
  if (covered) {
    w->kunc = kunc;
    w->covered = true;
  } else {
    free(kunc);
  }
  return AG_OK;
}

/* Classifies sorted token i, whose first *depth bytes the walk has in place
 * (the prefix it shares with the token walked last); returns the next position
 * to classify: i + 1, or past the run of tokens decided with i (with `single`,
 * always i + 1: the caller is classifying a scattered few). */
ag_status ag_classify_token(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t *depth,
                                   bool single, int32_t *next, ag_error *err) {
  uint32_t len;
  const uint8_t *tok = ag_vocab_sorted_token(v, i, &len);
  bool ok = true;
  while (*depth < len && (ok = ag_walk_scan(w, *depth, tok[*depth]))) (*depth)++;
  if (ok) {
    if (!ag_mark_accepted(w, v, i)) w->oom = true;
    *next = i + 1;
  } else if ((w->path[*depth].reach & AG_CELL_EXITED) ||
             (w->own_exit && (!w->covered || ag_bit(w->kunc, i)))) {
    uint32_t at;
    ag_status st = ag_earley_resolve(w, tok, len, &at, err);
    if (st) return st;
    if (at == len) {
      if (!ag_mark_accepted(w, v, i)) w->oom = true;
      *next = i + 1;
    } else {
      *next = ag_classify_failed(w, v, i, at, w->ecan_end[at], false, single);
    }
  } else {
    uint32_t reach = w->path[*depth].reach;
    bool can_end = (reach & AG_CELL_CAN_END) || w->fail_end;
    *next = ag_classify_failed(w, v, i, *depth, can_end, true, single);
    if (w->record_any && !can_end && ((reach & AG_CELL_ENDS) || w->fail_ends)) {
      if (!ag_vec_push(&w->any_extra, i) || !ag_vec_push(&w->any_extra, *next)) w->oom = true;
      w->n_any_extra += (size_t)(*next - i);
    }
  }
  return AG_OK;
}

/* The bytes no token may start with in the walk's state: no edge, and the rule
 * cannot end before them (else the verdict is uncertain, not a rejection).
 * Their tokens are rejected a whole first byte at a time, without a call per
 * run: most of a first visit to a state with a few edges (a literal's next
 * byte, say) went to the 200-odd first bytes it rejects. Where the state's own
 * rule edges may send a failed token to the parser, only when the cover by
 * predicted states is known, and then not the first bytes of the tokens it
 * leaves open (those go to the parser); without the cover, none. The cells are
 * peeked, not stepped: no row is built for a target. */
void ag_dead_first_bytes(ag_classify *w, const ag_vocab *v, uint32_t dead[8]) {
  memset(dead, 0, 8 * sizeof *dead);
  if (w->own_exit && !w->covered) return;
  uint32_t ends = AG_CELL_CAN_END | (w->record_any ? AG_CELL_ENDS : 0);
  for (int c = 0; c < 256; c++) {
    uint32_t cell = ag_walk_rows_peek(&w->rows, w->path[0].at, (uint8_t)c);
    if (!(cell & AG_CELL_NONE) || (cell & ends)) continue;
    int32_t begin = v->first_byte_pos[c], end = v->first_byte_pos[c + 1];
    if (w->own_exit && begin < end && ag_next_bit(w->kunc, begin, end) < end) continue;
    dead[c >> 5] |= 1u << (c & 31);
  }
}

/* The next sorted position from i not in `safe` (NULL: i itself), or n. */
static int32_t ag_next_unsafe(const uint32_t *safe, int32_t i, int32_t n) {
  while (safe && i < n) {
    uint32_t word = ~safe[i >> 5] >> (i & 31);
    if (word) return i + __builtin_ctz(word) < n ? i + __builtin_ctz(word) : n;
    i = (i | 31) + 1;
  }
  return i < n ? i : n;
}

/* Where a walk of tokens one after another is: the last token walked, and how
 * many of its bytes the path still holds. */
typedef struct ag_walk_cursor {
  int32_t last;   /* -1: none */
  uint32_t depth;
} ag_walk_cursor;

/* Classifies sorted token i, walked after cur's token, and i's first `floor`
 * bytes in the path too: the walk reuses what the two tokens share, and the
 * parser's prefix (pshared) is the least shared since its last token. Then i is
 * the cursor's token. */
static ag_status ag_classify_after(ag_classify *w, const ag_vocab *v, ag_walk_cursor *cur, int32_t i,
                                   uint32_t floor, int32_t *next, ag_error *err) {
  uint32_t shared = cur->last < 0 ? 0 : ag_vocab_common_prefix(v, cur->last, i);
  if (shared < cur->depth) cur->depth = shared;
  if (cur->depth < floor) cur->depth = floor;
  if (shared < w->pshared) w->pshared = shared;
  ag_status st = ag_classify_token(w, v, i, &cur->depth, false, next, err);
  if (!st) cur->last = i;
  return st;
}

/* Walks the sorted vocabulary once, tokens in `safe` (may be NULL) accepted
 * without a walk (ag_compute copied them into the entry). The walk keeps the
 * path of the last token walked; the next one reuses the prefix they share.
 * Past a run the walk decided, or skipped safe tokens, the two tokens are
 * compared directly rather than taking the least LCP between: a plain-token
 * state skips 95% of the vocabulary, and a run cut short at a token the cover
 * leaves open may end where lcp[i] is above what the two share. */
ag_status ag_classify_all(ag_classify *w, const ag_vocab *v, const uint32_t *safe,
                                 ag_error *err) {
  uint32_t dead[8];
  ag_walk_cursor cur = {-1, 0};
  w->pshared = UINT32_MAX;
  w->skip_dead = !w->record_any; /* a recorded run must be one failure's (ag_classify_token) */
  ag_dead_first_bytes(w, v, dead);
  int32_t resume = 0, checked = 0, b = 0;
  for (int32_t i = ag_next_unsafe(safe, 0, v->n_sorted); i < v->n_sorted && !w->oom;
       i = ag_next_unsafe(safe, resume, v->n_sorted)) {
    if (w->checks && i >= checked) { /* the clock and the stop, every 4096 tokens */
      ag_status st = ag_walk_check(w, err);
      if (st) return st;
      checked = i + 4096;
    }
    while (v->first_byte_pos[b + 1] <= i) b++; /* the first byte of token i */
    if (ag_bit(dead, (uint32_t)b)) { /* its tokens, and the next dead bytes', rejected at once */
      while (b < 255 && ag_bit(dead, (uint32_t)b + 1)) b++;
      resume = v->first_byte_pos[b + 1];
      continue;
    }
    ag_status st = ag_classify_after(w, v, &cur, i, 0, &resume, err);
    if (st) return st;
  }
  return w->oom ? ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask") : AG_OK;
}

/* ---- a trie's walk, by ranges ----------------------------------------------
 * A trie rule (a request's tool names, ag_trie.h) has one path per prefix and
 * no loop, so the tokens that take an edge from a state are one sorted range,
 * found by binary search within the range of the path before it. The walk
 * descends the trie and the sorted vocabulary together and never looks at a
 * token whose next byte the trie rejects outright, where the sorted walk looks
 * at each token that takes a first byte (docs/engine.md: the cost at the root
 * of a request's tool names). A token that may fail otherwise (past an end,
 * into a rule edge) is classified as the sorted walk does, one at a time.
 * Positions are classified in ascending order, as there. */
typedef struct ag_trie_walk {
  int32_t resume; /* the first position not classified yet */
  ag_walk_cursor cur; /* the last position classified one at a time */
} ag_trie_walk;

/* The first position in [lo, hi) whose byte d is c or above (hi past 255); the
 * tokens there share their first d bytes and are longer. */
static int32_t ag_trie_byte_from(const ag_vocab *v, int32_t lo, int32_t hi, uint32_t d, uint32_t c) {
  if (c > 255 || lo >= hi) return hi;
  if (d > 1) return ag_first_byte_from(v, lo, hi, d, c);
  uint32_t len;
  int32_t p = d == 0 ? v->first_byte_pos[c] /* the tables, not a search: the widest ranges */
                     : v->pair_pos[ag_vocab_sorted_token(v, lo, &len)[0] * 256 + c];
  return p < lo ? lo : p > hi ? hi : p;
}

/* Classifies positions [lo, hi) one at a time, as ag_classify_all does; they
 * share the d bytes the path holds. */
static ag_status ag_trie_each(ag_classify *w, const ag_vocab *v, ag_trie_walk *t, int32_t lo,
                              int32_t hi, uint32_t d, ag_error *err) {
  for (int32_t i = lo > t->resume ? lo : t->resume; i < hi && !w->oom; i = t->resume) {
    int32_t next;
    ag_status st = ag_classify_after(w, v, &t->cur, i, d, &next, err);
    if (st) return st;
    t->resume = next > i ? next : i + 1;
  }
  return AG_OK;
}

/* Classifies positions [lo, hi), the tokens that share the d bytes of the path
 * (path[d] is where they lead): one equal to them is taken whole; the others
 * by their next byte, down each edge's range, and those of the gaps between
 * edges rejected at once where nothing but an edge could take them. */
static ag_status ag_trie_node(ag_classify *w, const ag_vocab *v, ag_trie_walk *t, int32_t lo,
                              int32_t hi, uint32_t d, ag_error *err) {
  if (lo < t->resume) lo = t->resume;
  if (lo >= hi || w->oom) return AG_OK;
  uint32_t len;
  if (d > 0 && (ag_vocab_sorted_token(v, lo, &len), len == d)) { /* sorted first in its range */
    if (!ag_mark_accepted(w, v, lo)) w->oom = true;
    t->resume = ++lo;
  }
  int32_t at = w->path[d].at, u = at >= 0 ? w->rows.state[at] : ~at;
  const ag_state *s = &w->g->states[u];
  /* a failed token is rejected, as in ag_classify_token, unless the rule could
   * end (or for DISPATCH an exit was passed) or a rule edge was passed */
  bool dead = !(w->path[d].reach & (AG_CELL_EXITED | AG_CELL_CAN_END)) && !s->accepting;
  ag_status st = AG_OK;
  int32_t pos = lo;
  for (uint32_t e = s->byte_begin; e < s->byte_end && pos < hi && !st && !w->oom; e++) {
    const ag_byte_edge *be = &w->g->byte_edges[e];
    int32_t from = ag_trie_byte_from(v, pos, hi, d, be->lo);
    if (!dead) st = ag_trie_each(w, v, t, pos, from, d, err);
    for (pos = from; !st && pos < hi && !w->oom;) {
      uint32_t c = ag_vocab_sorted_token(v, pos, &len)[d];
      if (c > be->hi) break;
      int32_t end = ag_trie_byte_from(v, pos + 1, hi, d, c + 1);
      if (w->checks && d == 0) st = ag_walk_check(w, err);
      if (t->cur.depth > d) t->cur.depth = d; /* the path past d is about to change */
      if (!st && ag_walk_scan(w, d, (uint8_t)c)) st = ag_trie_node(w, v, t, pos, end, d + 1, err);
      else if (!st) st = ag_trie_each(w, v, t, pos, end, d, err); /* not taken after all */
      pos = end;
    }
  }
  if (!st && !dead) st = ag_trie_each(w, v, t, pos, hi, d, err);
  return st;
}

/* Classifies every token for a trie rule's state by ranges; the state has no
 * rule edge of its own (own_exit), no safe tokens, no "any follow" record. */
ag_status ag_classify_trie(ag_classify *w, const ag_vocab *v, ag_error *err) {
  ag_trie_walk t = {0, {-1, 0}};
  w->pshared = UINT32_MAX;
  w->skip_dead = true;
  ag_status st = ag_trie_node(w, v, &t, 0, v->n_sorted, 0, err);
  if (!st && w->oom) st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  return st;
}

/* Copies from's accepted tokens of at most `level` bytes into w's entry (all of
 * them with level UINT32_MAX), which has none yet, in from's form; false when
 * memory ran out. From bitsets, the longer ones are copied too: the caller
 * clears them. */
bool ag_copy_accepted(ag_classify *w, const ag_state_masks *from, const ag_vocab *v,
                             uint32_t level) {
  if (from->accepted) return ag_accepted_copy(w->entry, v, from->accepted, from->accepted_pos);
  for (int32_t k = 0; k < from->n_accepted_list; k++)
    if (ag_vocab_sorted_len(v, from->accepted_list[k]) <= level &&
        !ag_vec_push(&w->accepted, from->accepted_list[k]))
      return false;
  return true;
}

/* Whether list[0..n) is in ascending order. */
static bool ag_ascending(const int32_t *list, size_t n) {
  for (size_t k = 1; k < n; k++)
    if (list[k - 1] > list[k]) return false;
  return true;
}

/* Keeps the uncertain positions as a list or a bitset, whichever is smaller. A
 * list is ascending (sorted here if a walk left it otherwise): the matcher walks
 * it in order. */
static ag_status ag_store_uncertain(ag_state_masks *e, const ag_vocab *v, void *list_vec,
                                    ag_error *err) {
  AG_VEC(int32_t) *list = list_vec;
  size_t bit_words = ((size_t)v->n_sorted + 31) / 32;
  if (list->len <= bit_words) {
    if (!ag_ascending(list->data, list->len))
      qsort(list->data, list->len, sizeof *list->data, ag_cmp_int32);
    e->uncertain = list->data; /* ownership moves to the entry */
    e->n_uncertain = (int32_t)list->len;
    e->bytes = list->cap * sizeof(int32_t);
    return AG_OK;
  }
  e->uncertain_bits = calloc(bit_words, sizeof *e->uncertain_bits);
  if (!e->uncertain_bits) {
    ag_vec_free(list);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  }
  for (size_t k = 0; k < list->len; k++)
    ag_bit_set(e->uncertain_bits, list->data[k]);
  e->n_uncertain = (int32_t)list->len;
  e->bytes = bit_words * sizeof(uint32_t);
  ag_vec_free(list);
  return AG_OK;
}

/* Sets up the classification of `state`: the walk's arrays, an empty entry,
 * and (HYBRID, rule edges on the state) the cover by predicted states. Whatever
 * the status, ag_classify_end releases it. */
ag_status ag_classify_begin(ag_classify *w, const ag_masks_job *job, double deadline,
                            ag_error *err) {
  const ag_grammar *g = job->g;
  const ag_vocab *v = job->v;
  int32_t state = job->state;
  size_t depths = (size_t)v->max_token_len + 1;
  memset(w, 0, sizeof *w);
  w->g = g;
  w->mode = job->walk;
  w->follow = job->follow;
  w->state = state;
  w->deadline = deadline;
  w->stop = job->stop;
  w->checks = deadline > 0 || job->stop;
  w->entry = calloc(1, sizeof *w->entry);
  w->path = malloc(sizeof *w->path * depths);
  w->ecan_end = calloc(depths, sizeof *w->ecan_end);
  /* what a step into a state with rule edges means (see AG_WALK_*) */
  uint32_t exit_flags = w->mode == AG_WALK_DISPATCH ? AG_CELL_CAN_END
                        : w->mode == AG_WALK_HYBRID ? AG_CELL_EXITED
                                                    : 0;
  ag_walk_rows_init(&w->rows, g, job->follow, exit_flags);
  if (!w->entry || !w->ecan_end || !w->path)
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  /* reach is empty at 0: an end before byte d counts when d may follow */
  w->path[0] = (ag_walk_depth){ag_walk_rows_at(&w->rows, state), 0};
  const ag_state *s0 = &g->states[state];
  w->own_exit = w->mode == AG_WALK_HYBRID && s0->rule_begin != s0->rule_end; /* see AG_WALK_* */
  return w->own_exit ? ag_cover_by_predicted(w, job->cache, v, err) : AG_OK;
}

/* Moves the accepted list, ascending, into the entry when it has no bitsets
 * (a derivation appends its long tokens after the copied ones). */
static void ag_store_accepted(ag_classify *w) {
  ag_state_masks *e = w->entry;
  if (e->accepted || !w->accepted.len) return;
  if (!ag_ascending(w->accepted.data, w->accepted.len))
    qsort(w->accepted.data, w->accepted.len, sizeof *w->accepted.data, ag_cmp_int32);
  e->accepted_list = w->accepted.data; /* ownership moves to the entry */
  e->n_accepted_list = (int32_t)w->accepted.len;
  e->bytes += w->accepted.cap * sizeof *w->accepted.data;
  memset(&w->accepted, 0, sizeof w->accepted);
}

/* Releases the walk; after a successful one, stores its uncertain tokens and
 * hands the entry over in *out, else frees it and returns st. */
ag_status ag_classify_end(ag_classify *w, const ag_vocab *v, ag_status st,
                                 ag_state_masks **out, ag_error *err) {
  if (w->parser_ready) ag_parser_free(&w->parser);
  free(w->kunc);
  ag_walk_rows_free(&w->rows);
  free(w->path);
  free(w->ecan_end);
  ag_vec_free(&w->any_extra);
  if (!st) st = ag_store_uncertain(w->entry, v, &w->uncertain, err); /* it frees the list on failure */
  else ag_vec_free(&w->uncertain);
  if (!st) ag_store_accepted(w);
  ag_vec_free(&w->accepted);
  if (st) {
    ag_state_masks_destroy(w->entry); /* a walk's own: never shared yet */
    return st;
  }
  ag_state_masks *e = w->entry; /* a list's bytes are counted by ag_store_accepted */
  e->bytes += sizeof *e + (e->accepted ? (ag_mask_words(v) + ag_pos_words(v)) * sizeof(uint32_t) : 0);
  *out = e;
  return AG_OK;
}

/* After a walk with record_any: the state's classes had any byte been allowed
 * to follow its rule (the same accepted tokens; the uncertain ones and the
 * recorded runs), its uncertain tokens in the smaller form, as ag_store_uncertain. */
ag_status ag_any_entry(const ag_classify *w, const ag_vocab *v, ag_state_masks **out,
                              ag_error *err) {
  *out = NULL;
  size_t na = w->uncertain.len, total = na + w->n_any_extra, bit_words = ag_pos_words(v);
  const int32_t *runs = w->any_extra.data;
  ag_state_masks *e = calloc(1, sizeof *e);
  bool ok = e != NULL;
  if (ok && w->entry->accepted) { /* the same accepted tokens, in the walk's form */
    ok = ag_accepted_copy(e, v, w->entry->accepted, w->entry->accepted_pos);
  } else if (ok && w->accepted.len) {
    ok = (e->accepted_list = malloc(w->accepted.len * sizeof *e->accepted_list)) != NULL;
    if (ok) memcpy(e->accepted_list, w->accepted.data, w->accepted.len * sizeof *e->accepted_list);
    e->n_accepted_list = (int32_t)w->accepted.len; /* ascending: a walk's, not a derivation's */
  }
  if (ok && total <= bit_words) { /* a sorted list: the uncertain tokens and the runs, merged */
    ok = (e->uncertain = malloc((total ? total : 1) * sizeof *e->uncertain)) != NULL;
    for (size_t i = 0, r = 0, n = 0; ok && (i < na || r < w->any_extra.len);) {
      if (r == w->any_extra.len || (i < na && w->uncertain.data[i] < runs[r])) {
        e->uncertain[n++] = w->uncertain.data[i++];
      } else {
        for (int32_t j = runs[r]; j < runs[r + 1]; j++) e->uncertain[n++] = j;
        r += 2;
      }
    }
    if (ok) e->bytes = (total ? total : 1) * sizeof *e->uncertain;
  } else if (ok) { /* a bitset: each run set a word at a time where it can */
    ok = (e->uncertain_bits = calloc(bit_words, sizeof *e->uncertain_bits)) != NULL;
    for (size_t i = 0; ok && i < na; i++) ag_bit_set(e->uncertain_bits, w->uncertain.data[i]);
    for (size_t r = 0; ok && r < w->any_extra.len; r += 2) {
      int32_t j = runs[r], end = runs[r + 1];
      for (; j < end && (j & 31); j++) ag_bit_set(e->uncertain_bits, j);
      for (; j + 32 <= end; j += 32) e->uncertain_bits[j >> 5] = ~0u;
      for (; j < end; j++) ag_bit_set(e->uncertain_bits, j);
    }
    if (ok) e->bytes = bit_words * sizeof(uint32_t);
  }
  if (!ok) {
    ag_state_masks_destroy(e);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a token mask");
  }
  e->n_uncertain = (int32_t)total;
  e->bytes += sizeof *e + (e->accepted ? (ag_mask_words(v) + ag_pos_words(v)) * sizeof(uint32_t)
                                       : (size_t)e->n_accepted_list * sizeof(int32_t));
  *out = e;
  return AG_OK;
}


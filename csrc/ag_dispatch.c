/* ag_dispatch.c - the words of a TagDispatch node, their Aho–Corasick automaton,
 * and the tokens that are safe in its free text (see ag_dispatch.h). */
#include "ag_dispatch.h"

ag_status ag_dispatch_from_ir(const int32_t *node, ag_dispatch **out, ag_error *err) {
  *out = NULL;
  int32_t n = node[2];
  size_t total = 0;
  const int32_t *p = node + 3;
  for (int32_t k = 0; k < n; k++) {
    total += (size_t)p[1];
    p += 2 + p[1];
  }
  ag_dispatch *d = calloc(1, sizeof *d);
  if (!d) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory reading a dispatch node");
  d->flags = node[1];
  d->n_words = n;
  d->rules = malloc(sizeof *d->rules * (size_t)(n ? n : 1));
  d->offsets = malloc(sizeof *d->offsets * ((size_t)n + 1));
  d->bytes = malloc(total ? total : 1);
  if (!d->rules || !d->offsets || !d->bytes) {
    ag_dispatch_free(d);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory reading a dispatch node");
  }
  p = node + 3;
  d->offsets[0] = 0;
  for (int32_t k = 0; k < n; k++) {
    d->rules[k] = p[0];
    for (int32_t i = 0; i < p[1]; i++) d->bytes[d->offsets[k] + (uint32_t)i] = (uint8_t)p[2 + i];
    d->offsets[k + 1] = d->offsets[k] + (uint32_t)p[1];
    p += 2 + p[1];
  }
  *out = d;
  return AG_OK;
}

void ag_dispatch_free(ag_dispatch *d) {
  if (!d) return;
  free(d->rules);
  free(d->offsets);
  free(d->bytes);
  free(d);
}

void ag_ac_free(ag_ac *ac) {
  free(ac->delta);
  free(ac->out_begin);
  free(ac->out);
  memset(ac, 0, sizeof *ac);
}

/* The trie of the words in ac->delta (-1 where there is no child); end[k] is word k's node. */
static void ag_ac_trie(const ag_dispatch *d, ag_ac *ac, int32_t *end) {
  ac->n_states = 1;
  for (int32_t k = 0; k < d->n_words; k++) {
    int32_t s = 0;
    for (uint32_t i = d->offsets[k]; i < d->offsets[k + 1]; i++) {
      int32_t *next = &ac->delta[(size_t)s * 256 + d->bytes[i]];
      if (*next < 0) *next = ac->n_states++;
      s = *next;
    }
    end[k] = s;
  }
}

/* Fail links breadth first; a missing child becomes the fail state's move, so
 * delta ends up complete. Returns the states in breadth-first order in queue. */
static void ag_ac_links(ag_ac *ac, int32_t *fail, int32_t *queue) {
  int32_t head = 0, tail = 0;
  fail[0] = 0;
  queue[tail++] = 0;
  while (head < tail) {
    int32_t u = queue[head++];
    for (int c = 0; c < 256; c++) {
      int32_t *slot = &ac->delta[(size_t)u * 256 + c];
      int32_t via_fail = u ? ac->delta[(size_t)fail[u] * 256 + c] : 0;
      if (*slot < 0) {
        *slot = via_fail;
      } else {
        fail[*slot] = via_fail;
        queue[tail++] = *slot;
      }
    }
  }
}

/* out(s) = the words ending at s itself, then out(fail(s)): filled in
 * breadth-first order, so the fail state's list is already there. */
static ag_status ag_ac_outputs(const ag_dispatch *d, ag_ac *ac, const int32_t *end,
                               const int32_t *fail, const int32_t *queue, ag_error *err) {
  size_t n = (size_t)ac->n_states;
  uint32_t *own = calloc(n + 1, sizeof *own);
  ac->out_begin = calloc(n + 1, sizeof *ac->out_begin);
  if (!own || !ac->out_begin) {
    free(own);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a dispatch automaton");
  }
  for (int32_t k = 0; k < d->n_words; k++) own[end[k]]++;
  uint64_t total = 0;
  uint32_t *count = ac->out_begin; /* counts first, then turned into begins */
  for (size_t i = 0; i < n; i++) {
    int32_t s = queue[i];
    count[s + 1] = own[s] + (s ? count[fail[s] + 1] : 0);
    total += count[s + 1];
  }
  if (total > (uint64_t)1 << 26) {
    free(own);
    return ag_fail(err, AG_ERR_LIMIT, -1, "the dispatch words overlap too much (%llu matches)",
                   (unsigned long long)total);
  }
  for (size_t s = 0; s < n; s++) count[s + 1] += count[s];
  ac->out = malloc(sizeof *ac->out * (size_t)(total ? total : 1));
  if (!ac->out) {
    free(own);
    return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a dispatch automaton");
  }
  memset(own, 0, (n + 1) * sizeof *own); /* now: words placed so far per state */
  for (int32_t k = 0; k < d->n_words; k++) ac->out[ac->out_begin[end[k]] + own[end[k]]++] = k;
  for (size_t i = 1; i < n; i++) {
    int32_t s = queue[i];
    uint32_t at = ac->out_begin[s] + own[s];
    for (uint32_t j = ac->out_begin[fail[s]]; j < ac->out_begin[fail[s] + 1]; j++)
      ac->out[at++] = ac->out[j];
  }
  free(own);
  return AG_OK;
}

ag_status ag_ac_build(const ag_dispatch *d, ag_ac *ac, ag_error *err) {
  memset(ac, 0, sizeof *ac);
  size_t max_states = (size_t)d->offsets[d->n_words] + 1;
  ac->delta = malloc(sizeof *ac->delta * max_states * 256);
  int32_t *end = malloc(sizeof *end * (size_t)(d->n_words ? d->n_words : 1));
  int32_t *fail = malloc(sizeof *fail * max_states);
  int32_t *queue = malloc(sizeof *queue * max_states);
  ag_status st = AG_OK;
  if (!ac->delta || !end || !fail || !queue) {
    st = ag_fail(err, AG_ERR_NOMEM, -1, "out of memory building a dispatch automaton");
  } else {
    memset(ac->delta, 0xff, sizeof *ac->delta * max_states * 256); /* every entry -1 */
    ag_ac_trie(d, ac, end);
    ag_ac_links(ac, fail, queue);
    st = ag_ac_outputs(d, ac, end, fail, queue, err);
  }
  free(end);
  free(fail);
  free(queue);
  if (st) ag_ac_free(ac);
  return st;
}

/* Compares token bytes with s the way the vocabulary is sorted: bytes, then shorter first. */
static int ag_cmp_prefix(const uint8_t *t, uint32_t tl, const uint8_t *s, uint32_t sl) {
  uint32_t n = tl < sl ? tl : sl;
  int c = n ? memcmp(t, s, n) : 0;
  if (c) return c;
  return tl < sl ? -1 : (tl > sl);
}

/* Clears the safe bits of the sorted tokens that begin with s (a contiguous run). */
static void ag_clear_prefixed(const ag_vocab *v, const uint8_t *s, uint32_t sl, uint32_t *bits) {
  int32_t lo = 0, hi = v->n_sorted;
  while (lo < hi) { /* the first token >= s */
    int32_t mid = lo + (hi - lo) / 2;
    uint32_t tl;
    const uint8_t *t = ag_vocab_sorted_token(v, mid, &tl);
    if (ag_cmp_prefix(t, tl, s, sl) < 0) lo = mid + 1;
    else hi = mid;
  }
  for (int32_t i = lo; i < v->n_sorted; i++) {
    uint32_t tl;
    const uint8_t *t = ag_vocab_sorted_token(v, i, &tl);
    if (tl < sl || memcmp(t, s, sl) != 0) break;
    ag_bit_clear(bits, i);
  }
}

/* The words of d as a cache key: their count, each one's length, then the bytes. */
static bool ag_safe_key(const ag_dispatch *d, ag_vcache_key *key) {
  size_t bytes = d->offsets[d->n_words];
  key->n = 1 + (size_t)d->n_words + (bytes + 3) / 4;
  if (!(key->words = calloc(key->n, sizeof *key->words))) return false;
  key->words[0] = (uint32_t)d->n_words;
  for (int32_t k = 0; k < d->n_words; k++) key->words[1 + k] = d->offsets[k + 1] - d->offsets[k];
  if (bytes) memcpy(key->words + 1 + d->n_words, d->bytes, bytes);
  ag_vcache_key_seal(key);
  return true;
}

/* The safe tokens of dispatch ctx, by position then by id (ag_vcache_make). */
static ag_status ag_make_safe(const ag_vocab *v, const void *ctx, uint32_t *bits, ag_error *err) {
  ag_status st = ag_dispatch_safe_tokens(ctx, v, bits, err);
  if (st) return st;
  /* the same set by token id, after the positions: all sorted tokens but the few unsafe */
  uint32_t *ids = bits + ag_pos_words(v);
  memcpy(ids, v->sorted_by_id, ag_mask_words(v) * sizeof *ids);
  for (int32_t k = 0; (size_t)k * 32 < (size_t)v->n_sorted; k++)
    for (uint32_t word = ~bits[k]; word; word &= word - 1) {
      int32_t i = k * 32 + __builtin_ctz(word);
      if (i < v->n_sorted) ag_bit_clear(ids, v->sorted_ids[i]);
    }
  return AG_OK;
}

ag_status ag_vocab_safe_tokens(const ag_vocab *v, const ag_dispatch *d, const uint32_t **out,
                               uint32_t **owned, ag_error *err) {
  ag_vcache_key key;
  *owned = NULL;
  if (!ag_safe_key(d, &key)) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory finding safe tokens");
  ag_vcache_maker maker = {ag_safe_words(v), ag_make_safe, d};
  return ag_vcache_bits(v, AG_VCACHE_SAFE, &key, &maker, out, owned, err);
}

/* Whether some word occurs in t (the automaton run from its start over t). */
static bool ag_ac_finds_word(const ag_ac *ac, const uint8_t *t, uint32_t len) {
  int32_t s = 0;
  for (uint32_t k = 0; k < len; k++) {
    s = ac->delta[(size_t)s * 256 + t[k]];
    if (ag_ac_hit(ac, s)) return true;
  }
  return false;
}

/* Sets in bits (over sorted positions) the tokens that contain byte *ctx. One
 * memchr over the sorted tokens' bytes finds them, each hit skipping the rest
 * of its token. A memchr per token cost 128k calls on Llama-3.2, most of a
 * dispatch's first visit; a scan of the id-ordered bytes then needed a pass
 * over every sorted id to move the hits to positions (half of what was left). */
static ag_status ag_make_byte(const ag_vocab *v, const void *ctx, uint32_t *bits, ag_error *err) {
  (void)err;
  uint8_t b = *(const uint8_t *)ctx;
  const uint8_t *blob = v->sorted_blob, *end = blob + v->sorted_offsets[v->n_sorted];
  int32_t i = 0;
  for (const uint8_t *p = blob; p < end && (p = memchr(p, b, (size_t)(end - p)));) {
    uint32_t at = (uint32_t)(p - blob);
    int32_t lo = i, hi = v->n_sorted - 1; /* the last token starting at or before `at` */
    while (lo < hi) {
      int32_t mid = lo + (hi - lo + 1) / 2;
      if (v->sorted_offsets[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    i = lo;
    ag_bit_set(bits, i);
    p = blob + v->sorted_offsets[i + 1];
  }
  return AG_OK;
}

/*
 * The sorted positions of the tokens that contain byte b, from the vocabulary's
 * shared cache (AG_VCACHE_BYTE; one scan of every token on first use, as the
 * same few marker bytes start the words of every request). When the cache is
 * full the set is computed for the caller, who owns it: *owned is set to it.
 */
static ag_status ag_tokens_with_byte(const ag_vocab *v, uint8_t b, const uint32_t **out,
                                     uint32_t **owned, ag_error *err) {
  ag_vcache_key key = {calloc(1, sizeof(uint32_t)), 1, 0};
  *owned = NULL;
  if (!key.words) return ag_fail(err, AG_ERR_NOMEM, -1, "out of memory finding safe tokens");
  key.words[0] = b;
  ag_vcache_key_seal(&key);
  ag_vcache_maker maker = {ag_pos_words(v), ag_make_byte, &b};
  return ag_vcache_bits(v, AG_VCACHE_BYTE, &key, &maker, out, owned, err);
}

/* Clears in pos_bits the tokens that contain byte b and some word. */
static ag_status ag_clear_word_holders(const ag_ac *ac, const ag_vocab *v, uint8_t b,
                                       uint32_t *pos_bits, ag_error *err) {
  const uint32_t *with_b;
  uint32_t *owned;
  ag_status st = ag_tokens_with_byte(v, b, &with_b, &owned, err);
  if (st) return st;
  for (int32_t i = ag_next_bit(with_b, 0, v->n_sorted); i < v->n_sorted;
       i = ag_next_bit(with_b, i + 1, v->n_sorted)) {
    uint32_t len;
    const uint8_t *t = ag_vocab_sorted_token(v, i, &len);
    if (ag_ac_finds_word(ac, t, len)) ag_bit_clear(pos_bits, i);
  }
  free(owned);
  return AG_OK;
}

ag_status ag_dispatch_safe_tokens(const ag_dispatch *d, const ag_vocab *v, uint32_t *pos_bits,
                                  ag_error *err) {
  ag_ac ac;
  ag_status st = ag_ac_build(d, &ac, err);
  if (st) return st;
  /* Every token is safe but those that contain a word, and a token can contain
   * a word only if it contains the word's first byte: words start with a few
   * marker bytes ('<', '[', ...), so only the tokens holding one (a few thousand
   * of 128k) are run through the automaton. An empty word leaves none safe. */
  bool first[256] = {false}, empty_word = false;
  for (int32_t w = 0; w < d->n_words; w++) {
    if (d->offsets[w] == d->offsets[w + 1]) empty_word = true;
    else first[d->bytes[d->offsets[w]]] = true;
  }
  if (!empty_word) {
    size_t full = (size_t)v->n_sorted / 32;
    memset(pos_bits, 0xff, full * sizeof *pos_bits);
    for (int32_t i = (int32_t)full * 32; i < v->n_sorted; i++) ag_bit_set(pos_bits, i);
    for (int b = 0; b < 256 && !st; b++)
      if (first[b]) st = ag_clear_word_holders(&ac, v, (uint8_t)b, pos_bits, err);
  }
  /* A token that begins with a proper suffix of a word could finish that word
   * after the free text's partial match. */
  for (int32_t w = 0; w < d->n_words && !st; w++)
    for (uint32_t a = d->offsets[w] + 1; a < d->offsets[w + 1]; a++)
      ag_clear_prefixed(v, d->bytes + a, d->offsets[w + 1] - a, pos_bits);
  ag_ac_free(&ac);
  return st;
}

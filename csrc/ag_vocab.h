/*
 * ag_vocab.h - a vocabulary: its tokens, the sorted index a mask walk reads
 * (ag_vocab.c), and the counts of what is held for it. Internal; the public
 * handle is opaque (agentgrammar.h).
 */
#ifndef AG_VOCAB_H
#define AG_VOCAB_H

#include "ag_util.h"
#include "ag_vocab_cache.h"

#include <stdatomic.h>

#define AG_DEFAULT_SHARED_CACHE_BYTES ((size_t)64 << 20) /* a vocabulary's shared cache */

struct ag_vocab {
  atomic_int refs;
  /* NULL: this vocabulary owns its token tables (n_tokens to sorted_by_id below,
   * immutable once built); else the vocabulary that does, retained, whose
   * tables this one shares (ag_vocab_share_tables copies that block). */
  ag_vocab *tables_of;
  int32_t n_tokens;
  int32_t mask_size;
  uint8_t *blob;        /* all token bytes */
  uint32_t *offsets;    /* [n_tokens + 1] */
  uint8_t *kinds;       /* [n_tokens] */
  /* Normal, non-empty tokens sorted by their bytes, so a walk shares prefixes. */
  int32_t n_sorted;
  int32_t *sorted_ids;  /* [n_sorted] */
  /* The sorted tokens' bytes again, in sorted order, at sorted_offsets[i]
   * ([n_sorted + 1]): a mask walk reads tokens in that order, so its reads are
   * sequential, not scattered over the id-ordered blob (a first visit after
   * other work ran was mostly cache misses). */
  uint8_t *sorted_blob;
  uint32_t *sorted_offsets;
  /* [257] the first sorted position of each first byte (and n_sorted): a walk
   * skips a byte no token may start with without touching its tokens. */
  int32_t *first_byte_pos;
  /* [256 * 256] the first sorted position of the tokens of two bytes or more
   * that begin with each pair of bytes (where they would be, for a pair none
   * begins with): a walk finds a second byte's tokens without a search, and
   * their count tells a narrow state's walk from a broad one (ag_mask_cache.c). */
  int32_t *pair_pos;
  uint16_t *lcp;        /* [n_sorted] common prefix with the previous sorted token, capped */
  /* [n_sorted] the first later position whose lcp is smaller, or n_sorted: every
   * position between shares at least lcp[i] bytes with i - 1, so a run of tokens
   * with a common prefix is crossed in a few links instead of token by token. */
  int32_t *lcp_next;
  int32_t *stop_ids;    /* the tokens of kind STOP */
  int32_t n_stop;
  uint32_t max_token_len;
  /* Sorted positions by token length, longest first, and n_longer[L] (L in
   * 0 .. max_token_len): how many have more than L bytes, so by_len[0 ..
   * n_longer[L]) are exactly the tokens longer than L: the plain tokens that do
   * not fit a bound leave the safe set this way (ag_plain_tokens.h). */
  int32_t *by_len;
  int32_t *n_longer;
  /* The shallowest level past which at most an eighth of the vocabulary is
   * longer (where classes are worth deriving), and the sorted positions of
   * those longer tokens in sorted order: what a derivation walks again,
   * without sorting them at each one. */
  uint32_t long_level;
  int32_t *long_sorted; /* [n_longer[long_level]] */
  /* The plain tokens (ag_plain_tokens.h), in the layout of a dispatch's safe tokens. */
  uint32_t *plain;
  uint32_t *plain_skip; /* [pos words] ag_plain_tokens_index's `skip` */
  /* [n_sorted] the UTF-8 characters each sorted token begins (its bytes other
   * than 10xxxxxx, at most UINT16_MAX), and the plain tokens' sorted positions
   * by that count: plain_by_chars[plain_chars_first[k] .. plain_chars_first[k +
   * 1]) begin k characters (ag_copies.h: a repeat's copies near its max). */
  uint16_t *chars;
  int32_t *plain_by_chars;
  int32_t *plain_chars_first; /* [max_plain_chars + 2] */
  int32_t max_plain_chars;
  /* [2 * n_sorted] the ASCII bytes each sorted token holds, as a 128-bit set
   * (byte b: bit b % 64 of word 2i + b / 64), and [pos words] the tokens that
   * hold a byte from 0x80 up: the tokens made of a class are found from them
   * in one pass (ag_class_tokens.c). */
  uint64_t *ascii_sets;
  uint32_t *has_wide;
  /* The sorted tokens as a bitset by id (ag_mask_words): a safe set by id starts from it. */
  uint32_t *sorted_by_id; /* the last of the token tables */
  /* The caches: each vocabulary's own, shared tables or not. */
  /* [AG_VCACHE_BUCKETS], NULL until the first entry is added (ag_vcache_add):
   * a vocabulary whose cache stays empty never pays for its buckets. */
  _Atomic(ag_vcache_bucket *) cache; /* see ag_vcache_kind */
  /* Every entry of `cache` once, so freeing them reads no empty bucket. */
  _Atomic(struct ag_vcache_entry *) cache_entries;
  atomic_size_t shared_bytes; /* held by the entries of `cache` */
  atomic_size_t shared_limit; /* past it, ag_vcache_add refuses (ag_vocab_set_shared_cache_limit) */
  /* Held by the live grammars compiled for this vocabulary (automata and token-mask
   * caches) plus shared_bytes: what a Compiler bounds by evicting grammars. */
  atomic_size_t cache_bytes;
};

/* Counts n more bytes (or, with ag_vocab_uncount, fewer) held for this vocabulary. */
static inline void ag_vocab_count(const ag_vocab *v, size_t n) {
  atomic_fetch_add(&((ag_vocab *)v)->cache_bytes, n);
}
static inline void ag_vocab_uncount(const ag_vocab *v, size_t n) {
  atomic_fetch_sub(&((ag_vocab *)v)->cache_bytes, n);
}

void ag_vocab_retain(ag_vocab *v);

/*
 * The first sorted position after i whose token does not begin with the first
 * `len` bytes of token i (which has at least len bytes): the end of the run of
 * tokens a mask walk skips once byte len - 1 is rejected. The run is where lcp
 * stays >= len; each link of lcp_next lowers lcp, so this takes at most
 * lcp[i + 1] - len + 1 links (a capped lcp only ends a run early: re-scanning).
 */
static inline int32_t ag_vocab_prefix_end(const ag_vocab *v, int32_t i, uint32_t len) {
  int32_t j = i + 1;
  while (j < v->n_sorted && v->lcp[j] >= len) j = v->lcp_next[j];
  return j;
}

static inline const uint8_t *ag_vocab_token(const ag_vocab *v, int32_t id, uint32_t *len) {
  *len = v->offsets[id + 1] - v->offsets[id];
  return v->blob + v->offsets[id];
}

/* Words of the bitsets over a vocabulary, one spare word each: over token ids
 * (the mask), and over sorted positions. */
static inline size_t ag_mask_words(const ag_vocab *v) { return ((size_t)v->mask_size + 31) / 32 + 1; }
static inline size_t ag_pos_words(const ag_vocab *v) { return ((size_t)v->n_sorted + 31) / 32 + 1; }

/* The byte length of the token at sorted position i. */
static inline uint32_t ag_vocab_sorted_len(const ag_vocab *v, int32_t i) {
  return v->sorted_offsets[i + 1] - v->sorted_offsets[i];
}

/* How many sorted tokens of two bytes or more begin with bytes b, c. */
static inline int32_t ag_vocab_pair_count(const ag_vocab *v, int b, int c) {
  int32_t end = c < 255 ? v->pair_pos[b * 256 + c + 1] : v->first_byte_pos[b + 1];
  return end - v->pair_pos[b * 256 + c];
}

/* The bytes of the token at sorted position i. */
static inline const uint8_t *ag_vocab_sorted_token(const ag_vocab *v, int32_t i, uint32_t *len) {
  *len = v->sorted_offsets[i + 1] - v->sorted_offsets[i];
  return v->sorted_blob + v->sorted_offsets[i];
}

/* The bytes sorted tokens i < j have in common at their start (for neighbours,
 * lcp[j]: capped, which only costs re-scanning). */
static inline uint32_t ag_vocab_common_prefix(const ag_vocab *v, int32_t i, int32_t j) {
  if (j == i + 1) return v->lcp[j];
  uint32_t li, lj, n = 0;
  const uint8_t *a = ag_vocab_sorted_token(v, i, &li), *b = ag_vocab_sorted_token(v, j, &lj);
  while (n < li && n < lj && a[n] == b[n]) n++;
  return n;
}

#endif /* AG_VOCAB_H */

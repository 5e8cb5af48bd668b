/*
 * ag_internal.h - declarations shared between the engine's C files.
 * Not part of the public surface (that is agentgrammar.h alone).
 */
#ifndef AG_INTERNAL_H
#define AG_INTERNAL_H

#include "agentgrammar.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors ------------------------------------------------------------ */

/* Fills err (when not NULL) and returns status. */
ag_status ag_fail(ag_error *err, ag_status status, int32_t rule, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* ---- growable arrays ----------------------------------------------------
 * A vector is {T *data; size_t len, cap;}. ag_vec_reserve returns false on
 * allocation failure (or size overflow) and leaves the vector unchanged.
 */
bool ag_grow(void **data, size_t *cap, size_t need, size_t elem_size);

/* Three-way comparison of uint64_t values, for qsort. */
int ag_cmp_u64(const void *a, const void *b);
int ag_cmp_int32(const void *a, const void *b);

/* ---- bitsets over token ids or sorted positions, 32 per word ----------- */

static inline bool ag_bit(const uint32_t *bits, int32_t i) { return (bits[i >> 5] >> (i & 31)) & 1u; }
static inline void ag_bit_set(uint32_t *bits, int32_t i) { bits[i >> 5] |= 1u << (i & 31); }
static inline void ag_bit_clear(uint32_t *bits, int32_t i) { bits[i >> 5] &= ~(1u << (i & 31)); }
/* The first position in [i, n) whose bit is set, or n. */
static inline int32_t ag_next_bit(const uint32_t *bits, int32_t i, int32_t n) {
  while (i < n) {
    uint32_t word = bits[i >> 5] >> (i & 31);
    if (word) {
      i += __builtin_ctz(word);
      return i < n ? i : n;
    }
    i = (i | 31) + 1;
  }
  return n;
}

/* Sets bytes lo..hi of a 256-bit byte set (8 words), a word at a time. */
static inline void ag_byteset_add_range(uint32_t *s, unsigned lo, unsigned hi) {
  for (unsigned w = lo >> 5; w <= hi >> 5; w++) {
    unsigned a = w == lo >> 5 ? lo & 31 : 0, b = w == hi >> 5 ? hi & 31 : 31;
    uint32_t bits = b == 31 ? ~0u : (1u << (b + 1)) - 1;
    s[w] |= bits & ~((1u << a) - 1);
  }
}

/* Seconds on a wall clock, for time budgets. */
double ag_now(void);
/* AG_ERR_TIMEOUT when a deadline (0: none) has passed. */
ag_status ag_check_deadline(double deadline, ag_error *err);

#define AG_VEC(T) \
  struct {        \
    T *data;      \
    size_t len;   \
    size_t cap;   \
  }
#define ag_vec_reserve(v, n) \
  ((n) <= (v)->cap || ag_grow((void **)&(v)->data, &(v)->cap, (n), sizeof(*(v)->data)))
#define ag_vec_push(v, x) \
  (ag_vec_reserve((v), (v)->len + 1) ? ((v)->data[(v)->len++] = (x), true) : false)
#define ag_vec_free(v) (free((v)->data), (v)->data = NULL, (v)->len = (v)->cap = 0)

/* ---- thread pool (ag_pool.c) -------------------------------------------
 * Runs fn(ctx, i) for i in [0, n_tasks) on the pool's threads and the caller,
 * and returns when every task has finished. */
typedef void (*ag_pool_fn)(void *ctx, int32_t task);
void ag_pool_run(ag_pool *pool, ag_pool_fn fn, void *ctx, int32_t n_tasks);

/* ---- limits ------------------------------------------------------------ */

#define AG_MAX_STATES (1 << 24)   /* automaton states in one grammar */
#define AG_MAX_RULES (1 << 20)    /* rules in one grammar */
/* The largest {m,n} bound. Small repeats are unrolled into the rule's automaton
 * (ag_fsm.c bounds that); larger ones become counted rules whose items carry the
 * count, so the bound costs no states and any int32 bound is accepted. */
#define AG_MAX_REPEAT INT32_MAX
#define AG_MAX_SET_ITEMS (1 << 20) /* items in one Earley set (one step of the parser) */
#define AG_JUMP_FORWARD_WORK (1 << 22) /* Earley items scanned by one jump-forward */
#define AG_DEFAULT_SHARED_CACHE_BYTES ((size_t)64 << 20) /* a vocabulary's shared cache */

/* ---- grammar automata ---------------------------------------------------
 * Every rule is a deterministic automaton over bytes and rule references.
 * All rules' states live in one array with global ids; state_rule[s] says
 * which rule a state belongs to. A state's byte edges are sorted by lo and do
 * not overlap; its rule edges have distinct rules. Every state that an edge
 * points to can reach an accepting state, and no edge names a rule that derives
 * no finite string (such rules stay only as unreferenced start states; a root
 * like that is an error at load). So a non-empty Earley set is a viable prefix.
 */
typedef struct ag_byte_edge {
  uint8_t lo, hi;
  int32_t target;
} ag_byte_edge;

typedef struct ag_rule_edge {
  int32_t rule;
  int32_t target;
} ag_rule_edge;

typedef struct ag_state {
  uint32_t byte_begin, byte_end; /* range in grammar->byte_edges */
  uint32_t rule_begin, rule_end; /* range in grammar->rule_edges */
  bool accepting;
  bool counted; /* a state of a counted rule: see ag_repeat_bounds */
} ag_state;

/*
 * A counted rule is x{min,max} (max -1: unbounded) of a child rule C, made for a
 * repeat too large to unroll. Its automaton is C* or C+ (start state s0, then s1
 * after one C, looping on C), which is exact for productivity, nullability and
 * liveness; the bounds are enforced by the parser, whose items in a counted rule
 * carry how many C's they have matched (ag_earley.c). A child that derives the
 * empty string gets min 0 at load (empty copies fill any minimum), so the parser
 * never needs to count empty matches.
 */
typedef struct ag_repeat_bounds {
  int32_t min, max;
} ag_repeat_bounds;

struct ag_grammar {
  atomic_int refs;
  int32_t n_rules;
  /* Rules 0 .. n_ir_rules - 1 are the ones IR buffers number (a linked
   * grammar's: its parts' such rules, in order, then its own); the rest are
   * hidden rules the loader made (counted repeats and their children). */
  int32_t n_ir_rules;
  int32_t root;
  int32_t *rule_start;   /* [n_rules] start state of each rule */
  bool *rule_nullable;   /* [n_rules] the rule derives the empty string */
  ag_repeat_bounds *rule_repeat; /* [n_rules] bounds of the counted rules (see ag_state.counted) */
  /* [n_rules] built as a literal trie (ag_trie.h): a request's tool names. Its
   * states are not compared for depth equivalence (ag_depth_equiv.h): apart
   * from what minimization merged, hardly two agree for long, and the notes
   * cost most of each first visit of a large trie (its survey does not fit). */
  bool *rule_trie;
  /* [n_rules] has no automaton, only a bare start: an IR rule that every
   * reference inlines, which no edge names (ag_fsm.c, ag_rules_build). A grammar
   * that links this one may name its root and the rules its edges name, not these. */
  bool *rule_stub;
  int32_t n_states;
  ag_state *states;      /* [n_states] */
  int32_t *state_rule;   /* [n_states] */
  ag_byte_edge *byte_edges;
  uint32_t n_byte_edges;
  ag_rule_edge *rule_edges;
  uint32_t n_rule_edges;
  /* [n_rules] a rule whose whole body is a dispatch node keeps its words here,
   * for the mask cache's free-text fast path; NULL for other rules. The array
   * itself is NULL when no rule is a dispatch. */
  struct ag_dispatch **rule_dispatch;
  /* A linked grammar (ag_grammar_link) begins with copies of its parts' states,
   * in order and unchanged: part k's states start at part_state_begin[k], the
   * grammar's own follow. Its rules are the parts' IR-numbered rules (part k's
   * from part_rule_begin[k]), its own IR rules, then the hidden rules of the
   * parts (part k's from part_hidden_begin[k]) and its own, so IR buffers keep
   * their numbering. Masks of part states come from the part's compiled grammar. */
  int32_t n_parts;
  ag_grammar **parts;         /* [n_parts], retained */
  int32_t *part_rule_begin;   /* [n_parts + 1] */
  int32_t *part_hidden_begin; /* [n_parts + 1] */
  int32_t *part_state_begin;  /* [n_parts + 1] */
};

void ag_grammar_retain(ag_grammar *g);

/* FOLLOW sets (ag_follow.c): for each rule, the bytes that may come right after
 * it, 8 words per rule, an over-approximation (parts' rules and the root: any
 * byte). *out is the caller's to free. */
ag_status ag_grammar_follow(const ag_grammar *g, uint32_t **out, ag_error *err);

/* The state reached from s on byte c, or -1 (a state's byte edges are sorted and disjoint). */
static inline int32_t ag_state_step(const ag_grammar *g, int32_t s, uint8_t c) {
  uint32_t lo = g->states[s].byte_begin, hi = g->states[s].byte_end;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    const ag_byte_edge *e = &g->byte_edges[mid];
    if (c < e->lo) hi = mid;
    else if (c > e->hi) lo = mid + 1;
    else return e->target;
  }
  return -1;
}

/* ---- vocabulary -------------------------------------------------------- */

/* The vocabulary's shared caches (ag_vocab_cache.c): results that depend only
 * on the vocabulary and a key of words (a dispatch's words, the canonical form
 * of a byte automaton) are kept with the vocabulary, so every grammar compiled
 * for it (one Compiler) shares them. Thread-safe; values live as long as the
 * vocabulary. Buckets: one Compiler's shared classes grow with every tool and
 * schema it compiles, and a lookup follows one chain: with 256 buckets, every
 * thousand entries made each chain four longer for every first visit. */
#define AG_VCACHE_BUCKETS (1 << 16)
typedef enum ag_vcache_kind {
  AG_VCACHE_SAFE = 0,    /* a dispatch's safe tokens (ag_dispatch.h) */
  AG_VCACHE_CLASSES = 1, /* the token classes of a byte automaton (ag_mask_cache.c) */
  AG_VCACHE_BYTE = 2,    /* the tokens that contain one byte (ag_dispatch.c) */
  AG_VCACHE_CLASS_TOKENS = 3, /* the tokens made of a byte class (ag_class_tokens.h) */
  AG_VCACHE_KINDS = 4
} ag_vcache_kind;

typedef struct ag_vcache_key {
  uint32_t *words;
  size_t n;
  uint64_t hash; /* set by ag_vcache_key_seal */
} ag_vcache_key;

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
  /* The sorted tokens as a bitset by id (ag_mask_words): a safe set by id starts from it. */
  uint32_t *sorted_by_id; /* the last of the token tables */
  /* The caches: each vocabulary's own, shared tables or not. */
  _Atomic(struct ag_vcache_entry *) cache[AG_VCACHE_BUCKETS]; /* see ag_vcache_kind */
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

void ag_vcache_key_seal(ag_vcache_key *key);
void ag_vcache_key_free(ag_vcache_key *key);
/* The value of `kind` under key, or NULL. */
void *ag_vcache_find(const ag_vocab *v, ag_vcache_kind kind, const ag_vcache_key *key);
/* Adds value (holding `bytes`) under key, taking both (destroy frees the value
 * with the vocabulary), unless that would pass the vocabulary's shared-cache
 * byte limit: then it takes nothing and returns false. */
bool ag_vcache_add(const ag_vocab *v, ag_vcache_kind kind, ag_vcache_key *key, void *value,
                   size_t bytes, void (*destroy)(void *));
void ag_vcache_free(ag_vocab *v);

/* Fills bits (zeroed) with a set over the vocabulary; ctx is the maker's own. */
typedef ag_status (*ag_vcache_make)(const ag_vocab *v, const void *ctx, uint32_t *bits,
                                    ag_error *err);

/* The set of `kind` under key (which this frees), from the vocabulary's shared
 * cache, or made now (`words` words, by make) and added to it. When the cache
 * is full the set is the caller's to free: *owned is set to it (else NULL). */
ag_status ag_vcache_bits(const ag_vocab *v, ag_vcache_kind kind, ag_vcache_key *key, size_t words,
                         ag_vcache_make make, const void *ctx, const uint32_t **out,
                         uint32_t **owned, ag_error *err);

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

/* ---- compiled grammar -------------------------------------------------- */

struct ag_compiled {
  atomic_int refs;
  ag_grammar *grammar;
  ag_vocab *vocab;
  struct ag_mask_cache *cache; /* per-state token classes, filled on first use */
  ag_compiled **parts;         /* [grammar->n_parts] compiled parts, retained: their caches serve
                                * the part states, so every grammar linking a part shares them */
};

void ag_compiled_retain(ag_compiled *c);

#endif /* AG_INTERNAL_H */

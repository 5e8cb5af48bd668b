/*
 * agentgrammar.h - the whole public surface of the agentgrammar C engine.
 *
 * Handles are opaque. Every fallible function returns an ag_status and, on
 * failure, fills the caller's ag_error with a message; nothing aborts the
 * process on bad input. Every object created by an *_new / *_load function is
 * owned by the caller and released with the matching *_free. Objects that
 * other objects depend on (vocabularies, grammars, compiled grammars) are
 * reference counted, so freeing them early is safe: they live until their
 * last user is freed.
 *
 * Thread safety: vocabularies, grammars and compiled grammars are immutable
 * after creation and may be shared by threads. A matcher belongs to one
 * thread at a time: every ag_matcher_* call, and ag_batch_fill_masks for each
 * matcher it is given, mutates it (even masks and jump-forward scan into its
 * parser), so callers that share one serialize the calls (the Python Matcher
 * holds a lock around each, and BatchMatcher holds every matcher's).
 */
#ifndef AGENTGRAMMAR_H
#define AGENTGRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ag_status {
  AG_OK = 0,
  AG_ERR_INVALID = 1, /* malformed input: a grammar buffer, a token list, an argument */
  AG_ERR_NOMEM = 2,   /* an allocation failed */
  AG_ERR_STATE = 3,   /* the call is not allowed in the object's current state */
  AG_ERR_RANGE = 4,   /* an index or token id out of range */
  AG_ERR_LIMIT = 5,   /* a configured size limit was exceeded */
  AG_ERR_TIMEOUT = 6  /* a step ran past its time budget (ag_matcher_set_time_budget) */
} ag_status;

/* Filled on failure. `rule` names the grammar rule concerned, or -1. */
typedef struct ag_error {
  int status;
  int32_t rule;
  char message[512];
} ag_error;

/* ---- vocabulary ------------------------------------------------------- */

typedef struct ag_vocab ag_vocab;

/* Token kinds, one per token id. */
enum {
  AG_TOKEN_NORMAL = 0,  /* matched byte by byte against the grammar */
  AG_TOKEN_SPECIAL = 1, /* never allowed */
  AG_TOKEN_STOP = 2     /* allowed exactly when the grammar can end */
};

/*
 * Creates a vocabulary of `n_tokens` tokens. Token i has the bytes
 * blob[offsets[i] .. offsets[i+1]) and the kind kinds[i]. `mask_size` is the
 * number of token ids a mask covers (the model's vocabulary size); it must be
 * >= n_tokens, and ids in [n_tokens, mask_size) are always masked off.
 * The inputs are copied.
 */
ag_status ag_vocab_new(const uint8_t *blob, const uint32_t *offsets, const uint8_t *kinds,
                       int32_t n_tokens, int32_t mask_size, ag_vocab **out, ag_error *err);
/*
 * A vocabulary with the tokens and token tables of `vocab`, shared rather
 * than copied, and caches of its own: empty, with the default shared-cache
 * limit, counting only the grammars compiled for it. ag_vocab_new sorts and
 * indexes the whole vocabulary (tens of milliseconds for 128k tokens); this
 * costs an allocation, so each compiler can have its own caches over one set
 * of tables. The tables live until every vocabulary sharing them is freed.
 */
ag_status ag_vocab_share_tables(ag_vocab *vocab, ag_vocab **out, ag_error *err);
void ag_vocab_free(ag_vocab *vocab);
int32_t ag_vocab_num_tokens(const ag_vocab *vocab);
int32_t ag_vocab_mask_size(const ag_vocab *vocab);
/*
 * Bytes held for this vocabulary: by every live grammar compiled for it
 * (automata and token-mask caches, as ag_compiled_memory_bytes counts them
 * less the vocabulary itself) and by its shared cache. A compiler that bounds
 * its cache frees grammars until this is under its limit.
 */
size_t ag_vocab_cache_bytes(const ag_vocab *vocab);
/*
 * The shared cache: token classes of byte automata and dispatch safe-token
 * sets that every grammar compiled for the vocabulary reuses. Its entries live
 * as long as the vocabulary, so it is bounded in bytes (default 64 MiB); past
 * the bound, results are kept by each grammar instead.
 */
size_t ag_vocab_shared_cache_bytes(const ag_vocab *vocab);
void ag_vocab_set_shared_cache_limit(ag_vocab *vocab, size_t bytes);

/* ---- grammar ---------------------------------------------------------- */

typedef struct ag_grammar ag_grammar;

/*
 * Loads a grammar from the IR buffer built by agentgrammar/grammar/serialize.py
 * (format documented there) and builds one byte-level automaton per rule.
 * Every index and byte in the buffer is checked.
 */
ag_status ag_grammar_load(const int32_t *words, size_t n_words, ag_grammar **out, ag_error *err);
/*
 * Loads a grammar whose rules may reference the rules of already loaded
 * grammars (its "parts"), whose automata are then copied, not rebuilt. In the
 * buffer, rule references n_rules .. n_rules + P - 1 (P: the parts' rules
 * together) name part rules in order: part 0's rules first. Parts are retained.
 * Compile the result with ag_compiled_new_linked.
 */
ag_status ag_grammar_link(const int32_t *words, size_t n_words, ag_grammar *const *parts,
                          int32_t n_parts, ag_grammar **out, ag_error *err);
/*
 * Pieces of automata that loading may reuse across grammars instead of building
 * them again: today the rest of a JSON key after a character that continues
 * none of an object's names, the same in every object's "other key" trie. It
 * depends on no vocabulary, is thread-safe, and holds a bounded number of
 * pieces; one per process serves every load. A grammar loaded with it has the
 * same automata as without.
 */
typedef struct ag_build_cache ag_build_cache;
ag_status ag_build_cache_new(ag_build_cache **out, ag_error *err);
void ag_build_cache_free(ag_build_cache *cache);
/* ag_grammar_load and ag_grammar_link with a build cache (NULL: none). */
ag_status ag_grammar_load_cached(const int32_t *words, size_t n_words, ag_build_cache *cache,
                                 ag_grammar **out, ag_error *err);
ag_status ag_grammar_link_cached(const int32_t *words, size_t n_words, ag_grammar *const *parts,
                                 int32_t n_parts, ag_build_cache *cache, ag_grammar **out,
                                 ag_error *err);
void ag_grammar_free(ag_grammar *grammar);
int32_t ag_grammar_num_rules(const ag_grammar *grammar);
int32_t ag_grammar_num_states(const ag_grammar *grammar);
/* 1 when the grammar's own buffer (not its parts') holds byte 0xFF in a literal, a
 * word or a byte range: token markers and one-token items open with it, and no
 * UTF-8 text holds it, so a grammar without it writes neither. */
int32_t ag_grammar_holds_ff(const ag_grammar *grammar);

/*
 * What a grammar buffer's rules reach and derive, read from its words without
 * loading it (`n_external` as for ag_grammar_link: the rules its parts add).
 * Sets *flags to AG_IR_ALL_REACHABLE when every rule is reachable from the
 * root, and AG_IR_ROOT_FINISHES when the root surely derives some finite
 * string (unset where that is not certain: a DISPATCH or SWITCH on the way, a
 * fixed point that does not settle in a few dozen passes). AG_ERR_INVALID when
 * the buffer is malformed, as ag_grammar_load reports it.
 */
enum { AG_IR_ALL_REACHABLE = 1, AG_IR_ROOT_FINISHES = 2 };
ag_status ag_ir_survey(const int32_t *words, size_t n_words, int32_t n_external, int32_t *flags,
                       ag_error *err);

/* ---- compiled grammar ------------------------------------------------- */

typedef struct ag_compiled ag_compiled;

/* Binds a grammar to a vocabulary. Both are retained (reference counted). */
ag_status ag_compiled_new(ag_grammar *grammar, ag_vocab *vocab, ag_compiled **out, ag_error *err);
/*
 * Binds a linked grammar to a vocabulary. parts[k] must be grammar part k
 * compiled for the same vocabulary: its token-mask cache serves part k's states,
 * so grammars linking the same part share those masks.
 */
ag_status ag_compiled_new_linked(ag_grammar *grammar, ag_vocab *vocab, ag_compiled *const *parts,
                                 int32_t n_parts, ag_compiled **out, ag_error *err);
void ag_compiled_free(ag_compiled *compiled);
/*
 * Computes now the token classes of the state where each dispatch trigger's
 * choice of words branches (a request's tool names after `{"name": "`): every
 * tool call visits it, and a new request has a new trie of names, whose first
 * visit would otherwise fall on a generated token. Other states stay lazy.
 */
ag_status ag_compiled_prepare_triggers(ag_compiled *compiled, ag_error *err);
/* Approximate bytes held by the compiled grammar (automata, vocabulary index). */
size_t ag_compiled_memory_bytes(const ag_compiled *compiled);

/* How the token classes of the states visited so far were obtained, summed over
 * the grammar's own states and its linked parts': for tuning and benchmarks. */
typedef struct ag_cache_stats {
  int64_t walked;  /* a walk of the whole vocabulary */
  int64_t derived; /* copied from an equivalent state, only the longer tokens walked */
  int64_t shared;  /* found in the vocabulary's shared cache */
  int64_t plain;   /* of the walked, those that took the plain tokens without a walk */
  int64_t classed; /* of the walked, those that took their loop class's tokens without a walk */
} ag_cache_stats;
void ag_compiled_cache_stats(const ag_compiled *compiled, ag_cache_stats *out);

/* ---- matcher ---------------------------------------------------------- */

typedef struct ag_matcher ag_matcher;

/*
 * Creates a matcher at the start of the grammar. `stop_ids` (n_stop entries)
 * replaces the vocabulary's stop tokens when n_stop >= 0; pass n_stop = -1 to
 * use the vocabulary's. With terminate_without_stop != 0 the matcher counts
 * as terminated as soon as the grammar is complete.
 */
ag_status ag_matcher_new(ag_compiled *compiled, const int32_t *stop_ids, int32_t n_stop,
                         int terminate_without_stop, ag_matcher **out, ag_error *err);
void ag_matcher_free(ag_matcher *matcher);

/* Accepts one token. *accepted = 0 leaves the state unchanged. */
ag_status ag_matcher_accept_token(ag_matcher *m, int32_t token_id, int *accepted, ag_error *err);

/* Accepts raw bytes as one history step (undone by one rollback). */
ag_status ag_matcher_accept_bytes(ag_matcher *m, const uint8_t *bytes, size_t len, int *accepted,
                                  ag_error *err);

/*
 * Writes the allowed-token bitmask: bit (j % 32) of word (j / 32) is 1 when
 * token j is allowed. n_words must be >= ceil(mask_size / 32); words past the
 * mask are zeroed. *all_allowed is set to 1 when every token is allowed.
 */
ag_status ag_matcher_fill_mask(ag_matcher *m, uint32_t *mask, size_t n_words, int *all_allowed,
                               ag_error *err);

/* Undoes the last n accepted steps (tokens, byte strings, or a stop token). */
ag_status ag_matcher_rollback(ag_matcher *m, int32_t n, ag_error *err);
/*
 * Bounds each mask fill (ag_matcher_fill_mask) to `seconds` of wall time; past
 * it the fill stops with AG_ERR_TIMEOUT and the matcher is unchanged, so one
 * pathological grammar cannot stall a whole batch. 0 (the default) means none.
 */
void ag_matcher_set_time_budget(ag_matcher *m, double seconds);
/*
 * Bounds each accept (ag_matcher_accept_token, ag_matcher_accept_bytes) to
 * `seconds` of wall time: a highly ambiguous grammar can make one byte cost a
 * pass over every earlier Earley set. Past it the call fails with
 * AG_ERR_TIMEOUT and the matcher is as if the call had not happened. 0 (the
 * default) means none.
 */
void ag_matcher_set_accept_time_budget(ag_matcher *m, double seconds);
/* How many steps can be rolled back now. */
int32_t ag_matcher_num_steps(const ag_matcher *m);

/* 1 when the input so far is a complete sentence of the grammar. */
int ag_matcher_can_end(const ag_matcher *m);
/* 1 when a stop token was accepted (or, with terminate_without_stop, the grammar is complete). */
int ag_matcher_is_terminated(const ag_matcher *m);

/*
 * Writes the longest byte string that every continuation must start with
 * (stops where the grammar could end or branch). Sets *len to its length,
 * truncated to cap.
 */
ag_status ag_matcher_jump_forward(ag_matcher *m, uint8_t *buf, size_t cap, size_t *len,
                                  ag_error *err);

/* Returns to the start of the grammar. */
void ag_matcher_reset(ag_matcher *m);

/* ---- batches ---------------------------------------------------------- */

typedef struct ag_pool ag_pool;

/*
 * A pool of n_threads threads (the calling thread counts as one, so 1 starts
 * none) for filling a batch's masks in parallel. The threads sleep between
 * batches and stop in ag_pool_free. A pool runs one batch at a time; callers
 * in several threads take turns.
 */
ag_status ag_pool_new(int32_t n_threads, ag_pool **out, ag_error *err);
void ag_pool_free(ag_pool *pool);
int32_t ag_pool_num_threads(const ag_pool *pool);
/*
 * Runs the pool's worker threads at the lowest scheduling priority (SCHED_IDLE
 * on Linux; nothing elsewhere): for a pool that only classifies in the
 * background (ag_compiled_classify_background), whose work should take spare
 * CPU only, never time from the threads that fill masks or run the model.
 */
void ag_pool_set_idle_priority(ag_pool *pool);

/*
 * Fills n matchers' masks on the pool's threads, as ag_matcher_fill_mask does:
 * matcher i writes row rows[i] of `masks`, an array of n_rows rows of
 * row_words words each. results[i] is 1 when every token is allowed, 0 when
 * not, and -status when the matcher's fill failed (its row is then zeroed or
 * partly written). The matchers must be distinct, and so must the rows. A
 * failure of one matcher does not stop the others: the call returns the
 * status of the first failed one (lowest i) with its message in err.
 */
ag_status ag_batch_fill_masks(ag_pool *pool, ag_matcher *const *matchers, const int32_t *rows,
                              int32_t n, uint32_t *masks, size_t n_rows, size_t row_words,
                              int32_t *results, ag_error *err);

/* ---- background classification ------------------------------------ */

/*
 * Classifies, on a worker thread of `pool` (which needs n_threads >= 2), the
 * states a matcher is likely to reach: breadth-first from the start of each
 * linked part (a request's tools' arguments), then from the grammar's start, at
 * most max_states of them in at most max_seconds of classifying (either 0:
 * none), one state per slice between the pool's batches. Returns at once. Masks never wait for the worker: a state it has not
 * reached is classified by the mask that needs it, as without it, so masks are
 * the same either way. Once per compiled grammar (AG_ERR_STATE after). Freeing
 * the compiled grammar stops the work, a walk under way included; freeing the
 * pool drops what is queued.
 */
ag_status ag_compiled_classify_background(ag_compiled *compiled, ag_pool *pool, int32_t max_states,
                                          double max_seconds, ag_error *err);

/* ---- deferred building -------------------------------------------------- */

/*
 * Makes `first`, just compiled and with no matcher yet, stand for the grammar
 * of `words` (linked to `parts`, each compiled part with its grammar; 0 parts:
 * loaded alone), whose automata are built later. Matchers of `first` fill
 * their masks with it while they are at the start; their first accept,
 * rollback or jump-forward builds the whole grammar (once, whichever matcher
 * comes first; the others wait for it, and an error is every matcher's) and
 * moves them to its start, where they go on; a matcher made once it is built
 * starts on it. So `first` must have the whole's first mask and can-end for
 * every set of stop tokens: the caller compiles it from the whole's rules that
 * a first token can reach, the others replaced by nothing, checks that with
 * them replaced by any bytes instead the first mask and can-end are the same
 * (the whole's language lies between the two), and else compiles the whole.
 * With `pool` (may be NULL), a worker of the pool starts building the whole at
 * once (a first step then waits for the rest of its build, if any), and the
 * whole is classified in the background once built, as
 * ag_compiled_classify_background does. The words are checked and
 * copied, the parts retained; *deferred = 1. A grammar whose words hold byte
 * 0xFF (token markers, which compiling checks against the vocabulary) is not
 * deferred: *deferred = 0, and `first` is left as it was.
 */
ag_status ag_compiled_defer(ag_compiled *first, const int32_t *words, size_t n_words,
                            ag_grammar *const *part_grammars, ag_compiled *const *parts,
                            int32_t n_parts, ag_pool *pool, int32_t bg_states, double bg_seconds,
                            int *deferred, ag_error *err);

/* ---- applying masks --------------------------------------------------- */

/* Element types of a logits row. */
enum {
  AG_LOGITS_F32 = 0,  /* float */
  AG_LOGITS_F16 = 1,  /* IEEE half precision */
  AG_LOGITS_BF16 = 2, /* bfloat16 */
  AG_LOGITS_F64 = 3   /* double */
};

/*
 * Sets to -infinity every element i of the row `logits` (n_logits elements of
 * type `kind`, contiguous) whose token the mask does not allow: token i is
 * allowed when i < limit, i < 32 * n_words and bit i % 32 of mask[i / 32] is
 * set (the layout ag_matcher_fill_mask writes). Allowed elements are left as
 * they are.
 */
ag_status ag_apply_mask(void *logits, int kind, size_t n_logits, const uint32_t *mask,
                        size_t n_words, size_t limit, ag_error *err);

#ifdef __cplusplus
}
#endif

#endif /* AGENTGRAMMAR_H */

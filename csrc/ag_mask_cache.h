/*
 * ag_mask_cache.h - per-state token classes, computed the first time a state is seen.
 *
 * For an automaton state s, every token is classified by running it inside the
 * rule of s alone (ag_parser_init_item):
 *   accepted   the whole token is consumed inside the rule: allowed in any context;
 *   rejected   it fails inside the rule before the rule could end: never allowed;
 *   uncertain  it fails inside, but the rule could end first, so the answer
 *              depends on what encloses the rule: checked against the real parser.
 * In the free text of a dispatch rule, the tokens that cannot complete a
 * trigger, stop or exclude from any state (ag_dispatch_safe_tokens, computed
 * once per rule) are accepted without simulation; only the rest are walked.
 * A mask is then the union of the accepted sets of the scannable states in the
 * current Earley set, plus the uncertain tokens that the real parser accepts.
 */
#ifndef AG_MASK_CACHE_H
#define AG_MASK_CACHE_H

#include "ag_grammar.h"
#include "ag_vocab.h"

/* A state that accepts at most this many tokens keeps them as a list: most
 * states a first visit walks (a literal's next byte, a key's letter) accept a
 * handful, and two bitsets of a 128k vocabulary (32 KiB, cleared) cost more
 * than the walk's own work, in page faults and cache misses. */
#define AG_ACCEPTED_LIST_MAX 256

typedef struct ag_state_masks {
  /* The accepted tokens in one of two forms. Many: a bitset over token ids,
   * ceil(mask_size / 32) words, and the same set over sorted positions,
   * ceil(n_sorted / 32) words, so other states' uncertain sets can drop it word
   * by word. Few (accepted NULL): their sorted positions, ascending. */
  uint32_t *accepted;
  uint32_t *accepted_pos;
  int32_t *accepted_list;
  int32_t n_accepted_list;
  /* The uncertain tokens as positions in the vocabulary's sorted order, in the
   * smaller of two forms: an ascending list, or (when dense) a position bitset. */
  int32_t *uncertain;
  int32_t n_uncertain;
  uint32_t *uncertain_bits; /* ceil(n_sorted / 32) words, or NULL when the list is used */
  size_t bytes;        /* memory held by this entry */
  bool shared;         /* owned by the vocabulary's class cache, not by a grammar's */
} ag_state_masks;

/* Frees an entry (the owner's business: a grammar's cache, or the vocabulary's). */
void ag_state_masks_destroy(ag_state_masks *e);

typedef struct ag_mask_cache ag_mask_cache;

ag_status ag_mask_cache_new(const ag_grammar *g, ag_mask_cache **out, ag_error *err);
void ag_mask_cache_free(ag_mask_cache *cache);
/* The classes of `state`, computed now if no thread has yet (AG_ERR_TIMEOUT, and
 * nothing kept, past `deadline`; 0: none). Thread-safe. With lock_free (a
 * background worker, which may be descheduled anywhere), takes no lock that a
 * mask may wait on: no derivation from an equivalent state and no note for
 * later ones (ag_depth_equiv.h locks), a walk instead; the classes are the same.
 * A walk gives up (AG_ERR_STATE, nothing kept) once `stop` (NULL: none) is set. */
ag_status ag_mask_cache_get(ag_mask_cache *cache, const ag_grammar *g, const ag_vocab *v,
                            int32_t state, double deadline, bool lock_free, const atomic_bool *stop,
                            const ag_state_masks **out, ag_error *err);
/* The published classes of `state`, NULL when not computed yet or not held
 * here (a part's state). Thread-safe. */
const ag_state_masks *ag_mask_cache_peek(ag_mask_cache *cache, int32_t state);
/* The copies each token begins from `state` of a counted rule's byte automaton
 * (ag_copies.h), computed now if no thread has yet. Thread-safe. */
struct ag_copies;
ag_status ag_mask_cache_copies(ag_mask_cache *cache, const ag_grammar *g, const ag_vocab *v, int32_t state,
                               const struct ag_copies **out, ag_error *err);
size_t ag_mask_cache_bytes(const ag_mask_cache *cache);
/* Adds this cache's counts of states walked, derived and found shared to *out. */
void ag_mask_cache_add_stats(const ag_mask_cache *cache, ag_cache_stats *out);

#endif /* AG_MASK_CACHE_H */

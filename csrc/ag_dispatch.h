/*
 * ag_dispatch.h - TagDispatch: free text watched by an Aho–Corasick automaton.
 *
 * A dispatch node reads free text until one of its words occurs:
 *   a trigger  (rule >= 0): the text continues with that rule, then goes back to
 *              free text (LOOP) or ends the node;
 *   a stop     (AG_DISPATCH_STOP): the node ends right after the word;
 *   an exclude (AG_DISPATCH_EXCLUDE): the text is rejected.
 * With END_IN_TEXT the node may also end anywhere in free text. Only the first
 * occurrence counts: where a trigger or stop and an exclude end at the same
 * byte, the exclude wins and the text is rejected (as in xgrammar).
 *
 * The automaton is lowered into the rule's ordinary NFA (ag_fsm.c), so parsing
 * needs nothing new. What it adds is speed: a token that contains no word and
 * does not begin with a proper suffix of one passes through every free-text
 * state unchanged in meaning, so the mask cache accepts such tokens without
 * simulating them (ag_dispatch_safe_tokens).
 * Internal; not part of the public surface.
 */
#ifndef AG_DISPATCH_H
#define AG_DISPATCH_H

#include "ag_vocab.h"

#define AG_DISPATCH_LOOP 1
#define AG_DISPATCH_END_IN_TEXT 2
#define AG_DISPATCH_FLAGS (AG_DISPATCH_LOOP | AG_DISPATCH_END_IN_TEXT)
#define AG_DISPATCH_STOP (-1)
#define AG_DISPATCH_EXCLUDE (-2)
/* Bounds the words' total length: the automaton's transition table has 256
 * entries per byte of the words. */
#define AG_MAX_DISPATCH_BYTES (1 << 14)

/* A dispatch node's words, copied out of the IR. */
typedef struct ag_dispatch {
  int32_t flags;
  int32_t n_words;
  int32_t *rules;    /* [n_words] the rule a trigger opens, or STOP / EXCLUDE */
  uint32_t *offsets; /* [n_words + 1] word k is bytes[offsets[k] .. offsets[k + 1]) */
  uint8_t *bytes;
} ag_dispatch;

/* The Aho–Corasick automaton of a dispatch's words. State 0 is the start. */
typedef struct ag_ac {
  int32_t n_states;
  int32_t *delta;      /* [n_states * 256] the complete transition function */
  uint32_t *out_begin; /* [n_states + 1] into out */
  int32_t *out;        /* the words that end at each state, its own and its suffixes' */
} ag_ac;

/* Whether some word ends at state s. */
static inline bool ag_ac_hit(const ag_ac *ac, int32_t s) {
  return ac->out_begin[s] != ac->out_begin[s + 1];
}

/* Copies a DISPATCH node's payload (already checked by ag_ir_parse). */
ag_status ag_dispatch_from_ir(const int32_t *node, ag_dispatch **out, ag_error *err);
void ag_dispatch_free(ag_dispatch *d);

ag_status ag_ac_build(const ag_dispatch *d, ag_ac *ac, ag_error *err);
void ag_ac_free(ag_ac *ac);

/* Words of a safe set: the tokens as sorted positions, then the same tokens by id,
 * so a state's classes start as two copies (ag_mask_cache.c). */
static inline size_t ag_safe_words(const ag_vocab *v) { return ag_pos_words(v) + ag_mask_words(v); }

/*
 * The safe tokens of d's words (see below) from the vocabulary's shared cache
 * (AG_VCACHE_SAFE), computed and added on first use. When the cache is full (a
 * bound against unbounded growth), the set is computed for the caller, who then owns it:
 * *owned is set to it (NULL for a shared set, which lives as long as v).
 * Thread-safe.
 */
ag_status ag_vocab_safe_tokens(const ag_vocab *v, const ag_dispatch *d, const uint32_t **out,
                               uint32_t **owned, ag_error *err);

/*
 * Sets, in pos_bits (a bitset over the vocabulary's sorted positions, zeroed by
 * the caller), the tokens that are safe in free text: they contain no word and
 * no non-empty prefix of theirs is a proper suffix of a word. From any
 * free-text state such a token completes no word, so it is consumed whole.
 */
ag_status ag_dispatch_safe_tokens(const ag_dispatch *d, const ag_vocab *v, uint32_t *pos_bits,
                                  ag_error *err);

#endif /* AG_DISPATCH_H */

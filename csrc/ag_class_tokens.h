/*
 * ag_class_tokens.h - tokens made only of a state's loop class, accepted
 * wholesale by that state.
 *
 * The plain tokens (ag_plain_tokens.h) serve the states that take any string
 * character. Patterns and formats loop on narrower byte classes: an email's
 * local part on [A-Za-z0-9!#$%&'*+/=?^_`{|}~-], a hostname's label on
 * [A-Za-z0-9-], a slug on [a-z0-9_-]. Their first visits walked every token
 * that starts with a byte of the class: about 40,000 tokens of Llama-3.2, a
 * millisecond per state, for states each request of a schema meets anew (a
 * hostname counts its label's bytes, so every position is a state).
 *
 * A state's loop class C is a set of bytes such that every string over C of up
 * to d bytes is consumed from the state by byte edges alone; then every token
 * of at most d bytes, all in C, is accepted there, whatever follows the rule.
 * Two candidates are tried: the bytes on which the state loops to itself
 * (unbounded d), and a set narrowed from the state's bytes until the states
 * it reaches keep it, within a bound where they stop (a counted label's
 * positions). The tokens
 * of (C, d) are found with one pass over the tokens that start in C, the
 * prefix each shares with the last reused, and kept in the vocabulary's shared
 * cache: a schema's label positions share one set, and so do the grammars
 * compiled by one Compiler.
 */
#ifndef AG_CLASS_TOKENS_H
#define AG_CLASS_TOKENS_H

#include "ag_grammar.h"
#include "ag_vocab.h"

/* Bounds the states one closure may visit; past it, no bounded class. */
#define AG_CLASS_MAX_STATES 512

/* Fewest tokens starting in a class for its set to be used: below, the walk is
 * as cheap, and an entry keeps the smaller list form. */
#define AG_CLASS_MIN_TOKENS 256

/* The shallowest bound worth a set: below it, the few short tokens it takes
 * are as cheap to walk. */
#define AG_CLASS_MIN_DEPTH 3

/* The loop class of `state` in cls (a 256-bit set) and its depth, at most
 * max_len; 0 when the state has none worth a set (too few tokens of v start
 * in it), or it is a counted state (the parser bounds its loop). */
uint32_t ag_class_depth(const ag_grammar *g, const ag_vocab *v, int32_t state, uint32_t max_len,
                        uint32_t cls[8]);

/* The tokens of at most len bytes whose bytes all lie in cls (with plain_only,
 * the plain ones among them: ag_plain_loop_class), in the layout of a
 * dispatch's safe tokens (ag_dispatch.h): positions, then ids. *out is the
 * vocabulary's shared set, or, when the shared cache is full, *owned (the
 * caller frees it; NULL otherwise). */
ag_status ag_vocab_class_tokens(const ag_vocab *v, const uint32_t cls[8], uint32_t len,
                                bool plain_only, const uint32_t **out, uint32_t **owned,
                                ag_error *err);

#endif /* AG_CLASS_TOKENS_H */

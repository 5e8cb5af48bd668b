/*
 * ag_plain_tokens.h - tokens of plain string text, accepted wholesale by the
 * states that take any plain character.
 *
 * A plain token is a sequence of UTF-8 characters (no surrogates, no overlong
 * forms), none of them '"', '\\' or a control character (below 0x20), the last
 * one possibly cut short (byte-level BPE splits characters: 1,068 tokens of
 * Llama-3.2, a sixth of those that were walked): on Llama-3.2, 123,150 tokens
 * of 128k. A token cut short is a prefix of plain strings, so wherever those
 * are consumed, so is it: the automaton is left inside a character, as the
 * walk would have found it. A state whose own byte automaton takes
 * every plain character, for as many bytes as a token may have, consumes every
 * plain token: inside a JSON string value or key, in an unconstrained string
 * of a schema, and in the bodies of most patterns' wildcards. Such a state's
 * walk then visits only the tokens that are not plain (quotes, escapes, control
 * bytes, partial characters), as a dispatch state's walk skips its safe tokens.
 * This is the job llguidance's "slicer" does for its lexer; here the test is a
 * simulation of the plain-character automaton by the state's, per state.
 * Within a token's length of a bound ("maxLength"), a state consumes every
 * plain string of up to the room left: the plain tokens that short are taken
 * the same way, and only the longer ones are walked.
 */
#ifndef AG_PLAIN_TOKENS_H
#define AG_PLAIN_TOKENS_H

#include "ag_grammar.h"
#include "ag_vocab.h"

/* Bounds the state pairs one simulation may visit; past it, the state is
 * classified by a walk of the whole vocabulary, as before. */
#define AG_PLAIN_MAX_PAIRS 4096

/* In one pass over v: in *plain the plain tokens, in the layout of a
 * dispatch's safe tokens (ag_dispatch.h): a bitset over sorted positions, then
 * one over token ids; in *skip, over sorted positions, the plain tokens and
 * those that are plain up to a control byte (ag_plain_depth's `refuses`): what
 * a walk skips in a state that consumes the first and refuses the second, the
 * first accepted (1,753 tokens of Llama-3.2 have plain text then a control
 * byte: a third of those a JSON string's walk visited after the plain ones).
 * Both are the caller's to free. */
ag_status ag_plain_tokens_index(const ag_vocab *v, uint32_t **plain, uint32_t **skip,
                                ag_error *err);

/* Fills v->chars and the plain tokens by characters (see ag_vocab.chars). */
ag_status ag_plain_chars_index(ag_vocab *v, ag_error *err);

/* The largest d <= depth such that every plain string of up to d bytes is
 * consumed from `state` by byte edges alone (no rule edge). Below `depth`, the
 * state is within d bytes of a bound: a position of a length-bounded string.
 * With refuses (not NULL), also whether a control byte (below 0x20) is refused
 * outright after every plain string the simulation met, the empty one
 * included: each state reached between characters has no edge on one, no rule
 * edge and cannot end its rule (inside a JSON string). A token that is plain up
 * to a control byte is then rejected, whatever follows the rule. */
uint32_t ag_plain_depth(const ag_grammar *g, int32_t state, uint32_t depth, bool *refuses);

/* A state that takes every plain character but a few ASCII ones (a pattern's
 * [^&] or [^@,] inside a JSON string) consumes the plain tokens made of the
 * others: true when, along every plain string whose ASCII characters lie in the
 * state's plain ASCII bytes (or, failing that, the bytes it loops on), the
 * byte edges consume it, as for ag_plain_depth. cls is then those ASCII bytes
 * and every byte from 0x80 up: ag_vocab_class_tokens with plain_only takes the
 * plain tokens made of it. False for a counted state, whose loop the parser
 * bounds. */
bool ag_plain_loop_class(const ag_grammar *g, int32_t state, uint32_t cls[8]);

/* The plain tokens of at most len bytes, in the layout of ag_plain_tokens_index:
 * those a state of plain depth len consumes. The caller frees it; NULL out of
 * memory. */
uint32_t *ag_plain_tokens_upto(const ag_vocab *v, uint32_t len);

/* Whether, along every plain string from `state` (of a counted rule's byte
 * automaton, ag_copies.h), the automaton is at an accepting state exactly
 * between characters: each plain character is then one copy of the child, and
 * a plain token begins one copy per character it begins. */
bool ag_plain_chars_are_copies(const ag_grammar *g, int32_t state);

/* Whether a byte that begins a plain character is in `follow` (NULL: any byte). */
bool ag_plain_may_follow(const uint32_t follow[8]);

#endif /* AG_PLAIN_TOKENS_H */

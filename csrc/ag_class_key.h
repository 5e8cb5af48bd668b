/*
 * ag_class_key.h - classes shared across grammars (ag_class_key.c).
 *
 * A state of a rule made of bytes alone is classified from its byte automaton
 * alone, so states with the same reachable automaton have the same classes in
 * any grammar. The vocabulary's cache (AG_VCACHE_CLASSES) keeps such classes
 * under a canonical form of the automaton, so each is computed once per
 * vocabulary (one Compiler), however many grammars (tools, schemas, requests)
 * contain it.
 */
#ifndef AG_CLASS_KEY_H
#define AG_CLASS_KEY_H

#include "ag_grammar.h"
#include "ag_vocab_cache.h"

struct ag_dispatch;

/* The canonical form of the byte automaton from `state` as a cache key: per
 * state in breadth-first order, accepting | has-rule-edges << 1, n_edges, (lo,
 * hi, target's order) per edge; then the count; then, for a state of dispatch
 * rule d (else NULL), d's words, which decide its safe tokens; then the
 * rule's FOLLOW set (8 words) unless `follow` is NULL. Rule edges are
 * not followed: the walk treats them as exits. With `bytes_only`, a reached
 * state with rule edges fails the key (see ag_mask_cache_get). False when it
 * is too large to share (or memory ran out), and then key holds nothing. */
bool ag_class_key_make(const ag_grammar *g, int32_t state, const struct ag_dispatch *d,
                       const uint32_t *follow, bool bytes_only, ag_vcache_key *key);
/* A copy of `key` (made with a FOLLOW set) for another FOLLOW set; false when
 * memory ran out. */
bool ag_class_key_refollow(const ag_vcache_key *key, const uint32_t *follow, ag_vcache_key *out);

#endif /* AG_CLASS_KEY_H */

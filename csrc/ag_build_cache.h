/*
 * ag_build_cache.h - pieces of automata kept across loads (ag_build_cache_new
 * in agentgrammar.h): the part of a key trie's automaton that its names do not
 * change, kept by the words that define it (ag_key_trie.c); and the memory a
 * build works in, lent from one load to the next (ag_fsm.c). Internal.
 */
#ifndef AG_BUILD_CACHE_H
#define AG_BUILD_CACHE_H

#include "ag_grammar.h"

/* The states a key trie reaches after a character that continues no name (the
 * rest of any key: its tail, escapes and wide characters), minimal. State s has
 * edges[edge_begin[s] .. edge_begin[s + 1]); a target below 0 is the rule's end
 * (the accepting state after the closing quote). `tail` is the state after a
 * raw character; other_row and any_row are the edges that a trie node's state
 * takes beside its own, from most nodes and from a name's end that no other
 * name continues (which has no edges of its own); row_bytes, the bytes the
 * other row takes. Immutable once kept. */
typedef struct ag_key_piece {
  int32_t n_states;
  int32_t tail;
  uint32_t *edge_begin; /* [n_states + 1] */
  ag_byte_edge *edges;
  ag_byte_edge *other_row, *any_row;
  uint32_t n_other, n_any;
  uint64_t row_bytes[4]; /* of other_row */
} ag_key_piece;

void ag_key_piece_free(ag_key_piece *piece);

/* The piece kept under key (n words), or NULL. Thread-safe. */
const ag_key_piece *ag_build_cache_find(ag_build_cache *cache, const int32_t *key, size_t n);

/* Keeps piece under key; takes it (freed at once when the cache is full or
 * already holds the key). Thread-safe. */
void ag_build_cache_put(ag_build_cache *cache, const int32_t *key, size_t n, ag_key_piece *piece);

struct ag_builder;

/* Gives b (zeroed) the scratch memory the cache kept, if any
 * (ag_builder_move_scratch); the cache keeps none until a build gives some
 * back. Thread-safe. */
void ag_build_cache_take_scratch(ag_build_cache *cache, struct ag_builder *b);

/* Keeps b's scratch memory for the next build, unless the cache keeps some
 * already or it is large (then b keeps it, to be freed). Thread-safe. */
void ag_build_cache_keep_scratch(ag_build_cache *cache, struct ag_builder *b);

#endif /* AG_BUILD_CACHE_H */

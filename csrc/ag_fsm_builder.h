/*
 * ag_fsm_builder.h - the automaton builder that ag_fsm_build (ag_fsm.c) runs
 * rule after rule, and the steps its parts share: Thompson construction
 * (ag_nfa.c), subset construction (ag_dfa.c), key tries (ag_key_trie.c) and
 * minimization (ag_minimize.c). Every step works on one ag_builder, which owns
 * all the work areas, so a grammar with thousands of small rules costs no
 * per-rule allocation once they have grown. Internal to those files.
 */
#ifndef AG_FSM_BUILDER_H
#define AG_FSM_BUILDER_H

#include "ag_fsm.h"
#include "ag_trie.h"

enum { AG_NFA_EPS = 0, AG_NFA_BYTES = 1, AG_NFA_RULE = 2 };

/* An NFA edge. kind says which of lo/hi (byte range) or rule applies. */
typedef struct ag_nfa_edge {
  int32_t from, to;
  int32_t rule;
  uint8_t kind, lo, hi;
} ag_nfa_edge;

/* "Connect state `from` to state `to` by the language of `node`". */
typedef struct ag_nfa_task {
  int32_t node, from, to;
} ag_nfa_task;

/* A hash-table slot for interning DFA states. A slot belongs to the rule
 * being built only when its generation matches, so moving on to the next
 * rule empties the table in O(1). */
typedef struct ag_dfa_slot {
  uint32_t gen;
  int32_t id;
} ag_dfa_slot;

/* A slot of the table of seed sets met while determinizing the current rule:
 * the seeds at seed_pool[at .. at + n) lead to local DFA state id. Like
 * ag_dfa_slot, a slot belongs to the rule being built only when its generation
 * matches. */
typedef struct ag_seed_slot {
  uint32_t gen, hash;
  int32_t id;
  uint32_t n;
  /* seed_pool stays below AG_DFA_MAX_WORK words (each seed set was spent), so
   * 32 bits hold it, and a slot is 16 bytes: four to a cache line */
  uint32_t at;
} ag_seed_slot;

/* A slot of the table of shared copies: the copy of IR node `node` that ends
 * at NFA state `to` starts at `start`. Like ag_dfa_slot, a slot belongs to the
 * rule being built only when its generation matches. */
typedef struct ag_share_slot {
  uint32_t gen;
  int32_t node, to, start;
} ag_share_slot;

/* Where a state's signature lies in ag_builder.sig during one minimization round. */
typedef struct ag_min_sig {
  size_t at;
  uint32_t len, hash;
} ag_min_sig;

/* A way out of a KEYTRIE's trie (ag_nfa_keytrie): `other` (a character that
 * continues no name, then the tail) from most trie nodes, `any` (any
 * character, then the tail) past a name that no other continues. Every trie
 * node's DFA state holds the way's closure beside the node, so the way's byte
 * edges are the same in all of them: swept once (ag_key_way_row), then copied. */
typedef struct ag_key_way {
  int32_t entry;          /* NFA entry of the way */
  int8_t ready;           /* 0: row not made yet; 1: made; -1: unusable (rule edges, or accepting) */
  uint32_t set_at, set_n; /* its closure, in key_sets */
  uint32_t row_at, row_n; /* its byte edges with their DFA targets, in key_rows */
} ag_key_way;

/* A rule the builder adds: for a counted repeat node, or for a node that is the
 * child of one (when the child is not already a rule reference). */
typedef struct ag_hidden {
  int32_t node;
  int32_t owner; /* the IR rule whose repeat made it, named in errors */
} ag_hidden;

typedef struct ag_builder {
  const ag_ir *ir;
  ag_build_cache *cache; /* pieces kept across loads, or NULL (ag_build_cache.h) */
  ag_error *err;
  int32_t rule;    /* the IR rule named in errors: the one being built, or a hidden rule's owner */
  int32_t rule_id; /* the rule being built: an IR rule, or ir->n_rules + its hidden index */
  uint32_t *inline_cost; /* [n_nodes] size of a bytes-only subtree, 0 for one with a reference */
  uint32_t *node_size;   /* [n_nodes] size of a subtree's automaton pieces, saturated */
  uint8_t *counted;      /* [n_nodes] 1 for a repeat node that becomes a counted rule */
  /* [n_nodes] 1 for a repeat small enough to unroll that is counted in its
   * child's own automaton instead (ag_fsm.c, ag_count_large_unrolls); NULL
   * until that pass has looked. */
  uint8_t *loop_counted;
  int32_t *node_rule;    /* [n_nodes] the hidden rule made for the node, or -1 */
  uint64_t inlined;      /* inlining work spent on the current rule */
  AG_VEC(ag_hidden) hidden;     /* hidden rule k has id ir->n_rules + k */
  AG_VEC(int32_t) rule_start;   /* [IR rules, then hidden ones] */
  bool *stub;                   /* [IR rules] no automaton: nothing names the rule (ag_rules_build) */
  AG_VEC(ag_repeat_bounds) bounds; /* [hidden rules] bounds of the counted ones */

  /* While a counted text's body is built (ag_counted_text.c): a reference in a
   * last position (to NFA state 1) to a rule that is not inlined enters that
   * rule's one copy, hub[rule] (-1: none yet); touched lists the rules set. */
  bool linear;
  int32_t *hub;             /* [IR rules] */
  AG_VEC(int32_t) touched;

  /* The current rule's NFA. State 0 is the start, state 1 the only accepting one. */
  int32_t n_nfa;
  uint64_t work;
  AG_VEC(ag_nfa_task) tasks;
  ag_share_slot *share; /* shared copies of the current rule (ag_nfa_shared) */
  size_t share_cap;     /* a power of two */
  size_t share_len;
  uint32_t share_gen;
  AG_VEC(ag_nfa_edge) edges;  /* as built */
  AG_VEC(ag_nfa_edge) csr;    /* the same edges grouped by source state */
  AG_VEC(uint32_t) csr_begin; /* [n_nfa + 1] */

  /* Subset construction. DFA state k (local to the rule) is the sorted,
   * epsilon-closed NFA-state set pool[set_begin[k] .. set_begin[k + 1]). */
  int32_t base; /* global id of the rule's first DFA state */
  AG_VEC(int32_t) pool;
  AG_VEC(size_t) set_begin;
  AG_VEC(uint32_t) set_hash;
  ag_dfa_slot *table;
  size_t table_cap; /* a power of two */
  uint32_t table_gen;
  /* The targets already computed, by their seeds (ag_dfa_target). */
  ag_seed_slot *seed_table;
  size_t seed_cap; /* a power of two */
  size_t seed_len;
  uint32_t seed_gen;
  AG_VEC(int32_t) seed_pool;
  uint64_t dfa_work;

  /* Scratch, indexed by NFA state or reused per DFA state. */
  AG_VEC(uint32_t) mark; /* closure visit generation */
  uint32_t mark_gen;
  AG_VEC(int32_t) count; /* open byte ranges per target during the sweep */
  AG_VEC(int32_t) stack;
  AG_VEC(int32_t) closure;
  AG_VEC(int32_t) radix;  /* sort buffer */
  AG_VEC(int32_t) active; /* targets of the current byte interval / rule */
  AG_VEC(int32_t) prev;   /* targets of the previous byte interval */
  AG_VEC(uint64_t) events; /* byte sweep: pos << 33 | is_end << 32 | target */
  AG_VEC(uint64_t) events_tmp;
  AG_VEC(uint64_t) moves;  /* rule moves: rule << 32 | target */

  /* Minimization of the rule just determinized, in local state ids. */
  AG_VEC(int32_t) rep;    /* union-find parent: a merged state points into its class */
  AG_VEC(uint32_t) watch; /* = min_gen: a class some signature of this round read before it was visited */
  uint32_t min_gen;
  AG_VEC(int32_t) sig;    /* signatures of this round's class representatives */
  AG_VEC(ag_min_sig) sigs; /* [k] where each representative's signature is */
  AG_VEC(int32_t) order;  /* classes in breadth-first order */
  AG_VEC(int32_t) post;   /* local states in depth-first postorder (ag_min_postorder) */
  AG_VEC(int32_t) rank;   /* local state -> its index in post */
  AG_VEC(uint64_t) dfs;   /* depth-first stack: state << 32 | its next edge */
  AG_VEC(int32_t) new_id; /* class -> new local id */
  AG_VEC(ag_state) tmp_states;
  AG_VEC(ag_byte_edge) tmp_bytes;
  AG_VEC(ag_rule_edge) tmp_rules;

  /* The KEYTRIE nodes of the current rule (ag_key_state): their ways out, the
   * NFA states of their trie nodes with the way each takes ((state << 32) | way),
   * and, per NFA state, that way or -1. */
  AG_VEC(ag_key_way) key_ways;
  AG_VEC(uint64_t) key_nodes;
  AG_VEC(int32_t) nfa_way; /* [n_nfa] when key_ways is not empty */
  AG_VEC(int32_t) key_sets;
  AG_VEC(ag_byte_edge) key_rows;
  AG_VEC(ag_byte_edge) key_own; /* scratch: a trie node's own byte edges */
  AG_VEC(uint8_t) key_merge;    /* [local DFA states] 0 for a trie node's (ag_key_state) */
  AG_VEC(int32_t) key_canon;    /* the words that name a key trie's kept piece (ag_key_piece_key) */
  /* The last piece found, with the ways (IR nodes) and raw ranges it was found
   * for: a grammar's tries share their ways' nodes, so the rest find it at once. */
  const struct ag_key_piece *key_found;
  const int32_t *key_found_trie;

  ag_trie trie; /* a rule that is a choice of literals (ag_trie_rule) */
  AG_VEC(int32_t) trie_rules; /* the ids of the rules built so */

  /* Output for the whole grammar, handed to the ag_grammar on success. */
  AG_VEC(ag_state) states;
  AG_VEC(int32_t) state_rule;
  AG_VEC(ag_byte_edge) byte_edges;
  AG_VEC(ag_rule_edge) rule_edges;
} ag_builder;

/* ---- shared by the steps ------------------------------------------------ */

/* AG_ERR_NOMEM, naming the rule being built (ag_fsm.c). */
ag_status ag_builder_nomem(ag_builder *b);
/* Frees everything b owns (NULL fields are skipped). */
void ag_builder_free(ag_builder *b);

/* A builder's scratch memory (its working vectors and hash tables, not its
 * output) moved to another, emptied: kept in the build cache between loads. */
void ag_builder_move_scratch(ag_builder *to, ag_builder *from);
/* The bytes of scratch memory b holds. */
size_t ag_builder_scratch_bytes(const ag_builder *b);

/* A hash of an int32 sequence, order-sensitive: interned seed sets (ag_dfa.c)
 * and minimization signatures (ag_minimize.c). Two elements per multiply: the
 * chain of multiplies is what a long signature waits on. */
static inline uint32_t ag_set_hash(const int32_t *set, size_t n) {
  const uint64_t k = 0xff51afd7ed558ccdull;
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 1 < n; i += 2) {
    h = (h ^ ((uint64_t)(uint32_t)set[i] << 32 | (uint32_t)set[i + 1])) * k;
    h ^= h >> 29;
  }
  if (i < n) {
    h = (h ^ (uint32_t)set[i]) * k;
    h ^= h >> 29;
  }
  return (uint32_t)((h * 0xc4ceb9fe1a85ec53ull) >> 32);
}

/* Whether two int32 sequences of n elements are equal: most are a few
 * elements long (a single seed, a short signature), where a call to memcmp
 * costs more than the compare. */
static inline bool ag_words_equal(const int32_t *a, const int32_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* Insertion sort by lo: a DFA state's own edges are few (ag_dfa.c, ag_key_trie.c). */
static inline void ag_sort_edges_by_lo(ag_byte_edge *v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    ag_byte_edge x = v[i];
    size_t j = i;
    for (; j > 0 && v[j - 1].lo > x.lo; j--) v[j] = v[j - 1];
    v[j] = x;
  }
}

/* ---- Thompson construction (ag_nfa.c) ----------------------------------- */

/* Sizes every IR node: its automaton pieces, its inline cost, and whether a
 * repeat is counted; allocates the builder's per-node arrays. */
ag_status ag_node_sizes(ag_builder *b);
/* Sizes every node again once ag_count_large_unrolls has marked repeats. */
void ag_node_sizes_again(ag_builder *b);
/* The automaton pieces of a repeat's child when it is bytes-only (a bytes-only
 * subtree, or a reference to a rule that is inlined), else 0. */
uint64_t ag_bytes_child_size(const ag_builder *b, int32_t child);
/* The size of rule r's body when a reference to it may be inlined (small and
 * bytes-only, not the rule being built), else 0. */
uint32_t ag_inline_cost(const ag_builder *b, int32_t r);
/* The rule label of the hidden rule for node, made on first use. */
ag_status ag_hidden_rule(ag_builder *b, int32_t node, int32_t *label);
/* Builds the current rule's NFA from IR node `body`, then groups its edges by
 * source state (ag_nfa_index). */
ag_status ag_nfa_build(ag_builder *b, int32_t body);
ag_status ag_nfa_index(ag_builder *b);
/* The NFA pieces a KEYTRIE's construction (ag_key_trie.c) builds from. */
ag_status ag_nfa_spend(ag_builder *b, uint64_t units);
ag_status ag_nfa_state(ag_builder *b, int32_t *out);
ag_status ag_nfa_edge_add(ag_builder *b, int32_t from, int32_t to, uint8_t kind, uint8_t lo,
                          uint8_t hi, int32_t rule);
ag_status ag_nfa_eps(ag_builder *b, int32_t from, int32_t to);
ag_status ag_nfa_entry(ag_builder *b, int32_t node, int32_t to, int32_t *out);
ag_status ag_nfa_star_entry(ag_builder *b, int32_t node, int32_t to, int32_t *out);

/* ---- counted text (ag_counted_text.c) ---------------------------------- */

/* Replaces the body automaton (states from body on, its byte edges from n_bytes
 * on) and the character's after it (from chr on) by the counted rule of their
 * pairs; raises bounds->rest_max to its states' largest rest. */
ag_status ag_counted_text_make(ag_builder *b, int32_t body, int32_t chr, size_t n_bytes,
                               ag_repeat_bounds *bounds);

/* ---- subset construction (ag_dfa.c) ------------------------------------- */

/* Determinizes the current NFA; the start state gets the global id b->base. */
ag_status ag_dfa_build(ag_builder *b);
/* Appends a byte edge to the state whose edges begin at `first`, merged with
 * the last one when adjacent with the same target. */
ag_status ag_emit_byte_edge(ag_builder *b, uint32_t first, int lo, int hi, int32_t target);
/* The steps a key trie's states (ag_key_trie.c) take from the general path. */
ag_status ag_dfa_spend(ag_builder *b, uint64_t units);
uint32_t ag_mark_next(ag_builder *b);
ag_status ag_dfa_closure(ag_builder *b, const int32_t *seeds, size_t n);
ag_status ag_dfa_target(ag_builder *b, const int32_t *seeds, size_t n, int32_t *target);
ag_status ag_collect_set(ag_builder *b, const int32_t *set, size_t n, bool *accepting);
ag_status ag_dfa_bytes(ag_builder *b, uint32_t first);

/* ---- key tries (ag_key_trie.c) ------------------------------------------ */

/* A node of a KEYTRIE's trie: its NFA state (made only for a node that stands
 * for itself), the bytes that continue a name from it, and whether a whole
 * name ends there; its children as a list (first child, next sibling, each
 * with the byte that leads to it, in descending byte order), and the node with
 * the same subtrie that stands for it (ag_key_merge). */
typedef struct ag_key_node {
  int32_t state;
  bool terminal;
  uint64_t next[2];
  int32_t kid, sibling, canon;
  uint8_t byte;
} ag_key_node;

/* The trie of KEYTRIE node p (*keys, *n_keys, freed by the caller), its
 * subtries merged (ag_key_merge), its construction spent from the rule's work. */
ag_status ag_key_trie_of(ag_builder *b, const int32_t *p, ag_key_node **keys, int32_t *n_keys);
/* The next of two edge lists sorted by lo, merged in byte order; NULL past both. */
const ag_byte_edge *ag_key_next(const ag_byte_edge *a, size_t n_a, size_t *i, const ag_byte_edge *b,
                                size_t n_b, size_t *j);

/* A KEYTRIE node's NFA, from `from` to `to`. */
ag_status ag_nfa_keytrie(ag_builder *b, const int32_t *p, int32_t from, int32_t to);
/* The byte edges of DFA state k when it is a trie node's; *done false leaves k
 * to the general path. */
ag_status ag_key_state(ag_builder *b, int32_t k, uint32_t first, bool *done);

/* ---- a key trie's kept piece (ag_key_piece.c) ---------------------------- */

/* Rule body `node` built from the cache's piece when it is a key trie (a
 * KEYTRIE, or a literal then one) whose ways the cache holds: *done. When it
 * holds none for them yet, *keep: the caller builds the rule the general way,
 * then ag_key_piece_keep takes the piece from the result for later loads. */
ag_status ag_key_rule_cached(ag_builder *b, int32_t node, bool *done, bool *keep);
ag_status ag_key_piece_keep(ag_builder *b, int32_t node);

/* ---- minimization (ag_minimize.c) --------------------------------------- */

/* Minimizes the rule just built (states base .. end of the arrays), in at most
 * max_rounds rounds, merging only states that `only` marks (NULL: all). */
ag_status ag_min_rule(ag_builder *b, int max_rounds, const uint8_t *only);

#endif /* AG_FSM_BUILDER_H */

/*
 * ag_fsm.c - one deterministic automaton per grammar rule.
 *
 * Each rule body is turned into an epsilon-NFA by Thompson construction,
 * determinized by subset construction, then shrunk by merging equivalent
 * states. The alphabet is bytes plus rule references: a rule edge means "a
 * complete match of that rule". The NFA and every work area live in one
 * builder that is reused from rule to rule, so a grammar with thousands of
 * small rules costs no per-rule allocation once the buffers have grown.
 *
 * The DFA states of all rules are appended to one set of global arrays
 * (handed to the grammar at the end). Ids are assigned in breadth-first
 * order with byte edges before rule edges, so the numbering depends only on
 * the grammar, never on NFA numbering or hash order.
 */
#include "ag_fsm.h"

#include "ag_dispatch.h"
#include "ag_trie.h"

/* Bounds the Thompson expansion of one rule. Node sharing in the IR makes the
 * expansion of a rule exponential in the worst case (a chain of CHOICE(x, x)
 * nodes), and such an expansion need not create states, so the state limit
 * alone would not stop it. Legitimate rules stay far below this. */
#define AG_NFA_MAX_WORK ((uint64_t)AG_MAX_STATES * 4)

/* Bounds the NFA-state sets stored for one rule's DFA states, in words, and
 * the work of determinizing it. Nested nullable repeats such as ("a"?){0,n}
 * make every DFA state hold O(n) NFA states, and alternatives such as
 * [^a]* "a" [^b]* "b" | [^b]* "b" [^c]* "c" | ... make exponentially many
 * states; these turn the blow-up in memory and time into a prompt error. The
 * work counts what the time goes into (ag_dfa_spend): each closure's seeds,
 * states (twice: found, then hashed and compared when interned) and scanned
 * edges, each DFA state's set and NFA edges, sweep events and open targets.
 * A unit is a few nanoseconds, so the bound is about half a second; the
 * largest MaskBench rule spends 12 million units. The set words are bounded at
 * 16 MiB: a structural tag of deeply nested optional repeats (found by the
 * fuzzer) filled 2^24 words in 2.4 s and fills 2^22 in about 1 s; no MaskBench
 * schema that compiled needs more. */
#define AG_DFA_MAX_SET_WORDS ((size_t)1 << 22)
#define AG_DFA_MAX_WORK ((uint64_t)1 << 28)

/* A reference to a small rule made of bytes alone (no rule reference, no
 * dispatch) is expanded in place instead of becoming a rule edge, so rules such
 * as a JSON string's character class end up as one byte automaton, which the
 * mask cache classifies without the Earley parser. AG_INLINE_MAX bounds the
 * size of an inlined body; AG_INLINE_BUDGET the construction work one rule may
 * spend on inlining (a counted repeat of an inlined rule would multiply it),
 * past which references stay rule edges. */
#define AG_INLINE_MAX 512
#define AG_INLINE_BUDGET 65536

/* Repeats are unrolled while small. An unrolled repeat of bytes becomes part of
 * a byte automaton: determinized, and each position gets its own token classes
 * (shared across grammars), so a token spanning copies is classified once and
 * for all; in a counted rule such a token runs past the end of the child, which
 * makes it uncertain, checked against the parser at every mask. So a repeat of
 * a bytes-only child is unrolled up to AG_UNROLL_MAX copies; a child with rule
 * edges gains nothing from copies (its tokens past the child's end are
 * uncertain either way), so past AG_UNROLL_MAX_REF copies it is counted. Copies
 * adding more than AG_UNROLL_BUDGET automaton pieces (ag_builder.node_size) are
 * counted too: a counted rule is one or two states whatever the bound. */
#define AG_UNROLL_MAX 256
#define AG_UNROLL_MAX_REF 16
#define AG_UNROLL_BUDGET 65536

/* A subtree of at least AG_SHARE_MIN automaton pieces (ag_builder.node_size)
 * that is expanded several times into the same end state is built once (see
 * ag_nfa_shared). */
#define AG_SHARE_MIN 4

/* Minimization rounds per rule. Usually two suffice (one merging, one
 * confirming); merging is optional, so a pathological rule just stops early. */
#define AG_MIN_MAX_ROUNDS 64

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
  size_t at;
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
  ag_error *err;
  int32_t rule;    /* the IR rule named in errors: the one being built, or a hidden rule's owner */
  int32_t rule_id; /* the rule being built: an IR rule, or ir->n_rules + its hidden index */
  uint32_t *inline_cost; /* [n_nodes] size of a bytes-only subtree, 0 for one with a reference */
  uint32_t *node_size;   /* [n_nodes] size of a subtree's automaton pieces, saturated */
  uint8_t *counted;      /* [n_nodes] 1 for a repeat node that becomes a counted rule */
  int32_t *node_rule;    /* [n_nodes] the hidden rule made for the node, or -1 */
  uint64_t inlined;      /* inlining work spent on the current rule */
  AG_VEC(ag_hidden) hidden;     /* hidden rule k has id ir->n_rules + k */
  AG_VEC(int32_t) rule_start;   /* [IR rules, then hidden ones] */
  bool *stub;                   /* [IR rules] no automaton: nothing names the rule (ag_rules_build) */
  AG_VEC(ag_repeat_bounds) bounds; /* [hidden rules] bounds of the counted ones */

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

  ag_trie trie; /* a rule that is a choice of literals (ag_trie_rule) */
  AG_VEC(int32_t) trie_rules; /* the ids of the rules built so */

  /* Output for the whole grammar, handed to the ag_grammar on success. */
  AG_VEC(ag_state) states;
  AG_VEC(int32_t) state_rule;
  AG_VEC(ag_byte_edge) byte_edges;
  AG_VEC(ag_rule_edge) rule_edges;
} ag_builder;

static ag_status ag_nomem(ag_builder *b) {
  return ag_fail(b->err, AG_ERR_NOMEM, b->rule, "out of memory while building the automaton");
}

static int ag_cmp_i32(const void *a, const void *b) {
  int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

/* Sorting. Most sets here have a handful of elements, where insertion sort
 * beats qsort's call overhead; up to a few hundred, Shell sort (Ciura's gaps)
 * still does, by several times (qsort calls a comparison function for every
 * step, and subset construction sorts a set for every DFA edge). An empty
 * vector's data may be NULL, which qsort forbids. */
#define AG_INSERTION_SORT(T, v, n)                                   \
  for (size_t i_ = 1; i_ < (n); i_++) {                              \
    T x_ = (v)[i_];                                                  \
    size_t j_ = i_;                                                  \
    for (; j_ > 0 && (v)[j_ - 1] > x_; j_--) (v)[j_] = (v)[j_ - 1]; \
    (v)[j_] = x_;                                                    \
  }

#define AG_SHELL_SORT_MAX 512
static const size_t ag_shell_gaps[] = {132, 57, 23, 10, 4, 1};

#define AG_SHELL_SORT(T, v, n)                                                        \
  for (size_t g_ = 0; g_ < sizeof ag_shell_gaps / sizeof *ag_shell_gaps; g_++) {     \
    size_t gap_ = ag_shell_gaps[g_];                                                  \
    for (size_t i_ = gap_; i_ < (n); i_++) {                                          \
      T x_ = (v)[i_];                                                                 \
      size_t j_ = i_;                                                                 \
      for (; j_ >= gap_ && (v)[j_ - gap_] > x_; j_ -= gap_) (v)[j_] = (v)[j_ - gap_]; \
      (v)[j_] = x_;                                                                   \
    }                                                                                 \
  }

static void ag_sort_i32(int32_t *v, size_t n) {
  if (n <= 16) {
    AG_INSERTION_SORT(int32_t, v, n)
  } else if (n <= AG_SHELL_SORT_MAX) {
    AG_SHELL_SORT(int32_t, v, n)
  } else {
    qsort(v, n, sizeof *v, ag_cmp_i32);
  }
}

static void ag_sort_u64(uint64_t *v, size_t n) {
  if (n <= 16) {
    AG_INSERTION_SORT(uint64_t, v, n)
  } else if (n <= AG_SHELL_SORT_MAX) {
    AG_SHELL_SORT(uint64_t, v, n)
  } else {
    qsort(v, n, sizeof *v, ag_cmp_u64);
  }
}

/* ---- Thompson construction ---------------------------------------------- */

static ag_status ag_nfa_spend(ag_builder *b, uint64_t units) {
  b->work += units;
  if (b->work > AG_NFA_MAX_WORK)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the rule expands to too large an automaton (over %llu construction steps)",
                   (unsigned long long)AG_NFA_MAX_WORK);
  return AG_OK;
}

static ag_status ag_nfa_state(ag_builder *b, int32_t *out) {
  if (b->n_nfa >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the rule's automaton needs more than %d NFA states", AG_MAX_STATES);
  *out = b->n_nfa++;
  return AG_OK;
}

static ag_status ag_nfa_edge_add(ag_builder *b, int32_t from, int32_t to, uint8_t kind,
                                 uint8_t lo, uint8_t hi, int32_t rule) {
  ag_nfa_edge e = {from, to, rule, kind, lo, hi};
  return ag_vec_push(&b->edges, e) ? AG_OK : ag_nomem(b);
}

static ag_status ag_nfa_eps(ag_builder *b, int32_t from, int32_t to) {
  return ag_nfa_edge_add(b, from, to, AG_NFA_EPS, 0, 0, -1);
}

static ag_status ag_nfa_push(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  ag_nfa_task t = {node, from, to};
  return ag_vec_push(&b->tasks, t) ? AG_OK : ag_nomem(b);
}

/* Whether copies of node are worth sharing: a sequence, choice or unrolled
 * repeat with states of its own (a byte class or a reference is one edge). */
static bool ag_nfa_shareable(const ag_builder *b, int32_t node) {
  int kind = ag_ir_node(b->ir, node)[0];
  if (kind != AG_NODE_SEQ && kind != AG_NODE_CHOICE && kind != AG_NODE_REPEAT) return false;
  return !b->counted[node] && b->node_size[node] >= AG_SHARE_MIN;
}

static uint32_t ag_share_hash(int32_t node, int32_t to) {
  uint32_t h = ((uint32_t)node * 0x9e3779b1u) ^ ((uint32_t)to * 0x85ebca6bu);
  return h ^ (h >> 16);
}

static ag_status ag_share_grow(ag_builder *b) {
  size_t cap = b->share_cap ? b->share_cap * 2 : 1024; /* past the doublings small rules need */
  ag_share_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_nomem(b);
  for (size_t k = 0; k < b->share_cap; k++) {
    ag_share_slot o = b->share[k];
    if (o.gen != b->share_gen) continue;
    size_t i = ag_share_hash(o.node, o.to) & (cap - 1);
    while (t[i].gen == b->share_gen) i = (i + 1) & (cap - 1);
    t[i] = o;
  }
  free(b->share);
  b->share = t;
  b->share_cap = cap;
  return AG_OK;
}

/* The state from which node, built once, leads to `to`: the start of the one
 * copy of node that ends at `to`, made with a fresh state on first use. A
 * shared IR subtree (a JSON string's character class after each of a thousand
 * trie states, say) then adds its states to the NFA once instead of once per
 * use, and determinizing meets one set of states where it met a thousand
 * equivalent ones, which minimization merged only afterwards. Sound because
 * no construction adds an edge out of its `to` state or into its `from` state
 * (see ag_nfa_choice): a path entering the copy from whichever state leaves it
 * only at `to`, by node. */
static ag_status ag_nfa_entry(ag_builder *b, int32_t node, int32_t to, int32_t *out) {
  ag_status st = ag_nfa_spend(b, 1);
  if (!st && (b->share_len + 1) * 2 > b->share_cap) st = ag_share_grow(b);
  if (st) return st;
  size_t mask = b->share_cap - 1, i = ag_share_hash(node, to) & mask;
  for (; b->share[i].gen == b->share_gen; i = (i + 1) & mask) {
    if (b->share[i].node == node && b->share[i].to == to) {
      *out = b->share[i].start;
      return AG_OK;
    }
  }
  if ((st = ag_nfa_state(b, out)) || (st = ag_nfa_push(b, node, *out, to))) return st;
  ag_share_slot slot = {b->share_gen, node, to, *out};
  b->share[i] = slot;
  b->share_len++;
  return AG_OK;
}

/* Connects `from` to `to` by node through its one copy that ends at `to`. */
static ag_status ag_nfa_shared(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  int32_t start = -1;
  ag_status st = ag_nfa_entry(b, node, to, &start);
  return st ? st : ag_nfa_eps(b, from, start);
}

static ag_status ag_nfa_task_add(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  ag_status st = ag_nfa_spend(b, 1);
  if (st) return st;
  return ag_nfa_shareable(b, node) ? ag_nfa_shared(b, node, from, to) : ag_nfa_push(b, node, from, to);
}

/* Picks the state after item k of n: fresh in between, `to` after the last. */
static ag_status ag_nfa_next(ag_builder *b, int64_t k, int64_t n, int32_t to, int32_t *out) {
  if (k == n - 1) {
    *out = to;
    return AG_OK;
  }
  return ag_nfa_state(b, out);
}

static ag_status ag_nfa_literal(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  int32_t len = p[1], cur = from, next = -1;
  ag_status st = ag_nfa_spend(b, (uint64_t)len);
  if (st) return st;
  if (len == 0) return ag_nfa_eps(b, from, to);
  for (int32_t k = 0; k < len; k++, cur = next) {
    uint8_t c = (uint8_t)p[2 + k];
    if ((st = ag_nfa_next(b, k, len, to, &next))) return st;
    if ((st = ag_nfa_edge_add(b, cur, next, AG_NFA_BYTES, c, c, -1))) return st;
  }
  return AG_OK;
}

/* Zero ranges add no edge: an empty class matches nothing. */
static ag_status ag_nfa_bytes(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_status st = ag_nfa_spend(b, (uint64_t)p[1]);
  for (int32_t k = 0; !st && k < p[1]; k++)
    st = ag_nfa_edge_add(b, from, to, AG_NFA_BYTES, (uint8_t)p[2 + 2 * k], (uint8_t)p[3 + 2 * k],
                         -1);
  return st;
}

/* The states between the items are entries (ag_nfa_entry), made from the
 * end: the state before item k is where items k.. lead to `to`, so sequences
 * that end alike (every trie state's "other character, then the rest of the
 * string") share their tails, from the state before the common part on. */
static ag_status ag_nfa_seq(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  int32_t n = p[1], next = to;
  if (n == 0) return ag_nfa_eps(b, from, to);
  for (int32_t k = n - 1; k > 0; k--) {
    ag_status st = ag_nfa_entry(b, p[2 + k], next, &next);
    if (st) return st;
  }
  return ag_nfa_task_add(b, p[2], from, next);
}

/* Alternatives share both end states. That is sound because no construction
 * adds an edge into its `from` state (unless from == to, a star loop) or out
 * of its `to` state, so a path entering one alternative stays in it until
 * `to`. Zero alternatives add nothing: the choice matches nothing. */
static ag_status ag_nfa_choice(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_status st = AG_OK;
  for (int32_t k = 0; !st && k < p[1]; k++) st = ag_nfa_task_add(b, p[2 + k], from, to);
  return st;
}

/* x* as from -> m, m -x-> m, m -> to with a fresh m: looping on `from`
 * itself would let a sibling alternative start after some x's. */
static ag_status ag_nfa_star(ag_builder *b, int32_t child, int32_t from, int32_t to) {
  int32_t m = -1;
  ag_status st = ag_nfa_state(b, &m);
  if (!st) st = ag_nfa_eps(b, from, m);
  if (!st) st = ag_nfa_eps(b, m, to);
  if (!st) st = ag_nfa_task_add(b, child, m, m);
  return st;
}

/* x{min,max}: min mandatory copies in a chain, then either a star or
 * (max - min) optional copies, each able to skip to `to`. Only small repeats
 * get here (ag_node_sizes): both bounds are at most AG_UNROLL_MAX. */
static ag_status ag_nfa_repeat(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  int32_t child = p[1], min = p[2], max = p[3], cur = from, next = -1;
  ag_status st = AG_OK;
  if (max == 0) return ag_nfa_eps(b, from, to);
  /* With optional copies or a star to follow, the last mandatory copy ends
   * in a fresh state, hence the n of min + 1. */
  int64_t n_chain = max == min ? min : (int64_t)min + 1;
  for (int32_t k = 0; k < min; k++, cur = next) {
    if ((st = ag_nfa_next(b, k, n_chain, to, &next))) return st;
    if ((st = ag_nfa_task_add(b, child, cur, next))) return st;
  }
  if (max == min) return AG_OK;
  if (max == -1) return ag_nfa_star(b, child, cur, to);
  for (int32_t k = min; k < max; k++, cur = next) {
    if ((st = ag_nfa_eps(b, cur, to))) return st;
    if ((st = ag_nfa_next(b, k, max, to, &next))) return st;
    if ((st = ag_nfa_task_add(b, child, cur, next))) return st;
  }
  return AG_OK;
}

/* Whether a trigger or a stop ends at automaton state q (an exclude alone kills the text). */
static bool ag_nfa_dispatch_matched(const ag_dispatch *d, const ag_ac *ac, int32_t q) {
  for (uint32_t j = ac->out_begin[q]; j < ac->out_begin[q + 1]; j++)
    if (d->rules[ac->out[j]] != AG_DISPATCH_EXCLUDE) return true;
  return false;
}

/* A free-text state's byte edges, consecutive bytes with one target merged, and
 * its way out when the node may end in free text. */
static ag_status ag_nfa_dispatch_free(ag_builder *b, const ag_dispatch *d, const ag_ac *ac,
                                      const int32_t *id, int32_t q, int32_t to) {
  const int32_t *row = ac->delta + (size_t)q * 256;
  ag_status st = AG_OK;
  for (int lo = 0, hi; !st && lo < 256; lo = hi + 1) {
    for (hi = lo; hi < 255 && row[hi + 1] == row[lo]; hi++) continue;
    int32_t t = row[lo];
    if (!ag_ac_hit(ac, t) || ag_nfa_dispatch_matched(d, ac, t))
      st = ag_nfa_edge_add(b, id[q], id[t], AG_NFA_BYTES, (uint8_t)lo, (uint8_t)hi, -1);
  }
  if (!st && (d->flags & AG_DISPATCH_END_IN_TEXT)) st = ag_nfa_eps(b, id[q], to);
  return st;
}

/* A matched state: each trigger's rule, then the start again (LOOP) or the end;
 * each stop ends the node. */
static ag_status ag_nfa_dispatch_matches(ag_builder *b, const ag_dispatch *d, const ag_ac *ac,
                                         const int32_t *id, int32_t q, int32_t to) {
  int32_t after = (d->flags & AG_DISPATCH_LOOP) ? id[0] : to;
  ag_status st = AG_OK;
  for (uint32_t j = ac->out_begin[q]; !st && j < ac->out_begin[q + 1]; j++) {
    int32_t rule = d->rules[ac->out[j]];
    if (rule >= 0) st = ag_nfa_edge_add(b, id[q], after, AG_NFA_RULE, 0, 0, rule);
    else if (rule == AG_DISPATCH_STOP) st = ag_nfa_eps(b, id[q], to);
  }
  return st;
}

/* TagDispatch (ag_dispatch.h): one NFA state per Aho–Corasick state. A state
 * where no word ends is free text; one where a word ends has no byte edge, so
 * only the first occurrence of any word counts. */
static ag_status ag_nfa_dispatch(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_dispatch *d = NULL;
  ag_ac ac;
  memset(&ac, 0, sizeof ac);
  int32_t *id = NULL;
  ag_status st = ag_dispatch_from_ir(p, &d, b->err);
  if (!st) st = ag_ac_build(d, &ac, b->err);
  if (!st) st = ag_nfa_spend(b, (uint64_t)ac.n_states * 16);
  if (!st && !(id = malloc(sizeof *id * (size_t)ac.n_states))) st = ag_nomem(b);
  for (int32_t q = 0; !st && q < ac.n_states; q++) st = ag_nfa_state(b, &id[q]);
  if (!st) st = ag_nfa_eps(b, from, id[0]);
  for (int32_t q = 0; !st && q < ac.n_states; q++)
    st = ag_ac_hit(&ac, q) ? ag_nfa_dispatch_matches(b, d, &ac, id, q, to)
                           : ag_nfa_dispatch_free(b, d, &ac, id, q, to);
  free(id);
  ag_ac_free(&ac);
  ag_dispatch_free(d);
  return st;
}

/* Whether repeat node p (children already sized) is too large to unroll. */
static bool ag_repeat_is_counted(const ag_builder *b, const int32_t *p) {
  uint64_t copies = p[3] < 0 ? (uint64_t)p[2] : (uint64_t)p[3];
  if (copies <= 1) return false; /* x?, x*, x+: no copy to save */
  uint64_t most = b->inline_cost[p[1]] ? AG_UNROLL_MAX : AG_UNROLL_MAX_REF;
  return copies > most || copies * b->node_size[p[1]] > AG_UNROLL_BUDGET;
}

/* The automaton pieces node i adds (saturated), whether it is a counted repeat,
 * and its inline cost: the size of a bytes-only subtree, 0 for one with a rule
 * edge (a reference, a dispatch or a counted repeat). */
static void ag_node_size(ag_builder *b, int32_t i) {
  const int32_t *p = ag_ir_node(b->ir, i);
  uint64_t cost = 0, size = 1;
  switch (p[0]) {
    case AG_NODE_LITERAL: cost = size = 1 + (uint64_t)p[1]; break;
    case AG_NODE_BYTES: cost = 1, size = 1 + (uint64_t)p[1]; break;
    case AG_NODE_SEQ:
    case AG_NODE_CHOICE:
      cost = 1;
      for (int32_t k = 0; k < p[1]; k++) {
        cost = cost && b->inline_cost[p[2 + k]] ? cost + b->inline_cost[p[2 + k]] : 0;
        size += b->node_size[p[2 + k]];
      }
      break;
    case AG_NODE_REPEAT: {
      if ((b->counted[i] = ag_repeat_is_counted(b, p))) break; /* one rule edge */
      uint64_t copies = p[3] < 0 ? (uint64_t)p[2] + 1 : (uint64_t)p[3];
      if (copies == 0) copies = 1;
      cost = b->inline_cost[p[1]] ? 1 + b->inline_cost[p[1]] * copies : 0;
      size = 1 + b->node_size[p[1]] * copies;
      break;
    }
    case AG_NODE_DISPATCH: size = AG_UNROLL_BUDGET + 1; break; /* never copied */
    case AG_NODE_SWITCH: /* rule edges: cost 0 */
      for (int32_t k = 0, at = 2; k < p[1] && size <= AG_UNROLL_BUDGET; k++, at += 2 + p[at + 1])
        size += 1 + (uint64_t)p[at + 1];
      break;
    case AG_NODE_KEYTRIE: { /* one state per name byte, each with a few edges */
      const int32_t *w = p + 6 + 2 * p[4];
      cost = 1;
      for (int32_t k = 0; k < p[5 + 2 * p[4]] && size <= AG_UNROLL_BUDGET; w += 1 + w[0], k++)
        size += 4 * (uint64_t)w[0];
      for (int32_t k = 1; k <= 3; k++) {
        cost = cost && b->inline_cost[p[k]] ? cost + b->inline_cost[p[k]] : 0;
        size += b->node_size[p[k]];
      }
      if (cost) cost += size;
      break;
    }
    default: break; /* a rule reference: one edge */
  }
  b->inline_cost[i] = (uint32_t)(cost > AG_INLINE_MAX ? AG_INLINE_MAX + 1 : cost);
  b->node_size[i] = (uint32_t)(size > AG_UNROLL_BUDGET ? AG_UNROLL_BUDGET + 1 : size);
}

/* A repeat of a reference to a small bytes-only rule is unrolled as one of
 * bytes, since ag_nfa_ruleref inlines such a rule. Whether a body is bytes-only
 * never depends on this decision (a body holding any repeat of a reference is
 * not), so it runs after every inline cost is known. */
static void ag_repeat_of_inlined(ag_builder *b, int32_t i) {
  const int32_t *p = ag_ir_node(b->ir, i), *c;
  if (p[0] != AG_NODE_REPEAT || (c = ag_ir_node(b->ir, p[1]))[0] != AG_NODE_RULEREF ||
      c[1] >= b->ir->n_rules)
    return;
  uint64_t cost = b->inline_cost[b->ir->body[c[1]]];
  uint64_t copies = p[3] < 0 ? (uint64_t)p[2] : (uint64_t)p[3];
  if (cost && cost <= AG_INLINE_MAX && copies > 1)
    b->counted[i] = copies > AG_UNROLL_MAX || copies * cost > AG_UNROLL_BUDGET;
}

/* Sizes every node in one pass: children come before parents. */
static ag_status ag_node_sizes(ag_builder *b) {
  size_t n = (size_t)(b->ir->n_nodes ? b->ir->n_nodes : 1);
  b->inline_cost = calloc(n, sizeof *b->inline_cost);
  b->node_size = calloc(n, sizeof *b->node_size);
  b->counted = calloc(n, sizeof *b->counted);
  b->node_rule = malloc(n * sizeof *b->node_rule);
  if (!b->inline_cost || !b->node_size || !b->counted || !b->node_rule) return ag_nomem(b);
  for (int32_t i = 0; i < b->ir->n_nodes; i++) {
    b->node_rule[i] = -1;
    ag_node_size(b, i);
  }
  for (int32_t i = 0; i < b->ir->n_nodes; i++) ag_repeat_of_inlined(b, i);
  return AG_OK;
}

/* The rule label of the hidden rule for node (made on first use): the counted
 * rule of a counted repeat, else a rule whose body is the node. Hidden labels
 * follow the IR's own and external ones; ids (state_rule) follow the own ones. */
static ag_status ag_hidden_rule(ag_builder *b, int32_t node, int32_t *label) {
  const ag_ir *ir = b->ir;
  if (b->node_rule[node] < 0) {
    if ((int64_t)ir->n_rules + ir->n_external + (int64_t)b->hidden.len >= AG_MAX_RULES)
      return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                     "the grammar needs more than %d rules with those its counted repeats add",
                     AG_MAX_RULES);
    ag_hidden h = {node, b->rule};
    if (!ag_vec_push(&b->hidden, h)) return ag_nomem(b);
    b->node_rule[node] = (int32_t)b->hidden.len - 1;
  }
  *label = ir->n_rules + ir->n_external + b->node_rule[node];
  return AG_OK;
}

/* A counted repeat: one edge over its counted rule. */
static ag_status ag_nfa_counted(ag_builder *b, int32_t node, int32_t from, int32_t to) {
  int32_t label = -1;
  ag_status st = ag_hidden_rule(b, node, &label);
  return st ? st : ag_nfa_edge_add(b, from, to, AG_NFA_RULE, 0, 0, label);
}

/* The size of rule r's body when a reference to it may be inlined (small and
 * bytes-only, not the rule being built), else 0. */
static uint32_t ag_inline_cost(const ag_builder *b, int32_t r) {
  if (r >= b->ir->n_rules || r == b->rule_id) return 0;
  uint32_t cost = b->inline_cost[b->ir->body[r]];
  return cost <= AG_INLINE_MAX ? cost : 0;
}

/* A reference to rule r: its body in place when small and bytes-only, else a rule edge. */
static ag_status ag_nfa_ruleref(ag_builder *b, int32_t r, int32_t from, int32_t to) {
  uint32_t cost = ag_inline_cost(b, r);
  if (cost && b->inlined + cost <= AG_INLINE_BUDGET) {
    b->inlined += cost;
    return ag_nfa_task_add(b, b->ir->body[r], from, to);
  }
  return ag_nfa_edge_add(b, from, to, AG_NFA_RULE, 0, 0, r);
}

/* Each word as a chain of bytes to a fresh state, then its rule. */
static ag_status ag_nfa_switch(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  ag_status st = AG_OK;
  const int32_t *w = p + 2; /* laid out as a LITERAL node after its rule: w[1] bytes from w + 2 */
  for (int32_t k = 0; !st && k < p[1]; k++, w += 2 + w[1]) {
    int32_t mid = -1;
    st = ag_nfa_state(b, &mid);
    if (!st) st = ag_nfa_literal(b, w, from, mid);
    if (!st) st = ag_nfa_ruleref(b, w[0], mid, to);
  }
  return st;
}

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

/* The trie of KEYTRIE node p's names (sorted, ag_ir.c) into keys[0 ..
 * *n_keys): each name shares the path of its common prefix with the name
 * before it, so one pass with a stack of that path builds it. */
static void ag_key_trie(const int32_t *names, ag_key_node *keys, int32_t *path, int32_t *n_keys) {
  const int32_t *w = names + 1, *prev = NULL;
  int32_t n = 1, prev_len = 0;
  ag_key_node fresh = {-1, false, {0, 0}, -1, -1, -1, 0};
  keys[0] = fresh;
  path[0] = 0;
  for (int32_t k = 0; k < names[0]; prev = w + 1, prev_len = w[0], w += 1 + w[0], k++) {
    int32_t d = 0;
    while (d < prev_len && d < w[0] && prev[d] == w[1 + d]) d++;
    for (; d < w[0]; d++) {
      int c = w[1 + d];
      ag_key_node *parent = &keys[path[d]];
      parent->next[c >> 6] |= (uint64_t)1 << (c & 63);
      keys[n] = fresh;
      keys[n].byte = (uint8_t)c;
      keys[n].sibling = parent->kid; /* prepended: children in descending byte order */
      parent->kid = n;
      path[d + 1] = n;
      n++;
    }
    keys[path[w[0]]].terminal = true;
  }
  *n_keys = n;
}

/* A hash of node k's subtrie: whether a name ends there, and its children by
 * byte and by the node that stands for them. */
static uint32_t ag_key_hash(const ag_key_node *keys, int32_t k) {
  uint32_t h = keys[k].terminal ? 0x9e3779b1u : 0x85ebca6bu;
  for (int32_t c = keys[k].kid; c >= 0; c = keys[c].sibling)
    h = (h ^ ((uint32_t)keys[c].byte << 24 ^ (uint32_t)keys[c].canon)) * 0x9e3779b1u;
  return h ^ (h >> 15);
}

/* Whether nodes j and k, their children merged already, have the same subtrie. */
static bool ag_key_same(const ag_key_node *keys, int32_t j, int32_t k) {
  if (keys[j].terminal != keys[k].terminal) return false;
  int32_t a = keys[j].kid, c = keys[k].kid;
  for (; a >= 0 && c >= 0; a = keys[a].sibling, c = keys[c].sibling)
    if (keys[a].byte != keys[c].byte || keys[a].canon != keys[c].canon) return false;
  return a < 0 && c < 0;
}

/* Gives each of the n trie nodes the first node (in merge order) with the same
 * subtrie, bottom up: children come after their parent, so they are merged
 * first. Nodes with the same subtrie accept the same rest of a key (they allow
 * the quote alike, continue names alike and leave the trie by the same way),
 * so they are one DFA state; merging them here, on small signatures, is what
 * minimization would do on their DFA states, each carrying a way's thirty-odd
 * byte ranges. `table` has cap (a power of two, at least 2n) slots. */
static void ag_key_merge(ag_key_node *keys, int32_t n, int32_t *table, size_t cap) {
  for (size_t i = 0; i < cap; i++) table[i] = -1;
  for (int32_t k = n - 1; k >= 0; k--) {
    size_t i = ag_key_hash(keys, k) & (cap - 1);
    while (table[i] >= 0 && !ag_key_same(keys, table[i], k)) i = (i + 1) & (cap - 1);
    if (table[i] < 0) table[i] = k;
    keys[k].canon = table[i];
  }
}

/* The raw ASCII ranges from `state` to `to`, less the bytes in `skip`. */
static ag_status ag_key_other(ag_builder *b, const int32_t *ranges, int32_t n_ranges,
                              const uint64_t skip[2], int32_t state, int32_t to) {
  ag_status st = AG_OK;
  for (int32_t k = 0; !st && k < n_ranges; k++) {
    for (int c = ranges[2 * k], hi = ranges[2 * k + 1]; !st && c <= hi;) {
      while (c <= hi && (skip[c >> 6] >> (c & 63) & 1)) c++;
      int lo = c;
      while (c <= hi && !(skip[c >> 6] >> (c & 63) & 1)) c++;
      if (lo < c) st = ag_nfa_edge_add(b, state, to, AG_NFA_BYTES, (uint8_t)lo, (uint8_t)(c - 1), -1);
    }
  }
  return st;
}

/* KEYTRIE: one state per prefix of the names (prefixes with the same rest of
 * the trie share one, ag_key_merge). A prefix that is no name may
 * close the key with the quote; any prefix may take a name's next byte (to
 * its child), or a character that continues no name (a raw byte outside the
 * next ones, or `other`: a wide or escaped one) and then `tail`, the rest of
 * any string. Past a name that no other continues, any character (any_char)
 * then the tail. The tail and the two ways into it are built once, each
 * entered from every prefix, as the IR trie the node replaces shared them. */
static ag_status ag_nfa_keytrie(ag_builder *b, const int32_t *p, int32_t from, int32_t to) {
  const int32_t *ranges = p + 5, *names = p + 5 + 2 * p[4];
  int64_t bytes = 0, longest = 0;
  const int32_t *w = names + 1;
  for (int32_t k = 0; k < names[0]; w += 1 + w[0], k++) {
    bytes += w[0];
    if (w[0] > longest) longest = w[0];
  }
  ag_status st = ag_nfa_spend(b, (uint64_t)(bytes + 1) * (4 + (uint64_t)p[4]));
  if (st) return st;
  size_t cap = 2;
  while (cap < 2 * (size_t)(bytes + 1)) cap *= 2;
  ag_key_node *keys = malloc(sizeof *keys * (size_t)(bytes + 1));
  int32_t *path = malloc(sizeof *path * (size_t)(longest + 1));
  int32_t *table = malloc(sizeof *table * cap);
  int32_t n_keys = 0, tail = -1, other = -1, any = -1;
  if (!keys || !path || !table) st = ag_nomem(b);
  if (!st) {
    ag_key_trie(names, keys, path, &n_keys);
    ag_key_merge(keys, n_keys, table, cap);
  }
  for (int32_t k = 0; !st && k < n_keys; k++) /* one NFA state per distinct subtrie */
    if (keys[k].canon == k) st = ag_nfa_state(b, &keys[k].state);
  for (int32_t k = 0; !st && k < n_keys; k++)
    for (int32_t c = keys[k].canon == k ? keys[k].kid : -1; !st && c >= 0; c = keys[c].sibling)
      st = ag_nfa_edge_add(b, keys[k].state, keys[keys[c].canon].state, AG_NFA_BYTES, keys[c].byte,
                           keys[c].byte, -1);
  if (!st) st = ag_nfa_eps(b, from, keys[0].state);
  if (!st) st = ag_nfa_entry(b, p[1], to, &tail);
  if (!st) st = ag_nfa_entry(b, p[2], tail, &other);
  if (!st) st = ag_nfa_entry(b, p[3], tail, &any);
  size_t way = b->key_ways.len; /* other, then any */
  ag_key_way w_other = {other, 0, 0, 0, 0, 0}, w_any = {any, 0, 0, 0, 0, 0};
  if (!st && (!ag_vec_push(&b->key_ways, w_other) || !ag_vec_push(&b->key_ways, w_any)))
    st = ag_nomem(b);
  for (int32_t k = 0; !st && k < n_keys; k++) {
    const ag_key_node *key = &keys[k];
    if (key->canon != k) continue;
    bool leaf = !key->next[0] && !key->next[1];
    uint64_t node = (uint64_t)(uint32_t)key->state << 32 | (uint32_t)(way + (leaf && key->terminal));
    if (!ag_vec_push(&b->key_nodes, node)) st = ag_nomem(b);
    if (!st && !key->terminal) st = ag_nfa_edge_add(b, key->state, to, AG_NFA_BYTES, '"', '"', -1);
    if (!st && leaf && key->terminal) st = ag_nfa_eps(b, key->state, any);
    else if (!st) {
      st = ag_key_other(b, ranges, p[4], key->next, key->state, tail);
      if (!st) st = ag_nfa_eps(b, key->state, other);
    }
  }
  free(keys);
  free(path);
  free(table);
  return st;
}

static ag_status ag_nfa_expand(ag_builder *b, ag_nfa_task t) {
  const int32_t *p = ag_ir_node(b->ir, t.node);
  switch (p[0]) {
    case AG_NODE_LITERAL: return ag_nfa_literal(b, p, t.from, t.to);
    case AG_NODE_BYTES: return ag_nfa_bytes(b, p, t.from, t.to);
    case AG_NODE_SEQ: return ag_nfa_seq(b, p, t.from, t.to);
    case AG_NODE_CHOICE: return ag_nfa_choice(b, p, t.from, t.to);
    case AG_NODE_RULEREF: return ag_nfa_ruleref(b, p[1], t.from, t.to);
    case AG_NODE_REPEAT:
      return b->counted[t.node] ? ag_nfa_counted(b, t.node, t.from, t.to)
                                : ag_nfa_repeat(b, p, t.from, t.to);
    case AG_NODE_DISPATCH: return ag_nfa_dispatch(b, p, t.from, t.to);
    case AG_NODE_SWITCH: return ag_nfa_switch(b, p, t.from, t.to);
    case AG_NODE_KEYTRIE: return ag_nfa_keytrie(b, p, t.from, t.to);
    default: /* ag_ir_parse rejected every other kind */
      return ag_fail(b->err, AG_ERR_INVALID, b->rule, "node %d: unknown kind", (int)t.node);
  }
}

/* Builds the rule's NFA. Tasks are independent of each other (each only adds
 * states and edges), so an explicit stack replaces recursion: a deeply nested
 * buffer cannot overflow the C stack. */
static ag_status ag_nfa_build(ag_builder *b, int32_t body) {
  b->n_nfa = 2;
  b->work = 0;
  b->inlined = 0;
  b->edges.len = 0;
  b->tasks.len = 0;
  b->share_len = 0;
  b->key_ways.len = b->key_nodes.len = b->key_sets.len = b->key_rows.len = 0;
  if (++b->share_gen == 0) { /* wrapped: forget every old slot */
    if (b->share) memset(b->share, 0, b->share_cap * sizeof *b->share);
    b->share_gen = 1;
  }
  ag_status st = ag_nfa_task_add(b, body, 0, 1);
  while (!st && b->tasks.len > 0) st = ag_nfa_expand(b, b->tasks.data[--b->tasks.len]);
  return st;
}

/* Groups the edges by source state (counting sort) and resets the per-NFA-state
 * scratch arrays. */
static ag_status ag_nfa_index(ag_builder *b) {
  size_t n = (size_t)b->n_nfa, m = b->edges.len;
  if (!ag_vec_reserve(&b->csr_begin, n + 1) || !ag_vec_reserve(&b->csr, m) ||
      !ag_vec_reserve(&b->mark, n) || !ag_vec_reserve(&b->count, n))
    return ag_nomem(b);
  uint32_t *begin = b->csr_begin.data;
  memset(begin, 0, (n + 1) * sizeof *begin);
  for (size_t i = 0; i < m; i++) begin[b->edges.data[i].from + 1]++;
  for (size_t s = 0; s < n; s++) begin[s + 1] += begin[s];
  /* Place using begin[from] as a cursor, then shift back by one state. */
  for (size_t i = 0; i < m; i++) b->csr.data[begin[b->edges.data[i].from]++] = b->edges.data[i];
  memmove(begin + 1, begin, n * sizeof *begin);
  begin[0] = 0;
  b->csr_begin.len = n + 1;
  b->csr.len = m;
  memset(b->mark.data, 0, n * sizeof *b->mark.data);
  memset(b->count.data, 0, n * sizeof *b->count.data);
  b->mark_gen = 0;
  if (b->key_ways.len) {
    if (!ag_vec_reserve(&b->nfa_way, n)) return ag_nomem(b);
    for (size_t u = 0; u < n; u++) b->nfa_way.data[u] = -1;
    for (size_t i = 0; i < b->key_nodes.len; i++)
      b->nfa_way.data[b->key_nodes.data[i] >> 32] = (int32_t)(uint32_t)b->key_nodes.data[i];
    b->nfa_way.len = n;
  }
  return AG_OK;
}

/* ---- subset construction ------------------------------------------------ */

static uint32_t ag_set_hash(const int32_t *set, size_t n) {
  uint32_t h = 0x811c9dc5u ^ (uint32_t)n;
  for (size_t i = 0; i < n; i++) {
    h = (h ^ (uint32_t)set[i]) * 0x9e3779b1u;
    h ^= h >> 15;
  }
  return h;
}

/* A closure's sets are kept in the order the closure found them, not sorted:
 * sorting one for every DFA edge was the largest cost of determinizing big
 * sets. So the hash ignores order (a sum and a xor of mixed ids), and
 * equality asks whether the stored set has the closure's size and every
 * element marked by it (ag_dfa_closure marks exactly its states, once each). */
static uint32_t ag_closure_hash(const int32_t *set, size_t n) {
  uint32_t sum = 0, x = 0;
  for (size_t i = 0; i < n; i++) {
    uint32_t h = (uint32_t)set[i] * 0x9e3779b1u;
    h ^= h >> 15;
    sum += h;
    x ^= h * 0x85ebca6bu;
  }
  return (sum ^ (x >> 7) ^ x << 13) * 0x27d4eb2fu ^ (uint32_t)n;
}

static bool ag_closure_equal(const ag_builder *b, int32_t id, size_t n) {
  size_t lo = b->set_begin.data[id], hi = b->set_begin.data[id + 1];
  if (hi - lo != n) return false;
  for (size_t i = lo; i < hi; i++)
    if (b->mark.data[b->pool.data[i]] != b->mark_gen) return false;
  return true;
}

/* Sorts NFA-state ids. A set can hold thousands of states (nested nullable
 * repeats); a linear radix sort keeps those cheap. */
static ag_status ag_sort_states(ag_builder *b, int32_t *v, size_t n) {
  if (n < 256) {
    ag_sort_i32(v, n);
    return AG_OK;
  }
  if (!ag_vec_reserve(&b->radix, n)) return ag_nomem(b);
  uint32_t *src = (uint32_t *)v, *dst = (uint32_t *)b->radix.data, *tmp;
  uint32_t top = (uint32_t)b->n_nfa - 1; /* ids are below n_nfa: skip zero digits */
  for (unsigned shift = 0; shift < 32 && (top >> shift) != 0; shift += 8) {
    size_t cnt[257] = {0};
    for (size_t i = 0; i < n; i++) cnt[(src[i] >> shift & 255) + 1]++;
    for (size_t d = 0; d < 256; d++) cnt[d + 1] += cnt[d];
    for (size_t i = 0; i < n; i++) dst[cnt[src[i] >> shift & 255]++] = src[i];
    tmp = src, src = dst, dst = tmp;
  }
  if (src != (uint32_t *)v) memcpy(v, src, n * sizeof *v);
  return AG_OK;
}

static ag_status ag_dfa_spend(ag_builder *b, uint64_t units) {
  b->dfa_work += units;
  if (b->dfa_work > AG_DFA_MAX_WORK)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "determinizing the rule takes over %llu steps (deeply nested optional "
                   "repeats, or alternatives with exponentially many combinations?)",
                   (unsigned long long)AG_DFA_MAX_WORK);
  return AG_OK;
}

/* A fresh mark generation: every old mark is below it. */
static uint32_t ag_mark_next(ag_builder *b) {
  if (++b->mark_gen == 0) { /* wrapped: forget every old mark */
    memset(b->mark.data, 0, (size_t)b->n_nfa * sizeof *b->mark.data);
    b->mark_gen = 1;
  }
  return b->mark_gen;
}

/* The epsilon closure of seeds (duplicates allowed) into b->closure, in the
 * order found, each state marked (see ag_closure_hash). */
static ag_status ag_dfa_closure(ag_builder *b, const int32_t *seeds, size_t n) {
  uint32_t gen = ag_mark_next(b), *mark = b->mark.data;
  uint64_t scanned = 0; /* edges looked at */
  b->closure.len = b->stack.len = 0;
  for (size_t i = 0; i < n; i++) {
    if (mark[seeds[i]] == gen) continue;
    mark[seeds[i]] = gen;
    if (!ag_vec_push(&b->closure, seeds[i]) || !ag_vec_push(&b->stack, seeds[i]))
      return ag_nomem(b);
  }
  while (b->stack.len > 0) {
    int32_t u = b->stack.data[--b->stack.len];
    scanned += b->csr_begin.data[u + 1] - b->csr_begin.data[u];
    for (uint32_t e = b->csr_begin.data[u]; e < b->csr_begin.data[u + 1]; e++) {
      const ag_nfa_edge *ed = &b->csr.data[e];
      if (ed->kind != AG_NFA_EPS || mark[ed->to] == gen) continue;
      mark[ed->to] = gen;
      if (!ag_vec_push(&b->closure, ed->to) || !ag_vec_push(&b->stack, ed->to))
        return ag_nomem(b);
    }
  }
  /* the seeds, the states and edges visited, and hashing and comparing the
   * set when it is interned */
  return ag_dfa_spend(b, n + 2 * (uint64_t)b->closure.len + scanned);
}

static ag_status ag_table_grow(ag_builder *b) {
  size_t cap = b->table_cap * 2;
  ag_dfa_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_nomem(b);
  for (size_t id = 0; id < b->set_hash.len; id++) {
    size_t i = b->set_hash.data[id] & (cap - 1);
    while (t[i].gen == b->table_gen) i = (i + 1) & (cap - 1);
    t[i].gen = b->table_gen;
    t[i].id = (int32_t)id;
  }
  free(b->table);
  b->table = t;
  b->table_cap = cap;
  return AG_OK;
}

static ag_status ag_dfa_add_set(ag_builder *b, uint32_t h, size_t slot, int32_t *id) {
  size_t n = b->closure.len, k = b->set_hash.len;
  if ((size_t)b->base + k >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the grammar's automata need more than %d states", AG_MAX_STATES);
  if (b->pool.len + n > AG_DFA_MAX_SET_WORDS)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "determinizing the rule needs more than %zu words of state sets (deeply "
                   "nested optional repeats?)",
                   AG_DFA_MAX_SET_WORDS);
  if (!ag_vec_reserve(&b->pool, b->pool.len + n) || !ag_vec_push(&b->set_hash, h))
    return ag_nomem(b);
  memcpy(b->pool.data + b->pool.len, b->closure.data, n * sizeof *b->closure.data);
  b->pool.len += n;
  if (!ag_vec_push(&b->set_begin, b->pool.len)) {
    b->pool.len -= n;
    b->set_hash.len--;
    return ag_nomem(b);
  }
  b->table[slot].gen = b->table_gen;
  b->table[slot].id = (int32_t)k;
  *id = (int32_t)k;
  /* Keep the load factor at most 1/2 so probe chains stay short. */
  return (k + 1) * 2 > b->table_cap ? ag_table_grow(b) : AG_OK;
}

/* The local DFA id of the set in b->closure, adding it when new. */
static ag_status ag_dfa_intern(ag_builder *b, int32_t *id) {
  const int32_t *set = b->closure.data;
  size_t n = b->closure.len, mask = b->table_cap - 1;
  uint32_t h = ag_closure_hash(set, n);
  size_t i = h & mask;
  for (; b->table[i].gen == b->table_gen; i = (i + 1) & mask) {
    int32_t k = b->table[i].id;
    if (b->set_hash.data[k] == h && ag_closure_equal(b, k, n)) {
      *id = k;
      return AG_OK;
    }
  }
  return ag_dfa_add_set(b, h, i, id);
}

static ag_status ag_seed_grow(ag_builder *b) {
  size_t cap = b->seed_cap ? b->seed_cap * 2 : 1024; /* past the doublings small rules need */
  ag_seed_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_nomem(b);
  for (size_t k = 0; k < b->seed_cap; k++) {
    ag_seed_slot o = b->seed_table[k];
    if (o.gen != b->seed_gen) continue;
    size_t i = o.hash & (cap - 1);
    while (t[i].gen == b->seed_gen) i = (i + 1) & (cap - 1);
    t[i] = o;
  }
  free(b->seed_table);
  b->seed_table = t;
  b->seed_cap = cap;
  return AG_OK;
}

/* Remembers that `seeds` lead to local DFA state id. */
static ag_status ag_seed_add(ag_builder *b, const int32_t *seeds, size_t n, uint32_t h, int32_t id) {
  ag_status st = (b->seed_len + 1) * 2 > b->seed_cap ? ag_seed_grow(b) : AG_OK;
  if (st) return st;
  if (!ag_vec_reserve(&b->seed_pool, b->seed_pool.len + n)) return ag_nomem(b);
  size_t mask = b->seed_cap - 1, i = h & mask;
  while (b->seed_table[i].gen == b->seed_gen) i = (i + 1) & mask;
  ag_seed_slot slot = {b->seed_gen, h, id, (uint32_t)n, b->seed_pool.len};
  memcpy(b->seed_pool.data + b->seed_pool.len, seeds, n * sizeof *seeds);
  b->seed_pool.len += n;
  b->seed_table[i] = slot;
  b->seed_len++;
  return AG_OK;
}

/* The global DFA state reached from the NFA states `seeds` (sorted by the
 * callers, so equal sets look alike). States reach the same seeds over and
 * over (every prefix of a key trie leaves it for the same rest of the string,
 * every state of a string for the same escapes), so the target of seeds met
 * before is looked up instead of closed and interned again. */
static ag_status ag_dfa_target(ag_builder *b, const int32_t *seeds, size_t n, int32_t *target) {
  uint32_t h = ag_set_hash(seeds, n);
  ag_status st = ag_dfa_spend(b, n);
  if (st) return st;
  for (size_t mask = b->seed_cap - 1, i = b->seed_cap ? h & mask : 0;
       b->seed_cap && b->seed_table[i].gen == b->seed_gen; i = (i + 1) & mask) {
    const ag_seed_slot *slot = &b->seed_table[i];
    if (slot->hash == h && slot->n == n &&
        memcmp(b->seed_pool.data + slot->at, seeds, n * sizeof *seeds) == 0) {
      *target = b->base + slot->id;
      return AG_OK;
    }
  }
  int32_t id = -1;
  st = ag_dfa_closure(b, seeds, n);
  if (!st) st = ag_dfa_intern(b, &id);
  if (!st) st = ag_seed_add(b, seeds, n, h, id);
  if (!st) *target = b->base + id;
  return st;
}

/* Gathers the byte-range events and rule moves of the NFA states set[0 .. n). */
static ag_status ag_collect_set(ag_builder *b, const int32_t *set, size_t n, bool *accepting) {
  b->events.len = b->moves.len = 0;
  *accepting = false;
  ag_status st = ag_dfa_spend(b, n);
  for (size_t i = 0; !st && i < n; i++)
    st = ag_dfa_spend(b, b->csr_begin.data[set[i] + 1] - b->csr_begin.data[set[i]]);
  if (st) return st;
  for (size_t i = 0; i < n; i++) {
    int32_t u = set[i];
    *accepting |= u == 1;
    for (uint32_t e = b->csr_begin.data[u]; e < b->csr_begin.data[u + 1]; e++) {
      const ag_nfa_edge *ed = &b->csr.data[e];
      uint64_t to = (uint32_t)ed->to;
      bool ok = true;
      if (ed->kind == AG_NFA_BYTES)
        ok = ag_vec_push(&b->events, (uint64_t)ed->lo << 33 | to) &&
             ag_vec_push(&b->events, (uint64_t)(ed->hi + 1) << 33 | (uint64_t)1 << 32 | to);
      else if (ed->kind == AG_NFA_RULE)
        ok = ag_vec_push(&b->moves, (uint64_t)(uint32_t)ed->rule << 32 | to);
      if (!ok) return ag_nomem(b);
    }
  }
  return AG_OK;
}

/* ag_collect_set of DFA state k. This reads the pool, so it runs before
 * anything can be interned (which may move it). */
static ag_status ag_dfa_collect(ag_builder *b, int32_t k, bool *accepting) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1];
  return ag_collect_set(b, b->pool.data + lo, hi - lo, accepting);
}

static ag_status ag_emit_byte_edge(ag_builder *b, uint32_t first, int lo, int hi, int32_t target) {
  ag_byte_edge *last = b->byte_edges.len > first ? &b->byte_edges.data[b->byte_edges.len - 1] : 0;
  if (last && last->target == target && last->hi + 1 == lo) {
    last->hi = (uint8_t)hi; /* adjacent, same target: one range */
    return AG_OK;
  }
  if (b->byte_edges.len >= UINT32_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  ag_byte_edge e = {(uint8_t)lo, (uint8_t)hi, target};
  return ag_vec_push(&b->byte_edges, e) ? AG_OK : ag_nomem(b);
}

static ag_status ag_emit_rule_edge(ag_builder *b, int32_t rule, int32_t target) {
  if (b->rule_edges.len >= UINT32_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  ag_rule_edge e = {rule, target};
  return ag_vec_push(&b->rule_edges, e) ? AG_OK : ag_nomem(b);
}

/* Applies the events at one sweep position: a range opening (+1) or closing
 * (-1) for its target. Openings sort first at a position, so a target cannot
 * close and reopen within one; b->active holds each target at most once. */
static ag_status ag_sweep_apply(ag_builder *b, uint64_t ev) {
  int32_t target = (int32_t)(uint32_t)ev;
  if (ev >> 32 & 1) {
    b->count.data[target]--;
    return AG_OK;
  }
  if (b->count.data[target]++ > 0) return AG_OK;
  return ag_vec_push(&b->active, target) ? AG_OK : ag_nomem(b);
}

/* Drops closed targets from b->active and sorts it. */
static ag_status ag_sweep_compact(ag_builder *b) {
  size_t j = 0;
  for (size_t i = 0; i < b->active.len; i++)
    if (b->count.data[b->active.data[i]] > 0) b->active.data[j++] = b->active.data[i];
  b->active.len = j;
  return ag_sort_states(b, b->active.data, j);
}

static bool ag_sweep_same(const ag_builder *b) {
  return b->prev.len == b->active.len &&
         memcmp(b->prev.data, b->active.data, b->active.len * sizeof *b->active.data) == 0;
}

/* Sorts the sweep events by position, openings first. Only the order of the
 * (position, is_end) key matters, and it has 514 values, so many events
 * (a state inside nested repeats) are bucketed in linear time. */
static ag_status ag_sort_events(ag_builder *b) {
  uint64_t *ev = b->events.data;
  size_t n = b->events.len;
  if (n < 128) {
    ag_sort_u64(ev, n);
    return AG_OK;
  }
  if (!ag_vec_reserve(&b->events_tmp, n)) return ag_nomem(b);
  uint64_t *tmp = b->events_tmp.data;
  size_t cnt[2 * 257 + 1] = {0};
  for (size_t i = 0; i < n; i++) cnt[(ev[i] >> 32) + 1]++;
  for (size_t k = 0; k < 2 * 257; k++) cnt[k + 1] += cnt[k];
  for (size_t i = 0; i < n; i++) tmp[cnt[ev[i] >> 32]++] = ev[i];
  memcpy(ev, tmp, n * sizeof *ev);
  return AG_OK;
}

/* Emits the byte edges of the current DFA state. The range ends split the
 * byte alphabet into intervals on which the set of NFA targets is constant;
 * a sweep over the sorted ends yields each interval's set in O(E log E). */
static ag_status ag_dfa_bytes(ag_builder *b, uint32_t first) {
  uint64_t *ev = b->events.data;
  size_t n = b->events.len, i = 0;
  int32_t prev_target = -1;
  ag_status st = ag_dfa_spend(b, n);
  if (!st) st = ag_sort_events(b);
  if (st) return st;
  b->active.len = b->prev.len = 0;
  while (i < n) {
    int pos = (int)(ev[i] >> 33);
    for (; i < n && (int)(ev[i] >> 33) == pos; i++)
      if ((st = ag_sweep_apply(b, ev[i]))) return st;
    if (i == n) break; /* position 256 or the last end: everything closed */
    int next = (int)(ev[i] >> 33);
    if ((st = ag_dfa_spend(b, b->active.len)) || (st = ag_sweep_compact(b))) return st;
    if (b->active.len == 0) continue;
    /* Neighbouring intervals often have the same targets (a class whose
     * ranges all lead to one state): reuse instead of a new closure. */
    if (prev_target < 0 || !ag_sweep_same(b)) {
      if ((st = ag_dfa_target(b, b->active.data, b->active.len, &prev_target))) return st;
      b->prev.len = 0;
      if (!ag_vec_reserve(&b->prev, b->active.len)) return ag_nomem(b);
      memcpy(b->prev.data, b->active.data, b->active.len * sizeof *b->active.data);
      b->prev.len = b->active.len;
    }
    if ((st = ag_emit_byte_edge(b, first, pos, next - 1, prev_target))) return st;
  }
  return AG_OK;
}

/* Emits the rule edges of the current DFA state, one per rule, sorted by rule. */
static ag_status ag_dfa_rules(ag_builder *b) {
  uint64_t *mv = b->moves.data;
  size_t n = b->moves.len, i = 0;
  ag_sort_u64(mv, n);
  while (i < n) {
    uint32_t rule = (uint32_t)(mv[i] >> 32);
    b->active.len = 0;
    for (; i < n && (uint32_t)(mv[i] >> 32) == rule; i++)
      if (!ag_vec_push(&b->active, (int32_t)(uint32_t)mv[i])) return ag_nomem(b);
    int32_t target = -1;
    ag_status st = ag_dfa_target(b, b->active.data, b->active.len, &target);
    if (!st) st = ag_emit_rule_edge(b, (int32_t)rule, target);
    if (st) return st;
  }
  return AG_OK;
}

/* ---- key tries: the DFA states of trie nodes ---------------------------- */

/* Sweeps way w's closure once: its byte edges, with their DFA targets, into
 * key_rows (interning the targets, as the first trie state's sweep would). A
 * way with rule edges is left to the general path. */
static ag_status ag_key_way_row(ag_builder *b, size_t w) {
  ag_status st = ag_dfa_closure(b, &b->key_ways.data[w].entry, 1);
  size_t at = b->key_sets.len, n = b->closure.len;
  if (!st && !ag_vec_reserve(&b->key_sets, at + n)) st = ag_nomem(b);
  if (st) return st;
  memcpy(b->key_sets.data + at, b->closure.data, n * sizeof *b->closure.data);
  b->key_sets.len = at + n;
  bool accepting = false;
  st = ag_collect_set(b, b->key_sets.data + at, n, &accepting);
  if (st) return st;
  ag_key_way *way = &b->key_ways.data[w];
  way->set_at = (uint32_t)at;
  way->set_n = (uint32_t)n;
  if (b->moves.len || accepting) {
    way->ready = -1;
    return AG_OK;
  }
  size_t first = b->byte_edges.len;
  st = ag_dfa_bytes(b, (uint32_t)first);
  size_t m = b->byte_edges.len - first, row = b->key_rows.len;
  if (!st && !ag_vec_reserve(&b->key_rows, row + m)) st = ag_nomem(b);
  if (st) return st;
  memcpy(b->key_rows.data + row, b->byte_edges.data + first, m * sizeof *b->byte_edges.data);
  b->key_rows.len = row + m;
  b->byte_edges.len = first;
  way = &b->key_ways.data[w];
  way->row_at = (uint32_t)row;
  way->row_n = (uint32_t)m;
  way->ready = 1;
  return AG_OK;
}

/* The trie node u of DFA state k's set when the set is exactly u and the
 * closure of u's way out (*way), else -1. */
static int32_t ag_key_node_of(ag_builder *b, int32_t k, int32_t *way) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1];
  int32_t u = -1;
  for (size_t i = lo; i < hi; i++) {
    int32_t x = b->pool.data[i];
    if (b->nfa_way.data[x] < 0) continue;
    if (u >= 0) return -1; /* two trie nodes: some other path joined */
    u = x;
  }
  if (u >= 0) *way = b->nfa_way.data[u];
  return u;
}

static bool ag_key_set_is(ag_builder *b, int32_t k, int32_t u, const ag_key_way *w) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1];
  if (hi - lo != (size_t)w->set_n + 1) return false;
  uint32_t gen = ag_mark_next(b);
  for (uint32_t i = 0; i < w->set_n; i++) b->mark.data[b->key_sets.data[w->set_at + i]] = gen;
  for (size_t i = lo; i < hi; i++)
    if (b->pool.data[i] != u && b->mark.data[b->pool.data[i]] != gen) return false;
  return true;
}

static void ag_sort_edges_by_lo(ag_byte_edge *v, size_t n) {
  for (size_t i = 1; i < n; i++) {
    ag_byte_edge x = v[i];
    size_t j = i;
    for (; j > 0 && v[j - 1].lo > x.lo; j--) v[j] = v[j - 1];
    v[j] = x;
  }
}

/* The next of two edge lists sorted by lo, merged in byte order; NULL past both. */
static const ag_byte_edge *ag_key_next(const ag_byte_edge *a, size_t n_a, size_t *i,
                                       const ag_byte_edge *b, size_t n_b, size_t *j) {
  if (*i < n_a && (*j == n_b || a[*i].lo < b[*j].lo)) return &a[(*i)++];
  return *j < n_b ? &b[(*j)++] : NULL;
}

/* The byte edges of DFA state k when it is a trie node's (ag_key_node_of): the
 * node's own (name bytes to its children, the quote, raw bytes to the tail),
 * each to the DFA state of its one target, beside the way's row, in byte order.
 * The two are disjoint (a name byte is plain ASCII; a way starts with a wide
 * byte or a backslash), so the sweep would find exactly these; *done false
 * leaves k to it. */
static ag_status ag_key_state(ag_builder *b, int32_t k, uint32_t first, bool *done) {
  int32_t w = -1, u = ag_key_node_of(b, k, &w);
  *done = false;
  if (u < 0) return AG_OK;
  ag_status st = b->key_ways.data[w].ready == 0 ? ag_key_way_row(b, (size_t)w) : AG_OK;
  if (st || b->key_ways.data[w].ready < 0 || !ag_key_set_is(b, k, u, &b->key_ways.data[w])) return st;
  b->key_own.len = 0;
  for (uint32_t e = b->csr_begin.data[u]; e < b->csr_begin.data[u + 1]; e++) {
    const ag_nfa_edge *ed = &b->csr.data[e];
    if (ed->kind == AG_NFA_RULE) return AG_OK;
    ag_byte_edge own = {ed->lo, ed->hi, ed->to};
    if (ed->kind == AG_NFA_BYTES && !ag_vec_push(&b->key_own, own)) return ag_nomem(b);
  }
  ag_byte_edge *own = b->key_own.data;
  size_t n_own = b->key_own.len, i = 0, j = 0;
  const ag_key_way *way = &b->key_ways.data[w];
  const ag_byte_edge *row = b->key_rows.data + way->row_at, *e;
  ag_sort_edges_by_lo(own, n_own);
  /* disjoint (checked before anything is interned), else the sweep decides */
  for (int prev_hi = -1; (e = ag_key_next(own, n_own, &i, row, way->row_n, &j)); prev_hi = e->hi)
    if (e->lo <= prev_hi) return AG_OK;
  st = ag_dfa_spend(b, (uint64_t)way->set_n + 1 + n_own + way->row_n);
  for (i = 0; !st && i < n_own; i++) {
    int32_t seed = own[i].target; /* the NFA state the edge leads to */
    st = ag_dfa_target(b, &seed, 1, &own[i].target);
  }
  for (i = j = 0; !st && (e = ag_key_next(own, n_own, &i, row, way->row_n, &j));)
    st = ag_emit_byte_edge(b, first, e->lo, e->hi, e->target);
  *done = !st;
  return st;
}

/* The most edges ag_disjoint_state takes: past it, the sweep. */
#define AG_DISJOINT_MAX_EDGES 12

/* The edges of DFA state k when its NFA states' byte ranges are disjoint and
 * they have at most one rule edge: each edge then leads to the DFA state of
 * its own target. Most states of a schema's automaton are like this: inside
 * a literal (a key, a colon), one byte to the next; in a string, its
 * character ranges beside the closing quote. The sweep, sorting events and
 * target sets, would find exactly these edges. Targets are interned in the
 * sweep's order (bytes by position, then the rule), so the automaton is the
 * same state for state. Epsilon edges are skipped: a closure holds their
 * targets already. *done false leaves k to the sweep. */
static ag_status ag_disjoint_state(ag_builder *b, int32_t k, ag_state *s, bool *done) {
  size_t lo = b->set_begin.data[k], hi = b->set_begin.data[k + 1], n = 0;
  ag_byte_edge own[AG_DISJOINT_MAX_EDGES];
  const ag_nfa_edge *rule = NULL;
  bool accepting = false;
  uint64_t scanned = hi - lo;
  *done = false;
  for (size_t i = lo; i < hi; i++) {
    int32_t u = b->pool.data[i];
    uint32_t e0 = b->csr_begin.data[u], e1 = b->csr_begin.data[u + 1];
    accepting |= u == 1; /* the NFA's accepting state */
    scanned += e1 - e0;
    for (uint32_t e = e0; e < e1; e++) {
      const ag_nfa_edge *ed = &b->csr.data[e];
      if (ed->kind == AG_NFA_RULE) {
        if (rule) return AG_OK; /* two rule edges: the sweep groups them by rule */
        rule = ed;
      } else if (ed->kind == AG_NFA_BYTES) {
        if (n == AG_DISJOINT_MAX_EDGES) return AG_OK;
        own[n++] = (ag_byte_edge){ed->lo, ed->hi, ed->to};
      }
    }
  }
  ag_sort_edges_by_lo(own, n);
  for (size_t i = 1; i < n; i++)
    if (own[i].lo <= own[i - 1].hi) return AG_OK; /* overlapping: the sweep splits them */
  ag_status st = ag_dfa_spend(b, scanned); /* as ag_collect_set counts */
  for (size_t i = 0; !st && i < n; i++) {
    int32_t seed = own[i].target, target = -1;
    st = ag_dfa_target(b, &seed, 1, &target);
    if (!st) st = ag_emit_byte_edge(b, s->byte_begin, own[i].lo, own[i].hi, target);
  }
  if (!st && rule) {
    int32_t seed = rule->to, target = -1;
    st = ag_dfa_target(b, &seed, 1, &target);
    if (!st) st = ag_emit_rule_edge(b, rule->rule, target);
  }
  s->accepting = accepting;
  *done = !st;
  return st;
}

/* Computes the edges of local DFA state k and appends the state. States are
 * processed in id order, so state k's edges are contiguous. */
static ag_status ag_dfa_state(ag_builder *b, int32_t k) {
  ag_state s = {(uint32_t)b->byte_edges.len, 0, (uint32_t)b->rule_edges.len, 0, false, false};
  bool done = false, disjoint = false;
  ag_status st = b->key_ways.len ? ag_key_state(b, k, s.byte_begin, &done) : AG_OK;
  if (!st && !done) st = ag_disjoint_state(b, k, &s, &disjoint);
  if (!st && !done && !disjoint) {
    st = ag_dfa_collect(b, k, &s.accepting);
    if (!st) st = ag_dfa_bytes(b, s.byte_begin);
    if (!st) st = ag_dfa_rules(b);
  }
  if (st) return st;
  s.byte_end = (uint32_t)b->byte_edges.len;
  s.rule_end = (uint32_t)b->rule_edges.len;
  if (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, b->rule_id)) return ag_nomem(b);
  if (b->key_ways.len && !ag_vec_push(&b->key_merge, (uint8_t)!done)) return ag_nomem(b);
  return AG_OK;
}

/* Determinizes the current NFA; the start state gets the global id b->base. */
static ag_status ag_dfa_build(ag_builder *b) {
  int32_t start = 0, target;
  b->base = (int32_t)b->states.len;
  b->pool.len = b->set_hash.len = b->set_begin.len = b->key_merge.len = 0;
  b->dfa_work = 0;
  b->table_gen++;
  b->seed_len = b->seed_pool.len = 0;
  if (++b->seed_gen == 0) { /* wrapped: forget every old slot */
    if (b->seed_table) memset(b->seed_table, 0, b->seed_cap * sizeof *b->seed_table);
    b->seed_gen = 1;
  }
  if (!ag_vec_push(&b->set_begin, (size_t)0)) return ag_nomem(b);
  ag_status st = ag_dfa_target(b, &start, 1, &target);
  for (size_t k = 0; !st && k < b->set_hash.len; k++) st = ag_dfa_state(b, (int32_t)k);
  return st;
}

/* ---- minimization --------------------------------------------------------
 * Subset construction leaves equivalent states behind, e.g. one state per
 * UTF-8 byte sequence of a class even where the sequences share their tails,
 * and downstream work (Earley items, per-state token masks) scales with the
 * state count. States with the same acceptance and the same edges, up to
 * targets already merged, are merged until a round changes nothing. Each
 * merge preserves every state's language, so this is always sound. It
 * reaches the minimal automaton on acyclic parts, in one round there: states
 * are visited in depth-first postorder, every target before its sources but
 * where a cycle closes (reverse breadth-first order, used before, met a
 * target first only along tree edges and took three or four rounds where
 * paths of different lengths join). Equivalent states on distinct cycles may
 * stay apart, which is harmless.
 */

static int32_t ag_min_find(int32_t *rep, int32_t s) {
  while (rep[s] != s) s = rep[s] = rep[rep[s]]; /* path halving */
  return s;
}

/* Appends local state s's signature to b->sig: acceptance, the byte edges
 * with each target replaced by its class (re-merging ranges that now meet),
 * a -1 separator (no byte is negative), then the rule edges likewise. */
static ag_status ag_min_signature(ag_builder *b, int32_t s, uint32_t *len) {
  const ag_state *st = &b->states.data[b->base + s];
  size_t need = 2 + 3 * (size_t)(st->byte_end - st->byte_begin) +
                2 * (size_t)(st->rule_end - st->rule_begin);
  if (!ag_vec_reserve(&b->sig, b->sig.len + need)) return ag_nomem(b);
  int32_t *w = b->sig.data + b->sig.len, *rep = b->rep.data, *rank = b->rank.data;
  uint32_t *watch = b->watch.data, gen = b->min_gen;
  size_t n = 0;
  w[n++] = st->accepting;
  for (uint32_t e = st->byte_begin; e < st->byte_end; e++) {
    const ag_byte_edge *be = &b->byte_edges.data[e];
    int32_t t = ag_min_find(rep, be->target - b->base);
    if (rank[t] > rank[s]) watch[t] = gen;
    if (n > 1 && w[n - 1] == t && w[n - 2] + 1 == be->lo) {
      w[n - 2] = be->hi;
    } else {
      w[n++] = be->lo;
      w[n++] = be->hi;
      w[n++] = t;
    }
  }
  w[n++] = -1;
  for (uint32_t e = st->rule_begin; e < st->rule_end; e++) {
    int32_t t = ag_min_find(rep, b->rule_edges.data[e].target - b->base);
    if (rank[t] > rank[s]) watch[t] = gen;
    w[n++] = b->rule_edges.data[e].rule;
    w[n++] = t;
  }
  *len = (uint32_t)n;
  b->sig.len += n;
  return AG_OK;
}

/* The table slot holding a representative with the signature w, or the
 * empty slot where it belongs. */
static size_t ag_min_lookup(const ag_builder *b, const int32_t *w, uint32_t n, uint32_t h) {
  size_t mask = b->table_cap - 1, i = h & mask;
  for (; b->table[i].gen == b->table_gen; i = (i + 1) & mask) {
    const ag_min_sig *o = &b->sigs.data[b->table[i].id];
    if (o->hash == h && o->len == n && !memcmp(b->sig.data + o->at, w, n * sizeof *w)) break;
  }
  return i;
}

/* One round over the k states: each representative either joins an earlier
 * one with the same signature or becomes a class of its own. With `only`, the
 * states it marks 0 (known to be equivalent to no other) are left as they are.
 * `again` says whether another round may merge more: only when a state merged
 * after a signature read its class (watch). Otherwise every signature of this
 * round still holds, and those of the classes left all differ. */
static ag_status ag_min_round(ag_builder *b, int32_t k, const uint8_t *only, bool *merged,
                              bool *again) {
  b->table_gen++;
  b->sig.len = 0;
  if (++b->min_gen == 0) { /* wrapped: forget every old mark */
    memset(b->watch.data, 0, b->watch.len * sizeof *b->watch.data);
    b->min_gen = 1;
  }
  for (int32_t i = 0; i < k; i++) {
    int32_t s = b->post.data[i];
    if (b->rep.data[s] != s || (only && !only[s])) continue;
    size_t at = b->sig.len;
    uint32_t n = 0;
    ag_status st = ag_min_signature(b, s, &n);
    if (st) return st;
    uint32_t h = ag_set_hash(b->sig.data + at, n);
    size_t i = ag_min_lookup(b, b->sig.data + at, n, h);
    if (b->table[i].gen == b->table_gen) {
      b->rep.data[s] = b->table[i].id;
      b->sig.len = at;
      *merged = true;
      *again |= b->watch.data[s] == b->min_gen;
    } else {
      b->table[i].gen = b->table_gen;
      b->table[i].id = s;
      b->sigs.data[s] = (ag_min_sig){at, n, h};
    }
  }
  return AG_OK;
}

/* Gives the class of old global state t the next new id, once. */
static void ag_min_visit(ag_builder *b, int32_t t) {
  int32_t c = ag_min_find(b->rep.data, t - b->base);
  if (b->new_id.data[c] >= 0) return;
  b->new_id.data[c] = (int32_t)b->order.len;
  b->order.data[b->order.len++] = c;
}

/* Numbers the classes breadth-first from the start's class, byte edges
 * before rule edges like the subset construction: the numbering stays
 * canonical and the start stays first. Every class is reached, since every
 * DFA state was reachable from the start. */
static void ag_min_order(ag_builder *b, int32_t k) {
  for (int32_t s = 0; s < k; s++) b->new_id.data[s] = -1;
  b->order.len = 0;
  ag_min_visit(b, b->base);
  for (size_t i = 0; i < b->order.len; i++) {
    const ag_state *st = &b->states.data[b->base + b->order.data[i]];
    for (uint32_t e = st->byte_begin; e < st->byte_end; e++)
      ag_min_visit(b, b->byte_edges.data[e].target);
    for (uint32_t e = st->rule_begin; e < st->rule_end; e++)
      ag_min_visit(b, b->rule_edges.data[e].target);
  }
}

/* The new global id of the class of old global state t. */
static int32_t ag_min_target(ag_builder *b, int32_t t) {
  return b->base + b->new_id.data[ag_min_find(b->rep.data, t - b->base)];
}

/* Writes class s (old local id) as a state into the tmp arrays, with
 * retargeted edges and re-merged byte ranges. */
static ag_status ag_min_emit(ag_builder *b, int32_t s, uint32_t first_b, uint32_t first_r) {
  const ag_state *old = &b->states.data[b->base + s];
  ag_state ns = {first_b + (uint32_t)b->tmp_bytes.len, 0, first_r + (uint32_t)b->tmp_rules.len, 0,
                 old->accepting, false};
  size_t b0 = b->tmp_bytes.len;
  for (uint32_t e = old->byte_begin; e < old->byte_end; e++) {
    ag_byte_edge be = b->byte_edges.data[e];
    be.target = ag_min_target(b, be.target);
    ag_byte_edge *last = b->tmp_bytes.len > b0 ? &b->tmp_bytes.data[b->tmp_bytes.len - 1] : 0;
    if (last && last->target == be.target && last->hi + 1 == be.lo)
      last->hi = be.hi;
    else if (!ag_vec_push(&b->tmp_bytes, be))
      return ag_nomem(b);
  }
  for (uint32_t e = old->rule_begin; e < old->rule_end; e++) {
    ag_rule_edge re = b->rule_edges.data[e];
    re.target = ag_min_target(b, re.target);
    if (!ag_vec_push(&b->tmp_rules, re)) return ag_nomem(b);
  }
  ns.byte_end = first_b + (uint32_t)b->tmp_bytes.len;
  ns.rule_end = first_r + (uint32_t)b->tmp_rules.len;
  return ag_vec_push(&b->tmp_states, ns) ? AG_OK : ag_nomem(b);
}

/* Replaces the rule's states and edges (the tails of the output arrays) by
 * the quotient automaton. It is never larger, so copying back cannot fail. */
static ag_status ag_min_rebuild(ag_builder *b, int32_t k) {
  uint32_t first_b = b->states.data[b->base].byte_begin;
  uint32_t first_r = b->states.data[b->base].rule_begin;
  b->tmp_states.len = b->tmp_bytes.len = b->tmp_rules.len = 0;
  ag_min_order(b, k);
  for (size_t i = 0; i < b->order.len; i++) {
    ag_status st = ag_min_emit(b, b->order.data[i], first_b, first_r);
    if (st) return st;
  }
  memcpy(b->states.data + b->base, b->tmp_states.data, b->tmp_states.len * sizeof(ag_state));
  b->states.len = b->state_rule.len = (size_t)b->base + b->tmp_states.len;
  if (b->tmp_bytes.len)
    memcpy(b->byte_edges.data + first_b, b->tmp_bytes.data, b->tmp_bytes.len * sizeof(ag_byte_edge));
  b->byte_edges.len = first_b + b->tmp_bytes.len;
  if (b->tmp_rules.len)
    memcpy(b->rule_edges.data + first_r, b->tmp_rules.data, b->tmp_rules.len * sizeof(ag_rule_edge));
  b->rule_edges.len = first_r + b->tmp_rules.len;
  return AG_OK;
}

/* Grows the interning table to at least 2 * k slots (load factor <= 1/2). */
static ag_status ag_min_table(ag_builder *b, size_t k) {
  size_t cap = b->table_cap;
  while (cap < 2 * k) cap *= 2;
  if (cap == b->table_cap) return AG_OK;
  ag_dfa_slot *t = calloc(cap, sizeof *t);
  if (!t) return ag_nomem(b);
  free(b->table);
  b->table = t;
  b->table_cap = cap;
  return AG_OK;
}

/* The target of edge i of local state s (byte edges, then rule edges), local;
 * -1 past its last edge. */
static int32_t ag_min_edge(const ag_builder *b, int32_t s, uint32_t i) {
  const ag_state *st = &b->states.data[b->base + s];
  uint32_t nb = st->byte_end - st->byte_begin;
  if (i < nb) return b->byte_edges.data[st->byte_begin + i].target - b->base;
  if (i - nb >= st->rule_end - st->rule_begin) return -1;
  return b->rule_edges.data[st->rule_begin + i - nb].target - b->base;
}

/* Runs the depth-first search on b->dfs to its end, appending each state to
 * post (and its rank) once every edge out of it is done. */
static void ag_min_dfs(ag_builder *b) {
  int32_t *rank = b->rank.data;
  while (b->dfs.len) {
    uint64_t top = b->dfs.data[b->dfs.len - 1];
    int32_t s = (int32_t)(top >> 32), t;
    uint32_t i = (uint32_t)top;
    while ((t = ag_min_edge(b, s, i)) >= 0 && rank[t] != -1) i++;
    if (t < 0) { /* every edge done: s is finished */
      b->dfs.len--;
      rank[s] = (int32_t)b->post.len;
      b->post.data[b->post.len++] = s;
      continue;
    }
    b->dfs.data[b->dfs.len - 1] = ((uint64_t)s << 32) | (i + 1);
    rank[t] = -2;
    b->dfs.data[b->dfs.len++] = (uint64_t)t << 32;
  }
}

/* Orders the k local states in depth-first postorder (post), each with its
 * index (rank): from the start, which reaches every state, then from any
 * state left, to be safe. */
static ag_status ag_min_postorder(ag_builder *b, int32_t k) {
  if (!ag_vec_reserve(&b->post, (size_t)k) || !ag_vec_reserve(&b->rank, (size_t)k) ||
      !ag_vec_reserve(&b->dfs, (size_t)k))
    return ag_nomem(b);
  int32_t *rank = b->rank.data;
  for (int32_t s = 0; s < k; s++) rank[s] = -1; /* -1 unseen, -2 on the stack */
  b->post.len = b->dfs.len = 0;
  for (int32_t root = 0; root < k; root++) {
    if (rank[root] != -1) continue;
    rank[root] = -2;
    b->dfs.data[b->dfs.len++] = (uint64_t)root << 32;
    ag_min_dfs(b);
  }
  return AG_OK;
}

/* Minimizes the rule just determinized (states base .. end of the arrays), in
 * at most max_rounds rounds, merging only states that `only` marks (NULL: all). */
static ag_status ag_min_rule(ag_builder *b, int max_rounds, const uint8_t *only) {
  size_t k = b->states.len - (size_t)b->base;
  if (k < 2) return AG_OK;
  if (!ag_vec_reserve(&b->rep, k) || !ag_vec_reserve(&b->sigs, k) ||
      !ag_vec_reserve(&b->order, k) || !ag_vec_reserve(&b->new_id, k))
    return ag_nomem(b);
  if (b->watch.len < k) { /* new marks start unset: below every generation */
    if (!ag_vec_reserve(&b->watch, k)) return ag_nomem(b);
    memset(b->watch.data + b->watch.len, 0, (k - b->watch.len) * sizeof *b->watch.data);
    b->watch.len = k;
  }
  ag_status st = ag_min_table(b, k);
  if (!st) st = ag_min_postorder(b, (int32_t)k);
  for (size_t s = 0; s < k; s++) b->rep.data[s] = (int32_t)s;
  bool any = false, again = true;
  for (int round = 0; !st && again && round < max_rounds; round++) {
    bool merged = false;
    again = false;
    st = ag_min_round(b, (int32_t)k, only, &merged, &again);
    any |= merged;
  }
  return st || !any ? st : ag_min_rebuild(b, (int32_t)k);
}

/* ---- driver ------------------------------------------------------------- */

static void ag_builder_free(ag_builder *b) {
  free(b->inline_cost);
  free(b->node_size);
  free(b->counted);
  free(b->node_rule);
  ag_vec_free(&b->hidden);
  ag_vec_free(&b->rule_start);
  free(b->stub);
  ag_vec_free(&b->bounds);
  ag_vec_free(&b->tasks);
  free(b->share);
  ag_vec_free(&b->edges);
  ag_vec_free(&b->csr);
  ag_vec_free(&b->csr_begin);
  ag_vec_free(&b->pool);
  ag_vec_free(&b->set_begin);
  ag_vec_free(&b->set_hash);
  free(b->table);
  free(b->seed_table);
  ag_vec_free(&b->seed_pool);
  ag_vec_free(&b->mark);
  ag_vec_free(&b->count);
  ag_vec_free(&b->stack);
  ag_vec_free(&b->closure);
  ag_vec_free(&b->radix);
  ag_vec_free(&b->active);
  ag_vec_free(&b->prev);
  ag_vec_free(&b->events);
  ag_vec_free(&b->events_tmp);
  ag_vec_free(&b->moves);
  ag_vec_free(&b->rep);
  ag_vec_free(&b->watch);
  ag_vec_free(&b->sig);
  ag_vec_free(&b->sigs);
  ag_vec_free(&b->order);
  ag_vec_free(&b->new_id);
  ag_vec_free(&b->post);
  ag_vec_free(&b->rank);
  ag_vec_free(&b->dfs);
  ag_vec_free(&b->tmp_states);
  ag_vec_free(&b->tmp_bytes);
  ag_vec_free(&b->tmp_rules);
  ag_vec_free(&b->key_ways);
  ag_vec_free(&b->key_nodes);
  ag_vec_free(&b->nfa_way);
  ag_vec_free(&b->key_sets);
  ag_vec_free(&b->key_rows);
  ag_vec_free(&b->key_own);
  ag_vec_free(&b->key_merge);
  ag_trie_free(&b->trie);
  ag_vec_free(&b->trie_rules);
  ag_vec_free(&b->states);
  ag_vec_free(&b->state_rule);
  ag_vec_free(&b->byte_edges);
  ag_vec_free(&b->rule_edges);
}

/* Shrinks a finished output array to its length; keeps the old block when
 * realloc fails, since it is still valid. */
static void *ag_shrink(void *data, size_t len, size_t elem) {
  if (!data || len == 0) {
    free(data);
    return NULL;
  }
  void *p = realloc(data, len * elem);
  return p ? p : data;
}

/* Moves the finished arrays into g; the builder no longer owns them. */
static ag_status ag_builder_hand_over(ag_builder *b, ag_grammar *g) {
  size_t n_rules = b->rule_start.len, n_ir = (size_t)b->ir->n_rules;
  g->rule_nullable = calloc(n_rules, sizeof *g->rule_nullable);
  g->rule_repeat = calloc(n_rules, sizeof *g->rule_repeat);
  g->rule_trie = calloc(n_rules ? n_rules : 1, sizeof *g->rule_trie);
  g->rule_stub = calloc(n_rules ? n_rules : 1, sizeof *g->rule_stub);
  if (!g->rule_nullable || !g->rule_repeat || !g->rule_trie || !g->rule_stub) return ag_nomem(b);
  for (size_t k = 0; k < b->trie_rules.len; k++) g->rule_trie[b->trie_rules.data[k]] = true;
  if (n_ir) memcpy(g->rule_stub, b->stub, n_ir * sizeof *g->rule_stub);
  if (b->bounds.len) memcpy(g->rule_repeat + n_ir, b->bounds.data, b->bounds.len * sizeof *b->bounds.data);
  g->n_rules = (int32_t)n_rules;
  g->n_ir_rules = (int32_t)n_ir;
  g->rule_start = b->rule_start.data;
  g->n_states = (int32_t)b->states.len;
  g->states = ag_shrink(b->states.data, b->states.len, sizeof *b->states.data);
  g->state_rule = ag_shrink(b->state_rule.data, b->state_rule.len, sizeof *b->state_rule.data);
  g->n_byte_edges = (uint32_t)b->byte_edges.len;
  g->byte_edges = ag_shrink(b->byte_edges.data, b->byte_edges.len, sizeof *b->byte_edges.data);
  g->n_rule_edges = (uint32_t)b->rule_edges.len;
  g->rule_edges = ag_shrink(b->rule_edges.data, b->rule_edges.len, sizeof *b->rule_edges.data);
  memset(&b->rule_start, 0, sizeof b->rule_start);
  memset(&b->states, 0, sizeof b->states);
  memset(&b->state_rule, 0, sizeof b->state_rule);
  memset(&b->byte_edges, 0, sizeof b->byte_edges);
  memset(&b->rule_edges, 0, sizeof b->rule_edges);
  return AG_OK;
}

/* Appends one state of the counted rule being built: no byte edge, one rule
 * edge over the child to `target`. */
static ag_status ag_counted_state(ag_builder *b, bool accepting, int32_t child, int32_t target) {
  if (b->states.len >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule,
                   "the grammar's automata need more than %d states", AG_MAX_STATES);
  if (b->rule_edges.len >= UINT32_MAX)
    return ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  uint32_t nb = (uint32_t)b->byte_edges.len, nr = (uint32_t)b->rule_edges.len;
  ag_state s = {nb, nb, nr, nr + 1, accepting, true};
  ag_rule_edge e = {child, target};
  if (!ag_vec_push(&b->rule_edges, e) || !ag_vec_push(&b->states, s) ||
      !ag_vec_push(&b->state_rule, b->rule_id))
    return ag_nomem(b);
  return AG_OK;
}

/* The counted rule of repeat node `node` (see ag_repeat_bounds): C* as one
 * state when min is 0, else C+ as a start and a looping accepting state. */
static ag_status ag_counted_build(ag_builder *b, int32_t node) {
  const int32_t *p = ag_ir_node(b->ir, node);
  const int32_t *c = ag_ir_node(b->ir, p[1]);
  int32_t child = c[1], min = p[2];
  ag_status st = c[0] == AG_NODE_RULEREF ? AG_OK : ag_hidden_rule(b, p[1], &child);
  ag_repeat_bounds bounds = {min, p[3]};
  if (!st && !ag_vec_push(&b->bounds, bounds)) st = ag_nomem(b);
  b->base = (int32_t)b->states.len;
  if (!st) st = ag_counted_state(b, min == 0, child, min == 0 ? b->base : b->base + 1);
  if (!st && min > 0) st = ag_counted_state(b, true, child, b->base + 1);
  return st;
}

/* ---- literal tries ------------------------------------------------------ */

/* Alternative `node` as a trie entry: a literal, alone or followed by a rule
 * edge (a reference that is not inlined). False for any other shape. */
static bool ag_trie_entry_of(const ag_builder *b, int32_t node, ag_trie_entry *out) {
  const int32_t *p = ag_ir_node(b->ir, node), *ref = NULL;
  if (p[0] == AG_NODE_SEQ) {
    if (p[1] != 2) return false;
    ref = ag_ir_node(b->ir, p[3]);
    p = ag_ir_node(b->ir, p[2]);
    if (ref[0] != AG_NODE_RULEREF || ag_inline_cost(b, ref[1])) return false;
  }
  if (p[0] != AG_NODE_LITERAL || p[1] < 1) return false;
  ag_trie_entry e = {p + 2, p[1], ref ? ref[1] : -1};
  *out = e;
  return true;
}

/* Whether body `node` is a choice of two or more trie entries; fills b->trie.entries
 * (the builder keeps their memory from rule to rule). */
static ag_status ag_trie_shape(ag_builder *b, int32_t node, bool *is_trie) {
  const int32_t *p = ag_ir_node(b->ir, node);
  ag_trie_entry e;
  *is_trie = false;
  if (p[0] == AG_NODE_SWITCH && p[1] >= 2) { /* words are non-empty (ag_ir.c) */
    b->trie.entries.len = 0;
    const int32_t *w = p + 2;
    for (int32_t k = 0; k < p[1]; k++, w += 2 + w[1]) {
      if (ag_inline_cost(b, w[0])) return AG_OK;
      ag_trie_entry we = {w + 2, w[1], w[0]};
      if (!ag_vec_push(&b->trie.entries, we)) return ag_nomem(b);
    }
    *is_trie = true;
    return AG_OK;
  }
  if (p[0] != AG_NODE_CHOICE || p[1] < 2) return AG_OK;
  b->trie.entries.len = 0;
  for (int32_t k = 0; k < p[1]; k++) {
    if (!ag_trie_entry_of(b, p[2 + k], &e)) return AG_OK;
    if (!ag_vec_push(&b->trie.entries, e)) return ag_nomem(b);
  }
  *is_trie = true;
  return AG_OK;
}

/* Builds the rule from b->trie.entries: the states that subset construction
 * of their NFA would give (ag_trie.h), so minimization merges the rest. */
static ag_status ag_trie_rule(ag_builder *b) {
  ag_trie *t = &b->trie;
  b->base = (int32_t)b->states.len;
  ag_status st = ag_trie_build(t, AG_MAX_STATES - b->base, b->rule, b->err);
  if (!st && b->rule_edges.len + t->rules.len >= UINT32_MAX)
    st = ag_fail(b->err, AG_ERR_LIMIT, b->rule, "the grammar's automata have too many edges");
  for (size_t k = 0; !st && k < t->states.len; k++) {
    const ag_trie_state *ts = &t->states.data[k];
    ag_state s = {(uint32_t)b->byte_edges.len, 0, (uint32_t)b->rule_edges.len, 0, ts->accepting, false};
    for (uint32_t e = ts->edge_begin; !st && e < ts->edge_end; e++) {
      const ag_trie_edge *te = &t->edges.data[e];
      st = ag_emit_byte_edge(b, s.byte_begin, te->byte, te->byte, b->base + te->target);
    }
    for (uint32_t r = ts->rule_begin; !st && r < ts->rule_end; r++) {
      ag_rule_edge re = {t->rules.data[r], b->base + t->final};
      if (!ag_vec_push(&b->rule_edges, re)) st = ag_nomem(b);
    }
    s.byte_end = (uint32_t)b->byte_edges.len;
    s.rule_end = (uint32_t)b->rule_edges.len;
    if (!st && (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, b->rule_id)))
      st = ag_nomem(b);
  }
  return st;
}

/* Builds rule body `node` into states, its start at b->base. */
static ag_status ag_rule_build(ag_builder *b, int32_t node) {
  bool is_trie = false;
  ag_status st = ag_trie_shape(b, node, &is_trie);
  if (is_trie) {
    /* One round is exact: visited in postorder, a trie state's byte edges
     * lead to states merged already, or to ends, which never merge
     * (each has its own rules or acceptance, and no byte edge). Only the
     * states that may have another's language are compared (ag_trie.h). */
    if (!st) st = ag_trie_rule(b);
    if (!st && !ag_vec_push(&b->trie_rules, b->rule_id)) st = ag_nomem(b);
    if (!st && memchr(b->trie.may_merge.data, 1, b->trie.may_merge.len))
      st = ag_min_rule(b, 1, b->trie.may_merge.data);
  } else if (!st) {
    st = ag_nfa_build(b, node);
    if (!st) st = ag_nfa_index(b);
    if (!st) st = ag_dfa_build(b);
    /* A trie node's state is the only one with its subtrie (ag_key_merge) and
     * has a way's many edges: not compared, it saves most of minimizing a key trie. */
    if (!st) st = ag_min_rule(b, AG_MIN_MAX_ROUNDS, b->key_ways.len ? b->key_merge.data : NULL);
  }
  return st;
}

/* Builds hidden rule k (its id follows the IR rules'). */
static ag_status ag_hidden_one(ag_builder *b, size_t k) {
  ag_hidden h = b->hidden.data[k];
  ag_repeat_bounds none = {0, 0};
  b->rule = h.owner;
  b->rule_id = b->ir->n_rules + (int32_t)k;
  ag_status st;
  if (b->counted[h.node]) {
    st = ag_counted_build(b, h.node);
  } else {
    st = ag_rule_build(b, h.node);
    if (!st && !ag_vec_push(&b->bounds, none)) st = ag_nomem(b);
  }
  if (!st && !ag_vec_push(&b->rule_start, b->base)) st = ag_nomem(b);
  return st;
}

/* Queues the IR rules that the rule edges from index `from` on name, each once
 * (rule_start -2: queued). Part rules and hidden rules are labelled past the
 * IR rules: the former are built already, the latter in order of creation. */
static void ag_queue_named(ag_builder *b, size_t from, int32_t *queue, size_t *tail) {
  for (size_t e = from; e < b->rule_edges.len; e++) {
    int32_t r = b->rule_edges.data[e].rule;
    if (r < b->ir->n_rules && b->rule_start.data[r] == -1) {
      b->rule_start.data[r] = -2;
      queue[(*tail)++] = r;
    }
  }
}

/* A rule that no automaton names gets a bare start state and no automaton. */
static ag_status ag_stub_rule(ag_builder *b, int32_t r) {
  if (b->states.len >= AG_MAX_STATES)
    return ag_fail(b->err, AG_ERR_LIMIT, r, "the grammar's automata need more than %d states",
                   AG_MAX_STATES);
  uint32_t nb = (uint32_t)b->byte_edges.len, nr = (uint32_t)b->rule_edges.len;
  ag_state s = {nb, nb, nr, nr, false, false};
  b->rule_start.data[r] = (int32_t)b->states.len;
  b->stub[r] = true;
  if (!ag_vec_push(&b->states, s) || !ag_vec_push(&b->state_rule, r)) return ag_nomem(b);
  return AG_OK;
}

/* Builds the rules the root needs: the root, every rule an automaton built so
 * far names (a rule edge), and the hidden rules they make. A small rule made of
 * bytes alone is inlined wherever it is referenced (ag_nfa_ruleref), so no edge
 * may name it: a JSON string's characters, its escapes, whitespace, a number.
 * Its own automaton would serve nothing, and building those was a fifth of
 * loading a typical JSON Schema grammar; it keeps a bare start (b->stub), which
 * analysis finds unproductive and nothing reaches. */
static ag_status ag_rules_build(ag_builder *b) {
  int32_t n = b->ir->n_rules;
  int32_t *queue = malloc(sizeof *queue * (size_t)(n ? n : 1));
  b->stub = calloc((size_t)(n ? n : 1), sizeof *b->stub);
  if (!queue || !b->stub || !ag_vec_reserve(&b->rule_start, (size_t)n)) {
    free(queue);
    return ag_nomem(b);
  }
  for (int32_t r = 0; r < n; r++) b->rule_start.data[r] = -1;
  b->rule_start.len = (size_t)n;
  size_t head = 0, tail = 0, hidden = 0;
  ag_status st = AG_OK;
  b->rule_start.data[b->ir->root] = -2;
  queue[tail++] = b->ir->root;
  while (!st && (head < tail || hidden < b->hidden.len)) {
    size_t first_edge = b->rule_edges.len;
    if (head < tail) {
      int32_t r = queue[head++];
      b->rule = b->rule_id = r;
      st = ag_rule_build(b, b->ir->body[r]);
      if (!st) b->rule_start.data[r] = b->base;
    } else {
      st = ag_hidden_one(b, hidden++);
    }
    if (!st) ag_queue_named(b, first_edge, queue, &tail);
  }
  for (int32_t r = 0; !st && r < n; r++)
    if (b->rule_start.data[r] == -1) st = ag_stub_rule(b, r);
  free(queue);
  return st;
}

/* Room for a typical grammar in the vectors every rule uses: grown from nothing,
 * they took over a hundred reallocations per grammar, a few percent of building
 * it. The output arrays are shrunk to their length when handed over. */
static ag_status ag_builder_reserve(ag_builder *b) {
  const size_t n = 256, out = 1024;
  bool ok = ag_vec_reserve(&b->tasks, n) && ag_vec_reserve(&b->edges, n) &&
            ag_vec_reserve(&b->csr, n) && ag_vec_reserve(&b->csr_begin, n) &&
            ag_vec_reserve(&b->pool, n) && ag_vec_reserve(&b->set_begin, n) &&
            ag_vec_reserve(&b->set_hash, n) && ag_vec_reserve(&b->mark, n) &&
            ag_vec_reserve(&b->count, n) && ag_vec_reserve(&b->stack, n) &&
            ag_vec_reserve(&b->closure, n) && ag_vec_reserve(&b->active, n) &&
            ag_vec_reserve(&b->prev, n) && ag_vec_reserve(&b->events, n) &&
            ag_vec_reserve(&b->events_tmp, n) && ag_vec_reserve(&b->moves, n) &&
            ag_vec_reserve(&b->rep, n) && ag_vec_reserve(&b->sig, n) && ag_vec_reserve(&b->sigs, n) &&
            ag_vec_reserve(&b->order, n) && ag_vec_reserve(&b->post, n) &&
            ag_vec_reserve(&b->rank, n) && ag_vec_reserve(&b->dfs, n) &&
            ag_vec_reserve(&b->new_id, n) && ag_vec_reserve(&b->tmp_states, n) &&
            ag_vec_reserve(&b->tmp_bytes, n) && ag_vec_reserve(&b->states, out) &&
            ag_vec_reserve(&b->state_rule, out) && ag_vec_reserve(&b->byte_edges, out) &&
            ag_vec_reserve(&b->rule_edges, n);
  return ok ? AG_OK : ag_nomem(b);
}

ag_status ag_fsm_build(const ag_ir *ir, ag_grammar *g, ag_error *err) {
  ag_builder b;
  memset(&b, 0, sizeof b);
  b.ir = ir;
  b.err = err;
  b.rule = -1;
  b.table_cap = 64;
  b.table = calloc(b.table_cap, sizeof *b.table);
  ag_status st = b.table ? AG_OK : ag_nomem(&b);
  if (!st) st = ag_builder_reserve(&b);
  if (!st) st = ag_node_sizes(&b);
  if (!st) st = ag_rules_build(&b);
  if (!st) st = ag_builder_hand_over(&b, g);
  ag_builder_free(&b);
  return st;
}

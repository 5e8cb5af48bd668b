/*
 * ag_ir.h - the grammar IR buffer (agentgrammar/grammar/serialize.py writes it)
 * and its validated view (ag_ir.c), which loading reads. Internal.
 */
#ifndef AG_IR_H
#define AG_IR_H

#include "ag_util.h"

/* IR format constants; must match agentgrammar/grammar/serialize.py. */
#define AG_IR_MAGIC 0x52494741 /* "AGIR" */
#define AG_IR_VERSION 1
#define AG_IR_HEADER_WORDS 6

enum {
  AG_NODE_LITERAL = 1, /* len, byte * len */
  AG_NODE_BYTES = 2,   /* n_ranges, (lo, hi) * n_ranges */
  AG_NODE_SEQ = 3,     /* n, child * n */
  AG_NODE_CHOICE = 4,  /* n, child * n */
  AG_NODE_RULEREF = 5, /* rule */
  AG_NODE_REPEAT = 6,  /* child, min, max (-1 = unbounded) */
  AG_NODE_DISPATCH = 7, /* flags, n_words, (rule, len, byte * len) * n_words: see ag_dispatch.h */
  AG_NODE_SWITCH = 8,   /* n, (rule, len, byte * len) * n: one of the words, then its rule */
  /* tail, other, any_char, n_ranges, (lo, hi) * n_ranges, n_names, (len, byte * len) * n_names:
   * the rest of a JSON key, after its opening quote, that spells none of the names (see
   * ag_nfa_keytrie). The ranges are the raw ASCII characters a key may hold; the names are
   * non-empty, made of those characters, and in strictly increasing byte order. */
  AG_NODE_KEYTRIE = 9,
  /* body, char, min, max (-1 = unbounded): the strings of body that are min..max copies of
   * char (a JSON string's character), counted in one automaton (ag_counted_text.c). Body is
   * bytes, or right-linear references (each in a last position) to rules of bytes; char is
   * one prefix-free byte automaton. */
  AG_NODE_COUNTED_TEXT = 10
};

/*
 * A validated view of an IR buffer. It borrows the caller's words, so it is
 * only valid during ag_grammar_load. Once ag_ir_parse succeeds every node
 * can be read without further checks: node i starts at data + offset[i],
 * its payload fits in data, its children are nodes below i, its rule
 * references are < n_rules and its bytes are 0..255.
 */
typedef struct ag_ir {
  int32_t n_rules;
  int32_t n_external; /* rule references n_rules .. n_rules + n_external - 1 name a linked part's rules */
  int32_t root;
  int32_t n_nodes;
  int32_t n_data;
  const int32_t *body;   /* [n_rules] */
  const int32_t *offset; /* [n_nodes] */
  const int32_t *data;   /* [n_data] */
  /* Some literal, word or byte range holds byte 0xFF, with which token markers and
   * one-token items open (no UTF-8 text holds it): callers then look for them. */
  bool holds_ff;
} ag_ir;

static inline const int32_t *ag_ir_node(const ag_ir *ir, int32_t node) {
  return ir->data + ir->offset[node];
}

/* Checks the whole buffer; AG_ERR_INVALID (or AG_ERR_LIMIT) with a precise message.
 * n_external rule ids past the buffer's own rules may be referenced (0 for a plain load). */
ag_status ag_ir_parse(const int32_t *words, size_t n_words, int32_t n_external, ag_ir *ir,
                      ag_error *err);

#endif /* AG_IR_H */

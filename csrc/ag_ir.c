/*
 * ag_ir.c - validation of the IR buffer written by
 * agentgrammar/grammar/serialize.py.
 *
 * The buffer may come from anywhere, so nothing in it is trusted: every count,
 * offset, index and byte is checked here, once, before the automaton builder
 * reads it. After ag_ir_parse succeeds the builder never needs a bounds check.
 */
#include "ag_ir.h"

#include "ag_dispatch.h"
#include "ag_grammar.h"

#include <inttypes.h>

static const char *ag_node_kind_name(int32_t kind) {
  switch (kind) {
    case AG_NODE_LITERAL: return "LITERAL";
    case AG_NODE_BYTES: return "BYTES";
    case AG_NODE_SEQ: return "SEQ";
    case AG_NODE_CHOICE: return "CHOICE";
    case AG_NODE_RULEREF: return "RULEREF";
    case AG_NODE_REPEAT: return "REPEAT";
    case AG_NODE_DISPATCH: return "DISPATCH";
    case AG_NODE_SWITCH: return "SWITCH";
    case AG_NODE_KEYTRIE: return "KEYTRIE";
    case AG_NODE_COUNTED_TEXT: return "COUNTED_TEXT";
    default: return "?";
  }
}

static ag_status ag_ir_check_header(const int32_t *words, size_t n_words, ag_ir *ir,
                                    ag_error *err) {
  if (n_words < AG_IR_HEADER_WORDS)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "grammar buffer too short: %zu words, the header alone needs %d", n_words,
                   AG_IR_HEADER_WORDS);
  if (words[0] != AG_IR_MAGIC)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "grammar buffer has bad magic 0x%08" PRIx32 " (expected 0x%08x \"AGIR\")",
                   (uint32_t)words[0], AG_IR_MAGIC);
  if (words[1] != AG_IR_VERSION)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "grammar buffer has version %" PRId32 ", this engine reads version %d",
                   words[1], AG_IR_VERSION);
  ir->n_rules = words[2];
  ir->root = words[3];
  ir->n_nodes = words[4];
  ir->n_data = words[5];
  if (ir->n_rules < 1)
    return ag_fail(err, AG_ERR_INVALID, -1, "grammar has %" PRId32 " rules, it needs at least 1",
                   ir->n_rules);
  if (ir->n_rules > AG_MAX_RULES)
    return ag_fail(err, AG_ERR_LIMIT, -1, "grammar has %" PRId32 " rules, the limit is %d",
                   ir->n_rules, AG_MAX_RULES);
  if (ir->n_nodes < 0 || ir->n_data < 0)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "grammar buffer has negative counts (%" PRId32 " nodes, %" PRId32
                   " data words)",
                   ir->n_nodes, ir->n_data);
  if (ir->root < 0 || ir->root >= ir->n_rules)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "root rule %" PRId32 " out of range (grammar has %" PRId32 " rules)", ir->root,
                   ir->n_rules);
  /* 64-bit sum: three non-negative int32 counts cannot overflow it. The size
   * must match exactly, which also catches truncated or padded buffers. */
  uint64_t expect = (uint64_t)AG_IR_HEADER_WORDS + (uint64_t)ir->n_rules +
                    (uint64_t)ir->n_nodes + (uint64_t)ir->n_data;
  if (expect != (uint64_t)n_words)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "grammar buffer has %zu words but its header describes %" PRIu64, n_words,
                   expect);
  ir->body = words + AG_IR_HEADER_WORDS;
  ir->offset = ir->body + ir->n_rules;
  ir->data = ir->offset + ir->n_nodes;
  return AG_OK;
}

/* Checks that node i's payload of `need` words after the kind fits in data. */
static ag_status ag_ir_check_fits(const ag_ir *ir, int32_t i, int64_t need, ag_error *err) {
  int64_t avail = (int64_t)ir->n_data - ir->offset[i] - 1;
  if (need > avail)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (%s): payload of %" PRId64 " words runs past the end of data",
                   i, ag_node_kind_name(ag_ir_node(ir, i)[0]), need);
  return AG_OK;
}

/* A node's children must be nodes below it: that makes the node graph acyclic. */
static ag_status ag_ir_check_child(const ag_ir *ir, int32_t i, int32_t child, ag_error *err) {
  if (child < 0 || child >= i)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (%s): child %" PRId32
                   " is not a node below it (children must come first)",
                   i, ag_node_kind_name(ag_ir_node(ir, i)[0]), child);
  return AG_OK;
}

static ag_status ag_ir_check_literal(const ag_ir *ir, int32_t i, const int32_t *p,
                                     ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 1, err);
  if (st) return st;
  if (p[1] < 0)
    return ag_fail(err, AG_ERR_INVALID, -1, "node %" PRId32 " (LITERAL): negative length %" PRId32,
                   i, p[1]);
  if ((st = ag_ir_check_fits(ir, i, 1 + (int64_t)p[1], err))) return st;
  for (int32_t k = 0; k < p[1]; k++)
    if (p[2 + k] < 0 || p[2 + k] > 255)
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "node %" PRId32 " (LITERAL): byte %" PRId32 " is %" PRId32
                     ", not in 0..255",
                     i, k, p[2 + k]);
  return AG_OK;
}

static ag_status ag_ir_check_bytes(const ag_ir *ir, int32_t i, const int32_t *p, ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 1, err);
  if (st) return st;
  if (p[1] < 0)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (BYTES): negative range count %" PRId32, i, p[1]);
  if ((st = ag_ir_check_fits(ir, i, 1 + 2 * (int64_t)p[1], err))) return st;
  for (int32_t k = 0; k < p[1]; k++) {
    int32_t lo = p[2 + 2 * k], hi = p[3 + 2 * k];
    if (lo < 0 || lo > 255 || hi < 0 || hi > 255 || lo > hi)
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "node %" PRId32 " (BYTES): range %" PRId32 " is [%" PRId32 ", %" PRId32
                     "], need 0 <= lo <= hi <= 255",
                     i, k, lo, hi);
  }
  return AG_OK;
}

static ag_status ag_ir_check_list(const ag_ir *ir, int32_t i, const int32_t *p, ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 1, err);
  if (st) return st;
  if (p[1] < 0)
    return ag_fail(err, AG_ERR_INVALID, -1, "node %" PRId32 " (%s): negative child count %" PRId32,
                   i, ag_node_kind_name(p[0]), p[1]);
  if ((st = ag_ir_check_fits(ir, i, 1 + (int64_t)p[1], err))) return st;
  for (int32_t k = 0; k < p[1]; k++)
    if ((st = ag_ir_check_child(ir, i, p[2 + k], err))) return st;
  return AG_OK;
}

static ag_status ag_ir_check_ruleref(const ag_ir *ir, int32_t i, const int32_t *p,
                                     ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 1, err);
  if (st) return st;
  if (p[1] < 0 || (int64_t)p[1] >= (int64_t)ir->n_rules + ir->n_external)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (RULEREF): rule %" PRId32 " out of range (grammar has %" PRId32
                   " rules)",
                   i, p[1], ir->n_rules + ir->n_external);
  return AG_OK;
}

/* The {min,max} bounds of REPEAT or COUNTED_TEXT node i. */
static ag_status ag_ir_check_bounds(const ag_ir *ir, int32_t i, int32_t min, int32_t max, ag_error *err) {
  if (min < 0 || (max != -1 && max < min))
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (%s): bad bounds {%" PRId32 ",%" PRId32
                   "}, need 0 <= min and (max == -1 or max >= min)",
                   i, ag_node_kind_name(ag_ir_node(ir, i)[0]), min, max);
  return AG_OK;
}

static ag_status ag_ir_check_repeat(const ag_ir *ir, int32_t i, const int32_t *p,
                                    ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 3, err);
  if (!st) st = ag_ir_check_child(ir, i, p[1], err);
  return st ? st : ag_ir_check_bounds(ir, i, p[2], p[3], err);
}

static ag_status ag_ir_check_counted_text(const ag_ir *ir, int32_t i, const int32_t *p,
                                          ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 4, err);
  if (!st) st = ag_ir_check_child(ir, i, p[1], err);
  if (!st) st = ag_ir_check_child(ir, i, p[2], err);
  return st ? st : ag_ir_check_bounds(ir, i, p[3], p[4], err);
}

/* Word k of DISPATCH or SWITCH node i, at p, with `avail` data words left: its
 * rule (at least min_rule: a DISPATCH word may be a stop string or an exclude),
 * then a non-empty byte string. */
static ag_status ag_ir_check_word(const ag_ir *ir, int32_t i, int32_t k, const int32_t *p,
                                  int64_t avail, int32_t min_rule, ag_error *err) {
  const char *kind = ag_node_kind_name(ag_ir_node(ir, i)[0]);
  int64_t n_rules = (int64_t)ir->n_rules + ir->n_external;
  if (avail < 2)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (%s): word %" PRId32 " runs past the end of data", i, kind, k);
  if (p[0] < min_rule || (int64_t)p[0] >= n_rules)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (%s): word %" PRId32 " names rule %" PRId32
                   " (grammar has %" PRId64 " rules)",
                   i, kind, k, p[0], n_rules);
  if (p[1] < 1 || p[1] > avail - 2)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (%s): word %" PRId32 " has bad length %" PRId32, i, kind, k,
                   p[1]);
  for (int32_t b = 0; b < p[1]; b++)
    if (p[2 + b] < 0 || p[2 + b] > 255)
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "node %" PRId32 " (%s): word %" PRId32 " byte %" PRId32
                     " is %" PRId32 ", not in 0..255",
                     i, kind, k, b, p[2 + b]);
  return AG_OK;
}

static ag_status ag_ir_check_dispatch(const ag_ir *ir, int32_t i, const int32_t *p,
                                      ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 2, err);
  if (st) return st;
  if (p[1] & ~AG_DISPATCH_FLAGS)
    return ag_fail(err, AG_ERR_INVALID, -1, "node %" PRId32 " (DISPATCH): unknown flags %#x", i,
                   (unsigned)p[1]);
  if (p[2] < 0)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (DISPATCH): negative word count %" PRId32, i, p[2]);
  int64_t avail = (int64_t)ir->n_data - ir->offset[i] - 3, total = 0;
  const int32_t *w = p + 3;
  for (int32_t k = 0; k < p[2]; k++) {
    if ((st = ag_ir_check_word(ir, i, k, w, avail, AG_DISPATCH_EXCLUDE, err))) return st;
    total += w[1];
    avail -= 2 + (int64_t)w[1];
    w += 2 + w[1];
  }
  if (total > AG_MAX_DISPATCH_BYTES)
    return ag_fail(err, AG_ERR_LIMIT, -1,
                   "node %" PRId32 " (DISPATCH): its words have %" PRId64
                   " bytes in all, the limit is %d",
                   i, total, AG_MAX_DISPATCH_BYTES);
  return AG_OK;
}

/* A SWITCH (a request's choice of tool calls, say): n >= 1 words, each a rule
 * and a non-empty byte string, laid out as a DISPATCH's. */
static ag_status ag_ir_check_switch(const ag_ir *ir, int32_t i, const int32_t *p, ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 1, err);
  if (st) return st;
  if (p[1] < 1)
    return ag_fail(err, AG_ERR_INVALID, -1, "node %" PRId32 " (SWITCH): %" PRId32 " words, need 1 or more",
                   i, p[1]);
  int64_t avail = (int64_t)ir->n_data - ir->offset[i] - 2;
  const int32_t *w = p + 2;
  for (int32_t k = 0; k < p[1]; k++) {
    if ((st = ag_ir_check_word(ir, i, k, w, avail, 0, err))) return st;
    avail -= 2 + (int64_t)w[1];
    w += 2 + w[1];
  }
  return AG_OK;
}

/* The raw ASCII ranges of KEYTRIE node i, at p (n ranges), as a bitmap; none may hold the
 * closing quote, which ends a key wherever it appears. */
static ag_status ag_ir_keytrie_raw(int32_t i, const int32_t *p, int32_t n, uint64_t raw[2],
                                   ag_error *err) {
  raw[0] = raw[1] = 0;
  for (int32_t k = 0; k < n; k++) {
    int32_t lo = p[2 * k], hi = p[2 * k + 1];
    if (lo < 0 || hi > 127 || lo > hi)
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "node %" PRId32 " (KEYTRIE): range %" PRId32 " is [%" PRId32 ", %" PRId32
                     "], need 0 <= lo <= hi <= 127",
                     i, k, lo, hi);
    for (int32_t c = lo; c <= hi; c++) raw[c >> 6] |= (uint64_t)1 << (c & 63);
  }
  if (raw[0] & ((uint64_t)1 << '"'))
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (KEYTRIE): its raw characters include the closing quote", i);
  return AG_OK;
}

/* Name k of KEYTRIE node i, at w (its length, then its bytes) with `avail` words left:
 * non-empty, of raw characters, and after name `before` (laid out alike; NULL for the
 * first) in byte order. */
static ag_status ag_ir_keytrie_name(int32_t i, int32_t k, const int32_t *w, int64_t avail,
                                    const uint64_t raw[2], const int32_t *before, ag_error *err) {
  if (avail < 1 || w[0] < 1 || w[0] > avail - 1)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (KEYTRIE): name %" PRId32 " is empty or runs past the end of data",
                   i, k);
  for (int32_t b = 0; b < w[0]; b++)
    if (w[1 + b] < 0 || w[1 + b] > 127 || !(raw[w[1 + b] >> 6] & ((uint64_t)1 << (w[1 + b] & 63))))
      return ag_fail(err, AG_ERR_INVALID, -1,
                     "node %" PRId32 " (KEYTRIE): name %" PRId32 " byte %" PRId32
                     " is %" PRId32 ", not one of its raw characters",
                     i, k, b, w[1 + b]);
  if (!before) return AG_OK;
  const int32_t *prev = before + 1;
  int32_t prev_len = before[0];
  int32_t n = prev_len < w[0] ? prev_len : w[0], d = 0;
  while (d < n && prev[d] == w[1 + d]) d++;
  if (d == n ? prev_len >= w[0] : prev[d] > w[1 + d])
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (KEYTRIE): name %" PRId32
                   " does not follow the one before it (names must be unique and sorted)",
                   i, k);
  return AG_OK;
}

static ag_status ag_ir_check_keytrie(const ag_ir *ir, int32_t i, const int32_t *p, ag_error *err) {
  ag_status st = ag_ir_check_fits(ir, i, 4, err);
  for (int32_t k = 1; !st && k <= 3; k++) st = ag_ir_check_child(ir, i, p[k], err);
  if (st) return st;
  if (p[4] < 0)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (KEYTRIE): negative range count %" PRId32, i, p[4]);
  if ((st = ag_ir_check_fits(ir, i, 5 + 2 * (int64_t)p[4], err))) return st;
  uint64_t raw[2];
  if ((st = ag_ir_keytrie_raw(i, p + 5, p[4], raw, err))) return st;
  const int32_t *w = p + 5 + 2 * p[4], *prev = NULL;
  if (w[0] < 0)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 " (KEYTRIE): negative name count %" PRId32, i, w[0]);
  int64_t avail = (int64_t)ir->n_data - (ir->offset[i] + 6 + 2 * (int64_t)p[4]);
  int32_t n = w[0];
  w++;
  for (int32_t k = 0; k < n; k++) {
    if ((st = ag_ir_keytrie_name(i, k, w, avail, raw, prev, err))) return st;
    prev = w;
    avail -= 1 + (int64_t)w[0];
    w += 1 + w[0];
  }
  return AG_OK;
}

/* Whether byte string w (n words, checked) holds 0xFF. */
static bool ag_ir_word_has_ff(const int32_t *w, int32_t n) {
  for (int32_t k = 0; k < n; k++)
    if (w[k] == 0xFF) return true;
  return false;
}

/* Whether checked node p holds byte 0xFF in a literal, a word or a byte range. */
static bool ag_ir_node_has_ff(const int32_t *p) {
  switch (p[0]) {
    case AG_NODE_LITERAL: return ag_ir_word_has_ff(p + 2, p[1]);
    case AG_NODE_BYTES:
      for (int32_t k = 0; k < p[1]; k++)
        if (p[3 + 2 * k] == 0xFF) return true;
      return false;
    case AG_NODE_DISPATCH:
    case AG_NODE_SWITCH: {
      int32_t n = p[0] == AG_NODE_DISPATCH ? p[2] : p[1];
      const int32_t *w = p[0] == AG_NODE_DISPATCH ? p + 3 : p + 2;
      for (int32_t k = 0; k < n; k++, w += 2 + w[1])
        if (ag_ir_word_has_ff(w + 2, w[1])) return true;
      return false;
    }
    default: return false; /* key trie names are ASCII */
  }
}

static ag_status ag_ir_check_node(const ag_ir *ir, int32_t i, ag_error *err) {
  int32_t off = ir->offset[i];
  if (off < 0 || off >= ir->n_data)
    return ag_fail(err, AG_ERR_INVALID, -1,
                   "node %" PRId32 ": offset %" PRId32 " outside data (%" PRId32 " words)", i, off,
                   ir->n_data);
  const int32_t *p = ag_ir_node(ir, i);
  switch (p[0]) {
    case AG_NODE_LITERAL: return ag_ir_check_literal(ir, i, p, err);
    case AG_NODE_BYTES: return ag_ir_check_bytes(ir, i, p, err);
    case AG_NODE_SEQ:
    case AG_NODE_CHOICE: return ag_ir_check_list(ir, i, p, err);
    case AG_NODE_RULEREF: return ag_ir_check_ruleref(ir, i, p, err);
    case AG_NODE_REPEAT: return ag_ir_check_repeat(ir, i, p, err);
    case AG_NODE_DISPATCH: return ag_ir_check_dispatch(ir, i, p, err);
    case AG_NODE_SWITCH: return ag_ir_check_switch(ir, i, p, err);
    case AG_NODE_KEYTRIE: return ag_ir_check_keytrie(ir, i, p, err);
    case AG_NODE_COUNTED_TEXT: return ag_ir_check_counted_text(ir, i, p, err);
    default:
      return ag_fail(err, AG_ERR_INVALID, -1, "node %" PRId32 ": unknown kind %" PRId32, i, p[0]);
  }
}

ag_status ag_ir_parse(const int32_t *words, size_t n_words, int32_t n_external, ag_ir *ir,
                      ag_error *err) {
  memset(ir, 0, sizeof *ir);
  if (!words && n_words)
    return ag_fail(err, AG_ERR_INVALID, -1, "grammar buffer is NULL");
  ag_status st = ag_ir_check_header(words, n_words, ir, err);
  if (st) return st;
  if (n_external < 0 || (int64_t)ir->n_rules + n_external > AG_MAX_RULES)
    return ag_fail(err, AG_ERR_LIMIT, -1, "grammar has %" PRId64 " rules with its parts, the limit is %d",
                   (int64_t)ir->n_rules + n_external, AG_MAX_RULES);
  ir->n_external = n_external;
  for (int32_t r = 0; r < ir->n_rules; r++)
    if (ir->body[r] < 0 || ir->body[r] >= ir->n_nodes)
      return ag_fail(err, AG_ERR_INVALID, r,
                     "body node %" PRId32 " out of range (grammar has %" PRId32 " nodes)",
                     ir->body[r], ir->n_nodes);
  /* Every node is checked, even unreferenced ones: a buffer is either valid
   * or rejected, never half-trusted. */
  for (int32_t i = 0; i < ir->n_nodes; i++) {
    if ((st = ag_ir_check_node(ir, i, err))) return st;
    if (!ir->holds_ff) ir->holds_ff = ag_ir_node_has_ff(ag_ir_node(ir, i));
  }
  return AG_OK;
}

/* c_api_driver.c - drives the public C API end to end, including its error paths.
 * Built with AddressSanitizer and UndefinedBehaviorSanitizer by test_c_api.py, so an
 * out-of-bounds access, undefined behaviour or a leak fails the test. Exits non-zero
 * (naming the failed check) when a result is wrong. */
#include "agentgrammar.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                             \
  do {                                                          \
    if (!(cond)) {                                              \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                               \
    }                                                           \
  } while (0)

/* root ::= "ab" | [0-9]+   (IR layout documented in agentgrammar/grammar/serialize.py) */
static const int32_t GRAMMAR[] = {
    0x52494741, 1, /* magic, version */
    1, 0, 4, 16,   /* n_rules, root, n_nodes, n_data */
    3,             /* body of rule 0 = node 3 */
    0, 4, 8, 12,   /* node offsets */
    1, 2, 'a', 'b',          /* node 0: LITERAL "ab" */
    2, 1, '0', '9',          /* node 1: BYTES [0-9] */
    6, 1, 1, -1,             /* node 2: REPEAT node1 {1,} */
    4, 2, 0, 2,              /* node 3: CHOICE node0 | node2 */
};

/* root ::= TagDispatch(("ab", one), excludes=("x")), one ::= "1" */
static const int32_t DISPATCH_GRAMMAR[] = {
    0x52494741, 1, /* magic, version */
    2, 0, 2, 13,   /* n_rules, root, n_nodes, n_data */
    0, 1,          /* bodies */
    0, 10,         /* node offsets */
    7, 3, 2, 1, 2, 'a', 'b', -2, 1, 'x', /* node 0: DISPATCH loop|end, "ab" -> rule 1, exclude "x" */
    1, 1, '1',                           /* node 1: LITERAL "1" */
};

/* root ::= "x" <rule 0 of a linked part>: reference 1 = n_rules + 0 */
static const int32_t LINKED_GRAMMAR[] = {
    0x52494741, 1, 1, 0, 3, 9, /* header */
    2,                         /* body of rule 0 = node 2 */
    0, 3, 5,                   /* node offsets */
    1, 1, 'x',                 /* node 0: LITERAL "x" */
    5, 1,                      /* node 1: RULEREF part rule 0 */
    3, 2, 0, 1,                /* node 2: SEQ */
};

/* root ::= "x" h, h ::= "a": every reference to h is inlined, so h gets no
 * automaton of its own (a bare start) */
static const int32_t INLINED_PART[] = {
    0x52494741, 1, 2, 0, 4, 12, /* header */
    3, 2,                       /* bodies: rule 0 = node 3, rule 1 = node 2 */
    0, 3, 5, 8,                 /* node offsets */
    1, 1, 'x',                  /* node 0: LITERAL "x" */
    5, 1,                       /* node 1: RULEREF rule 1 */
    1, 1, 'a',                  /* node 2: LITERAL "a" */
    3, 2, 0, 1,                 /* node 3: SEQ */
};

/* root ::= <rule 1 of a linked part> (reference 2 = n_rules + 1), or its rule 0 */
static const int32_t NAMES_PART_RULE_1[] = {0x52494741, 1, 1, 0, 1, 2, 0, 0, 5, 2};
static const int32_t NAMES_PART_ROOT[] = {0x52494741, 1, 1, 0, 1, 2, 0, 0, 5, 1};

/* root ::= "ab" | "ac" <rule 0 of a linked part> | "b": a choice of literals, built as a trie */
static const int32_t TRIE_GRAMMAR[] = {
    0x52494741, 1, 1, 0, 6, 22, /* header */
    5,                          /* body of rule 0 = node 5 */
    0, 4, 8, 10, 14, 17,        /* node offsets */
    1, 2, 'a', 'b',             /* node 0: LITERAL "ab" */
    1, 2, 'a', 'c',             /* node 1: LITERAL "ac" */
    5, 1,                       /* node 2: RULEREF part rule 0 */
    3, 2, 1, 2,                 /* node 3: SEQ */
    1, 1, 'b',                  /* node 4: LITERAL "b" */
    4, 3, 0, 3, 4,              /* node 5: CHOICE */
};

/* root ::= SWITCH("ab" one, "a" two), one ::= "1", two ::= "12": small rules, inlined, so the
 * switch is built as an NFA */
static const int32_t SWITCH_GRAMMAR[] = {
    0x52494741, 1,  /* magic, version */
    3, 0, 3, 16,    /* n_rules, root, n_nodes, n_data */
    2, 0, 1,        /* bodies */
    0, 3, 7,        /* node offsets */
    1, 1, '1',                         /* node 0: LITERAL "1" */
    1, 2, '1', '2',                    /* node 1: LITERAL "12" */
    8, 2, 1, 2, 'a', 'b', 2, 1, 'a',   /* node 2: SWITCH "ab" -> rule 1, "a" -> rule 2 */
};

/* root ::= SWITCH("ab" part, "x" part), part rule 0 = n_rules + 0: built as a trie */
static const int32_t SWITCH_LINKED_GRAMMAR[] = {
    0x52494741, 1, 1, 0, 1, 9, /* header */
    0,                         /* body of rule 0 = node 0 */
    0,                         /* node offsets */
    8, 2, 1, 2, 'a', 'b', 1, 1, 'x', /* node 0: SWITCH */
};

/* root ::= ("ab"){2,100000} digit{300,}, digit ::= [0-9]: both repeats are counted, not unrolled */
static const int32_t COUNTED_GRAMMAR[] = {
    0x52494741, 1,  /* magic, version */
    2, 0, 6, 22,    /* n_rules, root, n_nodes, n_data */
    4, 5,           /* bodies */
    0, 4, 8, 10, 14, 18, /* node offsets */
    1, 2, 'a', 'b',       /* node 0: LITERAL "ab" */
    6, 0, 2, 100000,      /* node 1: REPEAT node0 {2,100000} */
    5, 1,                 /* node 2: RULEREF digit */
    6, 2, 300, -1,        /* node 3: REPEAT node2 {300,} */
    3, 2, 1, 3,           /* node 4: SEQ node1 node3 */
    2, 1, '0', '9',       /* node 5: BYTES [0-9] */
};

/* root ::= KEYTRIE: a key, after its opening quote, that is neither "a" nor "ab"; raw
 * characters [0-9a-z], "~" stands for the other ones (wide or escaped) */
static const int32_t KEYTRIE_GRAMMAR[] = {
    0x52494741, 1,          /* magic, version */
    1, 0, 7, 39,            /* n_rules, root, n_nodes, n_data */
    6,                      /* body of rule 0 = node 6 */
    0, 6, 10, 13, 17, 20, 24, /* node offsets */
    2, 2, '0', '9', 'a', 'z', /* node 0: BYTES [0-9a-z], a raw character */
    6, 0, 0, -1,            /* node 1: REPEAT node0 {0,} */
    1, 1, '"',              /* node 2: LITERAL '"' */
    3, 2, 1, 2,             /* node 3: SEQ: the tail */
    1, 1, '~',              /* node 4: LITERAL "~": the other characters */
    4, 2, 0, 4,             /* node 5: CHOICE: any character */
    9, 3, 4, 5, 2, '0', '9', 'a', 'z', 2, 1, 'a', 2, 'a', 'b', /* node 6: KEYTRIE */
};

/* tokens: "a" "b" "ab" "1" "12" "x" "" (special) "</s>" (stop) */
static const char *TOKENS[] = {"a", "b", "ab", "1", "12", "x", "", "</s>"};
static const uint8_t KINDS[] = {0, 0, 0, 0, 0, 0, 1, 2};
enum { N_TOKENS = 8, MASK_SIZE = 40 };

static ag_vocab *make_vocab(void) {
  uint8_t blob[64];
  uint32_t offsets[N_TOKENS + 1] = {0};
  for (int i = 0; i < N_TOKENS; i++) {
    size_t n = strlen(TOKENS[i]);
    memcpy(blob + offsets[i], TOKENS[i], n);
    offsets[i + 1] = offsets[i] + (uint32_t)n;
  }
  ag_vocab *v = NULL;
  ag_error err;
  CHECK(ag_vocab_new(blob, offsets, KINDS, N_TOKENS, MASK_SIZE, &v, &err) == AG_OK);
  return v;
}

static uint32_t mask_of(ag_matcher *m) {
  uint32_t mask[2] = {0xffffffffu, 0xffffffffu};
  int all = -1;
  ag_error err;
  CHECK(ag_matcher_fill_mask(m, mask, 2, &all, &err) == AG_OK);
  CHECK(all == 0);
  CHECK(mask[1] == 0); /* ids 32..39 are padding */
  return mask[0];
}

static void test_matching(ag_compiled *c) {
  ag_matcher *m = NULL;
  ag_error err;
  int ok = -1;
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2) | (1u << 3) | (1u << 4)));
  CHECK(ag_matcher_accept_token(m, 5, &ok, &err) == AG_OK && ok == 0); /* "x" rejected */
  CHECK(ag_matcher_accept_token(m, 4, &ok, &err) == AG_OK && ok == 1); /* "12" */
  CHECK(ag_matcher_can_end(m));
  CHECK(mask_of(m) == ((1u << 3) | (1u << 4) | (1u << 7)));
  CHECK(ag_matcher_accept_token(m, 7, &ok, &err) == AG_OK && ok == 1); /* stop */
  CHECK(ag_matcher_is_terminated(m));
  CHECK(ag_matcher_accept_token(m, 3, &ok, &err) == AG_ERR_STATE);
  CHECK(ag_matcher_accept_token(m, 40, &ok, &err) == AG_ERR_RANGE);
  CHECK(ag_matcher_rollback(m, 3, &err) == AG_ERR_RANGE);
  CHECK(ag_matcher_rollback(m, 2, &err) == AG_OK);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2) | (1u << 3) | (1u << 4)));
  uint8_t buf[8];
  size_t len = 99;
  CHECK(ag_matcher_accept_token(m, 0, &ok, &err) == AG_OK && ok == 1); /* "a" forces "b" */
  CHECK(ag_matcher_jump_forward(m, buf, sizeof buf, &len, &err) == AG_OK);
  CHECK(len == 1 && buf[0] == 'b');
  ag_matcher_reset(m);
  CHECK(ag_matcher_num_steps(m) == 0);
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"ab", 2, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  uint32_t small[1];
  int all;
  CHECK(ag_matcher_fill_mask(m, small, 1, &all, &err) == AG_ERR_INVALID);
  ag_matcher_free(m);
}

/* Runs a matcher over a grammar whose language is unknown: only safety is checked. */
static void test_matching_loose(ag_compiled *c) {
  ag_matcher *m = NULL;
  ag_error err;
  int ok;
  uint32_t mask[2];
  uint8_t buf[16];
  size_t len;
  if (ag_matcher_new(c, NULL, -1, 0, &m, &err) != AG_OK) return;
  for (int32_t t = 0; t < N_TOKENS; t++) {
    CHECK(ag_matcher_fill_mask(m, mask, 2, &ok, &err) == AG_OK);
    CHECK(ag_matcher_jump_forward(m, buf, sizeof buf, &len, &err) == AG_OK);
    if (ag_matcher_accept_token(m, t, &ok, &err) != AG_OK) break;
  }
  ag_matcher_rollback(m, ag_matcher_num_steps(m), &err);
  ag_matcher_free(m);
}

static void test_dispatch(ag_vocab *v) {
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  int ok = -1;
  CHECK(ag_grammar_load(DISPATCH_GRAMMAR, sizeof DISPATCH_GRAMMAR / sizeof DISPATCH_GRAMMAR[0], &g,
                        &err) == AG_OK);
  CHECK(ag_compiled_new(g, v, &c, &err) == AG_OK);
  ag_grammar_free(g);
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  /* free text: everything but the exclude "x"; the stop token too */
  CHECK(mask_of(m) == ((1u << 0) | (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4) | (1u << 7)));
  CHECK(ag_matcher_accept_token(m, 2, &ok, &err) == AG_OK && ok == 1); /* "ab" triggers */
  CHECK(mask_of(m) == ((1u << 3) | (1u << 4)));                        /* "1", "12" */
  CHECK(ag_matcher_accept_token(m, 4, &ok, &err) == AG_OK && ok == 1); /* "1" then free "2" */
  CHECK(ag_matcher_can_end(m));
  ag_matcher_free(m);
  ag_compiled_free(c);
}

/* Every single-word corruption of a buffer that links one part is rejected or
 * links cleanly. */
static void test_link_corruptions(ag_vocab *v, const int32_t *gram, size_t n_words,
                                  ag_grammar *part_grammar, ag_compiled *part) {
  ag_grammar *parts[1] = {part_grammar};
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_error err;
  int32_t broken[64];
  CHECK(n_words <= sizeof broken / sizeof broken[0]);
  if (n_words > sizeof broken / sizeof broken[0]) return;
  for (size_t i = 0; i < n_words; i++) {
    const int32_t values[] = {-1, 0, 1, 2, 5, 'b', 1000000, INT32_MIN};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
      memcpy(broken, gram, n_words * sizeof *gram);
      broken[i] = values[k];
      g = NULL;
      if (ag_grammar_link(broken, n_words, parts, 1, &g, &err) == AG_OK) {
        CHECK(ag_compiled_new_linked(g, v, &part, 1, &c, &err) == AG_OK);
        ag_grammar_free(g);
        test_matching_loose(c);
        ag_compiled_free(c);
      }
    }
  }
}

/* A matcher of `gram` linked to one part, its compiled grammar in *c (the
 * caller frees both); NULL, with a failed check, when the grammar does not link. */
static ag_matcher *linked_matcher(ag_vocab *v, const int32_t *gram, size_t n, ag_grammar *part_grammar,
                                  ag_compiled *part, ag_compiled **c) {
  ag_grammar *g = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  ag_grammar *parts[1] = {part_grammar};
  *c = NULL;
  CHECK(ag_grammar_link(gram, n, parts, 1, &g, &err) == AG_OK);
  if (!g) return NULL;
  CHECK(ag_compiled_new_linked(g, v, &part, 1, c, &err) == AG_OK);
  ag_grammar_free(g);
  CHECK(ag_matcher_new(*c, NULL, -1, 0, &m, &err) == AG_OK);
  if (!m) {
    ag_compiled_free(*c);
    *c = NULL;
  }
  return m;
}

/* The literal trie linking a part: its rule edge leads into the part, and every
 * single-word corruption is rejected or links cleanly. */
static void test_trie_linked(ag_vocab *v, ag_grammar *part_grammar, ag_compiled *part) {
  ag_compiled *c = NULL;
  ag_error err;
  int ok = -1;
  size_t n = sizeof TRIE_GRAMMAR / sizeof TRIE_GRAMMAR[0];
  ag_matcher *m = linked_matcher(v, TRIE_GRAMMAR, n, part_grammar, part, &c);
  if (!m) return;
  CHECK(mask_of(m) == ((1u << 0) | (1u << 1) | (1u << 2))); /* "a", "b", "ab" */
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"ac12", 4, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_reset(m);
  CHECK(ag_matcher_accept_token(m, 2, &ok, &err) == AG_OK && ok == 1); /* "ab" */
  CHECK(ag_matcher_can_end(m));
  CHECK(mask_of(m) == (1u << 7)); /* only the end */
  ag_matcher_free(m);
  ag_compiled_free(c);
  test_link_corruptions(v, TRIE_GRAMMAR, n, part_grammar, part);
}

static void test_switch_linked(ag_vocab *v, ag_grammar *part_grammar, ag_compiled *part);

static void test_link(ag_vocab *v) {
  ag_grammar *g = NULL, *plain = NULL, *part_grammar = NULL;
  ag_compiled *c = NULL, *part = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  int ok = -1;
  size_t n = sizeof LINKED_GRAMMAR / sizeof LINKED_GRAMMAR[0];
  CHECK(ag_grammar_load(GRAMMAR, sizeof GRAMMAR / sizeof GRAMMAR[0], &part_grammar, &err) == AG_OK);
  CHECK(ag_compiled_new(part_grammar, v, &part, &err) == AG_OK);
  ag_grammar *parts[1] = {part_grammar};
  CHECK(ag_grammar_link(LINKED_GRAMMAR, n, NULL, 1, &g, &err) == AG_ERR_INVALID);
  CHECK(ag_grammar_load(LINKED_GRAMMAR, n, &plain, &err) == AG_ERR_INVALID); /* no part to name */
  CHECK(ag_grammar_link(LINKED_GRAMMAR, n, parts, 1, &g, &err) == AG_OK);
  CHECK(ag_compiled_new(g, v, &c, &err) == AG_ERR_INVALID); /* needs its compiled parts */
  CHECK(ag_compiled_new_linked(g, v, &part, 0, &c, &err) == AG_ERR_INVALID);
  CHECK(ag_compiled_new_linked(g, v, &part, 1, &c, &err) == AG_OK);
  ag_grammar_free(g);
  /* Background classification while the matcher below fills its masks (the same masks);
   * the pool is freed before the grammar, whose parked or dropped task still holds it. */
  ag_pool *bg = NULL, *alone = NULL;
  CHECK(ag_pool_new(2, &bg, &err) == AG_OK && ag_pool_new(1, &alone, &err) == AG_OK);
  CHECK(ag_compiled_classify_background(c, alone, 100, 1.0, &err) == AG_ERR_INVALID);
  CHECK(ag_compiled_classify_background(c, bg, 0, 1.0, &err) == AG_OK); /* none asked: nothing */
  CHECK(ag_compiled_classify_background(c, bg, 100, 1.0, &err) == AG_OK);
  CHECK(ag_compiled_classify_background(c, bg, 100, 1.0, &err) == AG_ERR_STATE);
  for (int i = 0; i < 8; i++) { /* freed at once, the work queued or in a slice: it stops */
    ag_compiled *gone = NULL;
    CHECK(ag_compiled_new(part_grammar, v, &gone, &err) == AG_OK);
    if (gone) CHECK(ag_compiled_classify_background(gone, bg, 100, 1.0, &err) == AG_OK);
    ag_compiled_free(gone);
  }
  ag_pool_free(alone);
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  CHECK(mask_of(m) == (1u << 5));                                     /* "x" */
  CHECK(ag_matcher_accept_token(m, 5, &ok, &err) == AG_OK && ok == 1);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2) | (1u << 3) | (1u << 4))); /* the part's start */
  CHECK(ag_matcher_accept_token(m, 4, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_free(m);
  ag_pool_free(bg);
  ag_compiled_free(c);
  test_link_corruptions(v, LINKED_GRAMMAR, n, part_grammar, part);
  test_trie_linked(v, part_grammar, part);
  test_switch_linked(v, part_grammar, part);
  ag_compiled_free(part);
  ag_grammar_free(part_grammar);
}

/* A part rule that every reference inlines has no automaton: naming it from a
 * linking grammar is refused with a message, naming the part's root links. */
static void test_link_inlined_rule(ag_vocab *v) {
  ag_grammar *part = NULL, *g = NULL;
  ag_compiled *pc = NULL, *c = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  int ok = -1;
  size_t n = sizeof NAMES_PART_ROOT / sizeof NAMES_PART_ROOT[0];
  CHECK(ag_grammar_load(INLINED_PART, sizeof INLINED_PART / sizeof INLINED_PART[0], &part, &err) ==
        AG_OK);
  if (!part) return;
  ag_grammar *parts[1] = {part};
  CHECK(ag_grammar_link(NAMES_PART_RULE_1, n, parts, 1, &g, &err) == AG_ERR_INVALID);
  CHECK(g == NULL && strstr(err.message, "only inlines") != NULL);
  CHECK(ag_grammar_link(NAMES_PART_ROOT, n, parts, 1, &g, &err) == AG_OK);
  CHECK(ag_compiled_new(part, v, &pc, &err) == AG_OK);
  CHECK(ag_compiled_new_linked(g, v, &pc, 1, &c, &err) == AG_OK);
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  CHECK(ag_matcher_accept_token(m, 5, &ok, &err) == AG_OK && ok == 1); /* "x" */
  CHECK(mask_of(m) == (1u << 0));                                     /* then "a" alone */
  CHECK(ag_matcher_accept_token(m, 0, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_free(m);
  ag_compiled_free(c);
  ag_compiled_free(pc);
  ag_grammar_free(g);
  ag_grammar_free(part);
}

/* Every truncation and every single-word corruption must be rejected or loaded cleanly. */
static void test_corruptions(ag_vocab *v, const int32_t *gram, size_t n_words) {
  ag_grammar *g = NULL;
  ag_error err;
  int32_t broken[64];
  if (n_words > sizeof broken / sizeof broken[0]) return;
  for (size_t n = 0; n < n_words; n++) {
    CHECK(ag_grammar_load(gram, n, &g, &err) != AG_OK);
    CHECK(g == NULL);
  }
  for (size_t i = 0; i < n_words; i++) {
    const int32_t values[] = {-3, -2, -1, 0, 1, 7, 1000000, INT32_MIN, INT32_MAX};
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
      memcpy(broken, gram, n_words * sizeof *gram);
      broken[i] = values[k];
      if (ag_grammar_load(broken, n_words, &g, &err) == AG_OK) {
        ag_compiled *c = NULL;
        CHECK(ag_compiled_new(g, v, &c, &err) == AG_OK);
        ag_grammar_free(g);
        test_matching_loose(c);
        ag_compiled_free(c);
      }
      g = NULL;
    }
  }
}

/* The counted grammar as a linked part: its hidden rules must not shift the numbering. */
static void test_counted_linked(ag_vocab *v, ag_grammar *part_grammar, ag_compiled *part) {
  ag_compiled *c = NULL;
  ag_error err;
  int ok = -1;
  ag_matcher *m = linked_matcher(v, LINKED_GRAMMAR, sizeof LINKED_GRAMMAR / sizeof LINKED_GRAMMAR[0],
                                 part_grammar, part, &c);
  if (!m) return;
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"xabab", 5, &ok, &err) == AG_OK && ok == 1);
  for (int i = 0; i < 149; i++) CHECK(ag_matcher_accept_token(m, 4, &ok, &err) == AG_OK && ok == 1);
  CHECK(!ag_matcher_can_end(m));
  CHECK(ag_matcher_accept_token(m, 3, &ok, &err) == AG_OK && ok == 1);
  CHECK(!ag_matcher_can_end(m));
  CHECK(ag_matcher_accept_token(m, 3, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_free(m);
  ag_compiled_free(c);
}

static void test_switch(ag_vocab *v) {
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  int ok = -1;
  size_t n = sizeof SWITCH_GRAMMAR / sizeof SWITCH_GRAMMAR[0];
  CHECK(ag_grammar_load(SWITCH_GRAMMAR, n, &g, &err) == AG_OK);
  if (!g) return;
  CHECK(ag_compiled_new(g, v, &c, &err) == AG_OK);
  ag_grammar_free(g);
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2))); /* "a", "ab" */
  CHECK(ag_matcher_accept_token(m, 2, &ok, &err) == AG_OK && ok == 1); /* "ab" */
  CHECK(mask_of(m) == (1u << 3));                                      /* then "1" only */
  ag_matcher_reset(m);
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"a12", 3, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_reset(m);
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"ab12", 4, &ok, &err) == AG_OK && ok == 0);
  ag_matcher_free(m);
  ag_compiled_free(c);
  test_corruptions(v, SWITCH_GRAMMAR, n);
  /* Word count 0, and a word of length 0: refused, not built. */
  int32_t broken[sizeof SWITCH_GRAMMAR / sizeof SWITCH_GRAMMAR[0]];
  memcpy(broken, SWITCH_GRAMMAR, sizeof broken);
  broken[20] = 0; /* node 2's word count */
  CHECK(ag_grammar_load(broken, n, &g, &err) == AG_ERR_INVALID && g == NULL);
  memcpy(broken, SWITCH_GRAMMAR, sizeof broken);
  broken[22] = 0; /* its first word's length */
  CHECK(ag_grammar_load(broken, n, &g, &err) == AG_ERR_INVALID && g == NULL);
}

static void test_switch_linked(ag_vocab *v, ag_grammar *part_grammar, ag_compiled *part) {
  ag_compiled *c = NULL;
  ag_error err;
  int ok = -1;
  size_t n = sizeof SWITCH_LINKED_GRAMMAR / sizeof SWITCH_LINKED_GRAMMAR[0];
  ag_matcher *m = linked_matcher(v, SWITCH_LINKED_GRAMMAR, n, part_grammar, part, &c);
  if (!m) return;
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2) | (1u << 5))); /* "a", "ab", "x" */
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"x12", 3, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_reset(m);
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"abab", 4, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_can_end(m));
  ag_matcher_reset(m);
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"xx", 2, &ok, &err) == AG_OK && ok == 0);
  ag_matcher_free(m);
  ag_compiled_free(c);
  test_link_corruptions(v, SWITCH_LINKED_GRAMMAR, n, part_grammar, part);
}

static void test_counted(ag_vocab *v) {
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  int ok = -1;
  CHECK(ag_grammar_load(COUNTED_GRAMMAR, sizeof COUNTED_GRAMMAR / sizeof COUNTED_GRAMMAR[0], &g,
                        &err) == AG_OK);
  if (!g) return;
  CHECK(ag_grammar_num_states(g) < 16); /* not unrolled */
  CHECK(ag_compiled_new(g, v, &c, &err) == AG_OK);
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2))); /* "a", "ab" */
  CHECK(ag_matcher_accept_token(m, 2, &ok, &err) == AG_OK && ok == 1);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2))); /* a second "ab" is needed */
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)"ab", 2, &ok, &err) == AG_OK && ok == 1);
  CHECK(mask_of(m) == ((1u << 0) | (1u << 2) | (1u << 3) | (1u << 4)));
  for (int i = 0; i < 149; i++) CHECK(ag_matcher_accept_token(m, 4, &ok, &err) == AG_OK && ok == 1);
  CHECK(ag_matcher_accept_token(m, 3, &ok, &err) == AG_OK && ok == 1); /* 299 digits */
  CHECK(!ag_matcher_can_end(m));
  CHECK(mask_of(m) == ((1u << 3) | (1u << 4)));
  CHECK(ag_matcher_accept_token(m, 3, &ok, &err) == AG_OK && ok == 1); /* 300 */
  CHECK(ag_matcher_can_end(m));
  CHECK(mask_of(m) == ((1u << 3) | (1u << 4) | (1u << 7)));
  CHECK(ag_matcher_rollback(m, 1, &err) == AG_OK);
  CHECK(!ag_matcher_can_end(m));
  CHECK(ag_matcher_accept_token(m, 4, &ok, &err) == AG_OK && ok == 1); /* 301 */
  CHECK(ag_matcher_can_end(m));
  ag_matcher_free(m);
  test_counted_linked(v, g, c);
  ag_grammar_free(g);
  ag_compiled_free(c);
}

static int keytrie_accepts(ag_matcher *m, const char *key) {
  int ok = -1;
  ag_error err;
  ag_matcher_reset(m);
  CHECK(ag_matcher_accept_bytes(m, (const uint8_t *)key, strlen(key), &ok, &err) == AG_OK);
  return ok == 1 && ag_matcher_can_end(m);
}

static void test_keytrie(ag_vocab *v) {
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_matcher *m = NULL;
  ag_error err;
  size_t n = sizeof KEYTRIE_GRAMMAR / sizeof KEYTRIE_GRAMMAR[0];
  CHECK(ag_grammar_load(KEYTRIE_GRAMMAR, n, &g, &err) == AG_OK);
  if (!g) return;
  CHECK(ag_compiled_new(g, v, &c, &err) == AG_OK);
  ag_grammar_free(g);
  CHECK(ag_matcher_new(c, NULL, -1, 0, &m, &err) == AG_OK);
  const char *keys[] = {"\"", "b\"", "a1\"", "ab1\"", "abc\"", "~\"", "a~\"", "ab~\"", "x1z\""};
  for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) CHECK(keytrie_accepts(m, keys[k]));
  const char *names[] = {"a\"", "ab\"", "a", "ab~", "A\""};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) CHECK(!keytrie_accepts(m, names[k]));
  ag_matcher_free(m);
  ag_compiled_free(c);
  test_corruptions(v, KEYTRIE_GRAMMAR, n);
  /* Names out of order, a name byte that is no raw character, an empty name, raw characters
   * that hold the quote: refused, not built. */
  int32_t broken[sizeof KEYTRIE_GRAMMAR / sizeof KEYTRIE_GRAMMAR[0]];
  const int32_t at[] = {49, 49, 48, 42}, value[] = {'b', '"', 0, ' '};
  for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
    memcpy(broken, KEYTRIE_GRAMMAR, sizeof broken);
    broken[at[k]] = value[k];
    CHECK(ag_grammar_load(broken, n, &g, &err) == AG_ERR_INVALID && g == NULL);
  }
}

static void test_bad_inputs(ag_vocab *v) {
  ag_error err;
  test_corruptions(v, GRAMMAR, sizeof GRAMMAR / sizeof GRAMMAR[0]);
  test_corruptions(v, COUNTED_GRAMMAR, sizeof COUNTED_GRAMMAR / sizeof COUNTED_GRAMMAR[0]);
  test_corruptions(v, DISPATCH_GRAMMAR, sizeof DISPATCH_GRAMMAR / sizeof DISPATCH_GRAMMAR[0]);
  uint32_t offsets[2] = {0, 1};
  uint8_t kinds[1] = {9};
  ag_vocab *bad = NULL;
  CHECK(ag_vocab_new((const uint8_t *)"a", offsets, kinds, 1, 1, &bad, &err) == AG_ERR_INVALID);
  kinds[0] = 0;
  CHECK(ag_vocab_new((const uint8_t *)"a", offsets, kinds, 1, 0, &bad, &err) == AG_ERR_INVALID);
  CHECK(bad == NULL);
}

/* A vocabulary sharing another's tables (and one sharing that one's) matches the
 * same, keeps its own caches, and outlives the vocabulary that built the tables. */
static void test_shared_tables(void) {
  ag_vocab *base = make_vocab(), *shared = NULL, *again = NULL, *none = NULL;
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_error err;
  if (!base) return;
  CHECK(ag_vocab_share_tables(NULL, &none, &err) == AG_ERR_INVALID && none == NULL);
  CHECK(ag_vocab_share_tables(base, NULL, &err) == AG_ERR_INVALID);
  CHECK(ag_vocab_share_tables(base, &shared, &err) == AG_OK);
  CHECK(ag_vocab_share_tables(shared, &again, &err) == AG_OK);
  ag_vocab_free(base); /* the tables stay while a vocabulary shares them */
  ag_vocab_free(shared);
  if (!again) return;
  CHECK(ag_vocab_num_tokens(again) == N_TOKENS && ag_vocab_mask_size(again) == MASK_SIZE);
  CHECK(ag_vocab_cache_bytes(again) == 0);
  CHECK(ag_grammar_load(GRAMMAR, sizeof GRAMMAR / sizeof GRAMMAR[0], &g, &err) == AG_OK);
  if (g) CHECK(ag_compiled_new(g, again, &c, &err) == AG_OK);
  ag_grammar_free(g);
  if (c) test_matching(c);
  ag_compiled_free(c);
  ag_vocab_free(again);
}

/* Batches on a pool: same masks as one by one, and every bad argument refused. */
static void test_batch(ag_compiled *c) {
  ag_pool *pool = NULL, *none = NULL;
  ag_error err;
  ag_matcher *m[3] = {NULL, NULL, NULL};
  int ok;
  CHECK(ag_pool_new(0, &none, &err) == AG_ERR_INVALID && none == NULL);
  CHECK(ag_pool_new(100000, &none, &err) == AG_ERR_INVALID && none == NULL);
  CHECK(ag_pool_new(3, &pool, &err) == AG_OK && ag_pool_num_threads(pool) == 3);
  for (int i = 0; i < 3; i++) CHECK(ag_matcher_new(c, NULL, -1, 0, &m[i], &err) == AG_OK);
  CHECK(ag_matcher_accept_token(m[1], 4, &ok, &err) == AG_OK && ok == 1); /* "12" */
  uint32_t masks[4 * 2];
  int32_t rows[3] = {3, 0, 2}, results[3] = {-9, -9, -9};
  memset(masks, 0xab, sizeof masks);
  CHECK(ag_batch_fill_masks(pool, m, rows, 3, masks, 4, 2, results, &err) == AG_OK);
  CHECK(results[0] == 0 && results[1] == 0 && results[2] == 0);
  CHECK(masks[3 * 2] == mask_of(m[0]) && masks[0] == mask_of(m[1]) && masks[2 * 2] == mask_of(m[2]));
  CHECK(masks[1 * 2] == 0xababababu); /* row 1 untouched */
  ag_matcher *twice[2] = {m[0], m[0]};
  int32_t same_rows[2] = {1, 1}, bad_rows[2] = {0, 4};
  CHECK(ag_batch_fill_masks(pool, twice, rows, 2, masks, 4, 2, results, &err) == AG_ERR_INVALID);
  CHECK(ag_batch_fill_masks(pool, m, same_rows, 2, masks, 4, 2, results, &err) == AG_ERR_INVALID);
  CHECK(ag_batch_fill_masks(pool, m, bad_rows, 2, masks, 4, 2, results, &err) == AG_ERR_RANGE);
  CHECK(ag_batch_fill_masks(NULL, m, rows, 3, masks, 4, 2, results, &err) == AG_ERR_INVALID);
  CHECK(ag_batch_fill_masks(pool, m, rows, 0, masks, 4, 2, results, &err) == AG_OK);
  /* One short row: that matcher fails, the others are filled, the first failure reported. */
  CHECK(ag_batch_fill_masks(pool, m, rows, 3, masks, 4, 1, results, &err) == AG_ERR_INVALID);
  CHECK(results[0] == -AG_ERR_INVALID && strstr(err.message, "matcher 0 (row 3)") != NULL);
  for (int i = 0; i < 3; i++) ag_matcher_free(m[i]);
  ag_pool_free(pool);
  ag_pool_free(NULL);
}

/* Loads with a build cache, which keeps a key trie's piece and lends one build's working
 * memory to the next: the same automata as without it, and freeing the cache frees what it
 * keeps (the leak check). */
static void test_build_cache(void) {
  const int32_t *grams[] = {GRAMMAR, KEYTRIE_GRAMMAR, COUNTED_GRAMMAR, DISPATCH_GRAMMAR};
  const size_t sizes[] = {sizeof GRAMMAR, sizeof KEYTRIE_GRAMMAR, sizeof COUNTED_GRAMMAR,
                          sizeof DISPATCH_GRAMMAR};
  ag_build_cache *cache = NULL;
  ag_error err;
  CHECK(ag_build_cache_new(&cache, &err) == AG_OK);
  if (!cache) return;
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < sizeof grams / sizeof grams[0]; k++) {
      ag_grammar *with = NULL, *without = NULL;
      size_t n = sizes[k] / sizeof(int32_t);
      CHECK(ag_grammar_load_cached(grams[k], n, cache, &with, &err) == AG_OK);
      CHECK(ag_grammar_load(grams[k], n, &without, &err) == AG_OK);
      if (with && without) CHECK(ag_grammar_num_states(with) == ag_grammar_num_states(without));
      ag_grammar_free(with);
      ag_grammar_free(without);
    }
  ag_build_cache_free(cache);
}

/* root ::= "x" r1, r1 ::= r1 "a" (never finishes), r2 ::= "b" (unreachable) */
static const int32_t SURVEY_GRAMMAR[] = {
    0x52494741, 1, 3, 0, 5, 16, /* header */
    3, 4, 1,                    /* bodies: rule 0 = node 3, rule 1 = node 4, rule 2 = node 1 */
    0, 3, 6, 8, 12,             /* node offsets */
    1, 1, 'x',                  /* node 0: LITERAL "x" */
    1, 1, 'a',                  /* node 1: LITERAL "a" (also rule 2's body) */
    5, 1,                       /* node 2: RULEREF rule 1 */
    3, 2, 0, 2,                 /* node 3: SEQ "x" r1 */
    3, 2, 2, 1,                 /* node 4: SEQ r1 "a" */
};

static int32_t survey_flags(const int32_t *gram, size_t n, int32_t n_external) {
  int32_t flags = -1;
  ag_error err;
  CHECK(ag_ir_survey(gram, n, n_external, &flags, &err) == AG_OK);
  return flags;
}

static void test_survey(void) {
  ag_error err;
  int32_t flags = -1;
  size_t n = sizeof SURVEY_GRAMMAR / sizeof SURVEY_GRAMMAR[0];
  CHECK(survey_flags(GRAMMAR, sizeof GRAMMAR / sizeof GRAMMAR[0], 0) ==
        (AG_IR_ALL_REACHABLE | AG_IR_ROOT_FINISHES));
  CHECK(survey_flags(SURVEY_GRAMMAR, n, 0) == 0);
  /* a linked part's rule derives some string; its index needs n_external */
  CHECK(survey_flags(LINKED_GRAMMAR, sizeof LINKED_GRAMMAR / sizeof LINKED_GRAMMAR[0], 1) ==
        (AG_IR_ALL_REACHABLE | AG_IR_ROOT_FINISHES));
  CHECK(ag_ir_survey(LINKED_GRAMMAR, sizeof LINKED_GRAMMAR / sizeof LINKED_GRAMMAR[0], 0, &flags,
                     &err) == AG_ERR_INVALID);
  /* a dispatch is left to the slower check: not said to finish */
  CHECK(survey_flags(DISPATCH_GRAMMAR, sizeof DISPATCH_GRAMMAR / sizeof DISPATCH_GRAMMAR[0], 0) ==
        AG_IR_ALL_REACHABLE);
  CHECK(survey_flags(KEYTRIE_GRAMMAR, sizeof KEYTRIE_GRAMMAR / sizeof KEYTRIE_GRAMMAR[0], 0) ==
        (AG_IR_ALL_REACHABLE | AG_IR_ROOT_FINISHES));
  CHECK(ag_ir_survey(GRAMMAR, sizeof GRAMMAR / sizeof GRAMMAR[0], 0, NULL, &err) == AG_ERR_INVALID);
  CHECK(ag_ir_survey(NULL, 4, 0, &flags, &err) == AG_ERR_INVALID && flags == 0);
  /* every corruption is refused or surveyed without a bad read (the sanitizers watch) */
  int32_t broken[sizeof SURVEY_GRAMMAR / sizeof SURVEY_GRAMMAR[0]];
  const int32_t values[] = {-3, -2, -1, 0, 1, 2, 5, 7, 1000000, INT32_MIN, INT32_MAX};
  for (size_t i = 0; i < n; i++) {
    for (size_t k = 0; k < sizeof values / sizeof values[0]; k++) {
      memcpy(broken, SURVEY_GRAMMAR, sizeof broken);
      broken[i] = values[k];
      ag_status st = ag_ir_survey(broken, n, 0, &flags, &err);
      CHECK(st == AG_OK || flags == 0);
    }
  }
}

int main(void) {
  ag_vocab *v = make_vocab();
  ag_grammar *g = NULL;
  ag_compiled *c = NULL;
  ag_error err;
  if (!v) return 1;
  CHECK(ag_grammar_load(GRAMMAR, sizeof GRAMMAR / sizeof GRAMMAR[0], &g, &err) == AG_OK);
  if (!g) return 1;
  CHECK(ag_compiled_new(g, v, &c, &err) == AG_OK);
  ag_grammar_free(g); /* the compiled grammar keeps its own reference */
  test_matching(c);
  test_bad_inputs(v);
  test_dispatch(v);
  test_counted(v);
  test_switch(v);
  test_keytrie(v);
  test_link(v);
  test_link_inlined_rule(v);
  test_batch(c);
  test_shared_tables();
  test_build_cache();
  test_survey();
  CHECK(ag_vocab_cache_bytes(v) > ag_vocab_shared_cache_bytes(v)); /* c is alive */
  ag_compiled_free(c);
  /* Every grammar freed: what is left counted is the shared cache alone. */
  CHECK(ag_vocab_cache_bytes(v) == ag_vocab_shared_cache_bytes(v));
  ag_vocab_set_shared_cache_limit(v, 0);
  ag_vocab_free(v);
  if (failures) fprintf(stderr, "%d checks failed\n", failures);
  return failures ? 1 : 0;
}

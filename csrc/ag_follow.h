/* ag_follow.h - the FOLLOW sets of a grammar's rules (ag_follow.c). Internal. */
#ifndef AG_FOLLOW_H
#define AG_FOLLOW_H

#include "ag_grammar.h"

/* For each rule, the bytes that may come right after it, 8 words per rule, an
 * over-approximation (parts' rules and the root: any byte). *out is the
 * caller's to free. */
ag_status ag_grammar_follow(const ag_grammar *g, uint32_t **out, ag_error *err);

#endif /* AG_FOLLOW_H */

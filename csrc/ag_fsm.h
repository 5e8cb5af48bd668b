/*
 * ag_fsm.h - the per-rule automaton builder (ag_fsm.c and the files of its parts,
 * ag_fsm_builder.h) that ag_grammar_load and ag_grammar_link run. Internal.
 */
#ifndef AG_FSM_H
#define AG_FSM_H

#include "ag_grammar.h"
#include "ag_ir.h"

/*
 * Builds one deterministic automaton per rule (equivalent states merged)
 * into g's state and edge arrays, and the rule arrays: n_rules, n_ir_rules,
 * rule_start, rule_repeat and a zeroed rule_nullable. The IR's rules come
 * first; hidden rules follow (a counted rule per repeat too large to unroll,
 * and a rule per such repeat's child unless it is a rule reference). Rule
 * edges name IR rules and external rules by their IR labels and hidden rule k
 * by ir->n_rules + ir->n_external + k; state_rule counts hidden rule k as
 * ir->n_rules + k (the same when n_external is 0). Byte edges come sorted,
 * disjoint and merged; rule edges sorted by distinct rule. Dead states are left
 * in place: trimming needs every rule built first (ag_grammar.c does it). A
 * cache (may be NULL) lends the pieces other loads built (ag_build_cache.h). On
 * failure the caller frees g (ag_grammar_destroy).
 */
ag_status ag_fsm_build(const ag_ir *ir, ag_grammar *g, ag_build_cache *cache, ag_error *err);

#endif /* AG_FSM_H */

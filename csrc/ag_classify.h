/*
 * ag_classify.h - one walk of the sorted vocabulary that classifies every token
 * for one automaton state (ag_classify.c): accepted, rejected or uncertain (see
 * ag_mask_cache.h). The mask cache runs it for a state's first visit, and its
 * derivations run it on the tokens they must walk again. Internal.
 */
#ifndef AG_CLASSIFY_H
#define AG_CLASSIFY_H

#include "ag_earley.h"
#include "ag_mask_cache.h"
#include "ag_walk_rows.h"

/* How a rule's states classify the vocabulary. Every mode walks the rule's own
 * byte automaton; they differ in what a rule edge reached after a byte means.
 *   BYTES     the rule has no rule edge.
 *   DISPATCH  a dispatch rule: its rule edges follow a complete trigger, so they
 *             are exits (a token failing past one is uncertain) and the classes
 *             depend on the rule alone: shared across grammars by key.
 *   HYBRID    any other rule: a token failing past a rule edge is resolved by the
 *             Earley parser from the item, so the classes are exact; only those
 *             tokens pay for the parser, every other one a byte step each. A
 *             state that can reach no rule edge walks as a BYTES state (keyed).
 * For DISPATCH a rule edge of the classified state itself is not an exit: its
 * rule's start is predicted into the same Earley set and classifies the tokens
 * that enter it. For HYBRID it is: resolving such tokens once here (a JSON
 * value followed by the parent's ',' or '}', as in '",') is what keeps them out
 * of the uncertain tokens that every mask of the state would check again. */
enum { AG_WALK_BYTES = 0, AG_WALK_DISPATCH = 1, AG_WALK_HYBRID = 2 };

/* Where the classification walk is after d bytes of the current token: the
 * automaton state (ag_walk_rows_at), and in `reach` AG_CELL_CAN_END (the rule
 * could end, or for DISPATCH an exit was passed, within d bytes), AG_CELL_ENDS
 * (the rule could end, whatever byte came next) and AG_CELL_EXITED (HYBRID: a
 * rule edge was passed). */
typedef struct ag_walk_depth {
  int32_t at;
  uint32_t reach;
} ag_walk_depth;

typedef struct ag_classify {
  const ag_grammar *g;
  int mode;
  ag_walk_rows rows;
  ag_walk_depth *path; /* [max_token_len + 1] */
  /* HYBRID: an Earley parser on the item, started on first need. It holds the
   * first pdepth bytes of the last token it resolved; pshared is the prefix that
   * token shares with the current one (least LCP since). */
  ag_parser parser;
  bool parser_ready;
  uint32_t parser_base, pdepth, pshared;
  uint32_t first[8]; /* the bytes the parser can scan first: others fail at once */
  /* HYBRID with rule edges on the state itself: the tokens some predicted state
   * (a scannable state of the item's closure) leaves uncertain, by position, when
   * every such state's classes are known already (covered). A token the state's
   * own bytes reject, and no predicted state leaves uncertain, cannot cross into
   * the state's rule: predicted states that accept it cover it in the union. */
  uint32_t *kunc;
  bool covered;
  bool own_exit; /* HYBRID, and the classified state has rule edges */
  bool *ecan_end; /* [max_token_len + 1] the item's rule could end, for the parser */
  const uint32_t *follow; /* the rule's FOLLOW set (256 bits); NULL: any byte */
  bool fail_end;          /* the last failed step could have ended the rule first */
  bool fail_ends;         /* ... had any byte been allowed to follow it */
  /* With record_any, the runs of tokens uncertain had any byte been allowed to
   * follow the rule, and not with its FOLLOW set, as (begin, end) positions:
   * with `uncertain`, the classes of the state's "any follow" entry. */
  bool record_any;
  bool skip_dead; /* a rejected run extends over the next bytes rejected alike (ag_skip_dead_bytes) */
  AG_VEC(int32_t) any_extra;
  size_t n_any_extra; /* tokens in those runs */
  int32_t state;
  double deadline; /* 0: none */
  const atomic_bool *stop; /* the job's `stop` */
  bool checks;             /* a deadline or a stop to look at as the walk goes */
  AG_VEC(int32_t) uncertain;
  /* The accepted positions while there are at most AG_ACCEPTED_LIST_MAX and the
   * entry has no bitsets yet (ag_state_masks). */
  AG_VEC(int32_t) accepted;
  ag_state_masks *entry;
  bool oom; /* memory ran out during the walk: its caller fails with AG_ERR_NOMEM */
} ag_classify;

/* A state's loop class (ag_class_tokens.h), found once per classification:
 * the derivation, the walk and the note after it all ask. */
typedef struct ag_loop_memo {
  bool known;
  uint32_t depth; /* 0: none */
  uint32_t cls[8];
} ag_loop_memo;

/* No plain depth known yet (ag_masks_job's `plain`). */
#define AG_PLAIN_UNKNOWN UINT32_MAX

/* One classification of a state, as ag_mask_cache_get runs it: what its steps
 * read, borrowed for the call, and what they learn once and share (the memos).
 * It lives on ag_mask_cache_get's stack; the steps' results are their own
 * out-parameters. */
typedef struct ag_masks_job {
  ag_mask_cache *cache;   /* the classes computed so far (and the counters) */
  const ag_grammar *g;
  const ag_vocab *v;
  int32_t state;
  int32_t rule;           /* the state's */
  int walk;               /* how the rule's states classify tokens (AG_WALK_*) */
  const uint32_t *follow; /* the FOLLOW set a walk uses; NULL: any byte */
  double deadline;        /* of a walk; 0: none */
  const atomic_bool *stop; /* set when a background worker's grammar is freed: the walk gives up; NULL: none */
  int8_t narrow;          /* ag_walk_is_narrow's answer, -1 until asked */
  ag_loop_memo loop;
  uint32_t plain;         /* the state's plain depth (ag_plain_depth), AG_PLAIN_UNKNOWN until known */
  bool refuses;           /* with plain: ag_plain_depth's `refuses` */
  bool lock_free;         /* a background worker's: no lock a mask may wait on (ag_mask_cache_get) */
} ag_masks_job;

/* Sets up the classification of job's state: the walk's arrays, an empty entry,
 * and (HYBRID, rule edges on the state) the cover by predicted states, past
 * `deadline` (0: none). Whatever the status, ag_classify_end releases it. */
ag_status ag_classify_begin(ag_classify *w, const ag_masks_job *job, double deadline,
                            ag_error *err);
/* Releases the walk; after a successful one (st AG_OK), stores its uncertain
 * tokens and hands the entry over in *out, else frees it and returns st. */
ag_status ag_classify_end(ag_classify *w, const ag_vocab *v, ag_status st, ag_state_masks **out,
                          ag_error *err);

/* Walks the sorted vocabulary once, tokens in `safe` (may be NULL) accepted
 * without a walk (the caller copied them into the entry). */
ag_status ag_classify_all(ag_classify *w, const ag_vocab *v, const uint32_t *safe, ag_error *err);
/* Classifies every token for a trie rule's state by ranges; the state has no
 * rule edge of its own (own_exit), no safe tokens, no "any follow" record. */
ag_status ag_classify_trie(ag_classify *w, const ag_vocab *v, ag_error *err);
/* Classifies sorted token i, whose first *depth bytes the walk has in place;
 * *next is the next position to classify (with `single`, always i + 1). */
ag_status ag_classify_token(ag_classify *w, const ag_vocab *v, int32_t i, uint32_t *depth,
                            bool single, int32_t *next, ag_error *err);
/* The first bytes whose tokens the walk's state rejects outright (dead[8]). */
void ag_dead_first_bytes(ag_classify *w, const ag_vocab *v, uint32_t dead[8]);

/* Gives e (which has no accepted tokens yet) bitsets that are copies of `ids`
 * and `pos`; false when memory ran out. */
bool ag_accepted_copy(ag_state_masks *e, const ag_vocab *v, const uint32_t *ids,
                      const uint32_t *pos);
/* Copies from's accepted tokens of at most `level` bytes into w's entry (all
 * of them with UINT32_MAX); false when memory ran out. */
bool ag_copy_accepted(ag_classify *w, const ag_state_masks *from, const ag_vocab *v,
                      uint32_t level);
/* After a walk with record_any: the state's classes had any byte been allowed
 * to follow its rule. */
ag_status ag_any_entry(const ag_classify *w, const ag_vocab *v, ag_state_masks **out,
                       ag_error *err);


#endif /* AG_CLASSIFY_H */

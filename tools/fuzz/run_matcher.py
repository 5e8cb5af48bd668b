"""Harness body for the matcher: a random list of calls with cheap self-checks between them.

The checks (an allowed token is accepted, the cached mask equals the direct one, a stop token
terminates) raise ``Finding``, reported as ``invariant``.
"""

from __future__ import annotations

from typing import Any, Dict, Tuple

from .contract import Finding


def _matcher_grammar(spec: Tuple[str, Any]) -> Any:
    from agentgrammar import Grammar

    kind, value = spec
    if kind == "ebnf":
        return Grammar.from_ebnf(value)
    if kind == "regex":
        return Grammar.from_regex(value)
    if kind == "schema":
        return Grammar.from_json_schema(value)
    return Grammar.from_structural_tag(value)


def run_matcher(inp: Dict[str, Any]) -> None:
    import numpy as np

    from agentgrammar import AgentGrammarError, Compiler, Matcher, MatcherError, Vocabulary

    try:
        grammar = _matcher_grammar(inp["grammar"])
        vocab = Vocabulary(
            inp["tokens"], stop_token_ids=inp["stop"], vocab_size=len(inp["tokens"]) + inp["vocab_extra"]
        )
        compiler = Compiler(vocab, reuse_grammars=False, defer_min_words=1 if inp.get("defer") else None)
        compiled = compiler.compile(grammar)
        matcher = Matcher(
            compiled,
            stop_token_ids=inp["matcher_stop"],
            terminate_without_stop_token=inp["terminate_without_stop"],
        )
    except AgentGrammarError:
        return
    n = vocab.vocab_size
    words = (n + 31) // 32
    mask = np.zeros((1, words), dtype=np.int32)
    direct = np.zeros((1, words), dtype=np.int32)
    stops = set(inp["matcher_stop"] if inp["matcher_stop"] is not None else vocab.stop_token_ids)
    for op in inp["ops"]:
        try:
            kind = op[0]
            if kind == "allowed":
                if matcher.is_terminated():
                    continue
                matcher.fill_next_token_bitmask(mask)
                bits = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:n])
                if len(bits) == 0:
                    continue
                tok = int(bits[op[1] % len(bits)])
                if tok >= vocab.num_tokens and tok not in stops:  # a padding stop id: see the regressions
                    raise Finding(f"the mask allows padding id {tok} (num_tokens {vocab.num_tokens})")
                if not matcher.accept_token(tok):
                    raise Finding(
                        f"token {tok} ({vocab.token_bytes[tok]!r}) allowed by the mask was rejected"
                    )
            elif kind == "tok":
                terminated = matcher.is_terminated()
                try:
                    ok = matcher.accept_token(op[1])
                except MatcherError:
                    if not terminated:
                        raise
                    continue
                if terminated:
                    raise Finding("accept_token after termination did not raise MatcherError")
                if (
                    ok
                    and op[1] in stops
                    and not matcher.is_terminated()
                    and not inp["terminate_without_stop"]
                ):
                    raise Finding(f"accepting stop token {op[1]} did not terminate")
            elif kind == "str":
                matcher.accept_string(op[1])
            elif kind == "rollback":
                matcher.rollback(op[1])
            elif kind == "reset":
                matcher.reset()
                if matcher.num_accepted_steps != 0:
                    raise Finding("num_accepted_steps is not 0 after reset()")
            elif kind == "mask":
                matcher.fill_next_token_bitmask(mask)
                if op[1] and not matcher.is_terminated():
                    matcher._fill_next_token_bitmask_direct(direct)
                    if not np.array_equal(mask, direct):
                        diff = np.flatnonzero(
                            np.unpackbits((mask ^ direct).view(np.uint8), bitorder="little")
                        )
                        raise Finding(f"cached mask != direct mask at token ids {diff[:10].tolist()}")
            elif kind == "jump":
                matcher.find_jump_forward_string()
            elif kind == "badmask":
                bad = [
                    np.zeros((1, max(0, words - 1)), dtype=np.int32),
                    np.zeros((1, words), dtype=np.int64),
                    np.zeros((2, words), dtype=np.int32)[:, ::1].T,
                    np.zeros((words,), dtype=np.int32),
                ][op[1]]
                matcher.fill_next_token_bitmask(bad)
        except AgentGrammarError:
            continue
    matcher.is_completed()
    repr(matcher)

"""Fuzz harnesses for the engine under hostile use (issue 38), listed in ``harnesses``.

``threads``
    One matcher (sometimes two) shared by 2 to 8 threads, each running its own random list of
    calls: accept tokens and strings, masks, rollback, reset, jump-forward, state queries, and
    batches of the shared matchers in either order on a ``BatchMatcher``. The contract: no
    crash, no deadlock, only ``AgentGrammarError``; after the threads, the matcher's cached mask
    equals the direct one and an allowed token is accepted.
``ambiguous``
    Random highly ambiguous grammars (``x ::= "a" | "a" "a" | x x`` and kin: nullable,
    counted, two-rule and wrapped variants) driven by long strings, long tokens, masks and
    jump-forward under small ``accept_time_budget_s`` / ``mask_time_budget_s``. The contract:
    no budgeted call runs past its budget by more than a margin, a timed-out call leaves the
    matcher unchanged, a token the mask allows is accepted, and only ``AgentGrammarError``.

Usage::

    python tools/fuzz.py threads --seconds 180
    python tools/fuzz.py ambiguous --seconds 180 --findings /tmp/ag-findings
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any, Dict, List, Tuple

#: How far past its budget a budgeted call may run: the clock is read every few thousand
#: parser steps, and the machine may be busy (a hang is seconds to minutes).
BUDGET_SLACK_S = 0.5

#: How long the threads of one input may run before it counts as a deadlock.
THREAD_JOIN_S = 60.0


class EngineInvariant(Exception):
    """A harness's contract broken without an exception escaping (reported as a finding)."""


# --------------------------------------------------------------------------- threads

_THREAD_GRAMMARS: List[Tuple[str, Any]] = [
    (
        "schema",
        {
            "type": "object",
            "properties": {
                "a": {"type": "string", "maxLength": 40},
                "b": {"type": "array", "items": {"type": "integer"}},
                "c": {"enum": ["x", "yy", "zzz"]},
            },
            "required": ["a"],
        },
    ),
    (  # deferred when the input asks (``defer``): its first mask is bounded by two small grammars
        "schema",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "integer"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
            "required": ["name"],
        },
    ),
    ("ebnf", 'root ::= "{" pair ("," pair)* "}"\npair ::= "\\"" [a-z]+ "\\":" [0-9]+'),
    ("ebnf", 'root ::= ("ab" | "a" "c")* "d" [^<]*'),
    ("ebnf", 'root ::= x\nx ::= "a" | "a" "a" | x x'),
    ("regex", r"(\d{1,3}\.){3}\d{1,3}|[a-f]+@[a-z]{2,8}"),
    ("ebnf", 'root ::= "<a>" [a-z ]{0,300} "</a>"'),
]

_THREAD_TEXTS = [
    '{"a": "' + "x" * 120,
    '{"a": "q", "b": [' + "12," * 40,
    '{"ab":1,"cd":22,"ef":333}',
    "abacabd" * 20,
    "a" * 200,
    "10.0.0.1",
    "<a>" + "hello world " * 20,
]

_THREAD_WORDS = [b'{"', b'":', b'", "', b'":[', b"],", b"true", b"ab", b"aa", b"<a>", b"</a>", b"123"]


def _thread_ops(rng: random.Random, n_tokens: int) -> List[Tuple[Any, ...]]:
    ops: List[Tuple[Any, ...]] = []
    for _ in range(rng.randint(10, 80)):
        r = rng.random()
        if r < 0.25:
            ops.append(("allowed", rng.randrange(1 << 30)))
        elif r < 0.4:
            ops.append(("tok", rng.randrange(n_tokens) if rng.random() < 0.95 else rng.choice([-1, 2**31])))
        elif r < 0.55:
            text = rng.choice(_THREAD_TEXTS)
            ops.append(("str", text[: rng.randint(0, len(text))]))
        elif r < 0.7:
            ops.append(("rollback", rng.randint(0, 3) if rng.random() < 0.9 else rng.choice([-1, 100])))
        elif r < 0.76:
            ops.append(("reset",))
        elif r < 0.84:
            ops.append(("query",))
        elif r < 0.9:
            ops.append(("jump",))
        else:
            ops.append(("batch", rng.random() < 0.5))
    return ops


def gen_threads(rng: random.Random) -> Dict[str, Any]:
    """One vocabulary and grammar, and per thread a list of calls on the shared matcher(s)."""
    tokens = [bytes([b]) for b in range(32, 127)] + rng.sample(
        _THREAD_WORDS, rng.randint(0, len(_THREAD_WORDS))
    )
    tokens += [b"x" * rng.choice([8, 64, 300]) for _ in range(rng.randint(0, 2))]
    tokens.append(b"</s>")
    n_threads = rng.randint(2, 8)
    return {
        "grammar": rng.choice(_THREAD_GRAMMARS),
        "tokens": list(dict.fromkeys(tokens)),
        "two_matchers": rng.random() < 0.3,
        "mask_budget": rng.choice([None, None, 0.05, 1.0]),
        "accept_budget": rng.choice([None, None, 0.05, 1.0]),
        "pool_threads": rng.choice([1, 2, 4]),
        "defer": rng.random() < 0.5,  # the whole built by the pool's worker or the first steps, at once
        "ops": [_thread_ops(rng, len(tokens) + 2) for _ in range(n_threads)],
    }


def _grammar(spec: Tuple[str, Any]) -> Any:
    from agentgrammar import Grammar

    kind, value = spec
    if kind == "schema":
        return Grammar.from_json_schema(value)
    if kind == "regex":
        return Grammar.from_regex(value)
    return Grammar.from_ebnf(value)


def _allowed(matcher: Any, mask: Any, n: int) -> Any:
    import numpy as np

    matcher.fill_next_token_bitmask(mask)
    return np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:n])


def _thread_op(op: Tuple[Any, ...], m: Any, matchers: List[Any], pool: Any, mask: Any, n: int) -> None:
    kind = op[0]
    if kind == "allowed":
        ids = _allowed(m, mask, n)
        if len(ids):  # another thread may move the matcher in between: no verdict expected
            m.accept_token(int(ids[op[1] % len(ids)]))
    elif kind == "tok":
        m.accept_token(op[1])
    elif kind == "str":
        m.accept_string(op[1])
    elif kind == "rollback":
        m.rollback(op[1])
    elif kind == "reset":
        m.reset()
    elif kind == "query":
        m.is_completed(), m.is_terminated(), m.num_accepted_steps, repr(m)
    elif kind == "jump":
        m.find_jump_forward_string()
    else:  # a batch of the shared matchers, in either order (their locks in one global order)
        batch = matchers[::-1] if op[1] else matchers
        pool.fill_next_token_bitmask(batch, mask, list(range(len(batch))))


def run_threads(inp: Dict[str, Any]) -> None:
    import numpy as np

    from agentgrammar import AgentGrammarError, BatchMatcher, Compiler, Matcher, Vocabulary

    vocab = Vocabulary(inp["tokens"], stop_token_ids=[len(inp["tokens"]) - 1])
    defer = 1 if inp.get("defer") else None
    compiled = Compiler(vocab, reuse_grammars=False, defer_min_words=defer).compile(_grammar(inp["grammar"]))
    budgets = {"mask_time_budget_s": inp["mask_budget"], "accept_time_budget_s": inp["accept_budget"]}
    matchers = [Matcher(compiled, **budgets) for _ in range(2 if inp["two_matchers"] else 1)]
    pool = BatchMatcher(max_threads=inp["pool_threads"])
    n = vocab.vocab_size
    untyped: List[BaseException] = []

    def work(t: int, ops: List[Tuple[Any, ...]]) -> None:
        mask = np.zeros((2, (n + 31) // 32), dtype=np.int32)
        m = matchers[t % len(matchers)]
        for op in ops:
            try:
                _thread_op(op, m, matchers, pool, mask, n)
            except AgentGrammarError:
                continue
            except BaseException as e:  # the contract: typed errors only
                untyped.append(e)
                return

    threads = [threading.Thread(target=work, args=(t, ops), daemon=True) for t, ops in enumerate(inp["ops"])]
    for t in threads:
        t.start()
    deadline = time.monotonic() + THREAD_JOIN_S
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    if any(t.is_alive() for t in threads):
        raise EngineInvariant(f"threads still running after {THREAD_JOIN_S} s: a deadlock?")
    if untyped:
        raise untyped[0]
    for m in matchers:  # the state the threads left is whole
        _check_consistent(m, n)


def _check_consistent(m: Any, n: int) -> None:
    import numpy as np

    from agentgrammar import AgentGrammarError

    if m.is_terminated():
        return
    words = (n + 31) // 32
    cached, direct = np.zeros((1, words), dtype=np.int32), np.zeros((1, words), dtype=np.int32)
    try:
        m.fill_next_token_bitmask(cached)
        m._fill_next_token_bitmask_direct(direct)
    except AgentGrammarError:  # a mask past its budget, say
        return
    if not np.array_equal(cached, direct):
        raise EngineInvariant("after the threads, the cached mask differs from the direct one")
    ids = np.flatnonzero(np.unpackbits(cached.view(np.uint8), bitorder="little")[:n])
    if len(ids):
        try:
            ok = m.accept_token(int(ids[0]))
        except AgentGrammarError:  # past the accept budget
            return
        if not ok:
            raise EngineInvariant(f"after the threads, allowed token {int(ids[0])} was rejected")


# --------------------------------------------------------------------------- ambiguous


def _ambiguous_grammar(rng: random.Random) -> str:
    """``root ::= <wrapper around x>`` and ``x`` a highly ambiguous rule over a small alphabet."""
    letters = rng.choice(["a", "a", "ab", "abc"])

    def lit() -> str:
        return '"' + "".join(rng.choice(letters) for _ in range(rng.randint(1, 2))) + '"'

    alts = [lit()]  # at least one alternative without x: the rule derives something
    for _ in range(rng.randint(1, 4)):
        shape = rng.random()
        if shape < 0.35:
            alts.append(" ".join(["x"] * rng.randint(2, 3)))
        elif shape < 0.55:
            alts.append(rng.choice([f"{lit()} x", f"x {lit()}", f"{lit()} x {lit()}"]))
        elif shape < 0.65:
            alts.append('""')  # nullable: x x derives x in infinitely many ways
        elif shape < 0.8:
            alts.append(f"({lit()} | {lit()} {lit()})" + rng.choice(["*", "+", "{0,300}", "{2,40}"]))
        elif shape < 0.9:
            alts.append("y x" if rng.random() < 0.5 else "x y")
        else:
            alts.append(lit())
    rules = ["x ::= " + " | ".join(alts)]
    if any("y" in a.split() for a in alts):
        rules.append(f"y ::= {lit()} | x | y y")
    wrap = rng.choice(["x", "x", '"[" x "]"', 'x ("," x)*', "x x", 'x "!"'])
    return "\n".join([f"root ::= {wrap}"] + rules)


def _ambiguous_text(rng: random.Random, alphabet: str) -> str:
    n = rng.choice([1, 5, 40, 200, 800, 2000])
    text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, n)))
    if rng.random() < 0.3:
        text = rng.choice(alphabet[:1] or "a") * n
    return text


def gen_ambiguous(rng: random.Random) -> Dict[str, Any]:
    grammar = _ambiguous_grammar(rng)
    alphabet = "".join(sorted({c for c in grammar if c in "abc"})) or "a"
    tokens = sorted(set(alphabet) | {alphabet[:1] * k for k in (2, 3)} | {"ab", "ba", "[", "]", ",", "!"})
    tokens += [alphabet[:1] * rng.choice([64, 400, 1500]) for _ in range(rng.randint(0, 2))]
    tokens = list(dict.fromkeys(tokens)) + ["</s>"]
    ops: List[Tuple[Any, ...]] = []
    for _ in range(rng.randint(1, 12)):
        r = rng.random()
        if r < 0.3:
            ops.append(("str", _ambiguous_text(rng, alphabet)))
        elif r < 0.5:
            ops.append(("tok", rng.randrange(len(tokens))))
        elif r < 0.7:
            ops.append(("allowed", rng.randrange(1 << 30)))
        elif r < 0.8:
            ops.append(("jump",))
        elif r < 0.9:
            ops.append(("rollback", rng.randint(0, 2)))
        else:
            ops.append(("reset",))
    return {
        "grammar": grammar,
        "tokens": tokens,
        "accept_budget": rng.choice([0.01, 0.05, 0.1]),
        "mask_budget": rng.choice([0.01, 0.05, 0.1]),
        "ops": ops,
    }


def _state(m: Any) -> Tuple[int, bool, bool]:
    return m.num_accepted_steps, m.is_completed(), m.is_terminated()


def _timed(what: str, budget: float, call: Any, *args: Any) -> Any:
    """``call(*args)``, held to ``budget`` (plus slack) whether it returns or raises."""
    start = time.perf_counter()
    try:
        return call(*args)
    finally:
        took = time.perf_counter() - start
        if took > budget + BUDGET_SLACK_S:
            raise EngineInvariant(f"{what} took {took:.2f} s under a budget of {budget} s")


def _ambiguous_op(op: Tuple[Any, ...], m: Any, inp: Dict[str, Any], mask: Any, n: int) -> None:
    from agentgrammar import MaskTimeoutError

    kind, accept_budget, mask_budget = op[0], inp["accept_budget"], inp["mask_budget"]
    if kind in ("str", "tok"):
        before = _state(m)
        try:
            if kind == "str":
                _timed(f"accept_string of {len(op[1])} bytes", accept_budget, m.accept_string, op[1])
            else:
                _timed(f"accept_token({op[1]})", accept_budget, m.accept_token, op[1])
        except MaskTimeoutError as e:
            if _state(m) != before:
                raise EngineInvariant(
                    f"a timed-out {kind} accept changed the matcher: {before} -> {_state(m)}"
                ) from e
            raise
    elif kind == "allowed":
        if m.is_terminated():
            return
        ids = _timed("a mask", mask_budget, _allowed, m, mask, n)
        if len(ids):
            tok = int(ids[op[1] % len(ids)])
            if not _timed(f"accept_token({tok})", accept_budget, m.accept_token, tok):
                raise EngineInvariant(f"token {tok} allowed by the mask was rejected")
    elif kind == "jump":
        _timed("a jump-forward", mask_budget, m.find_jump_forward_string)
    elif kind == "rollback":
        m.rollback(op[1])
    else:
        m.reset()


def run_ambiguous(inp: Dict[str, Any]) -> None:
    import numpy as np

    from agentgrammar import AgentGrammarError, Compiler, Grammar, Matcher, Vocabulary

    try:
        vocab = Vocabulary(inp["tokens"], stop_token_ids=[len(inp["tokens"]) - 1])
        compiled = Compiler(vocab, reuse_grammars=False).compile(Grammar.from_ebnf(inp["grammar"]))
    except AgentGrammarError:
        return
    m = Matcher(compiled, accept_time_budget_s=inp["accept_budget"], mask_time_budget_s=inp["mask_budget"])
    n = vocab.vocab_size
    mask = np.zeros((1, (n + 31) // 32), dtype=np.int32)
    for op in inp["ops"]:
        try:
            _ambiguous_op(op, m, inp, mask, n)
        except AgentGrammarError:
            continue


HARNESSES: List[Tuple[str, Any, Any, str]] = [
    ("threads", gen_threads, run_threads, "one matcher shared by 2-8 threads: no crash, typed errors"),
    (
        "ambiguous",
        gen_ambiguous,
        run_ambiguous,
        "highly ambiguous grammars under accept and mask time budgets: no call past its budget",
    ),
]

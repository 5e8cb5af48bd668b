"""Differential test against xgrammar on the Llama-3.2 128k vocabulary.

For every grammar of a corpus (JSON, left-recursive arithmetic, s-expressions, CSV with bounded
repeats, nullable-heavy rules, multi-byte UTF-8 classes and strings, negated classes, escapes,
nested repeats, ...) and several seeds, walk a random valid path (a random token allowed by
xgrammar's mask, biased toward closing tokens and stop tokens so that paths end) and assert at
EVERY step that our token bitmask equals xgrammar's bit for bit.

One deliberate, documented difference: xgrammar 0.2.9 treats Llama-3.2's added special tokens
(``<|begin_of_text|>``, ``<|reserved_special_token_N|>``, ``<|image|>``: ids >= 128000 other than
the stop tokens) as ordinary text, so e.g. inside a JSON string it allows them; we never allow
special tokens. So the comparison clears those ids from xgrammar's mask, and separately asserts
that they are 0 in ours.

A second one: xgrammar also matches a stop token's *text* (``<|eot_id|>`` fits ``"<" [^>]* ">"``)
and then sets its bit even where the grammar cannot end; our stop tokens are decided only by
whether the grammar can end. So stop-token bits are compared apart: ours must equal
``is_completed()``, and xgrammar's must be set whenever it is complete.

A third one: xgrammar's built-in JSON grammar accepts a lone surrogate escape (``"\\ud800"``),
which decodes to no Unicode text; ours accepts a surrogate escape only as a high+low pair. So
our built-in JSON grammar is compared with xgrammar running our JSON grammar's EBNF (the
languages' relation to xgrammar's built-in one is tested in ``tests/grammar/test_builtin.py``).

Both sides use the same mask size (``vocab.vocab_size``) and the same stop tokens (ours, passed to
xgrammar as ``stop_token_ids``; xgrammar alone would detect only 128001).

The default run is a few seeds and ~40 steps per path; the ``slow`` variants walk more seeds and
longer paths.
"""

from __future__ import annotations

import os
import random
import sys
from dataclasses import dataclass
from typing import Any, List, Sequence

import numpy as np
import pytest

xgr = pytest.importorskip("xgrammar")
torch = pytest.importorskip("torch")

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary  # noqa: E402

try:
    from tests.hf_tokenizers import llama32_tokenizer
except ImportError:  # pytest run without the repository root on sys.path
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    from tests.hf_tokenizers import llama32_tokenizer

GRAMMARS = [
    (
        "json",
        r"""
root ::= ws value ws
value ::= object | array | string | number | "true" | "false" | "null"
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member ::= string ws ":" ws value
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
number ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [+-]? [0-9]+ )?
ws ::= [ \t\n]{0,3}
""",
    ),
    (
        "arith_left_recursive",
        r"""
root ::= expr
expr ::= expr ws ("+" | "-") ws term | term
term ::= term ws ("*" | "/") ws factor | factor
factor ::= "(" ws expr ws ")" | [0-9]+ ("." [0-9]+)? | "-" factor
ws ::= " "?
""",
    ),
    (
        "sexp",
        r"""
root ::= sexp
sexp ::= atom | "(" sexp* ")" | "(" sexp (" " sexp)* ")"
atom ::= [a-z0-9+*/<>=!?-]+ | "\"" [^"\\]* "\""
""",
    ),
    (
        "csv_bounded",
        r"""
root ::= header row{1,5}
header ::= name ("," name){0,3} "\n"
name ::= [a-z_]{1,8}
row ::= field ("," field){0,3} "\n"
field ::= [a-zA-Z0-9 ]{1,5} | "\"" [^"\n]{0,6} "\"" | ""
""",
    ),
    (
        "nullable_heavy",
        r"""
root ::= a b c d "."
a ::= "x"? | ""
b ::= a a | "y"*
c ::= (a | b)* "z"?
d ::= (("w")? ("v")?)*
""",
    ),
    (
        "utf8_classes",
        r"""
root ::= item (" " item){0,6}
item ::= [α-ω]+ | "日本語" | [一-龥]{1,3} | "😀" | [😀-🙏]{1,2} | "é" [à-ÿ]?
""",
    ),
    (
        "negated_and_escapes",
        r"""
root ::= "\x41" [\u00e9-\u00ea] "=" str ("," str){0,3}
str ::= "\"" ( [^"\\\n] | "\\" ["\\n] )* "\""
""",
    ),
    (
        "nested_repeats",
        r"""
root ::= ( ( "a" | "bc" | [0-9]{1,2} ){1,3} ";" ){2,4} ("x"{2})? "!"
""",
    ),
    (
        "right_recursive_list",
        r"""
root ::= "[" list "]"
list ::= item "," list | item
item ::= "\"" [a-z]{0,4} "\"" | [0-9]+ | "[" list "]" | "[]"
""",
    ),
    (
        "keywords_shared_prefixes",
        r"""
root ::= stmt (";" " "? stmt){0,4}
stmt ::= ("select" | "selection" | "sel" | "from" | "fromage" | "where") (" " ident)?
ident ::= [a-z_] [a-z_0-9]{0,6}
""",
    ),
    (
        "any_char_dot",
        r"""
root ::= "<" [^>]{0,10} ">" ("<" [^<>]{0,3} ">")?
""",
    ),
    (
        "tool_call_like",
        r"""
root ::= "<tool_call>" "{\"name\": \"" name "\", \"arguments\": " args "}" "</tool_call>"
name ::= "get_weather" | "get_time" | "search"
args ::= "{" ( "\"" [a-z]+ "\": " ( "\"" [^"\\\n]{0,20} "\"" | [0-9]{1,4} ) ( ", \"" [a-z]+ "\": " [0-9]{1,4} )* )? "}"
""",
    ),
]

GRAMMAR_IDS = [name for name, _ in GRAMMARS]
#: Bytes that tend to close a structure: preferred so that random paths end.
CLOSERS = b'"}])\n;>!.,'


@dataclass
class Env:
    tok: Any
    vocab: Vocabulary
    info: Any
    compiler: Compiler
    xcompiler: Any
    stops: List[int]
    special_words: np.ndarray  # uint32 words, 1 bits at our special token ids
    stop_words: np.ndarray  # uint32 words, 1 bits at the stop token ids
    closing: np.ndarray  # bool per id: the token contains a closing byte
    short: np.ndarray  # bool per id: a 1-byte token


@pytest.fixture(scope="module")
def env() -> Env:
    tok = llama32_tokenizer()
    vocab = Vocabulary.from_huggingface(tok)
    V = vocab.vocab_size
    stops = sorted(vocab.stop_token_ids)
    assert stops, "the Llama-3.2 vocabulary should have stop tokens"
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=V, stop_token_ids=stops)
    assert info.vocab_size == V
    assert sorted(info.stop_token_ids) == stops
    # The vocabularies agree on every token's bytes (normal tokens).
    special = sorted(vocab.special_token_ids)
    assert special and min(special) >= 128000, "only Llama-3.2's added tokens should be special"
    words = (V + 31) // 32
    bits = np.zeros(words * 32, dtype=np.uint8)
    bits[special] = 1
    special_words = np.packbits(bits, bitorder="little").view(np.uint32)
    bits[:] = 0
    bits[stops] = 1
    stop_words = np.packbits(bits, bitorder="little").view(np.uint32)
    closing = np.zeros(V, dtype=bool)
    short = np.zeros(V, dtype=bool)
    special_set = set(special) | set(stops)
    for i, t in enumerate(vocab.token_bytes):
        if i in special_set:
            continue
        closing[i] = any(c in t for c in CLOSERS)
        short[i] = len(t) == 1
    return Env(
        tok,
        vocab,
        info,
        Compiler(vocab),
        xgr.GrammarCompiler(info),
        stops,
        special_words,
        stop_words,
        closing,
        short,
    )


def _bits(words: np.ndarray, n: int) -> np.ndarray:
    return np.unpackbits(words.view(np.uint8), bitorder="little")[:n].astype(bool)


def _show(env: Env, ids: Sequence[int], limit: int = 12) -> str:
    ids = list(ids)
    shown = [
        (int(i), env.vocab.token_bytes[i] if i < env.vocab.num_tokens else b"<pad>") for i in ids[:limit]
    ]
    return f"{len(ids)} tokens {shown}{' ...' if len(ids) > limit else ''}"


def _choose(env: Env, rng: random.Random, allowed: np.ndarray, step: int, steps: int) -> int:
    """A random allowed token: in the first half of the walk mostly uniform (never a stop token
    unless nothing else is allowed) so that paths grow; later biased toward tokens with closing
    bytes, 1-byte tokens and stop tokens so that paths end."""
    stops = [s for s in env.stops if allowed[s]]
    ids = np.flatnonzero(allowed)
    normal = ids[~np.isin(ids, env.stops)]
    if not len(normal):
        return rng.choice(stops)
    late = step >= steps * 0.5
    if late and stops and rng.random() < 0.5:
        return rng.choice(stops)
    r = rng.random()
    if r < (0.6 if late else 0.15):
        pool = normal[env.closing[normal]]
        if len(pool):
            return int(rng.choice(pool.tolist()))
    if r < (0.85 if late else 0.35):
        pool = normal[env.short[normal]]
        if len(pool):
            return int(rng.choice(pool.tolist()))
    return int(rng.choice(normal.tolist()))


def differential_walk(env: Env, ours: Any, theirs: Any, seed: int, steps: int, label: str) -> int:
    """Walk one random valid path, comparing masks at every step; returns the steps taken."""
    V = env.vocab.vocab_size
    words = (V + 31) // 32
    rng = random.Random(seed)
    m = Matcher(ours)
    xm = xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
    our_bm = np.zeros((1, words), dtype=np.int32)
    x_bm = xgr.allocate_token_bitmask(1, V)
    path: List[int] = []
    history: List[np.ndarray] = []
    for step in range(steps + 1):
        m.fill_next_token_bitmask(our_bm)
        xm.fill_next_token_bitmask(x_bm)
        full = our_bm[0].view(np.uint32).copy()
        xfull = x_bm[0].numpy().view(np.uint32).copy()
        text = b"".join(env.vocab.token_bytes[t] for t in path)
        where = f"[{label} seed={seed}] after {len(path)} tokens {path[-8:]}, text {text[-80:]!r}"
        leaked = np.flatnonzero(_bits(full & env.special_words, V))
        assert not len(leaked), f"{where}: special tokens allowed: {_show(env, leaked)}"
        completed = m.is_completed()
        assert completed == xm.is_completed(), f"{where}: is_completed differs"
        assert _bits(full, V)[env.stops].tolist() == [completed] * len(env.stops), f"{where}: stop bits"
        if completed:
            assert _bits(xfull, V)[env.stops].all(), f"{where}: xgrammar disallows a stop token"
        a = full & ~env.stop_words
        b = xfull & ~env.special_words & ~env.stop_words
        pad = np.flatnonzero(np.unpackbits(a.view(np.uint8), bitorder="little")[V:])
        assert not len(pad), f"{where}: bits past the vocabulary set in our mask"
        # xgrammar may leave bits past V set in the last word: compare the first V bits only
        if not np.array_equal(_bits(a, V), _bits(b, V)):
            ga, gb = _bits(a, V), _bits(b, V)
            extra = np.flatnonzero(ga & ~gb)
            missing = np.flatnonzero(gb & ~ga)
            pytest.fail(
                f"{where}: mask differs from xgrammar\n ours only: {_show(env, extra)}\n xgrammar only: {_show(env, missing)}"
            )
        history.append(full)
        allowed = _bits(full, V)
        if not allowed.any():
            break
        t = _choose(env, rng, allowed, step, steps)
        assert xm.accept_token(t), f"{where}: xgrammar rejected {env.vocab.token_bytes[t]!r}"
        assert m.accept_token(t), f"{where}: we rejected {env.vocab.token_bytes[t]!r}"
        path.append(t)
        if t in env.stops:
            assert m.is_terminated() and xm.is_terminated()
            break
    # rollback restores an earlier mask, and xgrammar agrees there too
    if len(path) >= 2:
        k = rng.randint(1, len(path))
        m.rollback(k)
        xm.rollback(k)
        m.fill_next_token_bitmask(our_bm)
        xm.fill_next_token_bitmask(x_bm)
        a = our_bm[0].view(np.uint32)
        assert np.array_equal(a, history[len(path) - k]), (
            f"[{label} seed={seed}] rollback({k}) changed the mask"
        )
        mask_out = ~env.special_words & ~env.stop_words
        assert np.array_equal(_bits(a & mask_out, V), _bits(x_bm[0].numpy().view(np.uint32) & mask_out, V))
    return len(path)


_compiled_cache: dict = {}


def _compile_pair(env: Env, name: str, text: str):
    key = (id(env), name)
    if key not in _compiled_cache:
        _compiled_cache[key] = (
            env.compiler.compile(Grammar.from_ebnf(text)),
            env.xcompiler.compile_grammar(text),
        )
    return _compiled_cache[key]


# ---- tests --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, text", GRAMMARS, ids=GRAMMAR_IDS)
def test_masks_equal_xgrammar(env, name, text):
    ours, theirs = _compile_pair(env, name, text)
    for seed in (0, 1):
        differential_walk(env, ours, theirs, seed, steps=40, label=name)


def _xgrammar_json(env: Env) -> Any:
    """Our built-in JSON grammar, compiled by xgrammar from its EBNF (see the module docstring)."""
    from agentgrammar.grammar.builtin import json_rules
    from agentgrammar.grammar.printer import to_ebnf

    return env.xcompiler.compile_grammar(to_ebnf(json_rules(), "root"))


def test_builtin_json_equals_xgrammar(env):
    ours = env.compiler.compile(Grammar.builtin_json())
    theirs = _xgrammar_json(env)
    for seed in (0, 1, 2):
        differential_walk(env, ours, theirs, seed, steps=50, label="builtin_json")


def test_initial_masks_equal_xgrammar_for_all_grammars(env):
    """Cheap and broad: the first mask of every grammar."""
    V = env.vocab.vocab_size
    words = (V + 31) // 32
    for name, text in GRAMMARS:
        ours, theirs = _compile_pair(env, name, text)
        m, xm = Matcher(ours), xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
        our_bm = np.zeros((1, words), dtype=np.int32)
        x_bm = xgr.allocate_token_bitmask(1, V)
        m.fill_next_token_bitmask(our_bm)
        xm.fill_next_token_bitmask(x_bm)
        mask_out = ~env.special_words & ~env.stop_words
        ours_bits = _bits(our_bm[0].view(np.uint32) & mask_out, V)
        theirs_bits = _bits(x_bm[0].numpy().view(np.uint32) & mask_out, V)
        assert np.array_equal(ours_bits, theirs_bits), name


@pytest.mark.slow
@pytest.mark.parametrize("name, text", GRAMMARS, ids=GRAMMAR_IDS)
def test_masks_equal_xgrammar_many_seeds(env, name, text):
    ours, theirs = _compile_pair(env, name, text)
    for seed in range(2, 12):
        differential_walk(env, ours, theirs, seed, steps=60, label=name)


@pytest.mark.slow
def test_builtin_json_equals_xgrammar_many_seeds(env):
    ours = env.compiler.compile(Grammar.builtin_json())
    theirs = _xgrammar_json(env)
    for seed in range(3, 23):
        differential_walk(env, ours, theirs, seed, steps=80, label="builtin_json")


@pytest.mark.parametrize(
    "text",
    [
        'root ::= "\\"" [^"\\\\]* "\\""',
        'root ::= [^a-z]{1,3} "."',
        'root ::= ([α-ω] | [一-龥] | [😀-🙏] | "é")+ "."',
    ],
    ids=["negated_string", "negated_bounded", "utf8_ranges"],
)
def test_partial_utf8_tokens_equal_xgrammar(env, text):
    """After each 1-byte token that starts (or continues) a multi-byte character - including
    bytes that lead surrogates (0xED), overlong forms (0xE0, 0xF0) and code points past U+10FFFF
    (0xF4) - the masks agree."""
    V = env.vocab.vocab_size
    words = (V + 31) // 32
    ours, theirs = env.compiler.compile(Grammar.from_ebnf(text)), env.xcompiler.compile_grammar(text)
    tb = env.vocab.token_bytes
    specials = set(env.vocab.special_token_ids) | set(env.stops)
    byte_token = {t[0]: i for i, t in enumerate(tb) if len(t) == 1 and i not in specials}
    mask_out = ~env.special_words & ~env.stop_words
    our_bm = np.zeros((1, words), dtype=np.int32)
    x_bm = xgr.allocate_token_bitmask(1, V)
    for lead in [0xC2, 0xCE, 0xDF, 0xE0, 0xE4, 0xED, 0xEF, 0xF0, 0xF3, 0xF4]:
        for cont in [None, 0x80, 0x9F, 0xA0, 0xBF]:
            m, xm = Matcher(ours), xgr.GrammarMatcher(theirs, override_stop_tokens=env.stops)
            if text.startswith('root ::= "\\""'):
                assert m.accept_string('"') and xm.accept_string('"')
            seq = [lead] if cont is None else [lead, cont]
            ok_ours = all(m.accept_token(byte_token[b]) for b in seq)
            ok_theirs = all(xm.accept_token(byte_token[b]) for b in seq)
            assert ok_ours == ok_theirs, (text, bytes(seq))
            if not ok_ours:
                continue
            m.fill_next_token_bitmask(our_bm)
            xm.fill_next_token_bitmask(x_bm)
            a = _bits(our_bm[0].view(np.uint32) & mask_out, V)
            b = _bits(x_bm[0].numpy().view(np.uint32) & mask_out, V)
            if not np.array_equal(a, b):
                pytest.fail(
                    f"{text} after {bytes(seq)!r}: ours only {_show(env, np.flatnonzero(a & ~b))}, "
                    f"xgrammar only {_show(env, np.flatnonzero(b & ~a))}"
                )

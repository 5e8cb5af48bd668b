"""TagDispatch in the C core: its language against a brute-force reference, and the mask
cache's free-text fast path (tokens that cannot complete a word are accepted without a walk)
against the direct walk."""

from __future__ import annotations

import itertools
import random
from typing import Dict, List, Sequence, Tuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from agentgrammar import Compiler, Grammar, GrammarError, Matcher, Vocabulary, allocate_token_bitmask
from agentgrammar.grammar.ir import Literal, Rule, TagDispatch
from tests.hf_tokenizers import llama32_tokenizer

ALPHABET = b"ab<>"


def reference_accepts(d: TagDispatch, rests: Dict[str, bytes], text: bytes) -> bool:
    """Whether ``text`` is in the language of ``d``, each trigger's rule being one literal."""

    def segment(start: int) -> bool:
        for i in range(start, len(text) + 1):
            ended = [w for w in d.words() if len(w) <= i - start and text[i - len(w) : i] == w]
            if any(w in ended for w in d.excludes):  # an exclude wins where words end together
                return False
            if ended:
                ok = False
                for word, rule in d.triggers:
                    if word in ended and text.startswith(rests[rule], i):
                        after = i + len(rests[rule])
                        ok = ok or (segment(after) if d.loop_after_dispatch else after == len(text))
                if any(w in ended for w in d.stop_str):
                    ok = ok or i == len(text)
                return ok
        return d.stop_eos

    return segment(0)


def byte_vocab(extra: Sequence[bytes] = ()) -> Vocabulary:
    tokens = [bytes([c]) for c in ALPHABET] + [t for t in extra if t] + [b"</s>"]
    return Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])


def build(d: TagDispatch, rests: Dict[str, bytes]) -> Grammar:
    return Grammar.from_rules([Rule("root", d), *(Rule(n, Literal(v)) for n, v in rests.items())])


words = hs.binary(min_size=1, max_size=3).map(lambda b: bytes(ALPHABET[x % 4] for x in b))


@hs.composite
def dispatches(draw: hs.DrawFn) -> Tuple[TagDispatch, Dict[str, bytes]]:
    n_triggers = draw(hs.integers(0, 2))
    rests = {f"r{i}": draw(words) for i in range(n_triggers)}
    d = TagDispatch(
        triggers=tuple((draw(words), f"r{i}") for i in range(n_triggers)),
        stop_eos=draw(hs.booleans()),
        stop_str=tuple(draw(hs.lists(words, max_size=2))),
        loop_after_dispatch=draw(hs.booleans()),
        excludes=tuple(draw(hs.lists(words, max_size=2))),
    )
    return d, rests


@settings(max_examples=150, deadline=None)
@given(dispatches(), hs.lists(hs.binary(min_size=0, max_size=9), min_size=12, max_size=12))
def test_language_matches_reference(case, texts):
    d, rests = case
    try:
        grammar = build(d, rests)
        matcher = Matcher(Compiler(byte_vocab()).compile(grammar))
    except GrammarError:
        # The engine found the root unproductive: then the reference accepts nothing short.
        assert not any(reference_accepts(d, rests, bytes(t)) for t in [b"", b"a", b"ab<"])
        return
    rng = random.Random(len(texts))
    samples = [bytes(ALPHABET[x % 4] for x in t) for t in texts]
    # Texts built from the words themselves hit the interesting boundaries.
    pieces = [*d.words(), *rests.values(), b"a", b"<"]
    samples += [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 4))) for _ in range(12)]
    for text in samples:
        matcher.reset()
        expect = reference_accepts(d, rests, text)
        got = matcher.accept_string(text) and matcher.is_completed()
        assert got == expect, (d, rests, text)


def test_first_occurrence_decides():
    d = TagDispatch(triggers=((b"<a>", "r"),), excludes=(b"b>",), loop_after_dispatch=True)
    vocab = byte_vocab()
    compiled = Compiler(vocab).compile(build(d, {"r": b"X"}))
    cases = {
        b"": True,
        b"b<a>X": True,
        b"<a>Xb<a>X": True,
        b"<a>Xb>": False,
        b"b>": False,
        b"<a>": False,
        b"<a>Y": False,
    }
    for text, expect in cases.items():
        m = Matcher(compiled)
        assert (m.accept_string(text) and m.is_completed()) == expect, text


@pytest.mark.parametrize(
    "trigger, exclude", [(b"<a>", b"a>"), (b"a>", b"<a>"), (b"<a>", b"<a>b"), (b"b<a>", b"a")]
)
def test_an_exclude_ending_with_a_trigger_wins(trigger: bytes, exclude: bytes) -> None:
    """Where a trigger and an exclude end on the same byte the text dies, as in xgrammar."""
    d = TagDispatch(triggers=((trigger, "r"),), excludes=(exclude,))
    compiled = Compiler(byte_vocab()).compile(build(d, {"r": b"X"}))
    for n in range(7):
        for text in itertools.product(ALPHABET + b"X", repeat=n):
            m = Matcher(compiled)
            data = bytes(text)
            assert (m.accept_string(data) and m.is_completed()) == reference_accepts(d, {"r": b"X"}, data), (
                data
            )


def test_exclude_precedence_agrees_with_xgrammar() -> None:
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string

    for trigger, exclude in (("xabc", "abc"), ("bc", "abc"), ("abc", "bc"), ("xabc", "ab")):
        ebnf = f'root ::= TagDispatch(("{trigger}", body), excludes=("{exclude}"))\nbody ::= "!"'
        theirs = xgr.Grammar.from_ebnf(ebnf)
        ours = Grammar.from_ebnf(ebnf)
        for n in range(6):
            for t in itertools.product("xabc!", repeat=n):
                text = "".join(t)
                assert ours.accepts(text) == bool(_is_grammar_accept_string(theirs, text)), (ebnf, text)


def _walk_and_compare(compiled: Compiler, grammar: Grammar, vocab: Vocabulary, seed: int) -> int:
    """Random walks comparing cached and direct masks; returns how many masks were compared."""
    rng = random.Random(seed)
    compiled_grammar = compiled.compile(grammar)
    compared = 0
    for _ in range(6):
        matcher = Matcher(compiled_grammar)
        for _ in range(40):
            cached = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
            direct = allocate_token_bitmask(1, vocab.vocab_size, backend="numpy")
            matcher.fill_next_token_bitmask(cached)
            matcher._fill_next_token_bitmask_direct(direct)
            assert np.array_equal(cached, direct)
            compared += 1
            allowed = matcher.allowed_token_ids()
            if matcher.is_terminated() or not allowed:
                break
            assert matcher.accept_token(rng.choice(allowed))
    return compared


def test_fast_path_masks_equal_direct_walk():
    # Tokens that straddle the words in every way: prefixes, suffixes, whole words, overlaps.
    pieces = [b"<call>", b"</think>", b"STOP", b"{", b"}", b"ab", b"l>", b">", b"all>", b"<c", b"k>x"]
    rng = random.Random(3)
    tokens: List[bytes] = list(dict.fromkeys(pieces + [bytes(rng.choice(b"<>/acklTS{}x")) for _ in range(2)]))
    for _ in range(300):
        a, b = rng.choice(pieces), rng.choice(pieces)
        tokens.append(a[rng.randint(0, len(a) - 1) :] + b[: rng.randint(0, len(b))])
    tokens = list(dict.fromkeys(t for t in tokens if t))
    tokens = [b""] + tokens[:50] + [b"", b""] + tokens[50:] + [b"</s>", b"<"]
    vocab = Vocabulary(tokens, stop_token_ids=[len(tokens) - 2])
    compiler = Compiler(vocab)
    for loop in (True, False):
        for stop_eos in (True, False):
            d = TagDispatch(
                triggers=((b"<call>", "call"),),
                stop_eos=stop_eos,
                stop_str=(b"STOP",),
                loop_after_dispatch=loop,
                excludes=(b"</think>",),
            )
            grammar = Grammar.from_rules([Rule("root", d), Rule("call", Literal(b"{}"))])
            assert _walk_and_compare(compiler, grammar, vocab, seed=int(loop) * 2 + int(stop_eos)) > 20


@pytest.mark.parametrize("cache_limit_bytes", [512 * 1024 * 1024, 0])
def test_safe_tokens_found_through_the_words_first_bytes(cache_limit_bytes: int) -> None:
    """Only tokens holding a word's first byte are run through the words' automaton: words
    with other first bytes (one not ASCII), first bytes deep inside tokens, and dispatches
    sharing a first byte (its token index reused, or, with no shared cache, built for each).
    The index is found by one scan of all token bytes: empty tokens lie among them (at the
    offset of the next token), and a stop token holding the byte is not a text token."""
    pieces = ["<call>", "[TOOL]", "\u00abend\u00bb", "x<", "a[", "\u00ab", "\u00bb", "ll>", "OL]", "<", "["]
    rng = random.Random(11)
    tokens: List[bytes] = [p.encode() for p in pieces]
    for _ in range(400):
        a, b = rng.choice(pieces).encode(), rng.choice(pieces).encode()
        tokens.append(a[rng.randint(0, len(a) - 1) :] + b[: rng.randint(0, len(b))])
    tokens = list(dict.fromkeys(t for t in tokens if t))
    tokens = [b""] + tokens[:50] + [b"", b""] + tokens[50:] + [b"</s>", b"<"]
    vocab = Vocabulary(tokens, stop_token_ids=[len(tokens) - 2])
    compiler = Compiler(vocab, cache_limit_bytes=cache_limit_bytes)
    cases = [
        TagDispatch(triggers=((b"<call>", "call"),), excludes=("\u00abend\u00bb".encode(),)),
        TagDispatch(triggers=((b"[TOOL]", "call"),), stop_str=(b"<call>",), stop_eos=False),
        TagDispatch(triggers=((b"<call>", "call"), (b"[TOOL]", "call")), loop_after_dispatch=False),
    ]
    for seed, d in enumerate(cases):
        grammar = Grammar.from_rules([Rule("root", d), Rule("call", Literal(b"x"))])
        assert _walk_and_compare(compiler, grammar, vocab, seed=seed) > 20


def test_dispatch_classes_are_shared_across_grammars_with_other_tag_content():
    """A dispatch rule's states are classified from its own automaton, its triggers' rule
    edges taken as exits: grammars with the same words share those classes, whatever their
    tags contain, and the masks stay exact where tokens run from a trigger into the tag."""
    tokens = [b"<c", b"all>", b"<call>", b"<call>{", b"l>{", b">{", b"{}", b"{", b"}", b"x", b"ab", b"</s>"]
    vocab = Vocabulary(tokens, stop_token_ids=[len(tokens) - 1])
    compiler = Compiler(vocab, reuse_grammars=False, background=False)
    d = TagDispatch(triggers=((b"<call>", "call"),), excludes=(b"</think>",))

    def grammar(content: bytes) -> Grammar:
        return Grammar.from_rules([Rule("root", d), Rule("call", Literal(content))])

    assert _walk_and_compare(compiler, grammar(b"{}"), vocab, seed=1) > 20
    assert _walk_and_compare(compiler, grammar(b"}x"), vocab, seed=2) > 20  # "<call>{" now fails
    compiled = compiler.compile(grammar(b"ab"))
    matcher = Matcher(compiled)
    before = compiled.memory_size_bytes
    for text in ("", "x", "x<c", "x<call"):  # free-text states seen in the grammars above
        matcher.reset()
        assert matcher.accept_string(text)
        assert matcher.allowed_token_ids()
    assert compiled.memory_size_bytes == before  # every class came from the shared cache


def test_fast_path_on_llama_vocabulary():
    """The structural-tag shape agents use, on the real 128k vocabulary."""
    llama_vocab = Vocabulary.from_huggingface(llama32_tokenizer())
    d = TagDispatch(triggers=((b"<tool_call>", "call"),), excludes=(b"</think>",))
    grammar = Grammar.from_rules([Rule("root", d), Rule("call", Literal(b'{"a": 1}</tool_call>'))])
    assert _walk_and_compare(Compiler(llama_vocab), grammar, llama_vocab, seed=7) > 20


def test_dispatch_limits_and_bad_fields():
    with pytest.raises(GrammarError, match="non-empty byte strings"):
        Grammar.from_rules([Rule("root", TagDispatch(excludes=(b"",)))])
    with pytest.raises(GrammarError, match="limit"):
        Grammar.from_rules([Rule("root", TagDispatch(excludes=(b"x" * 20000,)))])
    with pytest.raises(GrammarError, match="'nope' is not defined"):
        Grammar.from_rules([Rule("root", TagDispatch(triggers=((b"<a>", "nope"),)))])

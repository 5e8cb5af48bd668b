"""EBNF macros Substring(...) and Regex(...) (grammar/ebnf_macros.py)."""

from __future__ import annotations

import itertools

import pytest

from agentgrammar import Grammar
from agentgrammar.errors import GrammarError


def _runs(chunks):  # type: ignore[no-untyped-def]
    """Every concatenation of consecutive chunks, and the empty string."""
    out = {""}
    for i in range(len(chunks)):
        for j in range(i + 1, len(chunks) + 1):
            out.add("".join(chunks[i:j]))
    return out


@pytest.mark.parametrize(
    "chunks", [["abc", "de", "fg"], ["a", "", "b", "a", "b"], ["ab", "abc"], ["hello world"]]
)
def test_substring_is_the_runs_of_whole_chunks(chunks) -> None:  # type: ignore[no-untyped-def]
    g = Grammar.from_ebnf("root ::= Substring(" + ", ".join(f'"{c}"' for c in chunks) + ")")
    want = _runs(chunks)
    alphabet = sorted(set("".join(chunks))) or ["a"]
    for n in range(0, 6):
        for t in itertools.product(alphabet, repeat=n):
            s = "".join(t)
            assert g.accepts(s) == (s in want), s
    for s in want:
        assert g.accepts(s)


def test_substring_in_a_sequence_and_empty() -> None:
    g = Grammar.from_ebnf('root ::= "x" Substring("hello world") "y"')
    assert [g.accepts(s) for s in ("xy", "xhello worldy", "xhelloy")] == [True, True, False]
    e = Grammar.from_ebnf("root ::= Substring()")
    assert e.accepts("") and not e.accepts("a")
    r = Grammar.from_ebnf('root ::= r "z"\nr ::= Substring("ab")\nroot_substring ::= "q"', root="root")
    assert r.accepts("z") and r.accepts("abz") and not r.accepts("ab")


def test_substring_needs_strings() -> None:
    with pytest.raises(GrammarError, match="a string chunk of Substring"):
        Grammar.from_ebnf("root ::= Substring(abc)")


@pytest.mark.parametrize(
    "ebnf, text, accepted",
    [
        ('root ::= Regex("[0-9]{5}")', "12345", True),
        ('root ::= Regex("[0-9]{5}")', "1234", False),
        ('root ::= "x" Regex("[0-9]+") "y"', "x12y", True),
        ('root ::= Regex("^[0-9]+$")', "123", True),
        ('root ::= Regex("Σ", flags="i")', "ς", True),
        ('root ::= Regex("(?i)ab")', "aB", True),
        ('root ::= Regex("[a-d]+", flags="i")', "E", False),
        ('root ::= Regex("a.b")', "a\nb", True),  # no flags: '.' is any character
        ('root ::= Regex("a.b", flags="")', "a\nb", False),
        ('root ::= Regex("a.b", flags="s")', "a\nb", True),
        ('root ::= Regex("a[.]b", flags="s")', "acb", False),
        ('root ::= Regex("a\\\\.b")', "acb", False),
        ('root ::= Regex("a.b", json_string=false)', "acb", True),
    ],
)
def test_regex_macro(ebnf: str, text: str, accepted: bool) -> None:
    assert Grammar.from_ebnf(ebnf).accepts(text) == accepted


@pytest.mark.parametrize(
    "ebnf, message",
    [
        ('root ::= Regex("a", flags="m")', "flags 'm'"),
        ('root ::= Regex("a", mode=1)', "unknown Regex argument"),
        ('root ::= Regex("(")', "in Regex"),
    ],
)
def test_regex_macro_errors(ebnf: str, message: str) -> None:
    with pytest.raises(GrammarError, match=message):
        Grammar.from_ebnf(ebnf)


def _json_decoded(content: str):  # type: ignore[no-untyped-def]
    """The text a JSON string with this content decodes to, or None when it is not valid."""
    import json

    try:
        return json.loads('"' + content + '"')
    except ValueError:
        return None


@pytest.mark.parametrize(
    "pattern, flags", [("\\S+", None), (".+", None), ("a[b-d]+", "i"), ("[0-9]{2}", None)]
)
def test_regex_json_string_matches_the_decoded_content(pattern: str, flags) -> None:  # type: ignore[no-untyped-def]
    import re

    written = f'"{pattern}"'.replace("\\", "\\\\")
    extra = f', flags="{flags}"' if flags else ""
    g = Grammar.from_ebnf(f"root ::= Regex({written}{extra}, json_string=true)")
    py = re.compile(pattern, re.S | (re.I if flags else 0))
    pieces = ["a", "B", "c", "1", " ", '"', "\\", "\\\\", '\\"', "\\u0062", "\\n", "\t", "\\q", "\\/"]
    for parts in itertools.product(pieces, repeat=2):
        content = "".join(parts)
        decoded = _json_decoded(content)
        want = decoded is not None and py.fullmatch(decoded) is not None
        assert g.accepts(content) == want, content


def test_regex_json_string_false_is_the_plain_regex() -> None:
    g = Grammar.from_ebnf('root ::= Regex("\\\\S+", json_string=false)')
    assert g.accepts('a"b') and g.accepts("a\\b")
    with pytest.raises(GrammarError, match="true or false"):
        Grammar.from_ebnf('root ::= Regex("a", json_string=yes)')

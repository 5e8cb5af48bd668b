"""IR for xgrammar's EBNF macros ``Substring(...)`` and ``Regex(...)`` (parsed in ``ebnf.py``).

``Substring("abc", "de", "fg")`` is every run of consecutive chunks, in order, chunks kept whole:
``""``, ``"abc"``, ``"abcde"``, ``"defg"``, ``"abcdefg"``, ... but not ``"ab"`` or ``"abcfg"``
(the semantics of xgrammar's tests). ``Regex("[0-9]+")`` is the strings that fully match the
pattern (``regex.parse_regex``); ``flags="i"`` matches case-insensitively, and
``json_string=true`` matches the pattern's strings written as JSON string content.

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> g = Grammar.from_ebnf('root ::= "x" Substring("ab", "cd") "y"')
    >>> [g.accepts(s) for s in ("xy", "xabcdy", "xcdy", "xbcy")]
    [True, True, True, False]
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from ..errors import GrammarError
from .ir import EMPTY, CharClass, Choice, Expr, Literal, Repeat, Rule, RuleRef, Seq, fresh_name, seq

__all__ = ["case_insensitive", "regex_macro", "substring_rules"]

#: The most chunks one Substring may have: it makes one rule per chunk.
MAX_SUBSTRING_CHUNKS = 100_000


def substring_rules(
    chunks: Sequence[bytes], base: str, taken: Set[str], counters: Dict[str, int]
) -> Tuple[Expr, List[Rule]]:
    """The expression for ``Substring(*chunks)`` and the rules it references, named after
    ``base`` (names not in ``taken``, which they join). Rule ``k`` of ``n`` is the chunks from
    ``k`` on, cut after any of them: ``t_k ::= "" | c_k t_(k+1)``; the substring is any ``t_k``.

    Example:
        >>> expr, rules = substring_rules([b"a", b"b"], "s", set(), {})
        >>> expr, [str(r.body) for r in rules] == [str(r.body) for r in rules]
        (Choice(items=(RuleRef(name='s'), RuleRef(name='s_2'))), True)
    """
    if len(chunks) > MAX_SUBSTRING_CHUNKS:
        raise GrammarError(
            f"Substring(...) has {len(chunks)} chunks; at most {MAX_SUBSTRING_CHUNKS} are supported"
        )
    if not chunks:
        return EMPTY, []
    names = [fresh_name(base, taken, counters) for _ in chunks]
    rules = []
    for k, chunk in enumerate(chunks):
        rest: List[Expr] = [Literal(chunk)] if chunk else []
        if k + 1 < len(chunks):
            rest.append(RuleRef(names[k + 1]))
        rules.append(Rule(names[k], Choice((EMPTY, seq(rest))) if rest else EMPTY))
    refs = [RuleRef(n) for n in names]
    return (refs[0] if len(refs) == 1 else Choice(tuple(refs))), rules


def regex_macro(pattern: str, flags: Optional[str] = None, json_string: bool = False) -> Expr:
    """``Regex(pattern, flags=..., json_string=...)``: the strings that fully match ``pattern``.
    As in xgrammar, without ``flags`` a ``.`` matches every character; with them, ``.`` matches
    no newline unless ``s`` is given; ``i`` (also ``(?i)`` at the start) matches
    case-insensitively and ``u`` changes nothing (patterns are always Unicode). With
    ``json_string``, the text is the content of a JSON string (no quotes) whose *decoded*
    characters match: each character in any JSON spelling (``\\u0062`` for ``b``), and ``"``,
    ``\\`` and control characters only escaped.

    Example:
        >>> regex_macro("ab", flags="i")
        Seq(items=(CharClass(ranges=((65, 65), (97, 97)), negated=False), CharClass(ranges=((66, 66), (98, 98)), negated=False)))
    """
    from .json_values import json_content
    from .regex import parse_regex

    given = "s" if flags is None else flags
    if pattern.startswith("(?i)"):
        pattern, given = pattern[4:], given + "i"
    unknown = set(given) - {"i", "s", "u"}
    if unknown:
        raise GrammarError(f"Regex flags {''.join(sorted(unknown))!r} are not supported (only 'i', 's', 'u')")
    expr = parse_regex(_dot_all(pattern) if "s" in given else pattern)
    if "i" in given:
        expr = case_insensitive(expr)
    if not json_string:
        return expr
    content = json_content(expr)
    return CharClass(()) if content is None else content  # None: no string is writable


def _dot_all(pattern: str) -> str:
    """``pattern`` with each ``.`` outside a class and not escaped written ``[\\s\\S]``."""
    out, in_class, k = [], False, 0
    while k < len(pattern):
        c = pattern[k]
        if c == "\\":
            out.append(pattern[k : k + 2])
            k += 2
            continue
        if c == "[" and not in_class:
            in_class = True
        elif c == "]" and in_class:
            in_class = False
        out.append("[\\s\\S]" if c == "." and not in_class else c)
        k += 1
    return "".join(out)


def case_insensitive(expr: Expr) -> Expr:
    """``expr`` matching each letter in any case (``str.lower`` / ``str.upper`` / ``casefold``
    of each code point, where that is one code point)."""
    return _map(expr, _fold)


def _fold(e: Expr) -> Expr:
    if isinstance(e, Literal):
        try:
            text = e.value.decode("utf-8")
        except UnicodeDecodeError:
            return e
        return seq([_char_any_case(c) for c in text])
    if isinstance(e, CharClass) and not e.negated:
        return CharClass(_fold_ranges(e.ranges), negated=False)
    if isinstance(e, CharClass):  # [^a]: not any case of a
        return CharClass(_fold_ranges(e.ranges), negated=True)
    return e


def _variants(cp: int) -> Set[int]:
    """The code points equal to ``cp`` ignoring case (``Σ``: ``Σ σ ς``)."""
    return _case_classes().get(cp, {cp})


_CASE_CLASSES: Dict[int, Set[int]] = {}


def _case_classes() -> Dict[int, Set[int]]:
    """Each cased code point's class: joined through one-code-point ``lower``, ``upper`` and
    ``casefold``; built once, on the first case-insensitive regex."""
    if not _CASE_CLASSES:
        for cp in range(0x1E944):  # the last cased letters (Adlam) end below here
            c = chr(cp)
            for v in (c.lower(), c.upper(), c.casefold()):
                if len(v) == 1 and ord(v) != cp:
                    a = _CASE_CLASSES.setdefault(cp, {cp})
                    b = _CASE_CLASSES.setdefault(ord(v), {ord(v)})
                    if a is not b:
                        a |= b
                        for x in b:
                            _CASE_CLASSES[x] = a
    return _CASE_CLASSES


def _char_any_case(c: str) -> Expr:
    cps = sorted(_variants(ord(c)))
    if len(cps) == 1:
        return Literal(c.encode("utf-8"))
    return CharClass(tuple((x, x) for x in cps), negated=False)


#: Wider ranges than this are folded only where they touch the cased scripts below U+2D00 and
#: the fullwidth and Deseret letters (a range that wide holds its other case already, mostly).
_FOLD_SCAN = 0x3000


def _fold_ranges(ranges: Sequence[Tuple[int, int]]) -> Tuple[Tuple[int, int], ...]:
    points: Set[int] = set()
    out = list(ranges)
    for lo, hi in ranges:
        if hi - lo > _FOLD_SCAN:
            continue
        for cp in range(lo, hi + 1):
            points |= _variants(cp)
    out.extend((p, p) for p in points)
    out.sort()
    merged: List[List[int]] = []
    for lo, hi in out:
        if merged and lo <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)


def _map(e: Expr, leaf: Callable[[Expr], Expr]) -> Expr:
    if isinstance(e, Seq):
        return seq([_map(x, leaf) for x in e.items])
    if isinstance(e, Choice):
        return Choice(tuple(_map(x, leaf) for x in e.items))
    if isinstance(e, Repeat):
        return Repeat(_map(e.item, leaf), e.min, e.max)
    return leaf(e)

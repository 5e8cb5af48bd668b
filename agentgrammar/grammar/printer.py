"""Print grammar IR as EBNF text that both our parser and xgrammar's parser accept.

``parse_ebnf(to_ebnf(rules, root))`` gives back the same rules, with three exceptions that keep
the language but not the exact IR: a one-item ``Seq`` / ``Choice`` prints as its item, an empty
``Choice`` prints as the empty class ``[]``, and a ``ByteClass`` of ASCII bytes prints as a
character class. Rule names that xgrammar cannot read (``true``, macro names such as ``Token``,
characters outside ``A-Za-z0-9_-.``) are renamed consistently.

Bytes that are not UTF-8 (a ``Literal`` such as ``b"\\xff"``, a ``ByteClass`` above 0x7F) cannot be
written in xgrammar's EBNF at all; they print in this package's ``%x`` extension (``%xFF``,
``%x80-BF``), which only our parser reads.

Example:
    >>> from agentgrammar.grammar.ir import Rule, Seq, Literal, Repeat, CharClass
    >>> body = Seq((Literal(b"a\\n"), Repeat(CharClass(((48, 57),)), 1, None)))
    >>> print(to_ebnf([Rule("root", body)], "root"))
    root ::= "a\\n" [0-9]+
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Sequence

from ..errors import GrammarError
from .ebnf import XGRAMMAR_MACROS
from .ir import (
    ByteClass,
    CharClass,
    Choice,
    CountedText,
    Expr,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    TagDispatch,
    flatten_embeds,
)

__all__ = ["printable_names", "to_ebnf"]

_NAME_RE = re.compile(r"[A-Za-z_.\-][A-Za-z0-9_.\-]*\Z")
_RESERVED = frozenset({".", "true", "false"}) | XGRAMMAR_MACROS
_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")

_NAMED_ESCAPES = {0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x5C: "\\\\"}
_STRING_SPECIAL = {0x22: '\\"'}
_CLASS_SPECIAL = {0x5D: "\\]", 0x5B: "\\[", 0x2D: "\\-", 0x5E: "\\^"}

# Where an expression is printed: a rule body, an alternative of a choice, an item of a
# sequence, or the item of a quantifier. Parentheses are added exactly where the parser needs
# them to rebuild the same tree.
_TOP, _ALT, _SEQ, _ATOM = 0, 1, 2, 3


def _valid_name(name: str) -> bool:
    return bool(_NAME_RE.match(name)) and name not in _RESERVED


def printable_names(names: Sequence[str]) -> Dict[str, str]:
    """Map rule names to names both parsers read, unique; valid names map to themselves.

    Example:
        >>> printable_names(["root", "my rule", "true"])
        {'root': 'root', 'my rule': 'my_rule', 'true': 'true_'}
    """
    out: Dict[str, str] = {}
    taken = {n for n in names if _valid_name(n)}
    for name in names:
        if name in out:
            continue
        if _valid_name(name):
            out[name] = name
            continue
        base = re.sub(r"[^A-Za-z0-9_.\-]", "_", name) or "_"
        if base[0].isdigit():
            base = "_" + base
        if base in _RESERVED:
            base += "_"
        candidate, k = base, 2
        while candidate in taken:
            candidate = f"{base}_{k}"
            k += 1
        taken.add(candidate)
        out[name] = candidate
    return out


def _escape(cp: int, next_cp: Optional[int], special: Dict[int, str]) -> str:
    if cp in special:
        return special[cp]
    if cp in _NAMED_ESCAPES:
        return _NAMED_ESCAPES[cp]
    ch = chr(cp)
    if ch.isprintable() and not 0xD800 <= cp <= 0xDFFF:
        return ch
    if cp <= 0xFF:
        # xgrammar reads \x greedily, so \xNN must not be followed by a hex digit.
        if next_cp is not None and chr(next_cp) in _HEX_DIGITS:
            return f"\\u{cp:04x}"
        return f"\\x{cp:02x}"
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    return f"\\U{cp:08x}"


def _string(text: str) -> str:
    cps = [ord(c) for c in text]
    parts = [
        _escape(cp, cps[i + 1] if i + 1 < len(cps) else None, _STRING_SPECIAL) for i, cp in enumerate(cps)
    ]
    return '"' + "".join(parts) + '"'


def _char_class(ranges: Sequence[tuple], negated: bool) -> str:
    cps: List[int] = []
    for lo, hi in ranges:
        cps.append(lo)
        if hi != lo:
            cps.extend((-1, hi))  # -1: the range dash
    parts = []
    for i, cp in enumerate(cps):
        if cp == -1:
            parts.append("-")
            continue
        nxt = cps[i + 1] if i + 1 < len(cps) and cps[i + 1] != -1 else (0x2D if i + 1 < len(cps) else None)
        parts.append(_escape(cp, nxt, _CLASS_SPECIAL))
    return "[" + ("^" if negated else "") + "".join(parts) + "]"


def _literal(value: bytes) -> str:
    try:  # strict: the bytes of a surrogate (ED A0 80) are no UTF-8 text, and EBNF refuses "\ud800"
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        return "%x" + ".".join(f"{b:02X}" for b in value)
    return _string(text)


class _Printer:
    def __init__(self, names: Dict[str, str]) -> None:
        self.names = names

    def expr(self, e: Expr, ctx: int) -> str:
        if isinstance(e, Literal):
            return _literal(e.value)
        if isinstance(e, CharClass):
            return _char_class(e.ranges, e.negated)
        if isinstance(e, ByteClass):
            if all(hi <= 0x7F for _, hi in e.ranges):
                return _char_class(e.ranges, False)
            alts = [f"%x{lo:02X}-{hi:02X}" for lo, hi in e.ranges]
            if len(alts) == 1:
                return alts[0]
            text = " | ".join(alts)
            return text if ctx == _TOP else f"({text})"
        if isinstance(e, RuleRef):
            name = self.names.get(e.name)
            if name is None:
                raise GrammarError(f"rule '{e.name}' is not defined")
            return name
        if isinstance(e, Seq):
            if not e.items:
                return "()"
            if len(e.items) == 1:
                return self.expr(e.items[0], ctx)
            text = " ".join(self.expr(x, _SEQ) for x in e.items)
            return text if ctx in (_TOP, _ALT) else f"({text})"
        if isinstance(e, Choice):
            if not e.items:
                return "[]"  # matches nothing
            if len(e.items) == 1:
                return self.expr(e.items[0], ctx)
            text = " | ".join(self.expr(x, _ALT) for x in e.items)
            return text if ctx == _TOP else f"({text})"
        if isinstance(e, Repeat):
            item = self.expr(e.item, _ATOM)
            lo, hi = e.min, e.max
            if (lo, hi) == (0, None):
                suffix = "*"
            elif (lo, hi) == (1, None):
                suffix = "+"
            elif (lo, hi) == (0, 1):
                suffix = "?"
            elif hi is None:
                suffix = f"{{{lo},}}"
            elif lo == hi:
                suffix = f"{{{lo}}}"
            else:
                suffix = f"{{{lo},{hi}}}"
            return f"({item}{suffix})" if ctx == _ATOM else item + suffix
        if isinstance(e, CountedText):  # the body's strings of so many characters: an intersection
            count = self.expr(Repeat(e.char, e.min, e.max), _SEQ)
            return f"({self.expr(e.body, _SEQ)} & {count})"
        if isinstance(e, TagDispatch):
            return self.tag_dispatch(e)
        raise TypeError(f"not a grammar expression: {e!r}")

    def tag_dispatch(self, e: TagDispatch) -> str:
        """xgrammar's macro syntax; ``stop_eos`` and ``stop_str`` only when not the default."""
        args = [f"({_literal(word)}, {self.expr(RuleRef(rule), _ATOM)})" for word, rule in e.triggers]
        if not e.stop_eos:
            args.append("stop_eos=false")
        if e.stop_str:
            args.append(f"stop_str=({', '.join(_literal(w) for w in e.stop_str)})")
        args.append(f"loop_after_dispatch={'true' if e.loop_after_dispatch else 'false'}")
        args.append(f"excludes=({', '.join(_literal(w) for w in e.excludes)})")
        return f"TagDispatch({', '.join(args)})"


def to_ebnf(rules: Sequence[Rule], root: str) -> str:
    """Print ``rules`` as EBNF, one rule per line, the ``root`` rule first.

    Example:
        >>> from agentgrammar.grammar.ir import Rule, Choice, Literal, RuleRef
        >>> rules = [Rule("a", Literal(b'"')), Rule("root", Choice((RuleRef("a"), Literal(b""))))]
        >>> print(to_ebnf(rules, "root"))
        root ::= a | ""
        a ::= "\\""
    """
    rules = flatten_embeds(rules)  # embedded grammars print as rules of their own
    names = printable_names([r.name for r in rules])
    printer = _Printer(names)
    ordered = [r for r in rules if r.name == root] + [r for r in rules if r.name != root]
    lines = []
    for r in ordered:
        try:
            lines.append(f"{names[r.name]} ::= {printer.expr(r.body, _TOP)}")
        except RecursionError:  # the printer recurses; a 3,000-character key's trie is too deep
            raise GrammarError(f"rule '{r.name}' is nested too deeply to print as EBNF") from None
    return "\n".join(lines)

"""Compile a regular expression into grammar IR (the whole string must match).

Supported: literal characters (any Unicode), ``.`` (any character except ``\\n``, as in Python and
JavaScript), classes ``[a-z]`` / ``[^...]`` (``]`` first in a class is literal, as in Python),
``\\d \\w \\s \\D \\W \\S`` as in ECMAScript, like xgrammar (``\\d`` = ``[0-9]``, ``\\w`` =
``[A-Za-z0-9_]``, ``\\s`` = ECMAScript's white space and line terminators: ``\\t \\n \\v \\f \\r``,
space, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF), escapes ``\\n \\t \\r \\f \\v \\a \\e \\0``
(and Python's octal ``\\0oo``), ``\\xHH``, ``\\uHHHH``, ``\\u{H...}``, ``\\UHHHHHHHH``,
``\\N{NAME}``, ``\\cX`` and escaped punctuation; groups ``( )``, ``(?: )``, ``(?P<name> )``,
``(?<name> )``, comments ``(?#...)``; alternation ``|``; quantifiers ``* + ? {m} {m,} {,n} {m,n}``
and their lazy forms ``*?`` etc. (lazy or greedy, the set of matched strings is the same).
A ``{`` that does not start a valid quantifier is a literal, as in Python.

Anchors: the pattern always matches the whole string, so ``^`` / ``\\A`` where nothing can
precede them and ``$`` / ``\\Z`` / ``\\z`` where nothing can follow them are accepted and
ignored (``^a$|^b$`` is fine). Anywhere else they are an error.

Not supported (``GrammarError`` naming the construct and its column): backreferences,
lookahead / lookbehind, atomic groups, possessive quantifiers (``a*+``: unlike lazy ones they
can change the language, e.g. ``a*+a`` matches nothing), word boundaries ``\\b \\B``, ``\\G``,
Unicode properties ``\\p{..}``, inline flags ``(?i)``, conditionals.

Example:
    >>> parse_regex(r"-?\\d")
    Seq(items=(Repeat(item=Literal(value=b'-'), min=0, max=1), CharClass(ranges=((48, 57),), negated=False)))
"""

from __future__ import annotations

import unicodedata
from typing import List, NoReturn, Optional, Tuple, Union

from ..errors import GrammarError
from .ir import EMPTY, CharClass, Choice, Expr, Literal, Repeat, Rule, Seq
from .source_text import MAX_NESTING, MAX_REPEAT, error_at, is_surrogate, surrogate_message
from .utf8 import MAX_CODE_POINT, complement_ranges, normalize_ranges

__all__ = ["parse_regex", "regex_rules"]

Ranges = List[Tuple[int, int]]

_DIGIT: Ranges = [(0x30, 0x39)]
_WORD: Ranges = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
# ECMAScript's WhiteSpace and LineTerminator (what JSON Schema's patterns and xgrammar mean by \s)
_SPACE: Ranges = [
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
]
_SHORTHANDS = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
_SIMPLE_ESCAPES = {"n": 0x0A, "t": 0x09, "r": 0x0D, "f": 0x0C, "v": 0x0B, "a": 0x07, "e": 0x1B}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCT = frozenset("01234567")


# Internal tree, lowered to IR once anchors are checked.
class _Lit:
    __slots__ = ("cp",)

    def __init__(self, cp: int) -> None:
        self.cp = cp


class _Class:
    __slots__ = ("expr",)

    def __init__(self, expr: CharClass) -> None:
        self.expr = expr


class _Anchor:
    __slots__ = ("kind", "pos")

    def __init__(self, kind: str, pos: int) -> None:
        self.kind = kind  # "^" or "$"
        self.pos = pos


class _Seq:
    __slots__ = ("items",)

    def __init__(self, items: List["_Node"]) -> None:
        self.items = items


class _Alt:
    __slots__ = ("items",)

    def __init__(self, items: List["_Node"]) -> None:
        self.items = items


class _Rep:
    __slots__ = ("item", "max", "min")

    def __init__(self, item: "_Node", lo: int, hi: Optional[int]) -> None:
        self.item = item
        self.min = lo
        self.max = hi


_Node = Union[_Lit, _Class, _Anchor, _Seq, _Alt, _Rep]


class _RegexParser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0
        self.depth = 0

    def fail(self, pos: int, message: str) -> NoReturn:
        raise error_at(self.p, pos, message)

    def peek(self, delta: int = 0) -> str:
        j = self.i + delta
        return self.p[j] if j < len(self.p) else ""

    # -- structure

    def parse(self) -> _Node:
        node = self.alternation()
        if self.i < len(self.p):  # only a ')' stops the top-level alternation early
            self.fail(self.i, "unmatched ')'")
        return node

    def alternation(self) -> _Node:
        items = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            items.append(self.sequence())
        return items[0] if len(items) == 1 else _Alt(items)

    def sequence(self) -> _Node:
        items: List[_Node] = []
        while self.i < len(self.p) and self.peek() not in "|)":
            start = self.i
            atom = self.atom()
            if atom is None:
                continue
            items.append(self.quantifier(atom, start))
        return items[0] if len(items) == 1 else _Seq(items)

    def quantifier(self, atom: _Node, atom_start: int) -> _Node:
        start = self.i
        bounds = self.read_quantifier()
        if bounds is None:
            return atom
        if isinstance(atom, _Anchor):
            self.fail(start, f"an anchor '{self.p[atom_start:start]}' cannot be repeated")
        lo, hi = bounds
        mod = self.peek()
        if mod == "?":
            self.i += 1  # lazy: same language
        elif mod == "+":
            self.fail(
                start,
                f"possessive quantifier '{self.p[start : self.i + 1]}' is not supported "
                "(it can change which strings match; drop the '+')",
            )
        if self.i < len(self.p):
            again = self.i
            if self.read_quantifier() is not None:
                self.fail(
                    again,
                    "multiple repeat: a quantifier cannot follow another one; use a group, e.g. (?:a*)?",
                )
        return _Rep(atom, lo, hi)

    def read_quantifier(self) -> Optional[Tuple[int, Optional[int]]]:
        """Consume a quantifier at self.i and return its bounds, or None (nothing consumed)."""
        c = self.peek()
        if c == "*":
            self.i += 1
            return 0, None
        if c == "+":
            self.i += 1
            return 1, None
        if c == "?":
            self.i += 1
            return 0, 1
        if c == "{":
            found = self.braces(self.i)
            if found is None:
                return None
            lo, hi, end = found
            if hi is not None and lo > hi:
                self.fail(
                    self.i,
                    f"invalid repetition {self.p[self.i : end]}: the minimum is larger than the maximum",
                )
            for bound in (lo, hi):
                if bound is not None and bound > MAX_REPEAT:
                    self.fail(self.i, f"repetition bound {bound} is too large (the limit is {MAX_REPEAT})")
            self.i = end
            return lo, hi
        return None

    def braces(self, at: int) -> Optional[Tuple[int, Optional[int], int]]:
        """Parse ``{m}``, ``{m,}``, ``{,n}``, ``{m,n}`` at ``at``: (min, max, end) or None if not one."""
        p = self.p
        j = at + 1
        k = j
        while k < len(p) and p[k].isascii() and p[k].isdigit():
            k += 1
        lo_text = p[j:k]
        if k < len(p) and p[k] == "}":
            if not lo_text:
                return None
            return int(lo_text), int(lo_text), k + 1
        if k >= len(p) or p[k] != ",":
            return None
        m = k + 1
        while m < len(p) and p[m].isascii() and p[m].isdigit():
            m += 1
        if m >= len(p) or p[m] != "}":
            return None
        hi_text = p[k + 1 : m]
        return (int(lo_text) if lo_text else 0), (int(hi_text) if hi_text else None), m + 1

    def atom(self) -> Optional[_Node]:
        """Parse one atom; None for something that matches nothing at all (a comment group)."""
        p, start = self.p, self.i
        c = p[start]
        if c == "(":
            return self.group()
        if c == "[":
            return _Class(self.char_class())
        if c == ".":
            self.i += 1
            return _Class(CharClass(((0x0A, 0x0A),), negated=True))
        if c in "^$":
            self.i += 1
            return _Anchor(c, start)
        if c == "\\":
            return self.escape()
        if c in "*+?":
            self.fail(start, f"nothing to repeat before '{c}'")
        if c == "{" and self.braces(start) is not None:
            self.fail(start, "nothing to repeat before '{'")
        self.i += 1
        return self.literal(ord(c), start)

    def literal(self, cp: int, at: int) -> _Lit:
        """The literal character ``cp`` (at ``at``); a lone surrogate is refused: the grammar
        would make the model write invalid UTF-8."""
        if is_surrogate(cp):
            self.fail(at, surrogate_message(cp, "a regex"))
        return _Lit(cp)

    def group(self) -> Optional[_Node]:
        p, start = self.p, self.i
        self.i += 1
        if self.peek() == "?":
            rest = p[self.i + 1 : self.i + 3]
            if rest.startswith(":"):
                self.i += 2
            elif rest.startswith("#"):
                end = p.find(")", self.i)
                if end < 0:
                    self.fail(start, "unterminated comment group '(?#'")
                self.i = end + 1
                return None
            elif rest.startswith("P<") or (rest.startswith("<") and rest[1:2] not in ("=", "!")):
                name_start = self.i + (3 if rest.startswith("P") else 2)
                end = p.find(">", name_start)
                name = p[name_start:end] if end >= 0 else ""
                if end < 0 or not name.isidentifier():
                    self.fail(start, "invalid group name: expected (?P<name>...) or (?<name>...)")
                self.i = end + 1
            elif rest.startswith("P="):
                self.fail(start, "backreference (?P=name) is not supported")
            elif rest[:1] in ("=", "!"):
                self.fail(start, f"lookahead '(?{rest[:1]}' is not supported")
            elif rest in ("<=", "<!"):
                self.fail(start, f"lookbehind '(?{rest}' is not supported")
            elif rest.startswith(">"):
                self.fail(start, "atomic group '(?>' is not supported")
            elif rest.startswith("("):
                self.fail(start, "conditional group '(?(' is not supported")
            else:
                self.fail(start, "inline flags such as '(?i)' are not supported")
        self.depth += 1
        if self.depth > MAX_NESTING:
            self.fail(start, f"groups are nested more than {MAX_NESTING} levels deep")
        inner = self.alternation()
        if self.peek() != ")":
            self.fail(start, "missing ')': this group is not closed")
        self.i += 1
        self.depth -= 1
        return inner

    # -- escapes

    def hex_digits(self, start: int, count: int, what: str) -> int:
        digits = self.p[self.i : self.i + count]
        if len(digits) != count or any(d not in _HEX for d in digits):
            self.fail(start, f"invalid escape '{what}': expected {count} hex digits")
        self.i += count
        return int(digits, 16)

    def code_point_escape(self, start: int, in_class: bool) -> Optional[int]:
        """Escapes that stand for one character; self.i is just after the letter. None if ``c`` is not one."""
        c = self.p[self.i - 1]
        if c in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[c]
        if c == "b" and in_class:
            return 0x08
        if c == "0":
            n = 0
            while n < 2 and self.peek() and self.peek() in _OCT:
                self.i += 1
                n += 1
            return int(self.p[start + 1 : self.i], 8)
        if c == "x":
            return self.hex_digits(start, 2, "\\x")
        if c == "U":
            cp = self.hex_digits(start, 8, "\\U")
        elif c == "u":
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                digits = self.p[self.i + 1 : end] if end >= 0 else ""
                if not 1 <= len(digits) <= 6 or any(d not in _HEX for d in digits):
                    self.fail(start, "invalid escape '\\u{...}': expected 1 to 6 hex digits")
                self.i = end + 1
                cp = int(digits, 16)
            else:
                cp = self.hex_digits(start, 4, "\\u")
        elif c == "N":
            end = self.p.find("}", self.i)
            if self.peek() != "{" or end < 0:
                self.fail(start, "invalid escape '\\N': expected \\N{CHARACTER NAME}")
            name = self.p[self.i + 1 : end]
            try:
                cp = ord(unicodedata.lookup(name))
            except (KeyError, UnicodeError):  # UnicodeError: a lone surrogate in the name
                self.fail(start, f"unknown character name '\\N{{{name}}}'")
            self.i = end + 1
        elif c == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                self.fail(start, "invalid escape '\\c': expected a letter, e.g. \\cJ")
            self.i += 1
            return ord(letter) % 32
        else:
            return None
        if cp > MAX_CODE_POINT:
            self.fail(start, f"escape '{self.p[start : self.i]}' is beyond U+10FFFF")
        return cp

    def escape_common(self, in_class: bool) -> Union[int, Ranges]:
        """An escape valid both in and out of classes: a code point or a shorthand's ranges."""
        start = self.i
        if start + 1 >= len(self.p):
            self.fail(start, "pattern ends with a lone backslash")
        c = self.p[start + 1]
        self.i += 2
        if c in "dws":
            return list(_SHORTHANDS[c])
        if c in "DWS":
            return complement_ranges(_SHORTHANDS[c.lower()])
        cp = self.code_point_escape(start, in_class)
        if cp is not None:
            return cp
        if c in "123456789":
            self.fail(start, f"backreference '\\{c}' is not supported")
        if c == "k":
            self.fail(start, "backreference '\\k<name>' is not supported")
        if c in "pP":
            self.fail(start, f"Unicode property escape '\\{c}' is not supported")
        if c in "bB" and not in_class:
            self.fail(start, f"word boundary '\\{c}' is not supported")
        if c.isascii() and c.isalnum():
            where = " in a character class" if in_class else ""
            self.fail(start, f"unknown escape '\\{c}'{where}")
        return ord(c)  # escaped punctuation or non-ASCII: the character itself

    def escape(self) -> _Node:
        start = self.i
        nxt = self.peek(1)
        if nxt == "A":
            self.i += 2
            return _Anchor("^", start)
        if nxt in ("Z", "z"):
            self.i += 2
            return _Anchor("$", start)
        if nxt == "G":
            self.fail(start, "anchor '\\G' is not supported")
        found = self.escape_common(in_class=False)
        if isinstance(found, int):
            return self.literal(found, start)
        return _Class(CharClass(tuple(normalize_ranges(found))))

    # -- classes

    def char_class(self) -> CharClass:
        p, start = self.p, self.i
        self.i += 1
        negated = self.peek() == "^"
        if negated:
            self.i += 1
        ranges: Ranges = []
        first = True
        while True:
            if self.i >= len(p):
                self.fail(start, "unterminated character class: missing ']'")
            c = p[self.i]
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            item_start = self.i
            lo = self.class_item()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi_start = self.i
                hi = self.class_item()
                if isinstance(lo, list) or isinstance(hi, list):
                    self.fail(item_start, f"bad character range '{p[item_start : self.i]}'")
                if lo > hi:
                    self.fail(
                        hi_start,
                        f"bad character range '{p[item_start : self.i]}': the start is after the end",
                    )
                item = (lo, hi)
            elif isinstance(lo, list):
                ranges.extend(lo)
                continue
            else:
                item = (lo, lo)
            # surrogates alone match only invalid UTF-8; a range across them ([\x00-\uffff]) or
            # a negated class (which only excludes them) is fine
            if not negated and is_surrogate(item[0]) and is_surrogate(item[1]):
                self.fail(item_start, surrogate_message(item[0], "a regex character class"))
            ranges.append(item)
        return CharClass(tuple(normalize_ranges(ranges)), negated)

    def class_item(self) -> Union[int, Ranges]:
        c = self.p[self.i]
        if c == "\\":
            return self.escape_common(in_class=True)
        self.i += 1
        return ord(c)


def _only_anchors(node: _Node) -> bool:
    """True for nodes that can only match the empty string at a fixed spot: anchors, empty groups."""
    if isinstance(node, _Anchor):
        return True
    return isinstance(node, _Seq) and all(_only_anchors(x) for x in node.items)


class _Lowering:
    """Check anchors, then build IR (merging runs of literal characters)."""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    def lower(self, node: _Node, at_start: bool, at_end: bool) -> Expr:
        if isinstance(node, _Lit):
            return Literal(chr(node.cp).encode("utf-8", "surrogatepass"))
        if isinstance(node, _Class):
            return node.expr
        if isinstance(node, _Anchor):
            ok = at_start if node.kind == "^" else at_end
            if not ok:
                where = "the start" if node.kind == "^" else "the end"
                text = self.pattern[node.pos : node.pos + (2 if self.pattern[node.pos] == "\\" else 1)]
                raise error_at(
                    self.pattern,
                    node.pos,
                    f"anchor '{text}' is only supported at {where} of the pattern "
                    "(the whole string is always matched)",
                )
            return EMPTY
        if isinstance(node, _Alt):
            return Choice(tuple(self.lower(x, at_start, at_end) for x in node.items))
        if isinstance(node, _Rep):
            inherit = node.max is not None and node.max <= 1
            return Repeat(self.lower(node.item, at_start and inherit, at_end and inherit), node.min, node.max)
        items = node.items
        out: List[Expr] = []
        pending = bytearray()
        # items[k] is at the start when all before it are anchors (k <= first), at the end
        # when all after it are (k >= last): one pass, not one per item
        others = [k for k, x in enumerate(items) if not _only_anchors(x)]
        first, last = (others[0], others[-1]) if others else (len(items), -1)
        for k, item in enumerate(items):
            low = self.lower(item, at_start and k <= first, at_end and k >= last)
            if isinstance(item, _Anchor):
                continue
            if isinstance(item, _Lit):
                assert isinstance(low, Literal)
                pending += low.value
                continue
            if pending:
                out.append(Literal(bytes(pending)))
                pending = bytearray()
            out.append(low)
        if pending:
            out.append(Literal(bytes(pending)))
        if not out:
            return EMPTY
        return out[0] if len(out) == 1 else Seq(tuple(out))


def parse_regex(pattern: str) -> Expr:
    """Compile ``pattern`` into one IR expression matching exactly the strings it fully matches.

    Example:
        >>> parse_regex("ab|c")
        Choice(items=(Literal(value=b'ab'), Literal(value=b'c')))
    """
    if not isinstance(pattern, str):
        raise TypeError(f"a regex pattern must be a str, not {type(pattern).__name__}")
    try:
        tree = _RegexParser(pattern).parse()
        return _Lowering(pattern).lower(tree, True, True)
    except RecursionError:  # the nesting limit assumes a shallow caller; a deep one runs out first
        raise GrammarError("the regex nests too deeply for the Python stack here") from None


def regex_rules(pattern: str, name: str = "root") -> List[Rule]:
    """``pattern`` as a one-rule grammar named ``name``.

    Example:
        >>> regex_rules("a+")
        [Rule(name='root', body=Repeat(item=Literal(value=b'a'), min=1, max=None))]
    """
    return [Rule(name, parse_regex(pattern))]

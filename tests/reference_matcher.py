"""A slow, obviously-correct reference matcher over the grammar IR.

The grammar IR (``agentgrammar.grammar.ir``) is lowered to a plain context-free
grammar (BNF) whose terminals are *sets of bytes*, and a textbook Earley
recognizer (with the Aycock-Horspool fix for nullable nonterminals) runs over
the bytes of the input. Nothing here shares code with the engine: character
classes are lowered to UTF-8 by a direct construction below (not by
``agentgrammar.grammar.utf8``), and counted repeats are unrolled.

Semantics (the ones the engine promises):

* a normal token is allowed iff its bytes extend the input to a *viable prefix*
  (a prefix of some sentence of the grammar). Unproductive productions are
  pruned before parsing, so "some Earley item survives the scan" is exactly
  "viable prefix" (Earley's correct-prefix property);
* a stop token is allowed iff the input is a complete sentence (the root was
  completed at origin 0); accepting it terminates the matcher;
* special tokens are never allowed, nor are empty tokens (they would make no progress);
  ids in ``[len(token_bytes), vocab_size)`` (model padding) are never allowed;
* after termination the mask holds just the stop tokens (xgrammar's convention).

Character classes: a ``CharClass`` matches the UTF-8 encoding of one code point
in its ranges (or, when negated, of one code point in ``[0, 0x10FFFF]`` outside
them). As the IR documents, the complement is over *all* code points, so
surrogates (U+D800..U+DFFF, encoded as in CESU/"surrogatepass") are included.

Example:
    >>> from agentgrammar.grammar.ir import Rule, Seq, Literal, Repeat, CharClass
    >>> rules = (Rule("root", Seq((Literal(b"a"), Repeat(CharClass(((0x62, 0x63),)), 0, None)))),)
    >>> m = ReferenceMatcher((rules, "root"), [b"a", b"b", b"bc", b"x", b""], stop_ids=[4])
    >>> m.allowed_token_ids()
    [0]
    >>> m.accept_token(0), m.allowed_token_ids()
    (True, [1, 2, 4])
"""

from __future__ import annotations

import bisect
import sys
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Union

try:
    from agentgrammar.grammar.ir import (
        MAX_CODE_POINT,
        ByteClass,
        CharClass,
        Choice,
        Literal,
        Repeat,
        RuleRef,
        Seq,
    )
except ImportError:  # the package is not importable (engine not built): load ir.py by path
    import importlib.util as _ilu
    import os as _os

    _spec = _ilu.spec_from_file_location(
        "_agentgrammar_ir",
        _os.path.join(_os.path.dirname(__file__), _os.pardir, "agentgrammar", "grammar", "ir.py"),
    )
    _ir = _ilu.module_from_spec(_spec)
    sys.modules["_agentgrammar_ir"] = _ir
    _spec.loader.exec_module(_ir)  # type: ignore[union-attr]
    MAX_CODE_POINT, ByteClass, CharClass, Choice = (
        _ir.MAX_CODE_POINT,
        _ir.ByteClass,
        _ir.CharClass,
        _ir.Choice,
    )
    Literal, Repeat, RuleRef, Seq = _ir.Literal, _ir.Repeat, _ir.RuleRef, _ir.Seq

# A BNF symbol: a nonterminal (str) or a terminal (frozenset of byte values).
Symbol = Union[str, FrozenSet[int]]

_START = "$start"
_CONT = frozenset(range(0x80, 0xC0))  # any UTF-8 continuation byte
# The code points of each UTF-8 length.
_LEN_RANGES = {1: (0, 0x7F), 2: (0x80, 0x7FF), 3: (0x800, 0xFFFF), 4: (0x10000, MAX_CODE_POINT)}


def _lead_info(b: int) -> Optional[Tuple[int, int]]:
    """(encoded length, payload bits) of a UTF-8 lead byte, or None if b cannot lead."""
    if b < 0x80:
        return 1, b
    if 0xC0 <= b <= 0xDF:
        return 2, b & 0x1F
    if 0xE0 <= b <= 0xEF:
        return 3, b & 0x0F
    if 0xF0 <= b <= 0xF7:
        return 4, b & 0x07
    return None


def _prefix_interval(prefix: Sequence[int]) -> Optional[Tuple[int, int, int]]:
    """The code points whose (shortest) UTF-8 encoding starts with ``prefix``.

    Returns (lo, hi, length, exact) - an interval, since UTF-8 preserves order - or None;
    ``exact`` is False when some continuations of ``prefix`` are invalid (overlong or past
    U+10FFFF), so "any continuation bytes" would over-approximate.
    """
    info = _lead_info(prefix[0])
    if info is None:
        return None
    n, value = info
    if len(prefix) > n:
        return None
    for c in prefix[1:]:
        if not 0x80 <= c <= 0xBF:
            return None
        value = (value << 6) | (c & 0x3F)
    rest = 6 * (n - len(prefix))
    lo, hi = value << rest, (value << rest) + (1 << rest) - 1
    nlo, nhi = _LEN_RANGES[n]
    clo, chi = max(lo, nlo), min(hi, nhi)  # rules out overlong forms and > U+10FFFF
    if clo > chi:
        return None
    # exact: every continuation of prefix by continuation bytes encodes a code point
    return clo, chi, n, (clo, chi) == (lo, hi)


class _CodePointSet:
    """A set of code points as sorted disjoint ranges, with interval counting."""

    def __init__(self, ranges: Iterable[Tuple[int, int]], negated: bool) -> None:
        merged: List[List[int]] = []
        for lo, hi in sorted((max(0, a), min(MAX_CODE_POINT, b)) for a, b in ranges):
            if lo > hi:
                continue
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        if negated:
            comp, nxt = [], 0
            for lo, hi in merged:
                if lo > nxt:
                    comp.append([nxt, lo - 1])
                nxt = hi + 1
            if nxt <= MAX_CODE_POINT:
                comp.append([nxt, MAX_CODE_POINT])
            merged = comp
        self.ranges = [(a, b) for a, b in merged]
        self._los = [a for a, _ in self.ranges]

    def count(self, lo: int, hi: int) -> int:
        """How many members lie in [lo, hi]."""
        total = 0
        i = max(0, bisect.bisect_right(self._los, lo) - 1)
        while i < len(self.ranges) and self.ranges[i][0] <= hi:
            a, b = self.ranges[i]
            a, b = max(a, lo), min(b, hi)
            if a <= b:
                total += b - a + 1
            i += 1
        return total


class _Production:
    __slots__ = ("lhs", "rhs")

    def __init__(self, lhs: str, rhs: Tuple[Symbol, ...]) -> None:
        self.lhs = lhs
        self.rhs = rhs

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        def show(s: Symbol) -> str:
            if isinstance(s, str):
                return s
            bs = sorted(s)
            return "[" + ",".join(f"{b:02x}" for b in bs[:6]) + ("..." if len(bs) > 6 else "") + "]"

        return f"{self.lhs} -> {' '.join(show(s) for s in self.rhs) or 'ε'}"


class BNF:
    """The IR of a grammar lowered to productions over byte-set terminals."""

    def __init__(self, rules: Sequence, root: str) -> None:
        self.productions: List[_Production] = []
        self._fresh = 0
        self._class_memo: Dict[Tuple, str] = {}
        names = {r.name for r in rules}
        if root not in names:
            raise ValueError(f"root rule {root!r} is not defined")
        for r in rules:
            self._add("rule:" + r.name, self._lower(r.body, names))
        self._add(_START, ("rule:" + root,))
        self._prune_unproductive()
        self.by_lhs: Dict[str, List[int]] = {}
        for i, p in enumerate(self.productions):
            self.by_lhs.setdefault(p.lhs, []).append(i)
        self.nullable = self._nullable()
        self.start_prods = self.by_lhs.get(_START, [])

    # -- lowering -----------------------------------------------------------
    def _new(self, hint: str) -> str:
        self._fresh += 1
        return f"${hint}{self._fresh}"

    def _add(self, lhs: str, rhs: Sequence[Symbol]) -> None:
        self.productions.append(_Production(lhs, tuple(rhs)))

    def _lower(self, e, names) -> Tuple[Symbol, ...]:
        """The symbol sequence for an expression (fresh nonterminals as needed)."""
        if isinstance(e, Literal):
            return tuple(frozenset((b,)) for b in e.value)
        if isinstance(e, ByteClass):
            return (frozenset(b for lo, hi in e.ranges for b in range(max(lo, 0), min(hi, 255) + 1)),)
        if isinstance(e, CharClass):
            return (self._char_class(e),)
        if isinstance(e, Seq):
            out: List[Symbol] = []
            for item in e.items:
                out.extend(self._lower(item, names))
            return tuple(out)
        if isinstance(e, Choice):
            nt = self._new("choice")
            for item in e.items:
                self._add(nt, self._lower(item, names))
            return (nt,)
        if isinstance(e, RuleRef):
            if e.name not in names:
                raise ValueError(f"undefined rule {e.name!r}")
            return ("rule:" + e.name,)
        if isinstance(e, Repeat):
            if e.min < 0 or (e.max is not None and e.max < e.min):
                raise ValueError(f"bad repeat bounds {e.min}, {e.max}")
            item = self._new("item")
            self._add(item, self._lower(e.item, names))
            seq: List[Symbol] = [item] * e.min
            if e.max is None:  # star ::= ε | item star
                star = self._new("star")
                self._add(star, ())
                self._add(star, (item, star))
                seq.append(star)
            elif e.max > e.min:  # opt_k ::= ε | item opt_{k-1}, opt_1 ::= ε | item
                prev: Optional[str] = None
                for _ in range(e.max - e.min):
                    opt = self._new("opt")
                    self._add(opt, ())
                    self._add(opt, (item,) if prev is None else (item, prev))
                    prev = opt
                seq.append(prev)
            return tuple(seq)
        raise TypeError(f"not a grammar expression: {e!r}")

    def _char_class(self, e: CharClass) -> str:
        key = (tuple(e.ranges), e.negated)
        if key in self._class_memo:
            return self._class_memo[key]
        cps = _CodePointSet(e.ranges, e.negated)
        nt = self._new("class")
        self._class_memo[key] = nt
        self._class_node(nt, (), cps)
        return nt

    def _class_node(self, nt: str, prefix: Tuple[int, ...], cps: _CodePointSet) -> None:
        """Productions of ``nt``: the byte suffixes that, after ``prefix``, encode a member.

        For each next byte b: if every code point under prefix+b is a member, the rest is
        "any continuation bytes"; if some are, recurse with a fresh nonterminal; else skip.
        """
        for b in range(256):
            p = prefix + (b,)
            iv = _prefix_interval(p)
            if iv is None:
                continue
            lo, hi, n, exact = iv
            have = cps.count(lo, hi)
            if have == 0:
                continue
            if len(p) == n or (exact and have == hi - lo + 1):
                self._add(nt, (frozenset((b,)),) + (_CONT,) * (n - len(p)))
            else:
                sub = self._new("class")
                self._add(nt, (frozenset((b,)), sub))
                self._class_node(sub, p, cps)

    # -- analysis -----------------------------------------------------------
    def _prune_unproductive(self) -> None:
        productive: set = set()
        changed = True
        while changed:
            changed = False
            for p in self.productions:
                if p.lhs in productive:
                    continue
                if all((s in productive) if isinstance(s, str) else bool(s) for s in p.rhs):
                    productive.add(p.lhs)
                    changed = True
        self.productive = productive
        self.productions = [
            p
            for p in self.productions
            if p.lhs in productive
            and all((s in productive) if isinstance(s, str) else bool(s) for s in p.rhs)
        ]

    def _nullable(self) -> set:
        nullable: set = set()
        changed = True
        while changed:
            changed = False
            for p in self.productions:
                if p.lhs not in nullable and all(isinstance(s, str) and s in nullable for s in p.rhs):
                    nullable.add(p.lhs)
                    changed = True
        return nullable


class _EarleySet:
    __slots__ = ("items", "scannable", "waiting")

    def __init__(self) -> None:
        self.items: set = set()
        self.waiting: Dict[str, List[Tuple[int, int, int]]] = {}
        self.scannable: List[Tuple[int, int, int]] = []


class EarleyRecognizer:
    """A textbook Earley recognizer over bytes. A chart is a list of Earley sets."""

    def __init__(self, bnf: BNF) -> None:
        self.bnf = bnf

    def _closure(self, chart: List[_EarleySet], seed: Iterable[Tuple[int, int, int]]) -> _EarleySet:
        """Build Earley set number len(chart) from its seed items (predict + complete)."""
        bnf = self.bnf
        prods = bnf.productions
        here = len(chart)
        s = _EarleySet()
        work: List[Tuple[int, int, int]] = []

        def add(item: Tuple[int, int, int]) -> None:
            if item not in s.items:
                s.items.add(item)
                work.append(item)

        for item in seed:
            add(item)
        while work:
            p, d, o = work.pop()
            rhs = prods[p].rhs
            if d < len(rhs):
                sym = rhs[d]
                if isinstance(sym, str):
                    s.waiting.setdefault(sym, []).append((p, d, o))
                    for q in bnf.by_lhs.get(sym, ()):
                        add((q, 0, here))
                    if sym in bnf.nullable:  # Aycock-Horspool: skip over a nullable symbol
                        add((p, d + 1, o))
                else:
                    s.scannable.append((p, d, o))
            else:
                lhs = prods[p].lhs
                origin = s if o == here else chart[o]
                for wp, wd, wo in list(origin.waiting.get(lhs, ())):
                    add((wp, wd + 1, wo))
        return s

    def initial(self) -> List[_EarleySet]:
        return [self._closure([], [(q, 0, 0) for q in self.bnf.start_prods])]

    def scan(self, chart: List[_EarleySet], byte: int) -> Optional[_EarleySet]:
        """The next Earley set after ``byte``, or None when no item survives."""
        prods = self.bnf.productions
        seed = [(p, d + 1, o) for p, d, o in chart[-1].scannable if byte in prods[p].rhs[d]]
        if not seed:
            return None
        return self._closure(chart, seed)

    def is_complete(self, chart: List[_EarleySet]) -> bool:
        return any((q, 1, 0) in chart[-1].items for q in self.bnf.start_prods)

    def is_live(self, chart: List[_EarleySet]) -> bool:
        return bool(chart[-1].items) and bool(self.bnf.start_prods)

    def feed(self, chart: List[_EarleySet], data: bytes) -> Optional[List[_EarleySet]]:
        """``chart`` extended by ``data`` (a new list), or None if ``data`` is rejected."""
        chart = list(chart)
        for b in data:
            nxt = self.scan(chart, b)
            if nxt is None:
                return None
            chart.append(nxt)
        return chart


def _grammar_parts(grammar) -> Tuple[Sequence, str]:
    if isinstance(grammar, tuple) and len(grammar) == 2:
        return grammar[0], grammar[1]
    return grammar.rules, grammar.root


def accepts(grammar, data: bytes) -> bool:
    """True when ``data`` is a complete sentence of ``grammar``."""
    rec = EarleyRecognizer(BNF(*_grammar_parts(grammar)))
    chart = rec.feed(rec.initial(), data)
    return chart is not None and rec.is_complete(chart)


def is_viable_prefix(grammar, data: bytes) -> bool:
    """True when ``data`` is a prefix of some sentence of ``grammar``."""
    rec = EarleyRecognizer(BNF(*_grammar_parts(grammar)))
    start = rec.initial()
    if not rec.is_live(start):
        return False
    return rec.feed(start, data) is not None


class ReferenceMatcher:
    """The reference for ``agentgrammar.Matcher`` (slow; for small vocabularies).

    ``grammar`` is an ``agentgrammar.Grammar`` (anything with ``.rules`` and ``.root``)
    or a ``(rules, root)`` pair.
    """

    def __init__(
        self,
        grammar,
        token_bytes: Sequence[bytes],
        stop_ids: Iterable[int] = (),
        special_ids: Iterable[int] = (),
        vocab_size: Optional[int] = None,
    ) -> None:
        rules, root = _grammar_parts(grammar)
        self.bnf = BNF(rules, root)
        self.rec = EarleyRecognizer(self.bnf)
        self.token_bytes = [bytes(t) for t in token_bytes]
        self.num_tokens = len(self.token_bytes)
        self.vocab_size = self.num_tokens if vocab_size is None else int(vocab_size)
        if self.vocab_size < self.num_tokens:
            raise ValueError("vocab_size must be >= the number of tokens")
        self.stop_ids = frozenset(int(i) for i in stop_ids)
        empty = {i for i, t in enumerate(self.token_bytes) if not t}
        self.special_ids = frozenset(int(i) for i in special_ids).union(empty) - self.stop_ids
        # The normal tokens, sorted by bytes so that the mask walk shares prefixes.
        self._normal = sorted(
            (t, i)
            for i, t in enumerate(self.token_bytes)
            if i not in self.stop_ids and i not in self.special_ids
        )
        self.reset()

    # -- state ------------------------------------------------------------
    def reset(self) -> None:
        self._chart = self.rec.initial()
        self._steps: List[Tuple[int, bool]] = []  # (chart length before the step, was a stop token)
        self._terminated = False

    def is_completed(self) -> bool:
        return self.rec.is_complete(self._chart)

    def is_terminated(self) -> bool:
        return self._terminated

    @property
    def num_accepted_steps(self) -> int:
        return len(self._steps)

    @property
    def consumed(self) -> int:
        """Bytes accepted so far."""
        return len(self._chart) - 1

    # -- steps --------------------------------------------------------------
    def _accept_bytes(self, data: bytes) -> bool:
        if not self.rec.is_live(self._chart):
            return False
        chart = self.rec.feed(self._chart, data)
        if chart is None:
            return False
        self._steps.append((len(self._chart), False))
        self._chart = chart
        return True

    def accept_token(self, token_id: int) -> bool:
        token_id = int(token_id)
        if not 0 <= token_id < self.vocab_size:
            raise IndexError(f"token id {token_id} out of range [0, {self.vocab_size})")
        if self._terminated:
            raise RuntimeError("accept_token after termination")
        if token_id >= self.num_tokens or token_id in self.special_ids:
            return False
        if token_id in self.stop_ids:
            if not self.is_completed():
                return False
            self._steps.append((len(self._chart), True))
            self._terminated = True
            return True
        return self._accept_bytes(self.token_bytes[token_id])

    def accept_string(self, data: Union[str, bytes]) -> bool:
        if self._terminated:
            raise RuntimeError("accept_string after termination")
        if isinstance(data, str):
            data = data.encode("utf-8")
        return self._accept_bytes(bytes(data))

    def rollback(self, n: int = 1) -> None:
        if not 0 <= n <= len(self._steps):
            raise ValueError(f"cannot roll back {n} steps ({len(self._steps)} recorded)")
        for _ in range(n):
            before, was_stop = self._steps.pop()
            if was_stop:
                self._terminated = False
            del self._chart[before:]

    # -- masks --------------------------------------------------------------
    def allowed_token_ids(self) -> List[int]:
        """Sorted ids of the tokens allowed next."""
        if self._terminated:  # as xgrammar does: only the stop tokens stay set
            return sorted(i for i in self.stop_ids if i < self.num_tokens)
        out: List[int] = []
        if self.is_completed():
            out.extend(i for i in self.stop_ids if i < self.num_tokens)
        if self.rec.is_live(self._chart):
            self._walk(self._normal, 0, self._chart, out)
        return sorted(out)

    def _walk(
        self, toks: List[Tuple[bytes, int]], depth: int, chart: List[_EarleySet], out: List[int]
    ) -> None:
        """Tokens in ``toks`` (sorted, sharing their first ``depth`` bytes, all viable so far)."""
        i = 0
        while i < len(toks):
            t, tid = toks[i]
            if len(t) == depth:  # the token ends here: every byte was viable
                out.append(tid)
                i += 1
                continue
            b = t[depth]
            j = i
            while j < len(toks) and len(toks[j][0]) > depth and toks[j][0][depth] == b:
                j += 1
            nxt = self.rec.scan(chart, b)
            if nxt is not None:
                chart.append(nxt)
                self._walk(toks[i:j], depth + 1, chart, out)
                chart.pop()
            i = j

    def allowed_mask(self) -> List[bool]:
        """Allowed flags for ids 0 .. vocab_size-1."""
        flags = [False] * self.vocab_size
        for i in self.allowed_token_ids():
            flags[i] = True
        return flags

    def jump_forward_bytes(self) -> bytes:
        """The longest byte string every continuation must start with.

        Stops where the input is complete (the grammar could end) or where more than
        one next byte is viable.
        """
        chart = list(self._chart)
        out = bytearray()
        while not self.rec.is_complete(chart):
            viable = [b for b in range(256) if self.rec.scan(chart, b) is not None]
            if len(viable) != 1:
                break
            chart.append(self.rec.scan(chart, viable[0]))
            out.append(viable[0])
        return bytes(out)

"""Deterministic automata over Unicode code points, for string constraints that combine.

A regex ``pattern`` with ``minLength``, a ``format`` with ``maxLength``, the keys that match
*no* ``patternProperties`` pattern, ``not: {pattern: ...}``: each needs the intersection or the
complement of regular languages, which grammar IR cannot say directly. ``CharDFA`` builds a
minimal DFA from a regular IR expression over decoded characters (what ``parse_regex``
returns), combines DFAs, and turns the result back into IR rules (right-linear: one rule per
state, a self-loop as a repeat), each character spelled every way JSON allows.

The alphabet is every Unicode scalar value (surrogates excluded: a JSON string cannot hold a
lone one). Sizes are bounded: an automaton past ``MAX_STATES`` states raises GrammarError.

Example:
    >>> from agentgrammar.grammar.regex import parse_regex
    >>> d = CharDFA.from_expr(parse_regex("[a-z]+")).intersect(CharDFA.length(2, 3))
    >>> [d.matches(s) for s in ("a", "ab", "abc", "abcd", "A1")]
    [False, True, True, False, False]
    >>> d.complement().matches("A1")
    True
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple, Union

from ..errors import GrammarError
from .ir import EMPTY, ByteClass, CharClass, Choice, Expr, Literal, Repeat, RuleRef, Seq, seq
from .utf8 import complement_ranges, normalize_ranges

__all__ = ["ALPHABET", "BYTES", "MAX_STATES", "PRODUCT_LIMIT", "CharDFA"]

Alphabet = Tuple[Tuple[int, int], ...]
#: Every code point a JSON string can hold (the default alphabet).
ALPHABET: Alphabet = ((0, 0xD7FF), (0xE000, 0x10FFFF))
#: Raw bytes: for free text that, as in xgrammar, may be any byte sequence.
BYTES: Alphabet = ((0, 0xFF),)
#: The most NFA or DFA states one automaton may have.
MAX_STATES = 20_000
#: Automata with more states than this are trimmed but not minimized.
MINIMIZE_LIMIT = 1_500
#: The most states an intersection may have: each becomes grammar rules, so products past this
#: (a long length bound times a complex pattern) are refused rather than slow to build and match.
PRODUCT_LIMIT = 3_000

Edge = Tuple[int, int, int]  # (lo, hi, target), inclusive code point range


def _too_big() -> GrammarError:
    return GrammarError(f"a string constraint needs an automaton of more than {MAX_STATES} states")


class _NFA:
    """Thompson construction: states with epsilon moves and ranged character moves."""

    def __init__(self, alphabet: Alphabet) -> None:
        self.alphabet = alphabet
        self.eps: List[List[int]] = []
        self.moves: List[List[Edge]] = []

    def state(self) -> int:
        if len(self.eps) >= MAX_STATES * 4:
            raise _too_big()
        self.eps.append([])
        self.moves.append([])
        return len(self.eps) - 1

    def build(self, e: Expr, start: int) -> int:
        """Add ``e`` starting at ``start``; the state where it ends."""
        if isinstance(e, CharClass):
            if self.alphabet == BYTES:
                raise GrammarError("a character class in a byte automaton")
            ranges = complement_ranges(e.ranges) if e.negated else list(e.ranges)
            return self._chars(start, ranges)
        if isinstance(e, Literal):
            at = start
            units = (
                list(e.value)
                if self.alphabet == BYTES
                else [ord(c) for c in e.value.decode("utf-8", "surrogatepass")]
            )
            for u in units:
                at = self._chars(at, [(u, u)])
            return at
        if isinstance(e, ByteClass) and self.alphabet == BYTES:
            return self._chars(start, list(e.ranges))
        if isinstance(e, Seq):
            at = start
            for item in e.items:
                at = self.build(item, at)
            return at
        if isinstance(e, Choice):
            end = self.state()
            for item in e.items:
                s = self.state()
                self.eps[start].append(s)
                self.eps[self.build(item, s)].append(end)
            return end
        if isinstance(e, Repeat):
            at = start
            for _ in range(e.min):
                at = self.build(e.item, at)
            if e.max is None:
                loop = self.state()
                self.eps[at].append(loop)
                self.eps[self.build(e.item, loop)].append(loop)
                return loop
            end = self.state()
            for _ in range(e.max - e.min):
                self.eps[at].append(end)
                at = self.build(e.item, at)
            self.eps[at].append(end)
            return end
        if isinstance(e, (RuleRef, ByteClass)):
            raise GrammarError(f"a {type(e).__name__} is not a regular expression over characters")
        raise TypeError(f"not an IR expression: {e!r}")

    def _chars(self, start: int, ranges: Sequence[Tuple[int, int]]) -> int:
        end = self.state()
        for lo, hi in _clip(ranges, self.alphabet):
            self.moves[start].append((lo, hi, end))
        return end


def _clip(ranges: Sequence[Tuple[int, int]], alphabet: Alphabet) -> List[Tuple[int, int]]:
    """``ranges`` within the alphabet (for code points: without surrogates)."""
    out = []
    for lo, hi in normalize_ranges(ranges):
        for a, b in alphabet:
            if lo <= b and a <= hi:
                out.append((max(lo, a), min(hi, b)))
    return out


def _partition(moves: Sequence[Edge]) -> List[Tuple[int, int, FrozenSet[int]]]:
    """Split overlapping ranged moves into disjoint ranges, each with its set of targets."""
    points = sorted({lo for lo, _, _ in moves} | {hi + 1 for _, hi, _ in moves})
    out: List[Tuple[int, int, FrozenSet[int]]] = []
    for a, b in zip(points, points[1:]):
        targets = frozenset(t for lo, hi, t in moves if lo <= a and b - 1 <= hi)
        if not targets:
            continue
        if out and out[-1][1] == a - 1 and out[-1][2] == targets:
            out[-1] = (out[-1][0], b - 1, targets)
        else:
            out.append((a, b - 1, targets))
    return out


def _merge_edges(edges: Sequence[Edge]) -> List[Edge]:
    """Sorted edges with adjacent ranges to the same target joined."""
    out: List[Edge] = []
    for lo, hi, t in sorted(edges):
        if out and out[-1][2] == t and out[-1][1] == lo - 1:
            out[-1] = (out[-1][0], hi, t)
        else:
            out.append((lo, hi, t))
    return out


class CharDFA:
    """A DFA over code points; state 0 is the start; a missing move rejects."""

    __slots__ = ("accepting", "alphabet", "edges")

    def __init__(self, edges: List[List[Edge]], accepting: List[bool], alphabet: Alphabet = ALPHABET) -> None:
        self.edges = edges
        self.accepting = accepting
        self.alphabet = alphabet

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_expr(cls, e: Expr, alphabet: Alphabet = ALPHABET) -> "CharDFA":
        """The minimal DFA of a regular IR expression over characters (no rule references); over
        ``BYTES``, literals are their UTF-8 bytes and ``ByteClass`` is allowed."""
        nfa = _NFA(alphabet)
        start = nfa.state()
        final = nfa.build(e, start)
        closures: Dict[int, FrozenSet[int]] = {}

        def closure(s: int) -> FrozenSet[int]:
            found = closures.get(s)
            if found is None:
                seen, stack = {s}, [s]
                while stack:
                    for t in nfa.eps[stack.pop()]:
                        if t not in seen:
                            seen.add(t)
                            stack.append(t)
                found = closures[s] = frozenset(seen)
            return found

        ids: Dict[FrozenSet[int], int] = {}
        sets: List[FrozenSet[int]] = []

        def intern(states: FrozenSet[int]) -> int:
            if states not in ids:
                if len(sets) >= MAX_STATES:
                    raise _too_big()
                ids[states] = len(sets)
                sets.append(states)
            return ids[states]

        intern(closure(start))
        edges: List[List[Edge]] = []
        i = 0
        while i < len(sets):
            moves = [m for s in sets[i] for m in nfa.moves[s]]
            row = []
            for lo, hi, targets in _partition(moves):
                reached = frozenset().union(*(closure(t) for t in targets))
                row.append((lo, hi, intern(reached)))
            edges.append(_merge_edges(row))
            i += 1
        return cls(edges, [final in s for s in sets], alphabet).minimized()

    @classmethod
    def length(cls, lo: int, hi: Optional[int], alphabet: Alphabet = ALPHABET) -> "CharDFA":
        """Any string of ``lo..hi`` characters (``hi=None``: no upper bound)."""
        top = lo if hi is None else hi
        if top + 1 > MAX_STATES:
            raise _too_big()
        edges: List[List[Edge]] = []
        for i in range(top + 1):
            nxt = i + 1 if i < top else (i if hi is None else None)
            edges.append([(a, b, nxt) for a, b in alphabet] if nxt is not None else [])
        return cls(edges, [lo <= i for i in range(top + 1)], alphabet)

    @classmethod
    def literal_set(cls, words: Sequence[str], alphabet: Alphabet = ALPHABET) -> "CharDFA":
        """Exactly the strings in ``words``."""
        alts = tuple(Literal(w.encode("utf-8", "surrogatepass")) for w in words)
        if not alts:
            return cls([[]], [False], alphabet)
        return cls.from_expr(Choice(alts), alphabet)

    @classmethod
    def containing(cls, words: Sequence[str], alphabet: Alphabet = ALPHABET) -> "CharDFA":
        """The strings in which one of ``words`` occurs (an Aho–Corasick automaton)."""
        if not words:
            return cls.literal_set([], alphabet)
        anything = _anything(alphabet)
        alts = Choice(tuple(Literal(w.encode("utf-8", "surrogatepass")) for w in words))
        return cls.from_expr(Seq((anything, alts, anything)), alphabet)

    @classmethod
    def ending_with(cls, words: Sequence[str], alphabet: Alphabet = ALPHABET) -> "CharDFA":
        """The strings that end with one of ``words``."""
        alts = Choice(tuple(Literal(w.encode("utf-8", "surrogatepass")) for w in words))
        return cls.from_expr(Seq((_anything(alphabet), alts)), alphabet)

    @classmethod
    def until_first(
        cls, words: Sequence[str], ends: Sequence[str], alphabet: Alphabet = ALPHABET
    ) -> "CharDFA":
        """The strings whose first occurrence of any of ``words`` is at their very end and is
        one of ``ends`` (a subset of ``words``): text up to and including the first trigger."""
        first = cls.containing(words, alphabet).stopped_at_accept()
        return first.intersect(cls.ending_with(ends, alphabet))

    # ---- queries ------------------------------------------------------------------------

    def matches(self, text: Union[str, bytes]) -> bool:
        """Whether the DFA accepts ``text`` (code points of a str, or bytes over ``BYTES``)."""
        s = 0
        for cp in text if isinstance(text, bytes) else map(ord, text):
            for lo, hi, t in self.edges[s]:
                if lo <= cp <= hi:
                    s = t
                    break
            else:
                return False
        return self.accepting[s]

    def is_empty(self) -> bool:
        """Whether the DFA accepts no string at all."""
        t = self.trimmed()  # the start survives trimming only if some string is accepted
        return not t.accepting[0] and not t.edges[0]

    def single_loop(self) -> Optional[List[Tuple[int, int]]]:
        """The class C when the language is exactly C* (one accepting state looping on C)."""
        d = self.trimmed()
        if len(d.edges) == 1 and d.accepting[0]:
            return [(lo, hi) for lo, hi, _ in d.edges[0]]
        return None

    @property
    def num_states(self) -> int:
        return len(self.edges)

    # ---- operations ---------------------------------------------------------------------

    def intersect(self, other: "CharDFA") -> "CharDFA":
        """The strings both accept (product construction over reachable pairs)."""
        ids: Dict[Tuple[int, int], int] = {(0, 0): 0}
        pairs = [(0, 0)]
        edges: List[List[Edge]] = []
        i = 0
        while i < len(pairs):
            p, q = pairs[i]
            row: List[Edge] = []
            for lo, hi, t in self.edges[p]:
                for lo2, hi2, t2 in other.edges[q]:
                    a, b = max(lo, lo2), min(hi, hi2)
                    if a > b:
                        continue
                    key = (t, t2)
                    if key not in ids:
                        if len(pairs) >= PRODUCT_LIMIT:
                            raise GrammarError(
                                f"combining the constraints needs an automaton of more than {PRODUCT_LIMIT} states"
                            )
                        ids[key] = len(pairs)
                        pairs.append(key)
                    row.append((a, b, ids[key]))
            edges.append(_merge_edges(row))
            i += 1
        accepting = [self.accepting[p] and other.accepting[q] for p, q in pairs]
        return CharDFA(edges, accepting, self.alphabet).minimized()

    def complement(self) -> "CharDFA":
        """The strings this DFA rejects."""
        dead = len(self.edges)
        edges: List[List[Edge]] = []
        for row in self.edges:
            covered = [(lo, hi) for lo, hi, _ in row]
            top = self.alphabet[-1][1]
            gaps = [r for r in _clip(complement_ranges(covered, top), self.alphabet) if r]
            edges.append(_merge_edges(list(row) + [(lo, hi, dead) for lo, hi in gaps]))
        edges.append([(a, b, dead) for a, b in self.alphabet])
        accepting = [not a for a in self.accepting] + [True]
        return CharDFA(edges, accepting, self.alphabet).minimized()

    def stopped_at_accept(self) -> "CharDFA":
        """The accepted strings none of whose proper prefixes is accepted."""
        edges = [[] if self.accepting[s] else list(row) for s, row in enumerate(self.edges)]
        return CharDFA(edges, list(self.accepting), self.alphabet).minimized()

    def minus(self, other: "CharDFA") -> "CharDFA":
        """The strings this DFA accepts and ``other`` rejects."""
        return self.intersect(other.complement())

    def trimmed(self) -> "CharDFA":
        """Only the states reachable from the start that can still reach acceptance."""
        n = len(self.edges)
        reach = {0}
        stack = [0]
        while stack:
            for _, _, t in self.edges[stack.pop()]:
                if t not in reach:
                    reach.add(t)
                    stack.append(t)
        back: List[List[int]] = [[] for _ in range(n)]
        for s in reach:
            for _, _, t in self.edges[s]:
                back[t].append(s)
        live = {s for s in reach if self.accepting[s]}
        stack = list(live)
        while stack:
            for s in back[stack.pop()]:
                if s not in live:
                    live.add(s)
                    stack.append(s)
        if 0 not in live:
            return CharDFA([[]], [False], self.alphabet)
        order = [0] + sorted(live - {0})
        new = {s: i for i, s in enumerate(order)}
        edges = [[(lo, hi, new[t]) for lo, hi, t in self.edges[s] if t in live] for s in order]
        return CharDFA(edges, [self.accepting[s] for s in order], self.alphabet)

    def minimized(self) -> "CharDFA":
        """The equivalent trimmed DFA with the fewest states (Moore's partition refinement)."""
        d = self.trimmed()
        if len(d.edges) > MINIMIZE_LIMIT:
            return d  # Moore's refinement is quadratic; a trimmed DFA is just as correct
        cls = [1 if a else 0 for a in d.accepting]
        count = len(set(cls))
        while True:
            signatures: Dict[Tuple[object, ...], int] = {}
            new_cls = []
            for s, row in enumerate(d.edges):
                sig = (cls[s], tuple(_merge_edges([(lo, hi, cls[t]) for lo, hi, t in row])))
                new_cls.append(signatures.setdefault(sig, len(signatures)))
            if len(signatures) == count:
                break
            cls, count = new_cls, len(signatures)
        # renumber so that the start's class is 0
        order: Dict[int, int] = {cls[0]: 0}
        for c in cls:
            order.setdefault(c, len(order))
        edges: List[List[Edge]] = [[] for _ in range(count)]
        accepting = [False] * count
        for s, row in enumerate(d.edges):
            c = order[cls[s]]
            edges[c] = _merge_edges([(lo, hi, order[cls[t]]) for lo, hi, t in row])
            accepting[c] = d.accepting[s]
        return CharDFA(edges, accepting, d.alphabet)

    # ---- back to grammar IR -------------------------------------------------------------

    def to_ir(
        self,
        spell: Callable[[Sequence[Tuple[int, int]]], Optional[Expr]],
        rules: Dict[str, Expr],
        fresh: Callable[[str], str],
        base_name: str,
    ) -> Optional[Expr]:
        """IR for the accepted strings, each character spelled by ``spell(ranges)`` (e.g. every
        JSON spelling of one code point in ranges). A state that several others lead to becomes
        a rule named ``fresh(base_name)`` in ``rules``; the rest are inlined. None when empty.

        A self-loop becomes a repeat, so the rule nesting grows with the number of state
        changes, not with the string's length."""
        d = self.trimmed()
        if not d.accepting[0] and not d.edges[0]:
            return None
        indegree = [0] * len(d.edges)
        for s, row in enumerate(d.edges):
            for t in {t for _, _, t in row if t != s}:
                indegree[t] += 1
        names: Dict[int, str] = {}

        def ref(t: int, depth: int) -> Expr:
            if t != 0 and indegree[t] == 1 and depth < _INLINE_DEPTH:
                return body(t, depth + 1)
            if t not in names:
                names[t] = fresh(base_name)
                rules[names[t]] = body(t, 0)
            return RuleRef(names[t])

        def body(s: int, depth: int) -> Expr:
            groups: Dict[int, List[Tuple[int, int]]] = {}
            for lo, hi, t in d.edges[s]:
                groups.setdefault(t, []).append((lo, hi))
            alts: List[Expr] = []
            for t, ranges in groups.items():
                if t == s:
                    continue
                ch = spell(ranges)
                if ch is not None:
                    alts.append(seq((ch, ref(t, depth))))
            if d.accepting[s]:
                alts.append(EMPTY)
            rest: Expr = alts[0] if len(alts) == 1 else Choice(tuple(alts))
            loop = spell(groups[s]) if s in groups else None
            return seq((Repeat(loop, 0, None), rest)) if loop is not None else rest

        return ref(0, 0)


def _anything(alphabet: Alphabet) -> Expr:
    cls = ByteClass(alphabet) if alphabet == BYTES else CharClass(alphabet)
    return Repeat(cls, 0, None)


_INLINE_DEPTH = 48  # deeper chains of single-entry states become rules (bounded recursion)

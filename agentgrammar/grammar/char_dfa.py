"""Deterministic automata over Unicode code points, for string constraints that combine.

A regex ``pattern`` with ``minLength``, a ``format`` with ``maxLength``, the keys that match
*no* ``patternProperties`` pattern, ``not: {pattern: ...}``: each needs the intersection or the
complement of regular languages, which grammar IR cannot say directly. ``CharDFA`` builds a
minimal DFA from a regular IR expression over decoded characters (what ``parse_regex``
returns), combines DFAs, and turns the result back into IR rules (right-linear: one rule per
state, a self-loop as a repeat), each character spelled every way JSON allows.

The alphabet is every Unicode scalar value (surrogates excluded: a JSON string cannot hold a
lone one). Sizes are bounded: an automaton past ``MAX_STATES`` states raises GrammarError, and so
does one operation (building, combining or minimizing an automaton) that takes more than
``MAX_WORK`` steps: a count of the work done, not a clock, so the outcome is deterministic.

Example:
    >>> from agentgrammar.grammar.regex import parse_regex
    >>> d = CharDFA.from_expr(parse_regex("[a-z]+")).intersect(CharDFA.length(2, 3))
    >>> [d.matches(s) for s in ("a", "ab", "abc", "abcd", "A1")]
    [False, True, True, False, False]
    >>> d.complement().matches("A1")
    True
"""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple, Union

from ..errors import GrammarError
from .char_dfa_ir import dfa_to_ir
from .char_dfa_minimize import minimal_complement_rows, minimal_rows, minimal_trie_rows
from .char_ranges import Edge, add_range, clip, merge_edges, pair_state, partition
from .ir import ByteClass, CharClass, Choice, Expr, Literal, Repeat, RuleRef, Seq
from .utf8 import complement_ranges

__all__ = ["ALPHABET", "BYTES", "MAX_STATES", "MAX_WORK", "PRODUCT_LIMIT", "CharDFA"]

Alphabet = Tuple[Tuple[int, int], ...]
#: Every code point a JSON string can hold (the default alphabet).
ALPHABET: Alphabet = ((0, 0xD7FF), (0xE000, 0x10FFFF))
#: Raw bytes: for free text that, as in xgrammar, may be any byte sequence.
BYTES: Alphabet = ((0, 0xFF),)
#: The most NFA or DFA states one automaton may have.
MAX_STATES = 20_000
#: The most steps one operation may take (subset construction: NFA states visited and moves
#: swept; product: edge pairs compared; minimization: edges scanned). About a second of work.
MAX_WORK = 2_000_000
#: The most states an intersection may have: each becomes grammar rules, so products past this
#: (a long length bound times a complex pattern) are refused rather than slow to build and match.
PRODUCT_LIMIT = 3_000


def _too_big() -> GrammarError:
    return GrammarError(f"a string constraint needs an automaton of more than {MAX_STATES} states")


class _Work:
    """A deterministic budget of ``MAX_WORK`` steps for one operation."""

    __slots__ = ("left", "what")

    def __init__(self, what: str) -> None:
        self.left = MAX_WORK
        self.what = what

    def charge(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise GrammarError(
                f"{self.what} takes more than {MAX_WORK} steps (simplify the pattern, or lower the length bounds)"
            )


class _NFA:
    """Thompson construction: states with epsilon moves and ranged character moves."""

    def __init__(self, alphabet: Alphabet, refs: Optional[Callable[[str], "CharDFA"]] = None) -> None:
        self.alphabet = alphabet
        #: the automaton of a referenced rule (rules of a regular grammar), or None: no references
        self.refs = refs
        self.eps: List[List[int]] = []
        self.moves: List[List[Edge]] = []
        #: states that loop on every character (``[\s\S]*``): from one that reaches the final
        #: state by epsilon moves, every string is accepted
        self.sigma_loops: List[int] = []

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
                if self._covers_alphabet(e.item):
                    self.sigma_loops.append(loop)
                return loop
            end = self.state()
            for _ in range(e.max - e.min):
                self.eps[at].append(end)
                at = self.build(e.item, at)
            self.eps[at].append(end)
            return end
        if isinstance(e, RuleRef) and self.refs is not None:
            return self._embed(self.refs(e.name), start)
        if isinstance(e, (RuleRef, ByteClass)):
            raise GrammarError(f"a {type(e).__name__} is not a regular expression over characters")
        raise TypeError(f"not an IR expression: {e!r}")

    def _covers_alphabet(self, e: Expr) -> bool:
        if isinstance(e, CharClass) and self.alphabet != BYTES:
            ranges = complement_ranges(e.ranges) if e.negated else list(e.ranges)
        elif isinstance(e, ByteClass) and self.alphabet == BYTES:
            ranges = list(e.ranges)
        else:
            return False
        return clip(ranges, self.alphabet) == list(self.alphabet)

    def _embed(self, dfa: "CharDFA", start: int) -> int:
        """A copy of ``dfa``'s states from ``start``; the state its accepting states lead to."""
        if dfa.alphabet != self.alphabet:
            raise GrammarError("a rule's automaton is over another alphabet")
        # fresh states, the first too: a move back to the DFA's start must not reach the other
        # moves that ``start`` may have (the loop state of an enclosing repeat)
        states = [self.state() for _ in dfa.edges]
        self.eps[start].append(states[0])
        end = self.state()
        for s, row in enumerate(dfa.edges):
            self.moves[states[s]].extend((lo, hi, states[t]) for lo, hi, t in row)
            if dfa.accepting[s]:
                self.eps[states[s]].append(end)
        return end

    def _chars(self, start: int, ranges: Sequence[Tuple[int, int]]) -> int:
        end = self.state()
        for lo, hi in clip(ranges, self.alphabet):
            self.moves[start].append((lo, hi, end))
        return end


class CharDFA:
    """A DFA over code points; state 0 is the start; a missing move rejects."""

    __slots__ = ("accepting", "alphabet", "edges", "minimal")

    def __init__(self, edges: List[List[Edge]], accepting: List[bool], alphabet: Alphabet = ALPHABET) -> None:
        self.edges = edges
        self.accepting = accepting
        self.alphabet = alphabet
        #: known to be minimal and trimmed (what ``minimized`` returns): its complement is
        #: then read off it, without a minimization
        self.minimal = False

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_expr(
        cls, e: Expr, alphabet: Alphabet = ALPHABET, refs: Optional[Callable[[str], "CharDFA"]] = None
    ) -> "CharDFA":
        """The minimal DFA of a regular IR expression over characters; over ``BYTES``, literals
        are their UTF-8 bytes and ``ByteClass`` is allowed. A rule reference is refused, or,
        given ``refs``, stands for the automaton ``refs(name)`` (a grammar's non-recursive rules).

        Example:
            >>> digit = CharDFA.from_expr(CharClass(((48, 57),)))
            >>> d = CharDFA.from_expr(Repeat(RuleRef("digit"), 2, 2), refs=lambda name: digit)
            >>> d.matches("42"), d.matches("4")
            (True, False)
        """
        nfa = _NFA(alphabet, refs)
        start = nfa.state()
        final = nfa.build(e, start)
        work = _Work("building the automaton of a string constraint")
        work.charge(2 * len(nfa.eps))
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
                work.charge(len(seen))
                found = closures[s] = frozenset(seen)
            return found

        # Every set holding a universal state (a loop on every character that reaches the end by
        # epsilon moves, as the trailing ``[\s\S]*`` of an unanchored pattern) accepts every
        # string: all become one state, rather than one per combination of the other states
        # (which is exponential for ``.*a.*|.*b.*|...``).
        universal = frozenset(u for u in nfa.sigma_loops if final in closure(u))
        canonical = closure(min(universal)) if universal else None

        ids: Dict[FrozenSet[int], int] = {}
        sets: List[FrozenSet[int]] = []

        def intern(states: FrozenSet[int]) -> int:
            if canonical is not None and not universal.isdisjoint(states):
                states = canonical
            if states not in ids:
                if len(sets) >= MAX_STATES:
                    raise _too_big()
                ids[states] = len(sets)
                sets.append(states)
            return ids[states]

        intern(closure(start))
        by_targets: Dict[FrozenSet[int], int] = {}  # NFA targets of a move -> DFA state
        edges: List[List[Edge]] = []
        i = 0
        while i < len(sets):
            if sets[i] is canonical:
                edges.append([(a, b, i) for a, b in alphabet])
                i += 1
                continue
            moves = [m for s in sets[i] for m in nfa.moves[s]]
            work.charge(len(sets[i]))
            row = []
            for lo, hi, targets in partition(moves, work):
                t = by_targets.get(targets)
                if t is None:
                    reached = frozenset().union(*(closure(t) for t in targets))
                    work.charge(len(reached))
                    t = by_targets[targets] = intern(reached)
                row.append((lo, hi, t))
            edges.append(merge_edges(row))
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
        """Exactly the strings in ``words``: their trie, minimized (a subset construction
        over a choice of literals builds the same trie at several times the cost)."""
        if not words:
            return cls([[]], [False], alphabet)
        encoded = [w.encode("utf-8", "surrogatepass") for w in words]
        if sum(map(len, encoded)) + 2 * len(encoded) + 4 > MAX_STATES:  # as large as that may fail
            return cls.from_expr(Choice(tuple(Literal(b) for b in encoded)), alphabet)
        children: List[Dict[int, int]] = [{}]
        accepting = [False]
        for w, b in zip(words, encoded):
            if alphabet == BYTES:
                units = list(b)  # every byte is in the alphabet
            else:
                units = [ord(c) for c in w]  # (what decoding ``b`` gives back)
                if alphabet == ALPHABET:
                    inside = w.isascii() or not any(0xD800 <= u <= 0xDFFF for u in units)
                else:
                    inside = all(any(lo <= u <= hi for lo, hi in alphabet) for u in units)
                if not inside:
                    continue  # a character outside the alphabet: no string of it is accepted
            at = 0
            for u in units:
                nxt = children[at].get(u)
                if nxt is None:
                    nxt = children[at][u] = len(children)
                    children.append({})
                    accepting.append(False)
                at = nxt
            accepting[at] = True
        edges = [[(u, u, t) for u, t in sorted(row.items())] for row in children]
        work = _Work("minimizing the automaton of a string constraint")
        edges, accepting = minimal_trie_rows(edges, accepting, work)
        return _marked(CharDFA(edges, accepting, alphabet))

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
        shape = self.chain_then_loop()
        return shape[1] if shape is not None and not shape[0] else None

    def chain_then_loop(self) -> Optional[Tuple[List[List[Tuple[int, int]]], List[Tuple[int, int]]]]:
        """The classes C1 .. Ck and L when the language is exactly C1 .. Ck L* (a path of
        states with one successor each, then one accepting state looping on L; L empty when
        it has no edge), else None. Under length bounds such a language is C1 .. Ck L{m,n},
        a counted repeat instead of a product with the bounds.

        Example:
            >>> from agentgrammar.grammar.regex import parse_regex
            >>> CharDFA.from_expr(parse_regex("[1-9][0-9]*")).chain_then_loop()
            ([[(49, 57)]], [(48, 57)])
        """
        d = self.trimmed()
        chain: List[List[Tuple[int, int]]] = []
        s, seen = 0, {0}
        while not d.accepting[s]:
            edges = d.edges[s]
            targets = {t for _, _, t in edges}
            if len(targets) != 1:
                return None
            chain.append([(lo, hi) for lo, hi, _ in edges])
            (s,) = targets
            if s in seen:  # (a trimmed automaton has no cycle without a way out)
                return None
            seen.add(s)
        if any(t != s for _, _, t in d.edges[s]):
            return None
        return chain, [(lo, hi) for lo, hi, _ in d.edges[s]]

    @property
    def num_states(self) -> int:
        return len(self.edges)

    # ---- operations ---------------------------------------------------------------------

    def with_length(self, lo: int, hi: Optional[int]) -> "CharDFA":
        """``intersect(CharDFA.length(lo, hi))``, refused at once (the product's GrammarError)
        when the states reached through a state that loops on itself already make the product
        larger than ``PRODUCT_LIMIT`` (``pairs_through_loops``). A URI under pydantic's
        ``maxLength: 2083`` took 30 ms of building to fail.

        Trimmed, not minimized: paired with a count, a minimal automaton stays nearly minimal
        (states merge only where the bounds hide what told them apart: a CURIE's pattern under
        ``maxLength: 146`` has 847 states either way, a tag's under 255 has 510 for 509), and
        minimizing took most of the product's time."""
        top = lo if hi is None else hi
        if self.pairs_through_loops(top) > PRODUCT_LIMIT:
            raise GrammarError(
                f"combining the constraints needs an automaton of more than {PRODUCT_LIMIT} states"
            )
        rows = _sorted_rows(self)
        if self.alphabet != ALPHABET or not all(_in_alphabet(a, b) for row in rows for a, b, _ in row):
            return self.intersect(CharDFA.length(lo, hi))
        # The count's every row is the whole alphabet: a pair's row is its state's, retargeted.
        work = _Work("combining the constraints")
        ids: Dict[Tuple[int, int], int] = {(0, 0): 0}
        pairs = [(0, 0)]
        edges: List[List[Edge]] = []
        for p, n in pairs:  # (grows as it goes)
            row = rows[p]
            work.charge(len(row) + 1)
            if n == top and hi is not None:
                edges.append([])
                continue
            m = n + 1 if n < top else n
            out: List[Edge] = []
            for a, b, t in row:
                target = ids.get((t, m))
                if target is None:
                    target = pair_state(ids, pairs, (t, m), PRODUCT_LIMIT, "combining")
                out.append((a, b, target))
            edges.append(out)
        accepting = [self.accepting[p] and n >= lo for p, n in pairs]
        return CharDFA(edges, accepting, self.alphabet).trimmed()

    def pairs_through_loops(self, top: int) -> int:
        """A lower bound on the reachable states of the product with a count of characters
        up to ``top``: a state reached by a path of length e through a state that loops on
        itself is paired with every count from e to ``top`` (the loop takes the difference).
        Stops once past ``PRODUCT_LIMIT``. 0 for another alphabet than the count's, whose
        characters the count may not take."""
        if self.alphabet != ALPHABET:
            return 0
        dist = {0: 0}  # shortest paths from the start
        frontier = [0]
        while frontier:
            nxt: List[int] = []
            for s in frontier:
                for _, _, t in self.edges[s]:
                    if t not in dist:
                        dist[t] = dist[s] + 1
                        nxt.append(t)
            frontier = nxt
        # shortest paths through a looping state: the loops are the sources, at their distance
        levels: Dict[int, List[int]] = {}
        for s, d in dist.items():
            if d <= top and any(t == s for _, _, t in self.edges[s]):
                levels.setdefault(d, []).append(s)
        done: Set[int] = set()
        total = 0
        for e in range(min(levels, default=top + 1), top + 1):
            for s in levels.pop(e, ()):
                if s in done:
                    continue
                done.add(s)
                total += top - e + 1
                if total > PRODUCT_LIMIT:
                    return total
                levels.setdefault(e + 1, []).extend(t for _, _, t in self.edges[s] if t not in done)
        return total

    def intersect(self, other: "CharDFA") -> "CharDFA":
        """The strings both accept (product construction over reachable pairs)."""
        mine, theirs = _sorted_rows(self), _sorted_rows(other)
        work = _Work("combining the constraints")
        ids: Dict[Tuple[int, int], int] = {(0, 0): 0}
        pairs = [(0, 0)]
        edges: List[List[Edge]] = []
        i = 0
        while i < len(pairs):
            p, q = pairs[i]
            left, right = mine[p], theirs[q]
            na, nb = len(left), len(right)
            work.charge(na + nb + 1)
            row: List[Edge] = []
            a = b = 0
            # both sorted and disjoint: a merge (pair_state and add_range inlined: this loop
            # is most of the work of a product)
            while a < na and b < nb:
                lo, hi, t = left[a]
                lo2, hi2, t2 = right[b]
                x = lo if lo > lo2 else lo2
                y = hi if hi < hi2 else hi2
                if x <= y:
                    target = ids.get((t, t2))
                    if target is None:
                        target = pair_state(ids, pairs, (t, t2), PRODUCT_LIMIT, "combining")
                    if row and row[-1][2] == target and row[-1][1] == x - 1:
                        row[-1] = (row[-1][0], y, target)
                    else:
                        row.append((x, y, target))
                if hi < hi2:
                    a += 1
                else:
                    b += 1
            edges.append(row)
            i += 1
        accepting = [self.accepting[p] and other.accepting[q] for p, q in pairs]
        return CharDFA(edges, accepting, self.alphabet).minimized()

    def union(self, other: "CharDFA", limit: int = PRODUCT_LIMIT) -> "CharDFA":
        """The strings either accepts (product construction over reachable pairs, a side that
        has no move being -1). Past ``limit`` states GrammarError: a caller that has the
        languages apart as well keeps them apart then."""
        mine, theirs = _sorted_rows(self), _sorted_rows(other)
        work = _Work("uniting the constraints")
        ids: Dict[Tuple[int, int], int] = {(0, 0): 0}
        pairs = [(0, 0)]
        edges: List[List[Edge]] = []
        none: List[Edge] = []
        top = self.alphabet[-1][1] + 1
        i = 0
        while i < len(pairs):
            p, q = pairs[i]
            left = mine[p] if p >= 0 else none
            right = theirs[q] if q >= 0 else none
            work.charge(len(left) + len(right) + 1)
            row: List[Edge] = []
            a = b = 0
            x = 0  # the first character not yet swept
            while a < len(left) or b < len(right):  # both sorted and disjoint: a sweep
                la, ha, ta = left[a] if a < len(left) else (top, top, -1)
                lb, hb, tb = right[b] if b < len(right) else (top, top, -1)
                x = max(x, min(la, lb))
                t1 = ta if la <= x else -1
                t2 = tb if lb <= x else -1
                # the segment ends where either side's current range ends or the other starts
                y = min(ha if t1 >= 0 else la - 1, hb if t2 >= 0 else lb - 1)
                target = pair_state(ids, pairs, (t1, t2), limit, "uniting")
                add_range(row, x, y, target)
                x = y + 1
                if t1 >= 0 and ha == y:
                    a += 1
                if t2 >= 0 and hb == y:
                    b += 1
            edges.append(row)
            i += 1
        accepting = [(p >= 0 and self.accepting[p]) or (q >= 0 and other.accepting[q]) for p, q in pairs]
        return CharDFA(edges, accepting, self.alphabet).minimized()

    @staticmethod
    def exactly_one(dfas: Sequence["CharDFA"], limit: int = PRODUCT_LIMIT) -> "CharDFA":
        """The strings exactly one of ``dfas`` accepts (JSON Schema's ``oneOf``): one product
        over the reachable tuples of states, a side that has no move being -1, minimized once.
        Past ``limit`` states GrammarError.

        Example:
            >>> from agentgrammar.grammar.regex import parse_regex
            >>> a, b = CharDFA.from_expr(parse_regex("a.*")), CharDFA.from_expr(parse_regex(".*b"))
            >>> d = CharDFA.exactly_one([a, b])
            >>> [d.matches(s) for s in ("ax", "xb", "ab", "xx")]
            [True, True, False, False]
        """
        rows = [_sorted_rows(d) for d in dfas]
        # a state that accepts every string from here on: two such in a tuple, and it never
        # accepts again (no move is made to it)
        universal = [
            {s for s, row in enumerate(d.edges) if d.accepting[s] and _loops_on_all(row, s, d.alphabet)}
            for d in dfas
        ]
        work = _Work("combining the oneOf branches")
        start = (0,) * len(dfas)
        ids: Dict[Tuple[int, ...], int] = {start: 0}
        tuples: List[Tuple[int, ...]] = [start]
        edges: List[List[Edge]] = []
        i = 0
        while i < len(tuples):
            sides = [rows[k][s] if s >= 0 else [] for k, s in enumerate(tuples[i])]
            cuts = sorted({x for side in sides for lo, hi, _ in side for x in (lo, hi + 1)})
            work.charge(len(cuts) * len(sides) + 1)
            where = {x: j for j, x in enumerate(cuts)}
            columns = []  # each side's target on each segment between two cuts
            for side in sides:
                column = [-1] * len(cuts)
                for lo, hi, t in side:
                    a, b = where[lo], where[hi + 1]
                    column[a:b] = [t] * (b - a)
                columns.append(column)
            row: List[Edge] = []
            for j, key in enumerate(zip(*columns)):
                if j + 1 == len(cuts):
                    break
                if sum(1 for k, t in enumerate(key) if t in universal[k]) > 1 or key.count(-1) == len(key):
                    continue
                target = ids.get(key)
                if target is None:
                    target = pair_state(ids, tuples, key, limit, "combining")
                add_range(row, cuts[j], cuts[j + 1] - 1, target)
            edges.append(row)
            i += 1
        accepting = [
            sum(1 for k, s in enumerate(key) if s >= 0 and dfas[k].accepting[s]) == 1 for key in tuples
        ]
        return CharDFA(edges, accepting, dfas[0].alphabet).minimized()

    def complement(self) -> "CharDFA":
        """The strings this DFA rejects."""
        if self.minimal and (self.accepting[0] or self.edges[0]):
            return self._minimal_complement()
        dead = len(self.edges)
        edges: List[List[Edge]] = []
        work = _Work("complementing the automaton of a string constraint")
        for row in self.edges:
            work.charge(2 * len(row) + 1)
            covered = [(lo, hi) for lo, hi, _ in row]
            top = self.alphabet[-1][1]
            gaps = [r for r in clip(complement_ranges(covered, top), self.alphabet) if r]
            edges.append(merge_edges(list(row) + [(lo, hi, dead) for lo, hi in gaps]))
        edges.append([(a, b, dead) for a, b in self.alphabet])
        accepting = [not a for a in self.accepting] + [True]
        return CharDFA(edges, accepting, self.alphabet).minimized()

    def _minimal_complement(self) -> "CharDFA":
        """``complement`` of a minimal trimmed DFA that accepts something, minimal as built
        (``char_dfa_minimize.minimal_complement_rows``)."""
        work = _Work("complementing the automaton of a string constraint")
        edges, accepting = minimal_complement_rows(self.edges, self.accepting, self.alphabet, work)
        return _marked(CharDFA(edges, accepting, self.alphabet))

    def stopped_at_accept(self) -> "CharDFA":
        """The accepted strings none of whose proper prefixes is accepted."""
        edges = [[] if self.accepting[s] else list(row) for s, row in enumerate(self.edges)]
        return CharDFA(edges, list(self.accepting), self.alphabet).minimized()

    def minus(self, other: "CharDFA") -> "CharDFA":
        """The strings this DFA accepts and ``other`` rejects."""
        return self.intersect(other.complement())

    def trimmed(self) -> "CharDFA":
        """Only the states reachable from the start that can still reach acceptance."""
        if self.minimal:  # trimmed already, and numbered as trimming would (all are kept)
            return self
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
        """The equivalent trimmed DFA with the fewest states (``char_dfa_minimize.minimal_rows``:
        Hopcroft's partition refinement, or Revuz's one pass where it has no cycle)."""
        work = _Work("minimizing the automaton of a string constraint")
        edges, accepting = minimal_rows(self.edges, self.accepting, work)
        return _marked(CharDFA(edges, accepting, self.alphabet))

    # ---- back to grammar IR -------------------------------------------------------------

    def to_ir(
        self,
        spell: Callable[[Sequence[Tuple[int, int]]], Optional[Expr]],
        rules: Dict[str, Expr],
        fresh: Callable[[str], str],
        base_name: str,
    ) -> Optional[Expr]:
        """IR for the accepted strings, each character spelled by ``spell(ranges)``; see
        ``char_dfa_ir.dfa_to_ir``."""
        return dfa_to_ir(self, spell, rules, fresh, base_name)


def _marked(dfa: CharDFA) -> CharDFA:
    """``dfa``, known to be minimal and trimmed."""
    dfa.minimal = True
    return dfa


def _in_alphabet(lo: int, hi: int) -> bool:
    """Whether the range ``lo..hi`` lies in one piece of ``ALPHABET`` (the surrogates apart)."""
    return any(a <= lo and hi <= b for a, b in ALPHABET)


def _loops_on_all(row: List[Edge], s: int, alphabet: Alphabet) -> bool:
    """Whether a row moves on every character of the alphabet back to its state ``s``."""
    return [(lo, hi) for lo, hi, t in row if t == s] == list(alphabet) and all(t == s for _, _, t in row)


def _sorted_rows(dfa: CharDFA) -> List[List[Edge]]:
    """Each row sorted by range (the automata built here already are, a minimal one surely;
    hand-built ones may not)."""
    if dfa.minimal:
        return dfa.edges
    return [
        row if all(row[i][0] < row[i + 1][0] for i in range(len(row) - 1)) else sorted(row)
        for row in dfa.edges
    ]


def _anything(alphabet: Alphabet) -> Expr:
    cls = ByteClass(alphabet) if alphabet == BYTES else CharClass(alphabet)
    return Repeat(cls, 0, None)

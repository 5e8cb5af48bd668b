"""A tiny, obviously-correct whole-string matcher over grammar IR, for the grammar tests.

``ends(expr, i)`` is the set of positions where ``expr`` can stop when started at ``i``; rule
references are memoized per (rule, position) and the memo is iterated to a least fixed point, so
left recursion and nullable rules need no special care. Exponential in nothing but slow in
everything: for short test strings only. Independent of the engine and of ``utf8.py``.
"""

from __future__ import annotations

from typing import Dict, FrozenSet, Iterable, Set, Tuple, Union

from agentgrammar.grammar.ir import ByteClass, CharClass, Choice, Expr, Literal, Repeat, Rule, RuleRef, Seq


def _utf8_char(data: bytes, i: int) -> Tuple[int, int]:
    """(code point, length) of the UTF-8 character at ``i`` (surrogates allowed), or (-1, 0)."""
    if i >= len(data):
        return -1, 0
    b = data[i]
    n = (
        1
        if b < 0x80
        else 2
        if 0xC2 <= b <= 0xDF
        else 3
        if 0xE0 <= b <= 0xEF
        else 4
        if 0xF0 <= b <= 0xF4
        else 0
    )
    if n == 0:
        return -1, 0
    try:
        text = data[i : i + n].decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return -1, 0
    if len(text) != 1:
        return -1, 0
    return ord(text), n


class IRMatcher:
    """Whole-string acceptance for ``rules`` rooted at ``root``."""

    def __init__(self, rules: Iterable[Rule], root: str = "root") -> None:
        self.rules: Dict[str, Expr] = {r.name: r.body for r in rules}
        self.root = root

    def matches(self, data: Union[str, bytes]) -> bool:
        if isinstance(data, str):
            data = data.encode("utf-8", "surrogatepass")
        self.data = data
        self.memo: Dict[Tuple[str, int], FrozenSet[int]] = {}
        while True:
            self.changed = False
            self.done: Set[Tuple[str, int]] = set()
            self.active: Set[Tuple[str, int]] = set()
            found = self.rule_ends(self.root, 0)
            if not self.changed:
                return len(data) in found

    def rule_ends(self, name: str, i: int) -> FrozenSet[int]:
        key = (name, i)
        if key in self.done or key in self.active:
            return self.memo.get(key, frozenset())
        self.active.add(key)
        found = frozenset(self.ends(self.rules[name], i))
        self.active.discard(key)
        self.done.add(key)
        old = self.memo.get(key, frozenset())
        if not found <= old:
            self.memo[key] = old | found
            self.changed = True
        return self.memo.get(key, frozenset())

    def ends(self, e: Expr, i: int) -> Set[int]:
        data = self.data
        if isinstance(e, Literal):
            return {i + len(e.value)} if data.startswith(e.value, i) else set()
        if isinstance(e, ByteClass):
            if i < len(data) and any(lo <= data[i] <= hi for lo, hi in e.ranges):
                return {i + 1}
            return set()
        if isinstance(e, CharClass):
            cp, n = _utf8_char(data, i)
            if n == 0:
                return set()
            inside = any(lo <= cp <= hi for lo, hi in e.ranges)
            return {i + n} if inside != e.negated else set()
        if isinstance(e, Seq):
            cur = {i}
            for item in e.items:
                cur = {j for p in cur for j in self.ends(item, p)}
                if not cur:
                    break
            return cur
        if isinstance(e, Choice):
            return {j for item in e.items for j in self.ends(item, i)}
        if isinstance(e, RuleRef):
            return set(self.rule_ends(e.name, i))
        if isinstance(e, Repeat):
            cur = {i}
            for _ in range(e.min):
                nxt = {j for p in cur for j in self.ends(e.item, p)}
                if not nxt:
                    return set()
                if nxt == cur:  # a fixed point: more rounds change nothing
                    break
                cur = nxt
            result = set(cur)
            count = e.min
            while e.max is None or count < e.max:
                cur = {j for p in cur for j in self.ends(e.item, p)}
                count += 1
                if cur <= result:
                    break
                result |= cur
            return result
        raise TypeError(f"not an expression: {e!r}")


def matches(rules: Iterable[Rule], text: Union[str, bytes], root: str = "root") -> bool:
    return IRMatcher(rules, root).matches(text)

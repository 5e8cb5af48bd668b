"""The union and the concatenation of grammars (``Grammar.union`` / ``Grammar.concat``).

Each grammar's rules are renamed apart (its root ``root`` becomes ``root_1``, the second's
``root_2``, ...; a rule name two grammars share gets a suffix in the later one), then a new
``root`` chooses among, or sequences, their roots. Embedded grammars stay embedded.

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> g = combine_rules([Grammar.from_regex("a+"), Grammar.from_regex("b")], union=False)
    >>> [r.name for r in g[0]], g[1]
    (['root', 'root_1', 'root_2'], 'root')
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Set, Tuple

from ..errors import GrammarError
from .ir import Choice, Rule, RuleRef, fresh_name, rename, seq

__all__ = ["combine_rules"]


def combine_rules(grammars: Sequence[Any], *, union: bool) -> Tuple[List[Rule], str]:
    """Rules (the new root first) and the root's name for the union (``union=True``) or the
    concatenation of ``grammars`` (``Grammar`` objects, at least one)."""
    if not grammars:
        raise GrammarError(f"Grammar.{'union' if union else 'concat'}() needs at least one grammar")
    for g in grammars:
        if not hasattr(g, "rules") or not hasattr(g, "root"):
            raise GrammarError(
                f"Grammar.{'union' if union else 'concat'}() takes grammars, not {type(g).__name__}"
            )
    taken: Set[str] = {"root"}
    counters: Dict[str, int] = {}
    rules: List[Rule] = []
    roots: List[RuleRef] = []
    for k, g in enumerate(grammars, 1):
        names = {g.root: fresh_name(f"root_{k}", taken, counters)}
        for r in g.rules:
            if r.name != g.root:
                names[r.name] = fresh_name(r.name, taken, counters)
        roots.append(RuleRef(names[g.root]))
        ordered = sorted(g.rules, key=lambda r: r.name != g.root)
        rules.extend(Rule(names[r.name], rename(r.body, names)) for r in ordered)
    body = Choice(tuple(roots)) if union and len(roots) > 1 else seq(roots)
    return [Rule("root", body), *rules], "root"

"""EBNF rules whose language is computed with automata: xgrammar's ``&`` (intersection), ``~``
(complement, within valid UTF-8 text) and the rule attributes ``[lazy]`` and ``[max_chars=N]``.

Grammar IR has none of these, so each becomes ordinary rules: the operands' minimal DFAs over
code points (``char_dfa.CharDFA``) are combined and written back as right-linear IR. That is
exact, and possible only for regular operands: strings, classes, groups, alternatives, repeats
and references to rules that are themselves regular (no recursion, no macros such as
TagDispatch, no raw bytes). Anything else is refused with a GrammarError, as xgrammar refuses
such operands at compile time. xgrammar's ``~x`` is every valid UTF-8 string that ``x`` rejects,
and so is ours (the alphabet is every Unicode scalar value).

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> g = Grammar.from_ebnf('root ::= [a-z] [a-z]* & ~("let" | "if")')
    >>> [g.accepts(s) for s in ("x", "lets", "let", "if")]
    [True, True, False, False]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Dict, List, NoReturn, Set, Tuple

from ..errors import GrammarError
from .char_dfa import MAX_STATES, CharDFA, Edge
from .ebnf_attributes import RuleAttributes
from .ir import CharClass, Choice, Expr, Literal, Repeat, Rule, RuleRef, Seq, fresh_name, referenced_rules

__all__ = ["AutomatonRule", "budgeted", "resolve_automaton_rules"]

#: Matches nothing: the IR of an empty language.
_NOTHING = CharClass(())


@dataclass(frozen=True)
class AutomatonRule:
    """A rule computed from its operands: ``op`` is ``"and"`` (all operands), ``"not"`` (one
    operand, complemented) or ``"attributes"`` (one operand, the rule's own body, with
    ``attributes`` applied). ``offset`` is where errors point in the grammar text."""

    op: str
    operands: Tuple[Expr, ...]
    offset: int
    attributes: RuleAttributes = field(default_factory=RuleAttributes)


def resolve_automaton_rules(
    rules: List[Rule],
    computed: Dict[str, AutomatonRule],
    taken: Set[str],
    counters: Dict[str, int],
    fail: Callable[[int, str], NoReturn],
) -> List[Rule]:
    """``rules`` with each rule named in ``computed`` given its computed body, plus the rules
    those bodies reference (named apart from ``taken``, which they join). ``fail(offset,
    message)`` reports an operand that is not regular or an automaton that is too large.

    Example:
        >>> from agentgrammar.grammar.ir import EMPTY
        >>> def fail(offset, message):
        ...     raise GrammarError(message)
        >>> spec = AutomatonRule("and", (CharClass(((97, 98),)), CharClass(((98, 99),))), 0)
        >>> resolve_automaton_rules([Rule("r", EMPTY)], {"r": spec}, {"r"}, {}, fail)
        [Rule(name='r', body=CharClass(ranges=((98, 98),), negated=False))]
    """
    bodies = {r.name: r.body for r in rules}
    resolver = _Resolver(bodies, computed, fail)
    extra: Dict[str, Expr] = {}
    new_bodies: Dict[str, Expr] = {}
    for name, spec in computed.items():
        try:
            new_bodies[name] = resolver.expr_of(name, extra, lambda base: fresh_name(base, taken, counters))
        except GrammarError as e:
            fail(spec.offset, str(e))
    out = [Rule(r.name, new_bodies.get(r.name, r.body)) for r in rules]
    out += [Rule(name, body) for name, body in extra.items()]
    return out


class _Resolver:
    def __init__(
        self,
        bodies: Dict[str, Expr],
        computed: Dict[str, AutomatonRule],
        fail: Callable[[int, str], NoReturn],
    ) -> None:
        self.bodies = bodies
        self.computed = computed
        self.fail = fail
        self.dfas: Dict[str, CharDFA] = {}
        self.active: List[str] = []  # the rules being built, outermost first (finds recursion)

    def expr_of(self, name: str, rules: Dict[str, Expr], fresh: Callable[[str], str]) -> Expr:
        """IR for computed rule ``name``: its DFA written as rules (a bounded repeat where the
        budget of a loop ``[...]*`` is all there is)."""
        spec = self.computed[name]
        if spec.op == "attributes" and spec.attributes.max_chars is not None and not spec.attributes.lazy:
            loop = self.dfa(name, budget=False).single_loop()
            if loop is not None:  # C* under a budget of N: exactly C{0,N}
                return Repeat(CharClass(tuple(loop)), 0, spec.attributes.max_chars)
        made: Dict[str, Expr] = {}
        ir = self.dfa(name).to_ir(lambda ranges: CharClass(tuple(ranges)), made, fresh, name)
        if isinstance(ir, RuleRef) and ir.name in made:
            # the start state as a rule of its own: inlined unless a loop comes back to it
            if all(ir.name not in referenced_rules(body) for body in made.values()):
                ir = made.pop(ir.name)
        rules.update(made)
        return _NOTHING if ir is None else ir

    def dfa(self, name: str, budget: bool = True) -> CharDFA:
        """The minimal DFA of rule ``name`` (computed or plain); ``budget=False``: a computed
        rule's without its ``max_chars``."""
        key = name if budget else name + "\0"
        found = self.dfas.get(key)
        if found is not None:
            return found
        if name in self.active:
            cycle = " -> ".join(self.active[self.active.index(name) :] + [name])
            raise GrammarError(
                f"rule '{name}' is recursive ({cycle}): '&', '~', [lazy] and [max_chars] need "
                "a regular language (strings, classes, repeats and non-recursive rules)"
            )
        self.active.append(name)
        try:
            spec = self.computed.get(name)
            if spec is None:
                dfa = self._regular(self.bodies[name], f"rule '{name}'")
            elif spec.op == "and":
                dfa = self._regular(spec.operands[0], "an operand of '&'")
                for operand in spec.operands[1:]:
                    dfa = dfa.intersect(self._regular(operand, "an operand of '&'"))
            elif spec.op == "not":
                dfa = self._regular(spec.operands[0], "the operand of '~'").complement()
            else:
                dfa = self._regular(spec.operands[0], f"rule '{name}' (it has attributes)")
                if spec.attributes.lazy:
                    dfa = dfa.stopped_at_accept()
                if budget and spec.attributes.max_chars is not None:
                    dfa = budgeted(dfa, spec.attributes.max_chars)
        finally:
            self.active.pop()
        self.dfas[key] = dfa
        return dfa

    def _regular(self, e: Expr, where: str) -> CharDFA:
        _check_regular(e, where)
        return CharDFA.from_expr(e, refs=self.dfa)


def _check_regular(e: Expr, where: str) -> None:
    """Refuse what has no automaton over characters (a RuleRef is resolved by the caller)."""
    if isinstance(e, Literal):
        try:
            e.value.decode("utf-8")
        except UnicodeDecodeError:
            raise GrammarError(
                f"{where} holds raw bytes that are not UTF-8 text: '&', '~', [lazy] and "
                "[max_chars] work on characters"
            ) from None
    elif isinstance(e, (Seq, Choice)):
        for item in e.items:
            _check_regular(item, where)
    elif isinstance(e, Repeat):
        _check_regular(e.item, where)
    elif not isinstance(e, (CharClass, RuleRef)):
        what = type(e).__name__
        raise GrammarError(
            f"{where} holds a {what}, which has no regular language over characters: '&', '~', "
            "[lazy] and [max_chars] need strings, classes, repeats and non-recursive rules"
        )


def budgeted(dfa: CharDFA, n: int) -> CharDFA:
    """``dfa`` under xgrammar's relaxed character budget ``n``: the accepted strings none of
    whose proper prefixes of ``n`` or more characters is accepted (after ``n`` characters the
    rule ends at its first chance).

    Example:
        >>> from agentgrammar.grammar.regex import parse_regex
        >>> d = budgeted(CharDFA.from_expr(parse_regex("a|abc|abcd")), 2)
        >>> [d.matches(s) for s in ("a", "abc", "abcd")]
        [True, True, False]
    """
    # states (q, c): DFA state q after min(length, n) characters; from (q, n) an accepting q
    # has no moves (the budget is spent and the rule can end, so it does)
    ids: Dict[Tuple[int, int], int] = {(0, 0): 0}
    order: List[Tuple[int, int]] = [(0, 0)]
    edges: List[List[Edge]] = []
    i = 0
    while i < len(order):
        q, c = order[i]
        row: List[Edge] = []
        if not (c == n and dfa.accepting[q]):
            nc = min(c + 1, n)
            for lo, hi, t in dfa.edges[q]:
                key = (t, nc)
                if key not in ids:
                    if len(order) >= MAX_STATES:
                        raise GrammarError(
                            f"max_chars={n} on this rule needs an automaton of more than {MAX_STATES} states"
                        )
                    ids[key] = len(order)
                    order.append(key)
                row.append((lo, hi, ids[key]))
        edges.append(row)
        i += 1
    return CharDFA(edges, [dfa.accepting[q] for q, _ in order], dfa.alphabet).minimized()

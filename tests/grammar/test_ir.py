"""``agentgrammar.grammar.ir`` helpers that build and walk IR: sequences, flattening embedded
grammars."""

from __future__ import annotations

import random
from typing import List

from agentgrammar import Grammar
from agentgrammar.grammar.ir import CharClass, Embed, Expr, Literal, Rule, RuleRef, Seq, flatten_embeds, seq


def _seq_by_definition(items: List[Expr]) -> Expr:
    """Flatten, drop empty literals, join each run of adjacent literals into one."""
    flat = [y for x in items for y in (x.items if type(x) is Seq else (x,))]
    out: List[Expr] = []
    for y in flat:
        if type(y) is Literal and not y.value:
            continue
        if type(y) is Literal and out and type(out[-1]) is Literal:
            out[-1] = Literal(out[-1].value + y.value)  # type: ignore[union-attr]
        else:
            out.append(y)
    return out[0] if len(out) == 1 else Seq(tuple(out))


def test_seq_flattens_and_joins_literals_as_defined() -> None:
    rng = random.Random(7)
    atoms: List[Expr] = [Literal(b""), Literal(b"a"), Literal(b"bc"), RuleRef("x"), CharClass(((48, 57),))]
    for _ in range(3000):
        items: List[Expr] = []
        for _ in range(rng.randint(0, 6)):
            if rng.random() < 0.3:  # a sequence built directly: its items are not normalized
                items.append(Seq(tuple(rng.choice(atoms) for _ in range(rng.randint(0, 4)))))
            else:
                items.append(rng.choice(atoms))
        assert seq(items) == _seq_by_definition(items), items
    assert seq([Literal(b"a"), Seq((Literal(b""), Literal(b"b"))), RuleRef("x")]) == Seq(
        (Literal(b"ab"), RuleRef("x"))
    )


def test_flattening_copies_only_rules_it_does_not_already_have() -> None:
    """``flatten_embeds`` keeps one copy of a rule the outer grammar already has under the same
    name with the very same body (a converter's shared base rule), and renames apart a rule
    whose name is taken by another body, with every rule that references it."""
    shared = Literal(b"s")
    inner = Grammar.from_rules(
        [
            Rule("inner", Seq((RuleRef("base"), RuleRef("other"), RuleRef("user")))),
            Rule("base", shared),
            Rule("other", Literal(b"o")),
            Rule("user", RuleRef("other")),
        ],
        "inner",
    )
    outer = [
        Rule("root", Seq((RuleRef("base"), Embed(inner)))),
        Rule("base", shared),
        Rule("other", Literal(b"x")),
    ]
    flat = flatten_embeds(outer)
    names = [r.name for r in flat]
    assert names.count("base") == 1 and "base_2" not in names  # shared: one copy
    assert "other_2" in names and "user" in names  # renamed apart: its body differs
    g = Grammar.from_rules(flat)
    assert g.accepts("ssoo") and not g.accepts("ssox") and not g.accepts("ssxx")

"""``agentgrammar.grammar.ir`` helpers that build and walk IR: sequences, flattening embedded
grammars."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
import weakref
from typing import Any, List, Tuple

import pytest

from agentgrammar import Grammar
from agentgrammar.grammar.ir import (
    CharClass,
    Embed,
    Expr,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    flatten_embeds,
    seq,
)


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


@dataclasses.dataclass(frozen=True)
class _FrozenLiteral:
    value: bytes


@dataclasses.dataclass(frozen=True)
class _FrozenRepeat:
    item: Any
    min: int
    max: Any


def test_slotted_nodes_behave_as_frozen_dataclasses() -> None:
    # the same equality, hash and repr as the frozen dataclasses they were
    pairs: List[Tuple[Any, Any]] = [
        (Literal(b"ab"), _FrozenLiteral(b"ab")),
        (Repeat(Literal(b"x"), 1, None), _FrozenRepeat(Literal(b"x"), 1, None)),
    ]
    for node, frozen in pairs:
        assert hash(node) == hash(frozen)
        assert repr(node) == repr(frozen).replace("_Frozen", "")
    assert Literal(b"a") == Literal(b"a") and Literal(b"a") != Literal(b"b")
    assert Literal(b"a") != RuleRef("a") and Seq(()) != Literal(b"")
    assert Repeat(RuleRef("x"), 0, None) != Repeat(RuleRef("x"), 0, 1)
    assert Rule("r", Seq(())) == Rule("r", Seq(())) and Rule("r", Seq(())) != Rule("s", Seq(()))
    assert len({Seq((Literal(b"a"),)), Seq((Literal(b"a"),)), Seq(())}) == 2
    node = Seq((Literal(b"a"), Repeat(RuleRef("x"), 0, None)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.items = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del node.items  # type: ignore[misc]
    rule = Rule("root", node)
    assert pickle.loads(pickle.dumps(rule)) == rule and copy.deepcopy(rule) == rule
    assert copy.copy(rule).body is node
    assert weakref.ref(node)() is node  # validation keeps checked bodies in a weak map

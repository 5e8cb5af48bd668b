"""``agentgrammar.grammar.ir`` helpers that walk IR: flattening embedded grammars."""

from __future__ import annotations

from agentgrammar import Grammar
from agentgrammar.grammar.ir import Embed, Literal, Rule, RuleRef, Seq, flatten_embeds


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

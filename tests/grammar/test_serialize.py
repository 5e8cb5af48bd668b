"""The serializer (``agentgrammar.grammar.serialize``): the words of each node, one node per
distinct content, shared objects written once, children before their parents, and the same
bytes whichever path (by exact type, or by ``isinstance`` for a subclass) writes a node."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List, Tuple

from agentgrammar.grammar import serialize as ser
from agentgrammar.grammar.ir import CharClass, Choice, Literal, Repeat, Rule, RuleRef, Seq
from agentgrammar.grammar.serialize import serialize


def decode(data: bytes) -> Tuple[List[int], List[Tuple[int, ...]]]:
    """(rule bodies, nodes as word tuples) of a serialized grammar."""
    words = struct.unpack(f"={len(data) // 4}i", data)
    magic, version, n_rules, _root, n_nodes, n_data = words[:6]
    assert (magic, version) == (ser.MAGIC, ser.VERSION)
    bodies = list(words[6 : 6 + n_rules])
    offsets = list(words[6 + n_rules : 6 + n_rules + n_nodes])
    body = words[6 + n_rules + n_nodes :]
    assert len(body) == n_data
    ends = offsets[1:] + [n_data]
    return bodies, [tuple(body[o:e]) for o, e in zip(offsets, ends)]


def test_nodes_words_and_one_node_per_content() -> None:
    # two Literal objects with the same bytes, and two equal sequences: one node each
    rules = [
        Rule("root", Choice((Seq((Literal(b"ab"), RuleRef("x"))), Seq((Literal(b"ab"), RuleRef("x")))))),
        Rule("x", Repeat(CharClass(((0x61, 0x62),)), 1, None)),
    ]
    bodies, nodes = decode(serialize(rules, "root"))
    assert nodes == [
        (ser.KIND_LITERAL, 2, 0x61, 0x62),
        (ser.KIND_RULEREF, 1),
        (ser.KIND_SEQ, 2, 0, 1),
        (ser.KIND_CHOICE, 2, 2, 2),  # the serializer keeps the choice as it is
        (ser.KIND_BYTES, 1, 0x61, 0x62),
        (ser.KIND_REPEAT, 4, 1, -1),
    ]
    assert bodies == [3, 5]


def test_shared_object_written_once_and_children_first() -> None:
    shared = Seq((Literal(b"k"), Repeat(RuleRef("v"), 0, 3)))
    rules = [
        Rule("root", Seq((shared, Literal(b";"), RuleRef("v")))),
        Rule("v", Choice((shared, Literal(b"z")))),
    ]
    bodies, nodes = decode(serialize(rules, "root"))
    assert len(nodes) == len(set(nodes))  # no node twice
    for i, node in enumerate(nodes):
        kind = node[0]
        if kind in (ser.KIND_SEQ, ser.KIND_CHOICE):
            assert all(child < i for child in node[2:])
        elif kind == ser.KIND_REPEAT:
            assert node[1] < i
    shared_node = nodes.index((ser.KIND_SEQ, 2, 0, 2))
    assert nodes[bodies[0]][2] == shared_node and shared_node in nodes[bodies[1]][2:]


class _MySeq(Seq):
    """A subclass: not among the exact types that ``_Writer.expr`` dispatches on."""

    __slots__ = ()


@dataclass(frozen=True)
class _MyChoice(Choice):
    pass


def test_subclasses_written_as_their_base() -> None:
    def rules(seq: type, choice: type) -> List[Rule]:
        return [
            Rule("root", seq((Literal(b"["), choice((RuleRef("n"), Literal(b"-"))), Literal(b"]")))),
            Rule("n", Repeat(CharClass(((0x30, 0x39),)), 1, None)),
        ]

    assert serialize(rules(_MySeq, _MyChoice), "root") == serialize(rules(Seq, Choice), "root")

"""The serializer (``agentgrammar.grammar.serialize``): the words of each node, one node per
distinct content, shared objects written once, children before their parents, and the same
bytes whichever path (by exact type, or by ``isinstance`` for a subclass) writes a node."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List, Tuple

from agentgrammar import Grammar
from agentgrammar.grammar import pieces
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
    assert nodes == [  # the last rule written first (serialize)
        (ser.KIND_BYTES, 1, 0x61, 0x62),
        (ser.KIND_REPEAT, 0, 1, -1),
        (ser.KIND_LITERAL, 2, 0x61, 0x62),
        (ser.KIND_RULEREF, 1),
        (ser.KIND_SEQ, 2, 2, 3),
        (ser.KIND_CHOICE, 2, 4, 4),  # the serializer keeps the choice as it is
    ]
    assert bodies == [5, 1]


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


def _fresh_bytes(grammar: Grammar) -> bytes:
    """``grammar``'s words serialized again with no chunk's last place remembered."""
    for rule in grammar.normalized_rules:
        info = pieces.info(rule.body)
        if info is not None and info.chunk is not None:
            info.chunk.placed = None
    emb = grammar._embed_index() if grammar.parts else None
    return serialize(grammar.normalized_rules, grammar.root, emb, use_pieces=False)


def test_a_chunk_copied_where_it_was_before_reuses_its_words_and_fills_its_holes() -> None:
    # json_string's chunk names json_any_char, whose rule index differs from grammar to grammar
    schemas = [
        {"type": "object", "properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {"b": {"type": "string"}, "c": {"type": "string"}}},
        {"type": "array", "items": {"type": "string", "minLength": 1}},  # no json_plain_escape before
    ]
    grammars = [Grammar.from_json_schema(s) for s in schemas]
    names = [[r.name for r in g.normalized_rules] for g in grammars]
    assert all(n[-3:] == ["json_string", "json_plain_escape", "json_any_char"] for n in names[:2])
    assert names[0].index("json_any_char") != names[1].index("json_any_char")
    grammars[0].to_bytes()
    chunk = pieces.info(grammars[0].normalized_rules[-3].body).chunk
    placed = chunk.placed
    assert placed is not None
    words = grammars[1].to_bytes()
    assert chunk.placed is placed  # copied at the same place: its words reused
    assert _fresh_bytes(grammars[1]) == words  # the same words, holes filled for its rules
    assert grammars[1].accepts('{"b": "x\\u00e9", "c": ""}') and not grammars[1].accepts('{"b": 1}')
    assert grammars[2].to_bytes() == _fresh_bytes(grammars[2])
    assert grammars[2].accepts('["é"]') and not grammars[2].accepts('[""]')


def test_a_chunk_copied_after_other_nodes_keeps_no_place() -> None:
    # a request's tool pieces land anywhere among its own nodes: nothing of them is kept
    body = pieces.mark(Seq((Literal(b"a"), RuleRef("z"))))
    rules = [Rule("root", Seq((RuleRef("p"), Literal(b"x")))), Rule("p", body), Rule("z", Literal(b"q"))]
    serialize(rules, "root")
    chunk = pieces.info(body).chunk
    assert chunk is not None and chunk.placed is None
    first = [rules[0], rules[2], rules[1]]  # the piece's rule last: written first
    bodies, nodes = decode(serialize(first, "root"))
    assert chunk.placed is not None and chunk.placed[:2] == (0, 0)
    assert decode(serialize(first, "root")) == (bodies, nodes)
    assert nodes[bodies[2]] == (ser.KIND_SEQ, 2, 0, 1) and nodes[1] == (ser.KIND_RULEREF, 1)


def test_serialize_converted_writes_as_serialize_without_pieces() -> None:
    shared = Seq((Literal(b"a"), Literal(b"b")))
    rules = [
        Rule("root", Seq((shared, RuleRef("r"), Repeat(CharClass(((48, 57),)), 2, 4)))),
        Rule("r", Choice((shared, Literal(b"c")))),
    ]
    assert ser.serialize_converted(rules, "root") == serialize(rules, "root", use_pieces=False)


def test_serialize_converted_stops_where_normalization_would_change_a_rule() -> None:
    # a counted repeat that copies a sequence, as the item or inside a rule body
    assert (
        ser.serialize_converted([Rule("root", Repeat(Seq((Literal(b"a"), Literal(b"b"))), 0, 2))], "root")
        is None
    )
    inner = Seq((Literal(b"x"), Repeat(Choice((Literal(b"a"), Literal(b"bc"))), 3, 3)))
    assert ser.serialize_converted([Rule("root", RuleRef("r")), Rule("r", inner)], "root") is None
    # copies of one edge, or a repeat that copies nothing, need no rule
    single = [
        Rule("root", Seq((Repeat(RuleRef("r"), 2, 5), Repeat(Seq((Literal(b"a"), Literal(b"b"))), 0, 1)))),
        Rule("r", Literal(b"z")),
    ]
    assert ser.serialize_converted(single, "root") == serialize(single, "root", use_pieces=False)


def test_serialize_converted_refuses_a_name_given_twice() -> None:
    assert ser.serialize_converted([Rule("root", Literal(b"a")), Rule("root", Literal(b"b"))], "root") is None

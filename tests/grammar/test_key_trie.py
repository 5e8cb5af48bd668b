"""``ir.KeyTrie``: an object's other keys as one node. Its ``items`` are the trie that
``json_schema.key_trie._key_not_in`` builds as IR; the serializer writes one KEYTRIE node of the
names, whose automaton the C core builds with the same language; the stages that walk a converted grammar never make its items; and what
walks IR by other means (printing, renaming, references) sees the same trie."""

from __future__ import annotations

import json
import random
from typing import List, Tuple

import pytest

from agentgrammar import Grammar
from agentgrammar.errors import GrammarError
from agentgrammar.grammar.ir import (
    CharClass,
    Choice,
    KeyTrie,
    Literal,
    Repeat,
    Rule,
    RuleRef,
    Seq,
    flatten_embeds,
    referenced_rules,
    rename,
)
from agentgrammar.grammar.json_schema import key_trie, lexical

TAIL = Seq((Repeat(RuleRef("char"), 0, None), Literal(b'"')))
RAW = lexical._RAW_RANGES
# A small string language: any raw character, or the escapes \n and \" (the escape that
# spells no printable ASCII is \n alone).
HELPERS = [
    Rule("char", Choice((CharClass(RAW), Seq((Literal(b"\\"), CharClass(((0x22, 0x22), (0x6E, 0x6E)))))))),
    Rule("esc", Literal(b"\\n")),
]


def trie(names: Tuple[str, ...]) -> KeyTrie:
    return KeyTrie(names, TAIL, RuleRef("esc"), RuleRef("char"), RAW)


def name_sets(seed: int, count: int) -> List[Tuple[str, ...]]:
    """Sets of names over a few letters: shared prefixes, names that are prefixes of others."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = (
            "".join(rng.choice("abx") for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 5))
        )
        out.append(tuple(dict.fromkeys(words)))
    return out


def keys(rng: random.Random, n: int) -> List[str]:
    """Quoted keys near the names: their letters, other characters, escapes, quotes."""
    pieces = ["a", "b", "x", "ab", "z", "~", "é", "\\n", '\\"']
    return ['"' + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) + '"' for _ in range(n)]


@pytest.mark.parametrize("names", name_sets(0, 40))
def test_its_items_are_the_trie_key_not_in_builds(names: Tuple[str, ...]) -> None:
    built = key_trie._key_not_in(names, TAIL, RuleRef("esc"), RuleRef("char"))
    assert Seq((Literal(b'"'), Choice(trie(names).items))) == built


@pytest.mark.parametrize("seed", range(4))
def test_the_written_nodes_accept_what_the_trie_accepts(seed: int) -> None:
    # Three tries in one grammar, sharing their tail, escape and any-character nodes:
    # the C core builds each from its own names and enters the shared tail from every prefix.
    sets = name_sets(100 + seed, 3)
    tries = [trie(names) for names in sets]
    fast = Grammar(
        [
            Rule(
                "root",
                Choice(tuple(Seq((Literal(b"%d" % k), Literal(b'"'), t)) for k, t in enumerate(tries))),
            ),
            *HELPERS,
        ],
        _converted=True,
    )
    fast.to_bytes()
    assert not any("items" in vars(t) for t in tries)  # written from the names alone
    plain = Grammar.from_rules(
        [
            Rule(
                "root",
                Choice(
                    tuple(
                        Seq((Literal(b"%d" % k), Literal(b'"'), Choice(trie(n).items)))
                        for k, n in enumerate(sets)
                    )
                ),
            ),
            *HELPERS,
        ]
    )
    rng = random.Random(seed)
    for key in keys(rng, 300):
        k = rng.randrange(3)
        text = f"{k}{key}"
        assert fast.accepts(text) == plain.accepts(text), (sets[k], key)
        value = key[1:-1]
        if '"' not in value[:-1] and "\\" not in value:  # a raw key: it is other exactly when it is no name
            assert fast.accepts(text) == (value not in sets[k]), (sets[k], key)


def test_a_json_schemas_other_keys_are_one_node_the_stages_never_open() -> None:
    schema = {"type": "object", "properties": {"length": {"type": "number"}, "len": {"type": "string"}}}
    g = Grammar.from_json_schema(schema)
    body = next(r.body for r in g.rules if r.name.endswith("other_key"))
    node = body.items[1]
    assert type(node) is KeyTrie and node.names == ("length", "len")
    g.to_bytes()
    assert "items" not in vars(node)
    assert g.accepts('{"lent": 1}') and g.accepts('{"le": [1]}') and g.accepts('{"length": 2}')
    assert not g.accepts('{"len": 1}') and not g.accepts('{"length": "x"}')
    assert '"l" ("\\"" |' in str(g)  # printed as the trie


def test_names_that_need_escapes_keep_the_plain_ir_trie() -> None:
    g = Grammar.from_json_schema(
        {"type": "object", "properties": {'a"b': {"type": "integer"}, "ü": {"type": "null"}}}
    )
    body = next(r.body for r in g.rules if r.name.endswith("other_key"))
    assert not any(type(x) is KeyTrie for x in body.items)
    assert g.accepts('{"a\\"b": 1}') and not g.accepts('{"a\\"b": "x"}') and g.accepts('{"ab": "x"}')


def test_references_renaming_and_embedding_reach_its_parts() -> None:
    t = trie(("id",))
    assert sorted(referenced_rules(Seq((Literal(b'"'), t)))) == ["char", "esc"]
    renamed = rename(t, {"char": "c2", "esc": "e2"})
    assert type(renamed) is KeyTrie and renamed.names == t.names
    assert sorted(referenced_rules(renamed)) == ["c2", "e2"]
    inner = Grammar([Rule("root", Seq((Literal(b'"'), t))), *HELPERS], _converted=True)
    from agentgrammar.grammar.ir import Embed

    flat = flatten_embeds([Rule("root", Seq((Literal(b"k="), Embed(inner)))), Rule("char", Literal(b"!"))])
    outer = Grammar.from_rules(flat)  # the embedded "char" is renamed apart from the outer one
    assert outer.accepts('k="ix"') and outer.accepts('k=""') and not outer.accepts('k="id"')


def test_a_name_longer_than_the_recursion_limit_converts_and_compiles() -> None:
    long = "a" * 3000  # the trie is built and written without recursion
    g = Grammar.from_json_schema({"type": "object", "properties": {long: {"type": "integer"}}})
    assert g.accepts(json.dumps({long: 1})) and not g.accepts(json.dumps({long: "x"}))
    assert g.accepts(json.dumps({long[:-1]: "x"})) and g.accepts(json.dumps({long + "a": "x"}))
    node = next(r.body for r in g.rules if r.name.endswith("other_key")).items[1]
    assert len(node.subtries()) == 3001 and node.subtries()[-1]["a"] is not None
    with pytest.raises(GrammarError, match="root_other_key' is nested too deeply to print"):
        str(g)  # printing recurses: a clear error, not a RecursionError


SUFFIXES = ("id", "user_id", "group_id", "name", "nickname", "surname", "ab", "xab", "b")


@pytest.mark.parametrize("seed", [*range(12), -1])
def test_each_prefix_allows_the_bytes_the_plain_trie_allows(seed: int) -> None:
    """The C core builds a trie node's state from the node's own edges beside its way out's,
    swept once for all the nodes, and gives prefixes with the same rest of the trie one state
    without minimizing them: byte by byte along keys near the names, the allowed next bytes
    are those of the same trie written as plain IR (minimized in full), and the states are as
    many. Seed -1: names that share suffixes."""
    from agentgrammar import Compiler, Matcher, Vocabulary
    from agentgrammar.engine._native import lib

    names = SUFFIXES if seed < 0 else name_sets(200 + seed, 1)[0]
    fast = Grammar([Rule("root", Seq((Literal(b'"'), trie(names)))), *HELPERS], _converted=True)
    plain = Grammar.from_rules([Rule("root", Seq((Literal(b'"'), Choice(trie(names).items)))), *HELPERS])
    compiler = Compiler(Vocabulary([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256]))
    compiled = [compiler.compile(g) for g in (fast, plain)]
    states = [lib.ag_grammar_num_states(c._grammar_handle) for c in compiled]
    assert states[0] == states[1], (names, states)
    rng = random.Random(seed)
    for key in keys(rng, 60) + ['"' + n + '"' for n in names] + ['"' + n + 'a"' for n in names]:
        matchers = [Matcher(c) for c in compiled]
        for byte in key.encode():
            allowed = [set(m.allowed_token_ids()) for m in matchers]
            assert allowed[0] == allowed[1], (names, key)
            if not all(m.accept_token(byte) for m in matchers):
                break

"""IR pieces (``agentgrammar.grammar.pieces``): a known tool's call converts to the same
expression in every request, each stage's work on it is done once and reused, the caches are
bounded and emptied by ``Compiler.clear_cache``, and grammars give the same masks with and
without them."""

from __future__ import annotations

import json
import random
from typing import Any, Dict, List

import numpy as np
import pytest

from agentgrammar import (
    AgentOutput,
    Compiler,
    Grammar,
    Matcher,
    Tool,
    ToolCall,
    Vocabulary,
    allocate_token_bitmask,
)
from agentgrammar.formats import get
from agentgrammar.grammar import memo, pieces
from agentgrammar.grammar import serialize as serialize_module
from agentgrammar.grammar.ir import Choice, Embed, Literal, Rule, RuleRef, Seq
from agentgrammar.grammar.serialize import serialize

SCHEMA: Dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"],
}
TOOLS = [Tool(f"tool_{i}", "", SCHEMA if i % 2 else {"type": "object", "properties": {}}) for i in range(12)]
MARKERS = ["<think>", "</think>", "<tool_call>", "</tool_call>", '{"name": "', '", "arguments": ', "tool_"]
TOKENS = [chr(c) for c in range(32, 127)] + ["\n", "\n\n", *MARKERS, "</s>"]


def vocab() -> Vocabulary:
    return Vocabulary(TOKENS, stop_token_ids=[len(TOKENS) - 1])


def call_items(g: Grammar) -> List[Any]:
    """The alternatives of the request's call rule (one per tool)."""
    rule = next(r for r in g.rules if isinstance(r.body, Choice))
    return list(rule.body.items)


def tokenize(text: str) -> List[int]:
    """Greedy longest match over ``TOKENS``."""
    out, pos = [], 0
    while pos < len(text):
        best = max((t for t in TOKENS[:-1] if text.startswith(t, pos)), key=len)
        out.append(TOKENS.index(best))
        pos += len(best)
    return out


def masks_along(g: Grammar, ids: List[int]) -> List[np.ndarray]:
    matcher = Matcher(Compiler(vocab(), reuse_grammars=False).compile(g))
    out = []
    for token in [*ids, len(TOKENS) - 1]:
        mask = allocate_token_bitmask(1, len(TOKENS), backend="numpy")
        matcher.fill_next_token_bitmask(mask)
        out.append(mask.copy())
        assert matcher.accept_token(token)
    assert matcher.is_terminated()
    return out


def test_a_known_tool_converts_to_the_same_piece() -> None:
    fmt = get("qwen3")
    first = call_items(fmt.grammar(TOOLS[:6]))
    second = call_items(fmt.grammar(TOOLS[3:9]))
    assert all(pieces.info(x) is not None for x in first + second)
    assert first[3:6] == second[:3] and all(a is b for a, b in zip(first[3:6], second[:3]))


def test_each_stage_works_on_a_piece_once() -> None:
    fmt = get("qwen3")
    fmt.grammar(TOOLS).to_bytes()
    item = call_items(fmt.grammar(TOOLS))[0]
    found = pieces.info(item)
    assert found is not None and found.refs is not None and found.unchanged is True
    # A call is written as its word of the request's SWITCH node (``pieces.group``).
    assert found.embeds is not None and found.word and found.chunk is None
    word, refs = found.word, found.refs
    g = fmt.grammar(list(reversed(TOOLS)))
    g.to_bytes()
    assert found.word is word and found.refs is refs  # looked up, not derived again
    assert call_items(g)[0] is item  # the calls in the order of their begins, as before


@pytest.mark.parametrize("seed", range(3))
def test_pieces_change_no_output(seed: int) -> None:
    """Rules, parts and masks of a request are those of the same rules without pieces."""
    rng = random.Random(seed)
    tools = rng.sample(TOOLS, 6)
    fmt = get("qwen3")
    fmt.grammar(tools).to_bytes()  # every piece derived once
    g = fmt.grammar(tools)
    memo.clear_memos()  # the same rule objects, no longer pieces
    plain = Grammar.from_rules(g.rules, g.root)
    assert not any(pieces.info(x) for x in call_items(plain))
    assert plain.normalized_rules == g.normalized_rules and plain.parts == g.parts
    used = [t for t in tools if t.parameters is SCHEMA][:2] or tools[:1]
    calls = [ToolCall(t.name, {"city": "Oslo"} if t.parameters is SCHEMA else {}) for t in used]
    text = fmt.render(AgentOutput(think="ok", text="Sure.", tool_calls=calls), tools=tools)
    assert g.accepts(text) and plain.accepts(text)
    ids = tokenize(text)
    for a, b in zip(masks_along(g, ids), masks_along(plain, ids)):
        assert np.array_equal(a, b)


def test_a_chunk_is_the_piece_serialized() -> None:
    """A piece's chunk, copied into a grammar, writes the same nodes as the piece itself."""
    part = Grammar.from_regex("[0-9]+")
    item = Seq((Literal(b"n="), RuleRef("x"), Embed(part), Literal(b";")))
    rules = [Rule("root", Choice((item, Literal(b"-")))), Rule("x", Literal(b"x"))]
    expect = serialize(rules, "root", lambda g: 7)
    pieces.mark(item)
    copied = serialize(rules, "root", lambda g: 7)
    assert copied == expect and pieces.info(item).chunk is not None
    assert serialize(rules, "root", lambda g: 7) == expect


def test_memos_are_bounded() -> None:
    m: memo.IdentityMemo[int] = memo.IdentityMemo("test bound", limit=8)
    keep = [[i] for i in range(50)]
    for i, obj in enumerate(keep):
        m.put(obj, i)
        assert len(m) <= 8
    assert m.get(keep[-1]) == 49 and m.get(keep[0]) is None
    with pytest.raises(ValueError):
        memo.IdentityMemo("bad", limit=0)


def test_clear_cache_empties_the_memos() -> None:
    compiler = Compiler(vocab())
    compiler.compile(get("qwen3").grammar(TOOLS))
    entries = memo.memo_entries()
    assert entries["IR pieces"] >= len(TOOLS) and entries["tag IR"] >= len(TOOLS)
    assert entries["tool pieces"] >= len(TOOLS)
    compiler.clear_cache()
    assert not any(memo.memo_entries().values())


def test_a_converters_helper_rules_keep_their_serialized_nodes_across_clear_cache() -> None:
    """The JSON Schema converter's helper rules (``json_string``, ``ws``, ...) depend on no
    schema: after the memos are emptied, the next schema gets them back with what the stages
    derived from them, not to be serialized again, and writes the same bytes."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    Grammar.from_json_schema(schema)  # the helpers made (a first conversion orders them otherwise)
    first = Grammar.from_json_schema(schema)
    data = first.to_bytes()
    helper = next(r.body for r in first.rules if r.name == "json_string")
    chunk = pieces.info(helper).chunk
    assert chunk is not None
    Compiler(vocab()).clear_cache()
    assert pieces.info(helper) is None
    again = Grammar.from_json_schema(
        {"type": "object", "properties": {"b": {"type": "array", "items": {"type": "string"}}}}
    )
    assert next(r.body for r in again.rules if r.name == "json_string") is helper
    assert pieces.info(helper).chunk is chunk
    assert Grammar.from_json_schema(schema).to_bytes() == data


@pytest.mark.parametrize("seed", range(3))
def test_shared_tails_change_no_mask(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Calls whose shared tail (``", "arguments": ``) moved into a part per call accept the
    same texts with the same masks as the calls written out in the request."""
    import agentgrammar.grammar.structural_tag.tags as stc

    rng = random.Random(seed)
    tools = rng.sample(TOOLS, 5)
    fmt = get("qwen3")
    split = fmt.grammar(tools)
    tail = Literal(b'", "arguments": ')
    think, *tail_parts = split.parts  # the think block's, then one per schema
    assert think.accepts("<think>ok</think>") and len(tail_parts) == len(
        {json.dumps(t.parameters) for t in tools}
    )
    for p in tail_parts:  # each: the arguments' rules, and a root: tail, arguments, end
        assert not p.parts and p.rules[0].name == p.root and p.rules[0].body.items[0] == tail
    monkeypatch.setattr(stc, "_share_tails", lambda alts, shapes=None: (alts, None))
    whole = fmt.grammar(tools)
    assert whole.parts[0] is think
    assert [q.rules for q in whole.parts[1:]] == [p.rules[1:] for p in tail_parts]  # the arguments
    used = [t for t in tools if t.parameters is SCHEMA][:2] or tools[:1]
    calls = [ToolCall(t.name, {"city": "Oslo"} if t.parameters is SCHEMA else {}) for t in used]
    ids = tokenize(fmt.render(AgentOutput(think="ok", tool_calls=calls), tools=tools))
    for a, b in zip(masks_along(split, ids), masks_along(whole, ids)):
        assert np.array_equal(a, b)


def test_tail_parts_are_reused() -> None:
    fmt = get("qwen3")
    first = fmt.grammar(TOOLS[:6]).parts
    second = fmt.grammar(TOOLS[2:8]).parts
    both = fmt.grammar(TOOLS[2:6]).parts  # tools in both requests: the same tail parts
    assert both and all(any(p is q for q in first) and any(p is q for q in second) for p in both)


def node_kinds(data: bytes) -> List[int]:
    """The kind of each node of a serialized grammar (``serialize``'s layout)."""
    words = np.frombuffer(data, dtype=np.int32)
    n_rules, n_nodes = int(words[2]), int(words[4])
    offsets = words[6 + n_rules : 6 + n_rules + n_nodes]
    body = words[6 + n_rules + n_nodes :]
    return [int(body[o]) for o in offsets]


def test_a_requests_calls_are_one_switch_node() -> None:
    """The choice of calls is a group: written as one SWITCH node, a word per tool, and its
    stages' information gathered from the calls' (no walk over them)."""
    fmt = get("qwen3")
    fmt.grammar(TOOLS).to_bytes()  # every call's information worked out once
    g = fmt.grammar(TOOLS)
    body = next(r.body for r in g.rules if isinstance(r.body, Choice))
    group = pieces.info(body)
    assert group is not None and group.group is not None and len(group.group) == len(TOOLS)
    assert group.refs == () and group.unchanged is True
    assert len(group.embeds) == len({json.dumps(t.parameters) for t in TOOLS})  # a tail part per schema
    kinds = node_kinds(g.to_bytes())
    assert kinds.count(serialize_module.KIND_SWITCH) == 1
    assert kinds.count(serialize_module.KIND_SEQ) < len(TOOLS)  # no node per call
    calls = [ToolCall(t.name, {"city": "Oslo"} if t.parameters is SCHEMA else {}) for t in TOOLS]
    for call in calls:
        assert g.accepts(fmt.render(AgentOutput(think="ok", tool_calls=[call]), tools=TOOLS))
    assert not g.accepts(fmt.render(AgentOutput(think="ok", tool_calls=[ToolCall("tool_99", {})])))


def test_a_group_of_other_pieces_is_written_item_by_item() -> None:
    """Items that are not a literal then an embedded grammar: the same nodes as unmarked."""
    items = tuple(pieces.mark(Seq((Literal(c.encode()), RuleRef("x")))) for c in "abc")
    rules = [Rule("root", Choice(items)), Rule("x", Literal(b"!"))]
    part = Grammar.from_regex("[0-9]")
    expect = serialize(rules, "root", lambda g: 7)
    pieces.group(rules[0].body)
    assert pieces.info(rules[0].body).group is not None
    assert serialize(rules, "root", lambda g: 7) == expect
    embeds = tuple(pieces.mark(Seq((Literal(c.encode()), Embed(part)))) for c in "ab")
    switch = [Rule("root", pieces.group(Choice(embeds)))]
    assert node_kinds(serialize(switch, "root", lambda g: 7)) == [serialize_module.KIND_SWITCH]


def test_only_the_latest_groups_stay_pieces() -> None:
    items = tuple(pieces.mark(Seq((Literal(c.encode()), Literal(b"!")))) for c in "ab")
    groups = [pieces.group(Choice(items)) for _ in range(pieces.GROUPS_KEPT + 1)]
    assert pieces.info(groups[0]) is None
    assert all(pieces.info(g) is not None for g in groups[1:])
    assert all(pieces.info(x) is not None for x in items)  # the items stay pieces


def test_cleared_groups_are_not_kept_alive() -> None:
    """After ``clear_memos`` nothing keeps a group (and the pieces and grammars it reaches)."""
    import gc
    import weakref

    items = tuple(pieces.mark(Seq((Literal(c.encode()), Literal(b"!")))) for c in "ab")
    ref = weakref.ref(pieces.group(Choice(items)))
    gc.collect()
    assert ref() is not None  # a piece while it is among the latest groups
    memo.clear_memos()
    gc.collect()
    assert ref() is None

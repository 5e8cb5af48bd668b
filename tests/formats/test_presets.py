"""Every preset format, for random tool subsets: rendered outputs are accepted (as text, and token
by token with the Llama-3.2 vocabulary), wrong outputs are rejected, ``parse(render(x)) == x``,
and random walks under the grammar never produce text that ``parse`` rejects."""

from __future__ import annotations

import dataclasses
import functools
import random
import warnings
from typing import Any, Dict, List, Tuple

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agentgrammar import Compiler, Grammar, Matcher, Tool, ToolCall, ToolError, ToolRegistry, Vocabulary
from agentgrammar.formats import AgentFormat, AgentOutput, FormatParseError, get, names
from agentgrammar.formats.styled import COHERE_END, GEMMA_QUOTE, KIMI_END, M3_NS

FAST = settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))

# --------------------------------------------------------------------------- tools

REGISTRY = ToolRegistry()


@REGISTRY.tool
def now() -> str:
    """The current time."""
    return "noon"


REGISTRY.add(
    Tool(
        "get_weather",
        "The weather in a city.",
        {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "units": {"enum": ["celsius", "fahrenheit"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 14},
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    )
)
REGISTRY.add(
    Tool(
        "search",
        "Search the web.",
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_results": {"type": "integer"},
                "filters": {
                    "type": "object",
                    "properties": {"site": {"type": "string"}, "recent": {"type": "boolean"}},
                    "additionalProperties": False,
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    )
)
REGISTRY.add(
    Tool(
        "add_numbers",
        "Add two numbers.",
        {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
            "additionalProperties": False,
        },
    )
)
REGISTRY.add(
    Tool(
        "send_email",
        "Send an email.",
        {
            "type": "object",
            "properties": {
                "to": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                "subject": {"type": "string"},
                "urgent": {"type": "boolean"},
                "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
            "required": ["to", "subject"],
            "additionalProperties": False,
        },
    )
)
TOOL_NAMES = REGISTRY.names

# --------------------------------------------------------------------------- strategies

# Free text: no marker can appear (every preset's markers start with '<' or '[').
_TEXT_ALPHABET = st.characters(blacklist_categories=("Cs",), blacklist_characters="<[｜")
_WS = " \t\r\n"


def _texts(min_size: int = 0) -> st.SearchStrategy[str]:
    return st.text(_TEXT_ALPHABET, min_size=min_size, max_size=24).map(lambda s: s.strip(_WS))


_json_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_numbers = st.one_of(st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False, width=64))

_ARGS: Dict[str, st.SearchStrategy[Dict[str, Any]]] = {
    "now": st.just({}),
    "get_weather": st.fixed_dictionaries(
        {"city": _json_text},
        optional={"units": st.sampled_from(["celsius", "fahrenheit"]), "days": st.integers(1, 14)},
    ),
    "search": st.fixed_dictionaries(
        {"query": _json_text},
        optional={
            "max_results": st.integers(-5, 10**9),
            "filters": st.fixed_dictionaries({}, optional={"site": _json_text, "recent": st.booleans()}),
        },
    ),
    "add_numbers": st.fixed_dictionaries({"a": _numbers, "b": _numbers}),
    "send_email": st.fixed_dictionaries(
        {"to": st.lists(_json_text, min_size=1, max_size=3), "subject": _json_text},
        optional={"urgent": st.booleans(), "note": st.one_of(st.none(), _json_text)},
    ),
}


def _in_schema_order(name: str, args: Dict[str, Any]) -> Dict[str, Any]:
    def order(value: Any, schema: Any) -> Any:
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(value, dict) and props:
            return {k: order(value[k], props[k]) for k in props if k in value}
        return value

    return order(args, REGISTRY[name].parameters)


@st.composite
def requests(draw: Any, fmt: AgentFormat) -> Tuple[List[str], Dict[str, Any], AgentOutput]:
    """Grammar options and a random output that they allow."""
    subset = draw(st.lists(st.sampled_from(TOOL_NAMES), min_size=1, max_size=4, unique=True))
    choice = draw(st.sampled_from(["auto", "required", "named"]))
    parallel = draw(st.booleans()) and fmt.parallel_calls
    reasoning = draw(st.sampled_from(["enabled", "auto", "disabled"]))
    tool_choice: Any = choice
    allowed = subset
    if choice == "named":
        name = draw(st.sampled_from(subset))
        tool_choice, allowed = {"type": "function", "function": {"name": name}}, [name]
    low = 0 if choice == "auto" else 1
    # a named tool is exactly one call, then the turn ends
    n_calls = 1 if choice == "named" else draw(st.integers(low, 2 if parallel else 1))
    with_ids = (fmt.id_key is not None or fmt.id_begin is not None) and draw(st.booleans())
    calls = []
    for _ in range(n_calls):
        name = draw(st.sampled_from(allowed))
        call_id = fmt.new_call_id(draw(st.integers(0, 10**6))) if with_ids else None
        # the head always holds the id (Kimi-K2's functions.NAME:IDX, Cohere's id="IDX")
        if fmt.call_id_form is not None or fmt.call_index is not None:
            call_id = fmt.new_call_id(draw(st.integers(0, 999_999)), name)
        calls.append(ToolCall(name, _in_schema_order(name, draw(_ARGS[name])), call_id))
    think = None
    if fmt.has_think and (reasoning == "enabled" or (reasoning == "auto" and draw(st.booleans()))):
        think = draw(_texts())
    response = text = None
    if fmt.has_response:
        if not calls or (choice != "named" and fmt.response_after_calls and draw(st.booleans())):
            response = draw(_texts())
        if fmt.response_first and not response:  # the block is always written: empty is none
            response = None
    elif choice == "auto" and not (fmt.calls_or_text and calls):
        # with a required call the output starts with it; a calls_or_text turn is one or the
        # other, and its text cannot start like a call
        text = draw(_texts(min_size=1)) or None
        if text and fmt.calls_or_text:
            text = text.lstrip(_WS + "{<") or None
    options = {"tool_choice": tool_choice, "parallel_tool_calls": parallel, "reasoning": reasoning}
    return subset, options, AgentOutput(think=think, tool_calls=calls, response=response, text=text)


# --------------------------------------------------------------------------- grammars and vocabulary


def _key(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(_key(v) for v in value)
    return value


_GRAMMARS: Dict[Any, Grammar] = {}


def grammar_for(fmt: AgentFormat, subset: List[str], **options: Any) -> Grammar:
    key = (fmt.name, tuple(subset), _key(options))
    found = _GRAMMARS.get(key)
    if found is None:
        found = _GRAMMARS[key] = fmt.grammar(REGISTRY.select(subset), **options)
    return found


@functools.lru_cache(maxsize=None)
def _llama() -> Tuple[Any, Vocabulary, Compiler]:
    from tests.hf_tokenizers import llama32_tokenizer

    tok = llama32_tokenizer()
    vocab = Vocabulary.from_huggingface(tok)
    return tok, vocab, Compiler(vocab)


@pytest.fixture(scope="module")
def llama() -> Tuple[Any, Vocabulary, Compiler]:
    return _llama()


@functools.lru_cache(maxsize=None)
def _marker_compiler(name: str) -> Compiler:
    """A compiler whose vocabulary lets the format's special-token markers into text."""
    tok, vocab, compiler = _llama()
    marked = vocab.with_text_tokens(get(name).markers())
    return compiler if marked is vocab else Compiler(marked)


def test_special_token_markers_are_matched_as_those_tokens() -> None:
    tok, vocab, _ = _llama()
    fmt = get("llama3")
    assert special_markers(fmt, tok, vocab) == ["<|python_tag|>"]
    tag_id = tok.convert_tokens_to_ids("<|python_tag|>")
    grammar = grammar_for(fmt, ["now"], tool_choice="required")
    plain = Matcher(Compiler(vocab).compile(grammar))
    assert tag_id not in plain.allowed_token_ids()  # special tokens stay out of text
    marked = Matcher(compiled_for(_marker_compiler("llama3"), grammar))
    assert tag_id in marked.allowed_token_ids()
    assert marked.accept_token(tag_id)
    other_special = tok.convert_tokens_to_ids("<|start_header_id|>")
    assert other_special not in marked.allowed_token_ids()


def special_markers(fmt: AgentFormat, tok: Any, vocab: Vocabulary) -> List[str]:
    """The format's markers that the tokenizer turns into special tokens."""
    special = set(vocab.special_token_ids)
    return [m for m in fmt.markers() if special & set(tok.encode(m, add_special_tokens=False))]


_COMPILED: Dict[Any, Any] = {}


def compiled_for(compiler: Compiler, grammar: Grammar) -> Any:
    found = _COMPILED.get(id(grammar))
    if found is None:
        found = _COMPILED[id(grammar)] = (grammar, compiler.compile(grammar))
    return found[1]


# --------------------------------------------------------------------------- tests


def test_names_and_get() -> None:
    assert {"hermes", "qwen3", "llama3", "deepseek_r1", "mistral", "harmony", "tags"} <= set(names())
    assert get("hermes") is get("hermes")
    with pytest.raises(ValueError, match="unknown format 'nope'"):
        get("nope")


@pytest.mark.parametrize("name", names())
@FAST
@given(data=st.data())
def test_render_is_accepted_and_parses_back(name: str, data: Any) -> None:
    fmt = get(name)
    subset, options, output = data.draw(requests(fmt))
    text = fmt.render(output, tools=REGISTRY)
    assert grammar_for(fmt, subset, **options).accepts(text), text
    assert fmt.parse(text, tools=REGISTRY.select(subset)) == output
    # xml values (and MiniMax-M3's) are typed by the tools' schemas
    if fmt.call_layout != "xml" and fmt.argument_style != "minimax_m3_xml":
        assert fmt.parse(text) == output


@pytest.mark.parametrize("name", names())
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_render_is_accepted_token_by_token(name: str, data: Any) -> None:
    tok, vocab, _ = _llama()
    fmt = get(name)
    # llama3's <|python_tag|> is a special token here: with the format's markers let into
    # text it is matched as that single token.
    compiler = _marker_compiler(fmt.name)
    subset, options, output = data.draw(requests(fmt))
    text = fmt.render(output, tools=REGISTRY)
    matcher = Matcher(compiled_for(compiler, grammar_for(fmt, subset, **options)))
    tokens = tok.encode(text, add_special_tokens=False)
    # The tokenizer reads a special token's text inside a value (a JSON string "<|eom_id|>")
    # as that control token, which no grammar takes as text; a model writes such text with
    # text tokens. Only the format's own markers may come out as special tokens.
    special = set(tok.all_special_ids)
    assume(all(t not in special or tok.decode([t]) in fmt.markers() for t in tokens))
    for i, token in enumerate(tokens):
        assert matcher.accept_token(token), (text, i, tok.decode([token]))
    assert matcher.is_completed()
    assert matcher.accept_token(vocab.stop_token_ids[0])
    assert matcher.is_terminated()


def _reject_cases(fmt: AgentFormat) -> List[Tuple[str, List[str], Dict[str, Any], AgentOutput]]:
    """(label, tools, grammar options, an output the grammar must reject)."""
    think = "ok" if fmt.has_think else None
    response = "Done." if fmt.has_response else None
    text = None if fmt.has_response else "Let me see."
    good = ToolCall("get_weather", {"city": "Oslo", "days": 3})
    subset = ["get_weather", "search", "now"]

    def out(*calls: ToolCall, **kw: Any) -> AgentOutput:
        fields: Dict[str, Any] = {"think": think, "tool_calls": list(calls)}
        fields.update(kw)
        return AgentOutput(**fields)

    cases = [
        ("wrong type", subset, {}, out(ToolCall("get_weather", {"city": "Oslo", "days": "3"}))),
        ("out of range", subset, {}, out(ToolCall("get_weather", {"city": "Oslo", "days": 15}))),
        ("unselected tool", subset, {}, out(ToolCall("add_numbers", {"a": 1, "b": 2}))),
        ("missing required", subset, {}, out(ToolCall("get_weather", {"days": 3}))),
        ("extra argument", subset, {}, out(ToolCall("get_weather", {"city": "Oslo", "x": 1}))),
        ("required, no call", subset, {"tool_choice": "required"}, out(response=response, text=text)),
        ("named, other tool", subset, {"tool_choice": "search"}, out(good)),
        ("none, a call", subset, {"tool_choice": "none"}, out(good)),
        ("sequential, two calls", subset, {"parallel_tool_calls": False}, out(good, good)),
        ("allowed subset", subset, {"tool_choice": _allowed(["search"])}, out(good)),
    ]
    # xml writes strings raw: 7 is the string "7" there (so do MiniMax-M3, and Kimi-K3 whose
    # type attribute comes from the schema)
    if fmt.call_layout != "xml" and fmt.argument_style not in ("kimi_k3_xml", "minimax_m3_xml"):
        cases.append(("wrong type", subset, {}, out(ToolCall("get_weather", {"city": 7}))))
    if not fmt.parallel_calls:
        cases.append(("one call per turn", subset, {}, out(good, good)))
    if fmt.has_think:
        cases.append(("reasoning enabled, no think", subset, {}, out(good, think=None)))
        cases.append(("reasoning disabled, think", subset, {"reasoning": "disabled"}, out(good)))
    if fmt.has_response and not fmt.response_first:  # (response_first: an empty one is written)
        cases.append(("neither call nor response", subset, {}, AgentOutput(think=think)))
    return cases


def _allowed(names_: List[str], mode: str = "auto") -> Dict[str, Any]:
    return {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": mode,
            "tools": [{"type": "function", "function": {"name": n}} for n in names_],
        },
    }


@pytest.mark.parametrize("name", names())
def test_wrong_outputs_are_rejected(name: str) -> None:
    fmt = get(name)
    writer = dataclasses.replace(fmt, parallel_calls=True)  # writes two calls even for harmony
    for label, subset, options, output in _reject_cases(fmt):
        text = writer.render(output, tools=REGISTRY)
        assert not grammar_for(fmt, subset, **options).accepts(text), (label, text)
    # and the same outputs, corrected, are accepted
    good = AgentOutput(
        think="ok" if fmt.has_think else None,
        tool_calls=[ToolCall("get_weather", {"city": "Oslo", "days": 3})],
    )
    for options in (
        {},
        {"tool_choice": "required"},
        {"tool_choice": "get_weather"},
        {"parallel_tool_calls": False},
    ):
        assert grammar_for(fmt, ["get_weather", "search", "now"], **options).accepts(fmt.render(good))


@pytest.mark.parametrize("name", names())
def test_parse_validates_with_tools(name: str) -> None:
    fmt = get(name)
    bad_type = fmt.render(AgentOutput(tool_calls=[ToolCall("get_weather", {"city": "Oslo", "days": "x"})]))
    with pytest.raises(ToolError, match="invalid arguments for tool 'get_weather'"):
        fmt.parse(bad_type, tools=REGISTRY)
    assert fmt.parse(bad_type).tool_calls[0].arguments["days"] == "x"  # no tools: no validation
    unknown = fmt.render(AgentOutput(tool_calls=[ToolCall("launch", {})]))
    with pytest.raises(ToolError, match="unknown tool 'launch'"):
        fmt.parse(unknown, tools=REGISTRY)


# pydantic's HttpUrl: a URI of 1 to 2,083 characters, whose automaton cannot be combined with
# the length bounds (char_dfa.PRODUCT_LIMIT)
URL_TOOL = Tool(
    "fetch",
    "Fetch a page.",
    {
        "type": "object",
        "properties": {"url": {"type": "string", "format": "uri", "minLength": 1, "maxLength": 2083}},
        "required": ["url"],
    },
)


@pytest.mark.parametrize("name", names())
def test_a_uri_under_a_large_max_length_keeps_its_format(name: str) -> None:
    """Every layout builds the tool (the bound it cannot combine with is dropped, with a warning
    where the layout enforced it) and holds the value to the URI format; the bound is enforced
    where the call is validated."""
    fmt = get(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grammar = fmt.grammar([URL_TOOL])

    def text(url: str) -> str:
        think = "ok" if fmt.has_think else None
        return fmt.render(AgentOutput(think=think, tool_calls=[ToolCall("fetch", {"url": url})]))

    assert grammar.accepts(text("https://example.com/a?b=c#d"))
    if fmt.argument_style != "minimax_m3_xml":  # whose raw strings are any text, as xgrammar's
        assert not grammar.accepts(text("not a uri"))
    too_long = "https://example.com/" + "a" * 2100
    assert grammar.accepts(text(too_long))  # over-approximated: the bound goes to validation
    with pytest.raises(ToolError, match="invalid arguments for tool 'fetch'"):
        fmt.parse(text(too_long), tools=[URL_TOOL])


@pytest.mark.parametrize("name", names())
def test_parse_rejects_cut_off_calls(name: str) -> None:
    fmt = get(name)
    text = fmt.render(AgentOutput(tool_calls=[ToolCall("get_weather", {"city": "Oslo", "days": 3})]))
    start = text.index("Oslo")
    for cut in range(start, start + 6):  # inside the arguments
        with pytest.raises(FormatParseError, match="at offset"):
            fmt.parse(text[:cut])
    if fmt.call_end or fmt.calls_end:
        with pytest.raises(FormatParseError):
            fmt.parse(text[:-1])


@pytest.mark.parametrize("name", names())
def test_structural_tag_works_in_xgrammar(name: str) -> None:
    """The request's structural tag is xgrammar's format: xgrammar compiles it and accepts the
    same rendered outputs."""
    xgr = pytest.importorskip("xgrammar")
    from xgrammar.testing import _is_grammar_accept_string as xgr_accepts

    fmt = get(name)
    subset = ["get_weather", "send_email", "now"]
    think = "x" if fmt.has_think else None
    outputs = [
        AgentOutput(think=think, tool_calls=[ToolCall("get_weather", {"city": "Oslo", "days": 2})]),
        AgentOutput(
            think=think, tool_calls=[ToolCall("send_email", {"to": ["a@b.c"], "subject": "hi", "note": None})]
        ),
        AgentOutput(
            think=think,
            response="Hello" if fmt.has_response else None,
            text=None if fmt.has_response else "Hello",
        ),
    ]
    tag = fmt.structural_tag(REGISTRY.select(subset), reasoning="auto")
    theirs = xgr.Grammar.from_structural_tag(tag.model_dump_json())
    ours = grammar_for(fmt, subset, reasoning="auto")
    for out in outputs:
        text = fmt.render(out, tools=REGISTRY)
        assert ours.accepts(text) and xgr_accepts(theirs, text), text
        wrong = text.replace('"days": 2', '"days": "2"').replace('"days":2', '"days":"2"')
        if wrong != text:
            assert not ours.accepts(wrong) and not xgr_accepts(theirs, wrong)


# --------------------------------------------------------------------------- random walks


def _moves(fmt: AgentFormat, tok: Any, subset: List[str]) -> List[List[int]]:
    """Token sequences of the format's fixed strings and of JSON punctuation: a walk that
    sometimes tries one of them (token by token, as far as the grammar allows) closes blocks
    and strings instead of wandering in free text."""
    strings = [*fmt.markers(), fmt.think_suffix, fmt.call_separator, fmt.block_separator]
    strings += [fmt.call_tag(REGISTRY[n]).begin for n in subset]
    strings += ['"', "}", "]", '"}', '"}}', ", ", "1", "true", "\n"]
    if fmt.argument_style is not None:  # what closes a value of the styled layouts
        strings += [GEMMA_QUOTE, COHERE_END, KIMI_END, M3_NS]
    return [tok.encode(s, add_special_tokens=False) for s in dict.fromkeys(strings) if s]


def _allowed_ids(matcher: Matcher, vocab: Vocabulary) -> Any:
    mask = np.zeros((1, (vocab.vocab_size + 31) // 32), dtype=np.int32)
    matcher.fill_next_token_bitmask(mask)
    return np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[: vocab.vocab_size])


def _has(sorted_ids: Any, token: int) -> bool:
    i = int(np.searchsorted(sorted_ids, token))
    return i < len(sorted_ids) and int(sorted_ids[i]) == token


@pytest.mark.parametrize("name", names())
def test_random_walks_parse(name: str) -> None:
    tok, _, _ = _llama()
    fmt = get(name)
    compiler = _marker_compiler(name)  # llama3's <|python_tag|> as its special token
    vocab = compiler.vocabulary
    stops = set(vocab.stop_token_ids)
    rng = random.Random(f"walk-{name}")
    finished = with_calls = 0
    runs = 8
    # markers the Llama-3.2 vocabulary spells in many pieces (DeepSeek's full-width ones, the
    # DSML elements) take longer walks
    steps = 400 if sum(len(tok.encode(m, add_special_tokens=False)) for m in fmt.markers()) > 60 else 200
    for run in range(runs):
        subset = rng.sample(TOOL_NAMES, 3)
        options: Dict[str, Any] = {
            "tool_choice": ["auto", "required", subset[0]][run % 3],
            "parallel_tool_calls": run % 2 == 0,
            "reasoning": ["auto", "disabled", "enabled"][run % 3],
        }
        matcher = Matcher(compiled_for(compiler, grammar_for(fmt, subset, **options)))
        moves = _moves(fmt, tok, subset)
        out: List[int] = []
        for step in range(steps):
            allowed = _allowed_ids(matcher, vocab)
            assert len(allowed), "the grammar left no way to go on"
            ending = [t for t in stops if _has(allowed, t)]
            if ending and (len(ending) == len(allowed) or (step > 30 and rng.random() < 0.3)):
                assert matcher.accept_token(ending[0])
                break
            if rng.random() < 0.4:  # try a fixed string, as far as the grammar allows
                for token in rng.choice(moves):
                    if not matcher.accept_token(token):
                        break
                    out.append(token)
                continue
            token = int(allowed[rng.randrange(len(allowed))])
            while token in stops:
                token = int(allowed[rng.randrange(len(allowed))])
            assert matcher.accept_token(token)
            out.append(token)
        if not matcher.is_terminated():
            continue  # did not finish in time: nothing else to check
        finished += 1
        text = b"".join(vocab.token_bytes[t] for t in out).decode("utf-8", errors="replace")
        try:
            parsed = fmt.parse(text, tools=REGISTRY.select(subset))
        except (FormatParseError, ToolError) as e:  # pragma: no cover - the failure report
            pytest.fail(f"{name} {options}: parse failed on a text the grammar allows: {e}\n{text!r}")
        with_calls += bool(parsed.tool_calls)
        if options["tool_choice"] != "auto":
            assert parsed.tool_calls
        if not options["parallel_tool_calls"]:
            assert len(parsed.tool_calls) <= 1
    assert finished >= runs // 2, f"only {finished} of {runs} walks finished"
    assert with_calls >= 1

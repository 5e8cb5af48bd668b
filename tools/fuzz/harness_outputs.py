"""Fuzz harnesses for model output, which is hostile input (listed in ``harnesses``).

* ``outputs``: a hand-written turn of every preset (``fmt.render`` of random valid calls to a
  fixed set of tools), then mutated: characters deleted, inserted, replaced or duplicated, a JSON
  value swapped for a hostile one (``NaN``, ``Infinity``, ``1e999``, integers of hundreds or
  thousands of digits, lone surrogate escapes or raw surrogates, nesting hundreds or thousands
  deep, a key given twice, Python literals), the text cut short, or parsed as another preset.
  Each goes through ``fmt.parse(text, tools=...)`` (and without tools). The contract: only
  ``AgentGrammarError`` escapes, and every call returned validates against its tool's schema and
  holds only safe JSON (finite numbers, integers within ``MAX_INT_DIGITS``, Unicode strings,
  nesting within ``MAX_JSON_DEPTH``).
* ``agent_outputs``: the same texts through the agent's own path after generation
  (``Agent._parse``, ``Agent._execute`` on tools that echo, mangle, loop or raise,
  ``Agent._end_turn``), then the next turn's prompt is built (the plain layout) and encoded as
  UTF-8, as a tokenizer would. The contract: nothing escapes (not even ``AgentGrammarError``:
  the agent turns every failure into a step error or an error result) and the conversation
  stays renderable Unicode text.

Usage::

    python tools/fuzz.py outputs --seconds 180
    python tools/fuzz.py agent_outputs --seconds 180
"""

from __future__ import annotations

import json
import math
import random
import re
from typing import Any, Dict, List, Optional, Tuple

from pydantic import BaseModel, Field

#: One input: (format name used to write the text, format name used to read it, the text,
#: whether to parse with the tools).
Input = Tuple[str, str, str, bool]


class OutputInvariantError(Exception):
    """A broken contract other than an exception: an unsafe value returned, a call that does not
    validate, a conversation that cannot be encoded."""


# --------------------------------------------------------------------------- the tools

_STATE: Dict[str, Any] = {}


class _Address(BaseModel):
    street: str
    zip: str = Field(pattern=r"^[0-9]{4,5}$")


class _Order(BaseModel):
    """An order with a nested address."""

    item: str
    quantity: int = Field(ge=1, le=100)
    address: _Address
    notes: Optional[List[str]] = None


_TREE = {
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["name"],
        }
    },
}


def _registry() -> Any:
    """The tools every input may call (built once per process)."""
    found = _STATE.get("registry")
    if found is not None:
        return found
    from agentgrammar import Tool, ToolRegistry

    registry = ToolRegistry()

    @registry.tool
    def transfer(amount: float = Field(ge=0, le=1000), to: str = "alice") -> str:
        """Send money."""
        return f"sent {amount!r} to {to}"

    @registry.tool
    def echo(text: str) -> str:
        """Say it back (a lone surrogate in the text would come back too)."""
        return text

    @registry.tool
    def count(n: int, items: List[int] = []) -> Dict[str, Any]:  # noqa: B006 (never mutated)
        """Count things."""
        return {"n": n, "items": items, "total": n + sum(items)}

    @registry.tool
    def mangle(text: str) -> str:
        """A hostile tool: its result holds a lone surrogate."""
        return text + "\ud800"

    @registry.tool
    def loop(n: int = 0) -> Any:
        """A hostile tool: its result cannot be written as JSON (a list that holds itself)."""
        out: List[Any] = [n]
        out.append(out)
        return out

    @registry.tool
    def boom(reason: str = "") -> str:
        """A hostile tool: it raises, with a lone surrogate in its message."""
        raise RuntimeError("boom \udcff " + reason)

    registry.add(_Order, name="order", handler=lambda order: f"ordered {order.quantity} {order.item}")
    registry.add(Tool("tree", "A tree of names.", _TREE, handler=lambda **kw: kw))
    _STATE["registry"] = registry
    return registry


def _tree(rng: random.Random, depth: int) -> Dict[str, Any]:
    node: Dict[str, Any] = {"name": rng.choice(["a", "b", "é", "😀"])}
    if depth > 0 and rng.random() < 0.7:
        node["children"] = [_tree(rng, depth - 1) for _ in range(rng.randint(1, 2))]
    return node


def _text(rng: random.Random) -> str:
    return rng.choice(["Oslo", "", "a b", "é😀", 'say "hi"', "x\\y", "<tool_call>", "line\nbreak", "1.5"])


def _arguments(rng: random.Random, name: str) -> Dict[str, Any]:
    """Valid arguments for the tool ``name``."""
    if name == "transfer":
        return {"amount": rng.choice([0, 1.5, 999.99, 1000]), "to": _text(rng)}
    if name in ("echo", "mangle"):
        return {"text": _text(rng)}
    if name == "count":
        return {"n": rng.randint(-5, 5), "items": [rng.randint(0, 9) for _ in range(rng.randint(0, 3))]}
    if name == "loop":
        return {"n": rng.randint(0, 3)}
    if name == "boom":
        return {"reason": _text(rng)}
    if name == "order":
        args: Dict[str, Any] = {
            "item": _text(rng),
            "quantity": rng.randint(1, 100),
            "address": {"street": _text(rng), "zip": rng.choice(["0150", "12345"])},
        }
        if rng.random() < 0.5:
            args["notes"] = [_text(rng) for _ in range(rng.randint(0, 2))]
        return args
    return {"root": _tree(rng, rng.randint(0, 3))}


# --------------------------------------------------------------------------- hostile values


def _nest(rng: random.Random, n: int) -> str:
    if rng.random() < 0.5:
        return "[" * n + "1" + "]" * n
    return '{"a": ' * n + "1" + "}" * n


def _deep_tree(n: int) -> str:
    return '{"name": "a", "children": [' * n + '{"name": "b"}' + "]}" * n


def _hostile(rng: random.Random) -> str:
    """JSON text (or almost) that a tool call must not carry, or that sits at a limit."""
    r = rng.randrange(14)
    if r == 0:
        return rng.choice(["NaN", "Infinity", "-Infinity", "nan", "inf", "-0", "NaN1"])
    if r == 1:
        return rng.choice(["1e999", "-1e400", "1E309", "1e308", "2.5e-400", "0." + "0" * 400 + "1"])
    if r == 2:
        digits = rng.choice([300, 309, 639, 640, 641, 700, 4300, 4301, 5000, 20000])
        return rng.choice(["", "-"]) + "9" * digits + rng.choice(["", "", ".5", "e2"])
    if r == 3:
        return rng.choice(
            [
                '"\\ud800"',
                '"\\udc00x"',
                '"a\\ud83d"',
                '"\\ud83d\\u0041"',
                '"\\ud83d\\ud83d\\ude00"',
                '"\\uDBFF"',
            ]
        )
    if r == 4:
        return rng.choice(['"\\ud83d\\ude00"', '"\\uD83D\\uDE00"', '"\\\\ud800"', '"\\u0000"', '"\\u00e9"'])
    if r == 5:
        return rng.choice(['"\ud800"', '"a\udfff"', "\ud800", '"\ud83d\ude00"'])  # raw surrogates
    if r == 6:
        return _nest(rng, rng.choice([8, 240, 254, 255, 256, 257, 300, 1000, 5000]))
    if r == 7:
        return _deep_tree(rng.choice([5, 100, 120, 127, 128, 200, 300, 2000]))
    if r == 8:
        return rng.choice(['{"a": 1, "a": 2}', '{"a": {"b": 1, "b": 1}}', '[{"x": 1, "x": 1}]'])
    if r == 9:
        return rng.choice(["True", "False", "None", "'x'", "undefined", "0x10", "01", "1.", ".5", "+1"])
    if r == 10:
        return '"' + "x" * rng.choice([1000, 100000]) + '"'
    if r == 11:
        return rng.choice(["[]", "{}", '""', "null", "true", "[1,]", '{"a"}', "[", "{", '"'])
    if r == 12:
        return json.dumps(rng.choice([-(2**63), 2**64, 10**20, 1e-300, 5e-324, 1.7976931348623157e308]))
    return rng.choice(["\u2028", "\x00", "\x1f", "\\", "\\u", "\\ud8", '\\"'])


_VALUE = re.compile(r'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"(?:[^"\\]|\\.)*"|true|false|null')
_NOISE = list('{}[],:"\\ \n0123456789.eE+-') + [
    "NaN",
    "Infinity",
    "\\ud800",
    "\\udc00",
    "\\u",
    "\ud800",
    "é",
    "😀",
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "<parameter=",
    "</parameter>",
    "<function=",
    "[TOOL_CALLS]",
    "[ARGS]",
    "<|call|>",
    "<|channel|>",
    "to=functions.",
    "```json",
    '"name"',
    '"arguments"',
]


def _mutate(rng: random.Random, text: str) -> str:
    """1-4 edits of ``text``: a JSON value swapped for a hostile one, characters deleted,
    inserted, replaced or duplicated, the text cut short."""
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(8)
        i = rng.randint(0, len(text))
        j = min(len(text), i + rng.randint(1, 6))
        if op <= 2:  # the main event: a hostile value where a value was
            values = list(_VALUE.finditer(text))
            if values:
                m = rng.choice(values)
                text = text[: m.start()] + _hostile(rng) + text[m.end() :]
            else:
                text = text[:i] + _hostile(rng) + text[i:]
        elif op == 3:
            text = text[:i] + text[j:]
        elif op == 4:
            text = text[:i] + rng.choice(_NOISE) + text[i:]
        elif op == 5:
            text = text[:i] + rng.choice(_NOISE) + text[j:]
        elif op == 6:
            text = text[:i] + text[i:j] * rng.randint(2, 3) + text[j:]
        else:
            text = text[:i]
    return text


# --------------------------------------------------------------------------- generate


def _turn(rng: random.Random, fmt: Any) -> str:
    """A valid turn of ``fmt``: random calls (or a response), rendered."""
    from agentgrammar import ToolCall
    from agentgrammar.errors import AgentGrammarError
    from agentgrammar.formats import AgentOutput

    registry = _registry()
    names = registry.names
    calls = [
        ToolCall(name, _arguments(rng, name))
        for name in (rng.choice(names) for _ in range(rng.choice([0, 1, 1, 1, 2, 3])))
    ]
    think = rng.choice([None, "Let me think.", "a { b"]) if fmt.think_begin is not None else None
    text = rng.choice([None, "Sure.", "Done: {1}"]) if not calls or not fmt.calls_or_text else None
    response = rng.choice([None, "The answer."]) if fmt.has_response and not calls else None
    for output in (
        AgentOutput(think=think, tool_calls=calls, text=text, response=response),
        AgentOutput(tool_calls=calls),
        AgentOutput(text="Hi."),
    ):
        try:
            return str(fmt.render(output, tools=list(registry)))
        except AgentGrammarError:
            continue
    return ""


def generate(rng: random.Random) -> Input:
    """A mutated turn of a random preset, read back by the same preset (mostly) or another."""
    from agentgrammar.formats import get, names

    presets = names()
    written = rng.choice(presets)
    text = _turn(rng, get(written))
    if rng.random() < 0.9:
        text = _mutate(rng, text)
    read = written if rng.random() < 0.85 else rng.choice(presets)
    return written, read, text, rng.random() < 0.8


# --------------------------------------------------------------------------- the contract


def _check_safe(value: Any, where: str) -> None:
    """OutputInvariantError unless ``value`` is JSON a tool may get: finite numbers, integers
    within MAX_INT_DIGITS, strings that encode as UTF-8, nesting within MAX_JSON_DEPTH."""
    from agentgrammar.formats.arguments import MAX_INT_DIGITS, MAX_JSON_DEPTH, nesting_depth

    if nesting_depth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise OutputInvariantError(f"{where}: nests more than {MAX_JSON_DEPTH} levels")
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, bool) or v is None:
            continue
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise OutputInvariantError(f"{where}: a non-finite number {v!r}")
        elif isinstance(v, int):
            if v.bit_length() > MAX_INT_DIGITS * 4:  # 10**640 < 2**2560
                raise OutputInvariantError(f"{where}: an integer of {v.bit_length()} bits")
        elif isinstance(v, str):
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise OutputInvariantError(f"{where}: a string with a lone surrogate: {v!r}") from None
        else:
            raise OutputInvariantError(f"{where}: a {type(v).__name__} is not JSON")


def run(inp: Input) -> None:
    """``fmt.parse`` with and without tools: a typed error, or calls that validate and are safe."""
    from agentgrammar.formats import get

    _, read, text, with_tools = inp
    fmt = get(read)
    registry = _registry()
    out = fmt.parse(text, tools=list(registry) if with_tools else None)
    for call in out.tool_calls:
        _check_safe(call.arguments, f"{read}: the arguments of {call.name!r}")
        if with_tools:
            tool = registry[call.name]
            again = tool.validate(call.arguments)  # validated once: validates again, unchanged
            if again != call.arguments:
                raise OutputInvariantError(f"{read}: {call.name!r} validated {call.arguments!r} as {again!r}")
    for part in (out.think, out.text, out.response):
        if part is not None:
            _check_safe(part, f"{read}: the text")


def run_agent(inp: Input) -> None:
    """The agent's path after generation, then the next prompt: nothing may escape."""
    from agentgrammar.agent.agent import Agent
    from agentgrammar.agent.prompt import PromptBuilder
    from agentgrammar.agent.request import RunRequest
    from agentgrammar.agent.run import AgentStep
    from agentgrammar.agent.tool_runner import ToolRunner
    from agentgrammar.formats import get

    _, read, text, _with_tools = inp
    fmt = get(read)
    registry = _registry()

    class NoTemplate:
        chat_template = None

    agent = Agent.__new__(Agent)  # no model: only the parts used after generate()
    agent.format = fmt
    agent.registry = registry
    agent._prompts = PromptBuilder(NoTemplate(), fmt)
    request = RunRequest(
        messages=[{"role": "user", "content": "Go."}],
        registry=registry,
        tool_choice="auto",
        reasoning="enabled",
        parallel_tool_calls=True,
        max_turns=2,
        max_new_tokens=256,
        constrained=False,
        do_sample=False,
        temperature=1.0,
        top_p=1.0,
        on_event=None,
    )
    try:
        step = AgentStep(text=text)
        agent._parse(step, request.tools, request)
        if step.error is None:
            step.results = ToolRunner(request.registry).run(step.tool_calls)
        agent._end_turn(request, step)
        for result in step.results:
            _check_safe(result.content, f"{read}: the result of {result.call.name!r}")
        prompt = agent._prompts.build(request.messages, request.tools, request.reasoning)
        prompt.text.encode("utf-8")
    except Exception as e:  # the agent must turn every failure into a step error or a result
        raise OutputInvariantError(f"{read}: {type(e).__name__} out of the agent's path: {e}") from e


HARNESSES = [
    (
        "outputs",
        generate,
        run,
        "mutated model outputs of every preset through fmt.parse (typed errors or safe, valid calls)",
    ),
    (
        "agent_outputs",
        generate,
        run_agent,
        "mutated model outputs through the agent's parse, tool execution and next prompt",
    ),
]

"""Synthetic agent transcripts of the demo tools, for training the demo model.

Each episode is a user request, an assistant turn that (in formats with reasoning) thinks and
then calls one demo tool with arguments taken from the request, the tool's result, and a final
assistant turn that answers from it. Every assistant turn becomes one training example: the
prompt the agent would show the model (``prompt``, rendered by the agent's own
``render_messages``) and the turn as the format writes it
(``completion``).

Example:
    >>> import random
    >>> from agentgrammar.formats import get
    >>> ep = make_episode(get("tags"), random.Random(0))
    >>> call_turn, answer_turn = (get("tags").render(out) for out in ep.outputs)
    >>> print(ep.user, call_turn, answer_turn, sep="\\n")
    How much is 98 - 54?
    <think>The user wants a calculation, so I call calculate.</think>
    <tool_call>{"name": "calculate", "arguments": {"expression": "98 - 54"}}</tool_call>
    <think>calculate returned the answer.</think>
    <response>Here you go: 44.</response>
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..agent.prompt import render_messages
from ..formats import AgentFormat, AgentOutput
from ..registry import ToolCall, ToolRegistry
from .tools import CITIES, CURRENCIES, demo_registry

__all__ = [
    "CORPUS_VERSION",
    "Episode",
    "Example",
    "demo_prompts",
    "make_corpus",
    "make_episode",
    "render_prompt",
]

CORPUS_VERSION = 3
"""Bumped whenever the transcripts change (part of the model cache key)."""

_WEATHER = (
    "What's the weather in {city}?",
    "How warm is it in {city} today?",
    "Weather in {city}, please.",
    "Is it cold in {city}?",
    "Tell me the weather in {city} in fahrenheit.",
    "What is the temperature in {city} in fahrenheit?",
)
_CALC = (
    "What is {expr}?",
    "Compute {expr}.",
    "Calculate {expr} for me.",
    "How much is {expr}?",
)
_CONVERT = (
    "Convert {amount} {src} to {dst}.",
    "How much is {amount} {src} in {dst}?",
    "Change {amount} {src} into {dst}, please.",
)


@dataclass(frozen=True)
class Episode:
    """One synthetic conversation: the ``user`` request, the assistant ``outputs`` (the tool
    call turn, then the answer) and the tool ``results`` (one per call)."""

    user: str
    outputs: Tuple[AgentOutput, AgentOutput]
    results: Tuple[str, ...]


@dataclass(frozen=True)
class Example:
    """One training example: ``prompt`` (the model's input text) and ``completion`` (the
    assistant turn it should write; the end-of-turn token is added when tokenizing)."""

    prompt: str
    completion: str


def _expression(rng: random.Random) -> str:
    a, b, c = rng.randint(1, 99), rng.randint(1, 99), rng.randint(2, 9)
    return rng.choice(
        [f"{a} + {b}", f"{a} * {b}", f"{a} - {b}", f"{a} / {c}", f"({a} + {b}) * {c}", f"{a} * {c} + {b}"]
    )


def _request(rng: random.Random) -> Tuple[str, ToolCall, str]:
    """A user request, the call that serves it, and the words for the reasoning."""
    kind = rng.randrange(3)
    if kind == 0:
        city = rng.choice(CITIES)
        template = rng.choice(_WEATHER)
        args: Dict[str, Any] = {"city": city}
        if "fahrenheit" in template:
            args["unit"] = "fahrenheit"
        return template.format(city=city), ToolCall("get_weather", args), "the weather"
    if kind == 1:
        expr = _expression(rng)
        return (
            rng.choice(_CALC).format(expr=expr),
            ToolCall("calculate", {"expression": expr}),
            "a calculation",
        )
    src, dst = rng.sample(CURRENCIES, 2)
    amount = rng.choice([rng.randint(1, 999), round(rng.uniform(1, 500), 2)])
    call = ToolCall("convert_currency", {"amount": amount, "from_currency": src, "to_currency": dst})
    return rng.choice(_CONVERT).format(amount=amount, src=src, dst=dst), call, "a currency conversion"


def make_episode(fmt: AgentFormat, rng: random.Random, registry: Optional[ToolRegistry] = None) -> Episode:
    """A random episode for ``fmt`` (reasoning only in formats that have a think block; the
    answer in the response block, or as free text in formats without one)."""
    registry = registry or demo_registry()
    user, call, topic = _request(rng)
    if (
        fmt.call_id_form is not None or fmt.call_index is not None
    ):  # the call's head holds its id (Kimi-K2's functions.NAME:0)
        call = ToolCall(call.name, call.arguments, fmt.new_call_id(0, call.name))
    result = str(registry.call(call))
    # Short, formulaic reasoning (no copied values): even a weak model closes it reliably.
    think1 = f"The user wants {topic}, so I call {call.name}." if fmt.has_think else None
    think2 = f"{call.name} returned the answer." if fmt.has_think else None
    answer = rng.choice(("The result is: {r}.", "Here you go: {r}.", "{r}."))
    answer = answer.format(r=result)
    final = (
        AgentOutput(think=think2, response=answer)
        if fmt.has_response
        else AgentOutput(think=think2, text=answer)
    )
    return Episode(user, (AgentOutput(think=think1, tool_calls=[call]), final), (result,))


def render_prompt(fmt: AgentFormat, registry: ToolRegistry, messages: Sequence[Dict[str, Any]]) -> str:
    """The text the agent prompts the model with for ``messages`` (the agent's plain layout,
    ``agentgrammar.agent.prompt.render_messages``: the demo tokenizer has no chat template).

    Example:
        >>> from agentgrammar.formats import get
        >>> render_prompt(get("tags"), demo_registry(), [{"role": "user", "content": "Hi."}])[-27:]
        '<|user|>\\nHi.\\n<|assistant|>\\n'
    """
    return render_messages(list(messages), fmt, registry)


def episode_examples(fmt: AgentFormat, registry: ToolRegistry, ep: Episode) -> List[Example]:
    """The two training examples of an episode (the call turn and the answer turn)."""
    messages: List[Dict[str, Any]] = [{"role": "user", "content": ep.user}]
    out: List[Example] = []
    for output in ep.outputs:
        text = fmt.render(output, tools=registry)
        out.append(Example(render_prompt(fmt, registry, messages), text))
        messages.append({"role": "assistant", "content": text})
        for call, result in zip(output.tool_calls, ep.results):
            # As the agent feeds results back (``ToolResult.content``: a str result as it is).
            messages.append({"role": "tool", "name": call.name, "content": result})
    return out


def make_corpus(fmt: AgentFormat, n_episodes: int, *, seed: int = 0) -> List[Example]:
    """``2 * n_episodes`` training examples for ``fmt`` (deterministic for a seed).

    Example:
        >>> from agentgrammar.formats import get
        >>> examples = make_corpus(get("tags"), 3)
        >>> len(examples), examples[0].completion.startswith("<think>")
        (6, True)
    """
    rng = random.Random(seed)
    registry = demo_registry()
    out: List[Example] = []
    for _ in range(n_episodes):
        out.extend(episode_examples(fmt, registry, make_episode(fmt, rng, registry)))
    return out


def demo_prompts(n: int, *, seed: int = 1234) -> List[str]:
    """``n`` user requests for the demo runs (a fixed list for a seed, drawn like the corpus's).

    Example:
        >>> demo_prompts(2) == demo_prompts(2)
        True
    """
    rng = random.Random(seed)
    return [_request(rng)[0] for _ in range(n)]

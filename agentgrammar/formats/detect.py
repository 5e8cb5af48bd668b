"""Which preset a tokenizer's chat template writes: ``detect(tokenizer)``.

A probe conversation (a user asks for the weather, the assistant calls ``get_weather``) goes
through the template; the assistant turn it renders is what the family's models write. The
preset is the one that reads that turn back as the call: best when its ``render`` writes the
turn exactly, next when its grammar accepts it, last when it only parses it; among equals, the
one whose think marker the template knows. Where no preset reads it, the probe is made again
with reasoning in the assistant turn: a template that writes the think block only for a turn
with reasoning (MiniMax-M2, whose generation prompt opens the block) renders then the turn its
model writes. ``FormatDetectError`` names the closest presets when none reads the call.

Example:
    >>> class Qwen25Like:
    ...     chat_template = "(a Qwen2.5-style template)"
    ...     def apply_chat_template(self, messages, tools=None, add_generation_prompt=False, **kw):
    ...         out = "".join(f"<|im_start|>{m['role']}\\n{m.get('content') or ''}"
    ...                       + "".join('<tool_call>\\n{"name": "%s", "arguments": {"city": "Oslo"}}\\n</tool_call>'
    ...                                 % c["function"]["name"] for c in m.get("tool_calls", []))
    ...                       + "<|im_end|>\\n" for m in messages)
    ...         return out + ("<|im_start|>assistant\\n" if add_generation_prompt else "")
    >>> detect(Qwen25Like()).name
    'hermes'
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from ..errors import AgentGrammarError
from ..registry import Tool, ToolCall
from .format import AgentFormat
from .output import AgentOutput
from .presets import get, names

__all__ = ["FormatDetectError", "detect"]

_TOOL = Tool(
    "get_weather",
    "Get the current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
_CALL = ToolCall("get_weather", {"city": "Oslo"})
_ID = "abc123XYZ"  # 9 alphanumeric characters: Mistral's templates check the shape
_USER = {"role": "user", "content": "What is the weather in Oslo?"}
_THOUGHT = "The user asks for the weather in Oslo."
# End-of-turn strings a rendered turn may end with, besides a preset's own ``stop``.
_ENDS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|end|>", "<|return|>", "</s>", "<｜end▁of▁sentence｜>")


class FormatDetectError(AgentGrammarError, ValueError):
    """No preset reads the tool call that a tokenizer's chat template writes (or the template
    cannot render one). ``closest``: the presets that came nearest, best first.

    Example:
        >>> FormatDetectError("no preset fits", closest=["hermes"]).closest
        ['hermes']
    """

    def __init__(self, message: str, *, closest: Optional[List[str]] = None) -> None:
        super().__init__(message)
        self.closest = list(closest or [])


def _assistant(arguments: Any, think: Optional[str] = None) -> Dict[str, Any]:
    fn = {"name": _CALL.name, "arguments": arguments}
    out: Dict[str, Any] = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": _ID, "type": "function", "function": fn}],
    }
    if think is not None:
        out["reasoning_content"] = think
    return out


def _render(
    tokenizer: Any, messages: List[Mapping[str, Any]], generation: bool, kwargs: Dict[str, Any]
) -> str:
    tools = [
        {
            "type": "function",
            "function": {
                "name": _TOOL.name,
                "description": _TOOL.description,
                "parameters": _TOOL.parameters,
            },
        }
    ]
    text = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=generation, tokenize=False, **kwargs
    )
    if not isinstance(text, str):
        raise TypeError(f"apply_chat_template returned {type(text).__name__}, not str")
    return text


@dataclass(frozen=True)
class _Probe:
    """The generation prompt after the user's message, where its generation suffix starts, and
    the assistant turn the template renders for the call (from where the two renders part)."""

    prompt: str
    suffix_at: int
    common: int
    turn: str

    def text_for(self, fmt: AgentFormat) -> str:
        """The turn as ``fmt`` reads it: from the think marker the generation prompt opens
        (Thinking-2507's ``<think>\n``), end-of-turn strings and whitespace off the end."""
        turn = self.turn
        begin = fmt.think_begin
        at = self.prompt.find(begin, self.suffix_at) if begin else -1
        if begin and at >= 0 and begin not in turn:
            opened = self.prompt[at:]
            if at < self.common < at + len(begin) or at >= self.common:
                # the renders part inside or before the prompt's marker: the template renders
                # the turn without what the prompt opened (DeepSeek-V3.1's "<think>" becomes
                # "</think>", V3.2's "<think></think>" too), so the model writes the rendered
                # turn after the whole marker (without an end marker the prompt already wrote)
                rendered = self.prompt[at : self.common] + turn if at < self.common else turn
                end = fmt.think_end or ""
                if end and opened.endswith(end) and rendered.startswith(end):
                    rendered = rendered[len(end) :]
                turn = opened + rendered
            else:
                # shared with the rendered turn up to ``common``
                turn = self.prompt[at : self.common] + turn
        ends = tuple(dict.fromkeys((*fmt.stop, *_ENDS)))
        changed = True
        while changed:
            changed = False
            turn = turn.rstrip()
            for end in ends:
                if end and turn.endswith(end) and end not in fmt.markers():
                    turn, changed = turn[: -len(end)], True
        return turn


def _probe(tokenizer: Any, kwargs: Dict[str, Any], think: Optional[str] = None) -> _Probe:
    prompt = _render(tokenizer, [_USER], True, kwargs)
    try:
        base = _render(tokenizer, [_USER], False, kwargs)
    except Exception:
        base = ""
    suffix_at = len(base) if prompt.startswith(base) else len(prompt)
    errors = []
    for arguments in (dict(_CALL.arguments), '{"city": "Oslo"}'):  # dict, or JSON text (DeepSeek)
        try:
            full = _render(tokenizer, [_USER, _assistant(arguments, think)], False, kwargs)
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
            continue
        if "Oslo" in full:
            common = len(os.path.commonprefix([prompt, full]))  # noqa: RUF071 (text, by character)
            return _Probe(prompt, suffix_at, common, full[common:])
    raise FormatDetectError(
        "the chat template does not render an assistant tool call" + (f" ({errors[-1]})" if errors else "")
    )


@dataclass(frozen=True)
class _Fit:
    name: str
    score: int  # 3: render writes the turn; 2: the grammar accepts it; 1: parse reads the call


def _fit(fmt: AgentFormat, probe: _Probe, template: str) -> Optional[_Fit]:
    text = probe.text_for(fmt)
    try:
        out = fmt.parse(text, tools=[_TOOL])
    except Exception:
        return None
    calls = [(c.name, c.arguments) for c in out.tool_calls]
    if calls != [(_CALL.name, _CALL.arguments)] or out.response or out.text:
        return None
    score = 1
    try:
        if fmt.grammar([_TOOL], reasoning="auto").accepts(text):
            score = 2
        call = ToolCall(_CALL.name, _CALL.arguments, out.tool_calls[0].id)
        if fmt.render(AgentOutput(think=out.think, tool_calls=[call]), tools=[_TOOL]) == text:
            score = 3
    except Exception:
        pass
    # Among equals, a think block the template knows, then none, then one it does not know.
    think = 0 if fmt.think_begin is None else (1 if fmt.think_begin in template else -1)
    score = score * 3 + think
    return _Fit(fmt.name, score)


def _closest(turn: str) -> List[str]:
    """Presets by how many of their markers the turn holds."""
    # whitespace-only markers (GLM's name end "\n") say nothing about a layout
    counts = [(sum(m.strip() in turn for m in get(n).markers() if m.strip()), n) for n in names()]
    return [n for c, n in sorted(counts, key=lambda x: -x[0]) if c > 0][:3]


def detect(tokenizer: Any, *, template_kwargs: Optional[Mapping[str, Any]] = None) -> AgentFormat:
    """The preset whose layout ``tokenizer``'s chat template writes (see the module docstring);
    ``template_kwargs`` go to ``apply_chat_template`` (``chat_template=`` for another template).
    ``FormatDetectError`` when the tokenizer has no template or no preset reads its tool call,
    naming the closest presets.
    """
    kwargs = dict(template_kwargs or {})
    template = str(kwargs.get("chat_template") or getattr(tokenizer, "chat_template", None) or "")
    if not template or not hasattr(tokenizer, "apply_chat_template"):
        raise FormatDetectError("the tokenizer has no chat template: give the format by name")
    try:
        probe = _probe(tokenizer, kwargs)
    except FormatDetectError:
        raise
    except Exception as e:
        raise FormatDetectError(
            f"the chat template fails on a tool-calling conversation: {type(e).__name__}: {e}"
        ) from e
    fits = [f for f in (_fit(get(n), probe, template) for n in names()) if f is not None]
    if not fits:  # a template that writes the think block only for a turn with reasoning
        try:
            with_think = _probe(tokenizer, kwargs, _THOUGHT)
        except Exception:
            with_think = None
        if with_think is not None and _THOUGHT in with_think.prompt + with_think.turn:
            fits = [f for f in (_fit(get(n), with_think, template) for n in names()) if f is not None]
    if not fits:
        closest, turn = _closest(probe.turn), probe.turn
        hint = f"; closest: {', '.join(closest)}" if closest else ""
        raise FormatDetectError(
            f"no preset reads the tool call this chat template writes ({turn.strip()[:120]!r}){hint}; "
            "give format= an AgentFormat for it",
            closest=closest,
        )
    best = max(fits, key=lambda f: f.score)  # the first of equals: presets are listed by preference
    return get(best.name)

"""``AgentFormat``: how one model family lays out reasoning, tool calls and the response, and
the request grammar, prompt block, renderer and parser that follow from it.

A format is data (marker strings and a few layout choices). From it:

* ``grammar(tools, tool_choice=..., parallel_tool_calls=..., reasoning=...)`` builds the request
  grammar as a structural tag (``structural_tag(...)``, xgrammar's format) and compiles it with
  ``Grammar.from_structural_tag``. Each tool's call (its begin string and argument grammar) is
  built once per ``Tool`` object and cached, so a request only assembles cached pieces.
* ``render_tools(tools)`` writes the prompt block that describes the tools.
* ``render(output)`` writes an ``AgentOutput`` the way the model would, and ``parse(text)``
  reads one back: ``parse(render(x)) == x`` for outputs whose texts have no surrounding
  whitespace (``parse`` strips it).

Layouts of the arguments of one call (``call_layout``):

* ``"json_object"``: ``call_begin {"name": "NAME", "arguments": {...}} call_end`` (the two key
  names are ``name_key`` and ``arguments_key``);
* ``"name_then_json"``: ``call_begin NAME name_end {...} call_end``;
* ``"xml"``: ``call_begin NAME name_end`` then per argument ``param_begin KEY param_name_end
  VALUE param_end``, then ``call_end``. Plain strings (``{"type": "string"}`` without
  ``pattern`` / ``format`` / length bounds) are written raw, everything else as JSON.

Calls are either triggered one by one by their own begin marker (Hermes ``<tool_call>``) or
grouped in one block (``calls_begin``, calls separated by ``call_separator``, ``calls_end``; e.g.
DeepSeek and Mistral). A format with a response marker (``response_begin``) has no free text:
the output is the think block, then tool calls and/or the response. A format without one
allows free text (``AgentOutput.text``) before and between the calls.

Argument JSON defaults to the family's own layout with no free whitespace
(``whitespace="compact"`` with ``separators``), so a weak model cannot loop in whitespace;
``whitespace="flexible"`` gives xgrammar's structural-tag JSON (any whitespace, optionally
capped by ``max_whitespace``). Either way objects are closed (no undeclared arguments) and
properties come in schema order.

Special tokens: the engine never allows a vocabulary's special tokens inside text. Formats whose
markers are special tokens in their model's vocabulary (Llama-3 ``<|python_tag|>``, the Harmony
``<|channel|>`` ... markers of gpt-oss, DeepSeek's ``<｜tool▁calls▁begin｜>`` ...) can be checked
with ``Grammar.accepts`` and parsed, but the grammar cannot make such a model *emit* those
tokens; ``markers()`` lists the strings to check against a vocabulary.

Example:
    >>> from agentgrammar import Tool, ToolCall
    >>> weather = Tool("get_weather", "Weather in a city.", {"type": "object",
    ...     "properties": {"city": {"type": "string"}}, "required": ["city"]})
    >>> fmt = AgentFormat(name="mini")
    >>> out = AgentOutput(text="Checking.", tool_calls=[ToolCall("get_weather", {"city": "Oslo"})])
    >>> text = fmt.render(out)
    >>> print(text)
    Checking.
    <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>
    >>> fmt.grammar([weather]).accepts(text), fmt.parse(text) == out
    (True, True)
    >>> fmt.grammar([weather]).accepts(text.replace('"Oslo"', "42"))
    False
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_str  # json.dumps of a str, unwrapped
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import structural_tag as st
from .._gc_pause import pauses_gc
from ..errors import AgentGrammarError, GrammarError, ToolError
from ..grammar import Grammar
from ..grammar.structural_tag import compact_schema_grammar
from ..registry import Tool, ToolCall
from ..registry.openai import tool_to_openai
from .output import AgentOutput
from .tools import ToolsArg, cached_piece, cached_pieces, resolve_choice, tool_list

__all__ = ["AgentFormat", "FormatParseError", "ToolsArg"]


_LAYOUTS = ("json_object", "name_then_json", "xml")
_REASONING = ("enabled", "disabled", "auto")
_WS = " \t\r\n"
# Keywords that keep a string argument from being written raw in the xml layout.
_STRING_CONSTRAINTS = ("pattern", "format", "minLength", "maxLength", "contentEncoding", "contentMediaType")


class FormatParseError(AgentGrammarError, ValueError):
    """Text that does not follow the format (a block that is not closed, a call cut off, a
    call that is not JSON). ``offset`` is the character offset in the text.

    Example:
        >>> err = FormatParseError("the think block is not closed", offset=7)
        >>> str(err), err.offset
        ('the think block is not closed (at offset 7)', 7)
    """

    def __init__(self, message: str, *, offset: int) -> None:
        super().__init__(f"{message} (at offset {offset})")
        self.offset = offset


def _is_raw_string(schema: Any) -> bool:
    """Whether the xml layout writes a value of this schema raw (not as JSON): a plain string
    schema, or an ``enum`` / ``const`` of strings only."""
    if not isinstance(schema, Mapping) or schema.get("type", "string") != "string":
        return False
    if "const" in schema:
        return isinstance(schema["const"], str)
    if "enum" in schema:
        return isinstance(schema["enum"], list) and all(isinstance(v, str) for v in schema["enum"])
    return schema.get("type") == "string" and not any(k in schema for k in _STRING_CONSTRAINTS)


def _order_like(value: Any, schema: Any) -> Any:
    """``value`` with object members in the order of the schema's ``properties`` (recursively)."""
    if isinstance(value, Mapping) and isinstance(schema, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            out = {k: _order_like(value[k], props[k]) for k in props if k in value}
            out.update((k, v) for k, v in value.items() if k not in out)
            return out
    if isinstance(value, list) and isinstance(schema, Mapping) and isinstance(schema.get("items"), Mapping):
        return [_order_like(v, schema["items"]) for v in value]
    return value


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


# --------------------------------------------------------------------------- the format


@dataclass(frozen=True)
class AgentFormat:
    """One model family's output layout (see the module docstring for the parts).

    Reasoning: ``think_begin`` / ``think_end`` (both or neither), then ``think_suffix`` (e.g.
    ``"\\n\\n"``, required by the grammar after the block). Tool calls: ``call_layout``,
    ``call_begin`` / ``call_end`` around each call, ``name_key`` / ``arguments_key``
    (``json_object``), ``name_end`` (``name_then_json`` / ``xml``: between the name and the
    arguments), ``param_begin`` / ``param_name_end`` / ``param_end`` (``xml``), ``calls_begin``
    / ``calls_end`` around all calls of a turn (both empty: each call stands alone),
    ``call_separator`` between calls, ``trigger`` (the string that starts tool calling in free
    text; default ``calls_begin``, else ``call_begin``, else the JSON object's start), and
    ``parallel_calls`` (False: the family makes one call per turn). Response: ``response_begin``
    / ``response_end`` (both or neither; with them there is no free text) and
    ``response_after_calls`` (whether a response may follow calls in one turn).
    ``block_separator`` goes between the calls and the response (and, when rendering, between
    free text and the calls); ``block_pad`` is written just inside the think and response
    markers when rendering. Argument JSON: ``whitespace`` (``"compact"`` or ``"flexible"``),
    ``separators`` (item and key separators of the compact layout and of the
    ``json_object`` wrapper) and ``max_whitespace`` (flexible only). ``stop``: end-of-turn
    strings that ``parse`` ignores at the end of the text. ``tools_prompt``: a function that
    writes the tools' prompt block (default: a generic ``<tools>`` block).

    Example:
        >>> fmt = AgentFormat(name="fn", call_layout="name_then_json", call_begin="<function=",
        ...                   name_end=">", call_end="</function>")
        >>> fmt.render(AgentOutput(tool_calls=[ToolCall("now", {})]))
        '<function=now>{}</function>'
    """

    name: str = "custom"
    think_begin: Optional[str] = None
    think_end: Optional[str] = None
    think_suffix: str = ""
    call_layout: str = "json_object"
    call_begin: str = "<tool_call>"
    call_end: str = "</tool_call>"
    name_key: str = "name"
    arguments_key: str = "arguments"
    name_end: str = ""
    param_begin: str = "<parameter="
    param_name_end: str = ">"
    param_end: str = "</parameter>"
    calls_begin: str = ""
    calls_end: str = ""
    call_separator: str = "\n"
    trigger: Optional[str] = None
    parallel_calls: bool = True
    response_begin: Optional[str] = None
    response_end: Optional[str] = None
    response_after_calls: bool = True
    block_separator: str = "\n"
    block_pad: str = ""
    whitespace: str = "compact"
    separators: Tuple[str, str] = (", ", ": ")
    max_whitespace: Optional[int] = None
    stop: Tuple[str, ...] = ()
    tools_prompt: Optional[Callable[[Sequence[Tool]], str]] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if (self.think_begin is None) != (self.think_end is None):
            raise ValueError("think_begin and think_end go together: give both or neither")
        if (self.response_begin is None) != (self.response_end is None):
            raise ValueError("response_begin and response_end go together: give both or neither")
        for label in ("think_begin", "think_end", "response_begin", "response_end"):
            if getattr(self, label) == "":
                raise ValueError(f"{label} must not be empty (use None for no block)")
        for label in ("name_key", "arguments_key"):
            if not isinstance(getattr(self, label), str):
                raise ValueError(f"{label} must be a string (a JSON key), got {getattr(self, label)!r}")
        if self.call_layout not in _LAYOUTS:
            raise ValueError(f"call_layout must be one of {_LAYOUTS}, got {self.call_layout!r}")
        if self.whitespace not in ("compact", "flexible"):
            raise ValueError(f"whitespace must be 'compact' or 'flexible', got {self.whitespace!r}")
        if self.call_layout != "json_object" and not self.name_end:
            raise ValueError(f"the {self.call_layout} layout needs name_end (what follows the tool name)")
        if self.call_layout == "xml" and not (self.param_begin and self.param_name_end and self.param_end):
            raise ValueError("the xml layout needs param_begin, param_name_end and param_end")
        if self.calls_end and not self.calls_begin:
            raise ValueError("calls_end needs calls_begin")
        sep = tuple(self.separators)
        if len(sep) != 2 or not all(isinstance(s, str) for s in sep):
            raise ValueError(f"separators must be two strings (item, key), got {self.separators!r}")
        object.__setattr__(self, "separators", sep)
        object.__setattr__(self, "stop", (self.stop,) if isinstance(self.stop, str) else tuple(self.stop))
        trigger = (
            self.trigger
            if self.trigger is not None
            else (self.calls_begin or self.call_begin or self._opener())
        )
        if not trigger:
            raise ValueError("tool calls need a non-empty trigger: set call_begin, calls_begin or trigger")
        if not self._opener().startswith(trigger):
            raise ValueError(f"the trigger {trigger!r} must start every tool call block ({self._opener()!r})")
        object.__setattr__(self, "trigger", trigger)

    # ---- layout helpers ----------------------------------------------------------------------

    @property
    def has_think(self) -> bool:
        """Whether the format has a reasoning block."""
        return self.think_begin is not None

    @property
    def has_response(self) -> bool:
        """Whether the format has a response block (and so no free text)."""
        return self.response_begin is not None

    @property
    def _wrapped(self) -> bool:
        return bool(self.calls_begin)

    def _json_call_prefix(self) -> str:
        return "{" + json.dumps(self.name_key) + self.separators[1] + '"'

    def _call_prefix(self) -> str:
        """What every single call starts with, before the tool name."""
        if self.call_layout == "json_object":
            return self.call_begin + self._json_call_prefix()
        return self.call_begin

    def _opener(self) -> str:
        """What a group of calls starts with."""
        return self.calls_begin or self._call_prefix()

    def _call_head(self, name: str) -> str:
        """A call's text up to its arguments."""
        if self.call_layout == "json_object":
            item, key = self.separators
            return (
                self.call_begin
                + "{"
                + _json_str(self.name_key)
                + key
                + _json_str(name)
                + item
                + _json_str(self.arguments_key)
                + key
            )
        return self.call_begin + name + self.name_end

    def _call_tail(self) -> str:
        return "}" + self.call_end if self.call_layout == "json_object" else self.call_end

    def _layout_key(self) -> Tuple[Any, ...]:
        return (
            self.call_layout,
            self.call_begin,
            self.call_end,
            self.name_key,
            self.arguments_key,
            self.name_end,
            self.param_begin,
            self.param_name_end,
            self.param_end,
            self.whitespace,
            self.separators,
            self.max_whitespace,
        )

    def markers(self) -> List[str]:
        """The fixed strings of this format (check them against a vocabulary's special tokens:
        a marker that is a special token cannot be produced through the grammar).

        Example:
            >>> AgentFormat(think_begin="<think>", think_end="</think>").markers()
            ['<think>', '</think>', '<tool_call>', '</tool_call>']
        """
        out = [
            self.think_begin,
            self.think_end,
            self.calls_begin,
            self.calls_end,
            self.call_begin,
            self.call_end,
            self.response_begin,
            self.response_end,
        ]
        if self.call_layout == "xml":
            out += [self.param_begin, self.param_end]
        return list(dict.fromkeys(m for m in out if m))

    # ---- pieces (cached per Tool) ------------------------------------------------------------

    def _json_format(self, tool: Tool, schema: Any) -> st.Format:
        if self.whitespace == "flexible":
            return st.JSONSchema(json_schema=schema, max_whitespace_cnt=self.max_whitespace)
        try:
            g = compact_schema_grammar(schema, self.separators)
        except GrammarError as e:
            raise ToolError(
                f"tool {tool.name!r}: cannot build its argument grammar: {e}", tool=tool.name
            ) from e
        return st.GrammarText(grammar=g)  # dumped as EBNF text; converted as the grammar itself

    def _xml_content(self, tool: Tool) -> st.Format:
        schema = tool.parameters
        props = schema.get("properties", {})
        if schema.get("type", "object") != "object" or not isinstance(props, Mapping):
            raise ToolError(
                f"tool {tool.name!r}: the xml layout needs an object schema with 'properties'", tool=tool.name
            )
        defs = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
        required = set(schema.get("required", ()))
        elements: List[st.Format] = []
        for key, sub in props.items():
            begin = self.param_begin + key + self.param_name_end
            if _is_raw_string(sub) and "enum" not in sub and "const" not in sub:
                content: st.Format = st.AnyText()
            elif _is_raw_string(sub):
                values = [sub["const"]] if "const" in sub else list(sub["enum"])
                content = st.Or(elements=[st.ConstString(value=str(v)) for v in values])
            else:
                sub_schema = {**sub, **defs} if isinstance(sub, Mapping) else sub
                content = self._json_format(tool, sub_schema)
            tag: st.Format = st.Tag(begin=begin, content=content, end=self.param_end)
            elements.append(tag if key in required else st.OptionalFormat(content=tag))
        if len(elements) == 1:
            return elements[0]
        return st.Sequence(elements=elements) if elements else st.ConstString(value="")

    def _build_call_tag(self, tool: Tool) -> st.Tag:
        if self.call_layout == "xml":
            content = self._xml_content(tool)
        else:
            content = self._json_format(tool, tool.parameters)
        return st.Tag(begin=self._call_head(tool.name), content=content, end=self._call_tail())

    def call_tag(self, tool: Tool) -> st.Tag:
        """The structural tag of one call of ``tool`` (built once per tool and layout, then
        cached).

        Example:
            >>> tool = Tool("now", "", {"type": "object", "properties": {}})
            >>> AgentFormat().call_tag(tool).begin
            '<tool_call>{"name": "now", "arguments": '
        """
        return cached_piece(tool, self._layout_key(), lambda: self._build_call_tag(tool))

    # ---- the request grammar -----------------------------------------------------------------

    def _text_excludes(self) -> List[str]:
        return [m for m in (self.think_begin, self.think_end) if m]

    def _think_format(self, reasoning: str) -> Optional[st.Format]:
        if reasoning not in _REASONING:
            raise ValueError(f"reasoning must be one of {_REASONING}, got {reasoning!r}")
        if not self.has_think or reasoning == "disabled":
            return None
        assert self.think_begin is not None and self.think_end is not None
        block: st.Format = st.Tag(begin=self.think_begin, content=st.AnyText(), end=self.think_end)
        if self.think_suffix:
            block = st.Sequence(elements=[block, st.ConstString(value=self.think_suffix)])
        return st.OptionalFormat(content=block) if reasoning == "auto" else block

    def _calls_block(self, tags: List[st.Tag], parallel: bool) -> st.Format:
        """One or more calls separated by ``call_separator`` (inside ``calls_begin`` ... ``calls_end``)."""
        calls = st.TagsWithSeparator(
            tags=tags, separator=self.call_separator, at_least_one=True, stop_after_first=not parallel
        )
        if self._wrapped:
            return st.Tag(begin=self.calls_begin, content=calls, end=self.calls_end)
        return calls

    def _body(self, tools: List[Tool], mode: str, parallel: bool) -> st.Format:
        tags = cached_pieces(tools, self._layout_key(), self._build_call_tag) if mode != "none" else []
        if self.has_response:
            assert self.response_begin is not None and self.response_end is not None
            response = st.Tag(begin=self.response_begin, content=st.AnyText(), end=self.response_end)
            if not tags:
                return response
            calls = self._calls_block(tags, parallel)
            if self.response_after_calls:
                calls = st.Sequence(
                    elements=[
                        calls,
                        st.OptionalFormat(
                            content=st.Sequence(
                                elements=[st.ConstString(value=self.block_separator), response]
                            )
                        ),
                    ]
                )
            return calls if mode == "required" else st.Or(elements=[response, calls])
        assert self.trigger is not None
        if not tags:
            return st.AnyText(excludes=[self.trigger, *self._text_excludes()])
        if self._wrapped:
            block = self._calls_block(tags, parallel)
            assert isinstance(block, st.Tag)
            tags, stop_after_first = [block], True
        else:
            stop_after_first = not parallel
        return st.TriggeredTags(
            triggers=[self.trigger],
            tags=tags,
            at_least_one=mode == "required",
            stop_after_first=stop_after_first,
            excludes=self._text_excludes(),
        )

    def structural_tag(
        self,
        tools: Optional[ToolsArg],
        *,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        reasoning: str = "enabled",
    ) -> st.StructuralTag:
        """The request's structural tag (see ``grammar``), for inspection or for xgrammar.

        Example:
            >>> tag = AgentFormat().structural_tag([], tool_choice="none")
            >>> tag.format.type, tag.format.excludes
            ('any_text', ['<tool_call>'])
        """
        selected, mode = resolve_choice(tool_list(tools), tool_choice)
        parallel = bool(parallel_tool_calls) and self.parallel_calls
        think = self._think_format(reasoning)
        body = self._body(selected, mode, parallel)
        return st.StructuralTag(format=body if think is None else st.Sequence(elements=[think, body]))

    @pauses_gc
    def grammar(
        self,
        tools: Optional[ToolsArg],
        *,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        reasoning: str = "enabled",
    ) -> Grammar:
        """The grammar of one assistant turn with these tools.

        ``tools``: a ``ToolRegistry``, a ``Tool``, or an iterable of ``Tool`` s and OpenAI tool
        dicts. ``tool_choice``: ``"auto"`` (calls optional), ``"none"`` (no calls: free text that
        never contains the trigger, or just the response), ``"required"`` (at least one call;
        in a free-text format the output starts with it), a tool name or ``{"type":
        "function", "function": {"name": ...}}`` (required, that tool only), or ``{"type":
        "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools": [...]}}``.
        ``parallel_tool_calls=False``: at most one call (nothing after it in a free-text
        format). ``reasoning``: ``"enabled"`` (the think block first, required), ``"disabled"``
        (none) or ``"auto"`` (optional); ignored by formats without one. Unknown tool names are a
        ``ToolError``.

        Example:
            >>> from agentgrammar import Tool
            >>> now = Tool("now", "The time.", {"type": "object", "properties": {}})
            >>> g = AgentFormat().grammar([now], tool_choice="required")
            >>> g.accepts('<tool_call>{"name": "now", "arguments": {}}</tool_call>'), g.accepts("Hi")
            (True, False)
        """
        tag = self.structural_tag(
            tools, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls, reasoning=reasoning
        )
        return Grammar.from_structural_tag(tag)

    # ---- prompts -----------------------------------------------------------------------------

    def call_template(self) -> str:
        """A schematic call, for instructions in prompts.

        Example:
            >>> AgentFormat().call_template()
            '<tool_call>{"name": <tool-name>, "arguments": <arguments-json-object>}</tool_call>'
        """
        if self.call_layout == "json_object":
            item, key = self.separators
            body = (
                "{" + json.dumps(self.name_key) + key + "<tool-name>" + item + json.dumps(self.arguments_key)
            )
            call = self.call_begin + body + key + "<arguments-json-object>}" + self.call_end
        elif self.call_layout == "name_then_json":
            call = self.call_begin + "<tool-name>" + self.name_end + "<arguments-json-object>" + self.call_end
        else:
            param = self.param_begin + "<name>" + self.param_name_end + "<value>" + self.param_end
            call = self.call_begin + "<tool-name>" + self.name_end + param + self.call_end
        return self.calls_begin + call + self.calls_end

    def render_tools(self, tools: Optional[ToolsArg]) -> str:
        """The prompt block that describes ``tools`` the way this family was trained
        (``tools_prompt``), else a generic ``<tools>`` block with one JSON definition per line.

        Example:
            >>> from agentgrammar import Tool
            >>> print(AgentFormat().render_tools([Tool("now", "The time.", {"type": "object", "properties": {}})]))
            # Tools
            <BLANKLINE>
            You may call one or more tools. Their definitions, one JSON object per line:
            <tools>
            {"type": "function", "function": {"name": "now", "description": "The time.", "parameters": {"type": "object", "properties": {}}}}
            </tools>
            <BLANKLINE>
            To call a tool, write:
            <tool_call>{"name": <tool-name>, "arguments": <arguments-json-object>}</tool_call>
        """
        offered = tool_list(tools)
        if self.tools_prompt is not None:
            return self.tools_prompt(offered)
        lines = "\n".join(json.dumps(tool_to_openai(t), ensure_ascii=False) for t in offered)
        return (
            "# Tools\n\nYou may call one or more tools. Their definitions, one JSON object per line:\n"
            f"<tools>\n{lines}\n</tools>\n\nTo call a tool, write:\n{self.call_template()}"
        )

    # ---- rendering ---------------------------------------------------------------------------

    def _dumps(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False, separators=self.separators, allow_nan=False)

    def _render_call(self, call: ToolCall, tool: Optional[Tool]) -> str:
        args: Dict[str, Any] = call.arguments
        if tool is not None:
            args = _order_like(args, tool.parameters)
        if self.call_layout != "xml":
            return self._call_head(call.name) + self._dumps(args) + self._call_tail()
        props = tool.parameters.get("properties", {}) if tool is not None else {}
        parts = [self._call_head(call.name)]
        for key, value in args.items():
            raw = _is_raw_string(props.get(key)) if tool is not None else isinstance(value, str)
            text = value if raw and isinstance(value, str) else self._dumps(value)
            if self.param_end in text:
                raise ValueError(f"argument {key!r} of {call.name!r} contains {self.param_end!r}")
            parts.append(self.param_begin + key + self.param_name_end + text + self.param_end)
        parts.append(self.call_end)
        return "".join(parts)

    def _render_block(self, begin: Optional[str], body: str, end: Optional[str], what: str) -> str:
        assert begin is not None and end is not None
        if end in body:
            raise ValueError(f"the {what} text contains the end marker {end!r}")
        return begin + self.block_pad + body + self.block_pad + end

    def render(self, output: AgentOutput, *, tools: Optional[ToolsArg] = None) -> str:
        """The text of ``output`` as the model writes it (the family's whitespace, compact JSON
        arguments). With ``tools``, arguments are written in schema property order (which
        the grammar requires) and, in the xml layout, typed by the schema.

        Example:
            >>> print(AgentFormat(think_begin="<think>", think_end="</think>", think_suffix="\\n")
            ...       .render(AgentOutput(think="Easy.", text="Hello!")))
            <think>Easy.</think>
            Hello!
        """
        calls = output.tool_calls
        by_name = {t.name: t for t in tool_list(tools)}
        if len(calls) > 1 and not self.parallel_calls:
            raise ValueError(f"the {self.name} format makes at most one tool call per turn")
        parts: List[str] = []
        if output.think is not None:
            if not self.has_think:
                raise ValueError(f"the {self.name} format has no think block")
            parts.append(self._render_block(self.think_begin, output.think, self.think_end, "think"))
            parts.append(self.think_suffix)
        if output.text:
            parts.append(output.text)
            if calls or output.response is not None:
                parts.append(self.block_separator)
        if calls:
            rendered = self.call_separator.join(self._render_call(c, by_name.get(c.name)) for c in calls)
            parts.append(self.calls_begin + rendered + self.calls_end if self._wrapped else rendered)
        if output.response is not None:
            if not self.has_response:
                raise ValueError(f"the {self.name} format has no response block: put the text in `text`")
            if calls:
                if not self.response_after_calls:
                    raise ValueError(f"the {self.name} format has no response after tool calls")
                parts.append(self.block_separator)
            parts.append(
                self._render_block(self.response_begin, output.response, self.response_end, "response")
            )
        return "".join(parts)

    # ---- parsing -----------------------------------------------------------------------------

    def _expect(self, text: str, pos: int, marker: str, what: str) -> int:
        """The position after ``marker`` at ``pos``; whitespace around the marker may differ."""
        if text.startswith(marker, pos):
            return pos + len(marker)
        core = marker.strip(_WS)
        p = _skip_ws(text, pos)
        if not core:
            return p
        if text.startswith(core, p):
            p += len(core)
            return _skip_ws(text, p) if marker[-1] in _WS else p
        found = text[pos : pos + 20]
        raise FormatParseError(f"expected {what} {marker!r}, found {found!r}", offset=pos)

    def _json_at(self, text: str, pos: int, what: str) -> Tuple[Any, int]:
        pos = _skip_ws(text, pos)
        try:
            value, end = json.JSONDecoder().raw_decode(text, pos)
        except json.JSONDecodeError as e:
            raise FormatParseError(f"{what} is not valid JSON: {e.msg}", offset=e.pos) from None
        return value, end

    def _name_at(self, text: str, pos: int) -> Tuple[str, int]:
        end = text.find(self.name_end, pos)
        if end < 0:
            raise FormatParseError(f"a tool name that is not followed by {self.name_end!r}", offset=pos)
        return text[pos:end].strip(), end + len(self.name_end)

    def _parse_call(self, text: str, pos: int, tools: Optional[Dict[str, Tool]]) -> Tuple[ToolCall, int]:
        start = pos
        pos = self._expect(text, pos, self.call_begin, "the call marker") if self.call_begin else pos
        if self.call_layout == "json_object":
            obj, pos = self._json_at(text, pos, "the tool call")
            if not isinstance(obj, dict) or not isinstance(obj.get(self.name_key), str):
                raise FormatParseError(f"a tool call without a {self.name_key!r} string", offset=start)
            name, args = obj[self.name_key], obj.get(self.arguments_key, {})
            if not isinstance(args, dict):
                raise FormatParseError(f"the arguments of {name!r} are not a JSON object", offset=start)
            if set(obj) - {self.name_key, self.arguments_key}:
                extra = sorted(set(obj) - {self.name_key, self.arguments_key})
                raise FormatParseError(f"unexpected keys {extra} in a tool call", offset=start)
        elif self.call_layout == "name_then_json":
            name, pos = self._name_at(text, pos)
            args, pos = self._json_at(text, pos, f"the arguments of {name!r}")
            if not isinstance(args, dict):
                raise FormatParseError(f"the arguments of {name!r} are not a JSON object", offset=start)
        else:
            name, pos = self._name_at(text, pos)
            tool = tools.get(name) if tools is not None else None
            props = tool.parameters.get("properties", {}) if tool is not None else {}
            args = {}
            while text.startswith(self.param_begin, pos):
                key_end = text.find(self.param_name_end, pos + len(self.param_begin))
                if key_end < 0:
                    raise FormatParseError("a parameter name that is not closed", offset=pos)
                key = text[pos + len(self.param_begin) : key_end].strip()
                value_at = key_end + len(self.param_name_end)
                value_end = text.find(self.param_end, value_at)
                if value_end < 0:
                    raise FormatParseError(f"parameter {key!r} is not closed", offset=pos)
                raw = text[value_at:value_end]
                if tool is not None and _is_raw_string(props.get(key)):
                    args[key] = raw
                else:
                    try:
                        args[key] = json.loads(raw)
                    except ValueError:  # a string after all (validation, if any, reports it)
                        args[key] = raw
                pos = value_end + len(self.param_end)
        if not name:
            raise FormatParseError("a tool call without a name", offset=start)
        if self.call_end:
            pos = self._expect(text, pos, self.call_end, "the end of the call")
        return ToolCall(name, args), pos

    def _parse_calls(self, text: str, pos: int, tools: Optional[Dict[str, Tool]], out: List[ToolCall]) -> int:
        if not self._wrapped:
            call, pos = self._parse_call(text, pos, tools)
            out.append(call)
            return pos
        pos = self._expect(text, pos, self.calls_begin, "the tool calls marker")
        prefix = self._call_prefix().strip(_WS)
        while True:
            call, pos = self._parse_call(text, pos, tools)
            out.append(call)
            after = pos + len(self.call_separator) if text.startswith(self.call_separator, pos) else pos
            if prefix and text.startswith(prefix, _skip_ws(text, after)):
                pos = after
                continue
            break
        return self._expect(text, pos, self.calls_end, "the end of the tool calls") if self.calls_end else pos

    def parse(self, text: str, *, tools: Optional[ToolsArg] = None) -> AgentOutput:
        """The ``AgentOutput`` written in ``text``: the think block (only at the start), tool
        calls, the response block and the free text between them (each stripped; free-text
        pieces joined with newlines; absent blocks are ``None``). Whitespace around markers
        may differ from the format's; a trailing ``stop`` string is ignored.

        With ``tools`` every call must name one of them (else ``ToolError``) and its arguments
        are validated (``Tool.validate``; ``ToolError`` when invalid) and returned as validated.
        ``FormatParseError`` (with the offset) for text that does not follow the format.

        Example:
            >>> fmt = AgentFormat()
            >>> fmt.parse('Hi <tool_call>{"name": "now", "arguments": {}}</tool_call>').tool_calls
            [ToolCall(name='now', arguments={}, id=None)]
            >>> fmt.parse('<tool_call>{"name": "now", "argu')
            Traceback (most recent call last):
            ...
            agentgrammar.formats.format.FormatParseError: the tool call is not valid JSON: Unterminated string starting at (at offset 27)
        """
        if not isinstance(text, str):
            raise TypeError(f"parse takes a str, got {type(text).__name__}")
        for s in self.stop:
            if s and text.endswith(s):
                text = text[: -len(s)]
                break
        by_name = {t.name: t for t in tool_list(tools)} if tools is not None else None
        pos, think = 0, None
        if self.has_think:
            assert self.think_begin is not None and self.think_end is not None
            start = _skip_ws(text, 0)
            if text.startswith(self.think_begin, start):
                body = start + len(self.think_begin)
                end = text.find(self.think_end, body)
                if end < 0:
                    raise FormatParseError("the think block is not closed", offset=start)
                think = text[body:end].strip(_WS)
                pos = end + len(self.think_end)
                if self.think_suffix and text.startswith(self.think_suffix, pos):
                    pos += len(self.think_suffix)
        assert self.trigger is not None
        openers = [(self.trigger, "calls")]
        if self.response_begin is not None:
            openers.append((self.response_begin, "response"))
        segments: List[str] = []
        calls: List[ToolCall] = []
        response: Optional[str] = None
        while True:
            hits = [(text.find(m, pos), kind) for m, kind in openers]
            hits = [(i, kind) for i, kind in hits if i >= 0]
            if not hits:
                segments.append(text[pos:])
                break
            at, kind = min(hits)
            segments.append(text[pos:at])
            if kind == "calls":
                pos = self._parse_calls(text, at, by_name, calls)
            else:
                assert self.response_begin is not None and self.response_end is not None
                if response is not None:
                    raise FormatParseError("a second response block", offset=at)
                body = at + len(self.response_begin)
                end = text.find(self.response_end, body)
                if end < 0:
                    raise FormatParseError("the response block is not closed", offset=at)
                response = text[body:end].strip(_WS)
                pos = end + len(self.response_end)
        # Between blocks, the separators the format writes there are not free text.
        glue = {"", self.call_separator.strip(_WS), self.block_separator.strip(_WS)}
        pieces = [s.strip(_WS) for s in segments]
        free = "\n".join(p for i, p in enumerate(pieces) if p and (i == 0 or p not in glue))
        if by_name is not None:
            calls = [self._validated(c, by_name) for c in calls]
        return AgentOutput(think=think, tool_calls=calls, response=response, text=free or None)

    @staticmethod
    def _validated(call: ToolCall, tools: Dict[str, Tool]) -> ToolCall:
        tool = tools.get(call.name)
        if tool is None:
            known = ", ".join(repr(n) for n in tools) or "none"
            raise ToolError(f"the output calls unknown tool {call.name!r} (tools: {known})", tool=call.name)
        return ToolCall(call.name, tool.validate(call.arguments), call.id)

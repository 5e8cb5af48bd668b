"""``AgentFormat``: how one model family lays out reasoning, tool calls and the response, and
the request grammar, prompt block, renderer and parser that follow from it.

A format is data (marker strings and a few layout choices). From it:

* ``grammar(tools, tool_choice=..., parallel_tool_calls=..., reasoning=..., any_order=...)``
  builds the request grammar as a structural tag (``structural_tag(...)``, xgrammar's format)
  and compiles it with ``Grammar.from_structural_tag``. Each tool's calls (their begin strings
  and argument grammar) are built once per ``Tool`` object and cached, so a request only
  assembles cached pieces.
* ``render_tools(tools)`` writes the prompt block that describes the tools.
* ``render(output)`` writes an ``AgentOutput`` the way the model would (the family's chat
  template's form), and ``parse(text)`` reads one back, in every form the grammar accepts:
  ``parse(render(x)) == x`` for outputs whose texts have no surrounding whitespace (``parse``
  strips it).

Layouts of the arguments of one call (``call_layout``):

* ``"json_object"``: ``call_begin {"name": "NAME", "arguments": {...}} call_end`` (the two key
  names are ``name_key`` and ``arguments_key``; with ``id_key``, an optional call id member
  after the arguments, as Mistral writes ``"id": "abc123XYZ"``);
* ``"name_then_json"``: ``call_begin NAME name_end {...} call_end`` (with ``id_begin``, an
  optional call id after the name: ``NAME id_begin ID name_end``, as Mistral-Small-3.2 writes
  ``get_weather[CALL_ID]abc123XYZ[ARGS]``);
* ``"xml"``: ``call_begin NAME name_end`` then per argument ``param_begin KEY param_name_end
  VALUE param_end``, then ``call_end``. String values (every string schema) are written raw,
  everything else as JSON (see ``xml_params``), after ``param_name_end_json`` where the family
  marks them apart (DeepSeek-V3.2's ``string="false"``). ``name_end`` may be empty here: the
  name then ends where the first parameter or the call's end starts (GLM-4.5);
* ``"pythonic"``: ``call_begin NAME name_end`` then keyword arguments whose values are Python
  literals, ``city="Oslo", days=3``, then ``call_end`` (Llama-4's ``[get_weather(city="Oslo")]``
  with ``name_end="("`` and ``call_end=")"``; see ``pythonic``);
* ``"styled"``: ``call_begin NAME name_end`` then the arguments in one of xgrammar's XML
  parameter styles (``argument_style``: ``gemma``, ``cohere_xml``, ``kimi_k3_xml``,
  ``minimax_m3_xml``; see ``styled``), then ``call_end``. ``name_end`` may be empty (Gemma 4's
  ``<|tool_call>call:NAME{...}``). With ``call_index`` the head also holds the call's index,
  before or after the name (Cohere's ``id="0" name="NAME"``); the index is the call's id.

With ``call_id_form`` (``name_then_json``), the call's head holds its id in place of the bare
name (Kimi-K2's ``functions.NAME:IDX``, ``call_ids``): the grammar requires it (an index of up
to six digits), ``parse`` gives it
as ``ToolCall.id`` and ``render`` writes the call's id, or its position in the turn.

A call may open in several ways (``call_begin_variants``, paired with ``name_end_variants``:
gpt-oss puts the recipient in the role or the channel header; Llama-3 may write
``<|python_tag|>`` first); the grammar and ``parse`` accept every one, ``render`` writes the
canonical ``call_begin`` / ``name_end``. Calls are either triggered one by one by their own begin
marker (Hermes ``<tool_call>``) or grouped in one block (``calls_begin`` or one of
``calls_begin_variants``, calls separated by ``call_separator``, ``calls_end``; e.g. DeepSeek and
Mistral). A format with a response marker (``response_begin``) has no free text: the output is
the think block, then tool calls and/or the response. A format without one allows free text
(``AgentOutput.text``) before and between the calls, or, with ``calls_or_text``, a turn is
either the calls or free text that does not start like a call (Llama-3.1/3.2).

Argument JSON defaults to the family's own layout with no free whitespace
(``whitespace="compact"`` with ``separators``), so a weak model cannot loop in whitespace;
``whitespace="flexible"`` gives xgrammar's structural-tag JSON (any whitespace, optionally
capped by ``max_whitespace``). Either way objects are closed (no undeclared arguments) and
properties come in schema order, or in any order with ``grammar(..., any_order=True)``.

Special tokens: the engine never allows a vocabulary's special tokens inside text. A family's
markers are tokens of its vocabulary (Qwen's ``<tool_call>``, Llama-3's ``<|python_tag|>``, the
Harmony ``<|channel|>`` ... markers of gpt-oss, some of them stop tokens); ``markers()`` lists
every fixed string the grammar can emit, and ``token_markers.with_token_markers`` makes the
grammar write those that are tokens as exactly those tokens (what ``Agent`` does).

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
from typing import Any, Callable, List, Optional, Sequence, Tuple

from .._gc_pause import pauses_gc
from ..grammar import Grammar
from ..grammar import structural_tag as st
from ..registry import Tool, ToolCall
from .call_ids import check_call_id, id_in_head, new_call_id
from .call_pieces import build_call_tags
from .errors import FormatParseError, RenderError
from .output import AgentOutput
from .parsing import parse_output, starts_like_call
from .render import check_span, dumps, json_name_end, param_markers, render_call, render_output, text_markers
from .request import request_tag
from .tools import ToolsArg, cached_piece, resolve_choice, tool_list
from .tools_prompt import call_template, render_tools
from .validation import validate_format
from .warm_up import warm_up_grammar

__all__ = ["AgentFormat", "FormatParseError", "RenderError", "ToolsArg"]


_WS = " \t\r\n"


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

    Other forms the family writes (accepted by the grammar and ``parse``, never rendered):
    ``call_begin_variants`` (texts that may stand where ``call_begin`` does), each with the
    ``name_end_variants`` entry at the same position when that tuple is given (else
    ``name_end``), and ``calls_begin_variants`` (texts that may stand where ``calls_begin``
    does). ``calls_or_text``: a turn is either the tool calls (from its start) or free text,
    never both; the free text then cannot start like a call (its first character is neither
    whitespace nor the first character of a call's opener). Call ids (``json_object``):
    ``id_key`` names an optional member after the arguments that holds the call's id
    (``ToolCall.id``); ``id_begin`` (``name_then_json``) is the marker between the name and an
    optional id, which ``name_end`` ends; ``call_id_length`` makes ids that many ASCII letters
    and digits (Mistral's 9); ``call_id_form`` (``name_then_json``) is an id written in the
    head in place of the name, ``"functions.{name}:{index}"`` for Kimi-K2; ``new_call_id`` makes
    ids of the family's shape. ``param_name_end_json`` (``xml``): the name end before a value
    written as JSON, where it differs from the one before a raw string. ``argument_style``
    (``styled``): the arguments' style; ``argument_excludes``: texts its strings never hold
    (``gemma`` only); ``call_index`` (``styled``): ``"{index}SEP{name}"`` or
    ``"{name}SEP{index}"``, the head's text between ``call_begin`` and ``name_end``.
    ``response_first``: the response block opens the turn (after the think block), always, and
    the calls follow it (Kimi-K3). ``turn_end``: a text the grammar requires at the end of every
    turn, which ``render`` writes and ``parse`` requires and drops (Kimi-K3's
    ``<|close|>message<|sep|>``).

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
    call_begin_variants: Tuple[str, ...] = ()
    name_end_variants: Tuple[str, ...] = ()
    calls_begin_variants: Tuple[str, ...] = ()
    calls_or_text: bool = False
    id_key: Optional[str] = None
    call_id_length: Optional[int] = None
    id_begin: Optional[str] = None
    call_id_form: Optional[str] = None
    param_name_end_json: Optional[str] = None
    argument_style: Optional[str] = None
    argument_excludes: Tuple[str, ...] = ()
    call_index: Optional[str] = None
    response_first: bool = False
    turn_end: str = ""
    tools_prompt: Optional[Callable[[Sequence[Tool]], str]] = field(default=None, compare=False)

    def __post_init__(self) -> None:
        validate_format(self)

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

    def _heads(self) -> List[Tuple[str, str]]:
        """Every (call begin, name end) a call may open with, the canonical one first."""
        ends = self.name_end_variants or (self.name_end,) * len(self.call_begin_variants)
        return list(dict.fromkeys([(self.call_begin, self.name_end), *zip(self.call_begin_variants, ends)]))

    def _call_prefix(self, begin: Optional[str] = None) -> str:
        """What a single call starts with, before the tool name."""
        begin = self.call_begin if begin is None else begin
        return begin + self._json_call_prefix() if self.call_layout == "json_object" else begin

    def _opener(self) -> str:
        """What a group of calls starts with (the canonical form)."""
        return self.calls_begin or self._call_prefix()

    def _openers(self) -> List[str]:
        """Every text a group of calls may start with, the canonical one first."""
        if self._wrapped:
            return list(dict.fromkeys([self.calls_begin, *self.calls_begin_variants]))
        return list(dict.fromkeys(self._call_prefix(b) for b, _ in self._heads()))

    def triggers(self) -> List[str]:
        """The strings that start tool calling: ``trigger``, then every other opener of a call
        (a variant) that does not start with an earlier trigger.

        Example:
            >>> AgentFormat(call_begin="", call_end="", call_begin_variants=("<|python_tag|>",)).triggers()
            ['{"name": "', '<|python_tag|>{"name": "']
        """
        assert self.trigger is not None
        out = [self.trigger]
        for opener in self._openers():
            if not any(opener.startswith(t) for t in out):
                out.append(opener)
        return out

    def _call_head(self, name: str, begin: Optional[str] = None, name_end: Optional[str] = None) -> str:
        """A call's text up to its arguments (the canonical head unless a variant is given)."""
        begin = self.call_begin if begin is None else begin
        if self.call_layout == "json_object":
            item, key = self.separators
            return (
                begin
                + "{"
                + _json_str(self.name_key)
                + key
                + _json_str(name)
                + item
                + _json_str(self.arguments_key)
                + key
            )
        return begin + name + (self.name_end if name_end is None else name_end)

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
            self.call_begin_variants,
            self.name_end_variants,
            self.id_key,
            self.call_id_length,
            self.id_begin,
            self.call_id_form,
            self.param_name_end_json,
            self.argument_style,
            self.argument_excludes,
            self.call_index,
        )

    def markers(self) -> List[str]:
        """Every fixed marker string the format's grammar can emit (call-head and block-opener
        variants included; separators only when they are more than whitespace): check them
        against a vocabulary (``token_markers.marker_tokens``).

        Example:
            >>> AgentFormat(think_begin="<think>", think_end="</think>").markers()
            ['<think>', '</think>', '<tool_call>', '</tool_call>']
        """
        out = [
            self.think_begin,
            self.think_end,
            self.calls_begin,
            *self.calls_begin_variants,
            self.calls_end,
            self.call_begin,
            *self.call_begin_variants,
            self.call_end,
            self.response_begin,
            self.response_end,
            self.turn_end,
        ]
        if self.call_layout != "json_object":
            out += [self.name_end, *self.name_end_variants, self.id_begin]
        if self.call_layout == "xml":
            out += [self.param_begin, self.param_name_end, self.param_name_end_json, self.param_end]
        out += [s for s in (self.think_suffix, self.call_separator, self.block_separator) if s.strip(_WS)]
        return list(dict.fromkeys(m for m in out if m))

    def new_call_id(self, index: int, name: Optional[str] = None) -> str:
        """An id for the ``index``-th call of a conversation (a call to ``name``), of the
        family's shape and the same for the same index: ``call_id_form`` filled with the name
        and the index (Kimi-K2: ``functions.NAME:IDX``; it needs ``name``), else
        ``call_id_length`` letters and digits (Mistral: 9), else ``call_<index>``.

        Example:
            >>> AgentFormat().new_call_id(3)
            'call_3'
            >>> mistral = AgentFormat(call_begin="", call_end="", id_key="id", call_id_length=9)
            >>> [len(mistral.new_call_id(i)) for i in range(3)], mistral.new_call_id(0) != mistral.new_call_id(1)
            ([9, 9, 9], True)
            >>> AgentFormat(call_layout="name_then_json", call_begin="<c>", name_end="<a>",
            ...             call_id_form="functions.{name}:{index}").new_call_id(2, "now")
            'functions.now:2'
        """
        return new_call_id(self, index, name)

    def _id_head(self, call: ToolCall, position: int) -> str:
        """The id a ``call_id_form`` head holds: the call's own id (which must be of the form,
        for this call's name), else the id of its ``position`` in the turn, as the templates
        number calls without one."""
        return id_in_head(self, call, position)

    def _check_id(self, call_id: str) -> None:
        check_call_id(self, call_id)

    # ---- pieces (cached per Tool) ------------------------------------------------------------

    def _build_call_tags(self, tool: Tool, any_order: bool = False) -> Tuple[st.Tag, ...]:
        return build_call_tags(self, tool, any_order)

    def call_tags(self, tool: Tool, *, any_order: bool = False) -> Tuple[st.Tag, ...]:
        """The structural tags of one call of ``tool``, one per way a call may open (the
        canonical one first); built once per tool, layout and ``any_order``, then cached.

        Example:
            >>> fmt = AgentFormat(call_begin="", call_end="", call_begin_variants=("<|python_tag|>",))
            >>> [t.begin for t in fmt.call_tags(Tool("now", "", {"type": "object", "properties": {}}))]
            ['{"name": "now", "arguments": ', '<|python_tag|>{"name": "now", "arguments": ']
        """
        key = (*self._layout_key(), bool(any_order))
        return cached_piece(tool, key, lambda: self._build_call_tags(tool, bool(any_order)))

    def call_tag(self, tool: Tool) -> st.Tag:
        """The structural tag of one call of ``tool`` in the canonical form (built once per tool
        and layout, then cached).

        Example:
            >>> tool = Tool("now", "", {"type": "object", "properties": {}})
            >>> AgentFormat().call_tag(tool).begin
            '<tool_call>{"name": "now", "arguments": '
        """
        return self.call_tags(tool)[0]

    # ---- the request grammar -----------------------------------------------------------------

    def structural_tag(
        self,
        tools: Optional[ToolsArg],
        *,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        reasoning: str = "enabled",
        any_order: bool = False,
        reasoning_budget: Optional[int] = None,
    ) -> st.StructuralTag:
        """The request's structural tag (see ``grammar``), for inspection or for xgrammar.

        Example:
            >>> tag = AgentFormat().structural_tag([], tool_choice="none")
            >>> tag.format.type, tag.format.excludes
            ('any_text', ['<tool_call>'])
        """
        selected, mode = resolve_choice(tool_list(tools), tool_choice)
        parallel = bool(parallel_tool_calls) and self.parallel_calls
        return request_tag(
            self,
            selected,
            mode,
            parallel=parallel,
            reasoning=reasoning,
            any_order=bool(any_order),
            reasoning_budget=reasoning_budget,
        )

    @pauses_gc
    def grammar(
        self,
        tools: Optional[ToolsArg],
        *,
        tool_choice: Any = "auto",
        parallel_tool_calls: bool = True,
        reasoning: str = "enabled",
        any_order: bool = False,
        reasoning_budget: Optional[int] = None,
    ) -> Grammar:
        """The grammar of one assistant turn with these tools.

        ``tools``: a ``ToolRegistry``, a ``Tool``, or an iterable of ``Tool`` s and OpenAI tool
        dicts. ``tool_choice``: ``"auto"`` (calls optional), ``"none"`` (no calls: free text that
        never contains a trigger, or just the response), ``"required"`` (at least one call;
        in a free-text format the output starts with it), a tool name or ``{"type":
        "function", "function": {"name": ...}}`` (exactly one call to that tool, after the
        think block if any, and nothing else: no text, no response, no further call), or
        ``{"type": "allowed_tools", "allowed_tools": {"mode": "auto" | "required", "tools":
        [...]}}``. ``parallel_tool_calls=False``: at most one call (nothing after it in a
        free-text format). ``reasoning``: ``"enabled"`` (the think block first, required),
        ``"disabled"`` (none) or ``"auto"`` (optional); ignored by formats without one.
        ``any_order=True``: the arguments of a call (and of nested objects) in any order rather
        than the schema's. Unknown tool names are a ``ToolError``. ``reasoning_budget=N``:
        at most N tokens in the think block, as ``any_text.max_tokens`` in the tag; the grammar
        does not count tokens, so give the matchers ``formats.reasoning_budget(fmt, N)``
        (``GrammarLogitsProcessor(token_budgets=...)``).

        Example:
            >>> from agentgrammar import Tool
            >>> now = Tool("now", "The time.", {"type": "object", "properties": {}})
            >>> g = AgentFormat().grammar([now], tool_choice="required")
            >>> g.accepts('<tool_call>{"name": "now", "arguments": {}}</tool_call>'), g.accepts("Hi")
            (True, False)
        """
        tag = self.structural_tag(
            tools,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            reasoning=reasoning,
            any_order=any_order,
            reasoning_budget=reasoning_budget,
        )
        return Grammar.from_structural_tag(tag)

    def warm_up_grammar(self) -> Grammar:
        """This format's request grammar over a tool with an argument of every JSON type
        (``formats.warm_up``): give it to ``Compiler.warm_up`` before the first request, so
        that the states every request shares (the think block, the free text, the call
        markers, argument strings and numbers) are classified in the background first.

        Example:
            >>> AgentFormat().warm_up_grammar().accepts('<tool_call>{"name": "warm_up", "arguments": {}}</tool_call>')
            True
        """
        return warm_up_grammar(self)

    # ---- prompts -----------------------------------------------------------------------------

    def call_template(self) -> str:
        """A schematic call, for instructions in prompts.

        Example:
            >>> AgentFormat().call_template()
            '<tool_call>{"name": <tool-name>, "arguments": <arguments-json-object>}</tool_call>'
        """
        return call_template(self)

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
        return render_tools(self, tools)

    # ---- rendering ---------------------------------------------------------------------------

    def _dumps(self, value: Any) -> str:
        return dumps(self, value)

    def _text_markers(self) -> List[Tuple[str, str]]:
        """The markers free text never holds, each with what ``parse`` would read it as: the
        triggers and every call opening (what the grammar's free text excludes), the think
        markers and the response's start."""
        return text_markers(self)

    def _check_span(
        self, text: str, start: int, end: int, markers: Sequence[Tuple[str, str]], what: str
    ) -> None:
        """``RenderError`` when one of ``markers`` occurs in ``text`` overlapping ``[start,
        end)``: inside the span, or across one of its edges (the span's end and the marker
        after it spelling a marker early)."""
        check_span(self, text, start, end, markers, what)

    def _render_call(self, call: ToolCall, tool: Optional[Tool], position: int = 0) -> str:
        return render_call(self, call, tool, position)

    @property
    def _json_name_end(self) -> str:
        """The xml layout's name end before a value written as JSON."""
        return json_name_end(self)

    def _param_markers(self) -> Tuple[str, ...]:
        """The xml layout's markers, the parameter ones first (what a parameter name never holds)."""
        return param_markers(self)

    def render(self, output: AgentOutput, *, tools: Optional[ToolsArg] = None) -> str:
        """The text of ``output`` as the model writes it (the family's chat template's form:
        its whitespace, its JSON separators, the canonical call head). With ``tools``, arguments
        are written in schema property order (nested objects too; the grammar requires it unless
        ``any_order``) and, in the xml layout, typed by the schema. A call's ``id`` is written
        by formats with an ``id_key`` or an ``id_begin``.

        ``parse(render(x)) == x`` (for texts without surrounding whitespace) or a
        ``RenderError`` (a ``ValueError``): free text (only in formats without a response
        block) never holds a trigger, a call opening or a think marker (nor ends in a ``stop``
        string when it ends the turn), the think and response texts never hold their end marker, tool names are valid
        names, and xml parameter names and raw values never hold the layout's markers.

        Example:
            >>> print(AgentFormat(think_begin="<think>", think_end="</think>", think_suffix="\\n")
            ...       .render(AgentOutput(think="Easy.", text="Hello!")))
            <think>Easy.</think>
            Hello!
            >>> AgentFormat().render(AgentOutput(text="Say <tool_call> to call"))
            Traceback (most recent call last):
            ...
            agentgrammar.formats.errors.RenderError: the free text holds '<tool_call>' (at offset 4), which the custom format reads as the start of tool calls: it cannot be written in the free text
        """
        return render_output(self, output, tools)

    # ---- parsing -----------------------------------------------------------------------------

    def _starts_like_call(self, text: str, pos: int) -> bool:
        """Whether the text at ``pos`` (after whitespace) opens tool calls: one of the openers,
        or, for calls that open with their JSON object, ``{`` then the name key."""
        return starts_like_call(self, text, pos)

    def parse(self, text: str, *, tools: Optional[ToolsArg] = None) -> AgentOutput:
        """The ``AgentOutput`` written in ``text``: the think block (only at the start), tool
        calls, the response block and the free text between them (each stripped; free-text
        pieces joined with newlines; absent blocks are ``None``). Every form the grammar accepts
        is read (call-head variants included); whitespace around markers may differ from the
        format's; a trailing ``stop`` string is ignored. A key given twice in a call's JSON (at
        any depth), or a parameter given twice, is a ``FormatParseError`` naming it.

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
            agentgrammar.formats.errors.FormatParseError: the tool call is not valid JSON: Unterminated string starting at (at offset 27)
        """
        return parse_output(self, text, tools)

"""Preset ``AgentFormat`` s for the model families people serve, and their tool prompts. Each
preset renders an assistant turn as the family's official chat template does, and its grammar
and parser also accept the other forms the family's models and servers write.

========================  =================================================================
``"hermes"``              Qwen-2.5 / Hermes: ``<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>``
``"qwen3"``               ``<think>...</think>\\n\\n`` then the Hermes calls
``"qwen3_coder"``         Qwen3-Coder XML calls: ``<function=NAME><parameter=KEY>VALUE</parameter>``
``"llama3"``              Llama-3.1/3.2: one bare ``{"name": ..., "parameters": ...}`` (``<|python_tag|>``
                          optional before it), or text
``"deepseek_r1"``         ``<think>`` then ``<｜tool▁calls▁begin｜>`` ... calls with fenced JSON
``"deepseek_v3_1"``       DeepSeek-V3.1: ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}``
                          ``<｜tool▁call▁end｜>...<｜tool▁calls▁end｜>``, ``<think>`` with ``thinking``
``"glm4"``                GLM-4.6: ``<tool_call>NAME\\n<arg_key>K</arg_key>\\n<arg_value>V</arg_value>\\n</tool_call>``
``"mistral"``             Mistral-Nemo (v3-tekken): ``[TOOL_CALLS][{"name": ..., "arguments": ..., "id": ...}]``
``"mistral_v7"``          Mistral-Small-3.1 (v7): the same after ``[TOOL_CALLS] `` (a space)
``"mistral_small_3_2"``   Mistral-Small-3.2: ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}`` per call
``"harmony"``             gpt-oss: analysis, a ``functions.NAME`` commentary call, or final
``"tags"``                plain ``<think>``, ``<tool_call>{...}</tool_call>``, ``<response>``
========================  =================================================================

Markers that are tokens of the family's own vocabulary (``<tool_call>``, ``<|python_tag|>``, the
Harmony markers, DeepSeek's ``<｜...｜>`` markers, Mistral's ``[TOOL_CALLS]``) are written as
exactly those tokens by the grammar of ``token_markers.with_token_markers(fmt, markers)`` over
``vocab.with_token_markers(markers)`` (``agentgrammar.Agent`` does this). Other special tokens
stay out of every grammar.

Example:
    >>> from agentgrammar.formats import get, names
    >>> "qwen3" in names()
    True
    >>> get("qwen3").think_begin, get("qwen3").trigger
    ('<think>', '<tool_call>')
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Sequence

from ..registry import Tool
from ..registry.openai import tool_to_openai
from .format import AgentFormat
from .xml_params import is_raw_string

__all__ = ["get", "names"]


def _openai_json(tool: Tool, **kw: Any) -> str:
    return json.dumps(tool_to_openai(tool), ensure_ascii=False, **kw)


# --------------------------------------------------------------------------- tool prompts


def hermes_tools(tools: Sequence[Tool]) -> str:
    """The Qwen-2.5 / Hermes tools block (as the Qwen chat template writes it).

    Example:
        >>> print(hermes_tools([]).splitlines()[0])
        # Tools
    """
    lines = "\n".join(_openai_json(t) for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n"
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def llama3_tools(tools: Sequence[Tool]) -> str:
    """The Llama-3.1/3.2 JSON tool-calling instructions, as their chat templates put them in the
    first user message (the templates' own wording and spacing).

    Example:
        >>> llama3_tools([]).startswith("Given the following functions")
        True
    """
    defs = "".join(_openai_json(t, indent=4) + "\n\n" for t in tools)
    return (
        "Given the following functions, please respond with a JSON for a function call with its "
        "proper arguments that best answers the given prompt.\n\n"
        'Respond in the format {"name": function name, "parameters": dictionary of argument name '
        "and its value}.Do not use variables.\n\n"
        f"{defs}"
    )


def deepseek_tools(tools: Sequence[Tool]) -> str:
    """DeepSeek's tools section (``## Tools`` / ``### Function``, a fenced JSON per tool).

    Example:
        >>> deepseek_tools([]).startswith("## Tools")
        True
    """
    parts = [
        "## Tools\n\n### Function\n\nYou have the following functions available:\n",
    ]
    for t in tools:
        fn = tool_to_openai(t)["function"]
        parts.append(f"- `{t.name}`:\n```json\n{json.dumps(fn, ensure_ascii=False)}\n```")
    parts.append(
        "\nTo call functions, write <｜tool▁calls▁begin｜>, then for each call "
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\\n```json\\nARGUMENTS\\n```<｜tool▁call▁end｜> "
        "(calls separated by a newline), then <｜tool▁calls▁end｜>."
    )
    return "\n".join(parts)


def deepseek_v3_1_tools(tools: Sequence[Tool]) -> str:
    """DeepSeek-V3.1's tool description, as its model card lays it out (the chat template writes
    none: the caller puts this after the system prompt, which is what ``Agent`` does with a
    template that leaves the tools out). Tools are joined by a blank line.

    Example:
        >>> from agentgrammar import Tool
        >>> print(deepseek_v3_1_tools([Tool("now", "The time.", {"type": "object", "properties": {}})]).split("IMPORTANT")[0])
        ## Tools
        You have access to the following tools:
        <BLANKLINE>
        ### now
        Description: The time.
        <BLANKLINE>
        Parameters: {"type": "object", "properties": {}}
        <BLANKLINE>
        <BLANKLINE>
    """
    blocks = "\n\n".join(
        f"### {t.name}\nDescription: {t.description}\n\nParameters: {json.dumps(t.parameters, ensure_ascii=False)}"
        for t in tools
    )
    return (
        f"## Tools\nYou have access to the following tools:\n\n{blocks}\n\n"
        "IMPORTANT: ALWAYS adhere to this exact format for tool use:\n"
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>tool_call_name<｜tool▁sep｜>tool_call_arguments"
        "<｜tool▁call▁end｜>{additional_tool_calls}<｜tool▁calls▁end｜>\n\n"
        "Where:\n"
        "- `tool_call_name` must be an exact match to one of the available tools\n"
        "- `tool_call_arguments` must be valid JSON that strictly follows the tool's Parameters Schema\n"
        "- For multiple tool calls, chain them directly without separators or spaces"
    )


def glm4_tools(tools: Sequence[Tool]) -> str:
    """The GLM-4.6 tools section, as its chat template writes it in the system message.

    Example:
        >>> print(glm4_tools([]).splitlines()[-1])
        </tool_call>
    """
    lines = "".join(_openai_json(t) + "\n" for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{lines}</tools>\n\n"
        "For each function call, output the function name and arguments within the following XML format:\n"
        "<tool_call>{function-name}\n<arg_key>{arg-key-1}</arg_key>\n<arg_value>{arg-value-1}</arg_value>\n"
        "<arg_key>{arg-key-2}</arg_key>\n<arg_value>{arg-value-2}</arg_value>\n...\n</tool_call>"
    )


def mistral_tools(tools: Sequence[Tool]) -> str:
    """Mistral's ``[AVAILABLE_TOOLS]`` block.

    Example:
        >>> mistral_tools([])
        '[AVAILABLE_TOOLS][][/AVAILABLE_TOOLS]'
    """
    return (
        "[AVAILABLE_TOOLS]"
        + json.dumps([tool_to_openai(t) for t in tools], ensure_ascii=False)
        + "[/AVAILABLE_TOOLS]"
    )


def mistral_v7_tools(tools: Sequence[Tool]) -> str:
    """Mistral-Small-3.1's (v7) ``[AVAILABLE_TOOLS]`` block: a space before the list.

    Example:
        >>> mistral_v7_tools([])
        '[AVAILABLE_TOOLS] [][/AVAILABLE_TOOLS]'
    """
    return mistral_tools(tools).replace("[AVAILABLE_TOOLS]", "[AVAILABLE_TOOLS] ", 1)


def _ts_type(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> str:
    """A TypeScript-like type for a JSON Schema, as Harmony writes tool parameters."""
    if not isinstance(schema, Mapping) or depth > 8:
        return "any"
    if "$ref" in schema and isinstance(schema["$ref"], str):
        target = defs.get(schema["$ref"].rsplit("/", 1)[-1])
        return _ts_type(target, defs, depth + 1) if target is not None else "any"
    if "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(_ts_type(s, defs, depth + 1) for s in schema[key])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(_ts_type({**schema, "type": k}, defs, depth + 1) for k in kind)
    if kind in ("integer", "number"):
        return "number"
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind == "array":
        item = _ts_type(schema.get("items"), defs, depth + 1)
        return f"Array<{item}>"
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        if not props:
            return "object"
        required = set(schema.get("required", ()))
        fields = ", ".join(
            f"{k}{'' if k in required else '?'}: {_ts_type(v, defs, depth + 1)}" for k, v in props.items()
        )
        return "{ " + fields + " }"
    return "any"


def harmony_tools(tools: Sequence[Tool]) -> str:
    """The Harmony (gpt-oss) developer-message tools section: a TypeScript-like ``functions``
    namespace.

    Example:
        >>> from agentgrammar import Tool
        >>> print(harmony_tools([Tool("now", "The time.", {"type": "object", "properties": {}})]))
        # Tools
        <BLANKLINE>
        ## functions
        <BLANKLINE>
        namespace functions {
        <BLANKLINE>
        // The time.
        type now = () => any;
        <BLANKLINE>
        } // namespace functions
    """
    out = ["# Tools\n\n## functions\n\nnamespace functions {\n"]
    for t in tools:
        schema = t.parameters
        defs: Dict[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}
        lines = [f"// {line}" for line in t.description.splitlines()] if t.description else []
        props = schema.get("properties") or {}
        if not props:
            lines.append(f"type {t.name} = () => any;")
        else:
            required = set(schema.get("required", ()))
            lines.append(f"type {t.name} = (_: {{")
            for key, sub in props.items():
                if isinstance(sub, Mapping) and sub.get("description"):
                    lines.extend(f"// {line}" for line in str(sub["description"]).splitlines())
                opt = "" if key in required else "?"
                default = (
                    f", // default: {json.dumps(sub['default'], ensure_ascii=False)}"
                    if isinstance(sub, Mapping) and "default" in sub
                    else ","
                )
                lines.append(f"{key}{opt}: {_ts_type(sub, defs)}{default}")
            lines.append("}) => any;")
        out.append("\n".join(lines) + "\n")
    out.append("} // namespace functions")
    return "\n".join(out)


def qwen3_coder_tools(tools: Sequence[Tool]) -> str:
    """The Qwen3-Coder tools section (XML function definitions and the call layout).

    Example:
        >>> qwen3_coder_tools([]).splitlines()[2]
        'You have access to the following functions:'
    """
    parts = ["# Tools\n\nYou have access to the following functions:\n\n<tools>"]
    for t in tools:
        parts.append(f"<function>\n<name>{t.name}</name>\n<description>{t.description}</description>")
        parts.append("<parameters>")
        for key, sub in (t.parameters.get("properties") or {}).items():
            kind = sub.get("type") if isinstance(sub, Mapping) else None
            kind = kind or ("string" if is_raw_string(sub) else "any")
            kind = kind if isinstance(kind, str) else json.dumps(kind)
            parts.append(f"<parameter>\n<name>{key}</name>\n<type>{kind}</type>")
            if isinstance(sub, Mapping) and sub.get("description"):
                parts.append(f"<description>{sub['description']}</description>")
            parts.append("</parameter>")
        required = t.parameters.get("required")
        if required:
            parts.append(f"<required>{json.dumps(required)}</required>")
        parts.append("</parameters>\n</function>")
    parts.append("</tools>\n")
    parts.append(
        "If you choose to call a function ONLY reply in the following format with NO suffix:\n\n"
        "<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n"
        "</parameter>\n</function>\n</tool_call>"
    )
    return "\n".join(parts)


def tags_tools(tools: Sequence[Tool]) -> str:
    """Tools and layout instructions for the plain ``tags`` format.

    Example:
        >>> "<response>" in tags_tools([])
        True
    """
    lines = "\n".join(_openai_json(t) for t in tools)
    return (
        "# Tools\n\nYou may call these tools; their definitions, one JSON object per line:\n"
        f"<tools>\n{lines}\n</tools>\n\n"
        "Answer in this layout: first think inside <think>...</think>; then either call tools, "
        'one per line as <tool_call>{"name": <tool-name>, "arguments": <arguments-json-object>}'
        "</tool_call>, or give your answer inside <response>...</response>."
    )


# --------------------------------------------------------------------------- presets

_HERMES = dict(
    call_begin="<tool_call>\n",
    call_end="\n</tool_call>",
    trigger="<tool_call>",
    call_separator="\n",
    block_separator="\n",
    stop=("<|im_end|>",),
    tools_prompt=hermes_tools,
)

# Mistral's JSON calls (Nemo v3-tekken, Small-3.1 v7): "[TOOL_CALLS]" then a JSON list of
# {"name", "arguments", "id"} objects, the id 9 letters and digits (the templates raise for
# others). Either spacing after [TOOL_CALLS] is accepted; each preset renders its own.
_MISTRAL_COMMON = dict(
    calls_end="]",
    trigger="[TOOL_CALLS]",
    call_begin="",
    call_end="",
    call_separator=", ",
    block_separator="",
    id_key="id",
    call_id_length=9,
    stop=("</s>",),
    tools_prompt=mistral_tools,
)
_MISTRAL = dict(calls_begin_variants=("[TOOL_CALLS] [",), **_MISTRAL_COMMON)
_MISTRAL_V7 = dict(calls_begin_variants=("[TOOL_CALLS][",), **_MISTRAL_COMMON)

_FACTORIES: Dict[str, Callable[[], AgentFormat]] = {
    "hermes": lambda: AgentFormat(name="hermes", **_HERMES),  # type: ignore[arg-type]
    "qwen3": lambda: AgentFormat(
        name="qwen3",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        block_pad="\n",
        **_HERMES,  # type: ignore[arg-type]
    ),
    "qwen3_coder": lambda: AgentFormat(
        name="qwen3_coder",
        call_layout="xml",
        call_begin="<tool_call>\n<function=",
        name_end=">\n",
        param_begin="<parameter=",
        param_name_end=">\n",
        param_end="\n</parameter>\n",
        call_end="</function>\n</tool_call>",
        trigger="<tool_call>",
        call_separator="\n",
        block_separator="\n",
        stop=("<|im_end|>",),
        tools_prompt=qwen3_coder_tools,
    ),
    # Llama-3.1/3.2 (both templates render the same): one call per message (the templates raise
    # for more), as bare JSON; models also write <|python_tag|> first (its ipython mode).
    "llama3": lambda: AgentFormat(
        name="llama3",
        call_begin="",
        call_end="",
        call_begin_variants=("<|python_tag|>",),
        arguments_key="parameters",
        parallel_calls=False,
        calls_or_text=True,
        block_separator="",
        stop=("<|eom_id|>", "<|eot_id|>"),
        tools_prompt=llama3_tools,
    ),
    "deepseek_r1": lambda: AgentFormat(
        name="deepseek_r1",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n\n",
        block_pad="\n",
        call_layout="name_then_json",
        calls_begin="<｜tool▁calls▁begin｜>",
        calls_end="<｜tool▁calls▁end｜>",
        call_begin="<｜tool▁call▁begin｜>function<｜tool▁sep｜>",
        name_end="\n```json\n",
        call_end="\n```<｜tool▁call▁end｜>",
        call_separator="\n",
        block_separator="",
        stop=("<｜end▁of▁sentence｜>",),
        tools_prompt=deepseek_tools,
    ),
    # DeepSeek-V3.1 (its official template): after "<｜Assistant｜></think>" (thinking off) the
    # calls, chained with no separator, then <｜end▁of▁sentence｜>; text before them is the
    # message's content, glued on. With thinking on, the generation prompt opens "<think>": the
    # model writes its reasoning, "</think>", then the same calls (the template keeps no
    # reasoning in history).
    "deepseek_v3_1": lambda: AgentFormat(
        name="deepseek_v3_1",
        think_begin="<think>",
        think_end="</think>",
        call_layout="name_then_json",
        calls_begin="<｜tool▁calls▁begin｜>",
        calls_end="<｜tool▁calls▁end｜>",
        call_begin="<｜tool▁call▁begin｜>",
        name_end="<｜tool▁sep｜>",
        call_end="<｜tool▁call▁end｜>",
        call_separator="",
        block_separator="",
        stop=("<｜end▁of▁sentence｜>",),
        tools_prompt=deepseek_v3_1_tools,
    ),
    # GLM-4.6 (its template's form): after "<|assistant|>" the model writes
    # "\n<think>...</think>" (the prompt holds an empty one with enable_thinking=False), then
    # "\n" and text and/or calls, each "\n<tool_call>NAME\n" with one "<arg_key>K</arg_key>\n
    # <arg_value>V</arg_value>\n" per argument: strings raw, other values JSON (tojson). The
    # turn ends where the next role marker starts.
    "glm4": lambda: AgentFormat(
        name="glm4",
        think_begin="\n<think>",
        think_end="</think>",
        think_suffix="\n",
        call_layout="xml",
        call_begin="<tool_call>",
        name_end="\n",
        param_begin="<arg_key>",
        param_name_end="</arg_key>\n<arg_value>",
        param_end="</arg_value>\n",
        call_end="</tool_call>",
        call_separator="\n",
        block_separator="\n",
        stop=("<|observation|>", "<|user|>"),
        tools_prompt=glm4_tools,
    ),
    # Mistral-Nemo (v3-tekken): "[TOOL_CALLS][" then the calls, each with its 9-character id.
    "mistral": lambda: AgentFormat(name="mistral", calls_begin="[TOOL_CALLS][", **_MISTRAL),  # type: ignore[arg-type]
    # Mistral-Small-3.1 (v7): a space after [TOOL_CALLS] (and after [AVAILABLE_TOOLS]).
    "mistral_v7": lambda: AgentFormat(
        name="mistral_v7",
        calls_begin="[TOOL_CALLS] [",
        **{**_MISTRAL_V7, "tools_prompt": mistral_v7_tools},  # type: ignore[arg-type]
    ),
    # Mistral-Small-3.2's template writes each call as [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...},
    # back to back; the id (9 letters and digits) is optional to the grammar.
    "mistral_small_3_2": lambda: AgentFormat(
        name="mistral_small_3_2",
        call_layout="name_then_json",
        call_begin="[TOOL_CALLS]",
        name_end="[ARGS]",
        id_begin="[CALL_ID]",
        call_id_length=9,
        call_end="",
        call_separator="",
        block_separator="",
        stop=("</s>",),
        tools_prompt=mistral_tools,
    ),
    # gpt-oss after its generation prompt "<|start|>assistant": an optional analysis message,
    # then one call or the final answer. The template puts the recipient in the role header
    # (" to=functions.NAME<|channel|>commentary json"); openai-harmony writes it in the channel
    # header ("<|channel|>commentary to=functions.NAME <|constrain|>json"); xgrammar's harmony tag
    # also has "<|constrain|>json" without the space. Every such header is accepted.
    "harmony": lambda: AgentFormat(
        name="harmony",
        think_begin="<|channel|>analysis<|message|>",
        think_end="<|end|>",
        think_suffix="<|start|>assistant",
        call_layout="name_then_json",
        call_begin=" to=functions.",
        name_end="<|channel|>commentary json<|message|>",
        call_begin_variants=(
            " to=functions.",
            " to=functions.",
            "<|channel|>commentary to=functions.",
            "<|channel|>commentary to=functions.",
            "<|channel|>commentary to=functions.",
        ),
        name_end_variants=(
            "<|channel|>commentary <|constrain|>json<|message|>",
            "<|channel|>commentary<|constrain|>json<|message|>",
            " <|constrain|>json<|message|>",
            "<|constrain|>json<|message|>",
            " json<|message|>",
        ),
        call_end="<|call|>",
        call_separator="<|start|>assistant",
        parallel_calls=False,
        response_begin="<|channel|>final<|message|>",
        response_end="<|return|>",
        response_after_calls=False,
        block_separator="<|start|>assistant",
        # The template writes the arguments with tojson ({"city": "Oslo"}); the models and
        # openai-harmony also write them compact ({"city":"Oslo"}): both, and no more than
        # one whitespace character anywhere.
        whitespace="flexible",
        max_whitespace=1,
        tools_prompt=harmony_tools,
    ),
    "tags": lambda: AgentFormat(
        name="tags",
        think_begin="<think>",
        think_end="</think>",
        think_suffix="\n",
        call_begin="<tool_call>",
        call_end="</tool_call>",
        call_separator="\n",
        response_begin="<response>",
        response_end="</response>",
        block_separator="\n",
        tools_prompt=tags_tools,
    ),
}

_PRESETS: Dict[str, AgentFormat] = {}


def names() -> List[str]:
    """The preset names.

    Example:
        >>> names()[:3]
        ['hermes', 'qwen3', 'qwen3_coder']
    """
    return list(_FACTORIES)


def get(name: str) -> AgentFormat:
    """The preset format ``name`` (the same object on every call; formats are immutable, and
    ``dataclasses.replace(get(name), ...)`` makes a variant). ``ValueError`` for an unknown name.

    Example:
        >>> get("llama3").arguments_key
        'parameters'
    """
    found = _PRESETS.get(name)
    if found is None:
        factory = _FACTORIES.get(name)
        if factory is None:
            raise ValueError(f"unknown format {name!r}; the presets are {', '.join(map(repr, _FACTORIES))}")
        found = _PRESETS[name] = factory()
    return found

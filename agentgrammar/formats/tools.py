"""Which tools a request offers: tools in every accepted form, ``tool_choice``, and the cache of
per-tool grammar pieces.

Example:
    >>> from agentgrammar import Tool
    >>> tools = [Tool("a", "", {"type": "object"}), Tool("b", "", {"type": "object"})]
    >>> [t.name for t in resolve_choice(tools, "b")[0]], resolve_choice(tools, "b")[1]
    (['b'], 'named')
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import ToolError
from ..grammar.memo import IdentityMemo
from ..registry import Tool, ToolRegistry
from ..registry.openai import tool_from_openai

__all__ = ["ToolsArg", "as_tool", "cached_piece", "cached_pieces", "resolve_choice", "tool_list"]

ToolsArg = Union[ToolRegistry, Tool, Iterable[Union[Tool, Mapping[str, Any]]]]
"""What ``AgentFormat`` methods take as tools: a registry, a tool, or an iterable of ``Tool`` s
and OpenAI tool dicts."""

# --------------------------------------------------------------------------- per-tool caches

# Tool -> {layout id (``_layout_id``) -> piece}, by identity, bounded (``Compiler.clear_cache``
# empties it).
_PIECES: "IdentityMemo[Dict[int, Any]]" = IdentityMemo("tool pieces", limit=16384)
# OpenAI tool dicts (as canonical JSON) -> Tool, so that dict tools hit the piece cache too.
_OPENAI_TOOLS: Dict[str, Tool] = {}
_OPENAI_TOOLS_LIMIT = 4096


# Layout key -> a small number, so that a tool's pieces are found without hashing the
# key's dozen fields again for each of a request's tools.
_LAYOUT_IDS: Dict[Tuple[Any, ...], int] = {}


def _layout_id(key: Tuple[Any, ...]) -> int:
    found = _LAYOUT_IDS.get(key)
    if found is None:
        found = _LAYOUT_IDS.setdefault(key, len(_LAYOUT_IDS))
    return found


def cached_piece(tool: Tool, key: Tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """The piece of ``tool`` for layout ``key``: built once by ``build``, then kept."""
    return _cached_piece(tool, _layout_id(key), build)


def _cached_piece(
    tool: Tool, key: int, build: Callable[[], Any], pieces: Optional[Dict[int, Any]] = None
) -> Any:
    """``pieces``: the tool's entry, when the caller has looked it up already."""
    if pieces is None:
        pieces = _PIECES.get(tool)
        if pieces is None:
            pieces = _PIECES.put(tool, {})
    found = pieces.get(key)
    if found is None:
        found = pieces[key] = build()
    return found


def cached_pieces(tools: Sequence[Tool], key: Tuple[Any, ...], build: Callable[[Tool], Any]) -> List[Any]:
    """``cached_piece`` of each tool (one request's worth: found in one pass)."""
    layout = _layout_id(key)
    entries = _PIECES.get_many(tools)
    out = [None if p is None else p.get(layout) for p in entries]
    for i, found in enumerate(out):
        if found is None:
            tool = tools[i]
            out[i] = _cached_piece(tool, layout, lambda: build(tool), entries[i])  # noqa: B023 (called at once)
    return out


def as_tool(item: Any) -> Tool:
    if isinstance(item, Tool):
        return item
    if isinstance(item, Mapping):
        try:
            key = json.dumps(item, sort_keys=True, default=repr)
        except (TypeError, ValueError):
            return tool_from_openai(item)
        tool = _OPENAI_TOOLS.get(key)
        if tool is None:
            tool = tool_from_openai(item)
            if len(_OPENAI_TOOLS) >= _OPENAI_TOOLS_LIMIT:
                _OPENAI_TOOLS.clear()
            _OPENAI_TOOLS[key] = tool
        return tool
    raise ToolError(f"expected a Tool or an OpenAI tool dict, got {type(item).__name__}")


def tool_list(tools: Optional[ToolsArg]) -> List[Tool]:
    """The tools of a registry, a tool, or an iterable of tools / OpenAI dicts; unique names."""
    if tools is None:
        return []
    if isinstance(tools, Tool):
        return [tools]
    if isinstance(tools, Mapping):
        items: List[Tool] = [as_tool(tools)]
    elif isinstance(tools, ToolRegistry):
        return list(tools)
    else:
        items = [as_tool(t) for t in tools]
    seen: Dict[str, Tool] = {}
    for t in items:
        if t.name in seen and seen[t.name] is not t:
            raise ToolError(f"two tools are named {t.name!r}", tool=t.name)
        seen[t.name] = t
    return list(seen.values())


def _choice_name(ref: Any) -> str:
    """The tool name in ``{"type": "function", "function": {"name": ...}}`` (or the flat
    ``{"type": "function", "name": ...}``)."""
    if isinstance(ref, Mapping) and ref.get("type", "function") == "function":
        fn = ref.get("function", ref)
        if isinstance(fn, Mapping) and isinstance(fn.get("name"), str):
            return fn["name"]
    raise ValueError(f'expected {{"type": "function", "function": {{"name": ...}}}}, got {ref!r}')


def resolve_choice(tools: List[Tool], tool_choice: Any) -> Tuple[List[Tool], str]:
    """The tools a request may call and the mode: ``"none"``, ``"auto"``, ``"required"`` (at
    least one call) or ``"named"`` (one tool was named: exactly one call to it, then the turn
    ends, as in xgrammar's builtin model tags).

    Example:
        >>> from agentgrammar import Tool
        >>> tools = [Tool("a", "", {"type": "object"})]
        >>> resolve_choice(tools, {"type": "function", "function": {"name": "a"}})[1], resolve_choice(tools, "required")[1]
        ('named', 'required')
    """
    by_name = {t.name: t for t in tools}

    def pick(names: Sequence[str]) -> List[Tool]:
        out = []
        for name in names:
            if name not in by_name:
                known = ", ".join(repr(n) for n in by_name) or "none"
                raise ToolError(f"tool_choice names unknown tool {name!r} (tools: {known})", tool=name)
            out.append(by_name[name])
        return out

    if tool_choice is None or tool_choice == "auto":
        return tools, "auto" if tools else "none"
    if tool_choice == "none":
        return [], "none"
    if tool_choice == "required":
        if not tools:
            raise ToolError("tool_choice='required' but no tools were given")
        return tools, "required"
    if isinstance(tool_choice, str):
        return pick([tool_choice]), "named"
    if isinstance(tool_choice, Mapping):
        if tool_choice.get("type") == "allowed_tools":
            allowed = tool_choice.get("allowed_tools", tool_choice)
            if not isinstance(allowed, Mapping):
                raise ValueError(f"malformed allowed_tools tool_choice: {tool_choice!r}")
            mode = allowed.get("mode", "auto")
            if mode not in ("auto", "required"):
                raise ValueError(f"allowed_tools mode must be 'auto' or 'required', got {mode!r}")
            refs = allowed.get("tools", [])
            if isinstance(refs, (str, Mapping)) or not isinstance(refs, Iterable):
                raise ValueError(f"allowed_tools.tools must be a list, got {refs!r}")
            names = list(dict.fromkeys(_choice_name(r) for r in refs))
            selected = pick(names)
            if mode == "required" and not selected:
                raise ToolError("allowed_tools with mode 'required' allows no tool")
            return selected, mode if selected else "none"
        return pick([_choice_name(tool_choice)]), "named"
    raise ValueError(
        "tool_choice must be 'auto', 'none', 'required', a tool name, "
        f'{{"type": "function", "function": {{"name": ...}}}} or an allowed_tools dict; got {tool_choice!r}'
    )

"""``ToolRegistry``: the tools an agent may call, by name.

Example:
    >>> from typing import Literal
    >>> registry = ToolRegistry()
    >>> @registry.tool
    ... def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
    ...     '''Get the current weather.
    ...
    ...     Args:
    ...         city: The city name.
    ...         unit: Temperature unit.
    ...     '''
    ...     return f"20 {unit} in {city}"
    >>> registry.names
    ['get_weather']
    >>> registry.call(ToolCall("get_weather", {"city": "Oslo"}))
    '20 c in Oslo'
"""

from __future__ import annotations

import difflib
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Type,
    TypeVar,
    Union,
    overload,
)

from pydantic import BaseModel

from ..errors import ToolError
from .openai import tool_from_openai, tool_to_openai
from .tool import Tool, ToolCall

if TYPE_CHECKING:  # pragma: no cover
    from .mcp import MCPConnection

__all__ = ["ToolRegistry"]

F = TypeVar("F", bound=Callable[..., Any])


class ToolRegistry:
    """An ordered set of uniquely named ``Tool``\\ s.

    Add tools with the ``@registry.tool`` decorator (plain functions, sync or async),
    ``registry.add`` (a Pydantic model, a function or a ``Tool``) or ``ToolRegistry.from_openai``
    (OpenAI tool dicts). ``registry.select(...)`` makes a registry of some of the tools (for one
    request); ``registry.call`` / ``registry.acall`` validate a ``ToolCall`` and run its tool.

    ``len``, iteration (over the ``Tool``\\ s, in registration order), ``name in registry`` and
    ``registry[name]`` work as on a mapping from names to tools.

    Example:
        >>> from pydantic import BaseModel
        >>> class Search(BaseModel):
        ...     '''Search the web.'''
        ...     query: str
        >>> registry = ToolRegistry()
        >>> registry.add(Search).name
        'search'
        >>> "search" in registry, len(registry)
        (True, 1)
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: Dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    # -- adding tools -----------------------------------------------------------------------------

    @overload
    def tool(self, func: F) -> F: ...

    @overload
    def tool(
        self,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        strict: bool = True,
        timeout_s: Optional[float] = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        func: Optional[F] = None,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        strict: bool = True,
        timeout_s: Optional[float] = None,
    ) -> Union[F, Callable[[F], F]]:
        """Register a function (sync or ``async def``) as a tool (see ``Tool.from_function``);
        use as ``@registry.tool`` or ``@registry.tool(name=..., description=..., strict=...,
        timeout_s=...)``. The function is returned
        unchanged; its ``Tool`` is ``registry[name]``. (On a Pydantic model class it registers
        the model, without handler, as ``add`` does.)

        Example:
            >>> registry = ToolRegistry()
            >>> @registry.tool(name="sum", description="Add numbers.")
            ... def add(a: int, b: int) -> int:
            ...     return a + b
            >>> add(1, 2), registry["sum"].description
            (3, 'Add numbers.')
        """

        def register(f: F) -> F:
            self.add(f, name=name, description=description, strict=strict, timeout_s=timeout_s)
            return f

        return register if func is None else register(func)

    def add(
        self,
        obj: Union[Tool, Type[BaseModel], Callable[..., Any]],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        handler: Optional[Callable[..., Any]] = None,
        strict: bool = True,
        timeout_s: Optional[float] = None,
    ) -> Tool:
        """Register and return a tool made from ``obj``:

        - a Pydantic model class: ``Tool.from_model(obj, name=..., description=...,
          handler=..., strict=...)`` (the handler gets the validated model instance);
        - a function: ``Tool.from_function`` (the function is the handler);
        - a ``Tool``: registered as it is (``name`` / ``description`` / ``handler`` /
          ``timeout_s`` replace its own when given).

        ``timeout_s`` limits each call an agent makes (``Tool.timeout_s``).

        ``ToolError`` if the name is taken.

        Example:
            >>> from pydantic import BaseModel
            >>> class HTTPGet(BaseModel):
            ...     url: str
            >>> registry = ToolRegistry()
            >>> registry.add(HTTPGet, handler=lambda req: req.url.upper()).name
            'http_get'
            >>> registry.call(ToolCall("http_get", {"url": "a.io"}))
            'A.IO'
        """
        if isinstance(obj, Tool):
            tool = obj
            if any(x is not None for x in (name, description, handler, timeout_s)):
                tool = Tool(
                    obj.name if name is None else name,
                    obj.description if description is None else description,
                    obj.parameters,
                    model=obj.model,
                    handler=obj.handler if handler is None else handler,
                    strict=obj.strict,
                    signature=obj.signature,
                    timeout_s=obj.timeout_s if timeout_s is None else timeout_s,
                )
        elif isinstance(obj, type) and issubclass(obj, BaseModel):
            tool = Tool.from_model(
                obj, name=name, description=description, handler=handler, strict=strict, timeout_s=timeout_s
            )
        elif callable(obj):
            if handler is not None:
                raise ToolError(f"{obj!r} is a function: it is its own handler, so pass no handler=")
            tool = Tool.from_function(
                obj, name=name, description=description, strict=strict, timeout_s=timeout_s
            )
        else:
            raise ToolError(
                f"cannot make a tool from {obj!r}: expected a Pydantic model class, a function or a Tool"
            )
        if tool.name in self._tools:
            raise ToolError(
                f"a tool named {tool.name!r} is already registered; pass name=... to register it under another name",
                tool=tool.name,
            )
        self._tools[tool.name] = tool
        return tool

    @classmethod
    def from_openai(cls, tools: Iterable[Mapping[str, Any]]) -> ToolRegistry:
        """A registry of the tools (without handlers) that OpenAI tool dicts define (see
        ``openai.tool_from_openai``).

        Example:
            >>> registry = ToolRegistry.from_openai([{"type": "function", "function": {
            ...     "name": "now", "parameters": {"type": "object", "properties": {}}}}])
            >>> registry.names
            ['now']
        """
        if isinstance(tools, Mapping):
            raise ToolError("from_openai takes a list of tool dicts, not one dict")
        return cls(tool_from_openai(definition) for definition in tools)

    @classmethod
    async def from_mcp(
        cls, session: Any, *, prefix: str = "", timeout_s: Optional[float] = None
    ) -> ToolRegistry:
        """A registry of the tools of an initialized MCP ``ClientSession`` (see
        :mod:`~agentgrammar.registry.mcp`): each tool's ``inputSchema`` is its argument schema,
        its description the tool's, and its handler calls it on the server. ``prefix`` goes
        before each name; ``timeout_s`` becomes each tool's ``timeout_s``.

        Example (in async code, with the ``mcp`` SDK)::

            async with stdio_client(StdioServerParameters(command="python", args=["server.py"])) as (r, w):
                async with ClientSession(r, w) as session:
                    await session.initialize()
                    registry = await ToolRegistry.from_mcp(session)
                    run = await agent.arun("...", tools=registry)
        """
        from .mcp import mcp_tools

        return cls(await mcp_tools(session, prefix=prefix, timeout_s=timeout_s))

    @classmethod
    def from_mcp_stdio(cls, command: Sequence[str], **options: Any) -> MCPConnection:
        """Start the MCP server ``command`` (``["python", "server.py"]``) and connect to it over
        stdio, for sync code: an ``MCPConnection`` holding the session on a background event
        loop, whose context gives the registry of the server's tools and whose exit stops the
        server. ``options``: ``env``, ``cwd``, ``stderr`` (where the server's stderr goes),
        ``prefix``, ``timeout_s``, ``connect_timeout_s``.

        Example (with the ``mcp`` SDK)::

            with ToolRegistry.from_mcp_stdio(["python", "server.py"]) as registry:
                run = Agent(model, tokenizer, registry).run("What is 2 + 3?")
        """
        from .mcp import connect_stdio

        return connect_stdio(command, make_registry=cls, **options)

    @classmethod
    def from_mcp_http(cls, url: str, **options: Any) -> MCPConnection:
        """``from_mcp_stdio`` for a server already running at ``url`` (streamable HTTP, e.g.
        ``"http://127.0.0.1:8000/mcp"``). ``options``: ``prefix``, ``timeout_s``,
        ``connect_timeout_s``."""
        from .mcp import connect_http

        return connect_http(url, make_registry=cls, **options)

    # -- reading ----------------------------------------------------------------------------------

    def to_openai(self, names: Optional[Iterable[str]] = None) -> List[Dict[str, Any]]:
        """The OpenAI (Chat Completions) tool dicts of all tools, or of ``names`` in that order.

        Example:
            >>> registry = ToolRegistry()
            >>> @registry.tool
            ... def now() -> str:
            ...     '''The time.'''
            ...     return "noon"
            >>> registry.to_openai()  # doctest: +NORMALIZE_WHITESPACE
            [{'type': 'function', 'function': {'name': 'now', 'description': 'The time.',
              'parameters': {'type': 'object', 'properties': {}, 'additionalProperties': False},
              'strict': True}}]
        """
        tools = self if names is None else self.select(names)
        return [tool_to_openai(tool) for tool in tools]

    def select(self, names_or_predicate: Union[str, Iterable[str], Callable[[Tool], bool]]) -> ToolRegistry:
        """A new registry with some of these tools (the same ``Tool`` objects): those named (in
        the order given, repeats ignored; one name may be a plain string), or those for which the predicate
        is true (in registration order). ``ToolError`` for an unknown name, with close matches.

        Example:
            >>> registry = ToolRegistry()
            >>> for f in ("read_file", "write_file", "search"):
            ...     _ = registry.add(Tool(f, "", {"type": "object", "properties": {}}))
            >>> registry.select(["search", "read_file"]).names
            ['search', 'read_file']
            >>> registry.select(lambda tool: tool.name.endswith("_file")).names
            ['read_file', 'write_file']
            >>> registry.select(["read_fil"])
            Traceback (most recent call last):
            ...
            agentgrammar.errors.ToolError: unknown tool 'read_fil'; did you mean 'read_file' or 'write_file'?
        """
        if callable(names_or_predicate) and not isinstance(names_or_predicate, str):
            predicate = names_or_predicate
            return ToolRegistry(tool for tool in self._tools.values() if predicate(tool))
        names = [names_or_predicate] if isinstance(names_or_predicate, str) else list(names_or_predicate)
        selected = ToolRegistry()
        get = self._tools.get
        found = dict(zip(names, map(get, names)))  # repeats ignored: the first place counts
        if None in found.values():
            raise self._unknown(next(n for n, t in found.items() if t is None))
        selected._tools.update(found)
        return selected

    @property
    def names(self) -> List[str]:
        """The tool names, in registration order."""
        return list(self._tools)

    def get(self, name: str, default: Optional[Tool] = None) -> Optional[Tool]:
        """The tool named ``name``, or ``default``."""
        return self._tools.get(name, default)

    def __getitem__(self, name: str) -> Tool:
        """The tool named ``name``; ``ToolError`` (with close matches) if there is none."""
        tool = self._tools.get(name)
        if tool is None:
            raise self._unknown(name)
        return tool

    def __contains__(self, item: object) -> bool:
        """Whether a tool of that name (or that very ``Tool``) is registered."""
        if isinstance(item, Tool):
            return self._tools.get(item.name) is item
        return isinstance(item, str) and item in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __repr__(self) -> str:
        return f"ToolRegistry({self.names!r})"

    # -- running ----------------------------------------------------------------------------------

    def call(self, tool_call: ToolCall) -> Any:
        """Validate the call's arguments and run its tool's handler; see ``Tool.run`` (an async
        tool runs in ``asyncio.run`` when no event loop is running). ``ToolError`` for an unknown
        tool, a tool without handler, invalid arguments, or a handler that raised (the
        exception is ``__cause__``).

        Example:
            >>> registry = ToolRegistry()
            >>> @registry.tool
            ... def div(a: float, b: float) -> float:
            ...     return a / b
            >>> registry.call(ToolCall("div", {"a": 1, "b": 0}))
            Traceback (most recent call last):
            ...
            agentgrammar.errors.ToolError: tool 'div' failed: ZeroDivisionError: float division by zero
        """
        return self._tool_of(tool_call).run(tool_call.arguments)

    async def acall(self, tool_call: ToolCall) -> Any:
        """``call`` for use in async code: awaits async handlers (sync ones run inline).

        Example:
            >>> import asyncio
            >>> registry = ToolRegistry()
            >>> @registry.tool
            ... async def echo(text: str) -> str:
            ...     return text
            >>> asyncio.run(registry.acall(ToolCall("echo", {"text": "hi"})))
            'hi'
        """
        return await self._tool_of(tool_call).arun(tool_call.arguments)

    # -- internals --------------------------------------------------------------------------------

    def _tool_of(self, tool_call: ToolCall) -> Tool:
        if not isinstance(tool_call, ToolCall):
            raise ToolError(f"expected a ToolCall, got {type(tool_call).__name__}")
        return self[tool_call.name]

    def _unknown(self, name: str) -> ToolError:
        close = difflib.get_close_matches(str(name), self._tools, n=3)
        if close:
            hint = "did you mean " + " or ".join(repr(n) for n in close) + "?"
        elif self._tools:
            shown = list(self._tools)[:10]
            hint = (
                "the tools are "
                + ", ".join(repr(n) for n in shown)
                + (", ..." if len(self._tools) > 10 else "")
            )
        else:
            hint = "no tools are registered"
        return ToolError(f"unknown tool {name!r}; {hint}", tool=str(name))

"""Tools from Model Context Protocol servers, through the official ``mcp`` SDK
(``pip install 'agentgrammar[mcp]'``).

Each tool a server lists becomes a ``Tool``: its ``inputSchema`` the argument schema (so the
grammar and validation of any other schema tool), its description the tool's, and a handler
that calls it on the server (``session.call_tool``). What the server answers becomes the result:
its structured content when there is some, else its text parts joined by newlines; an answer
with ``isError`` raises ``MCPToolError`` (an error result in an agent run).

- ``await ToolRegistry.from_mcp(session)``: the tools of an initialized ``mcp.ClientSession``
  (stdio, streamable HTTP, any transport), in async code.
- ``ToolRegistry.from_mcp_stdio(command)`` / ``ToolRegistry.from_mcp_http(url)``: for sync
  code, an ``MCPConnection`` that starts the server (or connects to it) and holds the session
  on an event loop of its own, in a background thread, until it is closed::

      with ToolRegistry.from_mcp_stdio(["python", "server.py"]) as registry:
          agent = Agent(model, tokenizer, registry)
          run = agent.run("...")

A handler called on another event loop than its session's (an ``Agent.run`` turn, ``Tool.run``)
hands the call to the session's loop, so a registry from ``from_mcp`` works from other threads
while that loop runs; called from a thread that blocks that loop, it waits for its timeout.

Example (without a server: the conversion of an MCP tool and of its results):
    >>> tool = tool_from_mcp({"name": "add", "description": "Add two integers.",
    ...     "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}})
    >>> tool.name, tool.description, tool.parameters["required"]
    ('add', 'Add two integers.', ['a'])
    >>> mcp_result_value({"content": [{"type": "text", "text": "3"}, {"type": "text", "text": "ok"}]})
    '3\\nok'
    >>> mcp_result_value({"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}})
    {'result': 3}
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import json
import sys
import threading
from typing import (
    TYPE_CHECKING,
    Any,
    AsyncContextManager,
    Callable,
    Coroutine,
    Dict,
    List,
    Mapping,
    Optional,
    Sequence,
    TextIO,
)

from ..errors import ToolError
from .tool import Tool

if TYPE_CHECKING:  # pragma: no cover
    from .registry import ToolRegistry

__all__ = [
    "MCPConnection",
    "MCPToolError",
    "MCPUnavailableError",
    "connect_http",
    "connect_stdio",
    "mcp_result_value",
    "mcp_tools",
    "tool_from_mcp",
]

CONNECT_TIMEOUT_S = 60.0
"""How long ``from_mcp_stdio`` / ``from_mcp_http`` wait for the server to start and list its tools."""


class MCPUnavailableError(ToolError, ImportError):
    """The ``mcp`` package is not installed (``pip install 'agentgrammar[mcp]'``)."""


class MCPToolError(ToolError):
    """An MCP server answered a tool call with an error (``isError``); the message is its text."""


def _sdk() -> Any:
    try:
        import mcp
    except ImportError as e:
        raise MCPUnavailableError(
            "MCP tools need the official `mcp` package: pip install 'agentgrammar[mcp]' (or pip install mcp)"
        ) from e
    return mcp


def _wire(obj: Any) -> Dict[str, Any]:
    """An MCP object (a pydantic model of any SDK version, or a dict) as its wire JSON: the
    protocol's own camelCase names (``inputSchema``, ``isError``)."""
    if isinstance(obj, Mapping):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if dump is None:
        raise ToolError(f"expected an MCP object (a pydantic model or a dict), got {type(obj).__name__}")
    return dump(by_alias=True, mode="json", exclude_none=True)


# ---- tools ---------------------------------------------------------------------------------------


def tool_from_mcp(
    spec: Any,
    *,
    handler: Optional[Callable[..., Any]] = None,
    prefix: str = "",
    timeout_s: Optional[float] = None,
) -> Tool:
    """The ``Tool`` of an MCP tool definition (an ``mcp.types.Tool`` or its wire dict), named
    ``prefix + name``: ``inputSchema`` is its parameters (strict when the schema closes its
    object with ``"additionalProperties": false``), ``description`` (else ``title``) its
    description. ``ToolError`` naming the MCP tool for a name or schema that cannot be a tool.

    Example:
        >>> tool_from_mcp({"name": "search", "inputSchema": {"type": "object"}}, prefix="web.").name
        'web.search'
    """
    data = _wire(spec)
    name = data.get("name")
    if not isinstance(name, str):
        raise ToolError(f"an MCP tool needs a name, got {_short(data)}")
    schema = data.get("inputSchema")
    if schema is None:
        schema = {"type": "object", "properties": {}}
    description = data.get("description") or data.get("title") or ""
    try:
        return Tool(
            prefix + name,
            description if isinstance(description, str) else "",
            copy.deepcopy(schema),
            handler=handler,
            strict=isinstance(schema, dict) and schema.get("additionalProperties") is False,
            timeout_s=timeout_s,
        )
    except ToolError as e:
        raise ToolError(f"the MCP tool {name!r} cannot be registered: {e}", tool=name) from e


async def mcp_tools(session: Any, *, prefix: str = "", timeout_s: Optional[float] = None) -> List[Tool]:
    """The tools of an initialized MCP ``ClientSession`` (every page of ``list_tools``), each
    with a handler that calls it on ``session``, on the event loop running now. ``prefix`` is
    put before each name (to tell servers apart); ``timeout_s`` becomes each ``Tool.timeout_s``."""
    loop = asyncio.get_running_loop()
    listed: List[Any] = []
    cursor: Optional[str] = None
    while True:
        if cursor is None:
            page = await session.list_tools()
        else:
            page = await session.list_tools(params=_sdk().types.PaginatedRequestParams(cursor=cursor))
        listed.extend(page.tools)
        cursor = getattr(page, "next_cursor", None) or getattr(page, "nextCursor", None)
        if not cursor:
            break
    tools = []
    for spec in listed:
        name = _wire(spec).get("name")
        tools.append(
            tool_from_mcp(spec, handler=MCPCall(session, name, loop), prefix=prefix, timeout_s=timeout_s)
        )
    return tools


class MCPCall:
    """The handler of one MCP tool: ``await handler(**arguments)`` calls the tool on the server,
    on the event loop that owns the session, and returns ``mcp_result_value`` of the answer."""

    def __init__(self, session: Any, name: str, loop: asyncio.AbstractEventLoop) -> None:
        self.session = session
        self.name = name
        self.loop = loop

    async def __call__(self, **arguments: Any) -> Any:
        result = await _on_loop(self.loop, self.session.call_tool(self.name, arguments))
        return mcp_result_value(result)

    def __repr__(self) -> str:
        return f"MCPCall({self.name!r})"


async def _on_loop(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> Any:
    """Await ``coro`` on ``loop`` (a session's streams belong to the loop that opened them);
    cancelling this cancels it there too."""
    if asyncio.get_running_loop() is loop:
        return await coro
    if loop.is_closed() or not loop.is_running():
        coro.close()
        raise ToolError("the MCP session's event loop is not running (the connection is closed)")
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))


def mcp_result_value(result: Any) -> Any:
    """What an MCP ``CallToolResult`` (or its wire dict) gives the agent: ``structuredContent``
    when present, else the content's parts as text joined by newlines (a text part as it is,
    an embedded text resource as its text, other parts as a short ``[image: image/png]`` note).
    ``MCPToolError`` with that text when ``isError`` is set.

    Example:
        >>> mcp_result_value({"content": [{"type": "text", "text": "no such city"}], "isError": True})
        Traceback (most recent call last):
        ...
        agentgrammar.registry.mcp.MCPToolError: no such city
    """
    data = _wire(result)
    text = "\n".join(_part_text(part) for part in data.get("content") or ())
    if data.get("isError"):
        raise MCPToolError(text or "the MCP server reported an error without a message")
    structured = data.get("structuredContent")
    return structured if structured is not None else text


def _part_text(part: Any) -> str:
    if not isinstance(part, Mapping):
        return str(part)
    kind = part.get("type")
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "resource":
        resource = part.get("resource") or {}
        if isinstance(resource.get("text"), str):
            return resource["text"]
        return f"[resource: {resource.get('uri', '?')}]"
    if kind == "resource_link":
        return f"[resource link: {part.get('uri', '?')}]"
    if kind in ("image", "audio"):
        return f"[{kind}: {part.get('mimeType', '?')}]"
    return json.dumps(part, ensure_ascii=False)


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---- a connection held for sync code -----------------------------------------------------------

StreamsFactory = Callable[[], AsyncContextManager[Any]]


class MCPConnection:
    """An MCP session held open on an event loop of its own (a daemon thread), and the
    ``registry`` of its server's tools. Use it as a context manager (``with ... as registry``)
    or call ``close()``: closing ends the session and stops a stdio server.

    Made by ``ToolRegistry.from_mcp_stdio`` / ``from_mcp_http`` (``connect_stdio`` /
    ``connect_http``); ``ToolError`` (``MCPUnavailableError`` without the SDK) when the server
    cannot be started, reached or listed within ``connect_timeout_s``.
    """

    def __init__(
        self,
        open_streams: StreamsFactory,
        *,
        where: str,
        prefix: str = "",
        timeout_s: Optional[float] = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
        make_registry: Callable[[List[Tool]], Any],
    ) -> None:
        self.where = where
        self._closing: Optional[asyncio.Event] = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="agentgrammar-mcp", daemon=True)
        self._thread.start()
        ready: concurrent.futures.Future = concurrent.futures.Future()
        self._served = asyncio.run_coroutine_threadsafe(
            self._serve(open_streams, ready, prefix, timeout_s), self._loop
        )
        try:
            tools = ready.result(timeout=connect_timeout_s)
        except BaseException as e:
            self.close()
            if isinstance(e, concurrent.futures.TimeoutError):
                raise ToolError(
                    f"the MCP server {where} did not list its tools within {connect_timeout_s:g} s"
                ) from None
            raise ToolError(f"cannot connect to the MCP server {where}: {_describe(e)}") from e
        self.registry: Any = make_registry(tools)  # the ToolRegistry (registry.py builds on this module)

    async def _serve(
        self,
        open_streams: StreamsFactory,
        ready: concurrent.futures.Future,
        prefix: str,
        timeout_s: Optional[float],
    ) -> None:
        """The one task that opens the session, hands over its tools and holds it until
        ``close``: anyio's task groups must be left by the task that entered them."""
        self._closing = asyncio.Event()
        try:
            async with open_streams() as streams:
                async with _sdk().ClientSession(streams[0], streams[1]) as session:
                    await session.initialize()
                    ready.set_result(await mcp_tools(session, prefix=prefix, timeout_s=timeout_s))
                    await self._closing.wait()
        except BaseException as e:
            if not ready.done():
                ready.set_exception(e)
            raise

    @property
    def closed(self) -> bool:
        """Whether the connection is closed."""
        return not self._thread.is_alive()

    def close(self, timeout_s: float = 10.0) -> None:
        """End the session (a stdio server stops) and the background loop; idempotent."""
        loop = self._loop
        if loop.is_closed():
            return
        if loop.is_running():
            loop.call_soon_threadsafe(self._stop_serving)
            try:
                self._served.result(timeout=timeout_s)
            except BaseException:  # the session's own failure on the way out is not the caller's
                pass
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout_s)
        if not loop.is_running():
            loop.close()

    def _stop_serving(self) -> None:
        if self._closing is not None:
            self._closing.set()
        else:  # still connecting
            self._served.cancel()

    def __enter__(self) -> ToolRegistry:
        return self.registry

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"{len(self.registry)} tools"
        return f"MCPConnection({self.where}, {state})"


def _describe(error: BaseException) -> str:
    """An exception's type and message; for an exception group (anyio raises those), its first
    exception's."""
    while isinstance(getattr(error, "exceptions", None), tuple) and error.exceptions:  # type: ignore[attr-defined]
        error = error.exceptions[0]  # type: ignore[attr-defined]
    return f"{type(error).__name__}: {error}"


def connect_stdio(
    command: Sequence[str],
    *,
    env: Optional[Mapping[str, str]] = None,
    cwd: Optional[str] = None,
    stderr: Optional[TextIO] = None,
    prefix: str = "",
    timeout_s: Optional[float] = None,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    make_registry: Callable[[List[Tool]], Any],
) -> MCPConnection:
    """Start the MCP server ``command`` (a list: the program, then its arguments) and connect to
    it over stdio; see ``ToolRegistry.from_mcp_stdio``."""
    if isinstance(command, str) or not command or not all(isinstance(c, str) for c in command):
        raise ToolError(
            f"an MCP server command is a list of strings (program, arguments...), got {command!r}"
        )
    sdk = _sdk()
    from mcp.client.stdio import stdio_client

    params = sdk.StdioServerParameters(
        command=command[0], args=list(command[1:]), env=dict(env) if env is not None else None, cwd=cwd
    )
    errlog = stderr if stderr is not None else sys.stderr
    return MCPConnection(
        lambda: stdio_client(params, errlog=errlog),
        where=" ".join(command),
        prefix=prefix,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        make_registry=make_registry,
    )


def connect_http(
    url: str,
    *,
    prefix: str = "",
    timeout_s: Optional[float] = None,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
    make_registry: Callable[[List[Tool]], Any],
) -> MCPConnection:
    """Connect to the MCP server at ``url`` over streamable HTTP; see
    ``ToolRegistry.from_mcp_http``."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ToolError(f"an MCP server URL starts with http:// or https://, got {url!r}")
    _sdk()
    from mcp.client import streamable_http

    open_streams = getattr(streamable_http, "streamable_http_client", None)
    if open_streams is None:  # its name in mcp 1.x
        open_streams = streamable_http.streamablehttp_client
    return MCPConnection(
        lambda: open_streams(url),
        where=url,
        prefix=prefix,
        timeout_s=timeout_s,
        connect_timeout_s=connect_timeout_s,
        make_registry=make_registry,
    )

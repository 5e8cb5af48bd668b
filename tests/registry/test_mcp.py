"""Tools from MCP servers (``registry/mcp.py``): a real server (``mcp_server.py``, the official
SDK's ``MCPServer``) started over stdio and over streamable HTTP, its schemas as grammars, calls
routed to it and its errors as error results, an agent on the scripted model calling it; and the
conversions, on a fake session, without a server."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List

import pytest

from agentgrammar import AgentGrammarError, Grammar, ToolCall, ToolError, ToolRegistry, formats
from agentgrammar.agent.tool_runner import ToolRunner
from agentgrammar.registry.mcp import (
    MCPConnection,
    MCPToolError,
    MCPUnavailableError,
    mcp_result_value,
    tool_from_mcp,
)

SERVER = str(Path(__file__).with_name("mcp_server.py"))
WEATHER = '{"temperature_c": 3, "condition": "cloudy"}'  # what mcp_server.get_weather returns


@pytest.fixture(scope="module")
def devnull() -> Iterator[Any]:
    with open(os.devnull, "w") as f:  # the server's log lines
        yield f


@pytest.fixture(scope="module")
def connection(devnull: Any) -> Iterator[MCPConnection]:
    pytest.importorskip(
        "mcp", reason="the MCP tests need the `mcp` package (pip install 'agentgrammar[mcp]')"
    )
    conn = ToolRegistry.from_mcp_stdio([sys.executable, SERVER], stderr=devnull)
    yield conn
    conn.close()
    assert conn.closed


@pytest.fixture(scope="module")
def registry(connection: MCPConnection) -> ToolRegistry:
    return connection.registry


def test_the_servers_tools_become_tools(registry: ToolRegistry) -> None:
    assert registry.names == ["get_weather", "add", "shout", "wait"]
    weather = registry["get_weather"]
    assert weather.description == "Get the current weather in a city."
    assert weather.parameters["required"] == ["city"]
    assert weather.parameters["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert weather.is_async and weather.model is None and not weather.strict
    assert registry["add"].parameters["properties"]["a"]["type"] == "integer"


def test_schemas_become_grammars(registry: ToolRegistry) -> None:
    grammar = Grammar.from_json_schema(registry["get_weather"].parameters)
    assert grammar.accepts('{"city": "Oslo"}')
    assert grammar.accepts('{"city": "Oslo", "unit": "fahrenheit"}')
    for bad in ('{"city": "Oslo", "unit": "kelvin"}', "{}", '{"city": 3}'):
        assert not grammar.accepts(bad), bad
    turn = formats.get("tags").grammar(registry.select(["add"]), reasoning="disabled")
    assert turn.accepts('<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>')
    assert not turn.accepts('<tool_call>{"name": "add", "arguments": {"a": 2, "b": "3"}}</tool_call>')


def test_calls_are_routed_to_the_server(registry: ToolRegistry) -> None:
    assert registry.call(ToolCall("get_weather", {"city": "Oslo"})) == WEATHER  # text content
    assert registry.call(ToolCall("add", {"a": 2, "b": 3})) == {"result": 5}  # structured content
    results = ToolRunner(registry).run(
        [ToolCall("shout", {"text": "hi", "times": 2}), ToolCall("add", {"a": 40, "b": 2})]
    )
    assert [(r.value, r.error) for r in results] == [("HI HI", None), ({"result": 42}, None)]
    assert results[1].content == '{"result": 42}'


def test_a_server_error_comes_back_as_an_error_result(registry: ToolRegistry) -> None:
    with pytest.raises(ToolError, match="no weather station in Atlantis") as raised:
        registry.call(ToolCall("get_weather", {"city": "Atlantis"}))
    assert isinstance(raised.value.__cause__, MCPToolError)
    (result,) = ToolRunner(registry).run([ToolCall("get_weather", {"city": "Atlantis"})])
    assert (
        result.error
        == "tool 'get_weather' failed: MCPToolError: Error executing tool get_weather: no weather station in Atlantis"
    )
    assert not result.invalid and isinstance(result.exception.__cause__, MCPToolError)
    # Arguments the schema refuses never reach the server.
    (result,) = ToolRunner(registry).run([ToolCall("add", {"a": "two", "b": 3})])
    assert result.invalid and "invalid arguments for tool 'add': a:" in (result.error or "")


def test_a_call_past_its_timeout_is_cancelled_and_the_session_goes_on(registry: ToolRegistry) -> None:
    calls = [ToolCall("wait", {"seconds": 600}), ToolCall("wait", {"seconds": 0})]
    late, quick = ToolRunner(registry, timeout_s=2.0).run(calls)
    assert late.error == "tool 'wait' timed out after 2 s" and quick.value == "waited 0.0"
    assert registry.call(ToolCall("add", {"a": 1, "b": 1})) == {"result": 2}


def test_from_mcp_on_a_session_in_async_code(devnull: Any) -> None:
    mcp = pytest.importorskip("mcp")
    from mcp.client.stdio import stdio_client

    async def main() -> List[Any]:
        params = mcp.StdioServerParameters(command=sys.executable, args=[SERVER])
        async with stdio_client(params, errlog=devnull) as streams:
            async with mcp.ClientSession(streams[0], streams[1]) as session:
                await session.initialize()
                registry = await ToolRegistry.from_mcp(session, prefix="srv.", timeout_s=30)
                assert registry.names == ["srv.get_weather", "srv.add", "srv.shout", "srv.wait"]
                assert registry["srv.add"].timeout_s == 30.0
                direct = await registry.acall(ToolCall("srv.shout", {"text": "a"}))
                ran = await ToolRunner(registry).arun(
                    [ToolCall("srv.add", {"a": 1, "b": 1}), ToolCall("srv.get_weather", {"city": "Atlantis"})]
                )
                # From a thread, while this loop runs: the call is handed to this loop.
                loop = asyncio.get_running_loop()
                threaded = await loop.run_in_executor(
                    None, registry.call, ToolCall("srv.shout", {"text": "b"})
                )
                return [direct, [(r.value, r.error) for r in ran], threaded]

    direct, ran, threaded = asyncio.run(main())
    assert direct == "A" and threaded == "B"
    assert ran == [
        ({"result": 2}, None),
        (
            None,
            "tool 'srv.get_weather' failed: MCPToolError: Error executing tool get_weather: no weather station in Atlantis",
        ),
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_over_streamable_http(devnull: Any) -> None:
    pytest.importorskip("mcp")
    port = _free_port()
    server = subprocess.Popen([sys.executable, SERVER, "--http", str(port)], stdout=devnull, stderr=devnull)
    try:
        deadline = time.monotonic() + 60
        while True:  # until the server listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "the HTTP server did not start"
                time.sleep(0.05)
        with ToolRegistry.from_mcp_http(f"http://127.0.0.1:{port}/mcp") as registry:
            assert registry.names == ["get_weather", "add", "shout", "wait"]
            assert registry.call(ToolCall("add", {"a": 20, "b": 22})) == {"result": 42}
            (result,) = ToolRunner(registry).run([ToolCall("get_weather", {"city": "Atlantis"})])
            assert "no weather station in Atlantis" in (result.error or "")
    finally:
        server.terminate()
        server.wait(30)


def test_a_server_that_does_not_start_is_a_clear_error(devnull: Any) -> None:
    pytest.importorskip("mcp")
    with pytest.raises(ToolError, match="cannot connect to the MCP server"):
        ToolRegistry.from_mcp_stdio([sys.executable, "-c", "import sys; sys.exit(3)"], stderr=devnull)
    with pytest.raises(ToolError, match="a list of strings"):
        ToolRegistry.from_mcp_stdio("python server.py")  # type: ignore[arg-type]


def test_a_closed_connection_gives_error_results(devnull: Any) -> None:
    pytest.importorskip("mcp")
    conn = ToolRegistry.from_mcp_stdio([sys.executable, SERVER], stderr=devnull)
    with conn as registry:
        assert registry.call(ToolCall("add", {"a": 1, "b": 2})) == {"result": 3}
    assert conn.closed and "closed" in repr(conn)
    conn.close()  # idempotent
    (result,) = ToolRunner(registry).run([ToolCall("add", {"a": 1, "b": 2})])
    assert "the connection is closed" in (result.error or "")


def test_without_the_sdk_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mcp", None)  # import mcp raises ImportError
    with pytest.raises(MCPUnavailableError, match=r"pip install 'agentgrammar\[mcp\]'") as raised:
        ToolRegistry.from_mcp_stdio([sys.executable, SERVER])
    assert isinstance(raised.value, (AgentGrammarError, ImportError))
    with pytest.raises(MCPUnavailableError):
        ToolRegistry.from_mcp_http("http://127.0.0.1:1/mcp")


# ---- an agent on the scripted model, calling the MCP tool ---------------------------------------


@pytest.fixture()
def one_torch_thread() -> Iterator[None]:
    """The tiny model's ops are too small to share between threads (as in tests/agent)."""
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def test_an_agent_calls_an_mcp_tool(registry: ToolRegistry, one_torch_thread: None) -> None:
    from agentgrammar import Agent
    from tests.kit import (
        ANSWER_TEXT,
        CANONICAL_MESSAGES,
        TOOL_RESULT,
        answer_turn,
        canonical_turn,
        kit_case,
        kit_template,
        kit_tokenizer,
        token_ids,
    )
    from tests.scripted_model import scripted_model

    assert TOOL_RESULT == WEATHER  # the kit's answer is what the server returns
    case = kit_case("qwen3-no-thinking")
    tok = kit_tokenizer(case.folder)
    _, turn1 = canonical_turn(case)
    _, turn2 = answer_turn(case)
    model = scripted_model(tok, [tok.convert_tokens_to_ids(case.end_marker)])
    model.script([token_ids(case, turn1), token_ids(case, turn2)])
    kwargs = {"chat_template": kit_template(case.folder, case.variant), **case.template_kwargs}
    agent = Agent(model, tok, registry, format=case.preset, template_kwargs=kwargs)
    run = agent.run(copy.deepcopy(CANONICAL_MESSAGES[:2]), reasoning=case.reasoning, max_new_tokens=120)
    assert run.stopped_reason == "response" and run.valid, run.summary()
    assert [(c.name, c.arguments) for c in run.tool_calls] == [("get_weather", {"city": "Oslo"})]
    assert run.steps[0].results[0].value == WEATHER and run.response == ANSWER_TEXT
    assert "Get the current weather in a city." in model.prompt_texts[0]  # the MCP description
    assert WEATHER in model.prompt_texts[1] and WEATHER not in model.prompt_texts[0]


# ---- conversions, on a fake session --------------------------------------------------------------


class FakeSession:
    """``list_tools`` in two pages and a ``call_tool`` that echoes, as wire dicts in objects."""

    def __init__(self) -> None:
        self.calls: List[Any] = []

    async def list_tools(self, params: Any = None) -> Any:
        cursor = None if params is None else params.cursor
        page = _Page(
            [{"name": "one", "inputSchema": {"type": "object", "properties": {}}}] if cursor is None else [],
            "p2" if cursor is None else None,
        )
        if cursor == "p2":
            page.tools = [
                {
                    "name": "two",
                    "title": "Second",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"x": {"type": "integer"}},
                        "additionalProperties": False,
                    },
                }
            ]
        return page

    async def call_tool(self, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        self.calls.append((name, arguments))
        return {"content": [{"type": "text", "text": json.dumps(arguments)}]}


class _Page:
    def __init__(self, tools: List[Any], next_cursor: Any) -> None:
        self.tools = tools
        self.next_cursor = next_cursor


def test_every_page_is_listed_and_calls_reach_the_session() -> None:
    pytest.importorskip("mcp")
    session = FakeSession()

    async def main() -> Any:
        registry = await ToolRegistry.from_mcp(session)
        return registry, await registry.acall(ToolCall("two", {"x": 4}))

    registry, value = asyncio.run(main())
    assert registry.names == ["one", "two"]
    assert registry["two"].description == "Second" and registry["two"].strict
    assert value == '{"x": 4}' and session.calls == [("two", {"x": 4})]


def test_result_parts_and_errors() -> None:
    value = mcp_result_value(
        {
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "...", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "file:///x", "text": "inside"}},
                {"type": "resource", "resource": {"uri": "file:///y", "blob": "..."}},
                {"type": "resource_link", "uri": "file:///z", "name": "z"},
            ]
        }
    )
    assert value.split("\n") == [
        "a",
        "[image: image/png]",
        "inside",
        "[resource: file:///y]",
        "[resource link: file:///z]",
    ]
    with pytest.raises(MCPToolError, match="without a message"):
        mcp_result_value({"content": [], "isError": True})
    assert mcp_result_value({"content": [], "structuredContent": {}}) == {}


def test_a_tool_that_cannot_be_registered_is_named() -> None:
    with pytest.raises(ToolError, match="the MCP tool 'has space' cannot be registered: invalid tool name"):
        tool_from_mcp({"name": "has space", "inputSchema": {"type": "object"}})
    with pytest.raises(
        ToolError, match=r"the MCP tool 'bad' cannot be registered: .*not a valid JSON Schema"
    ):
        tool_from_mcp({"name": "bad", "inputSchema": {"type": "objekt"}})
    with pytest.raises(ToolError, match="needs a name"):
        tool_from_mcp({"inputSchema": {"type": "object"}})

"""A small MCP server for the tests, written with the official SDK's high-level server
(``MCPServer``, named ``FastMCP`` before mcp 2). Run it as ``python mcp_server.py`` (stdio) or
``python mcp_server.py --http PORT`` (streamable HTTP on 127.0.0.1:PORT, path ``/mcp``).

The SDK is imported in ``build_server`` only, so that collecting this file (pytest imports every
module for doctests) works without it."""

from __future__ import annotations

import sys
from typing import Any, Literal

WEATHER = '{"temperature_c": 3, "condition": "cloudy"}'


def build_server() -> Any:
    """The server and its tools: get_weather (text, or an error for Atlantis), add (structured
    content), shout (text) and wait (an async tool that sleeps)."""
    import anyio

    try:
        from mcp.server.mcpserver import MCPServer as Server
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:  # mcp 1.x
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

    server = Server("agentgrammar-tests")

    @server.tool(structured_output=False)
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        """Get the current weather in a city."""
        if city == "Atlantis":
            raise ToolError(f"no weather station in {city}")
        return WEATHER

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(structured_output=False)
    def shout(text: str, times: int = 1) -> str:
        """Upper-case a text, repeated."""
        return " ".join([text.upper()] * times)

    @server.tool(structured_output=False)
    async def wait(seconds: float) -> str:
        """Wait, then say so."""
        await anyio.sleep(seconds)
        return f"waited {seconds}"

    return server


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        build_server().run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        build_server().run()

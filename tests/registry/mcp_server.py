"""A small MCP server for the tests, written with the official SDK's high-level server
(``MCPServer``, named ``FastMCP`` before mcp 2). Run it as ``python mcp_server.py`` (stdio) or
``python mcp_server.py --http PORT`` (streamable HTTP on 127.0.0.1:PORT, path ``/mcp``)."""

from __future__ import annotations

import sys
from typing import Literal

try:
    from mcp.server.mcpserver import MCPServer as Server
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

WEATHER = '{"temperature_c": 3, "condition": "cloudy"}'

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


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()

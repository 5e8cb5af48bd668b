"""``mcp_server.py`` is a server script that the MCP tests start, not a module to collect."""

collect_ignore = ["mcp_server.py"]

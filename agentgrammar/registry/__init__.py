"""The tool registry: tools from functions, Pydantic models, OpenAI tool dicts or MCP servers; their argument
schemas; validating and running tool calls.

Example:
    >>> from agentgrammar.registry import ToolCall, ToolRegistry
    >>> registry = ToolRegistry()
    >>> @registry.tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> registry.call(ToolCall("add", {"a": 1, "b": 2}))
    3
"""

from .docstrings import Docstring, parse_docstring
from .mcp import MCPConnection, MCPToolError, MCPUnavailableError
from .openai import (
    openai_strict_compatible,
    tool_call_from_openai,
    tool_call_to_openai,
    tool_from_openai,
    tool_to_openai,
)
from .registry import ToolRegistry
from .signature import SignatureModel, signature_model, tool_json_schema
from .tool import TOOL_NAME_PATTERN, Tool, ToolCall, check_tool_name

__all__ = [
    "TOOL_NAME_PATTERN",
    "Docstring",
    "MCPConnection",
    "MCPToolError",
    "MCPUnavailableError",
    "SignatureModel",
    "Tool",
    "ToolCall",
    "ToolRegistry",
    "check_tool_name",
    "openai_strict_compatible",
    "parse_docstring",
    "signature_model",
    "tool_call_from_openai",
    "tool_call_to_openai",
    "tool_from_openai",
    "tool_json_schema",
    "tool_to_openai",
]

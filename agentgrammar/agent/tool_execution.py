"""Running a turn's tool calls: the one place the agent executes tools, so that another strategy
(concurrent calls, remote tools) replaces ``run_tool_calls`` / ``arun_tool_calls`` alone.

Every call gives a ``ToolResult``, never an exception: a call to an unknown tool or with
arguments that fail validation is rejected before running (``invalid=True``), a handler that
raises gives an error result, and a result whose message cannot be written (``json.dumps``
refuses it, or it holds lone surrogates) is made safe to put into the conversation.

Example:
    >>> from agentgrammar import ToolCall, ToolRegistry
    >>> registry = ToolRegistry()
    >>> @registry.tool
    ... def add(a: int, b: int) -> int:
    ...     '''Add two numbers.'''
    ...     return a + b
    >>> results = run_tool_calls(registry, [ToolCall("add", {"a": 1, "b": 2}), ToolCall("nope", {})])
    >>> [(r.value, r.invalid) for r in results]
    [(3, False), (None, True)]
"""

from __future__ import annotations

import re
from typing import Callable, List, Optional, Sequence

from ..errors import ToolError
from ..registry import ToolCall, ToolRegistry
from .run import ToolResult

__all__ = ["aexecute", "arun_tool_calls", "execute", "run_tool_calls", "safe_result", "unicode_safe"]

SURROGATE = re.compile("[\ud800-\udfff]")
OnStart = Callable[[int, ToolCall], None]
OnFinish = Callable[[int, ToolCall, ToolResult], None]


def error_text(error: Exception) -> str:
    """What a failed call feeds back: a ``ToolError``'s message, else the exception's type too."""
    return str(error) if isinstance(error, ToolError) else f"{type(error).__name__}: {error}"


def unicode_safe(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate pair, which a str may
    hold as two code points, becomes its character): text that encodes as UTF-8.

    Example:
        >>> unicode_safe("a\\ud800b")
        'a\\ufffdb'
    """
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def safe_result(result: ToolResult) -> ToolResult:
    """``result`` made safe to put into the conversation: its message must render (a value
    that ``json.dumps`` cannot write, such as a cyclic list, becomes an error result) and
    encode as UTF-8 (a lone surrogate that a tool returned would make the next turn's
    tokenizer raise): a str value or an error with lone surrogates has them replaced, and any
    other value whose JSON text has some is replaced by that text, made safe.

    Example:
        >>> safe_result(ToolResult(ToolCall("echo", {}), "a\\ud800b")).value == "a\\ufffdb"
        True
    """
    try:
        content = result.content
    except Exception as e:  # json.dumps refused the value (a cycle, a failing __str__, ...)
        return ToolResult(
            result.call,
            error=unicode_safe(
                f"the result of tool {result.call.name!r} cannot be written as text: {type(e).__name__}: {e}"
            ),
            invalid=result.invalid,
        )
    if SURROGATE.search(content) is None:
        return result
    if result.error is not None:
        return ToolResult(result.call, error=unicode_safe(result.error), invalid=result.invalid)
    return ToolResult(
        result.call, unicode_safe(content if not isinstance(result.value, str) else result.value)
    )


def _precheck(registry: ToolRegistry, call: ToolCall) -> Optional[ToolResult]:
    """An error result for a call to an unknown tool or with invalid arguments (whatever
    validation raises: a model's own validator may raise anything)."""
    try:
        registry[call.name].validate(call.arguments)
    except Exception as e:
        return safe_result(ToolResult(call, error=error_text(e), invalid=True))
    return None


def execute(registry: ToolRegistry, call: ToolCall) -> ToolResult:
    """Validate and run one call (async handlers in ``asyncio.run``)."""
    rejected = _precheck(registry, call)
    if rejected is not None:
        return rejected
    try:
        result = ToolResult(call, registry.call(call))
    except Exception as e:  # ToolError for a handler that raised; anything else the same way
        result = ToolResult(call, error=error_text(e))
    return safe_result(result)


async def aexecute(registry: ToolRegistry, call: ToolCall) -> ToolResult:
    """Validate and run one call on the running loop (async handlers awaited natively)."""
    rejected = _precheck(registry, call)
    if rejected is not None:
        return rejected
    try:
        result = ToolResult(call, await registry.acall(call))
    except Exception as e:
        result = ToolResult(call, error=error_text(e))
    return safe_result(result)


def _noop(*_: object) -> None:
    return None


def run_tool_calls(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    *,
    on_start: OnStart = _noop,
    on_finish: OnFinish = _noop,
) -> List[ToolResult]:
    """Run ``calls`` one after another, in order; ``on_start(index, call)`` before each and
    ``on_finish(index, call, result)`` after it. The results come in the calls' order."""
    results = []
    for index, call in enumerate(calls):
        on_start(index, call)
        result = execute(registry, call)
        on_finish(index, call, result)
        results.append(result)
    return results


async def arun_tool_calls(
    registry: ToolRegistry,
    calls: Sequence[ToolCall],
    *,
    on_start: OnStart = _noop,
    on_finish: OnFinish = _noop,
) -> List[ToolResult]:
    """``run_tool_calls`` for async code: each call awaited in turn on the running loop."""
    results = []
    for index, call in enumerate(calls):
        on_start(index, call)
        result = await aexecute(registry, call)
        on_finish(index, call, result)
        results.append(result)
    return results

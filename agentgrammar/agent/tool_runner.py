"""Running the tool calls of one turn as agent frameworks do: ``ToolRunner`` runs them
concurrently (async tools as tasks on an event loop, sync tools in a thread pool), each under a
timeout, turns every failure into an error result for the model, and returns the results in
call order.

- **Concurrency.** All the calls of a turn start at once. An ``async def`` tool runs as a task
  on the event loop; a sync tool runs in a worker thread (with the caller's ``contextvars``), so
  it must not rely on thread-local state of the calling thread.
- **Timeouts.** A call may run ``Tool.timeout_s`` seconds, else the runner's ``timeout_s``
  (``Agent(tool_timeout_s=...)``; ``None``: no limit). A call past it becomes a
  ``ToolTimeoutError`` result: an async tool is cancelled; a sync tool cannot be interrupted
  (Python threads cannot be), so its thread runs on and its result is dropped.
- **Cancellation.** Cancelling ``arun`` (the task of an ``Agent.arun``) cancels the async tool
  tasks; sync tools run on and their results are dropped. In ``run``, Ctrl-C does the same.
- **Errors.** An unknown tool or invalid arguments give an ``invalid`` error result (the tool
  does not run); a handler that raises, or a value that cannot be written as text, an error
  result with the message; ``ToolResult.exception`` keeps the exception.
- **Events.** ``ToolCallStarted`` for every call (in call order, with its index in the turn) as
  they start, then ``ToolCallFinished`` for each as it finishes (in the order they finish).

Example:
    >>> import asyncio
    >>> from agentgrammar import ToolCall, ToolRegistry
    >>> registry = ToolRegistry()
    >>> @registry.tool
    ... def add(a: int, b: int) -> int:
    ...     return a + b
    >>> @registry.tool(timeout_s=0.05)
    ... async def slow() -> str:
    ...     await asyncio.sleep(60)
    ...     return "never"
    >>> calls = [ToolCall("slow", {}), ToolCall("add", {"a": 1, "b": 2}), ToolCall("add", {"a": "x"})]
    >>> for result in ToolRunner(registry).run(calls):
    ...     print(result.value, result.error, result.invalid)
    None tool 'slow' timed out after 0.05 s False
    3 None False
    None invalid arguments for tool 'add': a: Input should be a valid integer, unable to parse string as an integer (got 'x'); b: Field required True
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import re
import threading
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Awaitable, Callable, List, Optional, Sequence

from ..errors import AgentError, ToolError, ToolTimeoutError
from ..registry import Tool, ToolCall, ToolRegistry
from ..registry.tool import check_timeout_s
from .events import AgentEvent, ToolCallFinished, ToolCallStarted
from .run import ToolResult

__all__ = ["MAX_TOOL_THREADS", "SURROGATE", "ToolRunner", "checked_timeout_s", "safe_result", "unicode_safe"]

MAX_TOOL_THREADS = 32
"""Worker threads of the shared pool that runs sync tools (started as needed). A sync tool
that runs past its timeout keeps its thread until it returns."""

SURROGATE = re.compile("[\ud800-\udfff]")
_pool: Optional[ThreadPoolExecutor] = None
_pool_lock = threading.Lock()


def _shared_pool() -> ThreadPoolExecutor:
    """The process's pool for sync tools. Not the event loop's default executor: ``asyncio.run``
    waits for that one's threads on exit, so a sync tool past its timeout would hold the run."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(MAX_TOOL_THREADS, thread_name_prefix="agentgrammar-tool")
        return _pool


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class ToolRunner:
    """Runs tool calls against ``registry``: ``run(calls)`` from sync code, ``await
    arun(calls)`` from async code; both return one ``ToolResult`` per call, in call order, and
    never raise for what a tool does (see the module's description).

    Args:
        registry: the tools the calls may name.
        timeout_s: the limit of a call whose tool sets none (``None``: no limit).
        on_event: receives ``ToolCallStarted`` / ``ToolCallFinished`` (an exception it raises
            stops the run: the other calls are cancelled and it propagates).
        executor: where sync tools run; default a shared pool of ``MAX_TOOL_THREADS`` threads.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        timeout_s: Optional[float] = None,
        on_event: Optional[Callable[[AgentEvent], None]] = None,
        executor: Optional[Executor] = None,
    ) -> None:
        if not isinstance(registry, ToolRegistry):
            raise AgentError(f"registry must be a ToolRegistry, got {type(registry).__name__}")
        self.registry = registry
        self.timeout_s = checked_timeout_s(timeout_s, "timeout_s")
        self.on_event = on_event
        self.executor = executor

    def run(
        self, calls: Sequence[ToolCall], arguments_texts: Optional[Sequence[str]] = None
    ) -> List[ToolResult]:
        """The results of ``calls``, run concurrently on an event loop of their own (in a helper
        thread when this thread already runs one, as in a notebook; prefer ``arun`` there).
        ``arguments_texts``: each call's arguments as written, for its ``ToolCallStarted``."""
        calls = list(calls)
        if not calls:
            return []
        if not _loop_running():
            return asyncio.run(self.arun(calls, arguments_texts))
        context = contextvars.copy_context()  # the helper thread's tasks see the caller's
        with ThreadPoolExecutor(1, thread_name_prefix="agentgrammar-tool-loop") as helper:
            return helper.submit(context.run, asyncio.run, self.arun(calls, arguments_texts)).result()

    async def arun(
        self, calls: Sequence[ToolCall], arguments_texts: Optional[Sequence[str]] = None
    ) -> List[ToolResult]:
        """The results of ``calls``, run concurrently on the running event loop. Cancelling
        this coroutine cancels the async tools still running."""
        calls = list(calls)
        texts = list(arguments_texts) if arguments_texts is not None else [""] * len(calls)
        for index, call in enumerate(calls):
            self._emit(ToolCallStarted(call, index, texts[index]))
        tasks = [asyncio.ensure_future(self._run_one(index, call)) for index, call in enumerate(calls)]
        try:
            return list(await asyncio.gather(*tasks))
        finally:  # cancelled, or on_event raised: stop the calls still running
            for task in tasks:
                task.cancel()

    # -- internals --------------------------------------------------------------------------------

    def _emit(self, event: AgentEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    async def _run_one(self, index: int, call: ToolCall) -> ToolResult:
        result = await self._result_of(call)
        self._emit(ToolCallFinished(call, result.value, result.error, index))
        return result

    async def _result_of(self, call: ToolCall) -> ToolResult:
        try:  # whatever validation raises (a model's own validator may raise anything)
            tool = self.registry[call.name]
            tool.validate(call.arguments)
        except Exception as e:
            return safe_result(ToolResult(call, error=_error_text(e), invalid=True, exception=e))
        timeout_s = tool.timeout_s if tool.timeout_s is not None else self.timeout_s
        try:
            value = await asyncio.wait_for(self._start(tool, call), timeout_s)
        except asyncio.TimeoutError:  # the handler's own exceptions arrive as ToolError
            error = ToolTimeoutError(
                f"tool {tool.name!r} timed out after {timeout_s:g} s", tool=tool.name, timeout_s=timeout_s
            )
            return ToolResult(call, error=str(error), exception=error)
        except Exception as e:  # ToolError for a handler that raised; anything else the same way
            return safe_result(ToolResult(call, error=_error_text(e), exception=e))
        return safe_result(ToolResult(call, value))

    def _start(self, tool: Tool, call: ToolCall) -> Awaitable[Any]:
        if tool.is_async:
            return tool.arun(call.arguments)
        run = functools.partial(contextvars.copy_context().run, tool.run, call.arguments)
        return asyncio.get_running_loop().run_in_executor(self.executor or _shared_pool(), run)


def checked_timeout_s(value: Any, name: str) -> Optional[float]:
    """``value`` as a timeout in seconds (``None``: no limit), or ``AgentError`` naming ``name``.

    Example:
        >>> checked_timeout_s(1, "tool_timeout_s")
        1.0
        >>> checked_timeout_s(-1, "tool_timeout_s")
        Traceback (most recent call last):
        ...
        agentgrammar.errors.AgentError: tool_timeout_s: timeout_s must be a positive number of seconds or None, got -1
    """
    try:
        return check_timeout_s(value, name)
    except ToolError as e:
        raise AgentError(str(e)) from None


def _error_text(error: BaseException) -> str:
    """What a failed call feeds back: a ``ToolError``'s message, else the exception's type too."""
    return str(error) if isinstance(error, ToolError) else f"{type(error).__name__}: {error}"


def unicode_safe(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a surrogate pair, which a str may
    hold as two code points, becomes its character): text that encodes as UTF-8.

    Example:
        >>> unicode_safe("a\\ud800b"), unicode_safe("\\ud83d\\ude00")
        ('a\\ufffdb', '😀')
    """
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def safe_result(result: ToolResult) -> ToolResult:
    """``result`` made safe to put into the conversation: its message must render (a value
    that ``json.dumps`` cannot write, such as a cyclic list, becomes an error result) and
    encode as UTF-8 (a lone surrogate that a tool returned would make the next turn's
    tokenizer raise): a str value or an error with lone surrogates has them replaced, and any
    other value whose JSON text has some is replaced by that text, made safe.

    Example:
        >>> from agentgrammar import ToolCall
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
            exception=e,
        )
    if SURROGATE.search(content) is None:
        return result
    if result.error is not None:
        return ToolResult(
            result.call, error=unicode_safe(result.error), invalid=result.invalid, exception=result.exception
        )
    return ToolResult(
        result.call, unicode_safe(content if not isinstance(result.value, str) else result.value)
    )

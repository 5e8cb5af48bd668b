"""``ToolRunner``: the calls of a turn run concurrently (proven without timing: tools that each
wait for the other finish only when run together), under timeouts, with every failure an error
result, results in call order and cancellation reaching async tools; and through ``Agent``."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, List

import pytest

from agentgrammar import Agent, AgentError, Tool, ToolCall, ToolError, ToolRegistry, ToolTimeoutError
from agentgrammar.agent import ToolCallFinished, ToolCallStarted
from agentgrammar.agent.tool_runner import ToolRunner

# A bound on every wait, so that a runner that serialises calls fails the test instead of hanging.
WAIT_S = 20.0


def _values(results: List[Any]) -> List[Any]:
    return [(r.call.name, r.value, r.error) for r in results]


def test_async_tools_run_concurrently() -> None:
    registry = ToolRegistry()
    events: dict = {}

    async def wait_for_the_other(mine: str, other: str) -> str:
        events.setdefault(mine, asyncio.Event()).set()
        await events.setdefault(other, asyncio.Event()).wait()
        return mine

    @registry.tool(timeout_s=WAIT_S)
    async def ping() -> str:
        return await wait_for_the_other("ping", "pong")

    @registry.tool(timeout_s=WAIT_S)
    async def pong() -> str:
        return await wait_for_the_other("pong", "ping")

    results = ToolRunner(registry).run([ToolCall("ping", {}), ToolCall("pong", {})])
    assert _values(results) == [("ping", "ping", None), ("pong", "pong", None)]


def test_sync_tools_run_concurrently_in_threads() -> None:
    registry = ToolRegistry()
    barrier = threading.Barrier(2, timeout=WAIT_S)  # broken (an error result) unless both wait at once
    names: List[str] = []

    @registry.tool
    def left() -> str:
        barrier.wait()
        names.append(threading.current_thread().name)
        return "left"

    @registry.tool
    def right() -> str:
        barrier.wait()
        names.append(threading.current_thread().name)
        return "right"

    results = ToolRunner(registry).run([ToolCall("left", {}), ToolCall("right", {})])
    assert _values(results) == [("left", "left", None), ("right", "right", None)]
    assert all(n.startswith("agentgrammar-tool") for n in names) and len(set(names)) == 2


def test_a_sync_and_an_async_tool_run_together() -> None:
    registry = ToolRegistry()
    sync_started, async_started = threading.Event(), threading.Event()

    @registry.tool
    def blocking() -> str:
        sync_started.set()
        return "blocking" if async_started.wait(WAIT_S) else "alone"

    @registry.tool(timeout_s=WAIT_S)
    async def polling() -> str:
        async_started.set()
        while not sync_started.is_set():
            await asyncio.sleep(0.001)
        return "polling"

    results = ToolRunner(registry).run([ToolCall("blocking", {}), ToolCall("polling", {})])
    assert _values(results) == [("blocking", "blocking", None), ("polling", "polling", None)]


def test_results_keep_call_order_and_events_follow_completion() -> None:
    registry = ToolRegistry()
    released = threading.Event()

    @registry.tool
    def first() -> str:  # finishes last: it waits for the last call
        return "first" if released.wait(WAIT_S) else "timed out"

    @registry.tool
    async def middle(n: int) -> int:
        return n * 2

    @registry.tool
    def last() -> str:
        released.set()
        return "last"

    calls = [ToolCall("first", {}, "c1"), ToolCall("middle", {"n": 4}, "c2"), ToolCall("last", {}, "c3")]
    events: List[Any] = []
    results = ToolRunner(registry, on_event=events.append).run(calls)
    assert [r.call for r in results] == calls
    assert [r.value for r in results] == ["first", 8, "last"]
    assert events[:3] == [ToolCallStarted(c, k) for k, c in enumerate(calls)]
    finished = [e for e in events if isinstance(e, ToolCallFinished)]
    assert len(events) == 6 and len(finished) == 3
    assert finished[-1] == ToolCallFinished(calls[0], "first", None)  # the first call finished last


def test_a_timeout_becomes_an_error_result_and_cancels_an_async_tool() -> None:
    registry = ToolRegistry()
    cancelled: List[str] = []
    release = threading.Event()

    @registry.tool(timeout_s=0.05)
    async def hangs() -> str:
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancelled.append("hangs")
            raise
        return "never"

    @registry.tool
    def blocks() -> str:  # runs on in its thread past the timeout; its result is dropped
        release.wait(WAIT_S)
        return "late"

    try:
        results = ToolRunner(registry, timeout_s=0.05).run([ToolCall("hangs", {}), ToolCall("blocks", {})])
    finally:
        release.set()
    assert _values(results) == [
        ("hangs", None, "tool 'hangs' timed out after 0.05 s"),
        ("blocks", None, "tool 'blocks' timed out after 0.05 s"),
    ]
    for result in results:
        assert isinstance(result.exception, ToolTimeoutError) and result.exception.timeout_s == 0.05
        assert not result.invalid and result.content == '{"error": "%s"}' % result.error
    assert cancelled == ["hangs"]


def test_a_tool_timeout_overrides_the_runner_default() -> None:
    registry = ToolRegistry()

    @registry.tool(timeout_s=WAIT_S)
    async def patient() -> str:
        await asyncio.sleep(0.2)  # past the runner's 0.05 s: only its own limit applies
        return "done"

    @registry.tool
    async def hasty() -> str:
        await asyncio.sleep(0.2)
        return "done"

    results = ToolRunner(registry, timeout_s=0.05).run([ToolCall("patient", {}), ToolCall("hasty", {})])
    assert [(r.value, r.error) for r in results] == [
        ("done", None),
        (None, "tool 'hasty' timed out after 0.05 s"),
    ]


def test_exceptions_and_invalid_calls_become_error_results() -> None:
    registry = ToolRegistry()
    ran: List[str] = []

    @registry.tool
    def explode(n: int) -> int:
        ran.append("explode")
        raise ValueError(f"bad {n}")

    @registry.tool
    async def aexplode(n: int) -> int:
        ran.append("aexplode")
        raise KeyError(n)

    calls = [
        ToolCall("explode", {"n": 1}),
        ToolCall("aexplode", {"n": 2}),
        ToolCall("explode", {"n": "many"}),
        ToolCall("nope", {}),
    ]
    results = ToolRunner(registry).run(calls)
    assert [r.error for r in results] == [
        "tool 'explode' failed: ValueError: bad 1",
        "tool 'aexplode' failed: KeyError: 2",
        "invalid arguments for tool 'explode': n: Input should be a valid integer, unable to parse string "
        "as an integer (got 'many')",
        "unknown tool 'nope'; the tools are 'explode', 'aexplode'",
    ]
    assert [r.invalid for r in results] == [False, False, True, True]
    assert isinstance(results[0].exception, ToolError) and isinstance(
        results[0].exception.__cause__, ValueError
    )
    assert sorted(ran) == ["aexplode", "explode"]  # invalid calls do not run


def test_cancelling_the_async_path_cancels_async_tools() -> None:
    registry = ToolRegistry()
    cancelled: List[str] = []
    release = threading.Event()

    async def main() -> None:
        started = asyncio.Event()

        @registry.tool
        async def waits() -> str:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append("waits")
                raise
            return "never"

        @registry.tool
        def blocks() -> str:
            release.wait(WAIT_S)
            return "late"

        task = asyncio.ensure_future(
            ToolRunner(registry).arun([ToolCall("waits", {}), ToolCall("blocks", {})])
        )
        await asyncio.wait_for(started.wait(), WAIT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    try:
        asyncio.run(main())
    finally:
        release.set()
    assert cancelled == ["waits"]


def test_an_event_handler_that_raises_stops_the_run() -> None:
    registry = ToolRegistry()
    cancelled: List[str] = []

    @registry.tool
    def quick() -> str:
        return "quick"

    @registry.tool
    async def waits() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append("waits")
            raise
        return "never"

    def on_event(event: Any) -> None:
        if isinstance(event, ToolCallFinished):
            raise RuntimeError("handler bug")

    with pytest.raises(RuntimeError, match="handler bug"):
        ToolRunner(registry, on_event=on_event).run([ToolCall("quick", {}), ToolCall("waits", {})])
    assert cancelled == ["waits"]


def test_run_inside_a_running_loop_and_contextvars_reach_sync_tools() -> None:
    registry = ToolRegistry()
    request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="none")

    @registry.tool
    def whoami() -> str:
        return request_id.get()

    @registry.tool
    async def awhoami() -> str:
        return request_id.get()

    async def main() -> List[Any]:
        request_id.set("r1")
        calls = [ToolCall("whoami", {}), ToolCall("awhoami", {})]
        inside = ToolRunner(registry).run(calls)  # a loop is running: a helper thread runs one
        awaited = await ToolRunner(registry).arun(calls)
        return [r.value for r in inside + awaited]

    assert asyncio.run(main()) == ["r1", "r1", "r1", "r1"]
    assert ToolRunner(registry).run([]) == []


def test_timeout_options_are_checked() -> None:
    with pytest.raises(AgentError, match="timeout_s must be a positive number of seconds or None, got 0"):
        ToolRunner(ToolRegistry(), timeout_s=0)
    with pytest.raises(AgentError, match="tool_timeout_s: timeout_s must be a positive number"):
        Agent(None, None, ToolRegistry(), format="tags", tool_timeout_s=float("nan"))
    with pytest.raises(
        ToolError, match="tool 'f': timeout_s must be a positive number of seconds or None, got True"
    ):
        Tool("f", "", {"type": "object", "properties": {}}, timeout_s=True)
    registry = ToolRegistry()

    @registry.tool(timeout_s=3)
    def f() -> None: ...

    assert registry["f"].timeout_s == 3.0
    assert registry.add(registry["f"], name="g", timeout_s=1).timeout_s == 1.0
    assert registry.add(registry["f"], name="h").timeout_s == 3.0


# ---- through the agent (the scripted tiny Llama of conftest.py) -------------------------------

THINK = "<think>ok</think>\n"
ANSWER = THINK + "<response>Done.</response>"


def _calls(*names: str) -> str:
    return THINK + "\n".join(f'<tool_call>{{"name": "{n}", "arguments": {{}}}}</tool_call>' for n in names)


def test_the_agent_runs_a_turns_calls_concurrently(scripted, tok, compiler) -> None:
    registry = ToolRegistry()
    barrier = threading.Barrier(2, timeout=WAIT_S)

    @registry.tool
    def left() -> str:
        barrier.wait()
        return "L"

    @registry.tool
    async def right() -> str:
        await asyncio.get_running_loop().run_in_executor(None, barrier.wait)
        return "R"

    model = scripted([[_calls("left", "right")], [ANSWER]])
    events: List[Any] = []
    run = Agent(model, tok, registry, compiler=compiler).run("Go.", max_new_tokens=60, on_event=events.append)
    assert run.stopped_reason == "response" and run.response == "Done."
    assert [(r.value, r.error) for r in run.steps[0].results] == [("L", None), ("R", None)]
    assert [m["content"] for m in run.messages if m["role"] == "tool"] == ["L", "R"]
    started = [e.call.name for e in events if isinstance(e, ToolCallStarted)]
    assert started == ["left", "right"]


@pytest.mark.parametrize("path", ["run", "arun"])
def test_the_agent_feeds_a_timeout_back(path, scripted, tok, compiler) -> None:
    registry = ToolRegistry()

    @registry.tool
    async def stuck() -> str:
        await asyncio.Event().wait()
        return "never"

    model = scripted([[_calls("stuck")], [ANSWER]])
    agent = Agent(model, tok, registry, compiler=compiler, tool_timeout_s=0.05)
    run = (
        agent.run("Go.", max_new_tokens=60)
        if path == "run"
        else asyncio.run(agent.arun("Go.", max_new_tokens=60))
    )
    result = run.steps[0].results[0]
    assert result.error == "tool 'stuck' timed out after 0.05 s" and isinstance(
        result.exception, ToolTimeoutError
    )
    assert run.valid and run.response == "Done." and "timed out after 0.05 s" in model.prompts[1]

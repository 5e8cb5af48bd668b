"""Streaming a run's events: ``Agent.stream`` runs the agent in a worker thread and hands its
events to the caller over a queue (``events_from_thread``); ``Agent.astream`` runs it as a task
on the caller's loop, with ``generate()`` in the loop's executor, and hands the events over an
``asyncio.Queue`` (``events_from_task``).

Both are cancellation-safe: when the consumer stops early (it closes the iterator, breaks out of
a ``with``-closed loop, or its task is cancelled), the run's cancel flag is set, ``generate()``
stops at its next token (``cancel_criteria``), the cut turn's tool calls and any later turn do
not run, and the worker is waited for, so the model is free again when the iterator is closed.

Example:
    >>> import threading
    >>> def drive(emit, cancel):
    ...     for k in range(3):
    ...         emit(k)
    >>> list(events_from_thread(drive))
    [0, 1, 2]
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, TypeVar

__all__ = ["cancel_criteria", "events_from_task", "events_from_thread", "in_executor"]

Emit = Callable[[Any], None]
T = TypeVar("T")


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


_DONE = object()


def cancel_criteria(cancel: threading.Event) -> Any:
    """A ``transformers`` stopping criterion that ends ``generate()`` once ``cancel`` is set."""
    import torch
    from transformers import StoppingCriteria

    class StopOnCancel(StoppingCriteria):  # type: ignore[misc]
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full(
                (input_ids.shape[0],), cancel.is_set(), dtype=torch.bool, device=input_ids.device
            )

    return StopOnCancel()


def events_from_thread(drive: Callable[[Emit, threading.Event], None]) -> Iterator[Any]:
    """The events that ``drive(emit, cancel)`` emits, run in a worker thread, as an iterator.

    The thread starts with the first ``next()``; an exception in ``drive`` is raised by the
    iterator after the events before it. Closing the iterator early sets ``cancel`` and waits
    for the thread (``drive`` should stop soon once ``cancel`` is set)."""
    items: "queue.Queue[Any]" = queue.Queue()
    cancel = threading.Event()

    def target() -> None:
        try:
            drive(items.put, cancel)
        except BaseException as e:  # handed to the consumer, raised there
            items.put(_Failure(e))
        finally:
            items.put(_DONE)

    thread = threading.Thread(target=target, name="agentgrammar-stream", daemon=True)
    thread.start()
    try:
        while True:
            item = items.get()
            if item is _DONE:
                return
            if isinstance(item, _Failure):
                raise item.error
            yield item
    finally:
        cancel.set()
        thread.join()


async def events_from_task(drive: Callable[[Emit, threading.Event], Awaitable[None]]) -> AsyncIterator[Any]:
    """The events that ``drive(emit, cancel)`` emits, run as a task on the running loop, as
    an async iterator. ``emit`` may be called from any thread (``generate()``'s worker does).

    An exception in ``drive`` is raised after the events before it. Closing the iterator
    (``aclose()``, e.g. through ``contextlib.aclosing``) or cancelling its consumer sets
    ``cancel``, cancels the task and waits for it."""
    loop = asyncio.get_running_loop()
    items: "asyncio.Queue[Any]" = asyncio.Queue()
    cancel = threading.Event()

    def emit(event: Any) -> None:  # FIFO from every thread: events keep their order
        loop.call_soon_threadsafe(items.put_nowait, event)

    task = asyncio.ensure_future(drive(emit, cancel))
    task.add_done_callback(lambda _: loop.call_soon_threadsafe(items.put_nowait, _DONE))
    try:
        while True:
            item = await items.get()
            if item is _DONE:
                break
            yield item
        await task  # its exception, if any
    finally:
        if not task.done():
            cancel.set()
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


async def in_executor(cancel: threading.Event, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` in the running loop's default executor. Cancelled, it sets ``cancel`` (which
    ``fn`` heeds: ``cancel_criteria`` ends ``generate()``) and waits for ``fn`` to return
    before the cancellation goes on, so the worker never outlives its caller."""
    work = asyncio.get_running_loop().run_in_executor(None, fn, *args)
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        cancel.set()
        with contextlib.suppress(BaseException):
            await work
        raise

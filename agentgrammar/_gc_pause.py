"""Pausing Python's cyclic garbage collector while a grammar is built.

Converting a schema, validating the rules and writing them for the C core make thousands of
small container objects (IR nodes, tuples, lists) that live until the grammar is loaded and
then die by reference counting. While they live they count as new allocations, so the
collector runs every few hundred of them and walks them all again, and every tenth run walks
the older generation too: about a fifth of the time to the first mask of a typical JSON
Schema (timed by a ``gc`` callback over the MaskBench sample), spent on objects that no cycle
holds. The builders of this package make almost no
cycles, so pausing the collector for the length of one build skips that walk and leaves it
nothing to catch up on.

The pause is taken by the outermost build of any thread that finds the collector enabled, and
given back when that build ends (on error too); a build that finds it already disabled (by
another build, or by the application) leaves it as it is, so a paused collector is always
resumed by the build that paused it, and no pause outlasts one build.

Example:
    >>> import gc
    >>> from agentgrammar._gc_pause import gc_paused
    >>> with gc_paused():
    ...     gc.isenabled()
    False
    >>> gc.isenabled()
    True
"""

from __future__ import annotations

import functools
import gc
import threading
from typing import Any, Callable, ContextManager, TypeVar

__all__ = ["gc_paused", "pauses_gc"]

_F = TypeVar("_F", bound=Callable[..., Any])

# Serializes the check-and-disable, so two threads cannot both see the collector enabled
# and both take ownership of one pause.
_LOCK = threading.Lock()


class _Pause:
    """One pause: its owner is the block that found the collector enabled. A class rather than
    a generator context manager: entered several times per compile, at a third of the cost."""

    __slots__ = ("_owner",)

    def __enter__(self) -> None:
        with _LOCK:
            self._owner = gc.isenabled()
            if self._owner:
                gc.disable()

    def __exit__(self, *exc: Any) -> None:
        if self._owner:
            gc.enable()


def gc_paused() -> ContextManager[None]:
    """Disable the cyclic collector for the block when it is enabled; enable it after."""
    return _Pause()


def pauses_gc(func: _F) -> _F:
    """``func`` run inside ``gc_paused()``: for the public entry points that build grammars."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with gc_paused():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]

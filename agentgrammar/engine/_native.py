"""The bridge to the C engine: the compiled cffi module and status-to-exception mapping.

Everything that touches ``ffi``/``lib`` lives in the engine package; the rest of
agentgrammar only sees the Python classes built on top.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, List, NoReturn, Optional, Tuple, Type

from ..errors import AgentGrammarError, MaskTimeoutError, MatcherError, TokenIdError

try:
    from .._core import ffi, lib  # type: ignore[import-not-found]
except ImportError as exc:  # pragma: no cover - only without a built extension
    raise ImportError(
        "agentgrammar's C engine is not built; install the package with `pip install -e .` "
        f"(import of agentgrammar._core failed: {exc})"
    ) from exc

__all__ = ["PerProcess", "ffi", "lib", "new_error", "raise_error"]


def new_error():  # type: ignore[no-untyped-def]
    """A fresh ``ag_error`` for one call."""
    return ffi.new("ag_error *")


_BY_STATUS: dict[int, Type[AgentGrammarError]] = {
    lib.AG_ERR_RANGE: TokenIdError,
    lib.AG_ERR_STATE: MatcherError,
    lib.AG_ERR_TIMEOUT: MaskTimeoutError,
}


def raise_error(
    status: int,
    err,  # type: ignore[no-untyped-def]
    invalid: Type[AgentGrammarError] = AgentGrammarError,
    rule_name: Optional[Callable[[int], str]] = None,
) -> NoReturn:
    """Raise the exception for a failed C call.

    ``invalid`` is the class used for AG_ERR_INVALID / AG_ERR_LIMIT (it depends on what
    was being loaded); ``rule_name`` turns the rule index in the error into a name.
    """
    message = ffi.string(err.message).decode("utf-8", "replace")
    if rule_name is not None and err.rule >= 0:
        message = f"rule {rule_name(err.rule)!r}: {message}"
    if status == lib.AG_ERR_NOMEM:
        raise MemoryError(f"agentgrammar: {message}")
    cls = _BY_STATUS.get(status, invalid)
    raise cls(message)


class PerProcess:
    """A C object made once per process by ``make`` on first use (``get``). A forked child
    makes its own and never frees the parent's: that one may hold a thread the child does
    not have, or a lock such a thread held. The child keeps it, one per fork: its memory
    stays reachable rather than lost.

    Example:
        >>> made = PerProcess(lambda: ffi.gc(ffi.new("int *"), lambda p: None))
        >>> made.get() is made.get()
        True
    """

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._made: Optional[Tuple[int, Any]] = None  # (the process id that made it, it)
        self._parents: List[Any] = []  # the objects of the processes this one forked from

    def get(self) -> Any:
        made = self._made
        if made is not None and made[0] == os.getpid():  # the usual call: no lock
            return made[1]
        with self._lock:
            made = self._made
            if made is not None and made[0] == os.getpid():
                return made[1]
            if made is not None:  # the parent's: never freed here, kept
                ffi.gc(made[1], None)
                self._parents.append(made[1])
            self._made = (os.getpid(), self._make())
            return self._made[1]

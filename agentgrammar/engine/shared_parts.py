"""The C grammars of shared parts, loaded once per process.

A shared part (``Grammar._shared_part``: the grammar of any JSON value, which many argument
grammars embed) has automata that depend on no vocabulary, so every compiler binds the same
loaded grammar. The engine keeps it here, not on the grammar (the grammar layer knows nothing of
the engine), for as long as the grammar lives: entries are keyed by the grammar's identity and
go when it is collected. Keyed by identity, not by the grammar itself: hashing a grammar hashes
all its rules.

Example:
    >>> from agentgrammar import Grammar
    >>> g = Grammar.from_regex("a")
    >>> loaded_shared_part(g, lambda: "loaded"), loaded_shared_part(g, lambda: "again")
    ('loaded', 'loaded')
    >>> key = id(g); del g  # collected: its entry goes with it
    >>> key in _LOADED
    False
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Dict, Tuple

__all__ = ["loaded_shared_part"]

# id(grammar) -> (a weak reference to it, its loaded C grammar)
_LOADED: Dict[int, Tuple["weakref.ref[Any]", Any]] = {}


def _forget(key: int) -> Callable[["weakref.ref[Any]"], None]:
    # The table itself, not the module's name for it: at interpreter exit the module's globals
    # are cleared (to None) before the last grammars go, and their callbacks still run.
    loaded = _LOADED

    def gone(ref: "weakref.ref[Any]") -> None:
        # Runs while the grammar is collected, before its id can be reused; no lock (the
        # collector may run inside a locked section of this thread): one dict operation each.
        found = loaded.get(key)
        if found is not None and found[0] is ref:
            loaded.pop(key, None)

    return gone


def loaded_shared_part(grammar: Any, load: Callable[[], Any]) -> Any:
    """The loaded C grammar of ``grammar``: ``load()`` the first time, then kept while the
    grammar lives. Two threads may both load it: the first stored serves both."""
    key = id(grammar)
    found = _LOADED.get(key)
    if found is not None and found[0]() is grammar:
        return found[1]
    entry = (weakref.ref(grammar, _forget(key)), load())
    return _LOADED.setdefault(key, entry)[1]

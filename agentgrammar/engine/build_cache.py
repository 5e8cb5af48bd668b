"""The process-wide C build cache: pieces of automata that loading reuses across grammars.

Every object whose other keys are allowed has a key trie, and past the names' characters each
trie's automaton is the same: the rest of any key (its tail, escapes and wide characters).
The first grammar loaded builds it; later loads copy it (``ag_build_cache_new`` in
``csrc/agentgrammar.h``). The cache depends on no vocabulary and holds a bounded number of
small pieces; a grammar loaded with it has the same automata as without.

Example:
    >>> build_cache() is build_cache()
    True
"""

from __future__ import annotations

from typing import Any

from ..errors import GrammarError
from ._native import PerProcess, ffi, lib, new_error, raise_error

__all__ = ["build_cache"]


def _new_cache() -> Any:
    out = ffi.new("ag_build_cache **")
    err = new_error()
    status = lib.ag_build_cache_new(out, err)
    if status != lib.AG_OK:
        raise_error(status, err, GrammarError)
    return ffi.gc(out[0], lib.ag_build_cache_free)


# A forked child's cache is its own: the parent's lock may have been held by a thread the
# child does not have.
_CACHE = PerProcess(_new_cache)


def build_cache() -> Any:
    """The process's build cache, made on first use (a forked child makes its own)."""
    return _CACHE.get()

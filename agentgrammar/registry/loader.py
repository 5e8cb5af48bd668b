"""Loading a ``ToolRegistry`` named on a command line: ``MODULE_OR_FILE[:ATTR]``.

Example:
    >>> load_registry("agentgrammar.demo.tools:demo_registry").names[:1]
    ['get_weather']
    >>> load_registry("agentgrammar.demo.tools:DEMO_NOPE")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    agentgrammar.registry.loader.RegistryLoadError: 'agentgrammar.demo.tools' has no attribute 'DEMO_NOPE'
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from pathlib import Path
from typing import Any

from ..errors import ToolError
from .registry import ToolRegistry

__all__ = ["RegistryLoadError", "load_registry"]


class RegistryLoadError(ToolError):
    """``MODULE_OR_FILE[:ATTR]`` names no ``ToolRegistry`` (with what it found instead)."""


def _import(target: str) -> Any:
    try:
        if target.endswith(".py") or Path(target).is_file():
            path = Path(target)
            spec = importlib.util.spec_from_file_location(f"_agentgrammar_tools_{path.stem}", path)
            if spec is None or spec.loader is None:
                raise RegistryLoadError(f"cannot import {target!r}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(target)
    except RegistryLoadError:
        raise
    except Exception as e:
        raise RegistryLoadError(f"cannot load tools from {target!r}: {type(e).__name__}: {e}") from e


def _call_factory(found: Any, spec: str) -> Any:
    """A function named as ATTR that builds the registry: called with no arguments."""
    try:
        required = [
            p
            for p in inspect.signature(found).parameters.values()
            if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        ]
    except (TypeError, ValueError):
        required = []
    if required:
        raise RegistryLoadError(
            f"{spec!r} is a function with parameters (a tool?), not a ToolRegistry: name the registry "
            "that holds it, or a function of no arguments that returns one"
        )
    try:
        return found()
    except Exception as e:
        raise RegistryLoadError(f"calling {spec!r} failed: {type(e).__name__}: {e}") from e


def load_registry(spec: str) -> ToolRegistry:
    """The ``ToolRegistry`` named by ``MODULE_OR_FILE[:ATTR]``: ATTR is a registry or a
    function of no arguments returning one; without it, the module's ``registry`` or its only
    ``ToolRegistry``. ``RegistryLoadError`` saying what is wrong otherwise."""
    target, attr = spec, None
    head, sep, tail = spec.rpartition(":")
    if sep and tail.isidentifier() and head:
        target, attr = head, tail
    module = _import(target)
    if attr is not None:
        if not hasattr(module, attr):
            raise RegistryLoadError(f"{target!r} has no attribute {attr!r}")
        found = getattr(module, attr)
        if callable(found) and not isinstance(found, ToolRegistry):
            found = _call_factory(found, spec)
    else:
        found = getattr(module, "registry", None)
        if not isinstance(found, ToolRegistry):
            candidates = [v for v in vars(module).values() if isinstance(v, ToolRegistry)]
            if len(candidates) != 1:
                raise RegistryLoadError(
                    f"{target!r}: name the registry as {target}:ATTR ({len(candidates)} found)"
                )
            found = candidates[0]
    if not isinstance(found, ToolRegistry):
        raise RegistryLoadError(f"{spec!r} is a {type(found).__name__}, not a ToolRegistry")
    return found

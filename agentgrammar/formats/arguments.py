"""Argument values of tool calls: JSON read strictly and objects written in their schema's
property order.

Model output is hostile input, so the reader refuses what Python's ``json`` module takes but a
tool call must never hold: a key twice in one object (not "the last one wins"), ``NaN``,
``Infinity`` and numbers too large for a float, integers of more than ``MAX_INT_DIGITS`` digits,
nesting deeper than ``MAX_JSON_DEPTH`` and lone surrogate escapes (``"\\ud800"``), each with the
character offset of the problem.

Example:
    >>> loads_strict('{"city": "Oslo", "days": 2}')
    {'city': 'Oslo', 'days': 2}
    >>> loads_strict('{"city": "Oslo", "city": "Bergen"}')
    Traceback (most recent call last):
    ...
    agentgrammar.formats.arguments.DuplicateKeyError: duplicate key 'city' in a JSON object
    >>> loads_strict('{"amount": NaN}')
    Traceback (most recent call last):
    ...
    agentgrammar.formats.arguments.JSONLimitError: the JSON holds NaN, which is not a JSON number (at offset 11)
    >>> order_like({"days": 2, "city": "Oslo"}, {"properties": {"city": {}, "days": {}}})
    {'city': 'Oslo', 'days': 2}
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..errors import AgentGrammarError
from ..registry.nesting import MAX_JSON_DEPTH, nesting_depth

__all__ = [
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "DuplicateKeyError",
    "JSONLimitError",
    "decode_strict",
    "loads_strict",
    "nesting_depth",
    "order_like",
]

#: Digits of the largest integer read (sign not counted): 640 is the smallest limit that
#: ``sys.set_int_max_str_digits`` accepts, so every integer read prints back under any setting.
MAX_INT_DIGITS = 640


class DuplicateKeyError(AgentGrammarError, ValueError):
    """A JSON object names the same key twice (``key`` is that key).

    Example:
        >>> DuplicateKeyError("a").key
        'a'
    """

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r} in a JSON object")
        self.key = key


class JSONLimitError(AgentGrammarError, ValueError):
    """JSON text that Python's ``json`` reads but a tool call must not hold. ``problem`` says
    what (without the offset), ``offset`` is the character offset in the text read, ``kind``
    is one of ``"constant"`` (``NaN``, ``Infinity``, ``-Infinity``: not JSON), ``"non_finite"``
    (a number past the float range, such as ``1e999``), ``"digits"`` (an integer of more than
    ``MAX_INT_DIGITS`` digits), ``"depth"`` (nesting past ``MAX_JSON_DEPTH``) and
    ``"surrogate"`` (a lone surrogate, escaped or raw: not Unicode text).

    Example:
        >>> err = JSONLimitError("NaN, which is not a JSON number", offset=3, kind="constant")
        >>> str(err), err.offset, err.kind
        ('the JSON holds NaN, which is not a JSON number (at offset 3)', 3, 'constant')
    """

    def __init__(self, problem: str, *, offset: int, kind: str) -> None:
        super().__init__(f"the JSON holds {problem} (at offset {offset})")
        self.problem = problem
        self.offset = offset
        self.kind = kind


def _no_duplicates(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(key)
        out[key] = value
    return out


def _constant(name: str) -> Any:
    # NaN, Infinity and -Infinity stop the decoder; the scan then reports them with offsets.
    raise ValueError(f"{name}, which is not a JSON number")


_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_constant)

# The scan before decoding goes from one *event* to the next: a string (read whole, so that
# brackets inside it do not count), a bracket or NaN / Infinity, each after a run of filler
# (whitespace, separators, numbers, true / false / null). Anything else ends the scan: the text
# is not JSON there, which the decoder reports. Few events, so few Python steps per value.
_EVENT = re.compile(
    r"""(?P<fill>[ \t\n\r,:0-9.eE+\-truefalsn]*)
    (?:(?P<string>"[^"\\]*(?:\\.[^"\\]*)*")
    |(?P<open>[\[{])
    |(?P<close>[\]}])
    |(?P<constant>NaN|Infinity))""",
    re.S | re.X,
)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_WS = " \t\n\r"
# Where a lone surrogate may be: an escape of one, or one raw.
_SUSPECT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)|[\ud800-\udfff]", re.S)


def _cut(text: str, limit: int = 24) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_number(token: str, at: int) -> None:
    """``JSONLimitError`` for a number token past the limits: an integer of too many digits, or
    a float that would be infinite."""
    if "." in token or "e" in token or "E" in token:
        if not math.isfinite(float(token)):
            raise JSONLimitError(
                f"the number {_cut(token)}, too large for a float", offset=at, kind="non_finite"
            )
    elif len(token) - token.startswith("-") > MAX_INT_DIGITS:
        raise JSONLimitError(f"an integer with more than {MAX_INT_DIGITS} digits", offset=at, kind="digits")


def _check_fill(text: str, start: int, end: int) -> None:
    """Check the numbers in ``text[start:end]``, a run of filler. Only a number with an
    exponent or of 300 digits or more can be past a limit, so most runs are not looked at."""
    if end - start < 300 and "e" not in text[start:end] and "E" not in text[start:end]:
        return
    for m in _NUMBER.finditer(text, start, end):
        _check_number(m.group(), m.start())


def _check_string(token: str, at: int) -> None:
    """``JSONLimitError`` for a lone surrogate in the string ``token`` at offset ``at``: a raw
    one, or a ``\\uXXXX`` escape of one that is not a high escape followed by a low one."""
    bad = -1  # where the lone surrogate is; a high escape's own offset while its low half may follow
    for m in _ESCAPE.finditer(token):
        code = int(m.group(1), 16) if m.group(1) else -1
        if bad >= 0:
            if m.start() == bad + 6 and 0xDC00 <= code <= 0xDFFF:
                bad = -1  # the pair is one astral character
                continue
            break
        if 0xD800 <= code <= 0xDBFF:
            bad = m.start()
        elif 0xDC00 <= code <= 0xDFFF or not m.group().startswith("\\"):  # a low half first, or raw
            bad = m.start()
            break
    if bad >= 0:
        spelled = token[bad : bad + 6] if token[bad] == "\\" else token[bad]
        raise JSONLimitError(
            f"the lone surrogate {spelled!r} in a string (not Unicode text)",
            offset=at + bad,
            kind="surrogate",
        )


def _check_strings(text: str, start: int, end: int) -> None:
    """Check every string of the JSON in ``text[start:end]`` for lone surrogates; one search
    when there is none (the usual case)."""
    if _SUSPECT.search(text, start, end) is None:
        return
    for m in _STRING.finditer(text, start, end):
        if _SUSPECT.search(m.group()):
            _check_string(m.group(), m.start())


def _scan(text: str, start: int, max_depth: int) -> None:
    """Check the JSON value at ``start`` exactly, event by event: ``JSONLimitError`` at the
    first problem (nesting, numbers and NaN in text order, then surrogates). Text that is not
    JSON ends the scan quietly (the decoder reports it), as does the end of the value."""
    first = text[start : start + 1]
    if first not in ("[", "{"):  # a scalar
        m = _NUMBER.match(text, start) if first not in ('"', "N", "I") else None
        if m is not None:
            _check_number(m.group(), start)
        elif first == '"':
            found = _STRING.match(text, start)
            if found is not None:
                _check_strings(text, start, found.end())
        elif text.startswith(("NaN", "Infinity", "-Infinity"), start):
            word = "NaN" if first == "N" else "-Infinity" if first == "-" else "Infinity"
            raise JSONLimitError(f"{word}, which is not a JSON number", offset=start, kind="constant")
        return
    depth, pos, match = 0, start, _EVENT.match
    while True:
        m = match(text, pos)
        if m is None:
            return
        fill_end = m.end("fill")
        if fill_end > pos:
            _check_fill(text, pos, fill_end)
        kind, pos = m.lastgroup, m.end()
        if kind == "open":
            depth += 1
            if depth > max_depth:
                raise JSONLimitError(
                    f"arrays or objects nested more than {max_depth} levels deep",
                    offset=m.start(kind),
                    kind="depth",
                )
        elif kind == "close":
            depth -= 1
            if depth == 0:
                _check_strings(text, start, pos)
                return
        elif kind == "constant":
            at = m.start(kind)
            at -= text[at - 1] == "-" and m.group("constant") == "Infinity"
            word = text[at : m.end(kind)]
            raise JSONLimitError(f"{word}, which is not a JSON number", offset=at, kind="constant")


# Cheap signs that a decoded value may break a limit (searched in C over its text); only then
# does the exact scan run. A number with an exponent or of 300 digits or more may be past the
# float range or MAX_INT_DIGITS; fewer brackets than MAX_JSON_DEPTH cannot nest deeper.
_BIG_NUMBER = re.compile(r"[0-9][eE]|[0-9]{300}")


def _decode(text: str, pos: int, whole: bool, max_depth: int) -> Tuple[Any, int]:
    start = pos
    while whole and start < len(text) and text[start] in _WS:  # raw_decode takes none before
        start += 1
    # Decode first (in C, fast); on anything but a syntax error, or a sign of a problem in the
    # decoded text, the exact scan finds the first problem and its offset.
    try:
        value, end = _DECODER.raw_decode(text, start)
        if whole and end < len(text) and text[end:].strip(_WS):
            _DECODER.decode(text)  # the decoder's own "Extra data" error
    except (json.JSONDecodeError, DuplicateKeyError):
        _scan(text, start, max_depth)  # a problem before the syntax error is reported first
        raise
    except RecursionError:
        _scan(text, start, max_depth)
        # Not found by the scan: nesting within max_depth, but read from deep in the stack.
        raise JSONLimitError(
            "arrays or objects nested too deeply to read here", offset=start, kind="depth"
        ) from None
    except ValueError as e:  # NaN / Infinity (the hook), int() past its own digit limit
        _scan(text, start, max_depth)  # finds it, with its offset; else the start is the place
        kind = "constant" if "JSON number" in str(e) else "digits"
        raise JSONLimitError(str(e), offset=start, kind=kind) from None
    if (
        _BIG_NUMBER.search(text, start, end) is not None
        or text.count("[", start, end) + text.count("{", start, end) > max_depth
    ):
        _scan(text, start, max_depth)
    _check_strings(text, start, end)
    return value, end


def decode_strict(text: str, pos: int = 0, *, max_depth: int = MAX_JSON_DEPTH) -> Tuple[Any, int]:
    """The JSON value at ``pos`` in ``text`` and the offset after it (``JSONDecoder.raw_decode``),
    with ``DuplicateKeyError`` for an object, at any depth, that names a key twice, and
    ``JSONLimitError`` (offsets in ``text``) for what a tool call must not hold (see the module
    docstring; ``max_depth`` for a value that sits inside another); ``json.JSONDecodeError``
    for text that is not JSON.

    Example:
        >>> decode_strict('x {"a": [1, {"b": 2}]} y', 2)
        ({'a': [1, {'b': 2}]}, 22)
        >>> decode_strict("[" * 300)
        Traceback (most recent call last):
        ...
        agentgrammar.formats.arguments.JSONLimitError: the JSON holds arrays or objects nested more than 256 levels deep (at offset 256)
    """
    return _decode(text, pos, whole=False, max_depth=max_depth)


def loads_strict(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with ``DuplicateKeyError`` for a key given twice in one object and
    ``JSONLimitError`` as for ``decode_strict``.

    Example:
        >>> loads_strict("[1, 2]")
        [1, 2]
        >>> loads_strict("1e999")
        Traceback (most recent call last):
        ...
        agentgrammar.formats.arguments.JSONLimitError: the JSON holds the number 1e999, too large for a float (at offset 0)
    """
    return _decode(text, 0, whole=True, max_depth=max_depth)[0]


def _resolve(schema: Any, root: Any) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed."""
    seen = 0
    while isinstance(schema, Mapping) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref: str = schema["$ref"]
        if not ref.startswith("#"):
            return schema
        target: Any = root
        for part in (p for p in ref[1:].split("/") if p):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(target, Mapping) or part not in target:
                return schema
            target = target[part]
        schema, seen = target, seen + 1
    return schema


def _branch_for(value: Any, schema: Mapping[str, Any], root: Any) -> Optional[Any]:
    """The ``anyOf`` / ``oneOf`` / ``allOf`` branch whose properties hold every key of ``value``
    (a dict), or whose ``items`` apply (a list); None when no branch is an object / array."""
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if not isinstance(branches, list):
            continue
        for branch in branches:
            branch = _resolve(branch, root)
            if not isinstance(branch, Mapping):
                continue
            props = branch.get("properties")
            if isinstance(value, Mapping) and isinstance(props, Mapping) and all(k in props for k in value):
                return branch
            if isinstance(value, list) and isinstance(branch.get("items"), Mapping):
                return branch
    return None


def order_like(value: Any, schema: Any, root: Any = None, _depth: int = 0) -> Any:
    """``value`` with the members of every object in the order of its schema's ``properties``
    (nested objects and array items too, through local ``$ref`` s and the matching ``anyOf`` /
    ``oneOf`` branch); members the schema does not declare keep their order, after the others.
    ``root`` is the document that ``$ref`` s point into (default: ``schema``).

    Example:
        >>> schema = {"properties": {"a": {"$ref": "#/$defs/P"}, "b": {}},
        ...           "$defs": {"P": {"properties": {"x": {}, "y": {}}}}}
        >>> order_like({"b": 1, "a": {"y": 2, "x": 3}}, schema)
        {'a': {'x': 3, 'y': 2}, 'b': 1}
    """
    root = schema if root is None else root
    schema = _resolve(schema, root)
    if not isinstance(schema, Mapping) or _depth > 64:
        return value
    branch = (
        _branch_for(value, schema, root) if "properties" not in schema and "items" not in schema else None
    )
    if branch is not None:
        schema = branch
    if isinstance(value, Mapping):
        props = schema.get("properties")
        if isinstance(props, Mapping):
            out = {k: order_like(value[k], props[k], root, _depth + 1) for k in props if k in value}
            out.update((k, v) for k, v in value.items() if k not in out)
            return out
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        return [order_like(v, schema["items"], root, _depth + 1) for v in value]
    return value

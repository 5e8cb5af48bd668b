"""Docstring parsing for tools: the description and one description per parameter, from Google,
NumPy or reST (Sphinx) style docstrings.

The description is the text before the first section (``Args:``, ``Parameters`` + underline,
``:param x:``, ...): the summary line and any paragraphs after it. Sections other than the
parameter sections (``Returns``, ``Raises``, ``Examples``, ...) are left out, so doctests and
return notes never reach the model.

Example:
    >>> doc = parse_docstring('''Get the weather.
    ...
    ... Args:
    ...     city: The city name.
    ...     unit (str): "c" or "f".
    ... ''')
    >>> doc.description
    'Get the weather.'
    >>> doc.params
    {'city': 'The city name.', 'unit': '"c" or "f".'}
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

__all__ = ["Docstring", "parse_docstring"]

# Section names, lower case. Google sections end with ":"; NumPy ones are underlined with dashes.
_PARAM_SECTIONS = frozenset(
    {
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "kwargs",
        "other parameters",
        "other params",
    }
)
_OTHER_SECTIONS = frozenset(
    {
        "attributes",
        "example",
        "examples",
        "methods",
        "note",
        "notes",
        "raises",
        "references",
        "return",
        "returns",
        "see also",
        "todo",
        "warning",
        "warnings",
        "warns",
        "yield",
        "yields",
    }
)
_GOOGLE_HEADER = re.compile(r"^([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}[A-Za-z_]\w*)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_UNDERLINE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ITEM = re.compile(r"^(\*{0,2}[A-Za-z_]\w*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::.*)?$")
_REST_FIELD = re.compile(r"^\s*:[A-Za-z]")
_REST_PARAM = re.compile(r"^:(?:param|parameter|arg|argument|key|keyword)\s+([^:]*?)\s*:(.*)$")


@dataclass(frozen=True)
class Docstring:
    """What a tool needs from a docstring: the ``description`` (the text before the first
    section) and ``params``, the description of each documented parameter by name (leading
    ``*`` of ``*args`` / ``**kwargs`` removed), in docstring order.

    Example:
        >>> Docstring("Add two numbers.\\n\\nIntegers only.").summary
        'Add two numbers.'
    """

    description: str = ""
    params: Dict[str, str] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        """The first paragraph of the description, on one line."""
        first = self.description.split("\n\n", 1)[0]
        return " ".join(first.split())


def parse_docstring(doc: Optional[str], style: str = "auto") -> Docstring:
    """Parse ``doc`` (a raw ``__doc__``, indentation and all). ``style`` is ``"google"``,
    ``"numpy"``, ``"rest"`` or ``"auto"`` (reST when a ``:param`` style field appears, NumPy when
    a section title is underlined with dashes, Google otherwise). ``None`` or an empty string
    gives an empty ``Docstring``.

    Example:
        >>> parse_docstring(':param int a: First.\\n:param b: Second,\\n    continued.').params
        {'a': 'First.', 'b': 'Second, continued.'}
    """
    if not doc or not doc.strip():
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    if style == "auto":
        style = _detect_style(lines)
    if style == "google":
        return _parse_google(lines)
    if style == "numpy":
        return _parse_numpy(lines)
    if style == "rest":
        return _parse_rest(lines)
    raise ValueError(f"unknown docstring style {style!r} (expected 'google', 'numpy', 'rest' or 'auto')")


def _detect_style(lines: List[str]) -> str:
    if any(_REST_FIELD.match(line) for line in lines):
        return "rest"
    if any(_is_numpy_header(lines, i) for i in range(len(lines))):
        return "numpy"
    return "google"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _text(lines: List[str]) -> str:
    """Lines as text, without the blank lines at either end."""
    return "\n".join(line.rstrip() for line in lines).strip()


def _join(lines: List[str]) -> str:
    """Wrapped lines as one line."""
    return " ".join(" ".join(lines).split())


def _items(body: List[str], is_item_line: Callable[[str], object]) -> List[Tuple[str, List[str]]]:
    """Split a section body into items: a line at the body's smallest indent that
    ``is_item_line`` accepts starts an item; more indented lines continue it."""
    filled = [line for line in body if line.strip()]
    if not filled:
        return []
    base = min(_indent(line) for line in filled)
    items: List[Tuple[str, List[str]]] = []
    for line in body:
        if not line.strip():
            continue
        if _indent(line) == base and is_item_line(line.strip()):
            items.append((line.strip(), []))
        elif items and _indent(line) > base:
            items[-1][1].append(line.strip())
    return items


def _store(params: Dict[str, str], names: str, description: str) -> None:
    for name in names.split(","):
        name = name.strip().lstrip("*")
        if name and name not in params:
            params[name] = description


# -- Google ---------------------------------------------------------------------------------------


def _google_section(line: str) -> Optional[str]:
    match = _GOOGLE_HEADER.match(line.strip())
    if match is None:
        return None
    name = " ".join(match.group(1).lower().split())
    return name if name in _PARAM_SECTIONS or name in _OTHER_SECTIONS else None


def _parse_google(lines: List[str]) -> Docstring:
    headers = [i for i, line in enumerate(lines) if _google_section(line) is not None]
    description = _text(lines[: headers[0]] if headers else lines)
    params: Dict[str, str] = {}
    for i in headers:
        if _google_section(lines[i]) not in _PARAM_SECTIONS:
            continue
        top = _indent(lines[i])
        body: List[str] = []
        for line in lines[i + 1 :]:
            if line.strip() and _indent(line) <= top:
                break
            body.append(line)
        for first, more in _items(body, _GOOGLE_ITEM.match):
            match = _GOOGLE_ITEM.match(first)
            assert match is not None
            _store(params, match.group(1), _join([match.group(2), *more]))
    return Docstring(description, params)


# -- NumPy ----------------------------------------------------------------------------------------


def _is_numpy_header(lines: List[str], i: int) -> bool:
    return (
        i + 1 < len(lines)
        and bool(lines[i].strip())
        and not _NUMPY_UNDERLINE.match(lines[i])
        and bool(_NUMPY_UNDERLINE.match(lines[i + 1]))
    )


def _parse_numpy(lines: List[str]) -> Docstring:
    headers = [i for i in range(len(lines)) if _is_numpy_header(lines, i)]
    description = _text(lines[: headers[0]] if headers else lines)
    params: Dict[str, str] = {}
    for k, i in enumerate(headers):
        if " ".join(lines[i].lower().split()) not in _PARAM_SECTIONS:
            continue
        end = headers[k + 1] if k + 1 < len(headers) else len(lines)
        for first, more in _items(lines[i + 2 : end], _NUMPY_ITEM.match):
            match = _NUMPY_ITEM.match(first)
            assert match is not None
            _store(params, match.group(1), _join(more))
    return Docstring(description, params)


# -- reST -----------------------------------------------------------------------------------------


def _parse_rest(lines: List[str]) -> Docstring:
    fields = [i for i, line in enumerate(lines) if _REST_FIELD.match(line) and _indent(line) == 0]
    description = _text(lines[: fields[0]] if fields else lines)
    params: Dict[str, str] = {}
    for k, i in enumerate(fields):
        match = _REST_PARAM.match(lines[i])
        if match is None or not match.group(1):
            continue
        end = fields[k + 1] if k + 1 < len(fields) else len(lines)
        more = [line for line in lines[i + 1 : end] if _indent(line) > 0]
        _store(params, match.group(1).split()[-1], _join([match.group(2), *more]))
    return Docstring(description, params)

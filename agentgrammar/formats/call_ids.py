"""Call ids that a family writes in the call's head in place of the bare tool name
(``AgentFormat.call_id_form``): Kimi-K2 opens a call with ``functions.NAME:IDX``, and that whole
text is the call's id, which the tool's result names again. Also the ids a format makes
(``new_call_id``) and the checks of the ids it writes.

A form is a pattern with one ``{name}`` and, after it, one ``{index}`` (ASCII digits): the text
before the name, between the two (non-empty: it ends the name) and after the index are fixed.

Example:
    >>> form = CallIdForm.parse("functions.{name}:{index}")
    >>> form.make("get_weather", 3)
    'functions.get_weather:3'
    >>> form.read("functions.get_weather:3"), form.read("get_weather:3")
    (('get_weather', '3'), None)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Tuple

from ..registry import ToolCall
from .errors import RenderError

if TYPE_CHECKING:
    from .format import AgentFormat

__all__ = ["MAX_INDEX_DIGITS", "CallIdForm", "CallIndexForm", "check_call_id", "id_in_head", "new_call_id"]

#: The most digits of a call index in a ``call_id_form`` head: bounded, so that a weak model
#: cannot loop writing digits (a million calls in a conversation is past any real one).
MAX_INDEX_DIGITS = 6

_ALNUM = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# new_call_id scrambles the index with this multiplier: odd and not a multiple of 31, so it is a
# bijection modulo 62**n (ids never repeat) while neighbouring indices get unlike ids.
_ID_MULTIPLIER = 0x9E3779B97F4A7C15


@dataclass(frozen=True)
class CallIdForm:
    """A call-id pattern split at its fields: ``prefix {name} middle {index} suffix``."""

    prefix: str
    middle: str
    suffix: str

    @classmethod
    def parse(cls, form: str) -> "CallIdForm":
        """The form of the pattern ``form``; ``ValueError`` naming what is wrong with it.

        Example:
            >>> CallIdForm.parse("{index}{name}")
            Traceback (most recent call last):
            ...
            ValueError: call_id_form must hold '{name}' once and, after it, '{index}' once, separated by a non-empty text, got '{index}{name}'
        """
        if not isinstance(form, str):
            raise ValueError(f"call_id_form must be a string, got {form!r}")
        name_at, index_at = form.find("{name}"), form.find("{index}")
        ok = (
            form.count("{name}") == 1
            and form.count("{index}") == 1
            and 0 <= name_at
            and name_at + len("{name}") < index_at
        )
        if not ok:
            raise ValueError(
                "call_id_form must hold '{name}' once and, after it, '{index}' once, separated by "
                f"a non-empty text, got {form!r}"
            )
        middle = form[name_at + len("{name}") : index_at]
        suffix = form[index_at + len("{index}") :]
        if any(c in "{}" for c in form[:name_at] + middle + suffix):
            raise ValueError(f"call_id_form has braces besides its two fields: {form!r}")
        if middle[0].isdigit() or (suffix and suffix[0].isdigit()):
            raise ValueError(f"call_id_form must delimit the index with non-digits: {form!r}")
        return cls(form[:name_at], middle, suffix)

    def make(self, name: str, index: int) -> str:
        """The id of the call to ``name`` with index ``index``."""
        return f"{self.prefix}{name}{self.middle}{index}{self.suffix}"

    def read(self, call_id: str) -> Optional[Tuple[str, str]]:
        """``(name, index digits)`` of an id of this form, or None when ``call_id`` is not one
        (the name is what lies between the prefix and the last ``middle``)."""
        if not (
            isinstance(call_id, str) and call_id.startswith(self.prefix) and call_id.endswith(self.suffix)
        ):
            return None
        core = call_id[len(self.prefix) : len(call_id) - len(self.suffix)]
        name, sep, digits = core.rpartition(self.middle)
        if not sep or not name or not re.fullmatch("[0-9]+", digits):
            return None
        return name, digits


@dataclass(frozen=True)
class CallIndexForm:
    """A call head that holds the call's index (digits) beside the name, in either order, as
    ``"{index}SEP{name}"`` or ``"{name}SEP{index}"`` (``AgentFormat.call_index``: Cohere's
    ``id="0" name="NAME"``, Kimi-K3's ``tool="NAME" index="0"``); the index is the call's id.

    Example:
        >>> form = CallIndexForm.parse('{index}" name="{name}')
        >>> form.index_first, form.separator, form.make("now", 2)
        (True, '" name="', '2" name="now')
    """

    index_first: bool
    separator: str

    @classmethod
    def parse(cls, form: str) -> "CallIndexForm":
        """The form of the pattern ``form``; ``ValueError`` naming what is wrong with it.

        Example:
            >>> CallIndexForm.parse("{name}{index}")
            Traceback (most recent call last):
            ...
            ValueError: call_index must be '{index}SEP{name}' or '{name}SEP{index}' with a non-empty SEP without braces or digits, got '{name}{index}'
        """
        if isinstance(form, str):
            for first, second, index_first in (("{index}", "{name}", True), ("{name}", "{index}", False)):
                sep = form[len(first) : len(form) - len(second)]
                if (
                    form.startswith(first)
                    and form.endswith(second)
                    and len(form) > len(first) + len(second)
                    and not any(c in "{}0123456789" for c in sep)
                ):
                    return cls(index_first, sep)
        raise ValueError(
            "call_index must be '{index}SEP{name}' or '{name}SEP{index}' with a non-empty SEP "
            f"without braces or digits, got {form!r}"
        )

    def make(self, name: str, index: str | int) -> str:
        """The head's text between the call's begin and its name end."""
        first, second = (index, name) if self.index_first else (name, index)
        return f"{first}{self.separator}{second}"


def new_call_id(fmt: "AgentFormat", index: int, name: Optional[str] = None) -> str:
    """An id for the ``index``-th call of a conversation in ``fmt``'s shape:
    ``AgentFormat.new_call_id`` (which documents it)."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a call index is a non-negative int, got {index!r}")
    if fmt.call_index is not None:  # the head holds the index: it is the id
        return str(index)
    if fmt.call_id_form is not None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"the {fmt.name} format's call ids hold the tool's name: give name")
        if index >= 10**MAX_INDEX_DIGITS:
            raise ValueError(f"the {fmt.name} format's call indices have up to {MAX_INDEX_DIGITS} digits")
        return CallIdForm.parse(fmt.call_id_form).make(name, index)
    n = fmt.call_id_length
    if n is None:
        return f"call_{index}"
    space = len(_ALNUM) ** n
    x = (index * _ID_MULTIPLIER + 0x2545F4914F6CDD1D) % space
    out = []
    for _ in range(n):
        x, r = divmod(x, len(_ALNUM))
        out.append(_ALNUM[r])
    return "".join(out)


def id_in_head(fmt: "AgentFormat", call: ToolCall, position: int) -> str:
    """The id a ``call_id_form`` head holds: the call's own id (which must be of the form,
    for this call's name), else the id of its ``position`` in the turn, as the templates
    number calls without one."""
    assert fmt.call_id_form is not None
    form = CallIdForm.parse(fmt.call_id_form)
    if call.id is None:
        return form.make(call.name, position)
    read = form.read(call.id)
    if read is None or read[0] != call.name or len(read[1]) > MAX_INDEX_DIGITS:
        raise RenderError(
            f"the {fmt.name} format writes the call id in the call's head as "
            f"{fmt.call_id_form!r} with the call's name ({call.name!r}) and an index of up to "
            f"{MAX_INDEX_DIGITS} digits, got {call.id!r}"
        )
    return call.id


def check_call_id(fmt: "AgentFormat", call_id: str) -> None:
    """``RenderError`` when ``call_id`` is not of the shape ``fmt`` writes (``call_id_length``,
    or letters and digits after ``id_begin``)."""
    n = fmt.call_id_length
    if n is not None and not re.fullmatch(f"[A-Za-z0-9]{{{n}}}", call_id):
        raise RenderError(
            f"the {fmt.name} format's call ids are {n} ASCII letters and digits, got {call_id!r} "
            "(make one with new_call_id)"
        )
    # an id written raw (after id_begin) ends at the name end: the grammar's letters and
    # digits only, so that no id holds a marker
    if n is None and fmt.id_begin is not None and not re.fullmatch("[A-Za-z0-9]+", call_id):
        raise RenderError(
            f"the {fmt.name} format writes call ids raw: ASCII letters and digits only, got {call_id!r}"
        )

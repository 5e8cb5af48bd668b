"""Call ids that a family writes in the call's head in place of the bare tool name
(``AgentFormat.call_id_form``): Kimi-K2 opens a call with ``functions.NAME:IDX``, and that whole
text is the call's id, which the tool's result names again.

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
from typing import Optional, Tuple

__all__ = ["CallIdForm", "CallIndexForm"]


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

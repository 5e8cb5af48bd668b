"""The checks of an ``AgentFormat``'s fields, run when one is made: a bad combination is a
``ValueError`` naming it. Tuple fields given as a string or a list are stored as tuples, and
``trigger`` defaults to the text every group of calls opens with.

Example:
    >>> from agentgrammar.formats import AgentFormat
    >>> AgentFormat(think_begin="<think>")
    Traceback (most recent call last):
    ...
    ValueError: think_begin and think_end go together: give both or neither
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Tuple

from .call_ids import CallIdForm
from .styled_call import check_styled

if TYPE_CHECKING:
    from .format import AgentFormat

__all__ = ["LAYOUTS", "validate_format"]

#: The values of ``AgentFormat.call_layout``.
LAYOUTS = ("json_object", "name_then_json", "xml", "pythonic", "styled")


def _as_tuple(value: Any) -> Tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def validate_format(fmt: "AgentFormat") -> None:
    """Check ``fmt``'s fields (``ValueError``) and store the normalized ones (it is frozen:
    through ``object.__setattr__``, as a dataclass's own ``__post_init__`` does)."""
    if (fmt.think_begin is None) != (fmt.think_end is None):
        raise ValueError("think_begin and think_end go together: give both or neither")
    if (fmt.response_begin is None) != (fmt.response_end is None):
        raise ValueError("response_begin and response_end go together: give both or neither")
    for label in ("think_begin", "think_end", "response_begin", "response_end"):
        if getattr(fmt, label) == "":
            raise ValueError(f"{label} must not be empty (use None for no block)")
    for label in ("name_key", "arguments_key"):
        if not isinstance(getattr(fmt, label), str):
            raise ValueError(f"{label} must be a string (a JSON key), got {getattr(fmt, label)!r}")
    if fmt.call_layout not in LAYOUTS:
        raise ValueError(f"call_layout must be one of {LAYOUTS}, got {fmt.call_layout!r}")
    if fmt.whitespace not in ("compact", "flexible"):
        raise ValueError(f"whitespace must be 'compact' or 'flexible', got {fmt.whitespace!r}")
    if fmt.call_layout == "name_then_json" and not fmt.name_end:
        raise ValueError(f"the {fmt.call_layout} layout needs name_end (what follows the tool name)")
    if fmt.call_layout == "xml" and not (fmt.param_begin and fmt.param_name_end and fmt.param_end):
        raise ValueError("the xml layout needs param_begin, param_name_end and param_end")
    if fmt.call_layout == "xml" and not (fmt.name_end or fmt.call_end):
        raise ValueError("an xml layout without name_end needs call_end (the name ends at it)")
    if fmt.param_name_end_json is not None and (fmt.call_layout != "xml" or not fmt.param_name_end_json):
        raise ValueError("param_name_end_json is a non-empty marker of the xml layout")
    check_styled(fmt)
    if fmt.call_id_form is not None:
        if fmt.call_layout != "name_then_json" or fmt.id_begin is not None:
            raise ValueError("call_id_form is for the name_then_json layout, without id_begin")
        CallIdForm.parse(fmt.call_id_form)
    if fmt.calls_end and not fmt.calls_begin:
        raise ValueError("calls_end needs calls_begin")
    sep = tuple(fmt.separators)
    if len(sep) != 2 or not all(isinstance(s, str) for s in sep):
        raise ValueError(f"separators must be two strings (item, key), got {fmt.separators!r}")
    object.__setattr__(fmt, "separators", sep)
    for label in (
        "stop",
        "call_begin_variants",
        "name_end_variants",
        "calls_begin_variants",
        "argument_excludes",
    ):
        value = _as_tuple(getattr(fmt, label))
        if not all(isinstance(v, str) for v in value):
            raise ValueError(f"{label} must be strings, got {getattr(fmt, label)!r}")
        object.__setattr__(fmt, label, value)
    if fmt.name_end_variants and (
        fmt.call_layout == "json_object" or len(fmt.name_end_variants) != len(fmt.call_begin_variants)
    ):
        raise ValueError(
            "name_end_variants pairs with call_begin_variants (one each, same length) in the "
            "name_then_json and xml layouts"
        )
    if any(not v for v in fmt.name_end_variants):
        raise ValueError("name_end_variants must not be empty strings")
    if fmt.calls_begin_variants and (not fmt.calls_begin or any(not v for v in fmt.calls_begin_variants)):
        raise ValueError("calls_begin_variants needs calls_begin and non-empty variants")
    if fmt.calls_or_text and fmt.has_response:
        raise ValueError("calls_or_text is for formats with free text (no response block)")
    if fmt.id_key is not None and (
        fmt.call_layout != "json_object" or fmt.id_key in (fmt.name_key, fmt.arguments_key)
    ):
        raise ValueError("id_key is a third key of the json_object layout (not the name or arguments key)")
    if fmt.id_begin is not None and (fmt.call_layout != "name_then_json" or not fmt.id_begin):
        raise ValueError("id_begin is a non-empty marker of the name_then_json layout")
    n = fmt.call_id_length
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 64):
        raise ValueError(f"call_id_length must be an int from 1 to 64 or None, got {n!r}")
    trigger = fmt.trigger if fmt.trigger is not None else (fmt.calls_begin or fmt.call_begin or fmt._opener())
    if not trigger:
        raise ValueError("tool calls need a non-empty trigger: set call_begin, calls_begin or trigger")
    if not fmt._opener().startswith(trigger):
        raise ValueError(f"the trigger {trigger!r} must start every tool call block ({fmt._opener()!r})")
    object.__setattr__(fmt, "trigger", trigger)

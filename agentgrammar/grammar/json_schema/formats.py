"""``format`` strings as shared base rules (``json_format_<name>``) and as automata."""

from __future__ import annotations

from functools import lru_cache
from typing import (
    Any,
    Dict,
    Mapping,
    Optional,
)

from .. import json_values
from ..char_dfa import CharDFA
from ..ir import (
    Expr,
    Rule,
)
from ..normalize import normalize_rules
from .keywords import _INTERNAL_KW

#: The base rule of each supported format's JSON string (``json_format_date_time``, ...).
_FORMAT_RULES = {f: "json_format_" + f.replace("-", "_") for f in json_values.SUPPORTED_FORMATS}


_FORMAT_OF_RULE = {rule: f for f, rule in _FORMAT_RULES.items()}


# Their bodies, and those of the rules their counted repeats use, by rule name (_format_rule_body).
_FORMAT_BODIES: Dict[str, Expr] = {}


def _format_rule_body(name: str) -> Expr:
    """The body of format rule ``name`` (``_FORMAT_RULES``) or of one of its repeat rules.

    A format's string is large (``date-time``: exact month lengths and leap years) and the
    same in every schema, so it is a base rule: its checks and serialized nodes are derived
    once, however many properties and schemas use it. It is normalized here, once: its counted
    repeats' items become rules of their own (``<name>_repeat_<n>``, base rules too), which
    the normalization of every grammar using it would otherwise redo and serialize anew.
    """
    if name not in _FORMAT_BODIES:  # a format's own rule (its repeat rules come with it)
        body = json_values.format_string(_FORMAT_OF_RULE[name])
        assert body is not None
        for r in normalize_rules([Rule(name, body)], use_pieces=False):
            _FORMAT_BODIES[r.name] = r.body
    return _FORMAT_BODIES[name]


@lru_cache(maxsize=None)
def format_dfa(name: str) -> CharDFA:
    """The automaton of the characters of format ``name`` (a supported one), built once."""
    expr = json_values.format_chars(name)
    assert expr is not None
    return CharDFA.from_expr(expr)


def sole_format(schema: Mapping[str, Any]) -> Optional[str]:
    """The format of a string schema when it is its only character constraint (a supported
    format, no pattern, no internal keyword), else None."""
    fmt = schema.get("format")
    if fmt not in json_values.SUPPORTED_FORMATS or "pattern" in schema:
        return None
    return None if any(schema.get(k) for k in _INTERNAL_KW) else fmt

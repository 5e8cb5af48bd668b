"""Raw string values of the xml layouts (``formats/xml_params.py``): a format under length
bounds, and values that may or may not hold the parameter's end."""

from __future__ import annotations

import warnings
from typing import Any, Dict

import pytest

from agentgrammar.formats.xml_params import raw_string_content
from agentgrammar.grammar.char_dfa import CharDFA

END = "\n</parameter>"


def _content(schema: Dict[str, Any], end: str = END) -> Any:
    found = raw_string_content({"type": "string", **schema}, end)
    assert found is not None and found.type == "grammar"
    return found.grammar


@pytest.mark.parametrize(
    "fmt, bounds",
    [("hostname", {"maxLength": 253}), ("ipv6", {"minLength": 2, "maxLength": 45}), ("uuid", {"minLength": 36, "maxLength": 36})],
)  # fmt: skip
def test_bounds_that_every_string_of_a_format_meets_leave_its_regex(fmt: str, bounds: Dict[str, Any]) -> None:
    # Once built as the format's automaton times a count, 40-120 ms a parameter, with a warning
    # where that product was too large (a hostname of at most 253 characters).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bounded = _content({"format": fmt, **bounds})
    assert bounded.digest == _content({"format": fmt}).digest
    assert len(bounded.rules) == 1  # the format's regex: no character of it begins the end


@pytest.mark.parametrize(
    "schema",
    [
        {"pattern": "^[a-z]+$", "minLength": 1},
        {"pattern": "^[0-9]{9}$", "maxLength": 9},
        {"pattern": "^[a-z]{2,4}$", "format": "hostname", "maxLength": 4},
    ],
)
def test_bounds_that_every_string_of_a_pattern_meets_add_nothing(
    schema: Dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the JSON layouts: the pattern's automaton (with the format's), never paired with
    the count."""
    paired = []
    with_length = CharDFA.with_length
    monkeypatch.setattr(
        CharDFA, "with_length", lambda d, lo, hi: paired.append((lo, hi)) or with_length(d, lo, hi)
    )
    unbounded = {k: v for k, v in schema.items() if k not in ("minLength", "maxLength")}
    assert _content(schema).digest == _content(unbounded).digest
    assert paired == []
    assert not _content({"pattern": "^[a-z]+$", "minLength": 2}).accepts("a")  # not implied: kept


def test_a_bound_inside_a_formats_lengths_stays_exact() -> None:
    widest = "1111:2222:3333:4444:5555:6666:255.255.255.255"
    inside = _content({"format": "ipv6", "maxLength": 44})
    assert not inside.accepts(widest) and inside.accepts("1111:2222:3333:4444:5555:6666:7777:8888")
    assert _content({"format": "ipv6", "maxLength": 45}).accepts(widest)
    assert not _content({"format": "ipv6", "minLength": 3}).accepts("::")


def test_a_value_that_may_hold_the_end_never_does() -> None:
    # an email's quoted local part may hold "<": the end "</p>" is kept out of the value
    assert not _content({"format": "email"}, "</p>").accepts('"x</p>"@a.io')
    assert _content({"format": "email"}, "</p>").accepts('"a<b"@x.io')
    assert _content({"format": "email"}).accepts('"a<b"@x.io')


def test_a_format_past_the_product_limit_is_its_own_content_with_a_warning() -> None:
    with pytest.warns(UserWarning, match="length bounds"):
        loose = _content({"format": "email", "maxLength": 254})
    assert loose.digest == _content({"format": "email"}).digest
    assert loose.accepts("a" * 300 + "@example.com")  # over-approximated: validation checks it

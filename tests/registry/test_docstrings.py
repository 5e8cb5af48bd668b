"""Behaviour tests for agentgrammar/registry/docstrings.py: Google, NumPy and reST docstrings
give the description (text before the first section) and per-parameter descriptions."""

from __future__ import annotations

import pytest

from agentgrammar.registry.docstrings import Docstring, parse_docstring

GOOGLE = """Get the current weather in a city.

    Uses the public API; results are cached
    for ten minutes.

    Args:
        city: The city name, e.g.
            "Paris" or "New York".
        unit (str, optional): Temperature unit:
            "c" or "f". Defaults to "c".
        *tags: Ignored tags.
        **extra (dict): More options.

    Returns:
        str: A sentence about the weather.

    Raises:
        ValueError: for an unknown city.

    Example:
        >>> get_weather("Paris")
        'sunny'
    """

NUMPY = """Get the current weather in a city.

    Uses the public API.

    Parameters
    ----------
    city : str
        The city name, e.g.
        "Paris".
    unit : {'c', 'f'}, optional
        Temperature unit.
    x, y : float
        Coordinates.
    flag
        A bare name.

    Returns
    -------
    str
        A sentence.

    Examples
    --------
    >>> get_weather("Paris")
    """

REST = """Get the current weather in a city.

    Uses the public API.

    :param city: The city name, e.g.
        "Paris".
    :param str unit: Temperature unit.
    :type unit: str
    :param Optional[List[str]] tags: Tags.
    :keyword timeout: Seconds to wait.
    :returns: A sentence.
    :rtype: str
    :raises ValueError: for an unknown city.
    """


def test_google() -> None:
    doc = parse_docstring(GOOGLE)
    assert doc.description == (
        "Get the current weather in a city.\n\nUses the public API; results are cached\nfor ten minutes."
    )
    assert doc.summary == "Get the current weather in a city."
    assert doc.params == {
        "city": 'The city name, e.g. "Paris" or "New York".',
        "unit": 'Temperature unit: "c" or "f". Defaults to "c".',
        "tags": "Ignored tags.",
        "extra": "More options.",
    }


def test_numpy() -> None:
    doc = parse_docstring(NUMPY)
    assert doc.description == "Get the current weather in a city.\n\nUses the public API."
    assert doc.params == {
        "city": 'The city name, e.g. "Paris".',
        "unit": "Temperature unit.",
        "x": "Coordinates.",
        "y": "Coordinates.",
        "flag": "A bare name.",
    }


def test_rest() -> None:
    doc = parse_docstring(REST)
    assert doc.description == "Get the current weather in a city.\n\nUses the public API."
    assert doc.params == {
        "city": 'The city name, e.g. "Paris".',
        "unit": "Temperature unit.",
        "tags": "Tags.",
        "timeout": "Seconds to wait.",
    }


@pytest.mark.parametrize("doc", [GOOGLE, NUMPY, REST])
def test_auto_detection_matches_explicit_style(doc: str) -> None:
    style = {GOOGLE: "google", NUMPY: "numpy", REST: "rest"}[doc]
    assert parse_docstring(doc) == parse_docstring(doc, style=style)


@pytest.mark.parametrize("doc", [None, "", "   \n  "])
def test_empty(doc: str) -> None:
    assert parse_docstring(doc) == Docstring("", {})


def test_summary_only_and_no_sections() -> None:
    assert parse_docstring("Add two numbers.") == Docstring("Add two numbers.", {})
    doc = parse_docstring("""Add two
    numbers.

    Note the order: a then b.
    """)
    assert doc.summary == "Add two numbers."
    assert doc.description == "Add two\nnumbers.\n\nNote the order: a then b."
    assert doc.params == {}


def test_google_other_sections_end_parameters_and_are_left_out() -> None:
    doc = parse_docstring("""Do it.

    Returns:
        x: not a parameter.
    Args:
        a: First.
    Raises:
        b: not a parameter either.
    """)
    assert doc.description == "Do it."
    assert doc.params == {"a": "First."}


def test_google_colon_lines_that_are_not_sections_stay_in_the_description() -> None:
    doc = parse_docstring("""Search the index.

    Usage:
        call it.

    Arguments:
        query: Words.
    """)
    assert doc.description == "Search the index.\n\nUsage:\n    call it."
    assert doc.params == {"query": "Words."}


def test_google_blank_line_inside_a_description_and_first_mention_wins() -> None:
    doc = parse_docstring("""Do it.

    Args:
        a: First line.

            Second paragraph.
        a: Again.
    """)
    assert doc.params == {"a": "First line. Second paragraph."}


def test_unknown_style() -> None:
    with pytest.raises(ValueError, match="unknown docstring style"):
        parse_docstring("x", style="epydoc")

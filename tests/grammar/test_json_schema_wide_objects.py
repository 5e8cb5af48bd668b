"""Wide objects convert in linear time (issue 38): the choice of the first member was rebuilt
for every optional property, so 16,000 optional properties took 13 s (4,000: 0.6 s).

Example:
    python -m pytest -q tests/grammar/test_json_schema_wide_objects.py -p no:cacheprovider
"""

from __future__ import annotations

import time

import pytest

from agentgrammar import Compiler, Grammar, Matcher, Vocabulary


def _wide(n: int, required: tuple = ()) -> dict:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)}}
    if required:
        schema["required"] = list(required)
    return schema


def test_sixteen_thousand_optional_properties_convert_in_linear_time() -> None:
    start = time.perf_counter()
    Grammar.from_json_schema(_wide(16000))
    assert time.perf_counter() - start < 4.0  # about 0.3 s; 8.6 to 13 s when quadratic


_VOCAB = Vocabulary([bytes([b]) for b in range(32, 127)] + [b"</s>"])


@pytest.mark.parametrize(
    "required, text, ok",
    [
        ((), "{}", True),
        ((), '{"p3": "x"}', True),
        ((), '{"p0": "a", "p2": "b", "p4": "c"}', True),
        ((), '{"p2": "b", "p0": "a"}', False),  # schema order
        ((), '{"p0": "a", "p0": "a"}', False),
        (("p2",), '{"p2": "b"}', True),
        (("p2",), '{"p1": "a", "p2": "b", "p3": "c"}', True),
        (("p2",), '{"p1": "a", "p3": "c"}', False),
        (("p2",), "{}", False),
        (("p0", "p4"), '{"p0": "a", "p4": "b"}', True),
        (("p0", "p4"), '{"p4": "b"}', False),
    ],
)
def test_the_language_of_optional_and_required_members(required: tuple, text: str, ok: bool) -> None:
    schema = dict(_wide(5, required), additionalProperties=False)
    matcher = Matcher(Compiler(_VOCAB).compile(Grammar.from_json_schema(schema)))
    assert (matcher.accept_string(text) and matcher.is_completed()) == ok

"""Behaviour tests for agentgrammar/registry/signature.py: the JSON Schema (and argument
binding) that function signatures and Pydantic models give."""

from __future__ import annotations

import enum
import functools
import sys
from typing import Annotated, Any, Callable, Dict, List, Literal, Optional, Tuple, Union

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agentgrammar import Grammar, ToolError
from agentgrammar.registry.signature import signature_model, subschemas, tool_json_schema


def schema_of(func: Callable[..., Any], strict: bool = True, **descriptions: str) -> Dict[str, Any]:
    return signature_model(func, tool_name="t", descriptions=descriptions, strict=strict).schema


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    """A postal address."""

    street: str
    zip: Optional[int] = None


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")
    key: str


def test_scalars_defaults_and_required() -> None:
    def f(a: int, b: float, c: str, d: bool, e: int = 3, g: str = "x") -> None: ...

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "c": {"type": "string"},
            "d": {"type": "boolean"},
            "e": {"type": "integer", "default": 3},
            "g": {"type": "string", "default": "x"},
        },
        "required": ["a", "b", "c", "d"],
        "additionalProperties": False,
    }
    assert list(schema_of(f)) == ["type", "properties", "required", "additionalProperties"]
    assert list(schema_of(f)["properties"]) == ["a", "b", "c", "d", "e", "g"]


def test_literal_optional_union_and_enum() -> None:
    def f(
        unit: Literal["c", "f"],
        n: Literal[1, 2],
        maybe: Optional[int],
        either: Union[int, str] = 0,
        color: Color = Color.RED,
    ) -> None: ...

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "unit": {"enum": ["c", "f"], "type": "string"},
            "n": {"enum": [1, 2], "type": "integer"},
            "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 0},
            "color": {"$ref": "#/$defs/Color", "default": "red"},
        },
        "required": ["unit", "n", "maybe"],
        "additionalProperties": False,
        "$defs": {"Color": {"enum": ["red", "blue"], "title": "Color", "type": "string"}},
    }


def test_annotated_field_constraints_and_field_defaults() -> None:
    def f(
        count: Annotated[int, Field(ge=0, le=10, description="How many.")],
        name: Annotated[str, Field(min_length=1, max_length=5, pattern="^[a-z]+$")] = "abc",
        ratio: float = Field(0.5, gt=0, lt=1),
        tags: Annotated[List[str], Field(max_length=3)] = [],  # noqa: B006
    ) -> None: ...

    assert schema_of(f)["properties"] == {
        "count": {"type": "integer", "minimum": 0, "maximum": 10, "description": "How many."},
        "name": {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^[a-z]+$", "default": "abc"},
        "ratio": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1, "default": 0.5},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3, "default": []},
    }
    assert schema_of(f)["required"] == ["count"]


def test_collections_and_nested_models() -> None:
    def f(
        ids: List[int],
        weights: Dict[str, float],
        pair: Tuple[int, str],
        home: Address,
        others: Optional[List[Address]] = None,
    ) -> None: ...

    assert schema_of(f) == {
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "integer"}},
            "weights": {"type": "object", "additionalProperties": {"type": "number"}},
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "integer"}, {"type": "string"}],
                "minItems": 2,
                "maxItems": 2,
            },
            "home": {"$ref": "#/$defs/Address"},
            "others": {
                "anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Address"}}, {"type": "null"}],
                "default": None,
            },
        },
        "required": ["ids", "weights", "pair", "home"],
        "additionalProperties": False,
        "$defs": {
            "Address": {
                "type": "object",
                "title": "Address",
                "description": "A postal address.",
                "properties": {
                    "street": {"type": "string"},
                    "zip": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                },
                "required": ["street"],
                "additionalProperties": False,
            }
        },
    }


def test_not_strict_leaves_objects_open() -> None:
    def f(home: Address) -> None: ...

    schema = schema_of(f, strict=False)
    assert "additionalProperties" not in schema
    assert "additionalProperties" not in schema["$defs"]["Address"]


def test_strict_keeps_an_explicit_additional_properties() -> None:
    def f(o: Open) -> None: ...

    assert schema_of(f)["$defs"]["Open"]["additionalProperties"] is True


def test_no_parameters() -> None:
    def now() -> str: ...

    assert schema_of(now) == {"type": "object", "properties": {}, "additionalProperties": False}


def test_descriptions_from_docs_unless_a_field_gives_one() -> None:
    def f(
        a: int,
        b: Annotated[int, Field(description="explicit b")],
        c: int = Field(1, description="explicit c"),
        d: Annotated[int, Field(ge=0)] = 0,
    ) -> None: ...

    props = schema_of(f, a="doc a", b="doc b", c="doc c", d="doc d")["properties"]
    assert props["a"] == {"type": "integer", "description": "doc a"}
    assert props["b"] == {"type": "integer", "description": "explicit b"}
    assert props["c"] == {"type": "integer", "description": "explicit c", "default": 1}
    assert props["d"] == {"type": "integer", "description": "doc d", "minimum": 0, "default": 0}


def test_reserved_and_private_parameter_names_keep_their_names() -> None:
    def f(json: str, _x: int, model_name: str = "m", schema: bool = False) -> Tuple[Any, ...]:
        return (json, _x, model_name, schema)

    sig = signature_model(f, tool_name="f")
    assert list(sig.schema["properties"]) == ["json", "_x", "model_name", "schema"]
    assert sig.schema["required"] == ["json", "_x"]
    instance = sig.model.model_validate({"json": "j", "_x": 1, "schema": True})
    args, kwargs = sig.bind(instance)
    assert f(*args, **kwargs) == ("j", 1, "m", True)


def test_positional_only_parameters_are_passed_positionally() -> None:
    def f(a: int, /, b: int, *, c: int = 0) -> Tuple[int, int, int]:
        return (a, b, c)

    sig = signature_model(f, tool_name="f")
    assert sig.bind(sig.model(a=1, b=2, c=3)) == ((1,), {"b": 2, "c": 3})


def test_partial_and_methods_and_callable_objects() -> None:
    def f(a: int, b: str, flag: bool = False) -> None: ...

    assert list(schema_of(functools.partial(f, 1))["properties"]) == ["b", "flag"]

    class Calc:
        def add(self, a: int, b: int) -> int:
            return a + b

        def __call__(self, x: float) -> float:
            return x

    assert schema_of(Calc().add)["required"] == ["a", "b"]
    assert schema_of(Calc())["properties"] == {"x": {"type": "number"}}


def test_unannotated_parameter() -> None:
    def f(a: int, b) -> None: ...  # type: ignore[no-untyped-def]

    with pytest.raises(ToolError, match=r"tool 't': parameter 'b' has no type annotation") as info:
        schema_of(f)
    assert (info.value.tool, info.value.field) == ("t", "b")


@pytest.mark.parametrize("star", ["args", "kwargs"])
def test_variadic_parameters(star: str) -> None:
    def with_args(a: int, *args: int) -> None: ...

    def with_kwargs(a: int, **kwargs: int) -> None: ...

    func = with_args if star == "args" else with_kwargs
    with pytest.raises(
        ToolError, match=r"parameter '\*{1,2}%s': a tool cannot take \*args or \*\*kwargs" % star
    ):
        schema_of(func)


class Opaque:
    pass


@pytest.mark.parametrize(
    "annotation, shown",
    [(Opaque, "Opaque"), (Callable[[int], int], "Callable"), (Optional[Opaque], "Opaque")],
)
def test_unsupported_types_name_the_parameter(annotation: Any, shown: str) -> None:
    def f(ok: int, bad: int) -> None: ...

    f.__annotations__["bad"] = annotation
    with pytest.raises(
        ToolError, match=f"tool 't': parameter 'bad': type .*{shown}.* is not supported"
    ) as info:
        schema_of(f)
    assert info.value.field == "bad"


def test_a_pattern_pydantic_cannot_compile_names_the_parameter() -> None:
    def f(code: Annotated[str, Field(pattern=r"^(?=.*[0-9])[a-z0-9]+$")]) -> None: ...

    with pytest.raises(
        ToolError, match=r"tool 't': parameter 'code': .* is not supported .*look-around"
    ) as info:
        schema_of(f)
    assert info.value.field == "code"


def test_unresolvable_hint() -> None:
    def f(a: Undefined) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    with pytest.raises(ToolError, match=r"tool 't': cannot resolve the type hints .*Undefined"):
        schema_of(f)


def test_model_schema_without_titles_and_top_description() -> None:
    class Query(BaseModel):
        """Run a query."""

        text: str = Field(title="Text!", description="The query.")
        limit: int = 10

    assert tool_json_schema(Query) == {
        "type": "object",
        "properties": {
            "text": {"type": "string", "title": "Text!", "description": "The query."},
            "limit": {"type": "integer", "default": 10},
        },
        "required": ["text"],
        "additionalProperties": False,
    }


def test_subschemas_walks_every_schema_position() -> None:
    schema = {
        "type": "object",
        "properties": {"properties": {"type": "string"}, "a": {"anyOf": [{"type": "null"}, {"items": {}}]}},
        "$defs": {"X": {"not": {"type": "number"}}},
        "additionalProperties": False,
    }
    kinds = [s.get("type", "-") for s in subschemas(schema)]
    assert kinds == ["object", "string", "-", "null", "-", "-", "-", "number"]


SIGNATURES: List[Callable[..., Any]] = []


def _collect(f: Callable[..., Any]) -> Callable[..., Any]:
    SIGNATURES.append(f)
    return f


@_collect
def _scalars(a: int, b: float, c: str, d: bool = True, e: Optional[str] = None) -> None: ...


@_collect
def _choices(unit: Literal["c", "f"], color: Color = Color.BLUE, n: Union[int, str] = 1) -> None: ...


@_collect
def _constraints(
    k: Annotated[int, Field(ge=1, le=50)],
    name: Annotated[str, Field(min_length=1, max_length=20, pattern="^[a-z_]+$")],
    ratio: Annotated[float, Field(gt=0, le=1)] = 0.5,
    step: Annotated[int, Field(multiple_of=5)] = 5,
) -> None: ...


@_collect
def _nested(
    home: Address, others: List[Address], weights: Dict[str, float], pair: Tuple[int, str] = (1, "a")
) -> None: ...


@_collect
def _nothing() -> None: ...


@pytest.mark.parametrize("func", SIGNATURES, ids=lambda f: f.__name__)
def test_generated_schemas_compile_to_grammars(func: Callable[..., Any]) -> None:
    grammar = Grammar.from_json_schema(schema_of(func), strict=True)
    assert grammar.root == "root"


@pytest.mark.skipif(sys.version_info < (3, 10), reason="`X | None` needs Python 3.10")
def test_pep604_unions() -> None:
    namespace: Dict[str, Any] = {}
    exec("def f(a: int | None, b: 'str | int' = 1) -> None: ...", namespace)
    assert schema_of(namespace["f"])["properties"] == {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "b": {"anyOf": [{"type": "string"}, {"type": "integer"}], "default": 1},
    }

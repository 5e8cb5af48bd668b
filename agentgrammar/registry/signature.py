"""Function signatures and Pydantic models → the JSON Schema of a tool's arguments.

``signature_model`` turns the parameters of a plain function into a Pydantic model (one field
per parameter: its type hint, its default, its docstring description) and ``tool_json_schema``
turns a model into the schema a tool advertises: no generated titles, the argument object's
description left to the tool, and ``"additionalProperties": false`` on every object that does
not say otherwise when the tool is strict.

Example:
    >>> from typing import Literal
    >>> def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str: ...
    >>> sig = signature_model(get_weather, tool_name="get_weather")
    >>> tool_json_schema(sig.model)  # doctest: +NORMALIZE_WHITESPACE
    {'type': 'object', 'properties': {'city': {'type': 'string'},
     'unit': {'default': 'c', 'enum': ['c', 'f'], 'type': 'string'}},
     'required': ['city'], 'additionalProperties': False}
"""

from __future__ import annotations

import functools
import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Type

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, create_model
from pydantic.json_schema import GenerateJsonSchema

from ..errors import ToolError

__all__ = ["SignatureModel", "signature_model", "subschemas", "tool_json_schema"]

# Keywords whose value is a map of subschemas / a list of subschemas / one subschema.
_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = (
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_TOP_ORDER = ("type", "properties", "required", "additionalProperties")


@dataclass(frozen=True)
class SignatureModel:
    """The argument model of a function: ``model`` has one field per parameter, ``fields``
    lists ``(field name, parameter name, positional-only)`` in signature order (a field name
    differs from its parameter name only where the parameter name is not a valid Pydantic field
    name, e.g. ``json`` or ``_x``; the schema and validation still use the parameter name), and
    ``schema`` is ``tool_json_schema(model)``.

    Example:
        >>> def add(a: int, b: int = 1) -> int: ...
        >>> sig = signature_model(add, tool_name="add")
        >>> sig.bind(sig.model(a=2))
        ((), {'a': 2, 'b': 1})
    """

    model: Type[BaseModel]
    fields: Tuple[Tuple[str, str, bool], ...]
    schema: Dict[str, Any]

    def bind(self, arguments: BaseModel) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
        """The positional and keyword arguments that call the function with the validated
        ``arguments`` (an instance of ``model``)."""
        args: List[Any] = []
        kwargs: Dict[str, Any] = {}
        for field_name, param, positional in self.fields:
            value = getattr(arguments, field_name)
            if positional:
                args.append(value)
            else:
                kwargs[param] = value
        return tuple(args), kwargs


def signature_model(
    func: Callable[..., Any],
    *,
    tool_name: str,
    descriptions: Optional[Mapping[str, str]] = None,
    strict: bool = True,
) -> SignatureModel:
    """The argument model and schema of ``func`` (a function, method, ``functools.partial`` or
    callable object). ``descriptions`` (parameter name → text, usually from the docstring) become field
    descriptions unless a ``Field(description=...)`` already gives one. ``strict`` forbids
    arguments that are not parameters.

    Raises ``ToolError`` naming ``tool_name`` and the parameter for a parameter without a type
    hint, ``*args`` / ``**kwargs``, and a type Pydantic cannot validate or describe in JSON Schema.

    Example:
        >>> def f(*names: str) -> None: ...
        >>> signature_model(f, tool_name="f")
        Traceback (most recent call last):
        ...
        agentgrammar.errors.ToolError: tool 'f': parameter '*names': a tool cannot take *args or **kwargs; declare each argument as a parameter
    """
    descriptions = descriptions or {}
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as e:
        raise ToolError(
            f"tool {tool_name!r}: cannot read the signature of {func!r}: {e}", tool=tool_name
        ) from e
    hints = _type_hints(func, tool_name)
    taken = set(signature.parameters)
    definitions: Dict[str, Any] = {}
    fields: List[Tuple[str, str, bool]] = []
    annotations: Dict[str, Any] = {}
    for index, (name, param) in enumerate(signature.parameters.items()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind == param.VAR_POSITIONAL else "**"
            raise ToolError(
                f"tool {tool_name!r}: parameter '{star}{name}': a tool cannot take *args or **kwargs; "
                "declare each argument as a parameter",
                tool=tool_name,
                field=name,
            )
        if name not in hints:
            raise ToolError(
                f"tool {tool_name!r}: parameter {name!r} has no type annotation; annotate it "
                f"(e.g. `{name}: str`) so that its JSON Schema is known",
                tool=tool_name,
                field=name,
            )
        annotation = hints[name]
        field_name = name
        extra: Dict[str, Any] = {}
        if name.startswith("_") or hasattr(BaseModel, name):
            field_name = _free_name(f"field_{index}", taken)
            extra["alias"] = name
        if descriptions.get(name):
            extra["description"] = descriptions[name]
        if extra:
            annotation = _prepend_field(annotation, Field(**extra))
        default = ... if param.default is param.empty else param.default
        definitions[field_name] = (annotation, default)
        annotations[name] = hints[name]
        fields.append((field_name, name, param.kind == param.POSITIONAL_ONLY))
    config = ConfigDict(extra="forbid" if strict else "ignore", protected_namespaces=())
    try:
        model = create_model(tool_name, __config__=config, **definitions)  # type: ignore[call-overload]
        schema = tool_json_schema(model, strict=strict)
    except Exception as e:  # PydanticUserError, pydantic_core.SchemaError (a bad pattern), TypeError, ...
        raise _unsupported(tool_name, annotations, e) from e
    return SignatureModel(model, tuple(fields), schema)


def tool_json_schema(model: Type[BaseModel], *, strict: bool = True) -> Dict[str, Any]:
    """The JSON Schema of a tool whose arguments are ``model``: Pydantic's validation schema
    without generated titles and without the top-level ``title`` / ``description`` (the tool
    has its own), ``type`` / ``properties`` / ``required`` / ``additionalProperties`` first.
    ``strict`` adds ``"additionalProperties": false`` to every object schema with ``properties``
    that does not set it. Nested models stay in ``$defs``.

    Example:
        >>> from pydantic import BaseModel
        >>> class Point(BaseModel):
        ...     '''A point.'''
        ...     x: int
        >>> tool_json_schema(Point)
        {'type': 'object', 'properties': {'x': {'type': 'integer'}}, 'required': ['x'], 'additionalProperties': False}
    """
    schema = model.model_json_schema(schema_generator=_ToolJsonSchema)
    schema.pop("title", None)
    schema.pop("description", None)
    if strict:
        _close_objects(schema)
    ordered = {key: schema.pop(key) for key in _TOP_ORDER if key in schema}
    defs = {key: schema.pop(key) for key in ("$defs",) if key in schema}
    return {**ordered, **schema, **defs}


class _ToolJsonSchema(GenerateJsonSchema):
    """Pydantic's schema generator, without the titles it derives from field names."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def _type_hints(func: Callable[..., Any], tool_name: str) -> Dict[str, Any]:
    target: Any = func
    if isinstance(target, functools.partial):
        target = target.func
    if inspect.isclass(target):
        target = target.__init__
    elif not (inspect.isfunction(target) or inspect.ismethod(target)) and callable(target):
        target = type(target).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as e:  # NameError (an undefined name), TypeError (`X | None` before 3.10), ...
        raise ToolError(
            f"tool {tool_name!r}: cannot resolve the type hints of {getattr(target, '__qualname__', target)!r}: "
            f"{type(e).__name__}: {e}",
            tool=tool_name,
        ) from e


def _free_name(base: str, taken: set) -> str:
    name = base
    while name in taken or hasattr(BaseModel, name):
        name += "_"
    taken.add(name)
    return name


def _prepend_field(annotation: Any, info: Any) -> Any:
    """``annotation`` with ``info`` as its first ``Annotated`` metadata, so that the user's own
    metadata (which comes later) wins over it."""
    if typing.get_origin(annotation) is typing.Annotated:
        base, *metadata = typing.get_args(annotation)
        return typing.Annotated[(base, info, *metadata)]
    return typing.Annotated[annotation, info]


def _unsupported(tool_name: str, annotations: Mapping[str, Any], error: Exception) -> ToolError:
    """The error for a model that Pydantic could not build or describe, naming the first
    parameter whose type alone fails."""
    for name, annotation in annotations.items():
        try:
            TypeAdapter(annotation).json_schema()
        except Exception as e:  # the culprit: any failure of Pydantic on this type alone
            return ToolError(
                f"tool {tool_name!r}: parameter {name!r}: type {_type_name(annotation)} is not supported "
                f"(it needs a Pydantic validator and a JSON Schema): {_first_paragraph(e)}",
                tool=tool_name,
                field=name,
            )
    return ToolError(
        f"tool {tool_name!r}: cannot build the argument model: {_first_paragraph(error)}", tool=tool_name
    )


def _type_name(annotation: Any) -> str:
    return annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)


def _first_paragraph(error: Exception) -> str:
    """The first paragraph of a (Pydantic) error message, on one line."""
    paragraph = str(error).strip().split("\n\n", 1)[0]
    return " ".join(paragraph.split()) or type(error).__name__


def subschemas(schema: Any) -> Iterator[Dict[str, Any]]:
    """``schema`` and every schema inside it (properties, items, ``anyOf`` branches, ``$defs``,
    ...), depth first; boolean schemas are skipped.

    Example:
        >>> [s.get("type") for s in subschemas({"type": "array", "items": {"type": "integer"}})]
        ['array', 'integer']
    """
    if not isinstance(schema, dict):
        return
    yield schema
    for key in _SCHEMA_MAPS:
        value = schema.get(key)
        if isinstance(value, dict):
            for sub in value.values():
                yield from subschemas(sub)
    for key in _SCHEMA_LISTS:
        value = schema.get(key)
        if isinstance(value, list):
            for sub in value:
                yield from subschemas(sub)
    for key in _SCHEMA_ONE:
        yield from subschemas(schema.get(key))


def _close_objects(schema: Any) -> None:
    """Add ``"additionalProperties": false`` to every object schema with ``properties`` that
    leaves it unset, in place."""
    for sub in list(subschemas(schema)):
        if "properties" in sub and "additionalProperties" not in sub:
            sub["additionalProperties"] = False

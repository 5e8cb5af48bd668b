"""``Tool`` (a name, a description, the JSON Schema of its arguments, and optionally the Pydantic
model that validates them and the handler that runs them) and ``ToolCall`` (a request to run one).

Example:
    >>> def add(a: int, b: int = 1) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> tool = Tool.from_function(add)
    >>> tool.description, tool.parameters["required"]
    ('Add two integers.', ['a'])
    >>> tool.run({"a": 2, "b": 3})
    5
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import inspect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Tuple, Type

import jsonschema
from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError

from ..errors import ToolError
from .docstrings import parse_docstring
from .nesting import MAX_JSON_DEPTH, nesting_depth
from .signature import SignatureModel, signature_model, tool_json_schema

__all__ = ["TOOL_NAME_PATTERN", "Tool", "ToolCall", "check_timeout_s", "check_tool_name"]

# \A ... \Z, matched with fullmatch: "$" also matches before a final newline, and a name
# "tool_a\n" written raw (qwen3_coder, harmony, deepseek_r1) parses back as "tool_a".
TOOL_NAME_PATTERN = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")
"""Valid tool names: a letter or ``_``, then up to 63 letters, digits, ``_``, ``.`` or ``-``
(the whole string: match it with ``TOOL_NAME_PATTERN.fullmatch``)."""

_MAX_REPORTED_ERRORS = 5


def check_tool_name(name: Any) -> str:
    """``name`` if it is a valid tool name (``TOOL_NAME_PATTERN``), else ``ToolError``.

    Example:
        >>> check_tool_name("get_weather")
        'get_weather'
        >>> check_tool_name("get weather")
        Traceback (most recent call last):
        ...
        agentgrammar.errors.ToolError: invalid tool name 'get weather': a name is a letter or '_' followed by up to 63 letters, digits, '_', '.' or '-'
    """
    if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
        raise ToolError(
            f"invalid tool name {name!r}: a name is a letter or '_' followed by up to 63 letters, "
            "digits, '_', '.' or '-'",
            tool=name if isinstance(name, str) else None,
        )
    return name


def check_timeout_s(value: Any, where: str) -> Optional[float]:
    """``value`` as a float if it is a positive number of seconds, ``None`` if it is ``None``;
    else ``ToolError`` naming ``where``.

    Example:
        >>> check_timeout_s(2, "tool 'f'"), check_timeout_s(None, "tool 'f'")
        (2.0, None)
        >>> check_timeout_s(0, "tool 'f'")
        Traceback (most recent call last):
        ...
        agentgrammar.errors.ToolError: tool 'f': timeout_s must be a positive number of seconds or None, got 0
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
        raise ToolError(f"{where}: timeout_s must be a positive number of seconds or None, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ToolCall:
    """A request to run the tool ``name`` with ``arguments`` (a JSON object as a dict); ``id``
    is the call id of APIs that have one. Equal when name, arguments and id are equal.

    Example:
        >>> ToolCall("add", {"a": 1}) == ToolCall("add", {"a": 1})
        True
    """

    name: str
    arguments: Dict[str, Any]
    id: Optional[str] = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ToolError(f"a tool call's name must be a string, got {type(self.name).__name__}")
        if not isinstance(self.arguments, Mapping):
            raise ToolError(
                f"the arguments of a call to {self.name!r} must be a dict (a JSON object), "
                f"got {type(self.arguments).__name__}",
                tool=self.name,
            )
        if self.id is not None and not isinstance(self.id, str):
            raise ToolError(f"a tool call's id must be a string or None, got {type(self.id).__name__}")
        object.__setattr__(self, "arguments", dict(self.arguments))


@dataclass(frozen=True, eq=False)
class Tool:
    """A tool the model may call.

    ``parameters`` is the JSON Schema of the arguments (an object schema), computed once when
    the tool is made; treat it as read-only. ``model`` is the Pydantic model that validates the
    arguments (``None`` for tools defined by a schema alone, which ``jsonschema`` validates).
    ``handler`` runs the call (``None``: the tool can be offered to a model but not run here).
    ``strict`` says that the schema allows no arguments besides its properties. ``signature`` is
    set for tools made from functions: the handler is called with one keyword argument per
    parameter; otherwise a tool with a model passes the validated model instance and a tool
    without one passes the arguments as keywords. ``timeout_s`` is how long an agent lets one
    call of the tool run (``None``: the agent's default, see ``agent.tool_runner``).

    Tools compare and hash by identity. Make them with ``Tool.from_function``,
    ``Tool.from_model``, ``openai.tool_from_openai`` or directly from a schema.

    Example:
        >>> tool = Tool("ping", "Check the connection.", {"type": "object", "properties": {}})
        >>> tool.validate({})
        {}
        >>> tool.validate({"x": 1}) == {"x": 1}  # the schema allows other properties
        True
    """

    name: str
    description: str
    parameters: Dict[str, Any]
    model: Optional[Type[BaseModel]] = None
    handler: Optional[Callable[..., Any]] = None
    strict: bool = True
    signature: Optional[SignatureModel] = None
    timeout_s: Optional[float] = None
    _validator: Any = field(default=None, init=False, repr=False)  # jsonschema's, for tools without model

    def __post_init__(self) -> None:
        check_tool_name(self.name)
        if not isinstance(self.description, str):
            raise ToolError(f"tool {self.name!r}: the description must be a string", tool=self.name)
        if not isinstance(self.parameters, dict):
            raise ToolError(f"tool {self.name!r}: parameters must be a JSON Schema dict", tool=self.name)
        if self.model is not None and not (
            isinstance(self.model, type) and issubclass(self.model, BaseModel)
        ):
            raise ToolError(f"tool {self.name!r}: model must be a Pydantic model class", tool=self.name)
        if self.handler is not None and not callable(self.handler):
            raise ToolError(
                f"tool {self.name!r}: the handler {self.handler!r} is not callable", tool=self.name
            )
        object.__setattr__(self, "timeout_s", check_timeout_s(self.timeout_s, f"tool {self.name!r}"))
        validator = None
        if self.model is None:
            cls = jsonschema.validators.validator_for(
                self.parameters, default=jsonschema.Draft202012Validator
            )
            try:
                cls.check_schema(self.parameters)
            except jsonschema.SchemaError as e:
                path = "".join(f"[{p!r}]" for p in e.absolute_path)
                raise ToolError(
                    f"tool {self.name!r}: parameters is not a valid JSON Schema: parameters{path}: {e.message}",
                    tool=self.name,
                ) from e
            validator = cls(self.parameters)
        object.__setattr__(self, "_validator", validator)

    @classmethod
    def from_function(
        cls,
        func: Callable[..., Any],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        strict: bool = True,
        timeout_s: Optional[float] = None,
    ) -> Tool:
        """The tool that runs ``func``: named after it, described by its docstring (the text
        before the first section; parameter descriptions from Google, NumPy or reST sections),
        with arguments from its type hints and defaults. ``strict`` forbids other arguments;
        ``timeout_s`` limits each call an agent makes.

        Example:
            >>> async def fetch(url: str, timeout: float = 10.0) -> str:
            ...     '''Fetch a page.
            ...
            ...     Args:
            ...         url: The address.
            ...     '''
            ...     return url
            >>> tool = Tool.from_function(fetch)
            >>> tool.is_async, tool.parameters["properties"]["url"]
            (True, {'description': 'The address.', 'type': 'string'})
        """
        target = func.func if isinstance(func, functools.partial) else func
        if name is None:
            name = getattr(target, "__name__", None)
            if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
                raise ToolError(f"cannot name a tool after {func!r}: pass name=...")
        check_tool_name(name)
        doc = parse_docstring(getattr(target, "__doc__", None))
        sig = signature_model(func, tool_name=name, descriptions=doc.params, strict=strict)
        return cls(
            name,
            doc.description if description is None else description,
            sig.schema,
            model=sig.model,
            handler=func,
            strict=strict,
            signature=sig,
            timeout_s=timeout_s,
        )

    @classmethod
    def from_model(
        cls,
        model: Type[BaseModel],
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        handler: Optional[Callable[..., Any]] = None,
        strict: bool = True,
        timeout_s: Optional[float] = None,
    ) -> Tool:
        """The tool whose arguments are the fields of ``model``: named ``name``, else the
        model's ``model_config["title"]``, else its class name in snake_case; described by
        ``description``, else the model's docstring. ``handler`` is called with the validated
        model instance. ``strict`` closes the objects of the schema (validation follows the
        model's own ``extra`` setting). ``timeout_s`` limits each call an agent makes.

        Example:
            >>> from pydantic import BaseModel
            >>> class GetWeather(BaseModel):
            ...     '''Current weather in a city.'''
            ...     city: str
            >>> tool = Tool.from_model(GetWeather, handler=lambda args: f"sunny in {args.city}")
            >>> tool.name, tool.description, tool.run({"city": "Oslo"})
            ('get_weather', 'Current weather in a city.', 'sunny in Oslo')
        """
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise ToolError(f"expected a Pydantic model class, got {model!r}")
        if name is None:
            name = model.model_config.get("title") or _snake_case(model.__name__)
            if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
                raise ToolError(
                    f"cannot name a tool after model {model.__name__!r} ({name!r}): pass name=..."
                )
        check_tool_name(name)
        if description is None:
            description = parse_docstring(model.__doc__).description
        try:
            parameters = tool_json_schema(model, strict=strict)
        except Exception as e:  # Pydantic cannot describe a field type in JSON Schema
            raise ToolError(
                f"tool {name!r}: cannot make the JSON Schema of {model.__name__}: {e}", tool=name
            ) from e
        return cls(
            name, description, parameters, model=model, handler=handler, strict=strict, timeout_s=timeout_s
        )

    @property
    def is_async(self) -> bool:
        """Whether the handler is a coroutine function (``async def``)."""
        handler = self.handler
        if handler is None:
            return False
        return inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(type(handler).__call__)

    def validate(self, arguments: Mapping[str, Any]) -> Dict[str, Any]:
        """The arguments after validation, as JSON values (coerced by the model where there is
        one; defaults not filled in), or ``ToolError`` naming the tool and the bad field. Only
        ``ToolError``: arguments nested past ``MAX_JSON_DEPTH`` (or cyclic) and whatever a
        validator raises (a ``RecursionError``, an ``OverflowError``, a model's own exception,
        chained as the cause) are one too.

        Example:
            >>> def repeat(text: str, times: int = 2) -> str:
            ...     return text * times
            >>> tool = Tool.from_function(repeat)
            >>> tool.validate({"text": "ab"})
            {'text': 'ab'}
            >>> tool.validate({"text": "ab", "times": "many"})
            Traceback (most recent call last):
            ...
            agentgrammar.errors.ToolError: invalid arguments for tool 'repeat': times: Input should be a valid integer, unable to parse string as an integer (got 'many')
        """
        if self.model is None:
            self._check_schema(arguments)
            with self._validating():
                return copy.deepcopy(dict(arguments))
        instance = self._instance(arguments)
        with self._validating():
            try:
                return instance.model_dump(mode="json", by_alias=True, exclude_unset=True)
            except PydanticSerializationError:
                return instance.model_dump(by_alias=True, exclude_unset=True)

    def run(self, arguments: Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and run the handler; an async handler runs in ``asyncio.run``
        when no event loop is running (``ToolError`` otherwise: use ``arun``). ``ToolError`` for
        a tool without handler, invalid arguments, and an exception raised by the handler (which
        becomes ``__cause__``)."""
        handler = self._handler()
        if self.is_async:
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(self.arun(arguments))
            raise ToolError(
                f"tool {self.name!r} is async and an event loop is running: "
                "use `await registry.acall(...)` (or `await tool.arun(...)`)",
                tool=self.name,
            )
        args, kwargs = self._arguments(arguments)
        try:
            return handler(*args, **kwargs)
        except Exception as e:
            raise self._failed(e) from e

    async def arun(self, arguments: Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and run the handler, awaiting it if it is async (a sync
        handler runs inline, on the event loop's thread). Errors as for ``run``."""
        handler = self._handler()
        args, kwargs = self._arguments(arguments)
        try:
            result = handler(*args, **kwargs)
            if inspect.isawaitable(result):
                result = await result
        except Exception as e:
            raise self._failed(e) from e
        return result

    def __repr__(self) -> str:
        kind = "function" if self.signature else "model" if self.model else "schema"
        return f"Tool(name={self.name!r}, kind={kind!r}, handler={self.handler is not None})"

    # -- internals --------------------------------------------------------------------------------

    def _handler(self) -> Callable[..., Any]:
        if self.handler is None:
            raise ToolError(
                f"tool {self.name!r} has no handler (it only describes the tool to the model); "
                "run the call yourself, or register the tool with a handler",
                tool=self.name,
            )
        return self.handler

    def _arguments(self, arguments: Mapping[str, Any]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
        if self.model is None:
            self._check_schema(arguments)
            return (), dict(arguments)
        instance = self._instance(arguments)
        if self.signature is not None:
            return self.signature.bind(instance)
        return (instance,), {}

    def _check_mapping(self, arguments: Any) -> None:
        if not isinstance(arguments, Mapping):
            raise ToolError(
                f"invalid arguments for tool {self.name!r}: expected a JSON object (a dict), "
                f"got {type(arguments).__name__}",
                tool=self.name,
            )

    def _check_depth(self, arguments: Mapping[str, Any]) -> None:
        """``ToolError`` for arguments nested past ``MAX_JSON_DEPTH`` (or cyclic): the validators
        recurse once or more per level, and past Python's recursion limit they would fail
        with a ``RecursionError`` instead."""
        if nesting_depth(arguments, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
            raise ToolError(
                f"invalid arguments for tool {self.name!r}: they nest more than {MAX_JSON_DEPTH} levels "
                "deep (or hold themselves)",
                tool=self.name,
            )

    @contextlib.contextmanager
    def _validating(self) -> Iterator[None]:
        """Validation fails only with ``ToolError``: whatever else a validator raises on hostile
        arguments (a ``RecursionError`` under a recursive ``$ref``, an ``OverflowError`` from a
        huge number, an exception from a model's own validator) becomes one."""
        try:
            yield
        except ToolError:
            raise
        except RecursionError:
            raise ToolError(
                f"invalid arguments for tool {self.name!r}: they nest too deeply to validate", tool=self.name
            ) from None
        except Exception as e:
            raise ToolError(
                f"cannot validate the arguments of tool {self.name!r}: {type(e).__name__}: {e}",
                tool=self.name,
            ) from e

    def _instance(self, arguments: Mapping[str, Any]) -> BaseModel:
        self._check_mapping(arguments)
        self._check_depth(arguments)
        assert self.model is not None
        with self._validating():
            try:
                return self.model.model_validate(dict(arguments))
            except ValidationError as e:
                problems: List[Tuple[str, str]] = []
                for error in e.errors(include_url=False):
                    where = ".".join(str(part) for part in error["loc"])
                    got = "" if error["type"] == "missing" else f" (got {_short(error['input'])})"
                    problems.append((where, f"{where or '(arguments)'}: {error['msg']}{got}"))
                raise self._invalid(problems) from None

    def _check_schema(self, arguments: Mapping[str, Any]) -> None:
        self._check_mapping(arguments)
        self._check_depth(arguments)
        problems: List[Tuple[str, str]] = []
        with self._validating():
            errors = sorted(
                self._validator.iter_errors(dict(arguments)), key=lambda e: list(map(str, e.path))
            )
        for error in errors:
            path = [str(part) for part in error.absolute_path]
            if error.validator == "required" and isinstance(error.instance, dict):
                missing = [p for p in error.validator_value if p not in error.instance]
                path += missing[:1]
            where = ".".join(path)
            problems.append((where, f"{where or '(arguments)'}: {error.message}"))
        if problems:
            raise self._invalid(problems)

    def _invalid(self, problems: List[Tuple[str, str]]) -> ToolError:
        shown = "; ".join(text for _, text in problems[:_MAX_REPORTED_ERRORS])
        more = len(problems) - _MAX_REPORTED_ERRORS
        if more > 0:
            shown += f"; and {more} more"
        return ToolError(
            f"invalid arguments for tool {self.name!r}: {shown}", tool=self.name, field=problems[0][0] or None
        )

    def _failed(self, error: Exception) -> ToolError:
        return ToolError(f"tool {self.name!r} failed: {type(error).__name__}: {error}", tool=self.name)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _snake_case(name: str) -> str:
    """``GetWeather`` → ``get_weather``, ``HTTPRequest`` → ``http_request``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()

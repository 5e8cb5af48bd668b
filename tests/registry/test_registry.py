"""Behaviour tests for agentgrammar/registry/registry.py and tool.py: registering tools from
functions and Pydantic models, selecting them, validating and running tool calls."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from typing import Annotated, Any, Dict, List, Literal, Optional

import pytest
from pydantic import BaseModel, ConfigDict, Field

import agentgrammar
from agentgrammar import Grammar, Tool, ToolCall, ToolError, ToolRegistry


class Address(BaseModel):
    street: str
    zip: Optional[int] = None


def make_registry() -> ToolRegistry:
    registry = ToolRegistry()

    @registry.tool
    def get_weather(city: str, unit: Literal["c", "f"] = "c") -> str:
        """Get the current weather.

        Args:
            city: The city name.
            unit: Temperature unit.
        """
        return f"20{unit} in {city}"

    @registry.tool(name="math.add", description="Add two integers.")
    def add(a: int, b: Annotated[int, Field(ge=0)] = 1) -> int:
        return a + b

    @registry.tool
    async def fetch(url: str, retries: int = 0) -> str:
        """Fetch a URL."""
        await asyncio.sleep(0)
        return f"<{url}:{retries}>"

    @registry.tool
    def fail(message: str) -> None:
        """Always fails."""
        raise RuntimeError(message)

    @registry.tool
    def ship(to: Address, items: List[str], express: bool = False) -> Dict[str, Any]:
        """Ship items."""
        return {"zip": to.zip, "street": to.street, "n": len(items), "express": express}

    return registry


@pytest.fixture
def registry() -> ToolRegistry:
    return make_registry()


def test_public_exports() -> None:
    for name in ("Tool", "ToolCall", "ToolError", "ToolRegistry", "StructuralTagError"):
        assert name in agentgrammar.__all__
        assert getattr(agentgrammar, name) is not None
    assert agentgrammar.__all__ == sorted(agentgrammar.__all__)


def test_decorator_forms_and_tool_fields(registry: ToolRegistry) -> None:
    assert registry.names == ["get_weather", "math.add", "fetch", "fail", "ship"]
    weather = registry["get_weather"]
    assert weather.description == "Get the current weather."
    assert weather.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name."},
            "unit": {
                "type": "string",
                "enum": ["c", "f"],
                "default": "c",
                "description": "Temperature unit.",
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert weather.model is not None and weather.strict and not weather.is_async
    assert weather.handler is not None and weather.handler.__name__ == "get_weather"
    assert registry["math.add"].description == "Add two integers."
    assert registry["fetch"].is_async


def test_decorator_returns_the_function_unchanged() -> None:
    registry = ToolRegistry()

    def double(x: int) -> int:
        return 2 * x

    assert registry.tool(double) is double
    assert registry.tool(name="twice")(double) is double
    assert registry.names == ["double", "twice"]


def test_container_protocol(registry: ToolRegistry) -> None:
    assert len(registry) == 5
    assert [tool.name for tool in registry] == registry.names
    assert "fetch" in registry and "nope" not in registry and 3 not in registry
    assert registry["fetch"] in registry
    assert Tool("fetch", "", {"type": "object"}) not in registry  # same name, another tool
    assert registry.get("nope") is None
    assert repr(ToolRegistry()) == "ToolRegistry([])"


def test_duplicate_names(registry: ToolRegistry) -> None:
    def get_weather(city: str) -> str:
        return city

    with pytest.raises(
        ToolError, match="a tool named 'get_weather' is already registered; pass name="
    ) as info:
        registry.tool(get_weather)
    assert info.value.tool == "get_weather"
    registry.tool(name="get_weather2")(get_weather)
    assert "get_weather2" in registry


@pytest.mark.parametrize("name", ["", "1abc", "has space", "a" * 65, "sla/sh", "ünï"])
def test_invalid_names(name: str) -> None:
    def f() -> None: ...

    with pytest.raises(ToolError, match="invalid tool name"):
        ToolRegistry().tool(name=name)(f)


@pytest.mark.parametrize("name", ["a", "_a", "A.b-c_9", "a" * 64])
def test_valid_names(name: str) -> None:
    def f() -> None: ...

    registry = ToolRegistry()
    registry.tool(name=name)(f)
    assert registry.names == [name]


def test_lambda_needs_a_name() -> None:
    registry = ToolRegistry()
    with pytest.raises(ToolError, match="pass name="):
        registry.add(lambda x: x)
    registry.add(lambda: 1, name="one")
    assert registry.call(ToolCall("one", {})) == 1


def test_unknown_names_suggest_close_matches(registry: ToolRegistry) -> None:
    with pytest.raises(ToolError, match=r"unknown tool 'get_wether'; did you mean 'get_weather'\?") as info:
        registry["get_wether"]
    assert info.value.tool == "get_wether"
    with pytest.raises(ToolError, match=r"unknown tool 'xyz'; the tools are 'get_weather', 'math.add', "):
        registry.select(["fetch", "xyz"])
    with pytest.raises(ToolError, match="no tools are registered"):
        ToolRegistry().call(ToolCall("x", {}))
    with pytest.raises(ToolError, match="unknown tool 'fech'; did you mean 'fetch'"):
        registry.call(ToolCall("fech", {"url": "u"}))


def test_select(registry: ToolRegistry) -> None:
    picked = registry.select(["ship", "get_weather", "ship"])
    assert picked.names == ["ship", "get_weather"]
    assert picked["ship"] is registry["ship"]
    assert registry.select("fetch").names == ["fetch"]
    assert registry.select(lambda tool: tool.is_async).names == ["fetch"]
    assert registry.select([]).names == []
    picked.tool(name="extra")(lambda: None)
    assert "extra" not in registry  # a selection is a registry of its own
    assert picked.call(ToolCall("get_weather", {"city": "Oslo"})) == "20c in Oslo"


def test_add_pydantic_models() -> None:
    class GetWeather(BaseModel):
        """Current weather.

        Longer text.

        Attributes:
            city: not used for the schema.
        """

        city: str = Field(description="City name.")

    class Titled(BaseModel):
        model_config = ConfigDict(title="lookup_user")
        user_id: int

    class HTTPRequest(BaseModel):
        url: str

    registry = ToolRegistry()
    seen: List[Any] = []
    tool = registry.add(GetWeather, handler=lambda args: seen.append(args) or "ok")
    assert (tool.name, tool.description) == ("get_weather", "Current weather.\n\nLonger text.")
    assert tool.parameters == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "City name."}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert registry.tool(Titled) is Titled
    assert registry["lookup_user"].model is Titled
    assert registry.add(HTTPRequest).name == "http_request"
    assert registry.add(HTTPRequest, name="get", description="GET a page.").description == "GET a page."
    assert registry.call(ToolCall("get_weather", {"city": "Oslo"})) == "ok"
    assert seen == [GetWeather(city="Oslo")]
    with pytest.raises(ToolError, match="tool 'http_request' has no handler"):
        registry.call(ToolCall("http_request", {"url": "u"}))
    with pytest.raises(ToolError, match="cannot name a tool after model 'Bad'"):
        registry.add(type("Bad", (BaseModel,), {"model_config": ConfigDict(title="a bad title")}))


def test_add_rejects_other_objects_and_handler_for_functions() -> None:
    def f(x: int) -> int:
        return x

    registry = ToolRegistry()
    with pytest.raises(ToolError, match="cannot make a tool from 3"):
        registry.add(3)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="is a function: it is its own handler"):
        registry.add(f, handler=f)
    registry.add(f)
    assert registry.call(ToolCall("f", {"x": 4})) == 4


def test_add_tool_objects_with_replacements(registry: ToolRegistry) -> None:
    other = ToolRegistry([registry["math.add"]])
    assert other["math.add"] is registry["math.add"]
    renamed = other.add(registry["math.add"], name="plus", handler=lambda a, b: a * b)
    assert renamed.parameters == registry["math.add"].parameters
    assert other.call(ToolCall("plus", {"a": 3, "b": 4})) == 12  # still called with keywords
    replaced = dataclasses.replace(registry["math.add"], name="add2")
    assert replaced.validate({"a": 1}) == {"a": 1}
    assert ToolRegistry([replaced]).call(ToolCall("add2", {"a": 1, "b": 2})) == 3


def test_call_valid_arguments(registry: ToolRegistry) -> None:
    assert registry.call(ToolCall("get_weather", {"city": "Oslo", "unit": "f"})) == "20f in Oslo"
    assert registry.call(ToolCall("math.add", {"a": 2})) == 3
    assert registry.call(ToolCall("ship", {"to": {"street": "Main", "zip": 1234}, "items": ["a", "b"]})) == {
        "zip": 1234,
        "street": "Main",
        "n": 2,
        "express": False,
    }


@pytest.mark.parametrize(
    "name, arguments, field, message",
    [
        ("get_weather", {}, "city", "city: Field required"),
        ("get_weather", {"city": "x", "unit": "k"}, "unit", "unit: Input should be 'c' or 'f' (got 'k')"),
        ("get_weather", {"city": "x", "country": "y"}, "country", "country: Extra inputs are not permitted"),
        ("math.add", {"a": 1, "b": -1}, "b", "b: Input should be greater than or equal to 0"),
        ("math.add", {"a": "one"}, "a", "a: Input should be a valid integer"),
        ("ship", {"to": {"zip": 1}, "items": []}, "to.street", "to.street: Field required"),
        ("ship", {"to": {"street": "s"}, "items": [1]}, "items.0", "items.0: Input should be a valid string"),
    ],
)
def test_call_invalid_arguments(
    registry: ToolRegistry, name: str, arguments: Dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ToolError) as info:
        registry.call(ToolCall(name, arguments))
    assert str(info.value).startswith(f"invalid arguments for tool {name!r}: ")
    assert message in str(info.value)
    assert (info.value.tool, info.value.field) == (name, field)
    with pytest.raises(ToolError):
        registry[name].validate(arguments)


def test_many_errors_are_summarised() -> None:
    registry = ToolRegistry()

    @registry.tool
    def f(a: int, b: int, c: int, d: int, e: int, g: int, h: int) -> None: ...

    with pytest.raises(ToolError, match=r"a: Field required; b: .*; e: Field required; and 2 more$"):
        registry.call(ToolCall("f", {}))


def test_validate_returns_json_values_without_defaults(registry: ToolRegistry) -> None:
    ship = registry["ship"]
    arguments = {"to": {"street": "Main"}, "items": ["x"]}
    assert ship.validate(arguments) == {"to": {"street": "Main"}, "items": ["x"]}
    assert registry["math.add"].validate({"a": "5"}) == {"a": 5}  # coerced as Pydantic does


def test_handler_exceptions_are_wrapped(registry: ToolRegistry) -> None:
    with pytest.raises(ToolError, match="tool 'fail' failed: RuntimeError: boom") as info:
        registry.call(ToolCall("fail", {"message": "boom"}))
    assert isinstance(info.value.__cause__, RuntimeError)
    assert info.value.tool == "fail"
    with pytest.raises(ToolError, match="tool 'fail' failed: RuntimeError: bang") as info:
        asyncio.run(registry.acall(ToolCall("fail", {"message": "bang"})))
    assert isinstance(info.value.__cause__, RuntimeError)


def test_async_tools(registry: ToolRegistry) -> None:
    call = ToolCall("fetch", {"url": "u", "retries": 2})
    assert registry.call(call) == "<u:2>"  # no loop running: asyncio.run

    async def main() -> List[Any]:
        with pytest.raises(
            ToolError, match=r"tool 'fetch' is async and an event loop is running: use `await registry.acall"
        ):
            registry.call(call)
        results = await asyncio.gather(registry.acall(call), registry.acall(ToolCall("math.add", {"a": 1})))
        with pytest.raises(ToolError, match="invalid arguments for tool 'fetch'"):
            await registry.acall(ToolCall("fetch", {}))
        return list(results)

    assert asyncio.run(main()) == ["<u:2>", 2]


def test_callable_objects_with_async_call() -> None:
    class Greeter:
        """Greets people."""

        async def __call__(self, who: str) -> str:
            return f"hi {who}"

    registry = ToolRegistry()
    with pytest.raises(ToolError, match="pass name="):
        registry.add(Greeter())
    tool = registry.add(Greeter(), name="greet")
    assert (tool.is_async, tool.description) == (True, "Greets people.")
    assert registry.call(ToolCall("greet", {"who": "Ann"})) == "hi Ann"


def test_async_handler_exception_keeps_its_cause() -> None:
    registry = ToolRegistry()

    @registry.tool
    async def explode(n: int) -> None:
        raise KeyError(n)

    with pytest.raises(ToolError, match="tool 'explode' failed: KeyError: 3") as info:
        registry.call(ToolCall("explode", {"n": 3}))
    assert isinstance(info.value.__cause__, KeyError)


def test_tool_calls() -> None:
    call = ToolCall("f", {"a": [1]}, id="c1")
    assert call == ToolCall("f", {"a": [1]}, id="c1")
    assert call != ToolCall("f", {"a": [1]})
    assert call != ToolCall("f", {"a": [2]}, id="c1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        call.name = "g"  # type: ignore[misc]
    with pytest.raises(ToolError, match="must be a dict"):
        ToolCall("f", '{"a": 1}')  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="name must be a string"):
        ToolCall(3, {})  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="expected a ToolCall"):
        ToolRegistry().call({"name": "f", "arguments": {}})  # type: ignore[arg-type]


def test_schemas_are_computed_once(registry: ToolRegistry) -> None:
    tool = registry["ship"]
    assert tool.parameters is tool.parameters
    assert registry.select(["ship"])["ship"].parameters is tool.parameters


# Every generated schema compiles to a grammar (with strict objects) that accepts valid
# arguments written as JSON and rejects what validation rejects.
VALID: Dict[str, List[Dict[str, Any]]] = {
    "get_weather": [{"city": "Oslo"}, {"city": "Oslo", "unit": "f"}],
    "math.add": [{"a": -3}, {"a": 1, "b": 0}],
    "fetch": [{"url": "https://x.io", "retries": 2}],
    "fail": [{"message": ""}],
    "ship": [
        {"to": {"street": "Main", "zip": None}, "items": []},
        {"to": {"street": "s"}, "items": ["a"], "express": True},
    ],
}
INVALID: Dict[str, List[Dict[str, Any]]] = {
    "get_weather": [{}, {"city": "Oslo", "unit": "k"}, {"city": "Oslo", "x": 1}],
    "math.add": [{"a": 1, "b": -1}, {"a": "1"}],
    "fetch": [{"url": 3}],
    "fail": [{"message": None}],
    "ship": [{"to": {"street": "s", "extra": 1}, "items": []}, {"to": {}, "items": []}],
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_generated_schemas_compile_and_agree_with_validation(registry: ToolRegistry, name: str) -> None:
    tool = registry[name]
    grammar = Grammar.from_json_schema(tool.parameters, strict=True)
    for arguments in VALID[name]:
        tool.validate(arguments)
        assert grammar.accepts(json.dumps(arguments)), arguments
    for arguments in INVALID[name]:
        assert not grammar.accepts(json.dumps(arguments)), arguments

"""Generator of JSON Schemas and converter options: random, mutated, deeply nested, ``$ref`` cycles.

>>> import random
>>> schema, opts = gen_json_schema_input(random.Random(0))
>>> isinstance(opts, dict)
True
"""

from __future__ import annotations

import json
import random
from typing import Any, Dict, Tuple

from . import rand
from .corpus import JSON_FORMATS, JSON_SCHEMA_KEYWORDS, JSON_SCHEMA_SEEDS, JSON_TYPES, REGEX_SEEDS
from .gen_regex import gen_regex, gen_regex_input
from .rand import (
    INTERESTING_FLOATS,
    INTERESTING_INTS,
    any_int,
    bound_int,
    mutate_json,
    mutate_text,
    rand_text,
)


def gen_schema(rng: random.Random, depth: int = 0, defs: Tuple[str, ...] = ("a", "b")) -> Any:
    if depth > 4 or rng.random() < 0.1:
        return rng.choice([True, False, {}, {"type": rng.choice(JSON_TYPES)}])
    t = rng.choice(JSON_TYPES + ["any", "multi", "ref", "comb"])
    s: Dict[str, Any] = {}
    if t == "object":
        s["type"] = "object"
        props = {
            rand_text(rng, rng.randint(0, 3), 'abcé"\\ \n') or "p": gen_schema(rng, depth + 1, defs)
            for _ in range(rng.randint(0, 4))
        }
        if props or rng.random() < 0.3:
            s["properties"] = props
        if props and rng.random() < 0.6:
            s["required"] = rng.sample(list(props), rng.randint(0, len(props)))
            if rng.random() < 0.1:
                s["required"].append("missing")
        if rng.random() < 0.4:
            s["additionalProperties"] = rng.choice([True, False, gen_schema(rng, depth + 1, defs)])
        if rng.random() < 0.15:
            s["patternProperties"] = {
                gen_regex(rng, 3): gen_schema(rng, depth + 1, defs) for _ in range(rng.randint(1, 6))
            }
        if rng.random() < 0.2:
            s["minProperties"] = bound_int(rng)
        if rng.random() < 0.2:
            s["maxProperties"] = bound_int(rng)
        if rng.random() < 0.1:
            s["propertyNames"] = {"pattern": gen_regex(rng, 3)}
    elif t == "array":
        s["type"] = "array"
        if rng.random() < 0.7:
            s["items"] = gen_schema(rng, depth + 1, defs) if rng.random() < 0.8 else False
        if rng.random() < 0.3:
            s["prefixItems"] = [gen_schema(rng, depth + 1, defs) for _ in range(rng.randint(0, 3))]
        for k in ("minItems", "maxItems"):
            if rng.random() < 0.3:
                s[k] = bound_int(rng)
        if rng.random() < 0.15:
            s["contains"] = gen_schema(rng, depth + 1, defs)
            if rng.random() < 0.5:
                s["minContains"] = bound_int(rng)
            if rng.random() < 0.5:
                s["maxContains"] = bound_int(rng)
        if rng.random() < 0.1:
            s["uniqueItems"] = rng.choice([True, False])
    elif t == "string":
        s["type"] = "string"
        for k in ("minLength", "maxLength"):
            if rng.random() < 0.3:
                s[k] = bound_int(rng)
        if rng.random() < 0.3:
            s["pattern"] = gen_regex_input(rng) if rng.random() < 0.7 else rng.choice(REGEX_SEEDS)
        if rng.random() < 0.2:
            s["format"] = rng.choice(JSON_FORMATS)
    elif t in ("integer", "number"):
        s["type"] = t
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"):
            if rng.random() < 0.25:
                s[k] = (
                    any_int(rng)
                    if rng.random() < 0.7
                    else rng.choice([0.5, 2.5] if rand.TAME else INTERESTING_FLOATS)
                )
    elif t in ("boolean", "null"):
        s["type"] = t
    elif t == "any":
        s = rng.choice(
            [
                {},
                {"enum": [gen_value(rng, 2) for _ in range(rng.randint(0, 4))]},
                {"const": gen_value(rng, 3)},
            ]
        )
    elif t == "multi":
        s["type"] = rng.sample(JSON_TYPES, rng.randint(0, 4))
    elif t == "ref":
        s["$ref"] = rng.choice(
            [
                f"#/$defs/{rng.choice(defs)}",
                "#",
                "#/properties/x",
                "#/$defs/missing",
                "other.json#/x",
                "#/definitions/a",
                "#/$defs/a/properties/n",
            ]
        )
    else:
        key = rng.choice(["anyOf", "oneOf", "allOf", "not", "if"])
        if key == "not":
            s["not"] = gen_schema(rng, depth + 1, defs)
        elif key == "if":
            s.update(
                {
                    "if": gen_schema(rng, depth + 1, defs),
                    "then": gen_schema(rng, depth + 1, defs),
                    "else": gen_schema(rng, depth + 1, defs),
                }
            )
        else:
            s[key] = [
                gen_schema(rng, depth + 1, defs) for _ in range(rng.randint(0, 10 if key == "oneOf" else 4))
            ]
    if rng.random() < 0.05:
        s[rng.choice(JSON_SCHEMA_KEYWORDS)] = gen_value(rng, 2)
    return s


def gen_value(rng: random.Random, depth: int) -> Any:
    r = rng.random()
    if depth <= 0 or r < 0.5:
        return rng.choice(
            [None, True, False, 0, -1, 1.5, "s", "", 'é😀\n"', 10**30, rng.choice(INTERESTING_INTS)]
        )
    if r < 0.75:
        return [gen_value(rng, depth - 1) for _ in range(rng.randint(0, 3))]
    return {rand_text(rng, 2): gen_value(rng, depth - 1) for _ in range(rng.randint(0, 3))}


def gen_json_schema_input(rng: random.Random) -> Tuple[Any, Dict[str, Any]]:
    r = rng.random()
    if r < 0.45:
        schema = gen_schema(rng)
        if isinstance(schema, dict) and rng.random() < 0.4:
            schema["$defs"] = {d: gen_schema(rng, 2) for d in ("a", "b")}
    elif r < 0.8 or rand.TAME:
        schema = mutate_json(rng, rng.choice(JSON_SCHEMA_SEEDS), lambda g, d: gen_schema(g, d))
    elif r < 0.9:  # deep nesting
        n = rng.choice([20, 50, 99, 100, 101, 150, 300, 1000])
        key = rng.choice(["items", "properties", "anyOf", "not", "allOf", "additionalProperties"])
        schema: Any = {"type": "string"}
        for _ in range(n):
            if key == "items":
                schema = {"type": "array", "items": schema}
            elif key == "properties":
                schema = {"type": "object", "properties": {"a": schema}, "required": ["a"]}
            elif key == "not":
                schema = {"not": schema}
            elif key == "additionalProperties":
                schema = {"type": "object", "additionalProperties": schema}
            else:
                schema = {key: [schema, {"type": "null"}]}
    else:  # $ref cycles
        schema = rng.choice(
            [
                {"$ref": "#"},
                {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"},
                {"$defs": {"a": {"allOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"},
                {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
                {"type": "array", "items": {"$ref": "#"}},
                {"type": "object", "properties": {"x": {"$ref": "#"}}, "required": ["x"]},
                {"not": {"$ref": "#"}},
                {
                    "$defs": {"a": {"oneOf": [{"$ref": "#/$defs/a"}, {"type": "integer"}]}},
                    "$ref": "#/$defs/a",
                },
                {
                    "$defs": {
                        "a": {"$ref": "#/$defs/a/properties/x", "properties": {"x": {"$ref": "#/$defs/a"}}}
                    },
                    "$ref": "#/$defs/a",
                },
            ]
        )
    opts: Dict[str, Any] = {}
    if rng.random() < 0.5:
        for k, choices in (
            ("whitespace", ["flexible", "compact", "bogus"]),
            ("indent", [None, 0, 2, "\t", "x", True, -1]),
            ("separators", [None, (",", ":"), (", ", ": "), ("x", ":"), (",",)]),
            ("strict", [True, False]),
            ("any_order", [True, False]),
            ("max_whitespace", [None, 0, 2, -1, 10**9]),
            ("lenient", [True, False]),
        ):
            if rng.random() < 0.3:
                opts[k] = rng.choice(choices)
    if rng.random() < 0.2:
        try:
            schema = json.dumps(schema)
        except (ValueError, TypeError, RecursionError):
            pass
        if rng.random() < 0.3 and isinstance(schema, str):
            schema = mutate_text(rng, schema, ["{", "}", '"', ":", ",", "[", "]", "\\"], [])
    return schema, opts

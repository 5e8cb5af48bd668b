"""Fuzz agentgrammar's front-ends and engine: every input succeeds or raises AgentGrammarError.

Usage::

    python tools/fuzz.py all --seconds 60            # every harness, 60 s each
    python tools/fuzz.py ebnf --seconds 300 --seed 7 --findings /tmp/ag-findings --json

Harnesses (``--list``): ``ebnf`` (``Grammar.from_ebnf``), ``regex`` (``Grammar.from_regex``),
``json_schema`` (``Grammar.from_json_schema``: random and mutated schemas, deep nesting,
``$ref`` cycles, huge bounds), ``structural_tag`` (``Grammar.from_structural_tag``: dicts and
JSON text, ``triggered_tags``, ``dispatch``, nested tags), ``vocabulary`` (``Vocabulary(...)``
and ``Vocabulary.from_huggingface`` with fake tokenizers) and ``matcher`` (random small
vocabularies and grammars driven by random token streams, ``rollback``, ``reset``,
``accept_string``, masks and jump-forward strings). The grammars that the front-end harnesses
build are also compiled and walked a few tokens, so the C core sees them too.

Inputs are generated from the seed (structure-aware generators plus mutation of a seed corpus of
valid grammars and schemas) and run in a worker subprocess: a crash (a signal, an abort from a
sanitizer) or a hang kills only the worker, and the input is saved under ``--findings``. A
finding is one of

* ``crash``: the worker died (segfault, abort, ...);
* ``hang``: no answer within ``--timeout`` seconds (the worker is killed and restarted);
* ``slow``: one input took longer than ``--slow`` seconds (default 2);
* ``exception``: an exception that is not an ``AgentGrammarError`` (nor one of the few
  documented argument errors a harness allows);
* ``invariant``: the matcher harness's cheap self-checks (an allowed token must be accepted,
  the cached mask must equal the direct one).

Each saved finding is ``<harness>-<kind>-<hash>.pkl`` (the input, for ``--replay``) and a
``.txt`` with the input's ``repr`` and the traceback. A summary table (harness, executions,
exec/s, findings) closes the run; ``--json`` prints it as JSON instead. The exit status is 1
when there were findings.

``--in-process`` runs without a worker (what the smoke tests do; a crash then kills the run).

``--engine atheris`` (``pip install atheris``) runs one harness coverage-guided instead: libFuzzer
mutates the bytes that drive the same generators (``BytesRandom``), and saves a failing input's
bytes under ``--findings`` (rerun it with ``--replay-bytes FILE``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import random
import re
import select
import struct
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# --------------------------------------------------------------------------- random helpers

INTERESTING_INTS = [
    0,
    1,
    2,
    3,
    7,
    8,
    16,
    31,
    32,
    33,
    100,
    255,
    256,
    1000,
    4095,
    4096,
    65535,
    65536,
    99999,
    100000,
    100001,
    2**20,
    2**24,
    2**31 - 1,
    2**31,
    2**32,
    2**53 + 1,
    2**63,
    10**400,
    -1,
    -2,
    -(2**31),
    -(10**400),
]
INTERESTING_FLOATS = [0.5, -0.5, 1e-7, 1e-320, 1e308, -1e308, 0.1, 2.5, 3.14159, 1e21, 5e-324]


def small_int(rng: random.Random, hi: int = 5) -> int:
    return rng.randint(0, hi)


def any_int(rng: random.Random) -> int:
    if TAME:
        return rng.randint(-50, 50)
    r = rng.random()
    if r < 0.5:
        return rng.randint(0, 10)
    if r < 0.85:
        return rng.choice(INTERESTING_INTS)
    return rng.randint(-(2**40), 2**40)


#: Set by ``fuzz(..., tame=True)`` (the smoke tests): no huge bounds, no deep nesting, no huge
#: vocabularies, so that no single input runs for long in-process.
TAME = False


def bound_int(rng: random.Random) -> int:
    """A repetition / length bound: mostly small, sometimes huge."""
    if TAME:
        return rng.randint(0, 6)
    return rng.randint(0, 4) if rng.random() < 0.8 else rng.choice(INTERESTING_INTS)


UNICODE_SAMPLES = (
    "aZ09_- \t\n\"'\\/{}[]()<>|*+?.^$#:=,;é€😀\u0000\u007f\u0080\u07ff\u0800\uffff\U0010ffff\ud800▁ĠĊ"
)


def rand_text(rng: random.Random, n: Optional[int] = None, alphabet: str = UNICODE_SAMPLES) -> str:
    n = rng.randint(0, 6) if n is None else n
    return "".join(rng.choice(alphabet) for _ in range(n))


def rand_word(rng: random.Random) -> str:
    return rng.choice(
        ["a", "b", "ab", "<a>", "</a>", "<tool_call>", "</tool_call>", "{", "}", "x y", "\n", "é", "😀"]
    )


def mutate_text(rng: random.Random, text: str, dictionary: List[str], corpus: List[str]) -> str:
    """1-6 random edits: insert a dictionary token or a random char, delete, duplicate, splice."""
    s = text
    if TAME:  # no large repetition bounds
        dictionary = [w for w in dictionary if not re.search(r"[0-9]{3}", w)] or ["a"]
    for _ in range(rng.randint(1, 6)):
        i = rng.randint(0, len(s))
        j = min(len(s), i + rng.randint(0, 8))
        op = rng.randrange(7)
        if op == 0:
            s = s[:i] + rng.choice(dictionary) + s[i:]
        elif op == 1:
            s = s[:i] + rand_text(rng, 1) + s[i:]
        elif op == 2:
            s = s[:i] + s[j:]
        elif op == 3:
            s = s[:i] + s[i:j] * rng.randint(2, 4) + s[j:]
        elif op == 4 and corpus:
            other = rng.choice(corpus)
            k = rng.randint(0, len(other))
            s = s[:i] + other[k : k + rng.randint(1, 40)] + s[j:]
        elif op == 5 and s:
            s = s[:i] + rng.choice(dictionary) + s[j:]
        else:
            s = s[:i] + rng.choice("0123456789") * rng.randint(1, 2 if TAME else 12) + s[i:]
    return s


def mutate_json(
    rng: random.Random, value: Any, gen: Callable[[random.Random, int], Any], depth: int = 0
) -> Any:
    """Replace, drop or retype a random part of a JSON value."""
    if depth > 40:
        return value
    r = rng.random()
    if r < 0.12:
        return gen(rng, 3)
    if r < 0.18:
        return rng.choice([None, True, 0, -1, "x", [], {}, 1.5, 10 if TAME else 10**400, "#/$defs/none"])
    if isinstance(value, dict) and value:
        out = dict(value)
        key = rng.choice(list(out))
        op = rng.randrange(4)
        if op == 0:
            del out[key]
        elif op == 1:
            out[key] = mutate_json(rng, out[key], gen, depth + 1)
        elif op == 2:
            out[rng.choice(JSON_SCHEMA_KEYWORDS)] = out[key]
        else:
            out[key] = mutate_json(rng, out[key], gen, depth + 1)
            out[rand_text(rng, 2)] = gen(rng, 2)
        return out
    if isinstance(value, list) and value:
        out_l = list(value)
        i = rng.randrange(len(out_l))
        op = rng.randrange(3)
        if op == 0:
            del out_l[i]
        elif op == 1:
            out_l[i] = mutate_json(rng, out_l[i], gen, depth + 1)
        else:
            out_l.insert(i, out_l[i])
        return out_l
    if isinstance(value, str):
        return mutate_text(rng, value, ["a", "{", "\\", "*", "(", "[", "$"], [])
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return bound_int(rng) if TAME else rng.choice(INTERESTING_INTS)
    return value


# --------------------------------------------------------------------------- seed corpora

EBNF_SEEDS = [
    'root ::= "a" | "b"',
    'root ::= "{" pair ("," pair)* "}"\npair ::= str ":" [0-9]+\nstr ::= "\\"" [a-z]* "\\""',
    'root ::= [^\\n]* "\\n"',
    'root ::= ("ab" | "c"){2,5} "x"?',
    "root ::= item+\nitem ::= [a-zA-Z_] [a-zA-Z0-9_]*",
    'root ::= "\\u00e9" "\\U0001F600" "\\x41" %x00-1F',
    'root ::= TagDispatch(("<a>", tag), stop_eos=true, loop_after_dispatch=true, excludes=("</x>"))\ntag ::= [a-z]* "</a>"',
    'root ::= . .? [] | ""',
    'root ::= "a" root "b" | ""',
    'root ::= (= "a") "a" "b"',
    'root ::= x{0,3}\nx ::= "x" | y\ny ::= "y"*  # comment',
    'root ::= [\\-\\]\\^a-c] [^] "\\t\\r\\v\\f\\a\\b\\e\\0"',
    'root ::= "a"{3} "b"{1,} "c"{,2} "d"{2,-1}',
]
EBNF_DICT = [
    "::=",
    " ::= ",
    "\nroot ::= ",
    "\nx ::= ",
    "|",
    "(",
    ")",
    "[",
    "]",
    "[^",
    '"',
    "\\",
    "\\x",
    "\\u",
    "\\U",
    "{",
    "}",
    ",",
    "*",
    "+",
    "?",
    "#",
    "\n",
    "%x",
    "%x41-5A",
    "%x41.42",
    "TagDispatch(",
    '("t", root)',
    "stop_eos=true",
    "loop_after_dispatch=false",
    "excludes=(",
    "stop_str=(",
    "(=",
    "-",
    "^",
    ".",
    "{0,100000}",
    "{100001}",
    "{2147483647}",
    "{2147483648,}",
    "{99999999999999999999}",
    "root",
    "x",
    "Regex(",
    "Token(",
    "[max_tokens=3]",
    "\\d",
]

REGEX_SEEDS = [
    r"[a-z]+",
    r"\d{3}-\d{4}",
    r"(?:ab|cd)*e?",
    r"^(?P<x>[A-Z][a-z]*)$",
    r"[^\n]{0,10}",
    r"\w+@\w+\.(com|org)",
    r"\u00e9\x41\N{BULLET}\cA",
    r"(a|b|c){2,}?",
    r"[\s\S]",
    r".*",
    r"(?#comment)a{,3}",
    r"[]a]|[^]b]",
    r"\u{1F600}+",
    r"a{1000}",
]
REGEX_DICT = [
    "(",
    ")",
    "(?:",
    "(?P<n>",
    "(?<n>",
    "(?=",
    "(?!",
    "(?<=",
    "(?#",
    "(?i)",
    "(?>",
    "[",
    "]",
    "[^",
    "\\",
    "\\d",
    "\\W",
    "\\s",
    "\\b",
    "\\B",
    "\\1",
    "\\p{L}",
    "\\N{",
    "\\N{LATIN SMALL LETTER A}",
    "\\x",
    "\\u",
    "\\u{",
    "\\U",
    "\\c",
    "\\0",
    "\\07",
    "{",
    "}",
    "{2,}",
    "{,5}",
    "{100000}",
    "{100001}",
    "{2147483648}",
    "*",
    "+",
    "?",
    "*?",
    "*+",
    "|",
    "^",
    "$",
    "\\A",
    "\\Z",
    "\\z",
    ".",
    "-",
    "a-z",
    "z-a",
]

JSON_SCHEMA_KEYWORDS = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "patternProperties",
    "items",
    "prefixItems",
    "minItems",
    "maxItems",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "$ref",
    "$defs",
    "definitions",
    "if",
    "then",
    "else",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
    "title",
    "description",
    "default",
    "nullable",
    "$schema",
    "$id",
    "$anchor",
]
JSON_TYPES = ["object", "array", "string", "integer", "number", "boolean", "null"]
JSON_FORMATS = [
    "date-time",
    "date",
    "time",
    "email",
    "uuid",
    "ipv4",
    "ipv6",
    "uri",
    "hostname",
    "duration",
    "bogus",
]

JSON_SCHEMA_SEEDS: List[Any] = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a"]},
    {
        "type": "array",
        "items": {"type": "number", "minimum": -1.5, "maximum": 10},
        "minItems": 1,
        "maxItems": 3,
    },
    {"anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "null"}]},
    {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "$ref": "#/$defs/node",
    },
    {"type": "string", "format": "date-time"},
    {"type": "integer", "multipleOf": 7, "exclusiveMinimum": 0},
    {"enum": ["a", 1, None, [1, 2], {"k": "v"}]},
    {"type": "object", "patternProperties": {"^x": {"type": "boolean"}}, "additionalProperties": False},
    {"type": "array", "prefixItems": [{"const": 1}, {"type": "string"}], "items": False},
    {"oneOf": [{"type": "integer"}, {"type": "string"}]},
    {"type": "array", "contains": {"const": 3}, "minContains": 2, "maxContains": 4},
    {"type": "object", "minProperties": 1, "maxProperties": 2},
    {"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 5}]},
    True,
    {"not": {"type": "string"}},
]


# --------------------------------------------------------------------------- generators


def gen_ebnf_string(rng: random.Random) -> str:
    out = []
    for _ in range(rng.randint(0, 5)):
        r = rng.random()
        if r < 0.6:
            out.append(rng.choice("abcxyz <>{}:,é😀"))
        elif r < 0.8:
            out.append("\\" + rng.choice("nrtvfabe0\\\"'?/[]"))
        else:
            out.append(
                rng.choice(["\\x41", "\\x4", "\\u00e9", "\\U0001F600", "\\uD800", "\\U00110000", "\\x"])
            )
    return '"' + "".join(out) + '"'


def gen_ebnf_class(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(0, 4)):
        r = rng.random()
        if r < 0.5:
            a, b = sorted(rng.choice("aczAZ09éα😀") for _ in range(2))
            parts.append(f"{a}-{b}" if rng.random() < 0.7 else f"{b}-{a}")
        elif r < 0.8:
            parts.append(rng.choice("abc_ -"))
        else:
            parts.append("\\" + rng.choice("n]^-[\\td"))
    return "[" + ("^" if rng.random() < 0.3 else "") + "".join(parts) + "]"


def gen_quantifier(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.5:
        return ""
    if r < 0.8:
        return rng.choice("*+?")
    m = bound_int(rng)
    n = m + bound_int(rng)
    return rng.choice(
        [f"{{{m}}}", f"{{{m},}}", f"{{{m},{n}}}", f"{{,{n}}}", f"{{ {m} , {n} }}", f"{{{m},-1}}"]
    )


def gen_ebnf_expr(rng: random.Random, names: List[str], depth: int) -> str:
    alts = []
    for _ in range(rng.randint(1, 3)):
        items = []
        for _ in range(rng.randint(1, 4)):
            r = rng.random()
            if r < 0.35:
                atom = gen_ebnf_string(rng)
            elif r < 0.55:
                atom = gen_ebnf_class(rng)
            elif r < 0.75:
                atom = rng.choice(names) if rng.random() < 0.9 else "undefined_rule"
            elif r < 0.9 and depth < 4:
                atom = "(" + gen_ebnf_expr(rng, names, depth + 1) + ")"
            elif r < 0.95:
                atom = "."
            else:
                atom = rng.choice(["%x41", "%x00-FF", "%x41.42.43", '""', "()"])
            items.append(atom + gen_quantifier(rng))
        alts.append(" ".join(items))
    return " | ".join(alts)


def gen_ebnf(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        names = ["root"] + [f"r{i}" for i in range(rng.randint(0, 4))]
        lines = [f"{n} ::= {gen_ebnf_expr(rng, names, 0)}" for n in names]
        if rng.random() < 0.15:
            trig = ", ".join(f'("{rand_word(rng)}", {rng.choice(names)})' for _ in range(rng.randint(1, 3)))
            opts = rng.choice(
                ["stop_eos=true", "stop_eos=false", 'stop_str=("</s>")', "loop_after_dispatch=false"]
            )
            lines[0] = f"root ::= TagDispatch({trig}, {opts})"
        return "\n".join(lines)
    if r < 0.9 or TAME:
        return mutate_text(rng, rng.choice(EBNF_SEEDS), EBNF_DICT, EBNF_SEEDS)
    # deep nesting and long repetition
    n = rng.choice([50, 199, 200, 201, 1000, 2000])
    kind = rng.randrange(4)
    if kind == 0:
        return "root ::= " + "(" * n + '"a"' + ")" * n
    if kind == 1:
        return "root ::= " + '"a"' * n
    if kind == 2:
        return "root ::= " + " | ".join(f'"{i}"' for i in range(n))
    return "\n".join([f'r{i} ::= r{i + 1} | "x"' for i in range(n)] + [f'r{n} ::= "y"']).replace(
        "r0 ::=", "root ::=", 1
    )


def gen_regex_atom(rng: random.Random, depth: int) -> str:
    r = rng.random()
    if r < 0.3:
        return rng.choice("abcxyz09é😀 -")
    if r < 0.45:
        return rng.choice(
            [r"\d", r"\w", r"\s", r"\D", r"\W", r"\S", ".", r"\.", r"\n", r"\x41", r"\u00e9", r"\0"]
        )
    if r < 0.6:
        return gen_ebnf_class(rng).replace("\\t", "\\s")
    if r < 0.8 and depth < 4:
        opener = rng.choice(["(", "(?:", "(?P<g>", "(?<g>"])
        return opener + gen_regex(rng, depth + 1) + ")"
    return rng.choice(
        ["^", "$", r"\A", r"\Z", r"\b", "(?=a)", r"\1", r"\p{L}", "(?i)", r"\N{BULLET}", r"\cJ"]
    )


def gen_regex(rng: random.Random, depth: int = 0) -> str:
    alts = []
    for _ in range(rng.randint(1, 3)):
        seq = []
        for _ in range(rng.randint(1, 4)):
            q = gen_quantifier(rng).replace(",-1", ",")
            if q and rng.random() < 0.2:
                q += rng.choice("?+")
            seq.append(gen_regex_atom(rng, depth) + q)
        alts.append("".join(seq))
    return "|".join(alts)


def gen_regex_input(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.45:
        return gen_regex(rng)
    if r < 0.92 or TAME:
        return mutate_text(rng, rng.choice(REGEX_SEEDS), REGEX_DICT, REGEX_SEEDS)
    n = rng.choice([100, 200, 201, 1000])
    return rng.choice(["(" * n + "a" + ")" * n, "(?:" * n + "a" + ")" * n, "a" * n * 10, "|" * n, "[" * n])


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
                    else rng.choice([0.5, 2.5] if TAME else INTERESTING_FLOATS)
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
    elif r < 0.8 or TAME:
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


TAG_TYPES = [
    "const_string",
    "json_schema",
    "any_text",
    "regex",
    "grammar",
    "sequence",
    "or",
    "optional",
    "plus",
    "star",
    "repeat",
    "tag",
    "triggered_tags",
    "tags_with_separator",
    "dispatch",
]


def gen_tag(rng: random.Random, depth: int) -> Dict[str, Any]:
    begin = rng.choice(["<a>", "<tool_call>", "<b x=1>", "[", "<a", ""]) + (
        rand_text(rng, 1) if rng.random() < 0.2 else ""
    )
    end = rng.choice(["</a>", "</tool_call>", "]", "", ["</a>", "</b>"], []])
    return {"type": "tag", "begin": begin, "content": gen_format(rng, depth + 1), "end": end}


def gen_format(rng: random.Random, depth: int = 0) -> Dict[str, Any]:
    t = rng.choice(TAG_TYPES[:5] if depth > 3 else TAG_TYPES)
    if t == "const_string":
        return {"type": t, "value": rand_text(rng)}
    if t == "json_schema":
        return {
            "type": t,
            "json_schema": gen_schema(rng, 3) if rng.random() < 0.7 else rng.choice(JSON_SCHEMA_SEEDS),
        }
    if t == "any_text":
        f: Dict[str, Any] = {"type": t}
        if rng.random() < 0.4:
            f["excludes"] = [rand_word(rng) for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.05:
            f["max_tokens"] = rng.choice([0, 5, -1])
        return f
    if t == "regex":
        return {"type": t, "pattern": gen_regex_input(rng) if rng.random() < 0.3 else rng.choice(REGEX_SEEDS)}
    if t == "grammar":
        return {"type": t, "grammar": rng.choice(EBNF_SEEDS) if rng.random() < 0.7 else gen_ebnf(rng)}
    if t in ("sequence", "or"):
        return {"type": t, "elements": [gen_format(rng, depth + 1) for _ in range(rng.randint(0, 3))]}
    if t in ("optional", "plus", "star"):
        return {"type": t, "content": gen_format(rng, depth + 1)}
    if t == "repeat":
        lo = bound_int(rng)
        return {
            "type": t,
            "min": lo,
            "max": lo + bound_int(rng) if rng.random() < 0.9 else lo - 1,
            "content": gen_format(rng, depth + 1),
        }
    if t == "tag":
        return gen_tag(rng, depth)
    if t == "triggered_tags":
        tags = [gen_tag(rng, depth) for _ in range(rng.randint(0, 3))]
        triggers = list({tg["begin"][: rng.randint(0, len(tg["begin"]))] for tg in tags})
        if rng.random() < 0.2:
            triggers.append(rand_word(rng))
        f = {"type": t, "triggers": triggers, "tags": tags}
        for k in ("at_least_one", "stop_after_first"):
            if rng.random() < 0.3:
                f[k] = rng.choice([True, False])
        if rng.random() < 0.3:
            f["excludes"] = [rand_word(rng) for _ in range(rng.randint(0, 2))]
        return f
    if t == "tags_with_separator":
        f = {
            "type": t,
            "tags": [gen_tag(rng, depth) for _ in range(rng.randint(0, 3))],
            "separator": rng.choice([",", "", "\n", "<sep>"]),
        }
        for k in ("at_least_one", "stop_after_first"):
            if rng.random() < 0.3:
                f[k] = rng.choice([True, False])
        return f
    f = {
        "type": "dispatch",
        "rules": [[rand_word(rng), gen_format(rng, depth + 1)] for _ in range(rng.randint(0, 3))],
    }
    if rng.random() < 0.3:
        f["loop"] = rng.choice([True, False])
    if rng.random() < 0.3:
        f["excludes"] = [rand_word(rng) for _ in range(rng.randint(0, 2))]
    return f


def gen_structural_tag_input(rng: random.Random) -> Any:
    fmt: Any = gen_format(rng)
    if rng.random() < 0.3:
        fmt = mutate_json(rng, fmt, lambda g, d: gen_format(g, d + 2))
    if rng.random() < 0.1 and not TAME:  # deep nesting
        for _ in range(rng.choice([10, 50, 100, 300])):
            fmt = (
                {"type": rng.choice(["optional", "star", "plus"]), "content": fmt}
                if rng.random() < 0.5
                else {"type": "tag", "begin": "<a>", "content": fmt, "end": "</a>"}
            )
    obj: Any = {"type": "structural_tag", "format": fmt} if rng.random() < 0.6 else fmt
    r = rng.random()
    if r < 0.2:
        try:
            obj = json.dumps(obj)
        except (ValueError, TypeError, RecursionError):
            pass
        if rng.random() < 0.3 and isinstance(obj, str):
            obj = mutate_text(rng, obj, ["{", "}", '"', ":", ",", "[", "]"], [])
    elif r < 0.23:
        obj = rng.choice([None, 1, [], "", "null", b"{}", "[1]"])
    return obj


VOCAB_PIECES = [
    "",
    "a",
    "b",
    "ab",
    "<0x0A>",
    "<0x00>",
    "<0xFF>",
    "<0xZZ>",
    "<0x0>",
    "▁",
    "▁a",
    "Ġ",
    "Ġa",
    "Ċ",
    "</s>",
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "\ud800",
    "😀",
    "\x00",
    "{",
    '"',
    b"",
    b"\xff",
    b"\xc3",
    b"a",
    b"\x00\x01",
]


def gen_ids(rng: random.Random, n: int) -> Any:
    r = rng.random()
    if r < 0.3:
        return None
    if r < 0.5:
        return []
    if r < 0.8:
        return [rng.randint(0, max(0, n - 1)) for _ in range(rng.randint(1, 3))]
    return rng.choice(
        [[-1], [n], [n + 5], [True], ["1"], [1.0], 0, "0", [0, 0], [[0]], (0,), {0}, [None], [2**70]]
    )


def gen_vocabulary_input(rng: random.Random) -> Dict[str, Any]:
    if rng.random() < 0.65:
        n = rng.choice([0, 1, 2, 5, 20, 300])
        tokens: Any = [rng.choice(VOCAB_PIECES) for _ in range(n)]
        if rng.random() < 0.1:
            tokens = rng.choice(
                ["abc", b"abc", None, 5, [1, 2], [None], ["a", 3], [bytearray(b"a")], iter(["a"])]
            )
            if not isinstance(tokens, (str, bytes, type(None), int, list)):
                tokens = ["a"]
        elif rng.random() < 0.05 and not TAME:
            tokens = [bytes([i % 256]) * (1 + i // 256) for i in range(rng.choice([70_000, 200_000]))]
        kwargs: Dict[str, Any] = {}
        if rng.random() < 0.5:
            kwargs["vocab_type"] = rng.choice(["raw", "byte_level", "byte_fallback", "bogus", None])
        if rng.random() < 0.4:
            kwargs["vocab_size"] = rng.choice(
                [None, 0, -1, n, n + 1, n + 100, True, 1.5, "10", 2**31 - 1, 2**31, 2**20]
            )
        kwargs["stop_token_ids"] = gen_ids(rng, n if isinstance(tokens, list) else 3)
        if rng.random() < 0.4:
            kwargs["special_token_ids"] = gen_ids(rng, n if isinstance(tokens, list) else 3)
        return {"kind": "plain", "tokens": tokens, "kwargs": kwargs}
    # a fake Hugging Face tokenizer
    r = rng.random()
    n = rng.choice([1, 3, 10, 300])
    if r < 0.5:
        vocab: Any = {rng.choice(VOCAB_PIECES[:20]) + str(i): i for i in range(n)}
        op = rng.randrange(8)
        if op == 0:
            vocab[rand_text(rng, 2)] = rng.choice([-1, 2**31, 2**40, n * 1000, True, 1.5, "3", None])
        elif op == 1:
            vocab["dup"] = 0
        elif op == 2:
            vocab = {k: v + rng.choice([1, 1000, 70_000]) for k, v in vocab.items()}
        elif op == 3:
            vocab = {f"<0x{b:02X}>": b for b in range(256)}
        elif op == 4:
            vocab = {bytes([b]): b for b in range(rng.randint(1, 256))}
        elif op == 5:
            vocab = {chr(0x100 + i) if i < 200 else chr(0x21 + i % 90): i for i in range(n)}
    else:
        vocab = rng.choice(["raise", None, [], "abc", {}, {1: 0}, {None: 0}, {"a": 0, b"a": 1}, 5, {"a": -1}])
    spec = {
        "vocab": vocab,
        "eos": rng.choice([None, 0, 1, -1, 2**40, [0, 1], "x", True, (0,), [None]]),
        "added": rng.choice([None, "raise", {0: True}, {0: "special"}, {"x": True}, {10**9: True}, [1]]),
        "backend": rng.choice([None, "raise", "byte_level", "garbage"]),
        "has_get_vocab": rng.random() < 0.95,
        "sp_model": rng.random() < 0.1,
    }
    kwargs = {}
    if rng.random() < 0.3:
        kwargs["vocab_size"] = rng.choice([None, 0, -5, 1, n, n + 3, True, 2**31])
    if rng.random() < 0.3:
        kwargs["stop_token_ids"] = gen_ids(rng, n)
    return {"kind": "hf", "spec": spec, "kwargs": kwargs}


MATCHER_GRAMMARS = [
    'root ::= "a"+ "b"',
    'root ::= ("ab" | "a" "c")* "d"?',
    'root ::= [a-c]{2,4} | "xyz"',
    'root ::= "{" [a-z]* "}" ("," "{" [a-z]* "}")*',
    'root ::= "a" root "b" | ""',
    'root ::= [^<]* "<"',
    'root ::= TagDispatch(("<a>", t), stop_eos=true, loop_after_dispatch=true)\nt ::= [a-z]* "</a>"',
    'root ::= TagDispatch(("ab", t), ("b", u), stop_str=("cc"), loop_after_dispatch=false, excludes=("ca"))\nt ::= "x" | "y"\nu ::= "z"*',
    'root ::= "é" "😀"? [α-ω]+',
    'root ::= %x00-FF{1,3} "\\n"',
]
MATCHER_REGEXES = [r"a*b+", r"(ab|ba){1,3}", r"[a-c]+\d?", r".{0,4}x", r"\w+(,\w+)*"]
MATCHER_SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 3},
    {"type": "string", "maxLength": 3},
]
MATCHER_TAGS = [
    {
        "type": "triggered_tags",
        "triggers": ["<a"],
        "tags": [{"type": "tag", "begin": "<a>", "content": {"type": "any_text"}, "end": "</a>"}],
    },
    {
        "type": "dispatch",
        "rules": [["<", {"type": "const_string", "value": "a>"}]],
        "loop": True,
        "excludes": ["ab"],
    },
    {
        "type": "tag",
        "begin": "a",
        "content": {"type": "json_schema", "json_schema": {"type": "integer"}},
        "end": ["b", "c"],
    },
]
MATCHER_ALPHABET = [
    "a",
    "b",
    "c",
    "d",
    "x",
    "y",
    "z",
    "<",
    ">",
    "/",
    "{",
    "}",
    ",",
    '"',
    ":",
    "1",
    "0",
    " ",
    "\n",
    "é",
    "😀",
    "α",
    "\xff",
]


def gen_matcher_input(rng: random.Random) -> Dict[str, Any]:
    r = rng.random()
    if r < 0.35:
        grammar: Tuple[str, Any] = ("ebnf", rng.choice(MATCHER_GRAMMARS))
    elif r < 0.5:
        grammar = ("ebnf", gen_ebnf(rng))
    elif r < 0.65:
        grammar = ("regex", rng.choice(MATCHER_REGEXES) if rng.random() < 0.6 else gen_regex(rng))
    elif r < 0.8:
        grammar = ("schema", rng.choice(MATCHER_SCHEMAS) if rng.random() < 0.5 else gen_schema(rng, 2))
    else:
        grammar = ("tag", rng.choice(MATCHER_TAGS) if rng.random() < 0.5 else gen_format(rng, 2))
    tokens: List[Any] = []
    for _ in range(rng.randint(1, 40)):
        if rng.random() < 0.1:
            tokens.append(bytes(rng.randrange(256) for _ in range(rng.randint(1, 3))))
        else:
            tokens.append("".join(rng.choice(MATCHER_ALPHABET) for _ in range(rng.randint(1, 4))))
    if rng.random() < 0.3:
        tokens += ["<a>", "</a>", "ab", "cc"]
    tokens.append("</s>")
    if rng.random() < 0.1:
        tokens.append("")  # an empty token: special
    stop = [len(tokens) - 1] if rng.random() < 0.9 else []
    ops: List[Tuple[Any, ...]] = []
    for _ in range(rng.randint(1, 60)):
        o = rng.random()
        if o < 0.45:
            ops.append(("allowed", rng.randrange(1 << 30)))
        elif o < 0.6:
            ops.append(
                (
                    "tok",
                    rng.randrange(len(tokens))
                    if rng.random() < 0.95
                    else rng.choice([-1, len(tokens), len(tokens) + 100, 2**31]),
                )
            )
        elif o < 0.68:
            ops.append(
                (
                    "str",
                    "".join(rng.choice(MATCHER_ALPHABET + ["<a>", "</a>"]) for _ in range(rng.randint(0, 4))),
                )
            )
        elif o < 0.8:
            ops.append(
                ("rollback", rng.randint(0, 4) if rng.random() < 0.9 else rng.choice([-1, 100, 2**31]))
            )
        elif o < 0.84:
            ops.append(("reset",))
        elif o < 0.92:
            ops.append(("mask", rng.random() < 0.3))
        elif o < 0.97:
            ops.append(("jump",))
        else:
            ops.append(("badmask", rng.randrange(4)))
    return {
        "grammar": grammar,
        "tokens": tokens,
        "stop": stop,
        "vocab_extra": rng.choice([0, 0, 0, 1, 31, 33]),
        "matcher_stop": None if rng.random() < 0.9 else rng.choice([[], [0], [-1], [len(tokens) + 3]]),
        "terminate_without_stop": rng.random() < 0.15,
        "ops": ops,
    }


# --------------------------------------------------------------------------- running inputs


class Finding(Exception):
    """A harness's contract broken in a way that is not an exception escaping (an invariant)."""


_COMPILER: Any = None


def small_compiler() -> Any:
    """A compiler over the 256 bytes plus a few words and a stop token, shared by the harnesses."""
    global _COMPILER
    if _COMPILER is None:
        from agentgrammar import Compiler, Vocabulary

        tokens = [bytes([b]) for b in range(256)] + [
            b"ab",
            b"<a>",
            b"</a>",
            b'{"',
            b'":',
            b"\xc3\xa9",
            b"</s>",
        ]
        _COMPILER = Compiler(Vocabulary(tokens, stop_token_ids=[len(tokens) - 1]), reuse_grammars=False)
    return _COMPILER


def exercise(grammar: Any, seed: int, steps: int = 8) -> None:
    """Compile a grammar for the small vocabulary and walk a few allowed tokens."""
    import numpy as np

    from agentgrammar import Matcher

    compiler = small_compiler()
    matcher = Matcher(compiler.compile(grammar))
    rng = random.Random(seed)
    mask = np.zeros((1, (compiler.vocabulary.vocab_size + 31) // 32), dtype=np.int32)
    for _ in range(steps):
        if matcher.is_terminated():
            break
        matcher.fill_next_token_bitmask(mask)
        bits = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little"))
        if len(bits) == 0:
            break
        tok = int(bits[rng.randrange(len(bits))])
        if not matcher.accept_token(tok):
            raise Finding(f"token {tok} allowed by the mask was rejected")
    matcher.find_jump_forward_string()


def run_ebnf(inp: str) -> None:
    from agentgrammar import Grammar

    g = Grammar.from_ebnf(inp)
    str(g)
    exercise(g, len(inp))


def run_regex(inp: str) -> None:
    from agentgrammar import Grammar

    g = Grammar.from_regex(inp)
    exercise(g, len(inp))


def run_json_schema(inp: Tuple[Any, Dict[str, Any]]) -> None:
    from agentgrammar import Grammar

    schema, opts = inp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        g = Grammar.from_json_schema(schema, **opts)
    exercise(g, 1)


def run_structural_tag(inp: Any) -> None:
    from agentgrammar import Grammar

    g = Grammar.from_structural_tag(inp)
    exercise(g, 2)


class _FakeBackend:
    def __init__(self, kind: Optional[str]) -> None:
        self.kind = kind

    def __getattr__(self, name: str) -> Any:
        if self.kind == "raise":
            raise RuntimeError("backend attribute error")
        raise AttributeError(name)

    def to_str(self) -> str:
        if self.kind == "byte_level":
            return json.dumps({"decoder": {"type": "ByteLevel"}})
        if self.kind == "raise":
            raise RuntimeError("to_str failed")
        return "{not json"


class _FakeAdded:
    def __init__(self, special: Any) -> None:
        self.special = special


def make_fake_tokenizer(spec: Dict[str, Any]) -> Any:
    class FakeTokenizer:
        pass

    tok = FakeTokenizer()
    vocab = spec["vocab"]
    if spec["has_get_vocab"]:

        def get_vocab() -> Any:
            if vocab == "raise":
                raise RuntimeError("no vocabulary today")
            return dict(vocab) if isinstance(vocab, dict) else vocab

        tok.get_vocab = get_vocab  # type: ignore[attr-defined]
    tok.eos_token_id = spec["eos"]  # type: ignore[attr-defined]
    added = spec["added"]
    if added == "raise":
        FakeTokenizer.added_tokens_decoder = property(lambda self: 1 / 0)  # type: ignore[attr-defined]
    elif isinstance(added, dict):
        tok.added_tokens_decoder = {k: _FakeAdded(v) for k, v in added.items()}  # type: ignore[attr-defined]
    elif added is not None:
        tok.added_tokens_decoder = added  # type: ignore[attr-defined]
    if spec["backend"] is not None:
        tok.backend_tokenizer = _FakeBackend(spec["backend"])  # type: ignore[attr-defined]
    if spec["sp_model"]:
        tok.sp_model = object()  # type: ignore[attr-defined]
    return tok


def run_vocabulary(inp: Dict[str, Any]) -> None:
    from agentgrammar import Compiler, Grammar, Matcher, Vocabulary

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if inp["kind"] == "plain":
            vocab = Vocabulary(inp["tokens"], **inp["kwargs"])
        else:
            vocab = Vocabulary.from_huggingface(make_fake_tokenizer(inp["spec"]), **inp["kwargs"])
    repr(vocab)
    vocab.decode(range(vocab.num_tokens), skip_special_tokens=True)
    if vocab.vocab_size > 1 << 22:
        return  # a mask of this size is 2**22 / 8 bytes and more: not for a fuzzing loop
    matcher = Matcher(
        Compiler(vocab, reuse_grammars=False).compile(Grammar.from_ebnf('root ::= [a-z<>]* "a"?'))
    )
    matcher.allowed_token_ids()
    matcher.accept_string("a")
    matcher.allowed_token_ids()


def _matcher_grammar(spec: Tuple[str, Any]) -> Any:
    from agentgrammar import Grammar

    kind, value = spec
    if kind == "ebnf":
        return Grammar.from_ebnf(value)
    if kind == "regex":
        return Grammar.from_regex(value)
    if kind == "schema":
        return Grammar.from_json_schema(value)
    return Grammar.from_structural_tag(value)


def run_matcher(inp: Dict[str, Any]) -> None:
    import numpy as np

    from agentgrammar import AgentGrammarError, Compiler, Matcher, MatcherError, Vocabulary

    try:
        grammar = _matcher_grammar(inp["grammar"])
        vocab = Vocabulary(
            inp["tokens"], stop_token_ids=inp["stop"], vocab_size=len(inp["tokens"]) + inp["vocab_extra"]
        )
        compiled = Compiler(vocab, reuse_grammars=False).compile(grammar)
        matcher = Matcher(
            compiled,
            stop_token_ids=inp["matcher_stop"],
            terminate_without_stop_token=inp["terminate_without_stop"],
        )
    except AgentGrammarError:
        return
    n = vocab.vocab_size
    words = (n + 31) // 32
    mask = np.zeros((1, words), dtype=np.int32)
    direct = np.zeros((1, words), dtype=np.int32)
    stops = set(inp["matcher_stop"] if inp["matcher_stop"] is not None else vocab.stop_token_ids)
    for op in inp["ops"]:
        try:
            kind = op[0]
            if kind == "allowed":
                if matcher.is_terminated():
                    continue
                matcher.fill_next_token_bitmask(mask)
                bits = np.flatnonzero(np.unpackbits(mask.view(np.uint8), bitorder="little")[:n])
                if len(bits) == 0:
                    continue
                tok = int(bits[op[1] % len(bits)])
                if tok >= vocab.num_tokens and tok not in stops:  # a padding stop id: see the regressions
                    raise Finding(f"the mask allows padding id {tok} (num_tokens {vocab.num_tokens})")
                if not matcher.accept_token(tok):
                    raise Finding(
                        f"token {tok} ({vocab.token_bytes[tok]!r}) allowed by the mask was rejected"
                    )
            elif kind == "tok":
                terminated = matcher.is_terminated()
                try:
                    ok = matcher.accept_token(op[1])
                except MatcherError:
                    if not terminated:
                        raise
                    continue
                if terminated:
                    raise Finding("accept_token after termination did not raise MatcherError")
                if (
                    ok
                    and op[1] in stops
                    and not matcher.is_terminated()
                    and not inp["terminate_without_stop"]
                ):
                    raise Finding(f"accepting stop token {op[1]} did not terminate")
            elif kind == "str":
                matcher.accept_string(op[1])
            elif kind == "rollback":
                matcher.rollback(op[1])
            elif kind == "reset":
                matcher.reset()
                if matcher.num_accepted_steps != 0:
                    raise Finding("num_accepted_steps is not 0 after reset()")
            elif kind == "mask":
                matcher.fill_next_token_bitmask(mask)
                if op[1] and not matcher.is_terminated():
                    matcher._fill_next_token_bitmask_direct(direct)
                    if not np.array_equal(mask, direct):
                        diff = np.flatnonzero(
                            np.unpackbits((mask ^ direct).view(np.uint8), bitorder="little")
                        )
                        raise Finding(f"cached mask != direct mask at token ids {diff[:10].tolist()}")
            elif kind == "jump":
                matcher.find_jump_forward_string()
            elif kind == "badmask":
                bad = [
                    np.zeros((1, max(0, words - 1)), dtype=np.int32),
                    np.zeros((1, words), dtype=np.int64),
                    np.zeros((2, words), dtype=np.int32)[:, ::1].T,
                    np.zeros((words,), dtype=np.int32),
                ][op[1]]
                matcher.fill_next_token_bitmask(bad)
        except AgentGrammarError:
            continue
    matcher.is_completed()
    repr(matcher)


@dataclass
class Harness:
    name: str
    generate: Callable[[random.Random], Any]
    run: Callable[[Any], None]
    #: Exception types (besides AgentGrammarError) that the API documents for bad arguments.
    allowed: Tuple[str, ...] = ()
    doc: str = ""


HARNESSES: Dict[str, Harness] = {
    h.name: h
    for h in [
        Harness("ebnf", gen_ebnf, run_ebnf, doc="Grammar.from_ebnf, then compile and walk"),
        Harness("regex", gen_regex_input, run_regex, doc="Grammar.from_regex, then compile and walk"),
        Harness("json_schema", gen_json_schema_input, run_json_schema, doc="Grammar.from_json_schema"),
        Harness(
            "structural_tag", gen_structural_tag_input, run_structural_tag, doc="Grammar.from_structural_tag"
        ),
        Harness(
            "vocabulary",
            gen_vocabulary_input,
            run_vocabulary,
            doc="Vocabulary(...), Vocabulary.from_huggingface",
        ),
        Harness(
            "matcher", gen_matcher_input, run_matcher, doc="random token streams, rollback, reset, masks"
        ),
    ]
}


def _load_extra_harnesses() -> None:
    """Harnesses kept in modules of their own beside this file (``tools/fuzz_*.py``), each with
    ``HARNESSES``: a list of ``(name, generate, run, doc)``."""
    import importlib.util

    for path in sorted(Path(__file__).resolve().parent.glob("fuzz_*.py")):
        spec = importlib.util.spec_from_file_location(f"agentgrammar_tools_{path.stem}", path)
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        for name, generate, run, doc in getattr(module, "HARNESSES", []):
            HARNESSES[name] = Harness(name, generate, run, doc=doc)


_load_extra_harnesses()


def execute(harness: Harness, inp: Any) -> Tuple[str, str]:
    """Run one input: ``("ok" | "error", "")`` when the contract holds, else ``(kind, detail)``."""
    from agentgrammar import AgentGrammarError

    try:
        harness.run(inp)
    except AgentGrammarError:
        return "error", ""
    except Finding as e:
        return "invariant", f"{e}\n{traceback.format_exc()}"
    except Exception as e:
        if type(e).__name__ in harness.allowed:
            return "error", ""
        return "exception", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    return "ok", ""


def where(detail: str) -> str:
    """``file.py:function`` of the innermost agentgrammar frame of a traceback ("" when none)."""
    found = re.findall(r'File "[^"]*agentgrammar[/\\]([^"]+)", line \d+, in (\S+)', detail)
    return f"{found[-1][0]}:{found[-1][1]}" if found else ""


def signature(kind: str, detail: str) -> str:
    """What makes two findings the same: the kind, the exception type and the innermost frame."""
    if kind in ("crash", "hang", "slow"):
        return kind
    lines = [ln.strip() for ln in detail.splitlines()]
    frames = [ln for ln in lines if ln.startswith("File ")]
    head = lines[0].split(":")[0] if lines else ""
    if kind == "invariant":
        head = lines[0][:40] if lines else ""
    return f"{kind}|{head}|{frames[-1] if frames else ''}"


# --------------------------------------------------------------------------- the worker


class _deep_recursion:
    """A higher recursion limit while pickling deeply nested inputs (only around pickle calls)."""

    def __enter__(self) -> None:
        self.old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(self.old, 20000))

    def __exit__(self, *exc: Any) -> None:
        sys.setrecursionlimit(self.old)


def dumps(obj: Any) -> bytes:
    with _deep_recursion():
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def loads(data: bytes) -> Any:
    with _deep_recursion():
        return pickle.loads(data)


def _send(f: Any, obj: Any) -> None:
    data = dumps(obj)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _recv(f: Any) -> Any:
    head = f.read(8)
    if len(head) < 8:
        raise EOFError
    (n,) = struct.unpack("<Q", head)
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return loads(data)


def worker_main(name: str) -> None:
    """Read inputs from stdin, answer ``(kind, detail, seconds)`` on stdout (a private copy)."""
    import faulthandler

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything the library prints goes to stderr
    faulthandler.enable(file=sys.stderr)
    inp_f = sys.stdin.buffer
    harness = HARNESSES[name]
    import agentgrammar  # noqa: F401 - imported before the first timed input

    _send(out, ("ready", "", 0.0))
    while True:
        try:
            inp = _recv(inp_f)
        except EOFError:
            return
        t0 = time.perf_counter()
        kind, detail = execute(harness, inp)
        _send(out, (kind, detail, time.perf_counter() - t0))


class Worker:
    def __init__(self, name: str, log: Path) -> None:
        self.log_path = log
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker", name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            cwd=str(ROOT),
        )
        ready = self._read(120.0)
        if ready is None or ready[0] != "ready":
            raise RuntimeError(f"the fuzz worker did not start; see {log}")

    def _read(self, timeout: float) -> Optional[Any]:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            r, _, _ = select.select([fd], [], [], left)
            if r:
                try:
                    return _recv(self.proc.stdout)
                except EOFError:
                    return ("crash", "", 0.0)

    def run(self, inp: Any, timeout: float) -> Tuple[str, str, float]:
        assert self.proc.stdin is not None
        t0 = time.perf_counter()
        try:
            _send(self.proc.stdin, inp)
        except (BrokenPipeError, OSError):
            return "crash", self._crash_detail(), 0.0
        got = self._read(timeout)
        if got is None:
            self.kill()
            return "hang", f"no answer within {timeout} s", time.perf_counter() - t0
        if got[0] == "crash":
            return "crash", self._crash_detail(), time.perf_counter() - t0
        return got

    def _crash_detail(self) -> str:
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
            rc = None
        self.log.flush()
        tail = self.log_path.read_bytes()[-6000:].decode("utf-8", "replace")
        return f"worker exited with status {rc}\n{tail}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill()
        self.log.close()


# --------------------------------------------------------------------------- the driver


@dataclass
class Result:
    harness: str
    executions: int = 0
    seconds: float = 0.0
    errors: int = 0  # inputs refused with an AgentGrammarError (the expected outcome for junk)
    findings: int = 0
    kinds: Dict[str, int] = field(default_factory=dict)
    saved: List[str] = field(default_factory=list)
    #: (kind, first line of the detail, innermost agentgrammar frame) of every finding
    details: List[Tuple[str, str, str]] = field(default_factory=list)

    def row(self) -> Dict[str, Any]:
        rate = self.executions / self.seconds if self.seconds else 0.0
        return {
            "harness": self.harness,
            "executions": self.executions,
            "exec_per_s": round(rate, 1),
            "refused": self.errors,
            "findings": self.findings,
            "kinds": self.kinds,
            "saved": self.saved,
        }


def save_finding(findings: Path, harness: str, kind: str, inp: Any, detail: str, seconds: float) -> str:
    findings.mkdir(parents=True, exist_ok=True)
    blob = dumps(inp)
    digest = hashlib.sha1(blob).hexdigest()[:12]
    stem = findings / f"{harness}-{kind}-{digest}"
    stem.with_suffix(".pkl").write_bytes(blob)
    with _deep_recursion():
        shown = repr(inp)
    text = f"harness: {harness}\nkind: {kind}\nseconds: {seconds:.3f}\ninput: {shown}\n\n{detail}\n"
    stem.with_suffix(".txt").write_text(text, encoding="utf-8", errors="replace")
    return str(stem.with_suffix(".pkl"))


def fuzz(
    name: str,
    seconds: float,
    seed: int,
    *,
    findings: Optional[Path] = None,
    in_process: bool = False,
    timeout: float = 20.0,
    slow: float = 2.0,
    max_saved_per_signature: int = 3,
    log: Optional[Callable[[str], None]] = None,
    tame: bool = False,
) -> Result:
    """Run one harness for ``seconds``; inputs from ``random.Random(seed)``."""
    global TAME
    TAME = tame
    harness = HARNESSES[name]
    rng = random.Random(f"{name}:{seed}")
    res = Result(name)
    seen: Dict[str, int] = {}
    worker: Optional[Worker] = None
    if findings is None:
        findings = Path(tempfile.mkdtemp(prefix="agentgrammar-fuzz-"))
    if not in_process:
        findings.mkdir(parents=True, exist_ok=True)
        worker = Worker(name, findings / f"worker-{name}.log")
    start = time.perf_counter()
    try:
        while time.perf_counter() - start < seconds:
            try:
                inp = harness.generate(rng)
            except RecursionError:
                continue
            if worker is None:
                t0 = time.perf_counter()
                kind, detail = execute(harness, inp)
                took = time.perf_counter() - t0
            else:
                kind, detail, took = worker.run(inp, timeout)
                if kind in ("crash", "hang"):
                    worker.kill()
                    worker.close()
                    worker = Worker(name, findings / f"worker-{name}.log")
            res.executions += 1
            if kind == "error":
                res.errors += 1
            if kind in ("ok", "error") and took > slow:
                kind, detail = "slow", f"took {took:.2f} s (limit {slow} s)"
            if kind in ("ok", "error"):
                continue
            res.findings += 1
            res.kinds[kind] = res.kinds.get(kind, 0) + 1
            res.details.append(
                (kind, detail.strip().splitlines()[0] if detail.strip() else "", where(detail))
            )
            sig = signature(kind, detail)
            seen[sig] = seen.get(sig, 0) + 1
            if seen[sig] <= max_saved_per_signature:
                path = save_finding(findings, name, kind, inp, detail, took)
                res.saved.append(path)
                if log is not None:
                    first = detail.strip().splitlines()[0] if detail.strip() else ""
                    log(f"[{name}] {kind}: {first[:160]} -> {path}")
    finally:
        res.seconds = time.perf_counter() - start
        TAME = False
        if worker is not None:
            worker.close()
    return res


def replay(path: Path) -> int:
    """Run a saved finding in this process and print what happens."""
    harness = HARNESSES[path.name.split("-", 1)[0]]
    inp = loads(path.read_bytes())
    print(f"input: {inp!r}"[:2000])
    t0 = time.perf_counter()
    kind, detail = execute(harness, inp)
    print(f"{kind} in {time.perf_counter() - t0:.3f} s\n{detail}")
    return 0 if kind in ("ok", "error") else 1


def table(rows: List[Dict[str, Any]]) -> str:
    out = [f"{'harness':<16}{'executions':>12}{'exec/s':>10}{'refused':>10}{'findings':>10}  kinds"]
    for r in rows:
        kinds = ", ".join(f"{k}={v}" for k, v in sorted(r["kinds"].items())) or "-"
        out.append(
            f"{r['harness']:<16}{r['executions']:>12}{r['exec_per_s']:>10}{r['refused']:>10}{r['findings']:>10}  {kinds}"
        )
    return "\n".join(out)


class BytesRandom(random.Random):
    """A ``random.Random`` whose randomness is read from a byte string, so that a coverage-guided
    fuzzer (atheris / libFuzzer) steers the same structure-aware generators; past the end of the
    bytes every draw is 0."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0
        super().__init__(0)

    def _take(self, n: int) -> int:
        chunk = self._data[self._pos : self._pos + n]
        self._pos += n
        return int.from_bytes(chunk.ljust(n, b"\0"), "little")

    def random(self) -> float:
        return self._take(7) / float(1 << 56)

    def getrandbits(self, k: int) -> int:
        return self._take((k + 7) // 8) & ((1 << k) - 1) if k else 0


def atheris_main(name: str, seconds: float, timeout: float, findings: Path) -> int:
    """Coverage-guided fuzzing of one harness with atheris (``pip install atheris``), in this
    process. libFuzzer saves a failing input as ``<findings>/<harness>-crash-<sha1>`` (its bytes
    drive ``BytesRandom``; rerun with ``--engine atheris --replay-bytes FILE``)."""
    import atheris  # type: ignore[import-not-found]

    with atheris.instrument_imports():
        import agentgrammar  # noqa: F401

    harness = HARNESSES[name]
    findings.mkdir(parents=True, exist_ok=True)

    def one_input(data: bytes) -> None:
        try:
            inp = harness.generate(BytesRandom(data))
        except RecursionError:
            return
        kind, detail = execute(harness, inp)
        if kind not in ("ok", "error"):
            raise RuntimeError(f"{kind}: {detail}")

    argv = [
        sys.argv[0],
        f"-max_total_time={max(1, int(seconds))}",
        f"-timeout={max(1, int(timeout))}",
        f"-artifact_prefix={findings}/{name}-",
        "-print_final_stats=1",
    ]
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


def replay_bytes(name: str, path: Path) -> int:
    """Run one libFuzzer artifact (the bytes behind an atheris finding) in this process."""
    harness = HARNESSES[name]
    inp = harness.generate(BytesRandom(path.read_bytes()))
    print(f"input: {inp!r}"[:2000])
    kind, detail = execute(harness, inp)
    print(f"{kind}\n{detail}")
    return 0 if kind in ("ok", "error") else 1


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("harness", nargs="?", help=f"one of {', '.join(HARNESSES)}, or 'all'")
    p.add_argument("--seconds", type=float, default=10.0, help="time per harness (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--findings", type=Path, default=None, help="folder for findings (default: a temp dir)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds before an input counts as a hang")
    p.add_argument("--slow", type=float, default=2.0, help="seconds after which an input is a 'slow' finding")
    p.add_argument("--in-process", action="store_true", help="no worker subprocess (a crash ends the run)")
    p.add_argument("--replay", type=Path, help="run one saved finding (.pkl) in this process")
    p.add_argument("--list", action="store_true", help="list the harnesses")
    p.add_argument(
        "--engine",
        choices=["random", "atheris"],
        default="random",
        help="random: seeded generation and mutation (default); atheris: coverage-guided (one harness)",
    )
    p.add_argument("--replay-bytes", type=Path, help="with --engine atheris: run one libFuzzer artifact")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return 0
    if args.engine == "atheris":
        if args.harness not in HARNESSES:
            p.error(f"--engine atheris runs one harness: {', '.join(HARNESSES)}")
        if args.replay_bytes:
            return replay_bytes(args.harness, args.replay_bytes)
        findings = args.findings or Path(tempfile.mkdtemp(prefix="agentgrammar-fuzz-"))
        return atheris_main(args.harness, args.seconds, args.timeout, findings)
    if args.list:
        for h in HARNESSES.values():
            print(f"{h.name:<16}{h.doc}")
        return 0
    if args.replay:
        return replay(args.replay)
    if not args.harness or (args.harness != "all" and args.harness not in HARNESSES):
        p.error(f"give a harness: {', '.join(HARNESSES)} or all")
    names = list(HARNESSES) if args.harness == "all" else [args.harness]
    findings = args.findings or Path(tempfile.mkdtemp(prefix="agentgrammar-fuzz-"))
    rows = []
    for name in names:
        res = fuzz(
            name,
            args.seconds,
            args.seed,
            findings=findings,
            in_process=args.in_process,
            timeout=args.timeout,
            slow=args.slow,
            log=None if args.json else lambda s: print(s, flush=True),
        )
        rows.append(res.row())
    total = sum(r["findings"] for r in rows)
    if args.json:
        print(
            json.dumps(
                {
                    "seed": args.seed,
                    "seconds": args.seconds,
                    "findings_dir": str(findings),
                    "harnesses": rows,
                },
                indent=2,
            )
        )
    else:
        print(table(rows))
        print(f"findings: {total} (saved under {findings})")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())

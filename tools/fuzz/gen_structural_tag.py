"""Generator of structural tags: every format type, nested tags, dicts and JSON text.

>>> import random
>>> gen_format(random.Random(0))["type"] in TAG_TYPES
True
"""

from __future__ import annotations

import json
import random
from typing import Any, Dict

from . import rand
from .corpus import EBNF_SEEDS, JSON_SCHEMA_SEEDS, REGEX_SEEDS
from .gen_ebnf import gen_ebnf
from .gen_json_schema import gen_schema
from .gen_regex import gen_regex_input
from .rand import bound_int, mutate_json, mutate_text, rand_text, rand_word

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
    if rng.random() < 0.1 and not rand.TAME:  # deep nesting
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

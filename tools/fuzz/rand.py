"""Random helpers of the generators: interesting numbers, text, and mutators of text and JSON.

``TAME`` is set by ``fuzz(..., tame=True)`` (the smoke tests) and read by every generator.

>>> import random
>>> 0 <= small_int(random.Random(0)) <= 5
True
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable, List, Optional

from .corpus import JSON_SCHEMA_KEYWORDS

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

"""Generator of regular expressions: structured patterns, mutated seeds, deep nesting.

>>> import random
>>> isinstance(gen_regex_input(random.Random(0)), str)
True
"""

from __future__ import annotations

import random

from . import rand
from .corpus import REGEX_DICT, REGEX_SEEDS
from .gen_ebnf import gen_ebnf_class, gen_quantifier
from .rand import mutate_text


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
    if r < 0.92 or rand.TAME:
        return mutate_text(rng, rng.choice(REGEX_SEEDS), REGEX_DICT, REGEX_SEEDS)
    n = rng.choice([100, 200, 201, 1000])
    return rng.choice(["(" * n + "a" + ")" * n, "(?:" * n + "a" + ")" * n, "a" * n * 10, "|" * n, "[" * n])

"""Generator of EBNF grammar text: structured rules, mutated seeds, deep nesting.

>>> import random
>>> isinstance(gen_ebnf(random.Random(0)), str)
True
"""

from __future__ import annotations

import random
from typing import List

from . import rand
from .corpus import EBNF_DICT, EBNF_SEEDS
from .rand import bound_int, mutate_text, rand_word


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
    if r < 0.9 or rand.TAME:
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

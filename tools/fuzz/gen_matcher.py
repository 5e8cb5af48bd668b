"""Generator of matcher sessions: a small vocabulary, a grammar, and a random list of calls.

>>> import random
>>> sorted(gen_matcher_input(random.Random(0)))[:3]
['grammar', 'matcher_stop', 'ops']
"""

from __future__ import annotations

import random
from typing import Any, Dict, List, Tuple

from .gen_ebnf import gen_ebnf
from .gen_json_schema import gen_schema
from .gen_regex import gen_regex
from .gen_structural_tag import gen_format

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
    # a pattern counted in its own automaton (ir.CountedText), with and without a minimum
    {"type": "string", "pattern": "a.*b", "maxLength": 300},
    {"type": "string", "pattern": "x", "minLength": 2, "maxLength": 400},
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
        "defer": rng.random() < 0.3,  # compiled as the bound of its first mask; the whole built later
        "ops": ops,
    }

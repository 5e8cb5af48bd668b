"""Schema shapes that used to take seconds to convert (MaskBench: ``Handwritten---allany19``,
``Github_hard---o48423``, ``Github_easy---o47657``, ``JsonSchemaStore---theme``, ...), and the
work bound (``char_dfa.MAX_WORK``) that makes hostile string constraints fail cleanly.

Each fixed shape is checked for its *language* (against Python's ``re`` or ``jsonschema`` on
samples), never for its speed: no timed assertion here. The bound is checked by the typed error
it raises (``GrammarError`` from ``CharDFA``, ``SchemaError`` naming the keyword and pointer
from ``Grammar.from_json_schema``), on a real hostile input and, for each operation, on a small
input under a lowered bound.
"""

from __future__ import annotations

import itertools
import json
import random
import re
import warnings
from typing import Any, Dict, List, Optional, Tuple

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentgrammar import Grammar
from agentgrammar.errors import GrammarError, SchemaError
from agentgrammar.grammar import char_dfa, json_values
from agentgrammar.grammar.char_dfa import CharDFA
from agentgrammar.grammar.ir import CharClass, Choice, Literal, Repeat, Seq, choice
from agentgrammar.grammar.json_schema import choice as linear_choice
from agentgrammar.grammar.json_schema import json_schema_rules
from agentgrammar.grammar.regex import parse_regex

SETTINGS = settings(max_examples=80, deadline=None)


def accepts(schema: Any, value: Any, **options: Any) -> bool:
    return Grammar.from_json_schema(schema, **options).accepts(json.dumps(value))


# --------------------------------------------------------------------------- minimization


def moore_states(d: CharDFA) -> int:
    """The number of states of the minimal DFA by Moore's refinement (the former algorithm),
    as a reference for Hopcroft's."""
    t = d.trimmed()
    cls = [int(a) for a in t.accepting]
    count = len(set(cls))
    while True:
        sigs: Dict[Tuple[Any, ...], int] = {}
        new = []
        for s, row in enumerate(t.edges):
            merged: List[Tuple[int, int, int]] = []
            for lo, hi, x in sorted((lo, hi, cls[x]) for lo, hi, x in row):
                if merged and merged[-1][2] == x and merged[-1][1] == lo - 1:
                    merged[-1] = (merged[-1][0], hi, x)
                else:
                    merged.append((lo, hi, x))
            new.append(sigs.setdefault((cls[s], tuple(merged)), len(sigs)))
        if len(sigs) == count:
            return count
        cls, count = new, len(sigs)


@st.composite
def random_dfas(draw: st.DrawFn, acyclic: bool = False) -> CharDFA:
    """Random partial DFAs over a..d (ranges of one or two letters), many states equivalent;
    ``acyclic``: moves only go to higher states (minimized in one pass)."""
    n = draw(st.integers(1, 12))
    edges = []
    for s in range(n):
        row = []
        lo = 97
        while lo <= 100:
            hi = min(100, lo + draw(st.integers(0, 1)))
            if acyclic:
                t = draw(st.integers(s, n)) if s < n - 1 else n
                if s < t < n:
                    row.append((lo, hi, t))
            else:
                t = draw(st.integers(-1, n - 1))
                if t >= 0:
                    row.append((lo, hi, t))
            lo = hi + 1
        edges.append(row)
    accepting = [draw(st.booleans()) for _ in range(n)]
    return CharDFA(edges, accepting)


def _assert_minimal_and_equivalent(d: CharDFA, max_len: int) -> None:
    m = d.minimized()
    for k in range(max_len + 1):
        for chars in itertools.product("abcd", repeat=k):
            s = "".join(chars)
            assert m.matches(s) == d.matches(s), s
    if not d.is_empty():
        assert m.num_states == moore_states(d)


@SETTINGS
@given(d=random_dfas())
def test_hopcroft_minimization_keeps_the_language_and_is_minimal(d: CharDFA) -> None:
    _assert_minimal_and_equivalent(d, 4)


@SETTINGS
@given(d=random_dfas(acyclic=True))
def test_acyclic_minimization_keeps_the_language_and_is_minimal(d: CharDFA) -> None:
    _assert_minimal_and_equivalent(d, 5)


def test_minimization_of_a_length_product_is_exact() -> None:
    # a layered product (pattern x lengths): the shape Moore's refinement needed one round per
    # layer for; the minimal DFA of [ab]*b[ab] within 2..40 characters
    d = CharDFA.from_expr(parse_regex("[ab]*b[ab]")).intersect(CharDFA.length(2, 40))
    assert d.num_states == moore_states(d)
    rng = random.Random(3)
    for _ in range(400):
        s = "".join(rng.choice("ab") for _ in range(rng.randint(0, 44)))
        assert d.matches(s) == (re.fullmatch("[ab]*b[ab]", s) is not None and 2 <= len(s) <= 40), s


# --------------------------------------------------------------------------- many unanchored alternatives

GAMES = (
    "Red|Blue|Yellow|Gold|Silver|Crystal|Ruby|Sapphire|Emerald|FireRed|LeafGreen|Diamond|Pearl|"
    "Platinum|HeartGold|SoulSilver|Black|White|Black 2|White 2|X|Y|Omega Ruby|Alpha Sapphire|Sun|"
    "Moon|Ultra Sun|Ultra Moon|Let's Go Pikachu|Let's Go Eevee"
)
ZONES = (
    "UTC|(Africa/[A-Za-z]+)|(America/[A-Za-z]+)|(Antarctica/[A-Za-z]+)|(Arctic/[A-Za-z]+)|"
    "(Asia/[A-Za-z]+)|(Atlantic/[A-Za-z]+)|(Australia/[A-Za-z]+)|(Europe/[A-Za-z]+)|"
    "(Indian/[A-Za-z]+)|(Pacific/[A-Za-z]+)"
)
MIXED = "^ab|cd$|^ef$|gh|ij|^kl"  # every combination of anchors


def samples(pattern: str, alphabet: str, n: int, seed: int) -> List[str]:
    """Random strings over ``alphabet`` with pieces of the pattern's words mixed in."""
    rng = random.Random(seed)
    words = [w for w in re.split(r"[|()^$\[\]+]", pattern) if w]
    out = []
    for _ in range(n):
        parts = [rng.choice([rng.choice(words), rng.choice(words)[: rng.randint(0, 3)], rng.choice(alphabet)])
                 for _ in range(rng.randint(0, 4))]  # fmt: skip
        out.append("".join(parts))
    return out


@pytest.mark.parametrize("pattern", [GAMES, ZONES, MIXED])
def test_unanchored_alternatives_keep_their_language(pattern: str) -> None:
    # one automaton the size of the words, not one state per set of alternatives seen
    d = CharDFA.from_expr(json_values.pattern_chars(pattern))
    assert d.num_states <= len(pattern) + 2
    for s in samples(pattern, "aAbz/ 2'", 600, 1):
        assert d.matches(s) == (re.search(pattern, s) is not None), s


@pytest.mark.parametrize("pattern", [GAMES, ZONES, MIXED])
def test_unanchored_alternatives_through_the_engine(pattern: str) -> None:
    # Github_easy---o47657 / o5195: the C core used to give up determinizing such a pattern
    schema = {"type": "string", "pattern": pattern}
    g = Grammar.from_json_schema(schema)
    for s in samples(pattern, "aAbz/ 2'", 150, 2):
        assert g.accepts(json.dumps(s)) == (re.search(pattern, s) is not None), s


def test_unanchored_alternatives_as_pattern_properties() -> None:
    # Github_hard---o48423: the subset construction of .*a.*|.*b.*|... was exponential
    schema = {
        "type": "object",
        "patternProperties": {GAMES: {"type": "integer"}},
        "additionalProperties": False,
    }
    g = Grammar.from_json_schema(schema)
    for key in ["Red", "xRedx", "Let's Go Eevee!", "Ultra", "Blu", "", "white"]:
        value = {key: 1}
        assert g.accepts(json.dumps(value)) == jsonschema.Draft202012Validator(schema).is_valid(value), key


def test_universal_states_are_merged() -> None:
    # once one of the words is seen, every continuation is accepted: a single state
    d = CharDFA.from_expr(parse_regex(r"[\s\S]*(ab|cd)[\s\S]*|[\s\S]*ef[\s\S]*"))
    assert d.num_states == 5  # start, a, c, e, matched (one state for any mix of the rest)
    assert d.matches("xxabyy") and d.matches("ef") and not d.matches("ac")


# --------------------------------------------------------------------------- patterns under length bounds

CURIE = r"^([a-z0-9-]+):([a-z0-9\.-]+):([a-z0-9-]+)?:([a-z0-9-]+)$"
TAG = r"^([\w\/-]|[\w-][\w\/-]*[\w-])$"


@pytest.mark.parametrize(
    ("pattern", "lo", "hi", "alphabet"),
    [(CURIE, 0, 146, "ab-.:"), (TAG, 0, 255, "a/-_é"), ("[aA][12].*[zZ]", 10, 90, "aA12zZx")],
)
def test_pattern_under_length_bounds(pattern: str, lo: int, hi: int, alphabet: str) -> None:
    # Github_hard---o82811 and its kind: products of a pattern and a long length bound
    schema = {"type": "string", "pattern": pattern, "minLength": lo, "maxLength": hi}
    g = Grammar.from_json_schema(schema)
    rng = random.Random(5)
    for _ in range(60):
        n = rng.choice([rng.randint(0, 12), rng.randint(hi - 3, hi + 2), rng.randint(lo, lo + 2)])
        s = "".join(rng.choice(alphabet) for _ in range(max(n, 0)))
        # \w is ASCII: what ECMA-262 and Python's re both call a word character
        want = re.search(pattern, s, re.ASCII) is not None and lo <= len(s) <= hi
        assert g.accepts(json.dumps(s)) == want, s
        assert g.accepts(json.dumps(s, ensure_ascii=False)) == want, s


def test_shared_character_rules_are_spelled_every_way() -> None:
    # the characters of a string automaton are shared rules: escapes still count
    schema = {"type": "string", "pattern": "^[a-c]+x$", "maxLength": 4}
    g = Grammar.from_json_schema(schema)
    assert g.accepts('"\\u0061bx"') and g.accepts('"ab\\u0078"') and g.accepts('"abcx"')
    assert not g.accepts('"abcdx"') and not g.accepts('"abcax"') and not g.accepts('"\\u0064x"')
    rules, _ = json_schema_rules(schema)
    assert sum(r.name.startswith("char") for r in rules) >= 1


# --------------------------------------------------------------------------- the work bound


def test_hostile_pattern_fails_cleanly_with_the_keyword_and_pointer() -> None:
    # overlapping wide classes in runs of one and two, repeated 300 times: millions of steps
    # of subset construction
    hostile = r"^(\w|\W\d|\S|[^x]\w){1,300}$"
    with pytest.raises(GrammarError, match=f"more than {char_dfa.MAX_WORK} steps"):
        CharDFA.from_expr(json_values.pattern_chars(hostile))
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": hostile, "maxLength": 400}}}
    with pytest.raises(SchemaError, match="steps") as info:
        Grammar.from_json_schema(schema)
    assert info.value.keyword == "pattern"
    assert info.value.pointer == "#/properties/a/pattern"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = Grammar.from_json_schema(schema, lenient=True)  # over-approximated: any string
    assert any("steps" in str(w.message) for w in caught)
    assert g.accepts('{"a": "anything"}')


@pytest.mark.parametrize("operation", ["from_expr", "intersect", "complement", "minimized"])
def test_each_operation_is_bounded(operation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    d = CharDFA.from_expr(parse_regex("[ab]*a[ab]{3}"))  # 16 states
    length = CharDFA.length(0, 60)
    run = {
        "from_expr": lambda: CharDFA.from_expr(parse_regex("[ab]*a[ab]{3}")),
        "intersect": lambda: d.intersect(length),
        "complement": lambda: d.complement(),
        "minimized": lambda: CharDFA(d.edges, d.accepting).minimized(),
    }[operation]
    run()  # fine under the default bound
    monkeypatch.setattr(char_dfa, "MAX_WORK", 20)
    with pytest.raises(GrammarError, match="more than 20 steps"):
        run()


def test_the_bound_is_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    # a count of steps, not a clock: the same input fails at the same bound every time
    monkeypatch.setattr(char_dfa, "MAX_WORK", 2000)
    outcomes = set()
    for _ in range(3):
        try:
            CharDFA.from_expr(parse_regex("[ab]*a[ab]{5}"))
            outcomes.add("ok")
        except GrammarError as e:
            outcomes.add(str(e))
    assert len(outcomes) == 1


# --------------------------------------------------------------------------- large enums, shared allOf


def test_linear_choice_matches_ir_choice() -> None:
    a, b = Literal(b"a"), Literal(b"b")
    cls = CharClass(((1, 2),))
    nested = Choice((a, Seq((a, b)), cls))
    for items in (
        [a, None, b, a],
        [nested, a, cls, Seq((a, b))],
        [None],
        [],
        [cls, CharClass(((1, 2),), True)],
    ):
        assert linear_choice(items) == choice(items)


def test_large_enum() -> None:
    # JsonSchemaStore---transcend-yml-schema-v4: enums of thousands of strings
    values = [f"value-{i}" for i in range(12000)] + ["value-7", "value-7"]
    schema = {"type": "array", "items": {"type": "string", "enum": values}}
    g = Grammar.from_json_schema(schema)
    assert g.accepts('["value-0", "value-11999"]')
    assert not g.accepts('["value-12000"]')


def test_shared_all_of_definitions_keep_their_meaning() -> None:
    # JsonSchemaStore---theme: allOf of shared definitions, reached from many places; the
    # merges are memoized by identity
    schema: Dict[str, Any] = {
        "definitions": {
            "color": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 3}}},
            "border": {"type": "object", "properties": {"width": {"type": "integer", "minimum": 0}}},
            "styles": {
                "type": "object",
                "properties": {
                    "color": {"$ref": "#/definitions/color"},
                    "border": {"$ref": "#/definitions/border"},
                },
            },
            "complete": {
                "allOf": [
                    {"$ref": "#/definitions/styles"},
                    {
                        "properties": {"color": {}, "border": {}, "css": {"type": "string"}},
                        "additionalProperties": False,
                    },
                ]
            },
        },
        "type": "object",
        "properties": {
            "a": {"$ref": "#/definitions/complete"},
            "b": {"allOf": [{"$ref": "#/definitions/complete"}, {"required": ["css"]}]},
            "c": {"patternProperties": {"^x": {"$ref": "#/definitions/complete"}}},
        },
        "additionalProperties": False,
    }
    validator = jsonschema.Draft7Validator(schema)
    g = Grammar.from_json_schema(schema)
    parts: List[Optional[Dict[str, Any]]] = [
        None,
        {},
        {"color": {"text": "red"}},
        {"color": {"text": "blue"}},
        {"border": {"width": -1}},
        {"border": {"width": 2}, "css": "x"},
        {"other": 1},
    ]
    for a, b, c in itertools.product(parts, parts[:4], parts[::2]):
        value: Dict[str, Any] = {}
        for key, part in (("a", a), ("b", b), ("c", None if c is None else {"x1": c})):
            if part is not None:
                value[key] = part
        assert g.accepts(json.dumps(value)) == validator.is_valid(value), value


# --------------------------------------------------------------------------- \d \w \s tables


def test_python_shorthand_ranges_match_per_code_point_tests() -> None:
    # found with re over all code points at once; the definition is per code point
    tests = {"d": str.isdecimal, "w": lambda c: c.isalnum() or c == "_", "s": str.isspace}
    for letter, test in tests.items():
        inside = set()
        for lo, hi in json_values.patterns._python_shorthand_ranges(letter):
            inside.update(range(lo, hi + 1))
        rng = random.Random(letter)
        probes = set(rng.sample(range(0x110000), 20000)) | set(range(0x3000)) | inside
        for cp in probes:
            assert (cp in inside) == test(chr(cp)), (letter, hex(cp))


# --------------------------------------------------------------------------- shared NFA copies

#: Subexpressions used many times over, as the same objects (so the serializer writes each once
#: and the C core meets the same node in many places, often with the same continuation, where
#: ag_fsm.c builds one copy of it).
_SHARED_PIECES: List[Tuple[Any, str]] = [
    (Seq((Literal(b"a"), Choice((Literal(b"b"), Literal(b"cd"))))), "a(?:b|cd)"),
    (Choice((CharClass(((0x61, 0x63),)), Literal(b"\xc3\xa9"))), "[a-c\u00e9]"),
    (Repeat(Literal(b"ab"), 0, 2), "(?:ab){0,2}"),
    (Repeat(Choice((Literal(b"x"), Literal(b"yz"))), 1, None), "(?:x|yz)+"),
    (Literal(b"q"), "q"),
]


@st.composite
def _shared_trees(draw: st.DrawFn, depth: int = 0) -> Tuple[Any, str]:
    """An IR tree over _SHARED_PIECES with its Python regex."""
    if depth >= 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_SHARED_PIECES))
    kids = [draw(_shared_trees(depth + 1)) for _ in range(draw(st.integers(1, 3)))]
    kind = draw(st.sampled_from(["seq", "choice", "star", "repeat"]))
    if kind == "seq":
        return Seq(tuple(k for k, _ in kids)), "".join(f"(?:{r})" for _, r in kids)
    if kind == "choice":
        return Choice(tuple(k for k, _ in kids)), "|".join(f"(?:{r})" for _, r in kids)
    inner, r = kids[0]
    if kind == "star":
        return Repeat(inner, 0, None), f"(?:{r})*"
    return Repeat(inner, 1, 3), f"(?:{r}){{1,3}}"


@settings(max_examples=60, deadline=None)
@given(tree=_shared_trees(), data=st.data())
def test_shared_subtrees_keep_their_language(tree: Tuple[Any, str], data: st.DataObject) -> None:
    from agentgrammar.grammar.ir import Rule

    expr, pattern = tree
    # the same pieces again in other alternatives, ending alike: copies that can be shared
    body = Choice((expr, Seq((Literal(b"q"), expr)), Seq((expr, _SHARED_PIECES[0][0]))))
    full = f"(?:{pattern})|q(?:{pattern})|(?:{pattern})(?:{_SHARED_PIECES[0][1]})"
    g = Grammar.from_rules([Rule("root", body)])
    compiled = re.compile(full)
    alphabet = ["a", "b", "c", "d", "q", "x", "y", "z", "\u00e9", "ab", "cd", "yz"]
    for _ in range(12):
        s = "".join(data.draw(st.lists(st.sampled_from(alphabet), max_size=7)))
        assert g.accepts(s) == (compiled.fullmatch(s) is not None), (pattern, s)


def _chained_alternatives(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"[:n]
    pairs = zip(letters, letters[1:] + letters[:1])
    return "root ::= " + " | ".join(f'[^{c}]* "{c}" [^{d}]* "{d}"' for c, d in pairs)


def test_determinizing_work_bound_is_a_typed_error() -> None:
    # exponentially many DFA states (which letters are pending in which branch): the C core's
    # bounds on determinizing (AG_DFA_MAX_SET_WORDS, AG_DFA_MAX_WORK) refuse it, whichever
    # is reached first (it used to take seconds to)
    from agentgrammar import Compiler, Vocabulary

    vocab = Vocabulary([bytes([b]) for b in range(256)] + [b"<eos>"], stop_token_ids=[256])
    bound = "determinizing the rule (takes over 268435456 steps|needs more than 4194304 words)"
    with pytest.raises(GrammarError, match=bound):
        Compiler(vocab).compile(Grammar.from_ebnf(_chained_alternatives(12)))
    g = Grammar.from_ebnf(_chained_alternatives(4))  # small: fine
    assert g.accepts("xayb") and g.accepts("dxa") and not g.accepts("aa") and not g.accepts("ab!")


def test_alternatives_with_a_common_tail_determinize_small() -> None:
    # [^\n]* "x" [^\n]* for 24 letters: the trailing repeats end alike, so the NFA holds one
    # copy of them and the subset construction meets 2 sets, not 2**24 (it used to hit the bound)
    letters = "abcdefghijklmnopqrstuvwx"
    g = Grammar.from_ebnf("root ::= " + " | ".join(f'[^\\n]* "{c}" [^\\n]*' for c in letters))
    assert g.accepts("zzzxzz") and g.accepts("a") and not g.accepts("zzz") and not g.accepts("a\nb")

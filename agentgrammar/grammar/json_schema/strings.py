"""String schemas: lengths, ``pattern``, ``format`` and negated patterns or values, alone or
intersected as automata; unions of string branches as one automaton."""

from __future__ import annotations

from functools import lru_cache
from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Tuple,
)

from ...errors import GrammarError, SchemaError
from .. import json_values
from ..char_dfa import PRODUCT_LIMIT, CharDFA
from ..counted_text import counts_in_own_states
from ..ir import (
    CountedText,
    Expr,
    seq,
)
from ..normalize import copies
from .base_rules import base
from .excludes import warn_lengths_dropped
from .formats import format_dfa, sole_format
from .keywords import (
    _AND_PATTERNS,
    _INTERNAL_KW,
    _MAX_LEVEL,
    _NOT_PATTERNS,
    _NOT_STRINGS,
    _REWRITTEN_KW,
    _STRING_KW,
    MAX_COUNT,
    _is_annotation,
    _ptr,
)
from .lengths import bounds_implied, lengths_hold
from .lexical import _DQ
from .merge import deref, flatten_all_of, merge
from .negate import negate

if TYPE_CHECKING:
    from .convert import Converter


#: The internal keywords (``_INTERNAL_KW``) as a set: most string schemas have none.
_INTERNAL_SET = frozenset(_INTERNAL_KW)


_MAX_UNION_LEAVES = 256  # string schemas united into one automaton (string_union)


def _bounds(schema: Dict[str, Any]) -> Optional[Tuple[int, Optional[int]]]:
    """A string schema's ``minLength`` and ``maxLength``; None when either is malformed."""
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    for x in (lo, hi):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or not 0 <= x <= MAX_COUNT):
            return None
    return (lo, hi) if lo is not None else None


@lru_cache(maxsize=512)
def _pattern_dfa(pattern: str) -> CharDFA:
    return CharDFA.from_expr(json_values.pattern_chars(pattern))


def _without_bounds(schema: Dict[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in schema.items() if k not in ("minLength", "maxLength")}


def string_schema(conv: Converter, schema: Dict[str, Any], path: str, hint: str) -> Optional[Expr]:
    lo = schema.get("minLength", 0)
    hi = schema.get("maxLength")
    for k, x in (("minLength", lo), ("maxLength", hi)):
        if (x is not None or k == "minLength") and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
            raise conv.fail(f"'{k}' must be a non-negative integer", path, k)
        if x is not None and x > MAX_COUNT:
            raise conv.fail(f"'{k}' is {x}; the largest supported is {MAX_COUNT}", path, k)
    if hi is not None and lo > hi:
        return None
    pattern, fmt = schema.get("pattern"), schema.get("format")
    if pattern is not None and not isinstance(pattern, str):
        raise conv.fail("'pattern' must be a string", path, "pattern")
    if fmt is not None and not isinstance(fmt, str):
        raise conv.fail("'format' must be a string", path, "format")
    if fmt in json_values.UNSUPPORTED_SPEC_FORMATS:
        conv.unsupported("format", path, f"{fmt!r} is not a supported format")
        fmt = None
    elif fmt is not None and fmt not in json_values.SUPPORTED_FORMATS:
        # A format the specification does not define is an annotation: it constrains nothing.
        fmt = None
    internal = not _INTERNAL_SET.isdisjoint(schema) and any(schema.get(k) for k in _INTERNAL_KW)
    if bounds_implied(pattern, fmt, lo, hi):
        schema, lo, hi = _without_bounds(schema), 0, None
    constraints = [c for c in (pattern, fmt) if c is not None]
    if conv.excludes and not constraints:  # a filtered string: no length bounds (xgrammar's rule)
        if internal:
            raise conv.fail(
                "a negated string constraint together with excludes is not supported", path, "not"
            )
        if lo or hi is not None:
            warn_lengths_dropped(path)
        return base(conv, "json_string")
    if internal or len(constraints) > 1 or (constraints and (lo or hi is not None)):
        return string_by_automaton(conv, schema, path, hint)
    if pattern is not None:
        try:
            return json_values.pattern_string(pattern)
        except SchemaError:
            raise
        except Exception as e:
            conv.unsupported("pattern", path, f"({pattern!r}) cannot be converted: {e}")
            return base(conv, "json_string")
    if fmt is not None:
        return conv.format_string(fmt)
    if lo == 0 and hi is None:
        return base(conv, "json_string")
    # Code points counted exactly. A character the repeat copies is the helper rule of any
    # character, the rule that normalization would make of it; one it does not copy stays
    # inline, in the string's one byte automaton
    if copies(lo, hi):
        return seq([_DQ, json_values.repeat_chars(base(conv, "json_any_char"), lo, hi), _DQ])
    return json_values.string_expr(lo, hi)


def string_by_automaton(conv: Converter, schema: Dict[str, Any], path: str, hint: str) -> Optional[Expr]:
    """A string under several character-level constraints at once (pattern, format,
    length, excluded patterns and values): the intersection of their automata."""
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    keyword = "pattern" if "pattern" in schema else "format" if "format" in schema else "not"
    dfa: Optional[CharDFA] = None
    try:
        dfa = string_dfa(conv, schema)
        return automaton_string(conv, dfa, lo, hi, hint)
    except GrammarError as e:
        if dfa is None or (not lo and hi is None):
            conv.unsupported(keyword, path, f"cannot be combined with the other string keywords: {e}")
            return base(conv, "json_string")
        # The constraints fit, their product with the length bounds does not: a pattern or
        # format under a large maxLength (pydantic's HttpUrl is a URI of at most 2,083 characters).
        bounds = f"minLength {lo}" + ("" if hi is None else f", maxLength {hi}")
        why = f"cannot be combined with the length bounds ({bounds}): {e}"
        kept = f"the {keyword} stays and the bounds it cannot combine go"
        if conv.loose_lengths and not conv.lenient:
            conv.loosened(keyword, path, f"{why}; {kept}")
        else:
            conv.unsupported(keyword, path, f"{why}; converted with lenient=True, {kept}")
        fmt = sole_format(schema)
        if fmt is not None and lengths_hold(fmt, lo, None):  # the format's own string, unbounded
            return conv.format_string(fmt)
    # lenient: the constraints with minLength alone (a small product), else without lengths
    for keep in (lo, 0) if lo and hi is not None else (0,):
        try:
            return automaton_string(conv, dfa, keep, None, hint)
        except GrammarError:
            continue
    return base(conv, "json_string")


def string_union(conv: Converter, branches: List[Any], path: str, hint: str) -> Tuple[bool, Optional[Expr]]:
    """anyOf / oneOf branches that are all strings under automaton constraints (nested
    anyOfs, ``not`` and ``$ref`` included) as one automaton, the union of theirs: it is
    (True, the expression). Converted apart, each branch's automaton becomes its own rules,
    although most of their states are alike (the same pattern, the same length bounds
    merged into every branch): ``anyOf`` of 16 patterns under ``minLength``/``maxLength``
    makes 13,000 rules apart and 1,500 united. (False, None) when some branch is not such
    a string, or the union would have more states than the branches' automata together:
    the caller converts the branches one by one then, exactly as without this."""
    if conv.excludes:  # filtered strings are converted one by one (string_schema)
        return False, None
    leaves: List[Dict[str, Any]] = []
    lenient, conv.lenient = conv.lenient, False  # anything over-approximated: not here
    try:
        if not all(string_leaves(conv, b, path, leaves, 0) for b in branches) or len(leaves) < 2:
            return False, None
        lo, hi, dfas = _leaf_dfas(conv, leaves)
        apart = sum(d.num_states for d in dfas)
        united = dfas[0]
        for d in dfas[1:]:
            united = united.union(d, max(PRODUCT_LIMIT, apart))
            if united.num_states > apart:
                return False, None
        return True, automaton_string(conv, united, lo, hi, hint)
    except (GrammarError, RecursionError):
        return False, None
    finally:
        conv.lenient = lenient


def _leaf_dfas(conv: Converter, leaves: List[Dict[str, Any]]) -> Tuple[int, Optional[int], List[CharDFA]]:
    """The automata of string leaves (``string_leaves``) and the length bounds of any union
    of them: the leaves' own when they all have the same (the usual case: the bounds were
    merged into every branch), else none, and each automaton bounded by its leaf's."""
    bounds = {(s.get("minLength", 0), s.get("maxLength")) for s in leaves}
    if len(bounds) == 1:
        lo, hi = bounds.pop()
        return lo, hi, [string_dfa(conv, s) for s in leaves]
    return 0, None, [string_dfa(conv, s).with_length(*_bounds(s)) for s in leaves]


def string_one_of(
    conv: Converter, branches: List[Any], rest: Dict[str, Any], path: str, hint: str
) -> Tuple[bool, Optional[Expr]]:
    """oneOf branches that are all strings (each a pattern, a format, lengths, or an anyOf
    of such), each merged with the siblings ``rest``, as one automaton, the strings exactly
    one branch accepts: it is (True, the expression). One product of the branches' automata,
    where making them exclusive (``combinators.exclusive``: each branch and every other's
    negation) then uniting them took n(n - 1) products and as many minimizations. (False,
    None) when some branch is not such a string, or the product passes the automata's
    limits: the caller makes the branches exclusive then, as without this."""
    if conv.excludes:  # filtered strings are converted one by one (string_schema)
        return False, None
    lenient, conv.lenient = conv.lenient, False  # anything over-approximated: not here
    try:
        leaves: List[List[Dict[str, Any]]] = []
        for i, b in enumerate(branches):  # merged one by one: most oneOfs are not strings
            leaves.append([])
            merged = merge(conv, rest, b, _ptr(path, "oneOf", i)) if rest else b
            if not string_leaves(conv, merged, path, leaves[-1], 0, plain=True):
                return False, None
        leaves = [ls for ls in leaves if ls]  # a branch that admits nothing never matches
        if len(leaves) < 2:
            return False, None
        lo, hi, flat = _leaf_dfas(conv, [s for ls in leaves for s in ls])
        dfas, at = [], 0
        for ls in leaves:
            dfa = flat[at]
            for part in flat[at + 1 : at + len(ls)]:  # a branch that is an anyOf of strings
                dfa = dfa.union(part)
            dfas.append(dfa)
            at += len(ls)
        apart = sum(d.num_states for d in dfas)
        return True, automaton_string(
            conv, CharDFA.exactly_one(dfas, max(PRODUCT_LIMIT, apart)), lo, hi, hint
        )
    except (GrammarError, RecursionError):
        return False, None
    finally:
        conv.lenient = lenient


def string_leaves(
    conv: Converter, schema: Any, path: str, out: List[Dict[str, Any]], level: int, plain: bool = False
) -> bool:
    """Collect in ``out`` the string schemas whose union ``schema`` is, each one that
    ``string`` builds an automaton for (with ``plain``, also one it builds without: a
    pattern alone, a length alone); False when ``schema`` is anything else (another type,
    an enum, ...). Schemas that admit nothing add nothing."""
    if level > _MAX_LEVEL or len(out) > _MAX_UNION_LEAVES:
        return False
    if schema is False:
        return True
    if not isinstance(schema, dict):
        return False
    schema = deref(conv, schema, path)
    if isinstance(schema, dict) and "allOf" in schema:
        schema = flatten_all_of(conv, schema, path)
    if schema is False:
        return True
    if not isinstance(schema, dict) or _REWRITTEN_KW & set(schema) or "enum" in schema or "const" in schema:
        return False
    if "not" in schema:
        rest = {k: v for k, v in schema.items() if k != "not"}
        positive = negate(conv, schema["not"], _ptr(path, "not"))
        return string_leaves(conv, merge(conv, rest, positive, path), path, out, level + 1, plain)
    if "oneOf" in schema:
        return False
    if "anyOf" in schema:
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            return False
        rest = {k: v for k, v in schema.items() if k != "anyOf" and not _is_annotation(k)}
        if rest:
            branches = [merge(conv, rest, b, path) for b in branches]
        return all(string_leaves(conv, b, path, out, level + 1, plain) for b in branches)
    if any(k not in _STRING_KW and k != "type" and not _is_annotation(k) for k in schema):
        return False
    if conv.types(schema, path) != ["string"]:
        return False
    bounds = _bounds(schema)
    if bounds is None:
        return False  # malformed: the usual conversion says why
    lo, hi = bounds
    if hi is not None and lo > hi:
        return True
    pattern, fmt = schema.get("pattern"), schema.get("format")
    if (pattern is not None and not isinstance(pattern, str)) or (
        fmt is not None and (not isinstance(fmt, str) or fmt in json_values.UNSUPPORTED_SPEC_FORMATS)
    ):
        return False
    if fmt not in json_values.SUPPORTED_FORMATS:
        fmt = None
    if bounds_implied(pattern, fmt, lo, hi):
        schema, lo, hi = _without_bounds(schema), 0, None
    constraints = [c for c in (pattern, fmt) if c is not None]
    if not (
        plain
        or any(schema.get(k) for k in _INTERNAL_KW)
        or len(constraints) > 1
        or (constraints and (lo or hi is not None))
    ):
        return False  # built without an automaton (a pattern alone, a length alone)
    out.append(schema)
    return True


def string_dfa(conv: Converter, schema: Dict[str, Any]) -> CharDFA:
    """The automaton of a string schema's character constraints, its length bounds apart
    (GrammarError past the automata's limits)."""
    parts = [
        _pattern_dfa(p)
        for p in [
            *([schema["pattern"]] if "pattern" in schema else []),
            *schema.get(_AND_PATTERNS, []),
        ]
    ]
    if schema.get("format") in json_values.SUPPORTED_FORMATS:
        parts.append(format_dfa(schema["format"]))
    dfa = parts[0] if parts else CharDFA.length(0, None)  # (no product with "any string")
    for part in parts[1:]:
        dfa = dfa.intersect(part)
    for p in schema.get(_NOT_PATTERNS, []):
        dfa = dfa.minus(_pattern_dfa(p))
    if schema.get(_NOT_STRINGS):
        dfa = dfa.minus(CharDFA.literal_set(schema[_NOT_STRINGS]))
    return dfa


def automaton_string(conv: Converter, dfa: CharDFA, lo: int, hi: Optional[int], hint: str) -> Optional[Expr]:
    """A JSON string whose content ``dfa`` accepts, of ``lo..hi`` characters (GrammarError
    past the automata's limits); built once per automaton and bounds in a conversion."""
    key = (id(dfa), lo, hi)
    found = conv.string_memo.get(key)
    if found is not None and found[0] is dfa:
        return found[1]
    bounded = bool(lo) or hi is not None
    shape = dfa.chain_then_loop() if bounded else None
    if shape is not None:
        expr = _chain_then_loop(conv, *shape, lo, hi)
    else:
        counted = bounded and _counted(dfa, lo, hi)  # else the product, when bounded
        source = dfa.with_length(lo, hi) if bounded and not counted else dfa
        content = source.to_ir(conv.json_char, conv.rules, conv.fresh, f"{hint}_str")
        if content is not None and counted:
            content = CountedText(content, base(conv, "json_any_char"), lo, hi)
        expr = None if content is None else seq([_DQ, content, _DQ])
    conv.string_memo[key] = (dfa, expr)
    return expr


#: Products of a pattern's automaton and a count of characters past this many states are
#: counted by the core in the pattern's own states (``ir.CountedText``) instead: a found-anywhere
#: pattern under ``maxLength: 200`` (``Github_medium---o17563``) made 458 rules of a product.
_COUNTED_PAIRS = 256
#: ... when the automaton has at most this many states: converting and building it is then
#: redone in every grammar (an email's 1,236 states took 20 ms, where the format alone is a part
#: built once per process), and larger ones are left to the product and its limit.
_COUNTED_STATES = 256


def _counted(dfa: CharDFA, lo: int, hi: Optional[int]) -> bool:
    """Whether ``dfa``'s strings of ``lo``..``hi`` characters are better counted by the core
    than built as a product: the product is large, the automaton small, and the core counts
    them exactly."""
    top = lo if hi is None else hi
    return (
        len(dfa.edges) <= _COUNTED_STATES
        and dfa.pairs_through_loops(top) > _COUNTED_PAIRS
        and counts_in_own_states(dfa, lo, hi)
    )


def _chain_then_loop(
    conv: Converter,
    chain: List[List[Tuple[int, int]]],
    loop: List[Tuple[int, int]],
    lo: int,
    hi: Optional[int],
) -> Optional[Expr]:
    """A JSON string of C1 .. Ck L* (``CharDFA.chain_then_loop``) of ``lo..hi`` characters:
    C1 .. Ck L{lo - k, hi - k}, counted rather than a product automaton whose size grows
    with the bound (``^[a-z0-9-]+$`` under ``maxLength: 255`` was 256 states, now the
    same few states for any bound). None when no such string exists."""
    k = len(chain)
    if hi is not None and hi < k:
        return None
    items: List[Expr] = [_DQ]
    for ranges in chain:
        ch = conv.json_char(ranges)
        if ch is None:
            return None
        items.append(ch)
    rest_lo, rest_hi = max(lo - k, 0), None if hi is None else hi - k
    # a character the repeat copies is a rule, as normalization would make it; one it does
    # not copy stays inline, in the string's one byte automaton
    char_of = conv.json_char if copies(rest_lo, rest_hi) else json_values.json_char_of
    ch = char_of(loop) if loop else None
    if ch is None:  # no character after the chain can be spelled: the chain alone
        if rest_lo:
            return None
    elif rest_hi != 0:
        items.append(json_values.repeat_chars(ch, rest_lo, rest_hi))
    items.append(_DQ)
    return seq(items)

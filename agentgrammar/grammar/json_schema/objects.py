"""Object schemas: declared members in schema order (or any order), extra members under
``additionalProperties`` / ``patternProperties`` / ``propertyNames``, member counts."""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    List,
    Optional,
    Tuple,
)

from ...errors import GrammarError
from .. import json_values
from ..char_dfa import CharDFA
from ..ir import (
    EMPTY,
    Expr,
    KeyTrie,
    Literal,
    Repeat,
    RuleRef,
    seq,
)
from .base_rules import base
from .excludes import filtered_key, filtered_literal
from .formats import format_dfa
from .key_trie import PLAIN_NAME, _key_not_in
from .keywords import _count, _is_annotation, _ptr, _sanitize, _segment
from .lexical import _DQ, _RAW_RANGES, _opt, _string_literal, choice
from .merge import deref, merge
from .strings import _pattern_dfa

if TYPE_CHECKING:
    from .convert import Converter


#: The most declared properties an object may have for ``any_order=True`` (2**n rules).
ANY_ORDER_LIMIT = 8


_MAX_PATTERN_PROPERTIES = 4  # keys are split by which patterns they match: 2**n classes


_MAX_COUNTED_RULES = 4_096  # min/maxProperties: one rule per (member position, count)


def object_schema(
    conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str
) -> Optional[Expr]:
    lay = conv.layout
    found = declared_members(conv, schema, path, depth, hint)
    if found is None:
        return None
    members, add = found
    n_req = [r for _, r in members].count(True)
    if "minProperties" in schema or "maxProperties" in schema:
        mnp, mxp = (_count(schema, k, conv, path) for k in ("minProperties", "maxProperties"))
        mnp = mnp or 0
    else:  # the usual object: no count
        mnp, mxp = 0, None
    if mxp is not None and (mxp < n_req or mxp < mnp):
        return None
    allow_empty = n_req == 0 and mnp == 0
    counted = mnp > max(n_req, 1) or (mxp is not None and (add is not None or mxp < len(members)))
    if counted and (len(members) + 2) * ((mxp if mxp is not None else mnp) + 1) > _MAX_COUNTED_RULES:
        conv.unsupported(
            "maxProperties" if mxp is not None else "minProperties",
            path,
            f"needs more than {_MAX_COUNTED_RULES} rules to count the members",
        )
        counted, allow_empty = False, n_req == 0  # lenient: the count is not enforced
    sep = lay.sep(depth)
    any_order = conv.any_order and 2 <= len(members) <= ANY_ORDER_LIMIT
    if (
        counted
        and any_order
        and (1 << len(members)) * ((mxp if mxp is not None else mnp) + 1) <= _MAX_COUNTED_RULES
    ):
        nonempty = members_any_order_counted(conv, members, add, sep, mnp, mxp, hint)
    elif counted:  # (in any order, too many rules: schema order, a sound subset)
        nonempty = members_counted(conv, members, add, sep, mnp, mxp, hint)
    else:
        nonempty = members_in_order(conv, members, add, sep, hint)
        if any_order:
            nonempty = members_any_order(conv, members, add, sep, hint)
    alts: List[Optional[Expr]] = [lay.empty(depth, b"{}") if allow_empty else None]
    if nonempty is not None:
        alts.append(lay.container(depth, b"{}", nonempty))
    return choice(alts)


def declared_members(
    conv: Converter, schema: Dict[str, Any], path: str, depth: int, hint: str
) -> Optional[Tuple[List[Tuple[Expr, bool]], Optional[Expr]]]:
    """The declared members of an object schema (each a member expression and whether it is
    required), in schema order, and one extra member (None: none allowed); None when no object
    can satisfy the schema (a required member that cannot be written)."""
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise conv.fail("'properties' must be an object", path, "properties")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise conv.fail("'required' must be an array of strings", path, "required")
    req = set(required)
    patterns = schema.get("patternProperties", {})
    if not isinstance(patterns, dict):
        raise conv.fail("'patternProperties' must be an object", path, "patternProperties")
    # strict closes the objects that declare members; {"type": "object"} stays any object
    declared = "properties" in schema or "required" in schema or "patternProperties" in schema
    addl = schema.get("additionalProperties", False if conv.strict and declared else True)
    names = schema.get("propertyNames", True)
    names_dfa = None if names is True else property_names_dfa(conv, names, _ptr(path, "propertyNames"))
    props = dict(props)
    # A required name declares a member too: strict's own closing does not forbid it.
    given = schema.get("additionalProperties", True)
    for r in required:
        if r not in props:
            props[r] = given if not any(key_pattern_dfa(conv, p, path).matches(r) for p in patterns) else True
    for k in list(props) if patterns or names_dfa is not None else ():
        if names_dfa is not None and not names_dfa.matches(k):
            if k in req:
                return None
            del props[k]
            continue
        for p, ps in patterns.items():
            if key_pattern_dfa(conv, p, path).matches(k):
                props[k] = merge(conv, props[k], ps, _ptr(path, "patternProperties", p))
    members: List[Tuple[Expr, bool]] = []
    colon = conv.layout.colon(depth)
    # the parts every member's path and rule name share, joined once
    at, named, sub, excludes = _ptr(path, "properties") + "/", f"{hint}_prop_", conv.sub, conv.excludes
    for k, s in props.items():
        v = sub(s, at + _segment(k), depth + 1, named + _sanitize(k))
        name = filtered_literal(k, excludes) if excludes else _string_literal(k)
        if v is None or name is None:  # no value, or a name holding an excluded word
            if k in req:
                return None
            continue
        members.append((seq([name, colon, v]), k in req))
    if patterns or names_dfa is not None:
        add = extra_members(conv, props, patterns, addl, names_dfa, path, depth, hint)
    else:
        add = additional_members(conv, props, addl, path, depth, hint)
    return members, add


def members_in_order(
    conv: Converter, members: List[Tuple[Expr, bool]], add: Optional[Expr], sep: Expr, hint: str
) -> Optional[Expr]:
    """Object content (at least one member): the declared members in schema order, each
    optional unless required, then extra members."""
    # after[i]: the members from i on, when one was already written (each preceded by sep).
    # first(i - 1) and after[i - 1] both use after[i] for i <= first_req + 1 (the members up
    # to the first required one). Up to there, after[i] is sep and then pick[i], the next
    # member written (m_i, or any later one up to the first required, or an extra one),
    # optional when no required member is ahead: the separator comes before the choice, so
    # after a value only sep is expected, not a chain of nullable rules, one per optional
    # member left, each predicted (and classified) at once. pick[i] from 2 on are rules,
    # each referring to the next, so the size stays linear.
    n = len(members)
    tail: Expr = Repeat(seq([sep, add]), 0, None) if add is not None else EMPTY
    first_req = next((i for i, (_, r) in enumerate(members) if r), n)
    after: List[Expr] = [EMPTY] * (n + 1)
    shared = min(first_req + 1, n)
    # only the members past `shared` are written one by one (the earlier ones go through
    # pick below): with no required member, none is
    pieces = [seq([sep, m]) if r else _opt(seq([sep, m])) for m, r in members[shared:]]
    after[shared] = seq(pieces + [tail])
    if shared >= 2 and type(after[shared]) not in (RuleRef, Literal) and after[shared] != EMPTY:
        name = conv.fresh(f"{hint}_rest_{shared}")  # used twice below: one rule
        conv.rules[name] = after[shared]
        after[shared] = RuleRef(name)
    # pick[shared]: an extra member, the only choice left once the declared ones are past
    pick: Optional[Expr] = seq([add, tail]) if add is not None and shared == n else None
    heres: Dict[int, Expr] = {}  # here(i), the same in first(i) below: made once
    for i in range(shared - 1, 0, -1):
        m, r = members[i]
        here = heres[i] = seq([m, after[i + 1]])
        body = here if r else choice([here, pick])
        assert body is not None
        if i >= 2 and type(body) not in (RuleRef, Literal):
            name = conv.fresh(f"{hint}_pick_{i}")
            conv.rules[name] = body
            body = RuleRef(name)
        pick = body
        after[i] = seq([sep, pick]) if first_req < n else _opt(seq([sep, pick]))
    # first(i): nothing written yet; members from i on, at least one member in total:
    # first(i) = here(i) | first(i + 1), or here(i) alone for a required member. The
    # alternatives are gathered from the last and made one choice: choosing at each step
    # re-flattened the growing choice, quadratic in the optional members.
    firsts: List[Optional[Expr]] = [seq([add, tail]) if add is not None else None]
    for i in range(min(first_req, n - 1) if n else -1, -1, -1):
        m, r = members[i]
        here = heres[i] if i in heres else seq([m, after[i + 1]])
        if r:
            firsts.clear()
        firsts.append(here)
    return choice(firsts[::-1])


def members_counted(
    conv: Converter,
    members: List[Tuple[Expr, bool]],
    add: Optional[Expr],
    sep: Expr,
    lo: int,
    hi: Optional[int],
    hint: str,
) -> Optional[Expr]:
    """Object content (at least one member) with ``lo..hi`` members in all: the declared
    members in schema order, then extra ones, counted by one rule per (position, count).
    Counts past ``lo`` are all alike when there is no ``hi``."""
    n = len(members)
    cap = hi if hi is not None else lo
    names: Dict[Tuple[int, int], str] = {}

    def at(i: int, c: int) -> Optional[Expr]:
        """The members from position i on (n: the extra ones), c members written so far."""
        key = (i, c)
        if key in names:
            return RuleRef(names[key])
        names[key] = conv.fresh(f"{hint}_count")
        lead = [sep] if c else []
        more = min(c + 1, cap) if hi is None else c + 1
        alts: List[Optional[Expr]] = []
        if i < n:
            m, required = members[i]
            if more <= cap or hi is None:
                nxt = at(i + 1, more)
                alts.append(None if nxt is None else seq([*lead, m, nxt]))
            if not required:
                alts.append(at(i + 1, c))
        else:
            if add is not None and (hi is None or c < hi):
                nxt = RuleRef(names[key]) if more == c else at(n, more)
                alts.append(None if nxt is None else seq([*lead, add, nxt]))
            if c >= max(lo, 1):
                alts.append(EMPTY)
        body = choice(alts)
        if body is None:
            del names[key]
            return None
        conv.rules[names[key]] = body
        return RuleRef(names[key])

    return at(0, 0)


def members_any_order(
    conv: Converter, members: List[Tuple[Expr, bool]], add: Optional[Expr], sep: Expr, hint: str
) -> Optional[Expr]:
    """Object content with the declared members in any order, each at most once and every
    required one present, and extra members anywhere: one rule per set of members written."""
    n = len(members)
    need = sum(1 << i for i, (_, r) in enumerate(members) if r)
    names: Dict[int, str] = {}

    def rest(done: int) -> Expr:  # what may follow once the members in ``done`` are written
        if done not in names:
            names[done] = conv.fresh(f"{hint}_any_{done}")
            alts: List[Optional[Expr]] = [
                seq([sep, members[i][0], rest(done | 1 << i)]) for i in range(n) if not done >> i & 1
            ]
            if add is not None:
                alts.append(seq([sep, add, RuleRef(names[done])]))
            if done & need == need:
                alts.append(EMPTY)
            body = choice(alts)
            conv.rules[names[done]] = body if body is not None else EMPTY
        return RuleRef(names[done])

    firsts: List[Optional[Expr]] = [seq([m, rest(1 << i)]) for i, (m, _) in enumerate(members)]
    if add is not None:
        firsts.append(seq([add, rest(0)]))
    return choice(firsts)


def members_any_order_counted(
    conv: Converter,
    members: List[Tuple[Expr, bool]],
    add: Optional[Expr],
    sep: Expr,
    lo: int,
    hi: Optional[int],
    hint: str,
) -> Optional[Expr]:
    """Object content (at least one member) with the declared members in any order, each at
    most once and every required one present, extra members anywhere, and ``lo..hi`` members
    in all: one rule per (set of members written, count written). Counts past ``lo`` are all
    alike when there is no ``hi``."""
    n = len(members)
    need = sum(1 << i for i, (_, r) in enumerate(members) if r)
    cap = hi if hi is not None else max(lo, 1)
    names: Dict[Tuple[int, int], Optional[str]] = {}

    def rest(done: int, c: int) -> Optional[Expr]:
        """What may follow once the members in ``done`` and ``c`` members in all are written;
        None when nothing can complete the object."""
        key = (done, c)
        if key not in names:
            names[key] = name = conv.fresh(f"{hint}_any_{done}_{c}")
            more = c + 1 if hi is not None else min(c + 1, cap)
            alts: List[Optional[Expr]] = []
            if hi is None or c < hi:
                for i in range(n):
                    if not done >> i & 1:
                        nxt = rest(done | 1 << i, more)
                        alts.append(None if nxt is None else seq([sep, members[i][0], nxt]))
                if add is not None:
                    nxt = RuleRef(name) if more == c else rest(done, more)
                    alts.append(None if nxt is None else seq([sep, add, nxt]))
            if done & need == need and c >= lo:
                alts.append(EMPTY)
            body = choice(alts)
            if body is None:
                names[key] = None
                return None
            conv.rules[name] = body
        found = names[key]
        return None if found is None else RuleRef(found)

    first = 1 if hi is not None else min(1, cap)
    firsts: List[Optional[Expr]] = []
    for i, (m, _) in enumerate(members):
        nxt = rest(1 << i, first)
        firsts.append(None if nxt is None else seq([m, nxt]))
    if add is not None:
        nxt = rest(0, first)
        firsts.append(None if nxt is None else seq([add, nxt]))
    return choice(firsts)


#: The rest of an undeclared key once it differs from every declared one: any characters, then
#: the closing quote (``json_any_char`` installed by ``additional_members``); made once.
_KEY_TAIL = seq([Repeat(RuleRef("json_any_char"), 0, None), _DQ])


def additional_members(
    conv: Converter, props: Dict[str, Any], addl: Any, path: str, depth: int, hint: str
) -> Optional[Expr]:
    """A member whose key is none of ``props`` and whose value is valid against ``addl``."""
    if addl is False:
        return None
    v = conv.sub(addl, path + "/additionalProperties", depth + 1, f"{hint}_addl")
    if v is None:
        return None
    names = tuple(props)
    key = conv.key_rules.get(names)
    if key is None and conv.excludes:  # the filtered key: an automaton over written characters
        body = filtered_key(conv, names, f"{hint}_other")
        if body is None:
            return None
        key = RuleRef(conv.fresh(f"{hint}_other_key"))
        conv.rules[key.name] = body
        conv.key_rules[names] = key
    if key is None:  # one rule per set of names: objects reached by several paths share it
        # the tail (characters, closing quote) spelled out, not a rule of its own: a
        # reference is a rule edge one character into the key, and at a key position
        # nearly every token would run past it into the parser; spelled out, the key is
        # one byte automaton whose states take every plain token at once
        # (csrc/ag_plain_tokens.h)
        any_char = base(conv, "json_any_char")
        # the usual names (all plain: one match of them joined, each non-empty)
        if names and all(names) and PLAIN_NAME.fullmatch("".join(names)):
            escape = base(conv, "json_plain_escape")
            body = seq([_DQ, KeyTrie(names, _KEY_TAIL, escape, any_char, _RAW_RANGES)])
        elif names:
            body = _key_not_in(names, _KEY_TAIL, base(conv, "json_plain_escape"), any_char)
        else:  # any key: no character is excluded, so no escape rule is needed
            body = _key_not_in(names, _KEY_TAIL, any_char, any_char)
        key = RuleRef(conv.fresh(f"{hint}_other_key"))
        conv.rules[key.name] = body
        conv.key_rules[names] = key
    name = conv.fresh(f"{hint}_addl_member")
    conv.rules[name] = seq([key, conv.layout.colon(depth), v])
    return RuleRef(name)


def extra_members(
    conv: Converter,
    props: Dict[str, Any],
    patterns: Dict[str, Any],
    addl: Any,
    names_dfa: Optional[CharDFA],
    path: str,
    depth: int,
    hint: str,
) -> Optional[Expr]:
    """A member whose key is none of ``props``, under ``patternProperties`` and
    ``propertyNames``: keys are split by the set of patterns they match, and each class
    gets the merge of those patterns' schemas (``additionalProperties`` when none)."""
    if conv.excludes:
        keyword = "patternProperties" if patterns else "propertyNames"
        raise conv.fail(f"'{keyword}' together with excludes is not supported", path, keyword)
    if len(patterns) > _MAX_PATTERN_PROPERTIES:
        conv.unsupported(
            "patternProperties",
            path,
            f"with more than {_MAX_PATTERN_PROPERTIES} patterns is not supported",
        )
        patterns = {}
        addl = True
    if (
        names_dfa is None
        and (addl is True or addl == {})
        and all(v is True or v == {} for v in patterns.values())
    ):
        return additional_members(conv, props, True, path, depth, hint)  # every key: any value
    try:
        if names_dfa is None and addl is False and not props and len(patterns) == 1:
            return _pattern_members(conv, *next(iter(patterns.items())), path, depth, hint)
        keys = CharDFA.literal_set(list(props)).complement()
        if names_dfa is not None:
            keys = keys.intersect(names_dfa)
        dfas = [key_pattern_dfa(conv, p, path) for p in patterns]
        alts: List[Expr] = []
        for mask in range(1 << len(dfas)):
            chosen = [i for i in range(len(dfas)) if mask >> i & 1]
            value: Any = addl if not chosen else True
            for i in chosen:
                p = list(patterns)[i]
                value = merge(conv, value, patterns[p], _ptr(path, "patternProperties", p))
            if value is False:
                continue
            cls = keys
            for i, d in enumerate(dfas):
                cls = cls.intersect(d) if mask >> i & 1 else cls.minus(d)
            if cls.is_empty():
                continue
            where = _ptr(path, "patternProperties") if chosen else _ptr(path, "additionalProperties")
            v = conv.sub(value, where, depth + 1, f"{hint}_pp{mask}")
            if v is None:
                continue
            key = cls.to_ir(conv.json_char, conv.rules, conv.fresh, f"{hint}_key{mask}")
            if key is not None:
                alts.append(seq([_DQ, key, _DQ, conv.layout.colon(depth), v]))
    except GrammarError as e:
        conv.unsupported("patternProperties", path, f"cannot be converted: {e}")
        return additional_members(conv, props, True, path, depth, hint)
    body = choice(alts)
    if body is None:
        return None
    name = conv.fresh(f"{hint}_extra_member")
    conv.rules[name] = body
    return RuleRef(name)


def _pattern_members(
    conv: Converter, pattern: Any, schema: Any, path: str, depth: int, hint: str
) -> Optional[Expr]:
    """Members whose keys match ``pattern`` (and no other key: no declared property, no other
    pattern, no additional property), their values valid against ``schema``: the key is the
    pattern's string, as a string value's (a counted class stays counted), not its automaton
    split from the keys it does not match (``^[0-9a-zA-Z_-]{1,255}$``: 256 states, 15 ms)."""
    if not isinstance(pattern, str):
        raise conv.fail("a pattern must be a string", path, "patternProperties")
    key = json_values.pattern_string(pattern)  # (GrammarError: as the automaton's would be)
    v = conv.sub(schema, _ptr(path, "patternProperties", pattern), depth + 1, f"{hint}_pp1")
    if v is None:
        return None
    name = conv.fresh(f"{hint}_extra_member")
    conv.rules[name] = seq([key, conv.layout.colon(depth), v])
    return RuleRef(name)


def key_pattern_dfa(conv: Converter, pattern: Any, path: str) -> CharDFA:
    if not isinstance(pattern, str):
        raise conv.fail("a pattern must be a string", path, "patternProperties")
    try:
        return _pattern_dfa(pattern)
    except GrammarError as e:
        raise conv.fail(
            f"the pattern {pattern!r} cannot be converted: {e}", path, "patternProperties"
        ) from None


def property_names_dfa(conv: Converter, schema: Any, path: str) -> Optional[CharDFA]:
    """The automaton of the keys ``propertyNames`` allows; None when it allows every key."""
    schema = deref(conv, schema, path) if isinstance(schema, dict) else schema
    if schema is True or (isinstance(schema, dict) and all(_is_annotation(k) for k in schema)):
        return None
    if schema is False:
        return CharDFA.literal_set([])
    if not isinstance(schema, dict):
        raise conv.fail("a schema must be an object or a boolean", path)
    allowed = {"type", "enum", "const", "pattern", "format", "minLength", "maxLength"}
    other = [k for k in schema if k not in allowed and not _is_annotation(k)]
    if other:
        conv.unsupported(other[0], path, "inside 'propertyNames' is not supported")
        return None
    types = schema.get("type", "string")
    if "string" not in ([types] if isinstance(types, str) else types):
        return CharDFA.literal_set([])
    try:
        dfa = CharDFA.length(schema.get("minLength", 0), schema.get("maxLength"))
        if "pattern" in schema:
            dfa = dfa.intersect(key_pattern_dfa(conv, schema["pattern"], path))
        if schema.get("format") in json_values.SUPPORTED_FORMATS:
            dfa = dfa.intersect(format_dfa(schema["format"]))
        values = schema["enum"] if "enum" in schema else [schema["const"]] if "const" in schema else None
        if values is not None:
            dfa = dfa.intersect(CharDFA.literal_set([v for v in values if isinstance(v, str)]))
    except GrammarError as e:
        conv.unsupported("propertyNames", path, f"cannot be converted: {e}")
        return None
    return dfa

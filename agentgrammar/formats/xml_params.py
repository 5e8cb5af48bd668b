"""The arguments of the ``xml`` call layout (Qwen3-Coder): one ``param_begin KEY param_name_end
VALUE param_end`` element per argument, where a string value is written raw (as the Qwen3-Coder
chat template writes ``args_value | string``) and any other value as JSON.

* ``is_raw_string(schema)``: whether values of ``schema`` are written raw: every string schema
  (``"type": "string"`` with any keywords, or an ``enum`` / ``const`` of strings only).
* ``raw_string_content(schema, end)``: the structural-tag content of such a raw value. The raw
  text is held to the schema where an automaton can do it (``pattern`` as a regex over the raw
  text, the ``format`` s the JSON converter supports such as ``date``, ``date-time``, ``email``,
  ``uuid``, and ``minLength`` / ``maxLength``), and never holds the end marker (the first
  ``end`` ends the value, as ``parse`` reads it); a pattern or format under length bounds past
  the automata's limits without the bounds (with a warning), and beyond them any text without
  the end marker.
* ``params_content(...)``: the content of a whole call: the elements in schema order (or, with
  ``any_order``, in any order for up to ``ANY_ORDER_XML_LIMIT`` parameters), optional ones
  optional, and an optional parameter whose schema accepts no value left out.

Example:
    >>> from agentgrammar import Grammar
    >>> from agentgrammar import structural_tag as st
    >>> content = raw_string_content({"type": "string", "format": "date"}, "\\n</p>")
    >>> g = Grammar.from_structural_tag(st.Tag(begin="<p>", content=content, end="\\n</p>"))
    >>> g.accepts("<p>2019-12-13\\n</p>"), g.accepts('<p>"2019-12-13"\\n</p>'), g.accepts("<p>2019-13-13\\n</p>")
    (True, False, False)
"""

from __future__ import annotations

import json
import unicodedata
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import GrammarError, SchemaError, ToolError
from ..grammar import Grammar, json_values
from ..grammar import structural_tag as st
from ..grammar.char_dfa import CharDFA
from ..grammar.ir import CharClass, Choice, Literal, Repeat, Rule, Seq, fresh_name
from ..grammar.json_schema.formats import format_dfa, sole_format
from ..grammar.json_schema.lengths import bounds_implied, lengths_hold
from ..grammar.memo import BoundedCache
from ..registry import Tool

__all__ = [
    "ANY_ORDER_XML_LIMIT",
    "check_param_name",
    "fits_raw",
    "is_raw_string",
    "params_content",
    "raw_string_content",
]

#: ``any_order`` accepts every order of up to this many parameters (each order is spelled out:
#: a structural tag has no shared rules, so k parameters take about e * k! elements); a tool
#: with more keeps schema order, a sound subset (as the JSON converter does past its limit).
ANY_ORDER_XML_LIMIT = 4

# A raw string's length bound past which it is not enforced: the automaton of "at most n
# characters, never the end marker" has about n * len(end) states.
_MAX_LENGTH_BOUND = 512


def is_raw_string(schema: Any) -> bool:
    """Whether the xml layout writes a value of ``schema`` raw (not as JSON): a string schema
    (``"type": "string"``, whatever its other keywords), or an ``enum`` / ``const`` of strings.

    Example:
        >>> is_raw_string({"type": "string", "pattern": "^a"}), is_raw_string({"enum": ["a", "b"]})
        (True, True)
        >>> is_raw_string({"type": "integer"}), is_raw_string({"enum": ["a", 1]})
        (False, False)
    """
    if not isinstance(schema, Mapping) or schema.get("type", "string") != "string":
        return False
    if "const" in schema:
        return isinstance(schema["const"], str)
    if "enum" in schema:
        return isinstance(schema["enum"], list) and all(isinstance(v, str) for v in schema["enum"])
    return schema.get("type") == "string"


def _ends_early(value: str, end: str) -> bool:
    """Whether ``value`` followed by ``end`` holds ``end`` before its own end (the value holds
    the end marker, or ends with a prefix of it that, with the marker, spells it early)."""
    return (value + end).find(end) != len(value)


def fits_raw(value: str, end: str) -> bool:
    """Whether ``value`` can be written raw before ``end`` and read back whole.

    Example:
        >>> fits_raw("a</p>", "</p>"), fits_raw("a\\n</p>", "\\n</p>\\n"), fits_raw("a b", "</p>")
        (False, False, True)
    """
    return not _ends_early(value, end)


def check_param_name(name: str, markers: Sequence[str]) -> Optional[str]:
    """Why the parameter name ``name`` cannot be written between ``markers[0]`` (the
    parameter's begin) and ``markers[1]`` (its name end) and read back whole, or None when it
    can. ``markers``: the begin, the name end, then the layout's other markers. A name must be
    non-empty, without surrounding whitespace (``parse`` strips it), control characters or line
    breaks (other readers take a name on one line), the name end's text or its first character
    (``>`` of ``<parameter=K>``, ``"`` of ``<parameter name="K">``: other readers end the name
    at the first one) or any other marker of the layout.

    Example:
        >>> check_param_name("city", ["<parameter=", ">\\n", "\\n</parameter>\\n"]) is None
        True
        >>> check_param_name("a>b", ["<parameter=", ">\\n", "\\n</parameter>\\n"])
        "the name holds '>', the end of a parameter name"
    """
    if not isinstance(name, str) or not name:
        return "a parameter name must be a non-empty string"
    if name != name.strip():
        return "the name has surrounding whitespace, which the reader strips"
    bad = next((c for c in name if unicodedata.category(c) in ("Cc", "Zl", "Zp", "Cs")), None)
    if bad is not None:
        return f"the name holds the control character or line break {bad!r}"
    name_end = markers[1].strip() if len(markers) > 1 else ""
    if name_end and name_end in name:
        return f"the name holds {name_end!r}, the end of a parameter name"
    if name_end and name_end[0] in name:
        return f"the name holds {name_end[0]!r}, where a parameter name ends"
    if len(markers) > 1 and not fits_raw(name, markers[1]):
        return f"the name runs into the end of a parameter name {markers[1]!r}"
    for marker in markers:
        core = marker.strip()
        if core and core in name:
            return f"the name holds the marker {core!r}"
    return None


def _unsafe_suffixes(end: str) -> List[str]:
    """The proper prefixes of ``end`` that a value must not end with: with ``end`` after them,
    ``end`` occurs early (``"\\n</parameter>"`` before ``"\\n</parameter>\\n"``)."""
    return [end[:k] for k in range(1, len(end)) if (end[:k] + end).find(end) < k]


def _enforced_lengths(schema: Mapping[str, Any]) -> Tuple[int, Optional[int]]:
    """The length bounds a raw string enforces: ``minLength`` and ``maxLength`` when they are
    counts up to ``_MAX_LENGTH_BOUND``; any other is dropped (0, None)."""
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    lo = lo if isinstance(lo, int) and not isinstance(lo, bool) and 0 < lo <= _MAX_LENGTH_BOUND else 0
    hi = hi if isinstance(hi, int) and not isinstance(hi, bool) and 0 <= hi <= _MAX_LENGTH_BOUND else None
    return lo, hi


def _constraint_dfa(schema: Mapping[str, Any], lengths: bool = True) -> Optional[CharDFA]:
    """The automaton of a string schema's character constraints (without ``lengths``, its
    ``pattern`` and ``format`` alone), or None when it has none the raw layout can enforce. A
    malformed pattern raises ``GrammarError``."""
    parts: List[CharDFA] = []
    pattern, fmt = schema.get("pattern"), schema.get("format")
    pattern = pattern if isinstance(pattern, str) else None
    fmt = fmt if isinstance(fmt, str) and fmt in json_values.SUPPORTED_FORMATS else None
    if pattern is not None:
        parts.append(CharDFA.from_expr(json_values.pattern_chars(pattern)))
    if fmt is not None:
        parts.append(format_dfa(fmt))
    lo, hi = _enforced_lengths(schema)
    if not parts:
        return CharDFA.length(lo, hi) if lengths and (lo or hi is not None) else None
    dfa = parts[0]
    for part in parts[1:]:
        dfa = dfa.intersect(part)
    if lengths and (lo or hi is not None) and not bounds_implied(pattern, fmt, lo, hi):
        dfa = dfa.with_length(lo, hi)  # refused at once where the product would be too large
    return dfa


# (schema JSON, end marker) -> the content of a raw string: bounded in entries and, with the
# other memos, in bytes (``memo.trim_memos``).
_RAW_CONTENT: "BoundedCache[Optional[st.Format]]" = BoundedCache("xml raw strings", limit=1024)


def _raw_content(schema_json: str, end: str) -> Optional[st.Format]:
    return _RAW_CONTENT.get_or_make((schema_json, end), lambda: _make_raw_content(schema_json, end))


def _make_raw_content(schema_json: str, end: str) -> Optional[st.Format]:
    schema = json.loads(schema_json)
    if "const" in schema or "enum" in schema:
        values = [schema["const"]] if "const" in schema else list(schema["enum"])
        try:
            check = _constraint_dfa(schema)
        except GrammarError:
            check = None
        kept = [
            v
            for v in dict.fromkeys(values)
            if isinstance(v, str) and fits_raw(v, end) and (check is None or check.matches(v))
        ]
        if not kept:
            return None
        consts: List[st.Format] = [st.ConstString(value=v) for v in kept]
        return consts[0] if len(consts) == 1 else st.Or(elements=consts)
    lo, hi = schema.get("minLength", 0), schema.get("maxLength")
    if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
        return None
    if isinstance(schema.get("pattern"), str):
        json_values.pattern_chars(schema["pattern"])  # a malformed pattern is the caller's error
    fmt = sole_format(schema)
    bounded = schema.keys() & {"minLength", "maxLength"}
    if fmt is not None and lengths_hold(fmt, *_enforced_lengths(schema)):  # bounds its strings all meet
        chars = json_values.format_chars(fmt)
        if chars is not None and end and not _may_hold(chars, ord(end[0])):
            # no value can hold the end or a beginning of it: the format's regex as it is
            return st.GrammarText(grammar=Grammar.from_rules([Rule("root", chars)]))
        if bounded:
            return _raw_content(json.dumps({"format": fmt}), end)
    try:
        return _raw_grammar(_constraint_dfa(schema), end)
    except GrammarError as e:
        if not lo and hi is None:  # past the automata's limits: any text without the end marker
            return st.AnyText()
        why = e
    # A pattern or format under a length bound it cannot be combined with (pydantic's HttpUrl: a
    # URI of at most 2,083 characters): the pattern or format alone, as the JSON layouts keep it.
    try:
        if fmt is not None and bounded:  # the format's own content, made once per format and end
            found = _raw_content(json.dumps({"format": fmt}), end)
        else:
            found = _raw_grammar(_constraint_dfa(schema, lengths=False), end)
    except GrammarError:
        return st.AnyText()
    warnings.warn(
        f"a raw string's pattern or format cannot be combined with its length bounds ({why}): "
        "the bounds are dropped (over-approximated)",
        UserWarning,
        stacklevel=2,
    )
    return found


def _may_hold(e: Any, code: int) -> bool:
    """Whether a string of regex IR ``e`` may hold the character ``code`` (an over-estimate:
    any node it does not know may)."""
    stack = [e]
    while stack:
        x = stack.pop()
        if isinstance(x, Literal):
            if chr(code) in x.value.decode("utf-8", "replace"):
                return True
        elif isinstance(x, CharClass):
            if any(lo <= code <= hi for lo, hi in x.ranges) != x.negated:
                return True
        elif isinstance(x, (Seq, Choice)):
            stack.extend(x.items)
        elif isinstance(x, Repeat):
            stack.append(x.item)
        else:
            return True
    return False


def _raw_grammar(dfa: Optional[CharDFA], end: str) -> Optional[st.Format]:
    """The content of a raw string of the characters ``dfa`` accepts (None: any), before the end
    marker ``end``; None when none fits. ``GrammarError`` past the automata's limits."""
    if dfa is None:
        return st.AnyText()  # up to the first end marker (the tag's end)
    dfa = dfa.minus(CharDFA.containing([end]))
    unsafe = _unsafe_suffixes(end)
    if unsafe:
        dfa = dfa.minus(CharDFA.ending_with(unsafe))
    if dfa.is_empty():
        return None
    rules: Dict[str, Any] = {}
    taken: Set[str] = {"root"}
    counters: Dict[str, int] = {}
    expr = dfa.to_ir(
        lambda ranges: CharClass(tuple(ranges)), rules, lambda b: fresh_name(b, taken, counters), "raw"
    )
    if expr is None:
        return None
    grammar = Grammar.from_rules([Rule("root", expr), *(Rule(n, b) for n, b in rules.items())])
    return st.GrammarText(grammar=grammar)


def raw_string_content(schema: Mapping[str, Any], end: str) -> Optional[st.Format]:
    """The structural-tag content of a raw string of ``schema`` before the end marker ``end``
    (see the module docstring); None when no string fits. Made once per schema and end.
    ``GrammarError`` for a ``pattern`` that is not a valid regex.

    Example:
        >>> raw_string_content({"type": "string"}, "</p>").type
        'any_text'
        >>> raw_string_content({"enum": ["a", "b</p>"]}, "</p>")
        ConstString(type='const_string', value='a')
    """
    return _raw_content(json.dumps(schema, sort_keys=True), end)


def _any_order(elements: List[Tuple[st.Format, bool]]) -> st.Format:
    """Every order of the (element, required) pairs, each at most once and every required one
    present: a choice of the next element, per set of elements written so far."""
    n = len(elements)
    required = frozenset(i for i, (_, req) in enumerate(elements) if req)
    memo: Dict[frozenset, Optional[st.Format]] = {}

    def rest(done: frozenset) -> Optional[st.Format]:
        if done in memo:
            return memo[done]
        alts: List[st.Format] = []
        for i in range(n):
            if i in done:
                continue
            after = rest(done | {i})
            alts.append(elements[i][0] if after is None else st.Sequence(elements=[elements[i][0], after]))
        if not alts:
            found: Optional[st.Format] = None
        else:
            choice = alts[0] if len(alts) == 1 else st.Or(elements=alts)
            found = st.OptionalFormat(content=choice) if required <= done else choice
        memo[done] = found
        return found

    return rest(frozenset()) or st.ConstString(value="")


#: How Qwen3-Coder's template writes a scalar argument (``| string`` of the Python value), which
#: its models write back: the JSON spellings are accepted too.
PYTHON_LITERALS = {"True": True, "False": False, "None": None}


def _with_python_literals(schema: Any, content: st.Format) -> st.Format:
    """``content`` or, where ``schema`` is a boolean or null, its Python spelling."""
    kinds = schema.get("type") if isinstance(schema, Mapping) else None
    kinds = kinds if isinstance(kinds, list) else [kinds]
    extra = (["True", "False"] if "boolean" in kinds else []) + (["None"] if "null" in kinds else [])
    if not extra or any(k in schema for k in ("enum", "const")):
        return content
    return st.Or(elements=[content, *(st.ConstString(value=v) for v in extra)])


def params_content(
    tool: Tool,
    *,
    param_begin: str,
    param_name_end: str,
    param_end: str,
    json_format: Callable[[Any], st.Format],
    any_order: bool = False,
    markers: Sequence[str] = (),
    param_name_end_json: Optional[str] = None,
) -> st.Format:
    """The content of one call of ``tool`` in the xml layout: one tag per parameter, raw strings
    (``raw_string_content``) and JSON (``json_format(schema)``) otherwise. An optional parameter
    whose schema accepts no value is left out; a required one is a ``ToolError`` naming the tool
    and the parameter. So is a parameter whose name cannot be written in the layout
    (``check_param_name``, against the parameter markers and the layout's other ``markers``).
    ``param_name_end_json``: the name end before a JSON value, where it differs from the one
    before a raw string (DeepSeek-V3.2's ``" string="false">`` and ``" string="true">``).

    Example:
        >>> from agentgrammar import Grammar, Tool
        >>> tool = Tool("t", "", {"type": "object", "properties": {
        ...     "n": {"type": "integer", "enum": ["1", "dontcare"]}, "s": {"type": "string"}}})
        >>> content = params_content(tool, param_begin="<", param_name_end=">", param_end="</>",
        ...     json_format=lambda s: st.GrammarText(grammar=Grammar.from_json_schema(s)))
        >>> g = Grammar.from_structural_tag(content)  # no value fits "n": it is left out
        >>> g.accepts("<s>hi</>"), g.accepts("<n>1</><s>hi</>")
        (True, False)
    """
    schema = tool.parameters
    props = schema.get("properties", {})
    if schema.get("type", "object") != "object" or not isinstance(props, Mapping):
        raise ToolError(
            f"tool {tool.name!r}: the xml layout needs an object schema with 'properties'", tool=tool.name
        )
    defs = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    required = set(schema.get("required", ()))
    elements: List[Tuple[st.Format, bool]] = []
    json_end = param_name_end if param_name_end_json is None else param_name_end_json
    layout = (param_begin, param_name_end, param_end, json_end, *markers)
    for key, sub in props.items():
        problem = check_param_name(key, layout)
        if problem is not None:
            raise ToolError(
                f"tool {tool.name!r}: parameter {key!r} cannot be named in this layout: {problem}",
                tool=tool.name,
                field=key,
            )
        is_required = key in required
        name_end = param_name_end if is_raw_string(sub) else json_end
        try:
            if is_raw_string(sub):
                content = raw_string_content(sub, param_end)
                if content is None:
                    raise SchemaError("the schema accepts no value (it is false or unsatisfiable)")
            else:
                content = json_format({**sub, **defs} if isinstance(sub, Mapping) else sub)
                content = _with_python_literals(sub, content)
        except (GrammarError, ToolError) as e:
            cause = e.__cause__ if isinstance(e, ToolError) and e.__cause__ is not None else e
            if not is_required and isinstance(cause, SchemaError) and "accepts no value" in str(cause):
                continue  # no value can be written: the parameter is never written
            detail = str(cause)
            raise ToolError(
                f"tool {tool.name!r}: parameter {key!r}: cannot build its argument grammar: {detail}",
                tool=tool.name,
                field=key,
            ) from e
        tag: st.Format = st.Tag(begin=param_begin + key + name_end, content=content, end=param_end)
        elements.append((tag, is_required))
    if any_order and 2 <= len(elements) <= ANY_ORDER_XML_LIMIT:
        return _any_order(elements)
    parts = [tag if req else st.OptionalFormat(content=tag) for tag, req in elements]
    if len(parts) == 1:
        return parts[0]
    return st.Sequence(elements=parts) if parts else st.ConstString(value="")

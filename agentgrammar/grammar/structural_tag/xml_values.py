"""The values of xgrammar's XML parameter styles (``json_schema`` with a ``style`` other than
``"json"``), sorted into cases: how each style writes a value depends on whether it is a string
written raw, a constant, or JSON.

A schema's cases (``ValueCases.cases``):

* ``("text", None)``: a plain string (no ``pattern``, ``format`` or length bound), written raw:
  any text up to the style's end marker (a ``TagDispatch`` that excludes the marker);
* ``("raw", schema)``: a constrained string written raw: its ``pattern`` (a full match, lengths
  then ignored, as xgrammar does), its ``format``, or any characters within its length bounds;
* ``("str", "v")`` / ``("lit", "1")``: a constant (``enum``, ``const``) that is a string,
  written raw, or another value, written as its JSON text;
* ``("json", schema)``: a value written as JSON (in the style's own spelling where it nests);
* ``("any", None)``: a schema without constraints (``{}`` or ``true``).

Type lists and ``anyOf`` / ``oneOf`` give the union of their members' cases.

Example:
    >>> [k for k, _ in ValueCases.cases_of({"type": ["string", "null"]}, {})]
    ['text', 'json']
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional, Set, Tuple

from ...errors import GrammarError, StructuralTagError
from ..char_dfa import CharDFA
from ..ir import CharClass, Embed, Expr, Literal, Repeat, RuleRef, TagDispatch, choice, seq
from ..json_schema.excludes import excluded, warn_lengths_dropped
from ..json_values import STRING_CONSTRAINTS, format_chars
from ..regex import parse_regex
from ..token_markers import encode_text
from .base import BuilderBase
from .schemas import _schema_grammars

__all__ = ["WHITESPACE", "XML_NAME", "Case", "ValueCases", "count_of", "some_of"]

#: An XML name as the styles write property names: a letter or underscore, then word characters.
XML_NAME = seq([CharClass(((0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))),
             Repeat(CharClass(((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))), 0, None)])  # fmt: skip


def count_of(schema: Mapping[str, Any], key: str) -> Optional[int]:
    """``schema[key]`` when it is a non-negative int (a count keyword), else ``None``."""
    v = schema.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def some_of(items: List[Expr]) -> Expr:
    """The choice of ``items`` (never empty)."""
    found = choice(items)
    assert found is not None
    return found


#: A case of a value: its kind and its schema (or constant text).
Case = Tuple[str, Any]

#: The whitespace xgrammar's styles allow around values and elements.
WHITESPACE = CharClass(((0x09, 0x0A), (0x0D, 0x0D), (0x20, 0x20)))
_ANY_CHAR = CharClass(((0, 0x10FFFF),))
# Keywords that say nothing about the value (a schema with only these is any value).
_ANNOTATIONS = {
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "$schema",
    "$id",
    "$defs",
    "definitions",
}


class ValueCases:
    """The cases of values and their pieces of grammar, for one ``json_schema`` item of an XML
    style: ``b`` collects the rules, ``defs`` are the item's ``$defs`` (for ``$ref``)."""

    def __init__(
        self,
        b: BuilderBase,
        defs: Mapping[str, Any],
        options: Tuple[Tuple[str, Any], ...],
        max_ws: Optional[int],
    ) -> None:
        self.b = b
        self.defs = dict(defs)
        self.options = options
        self.max_ws = max_ws
        self.excludes: List[str] = []  # never in a string's text, nor in a property name
        self._texts: Dict[str, RuleRef] = {}
        self._name: Optional[Expr] = None

    # ---- schemas ----------------------------------------------------------------------------

    @staticmethod
    def cases_of(schema: Any, defs: Mapping[str, Any]) -> List[Case]:
        """The cases of ``schema`` (see the module docstring); ``StructuralTagError`` for a
        ``$ref`` that names no definition here."""
        schema = _resolve(schema, defs)
        if schema is True or (isinstance(schema, dict) and not (set(schema) - _ANNOTATIONS)):
            return [("any", None)]
        if schema is False or not isinstance(schema, dict):
            return []
        if "const" in schema or "enum" in schema:
            if "const" not in schema and not isinstance(schema["enum"], list):
                raise StructuralTagError(f"'enum' must be a list, not {type(schema['enum']).__name__}")
            values = [schema["const"]] if "const" in schema else list(schema["enum"])
            return [("str", v) if isinstance(v, str) else ("lit", json.dumps(v)) for v in values]
        branches = schema.get("anyOf", schema.get("oneOf"))
        if isinstance(branches, list):
            out: List[Case] = []
            for branch in branches:
                out.extend(ValueCases.cases_of(branch, defs))
            return out
        kind = schema.get("type")
        if isinstance(kind, list):
            return [c for t in kind for c in ValueCases.cases_of({**schema, "type": t}, defs)]
        if kind == "string":
            return [("raw", schema)] if any(k in schema for k in STRING_CONSTRAINTS) else [("text", None)]
        return [("json", schema)]

    def cases(self, schema: Any, path: str) -> List[Case]:
        try:
            return self.cases_of(schema, self.defs)
        except RecursionError:
            raise StructuralTagError("the schema's $refs loop", path=path) from None
        except StructuralTagError as e:
            if e.path is not None:
                raise
            raise StructuralTagError(str(e), path=path) from None

    def resolve(self, schema: Any) -> Any:
        return _resolve(schema, self.defs)

    # ---- pieces -----------------------------------------------------------------------------

    def ws(self) -> Expr:
        """Whitespace between elements and around values (at most ``max_whitespace_cnt``)."""
        return Repeat(WHITESPACE, 0, self.max_ws)

    def text(self, end: str) -> RuleRef:
        """A plain raw string: any text in which ``end`` does not occur (one rule per end)."""
        found = self._texts.get(end)
        if found is None:
            words = self.b.words([end, *self.excludes])
            found = self.b.dispatch("xml_string", TagDispatch(loop_after_dispatch=False, excludes=words))
            self._texts[end] = found
        return found

    def name(self) -> Expr:
        """A property name the schema does not declare: ``XML_NAME`` holding no exclude."""
        if not self.excludes:
            return XML_NAME
        if self._name is None:
            dfa = CharDFA.from_expr(XML_NAME).minus(CharDFA.containing(self.excludes))
            found = dfa.to_ir(lambda r: CharClass(tuple(r)), self.b.rules, self.b.fresh, "xml_name")
            self._name = found if found is not None else Literal(b"")  # (never: excludes are not empty)
        return self._name

    def excluded(self, case: Case) -> bool:
        """Whether a constant holds an exclude: a raw string's text, or one of the strings of
        a JSON constant as written (xgrammar drops such constants)."""
        kind, payload = case
        if kind == "str":
            return excluded(payload, self.excludes)
        if kind == "lit":
            return _holds_excluded(json.loads(payload), self.excludes)
        return False

    def raw(self, schema: Mapping[str, Any], path: str) -> Optional[Expr]:
        """A constrained raw string: the full match of ``pattern`` (lengths ignored), else of
        ``format``, else any characters within the length bounds."""
        try:
            if isinstance(schema.get("pattern"), str):
                return self.b.rule("xml_pattern", parse_regex(schema["pattern"]))
            fmt = schema.get("format")
            chars = format_chars(fmt) if isinstance(fmt, str) else None
            if chars is not None:
                return self.b.rule("xml_format", chars)
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path) from None
        lo, hi = schema.get("minLength", 0), schema.get("maxLength")
        lo = lo if isinstance(lo, int) and not isinstance(lo, bool) and lo > 0 else 0
        hi = hi if isinstance(hi, int) and not isinstance(hi, bool) and hi >= 0 else None
        if hi is not None and lo > hi:
            return None
        return Repeat(_ANY_CHAR, lo, hi)

    def json(self, schema: Any, path: str) -> Expr:
        """``schema`` as JSON (xgrammar's layout inside structural tags), its ``$defs`` kept."""
        if isinstance(schema, dict) and self.defs and "$defs" not in schema and "definitions" not in schema:
            schema = {**schema, "$defs": self.defs}
        options = (*self.options, ("excludes", tuple(self.excludes))) if self.excludes else self.options
        try:
            key = json.dumps(schema)
            return Embed(_schema_grammars.get(schema, key, options))
        except (TypeError, ValueError) as e:
            raise StructuralTagError(f"the schema is not JSON: {e}", path=path) from None
        except GrammarError as e:
            raise StructuralTagError(str(e), path=path) from None

    def literal(self, text: str) -> Literal:
        return Literal(encode_text(text))

    def case_expr(self, case: Case, end: str, path: str) -> Optional[Expr]:
        """A case as the flat styles write it: raw strings and constants as text, values as
        JSON; ``any`` is a raw string, a JSON array or a JSON object."""
        kind, payload = case
        if kind == "text":
            return self.text(end)
        if kind == "raw":
            if self.excludes and not any(k in payload for k in ("pattern", "format")):
                warn_lengths_dropped(path)  # as xgrammar: the filter, not the lengths
                return self.text(end)
            return self.raw(payload, path)
        if kind in ("str", "lit"):
            return None if self.excluded(case) else self.literal(payload)
        if kind == "json":
            if isinstance(payload, dict) and payload.get("type") == "array" and "items" not in payload:
                payload = {**payload, "items": False}  # xgrammar's parameter: no items, an empty array
            return self.json(payload, path)
        return choice(
            [
                self.text(end),
                self.json({"type": "array", "items": True}, path),
                self.json({"type": "object"}, path),
            ]
        )


def _holds_excluded(value: Any, excludes: List[str]) -> bool:
    """Whether a string of a JSON value (a key or a value), as ``json.dumps`` writes it,
    holds one of ``excludes``."""
    if isinstance(value, str):
        return excluded(json.dumps(value)[1:-1], excludes)
    if isinstance(value, list):
        return any(_holds_excluded(v, excludes) for v in value)
    if isinstance(value, dict):
        return any(_holds_excluded(k, excludes) or _holds_excluded(v, excludes) for k, v in value.items())
    return False


def _resolve(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/x``, ``#/definitions/x``) followed."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in defs:
            raise StructuralTagError(f"the $ref {ref!r} names no definition of the schema")
        depth += 1
        if depth > 64:
            raise RecursionError
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**defs[name], **rest} if rest else defs[name]
    return schema


def required_of(schema: Any, path: str) -> Set[str]:
    """The names an object schema requires; ``StructuralTagError`` unless a list of strings."""
    names = schema.get("required", []) if isinstance(schema, dict) else []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise StructuralTagError("'required' must be a list of property names", path=path + ".required")
    return set(names)


def defs_of(schema: Any) -> Dict[str, Any]:
    """The definitions a schema's ``$ref`` s may name."""
    if not isinstance(schema, dict):
        return {}
    out: Dict[str, Any] = {}
    for key in ("definitions", "$defs"):
        if isinstance(schema.get(key), dict):
            out.update(schema[key])
    return out

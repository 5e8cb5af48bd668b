"""BFCL's data for ``bfcl_check``: its entries with AST ground truth (``load_entries``), their
function definitions as ``Tool`` s (``build_tools``, types converted as BFCL's OpenAI handlers
do) and their ground truth as ``ToolCall`` s (``answer_calls``).

Example:
    >>> to_json_schema({"type": "dict", "properties": {"x": {"type": "float"}}})
    {'type': 'object', 'properties': {'x': {'type': 'number', 'format': 'float'}}}
"""

from __future__ import annotations

import copy
import io
import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

# BFCL's GORILLA_TO_OPENAPI (bfcl_eval/constants/type_mappings.py): its type names -> JSON Schema
BFCL_TYPES: Dict[str, str] = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}

_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]")


# --------------------------------------------------------------------------- BFCL data


@dataclass
class Entry:
    """One BFCL entry with AST ground truth: its id, category (from the file name), function
    definitions and ground truth (a list of ``{name: {param: [allowed values]}}``)."""

    id: str
    category: str
    functions: List[Dict[str, Any]]
    ground_truth: List[Dict[str, Dict[str, List[Any]]]]


def _is_call_list(gt: Any) -> bool:
    return (
        isinstance(gt, list)
        and bool(gt)
        and all(isinstance(c, dict) and len(c) == 1 and isinstance(next(iter(c.values())), dict) for c in gt)
    )


def _json_lines(text: str) -> Iterable[Dict[str, Any]]:
    for line in text.splitlines():
        if line.strip():
            yield json.loads(line)


def _data_files(source: Path) -> Dict[str, str]:
    """``relative path -> text`` of the BFCL data files of a data folder or a bfcl-eval wheel."""
    out: Dict[str, str] = {}
    if source.is_file() and source.suffix == ".whl":
        with zipfile.ZipFile(source) as z:
            for name in z.namelist():
                if name.startswith("bfcl_eval/data/") and name.endswith(".json") and "/BFCL_" in name:
                    rel = name[len("bfcl_eval/data/") :]
                    out[rel] = io.TextIOWrapper(z.open(name), encoding="utf-8").read()
        return out
    for path in sorted(source.glob("BFCL_*.json")) + sorted(source.glob("possible_answer/BFCL_*.json")):
        out[path.relative_to(source).as_posix()] = path.read_text(encoding="utf-8")
    return out


def load_entries(source: Path) -> Tuple[List[Entry], Dict[str, int]]:
    """The entries with AST ground truth of a BFCL data folder (``BFCL_v4_*.json`` question files
    next to a ``possible_answer/`` folder of the same names) or of the bfcl-eval wheel, in file
    order, and how many entries were skipped per file for having no such ground truth."""
    files = _data_files(source)
    answers = sorted(k for k in files if k.startswith("possible_answer/"))
    if not answers:
        raise SystemExit(f"no possible_answer/BFCL_*.json under {source}: is it bfcl_eval's data folder?")
    entries: List[Entry] = []
    skipped: Dict[str, int] = {}
    for rel in answers:
        name = rel.split("/", 1)[1]
        category = re.sub(r"^BFCL_v\d+_", "", name[: -len(".json")])
        questions = {e["id"]: e for e in _json_lines(files.get(name, ""))}
        for answer in _json_lines(files[rel]):
            question = questions.get(answer.get("id"))
            gt = answer.get("ground_truth")
            if question is None or not isinstance(question.get("function"), list) or not _is_call_list(gt):
                skipped[name] = skipped.get(name, 0) + 1
                continue
            entries.append(Entry(answer["id"], category, question["function"], gt))
    return entries, skipped


# --------------------------------------------------------------------------- tools and calls


def _is_java(category: str) -> bool:
    return "java" in category and "javascript" not in category


def _is_js(category: str) -> bool:
    return "javascript" in category


def language_preprocess(functions: Sequence[Mapping[str, Any]], category: str) -> List[Dict[str, Any]]:
    """BFCL's ``_func_doc_language_specific_pre_processing`` (the schema part): for Java and
    JavaScript every parameter is a string holding the value in the language's syntax.

    Example:
        >>> fn = {"name": "f", "parameters": {"type": "dict", "properties": {"xs": {"type": "ArrayList", "items": {"type": "String"}}}}}
        >>> language_preprocess([fn], "simple_java")[0]["parameters"]["properties"]
        {'xs': {'type': 'string'}}
    """
    out = copy.deepcopy([dict(f) for f in functions])
    if not (_is_java(category) or _is_js(category)):
        return out
    for fn in out:
        for prop in fn.get("parameters", {}).get("properties", {}).values():
            prop.pop("items", None)  # BFCL moves these into the description
            prop.pop("properties", None)
            prop["type"] = "string"
    return out


def to_json_schema(schema: Any, *, top: bool = True) -> Any:
    """A BFCL parameter schema in standard JSON Schema, as BFCL's ``convert_to_tool`` with
    ``GORILLA_TO_OPENAPI`` makes it (applied at every depth rather than BFCL's two): type names
    mapped, unknown ones and a missing property type made ``"string"``, ``"float"`` given
    ``"format": "float"``.

    Example:
        >>> to_json_schema({"type": "dict", "properties": {"x": {"type": "float"}, "t": {"type": "tuple", "items": {"type": "any"}}}})
        {'type': 'object', 'properties': {'x': {'type': 'number', 'format': 'float'}, 't': {'type': 'array', 'items': {'type': 'string'}}}}
    """
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    kind = out.get("type")
    if isinstance(kind, str):
        if kind == "float":
            out["format"] = "float"
        out["type"] = BFCL_TYPES.get(kind, "string")
    elif isinstance(kind, list):
        out["type"] = [BFCL_TYPES.get(k, "string") if isinstance(k, str) else k for k in kind]
    elif (
        "type" not in out
        and not top
        and not any(k in out for k in ("anyOf", "oneOf", "allOf", "$ref", "enum"))
    ):
        out["type"] = (
            "object" if "properties" in out else "string"
        )  # BFCL: a property without type is a string
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: to_json_schema(v, top=False) for k, v in out["properties"].items()}
    if isinstance(out.get("items"), dict):
        out["items"] = to_json_schema(out["items"], top=False)
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = to_json_schema(out["additionalProperties"], top=False)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(out.get(key), list):
            out[key] = [to_json_schema(s, top=False) for s in out[key]]
    return out


def tool_name(name: str) -> str:
    """``name`` where it is a valid tool name, else with the characters a tool name cannot have
    replaced by ``_`` (BFCL's names are all valid today)."""
    fixed = _NAME_CHARS.sub("_", name)[:64]
    return fixed if re.match(r"^[A-Za-z_]", fixed) else "_" + fixed[:63]


def build_tools(entry: Entry) -> List[Any]:
    """The entry's function definitions as ``Tool`` s (``ToolError`` / ``SchemaError`` when one
    cannot be made)."""
    from agentgrammar.registry.openai import tool_from_openai

    tools = []
    for fn in language_preprocess(entry.functions, entry.category):
        params = to_json_schema(fn.get("parameters") or {"type": "object", "properties": {}})
        params["type"] = "object"
        definition = {
            "name": tool_name(fn["name"]),
            "description": fn.get("description", ""),
            "parameters": params,
        }
        tools.append(tool_from_openai({"type": "function", "function": definition}))
    return tools


def _schema_type(schema: Any) -> Any:
    return schema.get("type") if isinstance(schema, Mapping) else None


def _unwrap_dict(allowed: Mapping[str, Any]) -> Dict[str, Any]:
    """A dict-typed argument's possible answer: each key maps to its allowed values (``""`` first:
    may be absent) -> the first allowed value of each present key."""
    out: Dict[str, Any] = {}
    for key, values in allowed.items():
        if isinstance(values, list):
            if not values or values[0] == "":
                continue
            out[key] = values[0]
        else:
            out[key] = values
    return out


def answer_value(allowed: Sequence[Any], schema: Any, optional: bool) -> Tuple[bool, Any]:
    """``(present, value)`` of one argument from BFCL's allowed values: the first one, absent when
    the argument is optional and that is ``""``. A dict argument's possible answer lists, per
    key, allowed values too (one level, as BFCL's ``dict_checker`` reads it), and so does each
    dict of a list-of-dicts argument.

    Example:
        >>> answer_value(["", "units"], {"type": "string"}, optional=True)
        (False, None)
        >>> answer_value([{"a": [1, 2], "b": [""]}], {"type": "object"}, optional=False)
        (True, {'a': 1})
    """
    if not allowed:
        return False, None
    value = allowed[0]
    if value == "" and optional:
        return False, None
    kind = _schema_type(schema)
    if kind == "object" and isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return True, _unwrap_dict(value)
    items = schema.get("items") if isinstance(schema, Mapping) else None
    if (
        kind == "array"
        and _schema_type(items) == "object"
        and isinstance(value, list)
        and value
        and all(isinstance(d, dict) and all(isinstance(v, list) for v in d.values()) for d in value)
    ):
        return True, [_unwrap_dict(d) for d in value]
    return True, value


def source_text(value: Any) -> str:
    """The text a model writes for a typed Java / JavaScript answer value: ``true`` / ``false``,
    numbers and lists / maps as JSON (a dict's possible answer is unwrapped first).

    Example:
        >>> source_text(True), source_text(30.0), source_text([12.0, 17]), source_text({"a": ["x"]})
        ('true', '30.0', '[12.0, 17]', '{"a": "x"}')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        value = _unwrap_dict(value)
    return json.dumps(value, ensure_ascii=False)


def answer_calls(entry: Entry, tools: Sequence[Any]) -> List[Any]:
    """The entry's ground truth as ``ToolCall`` s (first allowed values, validated by the tools;
    ``ToolError`` when an answer does not satisfy its own schema or passes an argument that is
    not a parameter). For Java and JavaScript,
    where every parameter is a string, a typed answer value (BFCL compares the model's string
    after converting it) is written as its source text (``source_text``)."""
    from agentgrammar import ToolCall
    from agentgrammar.errors import ToolError

    by_name = {t.name: t for t in tools}
    language = _is_java(entry.category) or _is_js(entry.category)
    calls = []
    for gt in entry.ground_truth:
        ((name, params),) = gt.items()
        tool = by_name.get(tool_name(name))
        if tool is None:
            raise ToolError(f"the answer calls {name!r}, which the entry does not define", tool=name)
        props = tool.parameters.get("properties", {})
        required = set(tool.parameters.get("required", []))
        args = {}
        unknown = sorted(set(params) - set(props))
        if unknown:  # BFCL's own checker rejects such a call ("Unexpected parameter")
            raise ToolError(
                f"the answer passes {unknown} to {tool.name!r}, which has no such parameters", tool=tool.name
            )
        for key, allowed in params.items():
            schema = props.get(key)
            present, value = answer_value(
                allowed if isinstance(allowed, list) else [allowed], schema, key not in required
            )
            if present:
                if language and _schema_type(schema) == "string" and not isinstance(value, str):
                    value = source_text(value)
                args[key] = value
        calls.append(ToolCall(tool.name, tool.validate(args)))
    return calls

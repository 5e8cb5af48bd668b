"""Run xgrammar's own test cases against agentgrammar, as an external check.

Takes the folder of xgrammar's Python tests (``tests/python`` of a checkout; their files are
never copied into this project), extracts every string-acceptance check the tests make
(``tools/xgrammar_suite_extract.py``: a grammar built with ``Grammar.from_ebnf`` /
``from_regex`` / ``from_json_schema`` / ``from_structural_tag`` / ``from_lark`` / ``union`` /
``concat``, a string, and whether the test expects it accepted), builds the same grammar with
agentgrammar's API and compares ``accepts``. Each case is

* *passed*: we answer as their test expects;
* *failed*: we accept what their test rejects, or reject what it accepts;
* *raising*: building the grammar or matching raised something other than an AgentGrammarError;
* *unsupported*: we refuse the grammar with an AgentGrammarError (a feature we do not have).

``--oracle`` also asks the installed xgrammar the same question, and counts the cases where it
disagrees with its own test (the tests may come from another xgrammar version than the one
installed).

    python tools/xgrammar_suite.py /tmp/xgrammar/tests/python
    python tools/xgrammar_suite.py FOLDER --show failed,raising --oracle
    python tools/xgrammar_suite.py FOLDER --json > results.json
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

if __package__ in (None, ""):  # run as a script: make `tools` and `agentgrammar` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.xgrammar_suite_extract import Case, FileExtraction, GrammarSpec, extract_file

OUTCOMES = ("passed", "failed", "raising", "unsupported")


@dataclass
class CaseResult:
    """One case's outcome: ``ours`` is our answer (None when we raised), ``detail`` the error,
    ``theirs`` the installed xgrammar's answer under ``--oracle``."""

    case: Case
    outcome: str
    ours: Optional[bool] = None
    detail: str = ""
    theirs: Optional[bool] = None


class _Unsupported(Exception):
    """A grammar kind or option with no counterpart in agentgrammar's API."""


# --------------------------------------------------------------------------- our side


def build_ours(spec: GrammarSpec) -> Any:
    """The agentgrammar ``Grammar`` for ``spec`` (raises ``_Unsupported`` where none maps)."""
    from agentgrammar import Grammar

    opts = dict(spec.options)
    if spec.kind == "ebnf":
        return Grammar.from_ebnf(spec.args[0], root=opts.get("root_rule_name", "root"))
    if spec.kind == "regex":
        return Grammar.from_regex(spec.args[0])
    if spec.kind == "json_schema":
        style = opts.pop("json_format", "json")
        if style != "json":  # an XML parameter layout: ours would be a structural tag's style
            schema = json.loads(spec.args[0]) if isinstance(spec.args[0], str) else spec.args[0]
            fmt = {"type": "json_schema", "json_schema": schema, "style": style}
            return Grammar.from_structural_tag({"type": "structural_tag", "format": fmt})
        schema = json.loads(spec.args[0]) if isinstance(spec.args[0], str) else spec.args[0]  # or a bool
        return Grammar.from_json_schema(schema, **json_schema_options(opts))
    if spec.kind == "structural_tag":
        return Grammar.from_structural_tag(json.loads(spec.args[0]))
    if spec.kind == "builtin_json":
        return Grammar.builtin_json()
    if spec.kind == "lark":
        if not hasattr(Grammar, "from_lark"):
            raise _Unsupported("no Lark front-end")
        return Grammar.from_lark(spec.args[0], **opts)
    if spec.kind in ("union", "concat"):
        combine = getattr(Grammar, spec.kind, None)
        if combine is None:
            raise _Unsupported(f"no Grammar.{spec.kind}")
        return combine(*(build_ours(part) for part in spec.args))
    raise _Unsupported(f"grammar kind {spec.kind}")


def json_schema_options(xgrammar_options: Dict[str, Any]) -> Dict[str, Any]:
    """xgrammar's ``from_json_schema`` options as ours.

    Example:
        >>> json_schema_options({"any_whitespace": False, "strict_mode": True})
        {'whitespace': 'compact', 'strict': True}
    """
    opts = dict(xgrammar_options)
    out: Dict[str, Any] = {
        "whitespace": "flexible" if opts.pop("any_whitespace", True) else "compact",
        "strict": bool(opts.pop("strict_mode", True)),
    }
    for theirs, ours in (
        ("indent", "indent"),
        ("separators", "separators"),
        ("max_whitespace_cnt", "max_whitespace"),
    ):
        value = opts.pop(theirs, None)
        if value is not None:
            out[ours] = tuple(value) if ours == "separators" else value
    if opts.pop("any_order", False):
        out["any_order"] = True
    if opts:
        raise _Unsupported(f"from_json_schema options {sorted(opts)}")
    return out


def _our_answer(grammar: Any, text: str, complete: bool) -> bool:
    if complete:
        return bool(grammar.accepts(text))
    from agentgrammar.engine.compiler import byte_compiler
    from agentgrammar.engine.matcher import Matcher

    return bool(Matcher(byte_compiler().compile(grammar)).accept_string(text))


def run_cases(cases: List[Case]) -> List[CaseResult]:
    """Each case's outcome; a grammar is built once for all the cases that share it."""
    from agentgrammar.errors import AgentGrammarError

    built: Dict[str, Tuple[Any, str, str]] = {}  # spec key -> (grammar, outcome if none, detail)
    results = []
    for case in cases:
        key = case.grammar.key()
        if key not in built:
            built[key] = _build(case.grammar, AgentGrammarError)
        grammar, outcome, detail = built[key]
        if grammar is None:
            results.append(CaseResult(case, outcome, detail=detail))
            continue
        try:
            ours = _our_answer(grammar, case.text, case.complete)
        except Exception as e:
            results.append(CaseResult(case, "raising", detail=f"{type(e).__name__}: {e}"[:300]))
            continue
        results.append(CaseResult(case, "passed" if ours == case.expected else "failed", ours))
    return results


def _build(spec: GrammarSpec, refused: type) -> Tuple[Any, str, str]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return build_ours(spec), "", ""
    except _Unsupported as e:
        return None, "unsupported", str(e)
    except refused as e:
        return None, "unsupported", f"{type(e).__name__}: {e}"[:300]
    except Exception as e:
        return None, "raising", f"{type(e).__name__}: {e}"[:300]


# --------------------------------------------------------------------------- the installed xgrammar


def build_theirs(spec: GrammarSpec) -> Any:
    """The installed xgrammar's grammar for ``spec``."""
    import xgrammar as xgr

    opts = dict(spec.options)
    if spec.kind == "ebnf":
        return xgr.Grammar.from_ebnf(spec.args[0], **opts)
    if spec.kind == "regex":
        return xgr.Grammar.from_regex(spec.args[0])
    if spec.kind == "json_schema" and "json_format" in opts:
        from xgrammar.testing import _json_schema_to_ebnf

        return xgr.Grammar.from_ebnf(_json_schema_to_ebnf(spec.args[0], **opts))
    if spec.kind == "json_schema":
        return xgr.Grammar.from_json_schema(spec.args[0], **opts)
    if spec.kind == "structural_tag":
        return xgr.Grammar.from_structural_tag(spec.args[0])
    if spec.kind == "builtin_json":
        return xgr.Grammar.builtin_json_grammar()
    if spec.kind == "lark":
        return xgr.Grammar.from_lark(spec.args[0], **opts)
    combine = getattr(xgr.Grammar, spec.kind)
    return combine(*(build_theirs(part) for part in spec.args))


def add_oracle(results: List[CaseResult]) -> None:
    """Set ``theirs`` on each result: the installed xgrammar's answer (None when it raised)."""
    from xgrammar.testing import _is_grammar_accept_string

    built: Dict[str, Any] = {}
    for r in results:
        key = r.case.grammar.key()
        if key not in built:
            try:
                built[key] = build_theirs(r.case.grammar)
            except Exception:
                built[key] = None
        if built[key] is not None:
            try:
                r.theirs = bool(
                    _is_grammar_accept_string(built[key], r.case.text, require_termination=r.case.complete)
                )
            except Exception:
                r.theirs = None


# --------------------------------------------------------------------------- report


def run_folder(folder: Path, oracle: bool = False) -> Dict[str, Tuple[FileExtraction, List[CaseResult]]]:
    """Extract and run every ``test_*.py`` of ``folder``: per file, its extraction and results."""
    out = {}
    for path in sorted(folder.glob("test_*.py")):
        extraction = extract_file(path)
        results = run_cases(extraction.cases)
        if oracle:
            add_oracle(results)
        out[path.name] = (extraction, results)
    return out


def summary(per_file: Dict[str, Tuple[FileExtraction, List[CaseResult]]]) -> Dict[str, Any]:
    """Counts per file and in total, as the ``--json`` output's ``files`` and ``total``."""
    files = {}
    total: Dict[str, int] = dict.fromkeys(
        ("cases", *OUTCOMES, "xgrammar_disagrees", "calls", "calls_without_case"), 0
    )
    for name, (ext, results) in per_file.items():
        row: Dict[str, Any] = {"cases": len(results), **dict.fromkeys(OUTCOMES, 0)}
        for r in results:
            row[r.outcome] += 1
        row["xgrammar_disagrees"] = sum(
            1 for r in results if r.theirs is not None and r.theirs != r.case.expected
        )
        row["calls"] = ext.calls
        row["calls_without_case"] = sum(ext.stopped.values())
        for k in total:
            total[k] += row[k]
        row["stopped"] = ext.stopped
        row["import_error"] = ext.import_error
        files[name] = row
    return {"files": files, "total": total}


def _case_line(r: CaseResult) -> str:
    c = r.case
    text = c.text if len(c.text) <= 80 else c.text[:77] + "..."
    theirs = "" if r.theirs is None else f" xgrammar-0.2.9={r.theirs}"
    where = f"{c.file}::{c.test}"
    tail = f"\n      {r.detail}" if r.detail else ""
    prefix = "" if c.complete else " (prefix)"
    return f"{r.outcome:11s} {where} {c.grammar.kind}{prefix} {text!r} expected={c.expected} ours={r.ours}{theirs}{tail}"


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="xgrammar's tests/python folder")
    parser.add_argument(
        "--json", action="store_true", help="print the counts and every non-passing case as JSON"
    )
    parser.add_argument(
        "--show", default="", help="comma list of outcomes to list case by case, e.g. failed,raising"
    )
    parser.add_argument("--oracle", action="store_true", help="also ask the installed xgrammar")
    args = parser.parse_args(argv)
    if args.oracle:
        import xgrammar  # noqa: F401 - imported before the tests swap in the stand-in
    per_file = run_folder(args.folder, oracle=args.oracle)
    counts = summary(per_file)
    shown = {s.strip() for s in args.show.split(",") if s.strip()}
    if args.json:
        cases = [
            {**asdict(r), "case": {**asdict(r.case), "grammar": json.loads(r.case.grammar.key())}}
            for _, results in per_file.values()
            for r in results
            if r.outcome != "passed" or (r.theirs is not None and r.theirs != r.case.expected)
        ]
        print(json.dumps({**counts, "cases": cases}, indent=1, default=repr))
        return 0
    cols = (
        ("cases", *OUTCOMES)
        + (("xgrammar_disagrees",) if args.oracle else ())
        + ("calls", "calls_without_case")
    )
    print(f"{'file':44s}" + "".join(f"{c[:11]:>12s}" for c in cols))
    for name, row in counts["files"].items():
        print(f"{name:44s}" + "".join(f"{row[c]:12d}" for c in cols))
    print(f"{'total':44s}" + "".join(f"{counts['total'][c]:12d}" for c in cols))
    for name, row in counts["files"].items():
        if row["import_error"]:
            print(f"{name}: not imported: {row['import_error']}")
    for _, results in per_file.values():
        for r in results:
            if r.outcome in shown or "all" in shown:
                print(_case_line(r))
    return 0


if __name__ == "__main__":
    sys.exit(main())

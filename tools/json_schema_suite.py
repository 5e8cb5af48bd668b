"""Run the official JSON-Schema-Test-Suite through agentgrammar's JSON Schema grammars.

For every test group of every ``*.json`` file of a draft folder, the group's schema is
compiled (an unsupported keyword counts as *unsupported*, not as a failure); then every
test instance, serialized with ``json.dumps``, is fed to a matcher. A valid instance that
is rejected is a *validation error* (an under-approximation); an invalid instance that is
accepted is an *invalidation error* (a soundness bug: there must be none).

    python tools/json_schema_suite.py ../shared/data/json-schema-test-suite/tests/draft2020-12
    python tools/json_schema_suite.py FOLDER --write-ratchet tests/grammar/json_schema_suite_ratchet.json

Prints a per-file table. The ratchet file records which cases pass, so a test can check
that none of them regresses.
"""

from __future__ import annotations

import argparse
import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

OUTCOMES = ("passed", "validation_error", "invalidation_error", "unsupported", "compile_error")


@dataclass
class FileResult:
    """Outcome counts for one suite file, and the ids of the cases that passed."""

    counts: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    passed_ids: List[str] = field(default_factory=list)
    invalid_accepted: List[str] = field(default_factory=list)


def _byte_compiler():  # type: ignore[no-untyped-def]
    from agentgrammar.engine.compiler import byte_compiler

    return byte_compiler()


def _accepts(compiled, text: str) -> bool:  # type: ignore[no-untyped-def]
    from agentgrammar import Matcher

    matcher = Matcher(compiled)
    return matcher.accept_string(text) and matcher.is_completed()


def run_file(path: Path) -> FileResult:
    """Run one suite file."""
    from agentgrammar import Grammar
    from agentgrammar.errors import GrammarError, SchemaError

    result = FileResult()
    compiler = _byte_compiler()
    for g, group in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                compiled = compiler.compile(Grammar.from_json_schema(group["schema"]))
        except SchemaError:
            result.counts["unsupported"] += len(group["tests"])
            continue
        except (GrammarError, RecursionError, ValueError, UserWarning):
            result.counts["compile_error"] += len(group["tests"])
            continue
        for t, case in enumerate(group["tests"]):
            case_id = f"{path.stem}/{g}/{t}"
            accepted = _accepts(compiled, json.dumps(case["data"]))
            if accepted == case["valid"]:
                result.counts["passed"] += 1
                result.passed_ids.append(case_id)
            elif case["valid"]:
                result.counts["validation_error"] += 1
            else:
                result.counts["invalidation_error"] += 1
                result.invalid_accepted.append(f"{case_id}: {group['description']} / {case['description']}")
    return result


def run_folder(folder: Path) -> Dict[str, FileResult]:
    """Run every ``*.json`` file directly in ``folder`` (the ``optional`` subfolder is skipped)."""
    return {p.stem: run_file(p) for p in sorted(folder.glob("*.json"))}


def totals(results: Dict[str, FileResult]) -> Dict[str, int]:
    out = dict.fromkeys(OUTCOMES, 0)
    for r in results.values():
        for k, v in r.counts.items():
            out[k] += v
    return out


def ratchet(results: Dict[str, FileResult]) -> Dict[str, List[str]]:
    """The passing case ids per file: what must keep passing."""
    return {name: r.passed_ids for name, r in results.items() if r.passed_ids}


def _print_table(results: Dict[str, FileResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="JSON-Schema-Test-Suite through agentgrammar")
    table.add_column("file")
    for k in OUTCOMES:
        table.add_column(k.replace("_", " "), justify="right")
    rows: List[Tuple[str, Dict[str, int]]] = [(n, r.counts) for n, r in results.items()]
    rows.append(("TOTAL", totals(results)))
    for name, counts in rows:
        table.add_row(name, *(str(counts[k]) for k in OUTCOMES))
    Console(width=140).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a draft folder of the suite, e.g. .../tests/draft2020-12")
    parser.add_argument("--write-ratchet", type=Path, help="write the passing case ids to this JSON file")
    args = parser.parse_args()
    results = run_folder(args.folder)
    _print_table(results)
    for r in results.values():
        for line in r.invalid_accepted:
            print("INVALID ACCEPTED:", line)
    if args.write_ratchet:
        args.write_ratchet.write_text(json.dumps(ratchet(results), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()

"""Fuzz agentgrammar's front-ends and engine: every input succeeds or raises AgentGrammarError.

Usage::

    python tools/fuzz.py all --seconds 60            # every harness, 60 s each
    python tools/fuzz.py ebnf --seconds 300 --seed 7 --findings /tmp/ag-findings --json

Harnesses (``--list``): ``ebnf`` (``Grammar.from_ebnf``), ``regex`` (``Grammar.from_regex``),
``json_schema`` (``Grammar.from_json_schema``: random and mutated schemas, deep nesting,
``$ref`` cycles, huge bounds), ``structural_tag`` (``Grammar.from_structural_tag``: dicts and
JSON text, ``triggered_tags``, ``dispatch``, nested tags), ``vocabulary`` (``Vocabulary(...)``
and ``Vocabulary.from_huggingface`` with fake tokenizers) and ``matcher`` (random small
vocabularies and grammars driven by random token streams, ``rollback``, ``reset``,
``accept_string``, masks and jump-forward strings). The grammars that the front-end harnesses
build are also compiled and walked a few tokens, so the C core sees them too.

Inputs are generated from the seed (structure-aware generators plus mutation of a seed corpus of
valid grammars and schemas) and run in a worker subprocess: a crash (a signal, an abort from a
sanitizer) or a hang kills only the worker, and the input is saved under ``--findings``. A
finding is one of

* ``crash``: the worker died (segfault, abort, ...);
* ``hang``: no answer within ``--timeout`` seconds (the worker is killed and restarted);
* ``slow``: one input took longer than ``--slow`` seconds (default 2);
* ``exception``: an exception that is not an ``AgentGrammarError`` (nor one of the few
  documented argument errors a harness allows);
* ``invariant``: the matcher harness's cheap self-checks (an allowed token must be accepted,
  the cached mask must equal the direct one).

Each saved finding is ``<harness>-<kind>-<hash>.pkl`` (the input, for ``--replay``) and a
``.txt`` with the input's ``repr`` and the traceback. A summary table (harness, executions,
exec/s, findings) closes the run; ``--json`` prints it as JSON instead. The exit status is 1
when there were findings.

``--in-process`` runs without a worker (what the smoke tests do; a crash then kills the run).

``--engine atheris`` (``pip install atheris``) runs one harness coverage-guided instead: libFuzzer
mutates the bytes that drive the same generators (``BytesRandom``), and saves a failing input's
bytes under ``--findings`` (rerun it with ``--replay-bytes FILE``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import List, Optional

from .atheris_engine import atheris_main, replay_bytes
from .driver import fuzz, table
from .findings import replay
from .harnesses import HARNESSES
from .worker import worker_main


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("harness", nargs="?", help=f"one of {', '.join(HARNESSES)}, or 'all'")
    p.add_argument("--seconds", type=float, default=10.0, help="time per harness (default 10)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--findings", type=Path, default=None, help="folder for findings (default: a temp dir)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds before an input counts as a hang")
    p.add_argument("--slow", type=float, default=2.0, help="seconds after which an input is a 'slow' finding")
    p.add_argument("--in-process", action="store_true", help="no worker subprocess (a crash ends the run)")
    p.add_argument("--replay", type=Path, help="run one saved finding (.pkl) in this process")
    p.add_argument("--list", action="store_true", help="list the harnesses")
    p.add_argument(
        "--engine",
        choices=["random", "atheris"],
        default="random",
        help="random: seeded generation and mutation (default); atheris: coverage-guided (one harness)",
    )
    p.add_argument("--replay-bytes", type=Path, help="with --engine atheris: run one libFuzzer artifact")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return 0
    if args.engine == "atheris":
        if args.harness not in HARNESSES:
            p.error(f"--engine atheris runs one harness: {', '.join(HARNESSES)}")
        if args.replay_bytes:
            return replay_bytes(args.harness, args.replay_bytes)
        findings = args.findings or Path(tempfile.mkdtemp(prefix="agentgrammar-fuzz-"))
        return atheris_main(args.harness, args.seconds, args.timeout, findings)
    if args.list:
        for h in HARNESSES.values():
            print(f"{h.name:<16}{h.doc}")
        return 0
    if args.replay:
        return replay(args.replay)
    if not args.harness or (args.harness != "all" and args.harness not in HARNESSES):
        p.error(f"give a harness: {', '.join(HARNESSES)} or all")
    names = list(HARNESSES) if args.harness == "all" else [args.harness]
    findings = args.findings or Path(tempfile.mkdtemp(prefix="agentgrammar-fuzz-"))
    rows = []
    for name in names:
        res = fuzz(
            name,
            args.seconds,
            args.seed,
            findings=findings,
            in_process=args.in_process,
            timeout=args.timeout,
            slow=args.slow,
            log=None if args.json else lambda s: print(s, flush=True),
        )
        rows.append(res.row())
    total = sum(r["findings"] for r in rows)
    if args.json:
        print(
            json.dumps(
                {
                    "seed": args.seed,
                    "seconds": args.seconds,
                    "findings_dir": str(findings),
                    "harnesses": rows,
                },
                indent=2,
            )
        )
    else:
        print(table(rows))
        print(f"findings: {total} (saved under {findings})")
    return 1 if total else 0

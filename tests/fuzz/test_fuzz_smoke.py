"""Each fuzz harness of ``tools/fuzz/`` for about two seconds, in-process and tame (no huge
bounds or deep nesting, so no input runs long): the harnesses work and the contract holds.

Any finding (an exception outside ``AgentGrammarError``, a crash, a hang) fails the test with
the saved input's path; slow inputs are only reported.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.fuzz.driver import fuzz, table
from tools.fuzz.findings import replay, save_finding
from tools.fuzz.harnesses import HARNESSES


@pytest.mark.parametrize("name", list(HARNESSES))
def test_harness_runs_and_keeps_the_contract(name: str, tmp_path: Path) -> None:
    res = fuzz(name, 2.0, seed=0, findings=tmp_path, in_process=True, tame=True)
    assert res.executions > 0
    unknown = [(kind, head, where) for kind, head, where in res.details if kind != "slow"]
    assert not unknown, f"{name}: {unknown[:5]} (inputs saved under {tmp_path})"


def test_summary_table_and_worker_mode(tmp_path: Path) -> None:
    """The CLI path: a worker subprocess, the table, and a replay of a saved input."""
    res = fuzz("regex", 1.0, seed=1, findings=tmp_path, timeout=30.0, tame=True)
    assert res.executions > 0
    text = table([res.row()])
    assert text.splitlines()[0].split()[:3] == ["harness", "executions", "exec/s"]
    path = save_finding(tmp_path, "regex", "slow", "a{2}", "detail", 0.0)
    assert replay(Path(path)) == 0

"""The official JSON-Schema-Test-Suite (draft 2020-12) through the JSON Schema grammars.

The suite lives outside the project (``../shared/data/json-schema-test-suite``, or the folder
named by ``AGENTGRAMMAR_JSON_SCHEMA_SUITE``); without it these tests are skipped. With it:
no invalid instance may ever be accepted, and every case recorded as passing in
``json_schema_suite_ratchet.json`` must still pass (regenerate it with
``python tools/json_schema_suite.py FOLDER --write-ratchet tests/grammar/json_schema_suite_ratchet.json``
when support grows).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tools.json_schema_suite import run_folder

HERE = Path(__file__).resolve().parent
DEFAULT_SUITE = HERE.parents[2] / "shared" / "data" / "json-schema-test-suite" / "tests" / "draft2020-12"
SUITE = Path(os.environ.get("AGENTGRAMMAR_JSON_SCHEMA_SUITE", DEFAULT_SUITE))
RATCHET = HERE / "json_schema_suite_ratchet.json"

pytestmark = pytest.mark.skipif(not SUITE.is_dir(), reason=f"JSON-Schema-Test-Suite not found at {SUITE}")


@pytest.fixture(scope="module")
def results():
    return run_folder(SUITE)


def test_no_invalid_instance_is_accepted(results):
    accepted = [line for r in results.values() for line in r.invalid_accepted]
    assert accepted == []


def test_cases_that_passed_before_still_pass(results):
    before = json.loads(RATCHET.read_text(encoding="utf-8"))
    now = {name: set(r.passed_ids) for name, r in results.items()}
    regressed = sorted(
        case for name, ids in before.items() for case in ids if case not in now.get(name, set())
    )
    assert regressed == [], f"{len(regressed)} suite cases no longer pass: {regressed[:20]}"

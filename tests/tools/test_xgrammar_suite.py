"""tools/xgrammar_suite.py on a tiny synthetic xgrammar-style test file (not xgrammar's own)."""

from __future__ import annotations

import json
from pathlib import Path

from tools import xgrammar_suite
from tools.xgrammar_suite_extract import extract_file

SYNTHETIC = """
import pytest
import xgrammar as xgr
from xgrammar.testing import _is_grammar_accept_string

cases = [("a", True), ("b", True), ("c", False)]


@pytest.mark.parametrize("text, accepted", cases)
def test_param(text, accepted):
    grammar = xgr.Grammar.from_ebnf('root ::= "a" | "b"')
    assert _is_grammar_accept_string(grammar, text) == accepted


def helper(schema, instance, is_accepted=True):
    g = xgr.Grammar.from_json_schema(schema, any_whitespace=False, strict_mode=True)
    accepted = _is_grammar_accept_string(g, instance)
    assert accepted == is_accepted


def test_schema():
    helper({"type": "integer"}, "12")
    helper({"type": "integer"}, "1.5", is_accepted=False)


def test_plain_asserts_and_wrong_expectation():
    g = xgr.Grammar.from_regex("x+")
    assert str(g) == "never compared"  # not a check: a no-op, the test goes on
    assert _is_grammar_accept_string(g, "xx")
    assert not _is_grammar_accept_string(g, "xx")  # their expectation is wrong: we must fail it
    assert _is_grammar_accept_string("root ::= [0-9]", "7")


def test_prefix_and_stag():
    tag = {"type": "structural_tag", "format": {"type": "const_string", "value": "hey"}}
    g = xgr.Grammar.from_structural_tag(tag)
    assert _is_grammar_accept_string(g, "he", require_termination=False)
    assert not _is_grammar_accept_string(g, "he")


def test_union_and_unsupported():
    u = xgr.Grammar.union(xgr.Grammar.from_regex("a"), xgr.Grammar.from_regex("b"))
    assert _is_grammar_accept_string(u, "b")
    bad = xgr.Grammar.from_ebnf('root[max_tokens=3] ::= "b"')  # a token budget on a rule: we refuse it
    assert _is_grammar_accept_string(bad, "b")


def test_matcher():
    matcher = xgr.GrammarMatcher(xgr.GrammarCompiler(xgr.TokenizerInfo([])).compile_grammar("x"))
    assert matcher.accept_string("x")


@pytest.mark.parametrize("text", [pytest.param("z", marks=pytest.mark.xfail)])
def test_xfail(text):
    assert _is_grammar_accept_string(xgr.Grammar.from_regex("y"), text)
"""


def _folder(tmp_path: Path) -> Path:
    (tmp_path / "test_synthetic.py").write_text(SYNTHETIC, encoding="utf-8")
    (tmp_path / "helper_not_a_test.py").write_text("raise SystemExit", encoding="utf-8")
    return tmp_path


def test_extraction_finds_every_check(tmp_path: Path) -> None:
    ext = extract_file(_folder(tmp_path) / "test_synthetic.py")
    got = [(c.test, c.grammar.kind, c.text, c.expected, c.complete) for c in ext.cases]
    assert got == [
        ("test_param[0]", "ebnf", "a", True, True),
        ("test_param[1]", "ebnf", "b", True, True),
        ("test_param[2]", "ebnf", "c", False, True),
        ("test_schema", "json_schema", "12", True, True),
        ("test_schema", "json_schema", "1.5", False, True),
        ("test_plain_asserts_and_wrong_expectation", "regex", "xx", True, True),
        ("test_plain_asserts_and_wrong_expectation", "regex", "xx", False, True),
        ("test_plain_asserts_and_wrong_expectation", "ebnf", "7", True, True),
        ("test_prefix_and_stag", "structural_tag", "he", True, False),
        ("test_prefix_and_stag", "structural_tag", "he", False, True),
        ("test_union_and_unsupported", "union", "b", True, True),
        ("test_union_and_unsupported", "ebnf", "b", True, True),
    ]
    assert ext.cases[3].grammar.options == (("any_whitespace", False), ("strict_mode", True))
    # the matcher test made no case (it uses GrammarMatcher); the xfail case is skipped
    assert ext.stopped == {"asserts on xgrammar.GrammarMatcher": 1, "skip/xfail mark in their suite": 1}
    assert ext.calls == 9


def test_outcomes_and_report(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    per_file = xgrammar_suite.run_folder(_folder(tmp_path))
    [(name, (_, results))] = per_file.items()
    assert name == "test_synthetic.py"
    outcomes = [r.outcome for r in results]
    assert outcomes == ["passed"] * 6 + ["failed"] + ["passed"] * 4 + ["unsupported"]
    assert results[6].ours is True and results[6].case.expected is False
    assert "GrammarError" in results[11].detail
    assert xgrammar_suite.main([str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    total = report["total"]
    assert (total["cases"], total["passed"], total["failed"], total["unsupported"]) == (12, 10, 1, 1)
    assert total["calls"] == 9 and total["calls_without_case"] == 2
    assert [c["outcome"] for c in report["cases"]] == ["failed", "unsupported"]
    assert xgrammar_suite.main([str(tmp_path), "--show", "failed"]) == 0
    shown = capsys.readouterr().out
    assert "failed      test_synthetic.py::test_plain_asserts_and_wrong_expectation regex 'xx'" in shown


def test_json_schema_options_map() -> None:
    assert xgrammar_suite.json_schema_options({}) == {"whitespace": "flexible", "strict": True}
    opts = {"any_whitespace": False, "indent": 2, "separators": [",", ":"], "max_whitespace_cnt": 3}
    assert xgrammar_suite.json_schema_options(opts) == {
        "whitespace": "compact",
        "strict": True,
        "indent": 2,
        "separators": (",", ":"),
        "max_whitespace": 3,
    }

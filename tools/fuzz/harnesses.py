"""Every harness by name: the front-ends, vocabulary and matcher, then the engine's
(``harness_engine``) and model output's (``harness_outputs``).

>>> list(HARNESSES)[:3]
['ebnf', 'regex', 'json_schema']
"""

from __future__ import annotations

from typing import Dict

from . import harness_engine, harness_outputs
from .contract import Harness
from .gen_ebnf import gen_ebnf
from .gen_json_schema import gen_json_schema_input
from .gen_matcher import gen_matcher_input
from .gen_regex import gen_regex_input
from .gen_structural_tag import gen_structural_tag_input
from .gen_vocabulary import gen_vocabulary_input
from .run_grammars import run_ebnf, run_json_schema, run_regex, run_structural_tag
from .run_matcher import run_matcher
from .run_vocabulary import run_vocabulary

HARNESSES: Dict[str, Harness] = {
    h.name: h
    for h in [
        Harness("ebnf", gen_ebnf, run_ebnf, doc="Grammar.from_ebnf, then compile and walk"),
        Harness("regex", gen_regex_input, run_regex, doc="Grammar.from_regex, then compile and walk"),
        Harness("json_schema", gen_json_schema_input, run_json_schema, doc="Grammar.from_json_schema"),
        Harness(
            "structural_tag", gen_structural_tag_input, run_structural_tag, doc="Grammar.from_structural_tag"
        ),
        Harness(
            "vocabulary",
            gen_vocabulary_input,
            run_vocabulary,
            doc="Vocabulary(...), Vocabulary.from_huggingface",
        ),
        Harness(
            "matcher", gen_matcher_input, run_matcher, doc="random token streams, rollback, reset, masks"
        ),
    ]
}

# Kept in modules of their own, each with ``HARNESSES``: a list of ``(name, generate, run, doc)``.
for _name, _generate, _run, _doc in [*harness_engine.HARNESSES, *harness_outputs.HARNESSES]:
    HARNESSES[_name] = Harness(_name, _generate, _run, doc=_doc)

"""Fuzzing of agentgrammar's front-ends, engine and output parsing (``python tools/fuzz.py``).

Every input succeeds or raises ``AgentGrammarError``; usage and the kinds of finding are in
``cli``. The modules, one concern each:

* ``rand``, ``corpus``: random helpers and mutators; seed corpora and dictionaries;
* ``gen_ebnf``, ``gen_regex``, ``gen_json_schema``, ``gen_structural_tag``, ``gen_vocabulary``,
  ``gen_matcher``: one input generator per kind of input;
* ``contract``: ``Harness``, ``Finding`` and ``execute`` (the contract one input must keep);
* ``run_grammars``, ``run_vocabulary``, ``run_matcher``: the harnesses' bodies;
  ``harness_engine`` (threads, ambiguous grammars under time budgets) and ``harness_outputs``
  (model output through the parsers and the agent): harnesses with their own generators;
* ``harnesses``: every harness by name;
* ``findings``: signatures, saving and replaying findings;
* ``worker``: the subprocess that runs inputs; ``driver``: the loop (``fuzz``) and its summary;
* ``atheris_engine``: coverage-guided fuzzing; ``cli``: the command line.
"""

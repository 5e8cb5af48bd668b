"""Benchmarks of agentgrammar against xgrammar and llguidance (``python tools/bench.py``).

``cli`` runs every workload in one process and documents them; the modules, one concern each:

* ``walkers``: the shared setup (tokenizer, vocabularies), a matcher of any engine, the timing
  of one request; ``stats``: distributions, ratios and tables; ``instances``: valid arguments
  made from a schema; ``caches``: a cold start of ours;
* the workloads: ``agentic``, ``maskbench``, ``batch`` and ``hf`` (also a command of its own);
* benchmarks with a command of their own: ``request`` (per-request tool grammars, and the BFCL
  loader), ``json_schema`` (conversion speed) and ``engine`` (compile and mask time), each run
  as ``python -m tools.bench.NAME`` from the repository root.
"""

"""A cold start of ours: the converters' per-tool and per-schema caches cleared, the process-wide
tables kept."""

from __future__ import annotations

import sys
from typing import Any, Tuple


def _process_tables() -> Tuple[Any, ...]:
    """The converters' caches that no schema is an argument of, kept by ``clear_ours`` as by a
    process after its first schema: the Unicode ranges of Python's ``\\d``, ``\\w`` and ``\\s``
    (found once per process by running ``re`` over every code point, about 25 ms a letter),
    the automata of canonical numbers and fractions, and each ``format``'s automaton (one per
    format name: an ``email``'s takes about 50 ms to build)."""
    import agentgrammar.grammar.json_schema.formats as js_formats
    import agentgrammar.grammar.json_schema.numbers as js_numbers
    import agentgrammar.grammar.json_values.patterns as jv_patterns

    return (
        jv_patterns._python_shorthand_ranges,
        jv_patterns._wide_ranges,
        jv_patterns._not_wide_ranges,
        js_numbers._canonical_number_dfa,
        js_numbers._fraction_dfa,
        js_formats.format_dfa,
    )


def clear_ours() -> None:
    """Forget every per-tool / per-schema piece our converters cache: a cold start. What
    depends on no schema (the JSON converter's helper rules, kept with what was derived from
    them, ``_process_tables``, and the C build cache, whose only pieces are the key tries'
    ways out that the converter writes alike for every schema) stays, as it does in a process
    that has converted any schema before."""
    import agentgrammar.formats.tools as ftools
    import agentgrammar.grammar.json_schema.key_trie as js_key_trie
    import agentgrammar.grammar.structural_tag  # noqa: F401  (its caches are cleared below)
    from agentgrammar.grammar.memo import clear_memos

    kept = _process_tables()
    clear_memos()  # per-tool pieces, converted tags, serialized chunks
    ftools._PIECES.cache_clear()
    converters = (
        "agentgrammar.grammar.structural_tag",
        "agentgrammar.grammar.json_values",
        "agentgrammar.grammar.json_schema",
    )
    for name, module in sorted(sys.modules.items()):  # the converters' modules, and their packages' modules
        if not name.startswith(converters):
            continue
        for value in vars(module).values():
            # caches, not classes, nor the process-wide tables
            if hasattr(value, "cache_clear") and not isinstance(value, type) and value not in kept:
                value.cache_clear()
    js_key_trie._TRIE_EXPRS.clear()  # subtries of the key names that other keys must not spell

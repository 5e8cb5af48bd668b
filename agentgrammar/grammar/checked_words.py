"""A converter's rules checked from the words the C core loads, instead of by a walk of their IR.

``validate._validate`` walks every rule body for its references, whether normalization would
change it and whether it may derive nothing; then it keeps the rules the root reaches and,
where needed, works out which derive a finite string. For a front-end's rules, whose nodes have
the right types by construction, the same answers come cheaper from the serialized words,
which are written anyway: the writer tells whether a counted repeat would be normalized, and
the C core (``ag_ir_survey``) whether every rule is reachable and whether the root finishes.
When all hold, validation would keep every rule as it is and raise nothing, and the words are
the grammar's. Otherwise (an unused helper rule, a repeat to normalize, a root not shown to
finish, an undefined or repeated name) the rules are validated as before, and its messages
stay the same.

Example:
    >>> from agentgrammar.grammar.ir import Literal, Rule, RuleRef
    >>> len(converted_words((Rule("root", RuleRef("a")), Rule("a", Literal(b"x"))), "root")) % 4
    0
    >>> converted_words((Rule("root", Literal(b"x")), Rule("unused", Literal(b"y"))), "root") is None
    True
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from .._core import ffi, lib
from .ir import Rule
from .serialize import serialize_converted

__all__ = ["converted_words"]

_ALL_HOLD = lib.AG_IR_ALL_REACHABLE | lib.AG_IR_ROOT_FINISHES


def converted_words(
    rules: Sequence[Rule],
    root: str,
    embed_index: Optional[Callable[[Any], int]] = None,
    n_external: int = 0,
) -> Optional[bytes]:
    """The serialized words of a converter's ``rules`` (as ``Grammar.to_bytes`` writes them)
    when validation would keep them all unchanged and raise nothing; else None.
    ``embed_index`` and ``n_external``: the index of each embedded part's root, and the rules
    the parts add (``Grammar._embed_index``)."""
    if not rules:
        return None
    try:
        data = serialize_converted(rules, root, embed_index)
    except KeyError:  # an undefined rule, or root: validation names it
        return None
    if data is None:
        return None
    flags = ffi.new("int32_t *")
    err = ffi.new("ag_error *")
    status = lib.ag_ir_survey(ffi.from_buffer("int32_t[]", data), len(data) // 4, n_external, flags, err)
    return data if status == lib.AG_OK and flags[0] == _ALL_HOLD else None

"""Grammar front-ends (EBNF, regex, built-in JSON) producing the IR that the C core compiles.

Example:
    >>> from agentgrammar.grammar import Grammar
    >>> print(Grammar.from_ebnf('root ::= [0-9]+ ("." [0-9]+)?'))
    root ::= [0-9]+ ("." [0-9]+)?
"""

from .grammar import Grammar, set_structural_tag_converter
from .structural_tag import structural_tag_rules

# The structural-tag front-end builds on the Grammar facade (it embeds the grammars of tool
# arguments), so the facade reaches it through this hook rather than an import.
set_structural_tag_converter(structural_tag_rules)

__all__ = ["Grammar"]
